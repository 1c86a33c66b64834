//! Kernel CUBIC over one of the ALCC paper's cellular traces (from the shared trace directory,
//! `$ALCC_TRACE_DIR` or `../shared/traces` beside the repository): it must fill the link, show
//! bufferbloat with a deep queue, and have its queueing bounded by a 100-packet drop-tail queue.
//! Root and the traces, or a visible skip (a failure in CI). The other traces and longer runs
//! are in bench/link.sh.

mod common;

use std::time::Duration;

use alcc_link::{DirectionConfig, QueueSpec, Schedule, Testbed, TestbedConfig};
use alcc_trace::{Log, LogEvent, TimeUnit, Trace};
use common::*;

struct Outcome {
    utilization: f64,
    p95_delay_us: u64,
    /// Most opportunities that began strictly between a packet's arrival and its departure.
    max_opportunities_waited: usize,
}

fn cubic_over(trace: &Trace, queue: QueueSpec, tag: &str) -> Outcome {
    let log = temp_path(&format!("{tag}.log"));
    let mut config = TestbedConfig::symmetric(DirectionConfig::new(Schedule::from(trace.clone())), 10_000);
    config.downlink.queue = queue;
    config.downlink.log = Some(log.clone());
    config.log_unit = TimeUnit::Micros;
    let tb = Testbed::start(config).unwrap();
    let warmup = Duration::from_secs(2);
    let w = bulk_download(&tb, "cubic", warmup, Duration::from_secs(10));
    drop(tb);
    let parsed = Log::read_file(&log).unwrap();
    std::fs::remove_file(&log).unwrap();
    let mut ops: Vec<u64> = parsed
        .events
        .iter()
        .filter_map(|e| if let LogEvent::Opportunity { at_us, .. } = e { Some(*at_us) } else { None })
        .collect();
    ops.sort_unstable();
    let rec = parsed.to_recording();
    let steady = rec.packets.iter().filter(|p| p.sent_us >= warmup.as_micros() as u64);
    let mut delays: Vec<u64> =
        steady.clone().filter_map(|p| p.one_way_delay_us(rec.propagation_delay_us)).collect();
    let max_waited = steady
        .filter_map(|p| p.departed_us.map(|d| (p.sent_us, d)))
        .map(|(a, d)| ops.partition_point(|&t| t < d) - ops.partition_point(|&t| t <= a))
        .max()
        .unwrap_or(0);
    Outcome {
        utilization: w.utilization(),
        p95_delay_us: quantile(&mut delays, 0.95),
        max_opportunities_waited: max_waited,
    }
}

#[test]
fn cubic_on_campus_walk_fills_the_link_and_bloats_only_a_deep_queue() {
    let rel = "alcc-paper/CampusWalk.trace";
    let env = alcc_testenv::require!(emulator_needs().trace(rel));
    let trace = Trace::parse_file(env.trace(rel)).unwrap();
    let _g = serial();
    leak_checked(|| {
        let deep = cubic_over(&trace, QueueSpec::DropTail { packets: None, bytes: Some(2_000_000) }, "deep");
        let short = cubic_over(&trace, QueueSpec::DropTail { packets: Some(100), bytes: None }, "short");
        for (name, o) in [("2 MB", &deep), ("100 packets", &short)] {
            eprintln!(
                "CampusWalk, cubic, {name} queue: utilization {:.3}, p95 one-way delay {:.1} ms, \
                 at most {} opportunities waited",
                o.utilization,
                o.p95_delay_us as f64 / 1000.0,
                o.max_opportunities_waited
            );
        }
        assert!(deep.utilization >= 0.90, "deep utilization {}", deep.utilization);
        assert!(deep.p95_delay_us >= 200_000, "no bufferbloat: p95 {} us", deep.p95_delay_us);
        // 100 queued packets and the one in transit: at most 101 full opportunities ahead.
        assert!(short.max_opportunities_waited <= 101, "{}", short.max_opportunities_waited);
        assert!(short.p95_delay_us < deep.p95_delay_us / 2);
    });
}
