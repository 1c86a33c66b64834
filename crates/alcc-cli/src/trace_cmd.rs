//! `alcc trace`: generate synthetic packet-delivery traces and describe trace files.

use std::path::PathBuf;

use alcc_trace::metrics;
use alcc_trace::synth::{self, CellularModel};
use alcc_trace::Trace;
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use serde::Serialize;

/// `alcc trace ...`
#[derive(Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    command: TraceCommand,
}

#[derive(Subcommand)]
enum TraceCommand {
    /// Generate a seeded synthetic trace in Mahimahi's format.
    Gen(GenArgs),
    /// Describe a trace file: lines, period, mean rate.
    Info(InfoArgs),
}

/// The synthetic trace models.
#[derive(Clone, Copy, ValueEnum)]
enum Kind {
    /// The same rate throughout.
    Constant,
    /// A log-normal random walk of the rate with outages (see alcc_trace::synth).
    Cellular,
}

#[derive(Args)]
struct GenArgs {
    /// Which model.
    #[arg(long, value_enum)]
    kind: Kind,
    /// Rate in Mbit/s (for cellular: the mean of the walk; default 9).
    #[arg(long)]
    rate: Option<f64>,
    /// Length (and loop period) in seconds.
    #[arg(long, default_value_t = 60.0)]
    duration: f64,
    /// Seed of the cellular model.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where to write the trace.
    #[arg(long)]
    out: PathBuf,
    /// Cellular: the rate changes every this many ms [default: 100].
    #[arg(long)]
    step_ms: Option<u64>,
    /// Cellular: standard deviation of the log of the rate [default: 0.5].
    #[arg(long)]
    log_sd: Option<f64>,
    /// Cellular: correlation time of the log-rate in ms [default: 1000].
    #[arg(long)]
    correlation_ms: Option<f64>,
    /// Cellular: lowest rate outside outages, Mbit/s [default: 0.3].
    #[arg(long)]
    min_rate: Option<f64>,
    /// Cellular: highest rate, Mbit/s [default: 60].
    #[arg(long)]
    max_rate: Option<f64>,
    /// Cellular: mean outages per minute, 0 for none [default: 6].
    #[arg(long)]
    outages_per_minute: Option<f64>,
    /// Cellular: shortest outage in ms [default: 80].
    #[arg(long)]
    outage_min_ms: Option<f64>,
    /// Cellular: mean outage in ms [default: 250].
    #[arg(long)]
    outage_mean_ms: Option<f64>,
    /// Cellular: longest outage in ms [default: 1500].
    #[arg(long)]
    outage_max_ms: Option<f64>,
}

#[derive(Args)]
struct InfoArgs {
    /// The trace file.
    file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// What `alcc trace info` reports.
#[derive(Serialize)]
struct TraceInfo {
    file: String,
    lines: usize,
    period_ms: u64,
    mean_rate_mbps: f64,
    longest_gap_ms: u64,
    /// Nearest-rank percentiles (5, 50, 95) of the rate over the whole seconds of one period.
    rate_1s_percentiles_mbps: [f64; 3],
}

/// Nearest-rank 5th, 50th and 95th percentiles of the rate in each whole second of one period
/// (looped, so a trace shorter than a second counts as its first second).
fn rate_percentiles(trace: &Trace) -> [f64; 3] {
    let seconds = (trace.period_ms() / 1000).max(1);
    let mut rates: Vec<u64> =
        (0..seconds).map(|s| trace.capacity_bytes(s * 1000, (s + 1) * 1000) * 8).collect();
    rates.sort_unstable();
    [5, 50, 95].map(|p| metrics::nearest_rank(&rates, p).unwrap_or(0) as f64 / 1e6)
}

/// Runs `alcc trace ...`.
pub fn run(args: TraceArgs) -> Result<()> {
    match args.command {
        TraceCommand::Gen(gen) => generate(gen),
        TraceCommand::Info(info) => describe(info),
    }
}

fn generate(args: GenArgs) -> Result<()> {
    if !(args.duration.is_finite() && args.duration >= 0.001) {
        bail!("--duration must be at least 0.001 s, got {}", args.duration);
    }
    let duration_ms = (args.duration * 1000.0).round() as u64;
    let trace = match args.kind {
        Kind::Constant => {
            let rate = args.rate.context("--kind constant needs --rate MBPS")?;
            synth::constant(rate, duration_ms)?
        }
        Kind::Cellular => {
            let d = CellularModel::default();
            let model = CellularModel {
                duration_ms,
                mean_rate_mbps: args.rate.unwrap_or(d.mean_rate_mbps),
                step_ms: args.step_ms.unwrap_or(d.step_ms),
                log_sd: args.log_sd.unwrap_or(d.log_sd),
                correlation_ms: args.correlation_ms.unwrap_or(d.correlation_ms),
                min_rate_mbps: args.min_rate.unwrap_or(d.min_rate_mbps),
                max_rate_mbps: args.max_rate.unwrap_or(d.max_rate_mbps),
                outages_per_minute: args.outages_per_minute.unwrap_or(d.outages_per_minute),
                outage_min_ms: args.outage_min_ms.unwrap_or(d.outage_min_ms),
                outage_mean_ms: args.outage_mean_ms.unwrap_or(d.outage_mean_ms),
                outage_max_ms: args.outage_max_ms.unwrap_or(d.outage_max_ms),
            };
            synth::cellular(&model, args.seed)?
        }
    };
    trace.write_file(&args.out)?;
    println!(
        "wrote {}: {} opportunities, period {} ms, mean {:.2} Mbit/s",
        args.out.display(),
        trace.opportunities_ms().len(),
        trace.period_ms(),
        trace.mean_rate_mbps()
    );
    Ok(())
}

fn describe(args: InfoArgs) -> Result<()> {
    let trace = Trace::parse_file(&args.file)?;
    let times = trace.opportunities_ms();
    let first = times.first().copied().unwrap_or(0);
    let longest_gap_ms = times.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0).max(first);
    let info = TraceInfo {
        file: args.file.display().to_string(),
        lines: times.len(),
        period_ms: trace.period_ms(),
        mean_rate_mbps: trace.mean_rate_mbps(),
        longest_gap_ms,
        rate_1s_percentiles_mbps: rate_percentiles(&trace),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        println!("file:        {}", info.file);
        println!("lines:       {}", info.lines);
        println!("period:      {} ms", info.period_ms);
        println!("mean rate:   {:.2} Mbit/s", info.mean_rate_mbps);
        println!("longest gap: {} ms", info.longest_gap_ms);
        let [p5, p50, p95] = info.rate_1s_percentiles_mbps;
        println!("1 s rates:   p5 {p5:.2} / p50 {p50:.2} / p95 {p95:.2} Mbit/s");
    }
    Ok(())
}
