//! The per-run files computed from the measured link's log (`downlink.log`, or `uplink.log` of
//! an upload): `summary.json` (as `alcc analyze --json --window`: the run's figures over the
//! common window, [`run_window`]), `series.csv` (500 ms bins) and `delays.csv` (one-way delay
//! samples, subsampled); the last two cover the whole log.

use std::fmt::Write as _;
use std::path::Path;

use alcc_trace::window::{self, Window, WindowSummary};
use alcc_trace::{Log, Recording};
use anyhow::{Context, Result};

use super::direction::Direction;
use super::runner::CLIENT_START_DELAY_S;
use crate::analyze;

/// Width of the series bins, µs (docs/experiment-format.md).
pub const BIN_US: u64 = 500_000;

/// At most this many rows in `delays.csv`.
pub const MAX_DELAY_ROWS: usize = 20_000;

/// The window a run of an experiment of `duration_s` seconds is judged over: its nominal
/// transfer, `duration_s` from when its sender is scheduled to start, [`CLIENT_START_DELAY_S`]
/// after the link's start plus the scheme's `sender_delay_s` (0 but for the authors' Copa,
/// whose sender starts 0.5 s after its receiver), however long its emulator's log runs on
/// (docs/experiment-format.md, "The common window").
pub fn run_window(duration_s: f64, sender_delay_s: f64) -> Result<Window> {
    let from = CLIENT_START_DELAY_S + sender_delay_s;
    Window::from_secs(from, from + duration_s).with_context(|| format!("a run of {duration_s} s"))
}

/// A run whose measured link carried fewer packets than this in its window moved nothing (at
/// most a handshake: the authors' Copa once sent nothing after its handshake for a whole run)
/// and fails, so that a resumed sweep runs it again.
pub const MIN_DOWNLOAD_PACKETS: u64 = 10;

/// What a run's measured link shows over the run's window.
pub enum RunFigures {
    /// Enough packets crossed it: the run's figures.
    Measured(Box<WindowSummary>),
    /// Only this many crossed it ([`MIN_DOWNLOAD_PACKETS`]): the run failed.
    TooFewPackets(u64),
}

/// Judges a run as `alcc experiment run` and `alcc experiment reanalyze` both do: the log of
/// the measured link (`direction`) in `dir`, over the window of a run of `duration_s` whose
/// sender starts `sender_delay_s` late ([`run_window`]), with the per-run files written beside
/// it ([`analyze_run`]).
pub fn figures_of_run(
    dir: &Path,
    direction: Direction,
    duration_s: f64,
    sender_delay_s: f64,
) -> Result<RunFigures> {
    let window = run_window(duration_s, sender_delay_s)?;
    let summary = analyze_run(dir, &direction.log_name(), window)?;
    Ok(if summary.packets_departed < MIN_DOWNLOAD_PACKETS {
        RunFigures::TooFewPackets(summary.packets_departed)
    } else {
        RunFigures::Measured(Box::new(summary))
    })
}

/// Reads `dir/LOG` (`downlink.log`, `uplink.log`) and writes summary.json (over `window`),
/// series.csv and delays.csv beside it.
pub fn analyze_run(dir: &Path, log: &str, window: Window) -> Result<WindowSummary> {
    let log_path = dir.join(log);
    let log = Log::read_file(&log_path)?;
    let recording = log.to_recording();
    let summary = window::summarize_window(&log, window, recording.propagation_delay_us);
    let text = analyze::window_json(&log_path, &summary)? + "\n";
    std::fs::write(dir.join("summary.json"), text).context("writing summary.json")?;
    analyze::write_series(&dir.join("series.csv"), &recording, BIN_US)?;
    std::fs::write(dir.join("delays.csv"), delays_csv(&recording, MAX_DELAY_ROWS))
        .context("writing delays.csv")?;
    Ok(summary)
}

/// `t_s,delay_ms` for every departed packet in departure order (t from the recording's first
/// event, as in the series); when there are more than `max_rows`, every k-th with
/// k = ceil(n / max_rows).
pub fn delays_csv(recording: &Recording, max_rows: usize) -> String {
    let start = recording.span_us().map_or(0, |(s, _)| s);
    let mut samples: Vec<(u64, u64)> = recording
        .packets
        .iter()
        .filter_map(|p| Some((p.departed_us?, p.one_way_delay_us(recording.propagation_delay_us)?)))
        .collect();
    samples.sort_unstable();
    let step = samples.len().div_ceil(max_rows.max(1)).max(1);
    let mut out = String::from("t_s,delay_ms\n");
    for (at, delay) in samples.iter().step_by(step) {
        let _ = writeln!(out, "{:.6},{:.3}", (at - start) as f64 / 1e6, *delay as f64 / 1e3);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_judged_over_its_senders_nominal_transfer() {
        use crate::experiment::scheme::Scheme;
        let window = |scheme: &str| {
            let w = run_window(30.0, Scheme::parse(scheme).unwrap().kind().sender_delay_s()).unwrap();
            (w.from_us(), w.to_us())
        };
        for scheme in ["udp-copa", "ref-verus", "ref-sprout", "alcc-copa", "tcp-cubic"] {
            assert_eq!(window(scheme), (500_000, 30_500_000), "{scheme}");
        }
        // The authors' Copa sender starts 0.5 s after its receiver, and sends for as long.
        assert_eq!(window("ref-copa"), (1_000_000, 31_000_000));
        assert!(run_window(0.0, 0.0).is_err());
    }

    #[test]
    fn delays_are_relative_sorted_and_subsampled() {
        // Packets sent at 1000 + i ms, departed 5 ms later, 10 ms propagation; one lost.
        let packets =
            (0..10u64).map(|i| (1500, 1_000_000 + i * 1000, (i != 3).then_some(1_005_000 + i * 1000)));
        let r = Recording::from_parts(packets, [1_000_000u64], 1500, 10_000);
        let csv = delays_csv(&r, 100);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "t_s,delay_ms");
        assert_eq!(lines.len(), 10);
        assert_eq!(lines[1], "0.005000,15.000");
        assert_eq!(lines[9], "0.014000,15.000");
        let csv = delays_csv(&r, 4);
        // 9 samples, at most 4 rows: every 3rd.
        assert_eq!(csv.lines().count(), 1 + 3);
    }
}
