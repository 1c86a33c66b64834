//! Benchmark of the emulator (root): a kernel TCP bulk download through the testbed, reporting
//! link utilization, p95 one-way delay (from the downlink's log) and the relay threads' CPU use.
//!
//! `linkbench (--rate-mbps R | --trace FILE) [--seconds 10] [--warmup 2] [--delay-ms 10]
//!  [--queue infinite|droptail] [--queue-args packets=N] [--cc cubic]`

use std::error::Error;
use std::time::Duration;

use alcc_link::{probe, DirectionConfig, QueueSpec, Schedule, Testbed, TestbedConfig};
use alcc_trace::{Log, TimeUnit, Trace};

/// A constant-rate schedule: `n` opportunities spread evenly over one second.
fn constant_rate(mbps: f64) -> Result<Schedule, Box<dyn Error>> {
    let n = (mbps * 1e6 / 12_000.0).round() as u64;
    if n == 0 {
        return Err("rate too low".into());
    }
    Ok(Schedule::new((1..=n).map(|k| k * 1000 / n).collect())?)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let seconds: f64 = opt("--seconds").unwrap_or_else(|| "10".into()).parse()?;
    let warmup: f64 = opt("--warmup").unwrap_or_else(|| "2".into()).parse()?;
    let delay_ms: f64 = opt("--delay-ms").unwrap_or_else(|| "10".into()).parse()?;
    let cc = opt("--cc").unwrap_or_else(|| "cubic".into());
    let queue = QueueSpec::parse(
        &opt("--queue").unwrap_or_else(|| "infinite".into()),
        opt("--queue-args").as_deref(),
    )?;
    let (label, schedule) = match (opt("--rate-mbps"), opt("--trace")) {
        (Some(r), None) => (format!("{r} Mbit/s constant"), constant_rate(r.parse()?)?),
        (None, Some(t)) => (t.clone(), Schedule::from(Trace::parse_file(&t)?)),
        _ => return Err("give exactly one of --rate-mbps R and --trace FILE".into()),
    };
    let log = std::env::temp_dir().join(format!("alcc-linkbench-{}.log", std::process::id()));
    let mut config =
        TestbedConfig::symmetric(DirectionConfig::new(schedule.clone()), (delay_ms * 1000.0) as u64);
    config.downlink.queue = queue;
    config.downlink.log = Some(log.clone());
    config.log_unit = TimeUnit::Micros;
    let tb = Testbed::start(config)?;
    let w =
        probe::bulk_download(&tb, &cc, Duration::from_secs_f64(warmup), Duration::from_secs_f64(seconds))?;
    let report = tb.stop();
    let parsed = Log::read_file(&log)?;
    std::fs::remove_file(&log)?;
    let rec = parsed.to_recording();
    let from_us = (warmup * 1e6) as u64;
    let mut delays: Vec<u64> = rec
        .packets
        .iter()
        .filter(|p| p.sent_us >= from_us)
        .filter_map(|p| p.one_way_delay_us(rec.propagation_delay_us))
        .collect();
    delays.sort_unstable();
    let pct = |q: f64| delays.get(((q * delays.len() as f64) as usize).min(delays.len().saturating_sub(1)));
    let cpu = |d: &alcc_link::DirectionReport| d.cpu_us as f64 / d.wall_us.max(1) as f64 * 100.0;
    println!(
        "{label} | {cc} | queue {} | capacity {:.2} Mbit/s | utilization {:.3} | goodput {:.2} Mbit/s | \
         p50 {:.1} ms p95 {:.1} ms one-way | relay CPU down {:.1} % up {:.1} % | lateness down mean {:.1} us \
         p50 {} p99 {} p99.9 {} max {} us >500us {} of {} | device drops down {}",
        queue,
        schedule.capacity_bps() / 1e6,
        w.utilization(),
        w.received as f64 * 8.0 / seconds / 1e6,
        pct(0.5).copied().unwrap_or(0) as f64 / 1000.0,
        pct(0.95).copied().unwrap_or(0) as f64 / 1000.0,
        cpu(&report.downlink),
        cpu(&report.uplink),
        report.downlink.lateness.mean_us(),
        report.downlink.lateness.p50_us,
        report.downlink.lateness.p99_us,
        report.downlink.lateness.p999_us,
        report.downlink.lateness.max_us,
        report.downlink.lateness.over_500us,
        report.downlink.lateness.packets,
        report.downlink.device_drops.map_or("?".to_string(), |n| n.to_string()),
    );
    Ok(())
}
