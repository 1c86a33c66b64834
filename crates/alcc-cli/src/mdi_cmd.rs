//! `alcc mdi`: train MDI models from the simulator and compare them with what they imitate.
//!
//! - `alcc mdi train --cc verus (--traces DIR | --synthetic N) --out model.csv`: runs the
//!   controller over every trace in the simulator, logs its 5 ms epochs
//!   (`alcc_cc::mdi::train`) and writes the model in the published CSV format.
//! - `alcc mdi compare --cc verus --model A.csv [--model B.csv] --traces DIR`: the imitated
//!   controller and MDI with each model over the same traces; throughput and p95 one-way delay
//!   per trace, and MDI's ratios to the imitated controller.
//! - `alcc mdi info model.csv`: the layout and how much of the state space training saw.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use alcc_cc::mdi::train::{Recorder, Trainer, WindowSource};
use alcc_cc::mdi::Layout;
use alcc_cc::sim::capacity::OPPORTUNITY_BYTES;
use alcc_cc::sim::{Capacity, QueueLimit, Scenario};
use alcc_cc::spec::Params;
use alcc_trace::metrics::{self, Summary};
use alcc_trace::record::Recording;
use alcc_trace::synth::{self, CellularModel};
use alcc_trace::trace::Trace;
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use serde::Serialize;

/// `alcc mdi ...`
#[derive(Args)]
pub struct MdiArgs {
    #[command(subcommand)]
    command: MdiCommand,
}

#[derive(Subcommand)]
enum MdiCommand {
    /// Learn a model from a controller's epochs in the simulator.
    Train(TrainArgs),
    /// Compare MDI models with the controller they imitate, in the simulator.
    Compare(CompareArgs),
    /// Describe a model file.
    Info {
        /// The model (CSV).
        model: PathBuf,
    },
}

/// The links a command runs over.
#[derive(Args)]
struct Links {
    /// A Mahimahi trace, or a directory of them (`*.trace`, `*.up`, `*.down`); repeatable.
    #[arg(long = "traces")]
    traces: Vec<PathBuf>,
    /// Also N synthetic cellular traces (seeds 1..N; mean rates 3, 6, 9, 14, 20 Mbit/s and
    /// one-way delays 10, 20, 40 ms in turn).
    #[arg(long, default_value_t = 0)]
    synthetic: u64,
    /// One-way delay in ms for the trace files (synthetic traces bring their own).
    #[arg(long, default_value_t = 20.0)]
    delay: f64,
    /// The bottleneck queue: `packets=N`, `bytes=N` or `infinite`.
    #[arg(long, default_value = "packets=1000")]
    queue: String,
    /// Simulated seconds per trace.
    #[arg(long, default_value_t = 60.0)]
    duration: f64,
    /// Seed of the simulator and the controllers.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Args)]
struct TrainArgs {
    /// The controller to imitate, e.g. `verus` or `copa:delta=0.5`.
    #[arg(long)]
    cc: String,
    #[command(flatten)]
    links: Links,
    /// Where to write the model (CSV).
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args)]
struct CompareArgs {
    /// The imitated controller.
    #[arg(long)]
    cc: String,
    /// An MDI model to run; repeatable.
    #[arg(long = "model", required = true)]
    models: Vec<PathBuf>,
    #[command(flatten)]
    links: Links,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// One link to simulate.
struct Link {
    name: String,
    scenario: Scenario,
}

/// Synthetic training links cycle through these mean rates (Mbit/s) ...
const SYNTHETIC_RATES: [f64; 5] = [3.0, 6.0, 9.0, 14.0, 20.0];
/// ... and these one-way delays (ms).
const SYNTHETIC_DELAYS: [u64; 3] = [10, 20, 40];

impl Links {
    fn build(&self) -> Result<Vec<Link>> {
        if !(self.delay.is_finite() && self.delay >= 0.0) {
            bail!("--delay must be a non-negative number of ms");
        }
        if !(self.duration.is_finite() && self.duration > 0.0 && self.duration <= 86_400.0) {
            bail!("--duration must be between 0 and 86400 seconds");
        }
        let queue: QueueLimit = self.queue.parse().context("--queue")?;
        let scenario = |capacity: Capacity, delay_ms: f64| {
            let mut s = Scenario::new(capacity);
            s.one_way_delay = Duration::from_secs_f64(delay_ms / 1000.0);
            s.queue = queue;
            s.duration = Duration::from_secs_f64(self.duration);
            s.seed = self.seed;
            s
        };
        let mut links = Vec::new();
        for path in self.trace_files()? {
            let trace = Trace::parse_file(&path)?;
            let name =
                path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into());
            links.push(Link {
                name,
                scenario: scenario(Capacity::Trace(trace.opportunities_ms().to_vec()), self.delay),
            });
        }
        for k in 1..=self.synthetic {
            let rate = SYNTHETIC_RATES[(k % 5) as usize];
            let delay = SYNTHETIC_DELAYS[((k / 5) % 3) as usize];
            let model = CellularModel {
                duration_ms: (self.duration * 1000.0).ceil() as u64,
                mean_rate_mbps: rate,
                ..CellularModel::default()
            };
            let trace = synth::cellular(&model, k).with_context(|| format!("synthetic trace {k}"))?;
            let name = format!("synthetic-{k}-{rate}mbps-{delay}ms");
            links.push(Link {
                name,
                scenario: scenario(Capacity::Trace(trace.opportunities_ms().to_vec()), delay as f64),
            });
        }
        if links.is_empty() {
            bail!("no links: give --traces DIR|FILE or --synthetic N");
        }
        Ok(links)
    }

    fn trace_files(&self) -> Result<Vec<PathBuf>> {
        let mut files = Vec::new();
        for path in &self.traces {
            if path.is_dir() {
                let mut found: Vec<PathBuf> = std::fs::read_dir(path)
                    .with_context(|| format!("{}: cannot list", path.display()))?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "trace" || x == "up" || x == "down"))
                    .collect();
                if found.is_empty() {
                    bail!("{}: no *.trace, *.up or *.down files", path.display());
                }
                found.sort();
                files.extend(found);
            } else {
                files.push(path.clone());
            }
        }
        Ok(files)
    }
}

/// Runs `alcc mdi`.
pub fn run(args: MdiArgs) -> Result<()> {
    match args.command {
        MdiCommand::Train(a) => train(a),
        MdiCommand::Compare(a) => compare(a),
        MdiCommand::Info { model } => info(&model),
    }
}

fn algorithm_name(spec: &str) -> Result<String> {
    Ok(Params::parse(spec)?.name().to_string())
}

fn train(args: TrainArgs) -> Result<()> {
    let source = WindowSource::for_algorithm(&algorithm_name(&args.cc)?);
    let links = args.links.build()?;
    let mut trainer = Trainer::new(Layout::published());
    for link in &links {
        let config = link.scenario.config();
        let inner = alcc_cc::registry::build(&args.cc, &config)?;
        let (recorder, log) = Recorder::new(inner, source, config.mss);
        link.scenario.run_with(Box::new(recorder), None)?;
        let epochs = log.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let before = trainer.transitions();
        trainer.add(&epochs);
        eprintln!("{}: {} transitions", link.name, trainer.transitions() - before);
    }
    let model = trainer.model().context("no transitions were recorded")?;
    let file = File::create(&args.out).with_context(|| format!("{}: cannot create", args.out.display()))?;
    let mut out = BufWriter::new(file);
    model
        .write(&mut out)
        .and_then(|_| out.flush())
        .with_context(|| format!("{}: cannot write", args.out.display()))?;
    eprintln!("{}: {} transitions from {} links", args.out.display(), trainer.transitions(), links.len());
    Ok(())
}

/// One run's figures.
#[derive(Serialize)]
struct Row {
    link: String,
    scheme: String,
    throughput_mbps: f64,
    delay_p95_ms: Option<f64>,
    /// Throughput over the imitated controller's on the same link.
    throughput_ratio: Option<f64>,
    /// p95 delay over the imitated controller's on the same link.
    p95_ratio: Option<f64>,
}

fn simulate(scenario: &Scenario, spec: &str) -> Result<Summary> {
    let result = scenario.run(spec)?;
    let recording = Recording::from_parts(
        result.bottleneck_packets(),
        result.opportunities.iter().map(|t| t.as_micros()),
        OPPORTUNITY_BYTES,
        scenario.one_way_delay.as_micros() as u64,
    );
    Ok(metrics::summarize(&recording))
}

fn compare(args: CompareArgs) -> Result<()> {
    let links = args.links.build()?;
    let mut schemes = vec![(args.cc.clone(), args.cc.clone())];
    for m in &args.models {
        // Load once here so that a bad model fails before any run, naming the file.
        alcc_cc::mdi::load::load(m).with_context(|| format!("{}", m.display()))?;
        let label = m.file_stem().map_or_else(|| m.display().to_string(), |s| s.to_string_lossy().into());
        schemes.push((format!("mdi({label})"), format!("mdi:model={}", m.display())));
    }
    let mut rows = Vec::new();
    for link in &links {
        let mut base: Option<(f64, Option<f64>)> = None;
        for (label, spec) in &schemes {
            let s = simulate(&link.scenario, spec).with_context(|| format!("{} on {}", label, link.name))?;
            let (tput, p95) = (s.throughput_mbps, s.delay_p95_ms);
            let (tr, pr) = match base {
                None => {
                    base = Some((tput, p95));
                    (None, None)
                }
                Some((bt, bp)) => (Some(tput / bt), p95.zip(bp).map(|(p, b)| p / b)),
            };
            rows.push(Row {
                link: link.name.clone(),
                scheme: label.clone(),
                throughput_mbps: tput,
                delay_p95_ms: p95,
                throughput_ratio: tr,
                p95_ratio: pr,
            });
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    let opt = |v: Option<f64>, digits: usize| v.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"));
    println!(
        "{:<34} {:<22} {:>10} {:>9} {:>8} {:>8}",
        "link", "scheme", "Mbit/s", "p95 ms", "tput/x", "p95/x"
    );
    for r in &rows {
        println!(
            "{:<34} {:<22} {:>10.3} {:>9} {:>8} {:>8}",
            r.link,
            r.scheme,
            r.throughput_mbps,
            opt(r.delay_p95_ms, 1),
            opt(r.throughput_ratio, 3),
            opt(r.p95_ratio, 3)
        );
    }
    // Geometric means of the ratios per scheme.
    for (label, _) in schemes.iter().skip(1) {
        let of = |f: fn(&Row) -> Option<f64>| {
            let v: Vec<f64> = rows.iter().filter(|r| &r.scheme == label).filter_map(f).collect();
            (!v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
        };
        println!(
            "{label}: geometric mean over links: throughput x{}, p95 x{}",
            opt(of(|r| r.throughput_ratio), 3),
            opt(of(|r| r.p95_ratio), 3)
        );
    }
    Ok(())
}

fn info(path: &Path) -> Result<()> {
    let model = alcc_cc::mdi::load::load(path).with_context(|| format!("{}", path.display()))?;
    let layout = model.layout();
    let (nd, n) = (layout.delay.count(), layout.states());
    let seen_blocks =
        (0..n).flat_map(|r| (0..nd).map(move |c| (r, c))).filter(|&(r, c)| model.seen(r, c)).count();
    let seen_rows = (0..n).filter(|&r| (0..nd).any(|c| model.seen(r, c))).count();
    let h = layout.header();
    println!("header: {}", h.map(|v| v.to_string()).join(","));
    println!("states: {n} ({} window x {nd} delay buckets)", layout.window.count());
    println!("states seen: {seen_rows}; (state, delay bucket) blocks seen: {seen_blocks} of {}", n * nd);
    Ok(())
}
