//! `alcc sim`: one controller over the simulated bottleneck, summarized as JSON.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::time::Duration;

use alcc_cc::sim::capacity::OPPORTUNITY_BYTES;
use alcc_cc::sim::{AckPolicy, Capacity, QueueLimit, ReturnPath, Scenario};
use alcc_trace::metrics::{self, Summary};
use alcc_trace::record::Recording;
use alcc_trace::trace::Trace;
use anyhow::{bail, Context, Result};
use clap::Args;
use serde::Serialize;

use crate::controller_source::ControllerSource;

/// `alcc sim --trace FILE|--rate MBPS --cc NAME[:params] ...`
#[derive(Args)]
pub struct SimArgs {
    /// A Mahimahi packet-delivery trace for the bottleneck.
    #[arg(long, conflicts_with = "rate", required_unless_present = "rate")]
    trace: Option<PathBuf>,
    /// A constant bottleneck rate in Mbit/s, instead of a trace.
    #[arg(long)]
    rate: Option<f64>,
    /// The congestion controller, e.g. `copa:delta=0.5`, `verus:r=4`, `cubic`, or a class
    /// written in Python, `py:module:Class` (docs/python.md).
    #[arg(long)]
    cc: String,
    /// One-way propagation delay in ms, each way.
    #[arg(long, default_value_t = 20.0)]
    delay: f64,
    /// The bottleneck queue: `packets=N`, `bytes=N` or `infinite`.
    #[arg(long, default_value = "packets=1000")]
    queue: String,
    /// Random loss probability on the bottleneck, in [0, 1).
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Simulated seconds.
    #[arg(long, default_value_t = 60.0)]
    duration: f64,
    /// Seed for random loss and the controller.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// When the receiver acknowledges: `every` (each packet at once), `delayed` (Linux's
    /// delayed ACKs: every second packet, a 40 ms timer, 16 quick ACKs) or `stretch=N` (the
    /// same rules, every N-th packet).
    #[arg(long, default_value = "every")]
    acks: String,
    /// A Mahimahi trace for the return path (acknowledgements and reports queue there, in a
    /// queue of the same limit as the bottleneck's); without it the return path is free.
    #[arg(long)]
    uplink: Option<PathBuf>,
    /// Random loss probability of acknowledgements and reports on the return path, in [0, 1).
    #[arg(long, default_value_t = 0.0)]
    return_loss: f64,
    /// Also write a CSV time series (500 ms bins) to this file.
    #[arg(long)]
    series: Option<PathBuf>,
}

/// What `alcc sim` prints.
#[derive(Serialize)]
struct Report<'a> {
    cc: &'a str,
    link: String,
    #[serde(flatten)]
    summary: &'a Summary,
}

/// Runs `alcc sim`.
pub fn run(args: SimArgs) -> Result<()> {
    let (capacity, link) = match (&args.trace, args.rate) {
        (Some(path), _) => {
            let trace = Trace::parse_file(path)?;
            (Capacity::Trace(trace.opportunities_ms().to_vec()), path.display().to_string())
        }
        (None, Some(rate)) if rate.is_finite() && rate > 0.0 => {
            (Capacity::ConstantMbps(rate), format!("constant {rate} Mbit/s"))
        }
        (None, Some(rate)) => bail!("--rate must be a positive number of Mbit/s, got {rate}"),
        (None, None) => bail!("give --trace FILE or --rate MBPS"),
    };
    if !(args.delay.is_finite() && args.delay >= 0.0) {
        bail!("--delay must be a non-negative number of ms");
    }
    if !(args.duration.is_finite() && args.duration > 0.0 && args.duration <= 86_400.0) {
        bail!("--duration must be between 0 and 86400 seconds");
    }
    let mut scenario = Scenario::new(capacity);
    scenario.one_way_delay = Duration::from_secs_f64(args.delay / 1000.0);
    scenario.queue = args.queue.parse::<QueueLimit>().context("--queue")?;
    scenario.loss = args.loss;
    scenario.duration = Duration::from_secs_f64(args.duration);
    scenario.seed = args.seed;
    scenario.acks = args.acks.parse::<AckPolicy>().context("--acks")?;
    scenario.return_loss = args.return_loss;
    if let Some(path) = &args.uplink {
        let trace = Trace::parse_file(path)?;
        scenario.return_path = ReturnPath::Shaped {
            capacity: Capacity::Trace(trace.opportunities_ms().to_vec()),
            queue: scenario.queue,
        };
    }

    let result = ControllerSource::for_sim(&args.cc)?.simulate(&scenario, &args.cc)?;
    let recording = Recording::from_parts(
        result.bottleneck_packets(),
        result.opportunities.iter().map(|t| t.as_micros()),
        OPPORTUNITY_BYTES,
        scenario.one_way_delay.as_micros() as u64,
    );
    let summary = metrics::summarize(&recording);
    if let Some(path) = &args.series {
        let series = metrics::time_series(&recording, metrics::DEFAULT_BIN_US)?;
        let file = File::create(path).with_context(|| format!("{}: cannot create", path.display()))?;
        metrics::write_series_csv(&series, BufWriter::new(file))
            .with_context(|| format!("{}: cannot write", path.display()))?;
    }
    let report = Report { cc: &args.cc, link, summary: &summary };
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
