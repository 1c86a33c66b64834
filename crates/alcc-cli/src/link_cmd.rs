//! `alcc link`: run a command behind an emulated link (Mahimahi's `mm-delay` + `mm-link` +
//! `mm-loss` in one), the client side in one network namespace, servers in another.

use std::path::PathBuf;
use std::process::Child;

use alcc_link::{netns, DirectionConfig, DirectionReport, QueueSpec, Schedule, Side, Testbed, TestbedConfig};
use alcc_trace::{TimeUnit, Trace};
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};

/// Options of `alcc link`.
#[derive(Args, Debug)]
pub struct LinkArgs {
    /// Trace of the uplink (client to server), Mahimahi format.
    #[arg(long, value_name = "TRACE")]
    uplink: PathBuf,
    /// Trace of the downlink (server to client), Mahimahi format.
    #[arg(long, value_name = "TRACE")]
    downlink: PathBuf,
    /// One-way propagation delay in ms, applied in each direction.
    #[arg(long, value_name = "MS", default_value_t = 0.0, allow_negative_numbers = true)]
    delay: f64,
    /// Uplink queue: droptail or infinite.
    #[arg(long, value_name = "QUEUE", default_value = "infinite")]
    uplink_queue: String,
    /// Uplink queue limits: packets=N and/or bytes=N, comma-separated.
    #[arg(long, value_name = "ARGS")]
    uplink_queue_args: Option<String>,
    /// Downlink queue: droptail or infinite.
    #[arg(long, value_name = "QUEUE", default_value = "infinite")]
    downlink_queue: String,
    /// Downlink queue limits: packets=N and/or bytes=N, comma-separated.
    #[arg(long, value_name = "ARGS")]
    downlink_queue_args: Option<String>,
    /// Probability that an uplink packet is lost.
    #[arg(long, value_name = "P", default_value_t = 0.0, allow_negative_numbers = true)]
    uplink_loss: f64,
    /// Probability that a downlink packet is lost.
    #[arg(long, value_name = "P", default_value_t = 0.0, allow_negative_numbers = true)]
    downlink_loss: f64,
    /// Seed of the loss generators.
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
    /// Write the uplink's Mahimahi-format log here.
    #[arg(long, value_name = "FILE")]
    uplink_log: Option<PathBuf>,
    /// Write the downlink's Mahimahi-format log here.
    #[arg(long, value_name = "FILE")]
    downlink_log: Option<PathBuf>,
    /// Write the uplink's flow log here: the same events in µs, each packet line ending with
    /// its flow (`tcp:SRCPORT:DSTPORT`, `udp:...`; alcc_trace::flow), beside the Mahimahi log.
    #[arg(long, value_name = "FILE")]
    uplink_flow_log: Option<PathBuf>,
    /// Write the downlink's flow log here (see --uplink-flow-log).
    #[arg(long, value_name = "FILE")]
    downlink_flow_log: Option<PathBuf>,
    /// Unit of the logs' times: ms (Mahimahi's) or us (alcc's extension, announced in the header).
    #[arg(long, value_enum, default_value_t = LogUnit::Ms)]
    log_unit: LogUnit,
    /// A shell command to start in the server namespace before COMMAND (repeatable); it is
    /// killed when COMMAND ends.
    #[arg(long = "server", value_name = "SHELL-COMMAND")]
    servers: Vec<String>,
    /// The command to run in the client namespace (default: $SHELL). It finds the server's
    /// address in ALCC_SERVER (and MAHIMAHI_BASE).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// Time unit of the logs.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum LogUnit {
    /// Milliseconds (Mahimahi).
    Ms,
    /// Microseconds.
    Us,
}

fn direction(
    name: &str,
    trace: &PathBuf,
    queue: &str,
    queue_args: Option<&str>,
    loss: f64,
    log: Option<PathBuf>,
    flow_log: Option<PathBuf>,
) -> Result<DirectionConfig> {
    let trace = Trace::parse_file(trace).with_context(|| format!("--{name} trace"))?;
    let queue = QueueSpec::parse(queue, queue_args).with_context(|| format!("--{name}-queue"))?;
    if !(0.0..=1.0).contains(&loss) {
        bail!("--{name}-loss {loss}: a loss probability must be between 0 and 1");
    }
    Ok(DirectionConfig { schedule: Schedule::from(trace), queue, loss, log, flow_log })
}

/// Parses the options into a testbed configuration, checking everything before any
/// namespace is made.
fn config(args: &LinkArgs) -> Result<TestbedConfig> {
    if !(args.delay.is_finite() && args.delay >= 0.0 && args.delay <= 3_600_000.0) {
        bail!("--delay {}: the one-way delay must be a number of ms between 0 and 3600000", args.delay);
    }
    let uplink = direction(
        "uplink",
        &args.uplink,
        &args.uplink_queue,
        args.uplink_queue_args.as_deref(),
        args.uplink_loss,
        args.uplink_log.clone(),
        args.uplink_flow_log.clone(),
    )?;
    let downlink = direction(
        "downlink",
        &args.downlink,
        &args.downlink_queue,
        args.downlink_queue_args.as_deref(),
        args.downlink_loss,
        args.downlink_log.clone(),
        args.downlink_flow_log.clone(),
    )?;
    Ok(TestbedConfig {
        uplink,
        downlink,
        delay_us: (args.delay * 1000.0).round() as u64,
        seed: args.seed,
        log_unit: match args.log_unit {
            LogUnit::Ms => TimeUnit::Millis,
            LogUnit::Us => TimeUnit::Micros,
        },
    })
}

fn summary(name: &str, d: &DirectionReport) {
    let c = &d.counters;
    let secs = d.wall_us as f64 / 1e6;
    eprintln!(
        "alcc link: {name}: {} packets in, {} out ({:.2} Mbit/s of {:.2}), {} dropped by the queue, \
         {} lost at random, {} dropped by the sending device's queue; writes late by {:.1} us on average (p50 {} p99 {} p99.9 {} max {} us); relay CPU {:.1} %",
        c.arrivals + d.lost,
        c.departures,
        c.departure_bytes as f64 * 8.0 / secs.max(1e-9) / 1e6,
        c.opportunities as f64 * 1500.0 * 8.0 / secs.max(1e-9) / 1e6,
        c.drops,
        d.lost,
        d.device_drops.map_or("?".to_string(), |n| n.to_string()),
        d.lateness.mean_us(),
        d.lateness.p50_us,
        d.lateness.p99_us,
        d.lateness.p999_us,
        d.lateness.max_us,
        d.cpu_us as f64 / d.wall_us.max(1) as f64 * 100.0,
    );
    if let Some(e) = &d.error {
        eprintln!("alcc link: {name}: stopped early: {e}");
    }
}

/// Runs `alcc link`; returns the exit status of COMMAND.
pub fn run(args: LinkArgs) -> Result<i32> {
    // Before any thread exists, so that every thread inherits the blocked signals.
    netns::install_signal_cleanup()?;
    let config = config(&args)?;
    let testbed = Testbed::start(config)?;
    let mut servers: Vec<Child> = Vec::new();
    for s in &args.servers {
        let child = testbed
            .command(Side::Server, "sh")
            .args(["-c", s])
            .spawn()
            .with_context(|| format!("starting server command `{s}`"))?;
        servers.push(child);
    }
    let (program, rest) = match args.command.split_first() {
        Some((p, rest)) => (p.clone(), rest.to_vec()),
        None => (std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".to_string()), Vec::new()),
    };
    let status = testbed
        .command(Side::Client, &program)
        .args(&rest)
        .status()
        .with_context(|| format!("running `{program}` in the client namespace"))?;
    let report = testbed.stop();
    for mut s in servers {
        // Killed with their namespace; reap them.
        let _ = s.wait();
    }
    summary("uplink", &report.uplink);
    summary("downlink", &report.downlink);
    if let Some(sig) = netns::interrupted() {
        eprintln!("alcc link: interrupted by signal {sig}; logs flushed, namespaces removed");
        return Ok(128 + sig);
    }
    Ok(status.code().unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        link: LinkArgs,
    }

    /// A directory of traces for one test (tests run in parallel).
    fn trace_dir(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("alcc-cli-link-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("good"), "1\n").unwrap();
        std::fs::write(dir.join("bad"), "3\n2\n").unwrap();
        dir
    }

    fn parse(extra: &[&str]) -> Result<TestbedConfig> {
        let dir = trace_dir(&extra.join("_").replace(['/', ' '], "_"));
        let good = dir.join("good").display().to_string();
        let mut argv = vec!["alcc-link", "--uplink", &good, "--downlink", &good];
        argv.extend_from_slice(extra);
        let cli = Cli::try_parse_from(argv)?;
        config(&cli.link)
    }

    fn error(extra: &[&str]) -> String {
        format!("{:#}", parse(extra).unwrap_err())
    }

    #[test]
    fn options_become_a_configuration() {
        let c =
            parse(&["--delay", "20", "--downlink-queue", "droptail", "--downlink-queue-args", "packets=100"])
                .unwrap();
        assert_eq!(c.delay_us, 20_000);
        assert_eq!(c.downlink.queue, QueueSpec::DropTail { packets: Some(100), bytes: None });
        assert_eq!(c.uplink.queue, QueueSpec::Infinite);
        assert_eq!(c.downlink.schedule.capacity_bps(), 12e6);
    }

    #[test]
    fn impossible_options_are_named() {
        assert!(error(&["--delay", "-1"]).contains("--delay -1"));
        assert!(error(&["--uplink-loss", "1.5"]).contains("--uplink-loss 1.5"));
        let e = error(&["--downlink-queue", "droptail"]);
        assert!(e.contains("--downlink-queue") && e.contains("packets=N"), "{e}");
        let e = error(&["--uplink-queue", "red"]);
        assert!(e.contains("unknown queue type `red`"), "{e}");
    }

    #[test]
    fn malformed_trace_names_the_file_and_line() {
        let dir = trace_dir("malformed");
        let bad = dir.join("bad").display().to_string();
        let good = dir.join("good").display().to_string();
        let cli = Cli::try_parse_from(["x", "--uplink", &good, "--downlink", &bad]).unwrap();
        let e = format!("{:#}", config(&cli.link).unwrap_err());
        assert!(e.contains("--downlink trace") && e.contains(&format!("{bad}:2")), "{e}");
        let cli = Cli::try_parse_from(["x", "--uplink", "/nonexistent/trace", "--downlink", &good]).unwrap();
        let e = format!("{:#}", config(&cli.link).unwrap_err());
        assert!(e.contains("/nonexistent/trace"), "{e}");
    }
}
