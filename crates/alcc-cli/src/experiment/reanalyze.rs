//! `alcc experiment reanalyze OUT`: the link figures of every completed run of an output
//! directory computed again from the run's own link log with today's rules (the common window,
//! docs/experiment-format.md), without running anything: each run's `result.json`,
//! `summary.json`, `series.csv` and `delays.csv`, then `results.csv` and `results.json`.
//!
//! What the emulator alone knew (CPU, memory, wall time, load, per-flow figures) is kept from
//! the run's `result.json`. Failed runs stay as they are. The window comes from the recorded
//! spec (`results.json`'s `spec.duration_s`, its `direction`) and the run's scheme (its
//! sender's start), as `alcc experiment run` would have used it.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;

use super::analysis::{self, RunFigures};
use super::direction::Direction;
use super::runner::with_window;
use super::scheme::Scheme;
use super::table::{self, Row, FAILED};

/// `alcc experiment reanalyze OUT`
#[derive(Args, Debug)]
pub struct ReanalyzeArgs {
    /// An output directory of `alcc experiment run` (it holds results.json and runs/).
    out: PathBuf,
}

/// What `results.json` records of its sweep.
#[derive(serde::Deserialize)]
struct Recorded {
    name: String,
    #[serde(default)]
    quick: bool,
    spec: serde_json::Value,
    runs: Vec<Row>,
}

/// The measured direction of the recorded spec (`down` when it is left out).
fn recorded_direction(spec: &serde_json::Value) -> Result<Direction> {
    match spec.get("direction") {
        None => Ok(Direction::Down),
        Some(d) => serde_json::from_value(d.clone())
            .with_context(|| format!("spec.direction is {d}, expected \"down\" or \"up\"")),
    }
}

/// Recomputes one completed row from its run directory `dir`.
fn reanalyze_row(row: Row, dir: &Path, direction: Direction, duration_s: f64) -> Result<Row> {
    // Results of older harnesses name our UDP schemes native-X.
    let name = match row.scheme.strip_prefix("native-") {
        Some(rest) => format!("udp-{rest}"),
        None => row.scheme.clone(),
    };
    let scheme =
        Scheme::parse(&name).with_context(|| format!("{}: scheme {:?}", dir.display(), row.scheme))?;
    let figures = analysis::figures_of_run(dir, direction, duration_s, scheme.kind().sender_delay_s())
        .with_context(|| format!("{}", dir.display()))?;
    Ok(match figures {
        RunFigures::Measured(s) => with_window(row, &s),
        RunFigures::TooFewPackets(n) => Row {
            status: FAILED.to_string(),
            error: format!("only {n} packets crossed the link in the run's window (reanalysed)"),
            ..row
        },
    })
}

/// Runs `alcc experiment reanalyze`; returns how many rows were recomputed.
pub fn run(args: ReanalyzeArgs) -> Result<usize> {
    let out = &args.out;
    let path = out.join("results.json");
    let text = std::fs::read_to_string(&path).with_context(|| format!("{}: cannot read", path.display()))?;
    let recorded: Recorded = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a results.json of alcc experiment run", path.display()))?;
    let Some(duration_s) = recorded.spec.get("duration_s").and_then(|d| d.as_f64()) else {
        bail!("{}: spec.duration_s is missing or not a number", path.display());
    };
    let direction = recorded_direction(&recorded.spec).with_context(|| path.display().to_string())?;
    let mut rows = Vec::with_capacity(recorded.runs.len());
    let mut done = 0;
    for row in recorded.runs {
        if !row.is_ok() {
            rows.push(row);
            continue;
        }
        let dir = out.join(&row.dir);
        let row = reanalyze_row(row, &dir, direction, duration_s)?;
        let text = serde_json::to_string_pretty(&row)? + "\n";
        table::write_atomic(&dir.join("result.json"), text.as_bytes())?;
        rows.push(row);
        done += 1;
    }
    table::write_tables(out, &recorded.name, recorded.quick, &recorded.spec, &rows)?;
    println!("{}", table::medians_table(&rows));
    println!("reanalysed {done} runs of {} in {}", rows.len(), out.display());
    Ok(done)
}
