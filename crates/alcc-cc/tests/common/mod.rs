//! Shared helpers of the simulator scenario tests: run a controller on a scenario and summarize
//! the run with the same metrics code (`alcc-trace`) every other measurement uses.
#![allow(dead_code)]

pub mod coupled;

use std::time::Duration;

use alcc_cc::sim::{Capacity, Scenario, SimResult};
use alcc_trace::metrics::{summarize, Summary};
use alcc_trace::record::Recording;

/// The reference link: 12 Mbit/s constant, 20 ms one-way, 1000-packet drop-tail, 60 s.
pub fn reference_link() -> Scenario {
    Scenario::new(Capacity::ConstantMbps(12.0))
}

/// A scenario over the project's default synthetic cellular trace (60 s, seed `seed`).
pub fn cellular_link(seed: u64) -> Scenario {
    let model = alcc_trace::synth::CellularModel::default();
    let trace = alcc_trace::synth::cellular(&model, seed).expect("default model is valid");
    Scenario::new(Capacity::Trace(trace.opportunities_ms().to_vec()))
}

/// The link of `experiments/demo.toml` in the simulator: the synthetic cellular trace of seed
/// `seed` (60 s), 10 ms one-way delay, a 2 MB drop-tail queue, 60 s.
pub fn demo_link(seed: u64) -> Scenario {
    let mut s = cellular_link(seed);
    s.one_way_delay = Duration::from_millis(10);
    s.queue = alcc_cc::sim::QueueLimit::Bytes(2_000_000);
    s
}

/// A scenario over a file of the shared traces (alcc-testenv's trace directory), or `None`
/// when it is absent: the skip is then recorded (a failure in CI) and the caller returns.
pub fn shared_trace_link(relative: &str) -> Option<Scenario> {
    let env = alcc_testenv::needs().trace(relative).check()?;
    let trace = alcc_trace::trace::Trace::parse_file(env.trace(relative)).expect("shared trace parses");
    Some(Scenario::new(Capacity::Trace(trace.opportunities_ms().to_vec())))
}

/// The run as `alcc-trace` sees a link: packets at the bottleneck and its opportunities.
pub fn recording(scenario: &Scenario, result: &SimResult) -> Recording {
    Recording::from_parts(
        result.bottleneck_packets(),
        result.opportunities.iter().map(|t| t.as_micros()),
        alcc_cc::sim::capacity::OPPORTUNITY_BYTES,
        scenario.one_way_delay.as_micros() as u64,
    )
}

/// Runs `spec` on `scenario` and summarizes it.
pub fn run(scenario: &Scenario, spec: &str) -> Summary {
    let result = scenario.run(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    let summary = summarize(&recording(scenario, &result));
    eprintln!(
        "{spec:<16} thr {:6.2} Mbit/s  util {:5.1} %  owd p50 {:7.1} p95 {:7.1} p99 {:7.1} ms  loss {:.4}",
        summary.throughput_mbps,
        summary.utilization * 100.0,
        summary.delay_p50_ms.unwrap_or(f64::NAN),
        summary.delay_p95_ms.unwrap_or(f64::NAN),
        summary.delay_p99_ms.unwrap_or(f64::NAN),
        summary.loss,
    );
    summary
}

/// p95 one-way delay in ms (panics if nothing was delivered: a scenario test failure).
pub fn p95(s: &Summary) -> f64 {
    s.delay_p95_ms.expect("some packet was delivered")
}

/// The propagation delay of the reference link, ms.
pub const PROPAGATION_MS: f64 = 20.0;

/// A short duration for quick checks.
pub fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}
