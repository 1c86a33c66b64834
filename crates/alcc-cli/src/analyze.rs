//! `alcc analyze`: the metrics of a Mahimahi link log (capacity, throughput, utilization, loss,
//! one-way delay percentiles) and, optionally, their 500 ms time series as CSV. With
//! `--window FROM:TO` the figures are over that window of the link's clock (alcc_trace::window:
//! what `alcc experiment run` records), otherwise over the whole log.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use alcc_trace::metrics::{self, Summary};
use alcc_trace::window::{self, Window, WindowSummary};
use alcc_trace::{Log, Recording};
use anyhow::{bail, Context, Result};
use clap::Args;
use serde::Serialize;

/// `alcc analyze LOG [--json] [--series FILE]`
#[derive(Args)]
pub struct AnalyzeArgs {
    /// A Mahimahi link log (from mm-link or alcc's link emulator).
    log: PathBuf,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Also write the time series as CSV to this file.
    #[arg(long)]
    series: Option<PathBuf>,
    /// Width of the time-series bins in ms.
    #[arg(long, default_value_t = 500)]
    bin_ms: u64,
    /// One-way propagation delay in ms, replacing the log's `# alcc propagation delay us:`
    /// header (Mahimahi's own logs lack it, and then delays are queueing delay only).
    #[arg(long)]
    propagation_delay_ms: Option<f64>,
    /// Judge the log over this window of the link's clock, FROM:TO in seconds from the link's
    /// start (`alcc experiment run` uses 0.5:DURATION+0.5, the clients' transfer): throughput
    /// and delay of the packets that left the link in it, and what was still queued at its end.
    #[arg(long, value_parser = parse_window)]
    window: Option<Window>,
}

fn parse_window(text: &str) -> Result<Window, String> {
    Window::parse(text).map_err(|e| e.to_string())
}

/// What `--json` prints: the log's path and the summary's fields.
#[derive(Serialize)]
struct Report<'a> {
    log: String,
    #[serde(flatten)]
    summary: &'a Summary,
}

/// What `--json --window` prints: the log's path and the window summary's fields.
#[derive(Serialize)]
struct WindowReport<'a> {
    log: String,
    #[serde(flatten)]
    summary: &'a WindowSummary,
}

/// The `--json` text of `summary` measured from `log` over the whole log.
pub fn summary_json(log: &Path, summary: &Summary) -> Result<String> {
    Ok(serde_json::to_string_pretty(&Report { log: log.display().to_string(), summary })?)
}

/// The `--json --window` text of `summary` measured from `log` (also each experiment run's
/// summary.json).
pub fn window_json(log: &Path, summary: &WindowSummary) -> Result<String> {
    Ok(serde_json::to_string_pretty(&WindowReport { log: log.display().to_string(), summary })?)
}

/// Writes the time series of `recording` in bins of `bin_us` µs as CSV to `path`.
pub fn write_series(path: &Path, recording: &Recording, bin_us: u64) -> Result<()> {
    let series = metrics::time_series(recording, bin_us)?;
    let file = File::create(path).with_context(|| format!("{}: cannot create", path.display()))?;
    metrics::write_series_csv(&series, BufWriter::new(file))
        .with_context(|| format!("{}: cannot write", path.display()))
}

/// Runs `alcc analyze`.
pub fn run(args: AnalyzeArgs) -> Result<()> {
    let log = Log::read_file(&args.log)?;
    let mut recording = log.to_recording();
    match args.propagation_delay_ms {
        Some(ms) if ms.is_finite() && ms >= 0.0 => {
            recording.propagation_delay_us = (ms * 1000.0).round() as u64
        }
        Some(ms) => bail!("--propagation-delay-ms must be a non-negative number, got {ms}"),
        None if log.header.propagation_delay_us.is_none() => eprintln!(
            "note: {} does not record the propagation delay; delays are queueing delay only \
             (pass --propagation-delay-ms)",
            args.log.display()
        ),
        None => {}
    }
    if let Some(path) = &args.series {
        write_series(path, &recording, args.bin_ms.saturating_mul(1000))?;
    }
    let name = args.log.display().to_string();
    match args.window {
        Some(w) => {
            let summary = window::summarize_window(&log, w, recording.propagation_delay_us);
            if args.json {
                println!("{}", window_json(&args.log, &summary)?);
            } else {
                print_window_text(&name, &summary);
            }
        }
        None => {
            let summary = metrics::summarize(&recording);
            if args.json {
                println!("{}", summary_json(&args.log, &summary)?);
            } else {
                print_text(&name, &summary);
            }
        }
    }
    Ok(())
}

fn delay_text(d: Option<f64>) -> String {
    d.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into())
}

fn print_window_text(log: &str, s: &WindowSummary) {
    println!("log:         {log}");
    println!(
        "window:      {:.3}-{:.3} s of the link's clock (the log ends at {:.3} s{})",
        s.window_from_s,
        s.window_to_s,
        s.log_end_s,
        if s.covers_window { "" } else { ", before the window does" }
    );
    println!("capacity:    {:.2} Mbit/s", s.capacity_mbps);
    println!("throughput:  {:.2} Mbit/s (bytes that left the link in the window)", s.throughput_mbps);
    println!("utilization: {:.1} %", s.utilization * 100.0);
    println!(
        "loss:        {:.2} % ({} of {} packets that arrived in the window dropped)",
        s.loss * 100.0,
        s.packets_dropped,
        s.packets_arrived
    );
    println!(
        "delay:       p50 {} / p95 {} / p99 {} ms (one-way, including {:.1} ms propagation, of the {} \
         packets that left in the window)",
        delay_text(s.delay_p50_ms),
        delay_text(s.delay_p95_ms),
        delay_text(s.delay_p99_ms),
        s.propagation_delay_ms,
        s.packets_departed
    );
    println!(
        "queued:      {} packets at the window's end: {} left later (largest delay {} ms), {} still \
         queued when the log ended",
        s.packets_queued_at_end,
        s.packets_departed_after,
        delay_text(s.delay_departed_after_max_ms),
        s.packets_queued_at_log_end
    );
}

fn print_text(log: &str, s: &Summary) {
    let delay = delay_text;
    println!("log:         {log}");
    println!("duration:    {:.3} s", s.duration_s);
    println!("capacity:    {:.2} Mbit/s", s.capacity_mbps);
    println!("throughput:  {:.2} Mbit/s", s.throughput_mbps);
    println!("utilization: {:.1} %", s.utilization * 100.0);
    println!(
        "loss:        {:.2} % ({} of {} packets departed)",
        s.loss * 100.0,
        s.packets_departed,
        s.packets_sent
    );
    println!(
        "delay:       p50 {} / p95 {} / p99 {} ms (one-way, including {:.1} ms propagation)",
        delay(s.delay_p50_ms),
        delay(s.delay_p95_ms),
        delay(s.delay_p99_ms),
        s.propagation_delay_ms
    );
}
