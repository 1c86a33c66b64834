//! How fast the simulator replays a minute of a 10 Mbit/s link with each controller
//! (target: well under one second per run), a minute of Verus (R = 6) on the Verus
//! reproduction's 12 Mbit/s reference link, whose profile refit (a penalized spline every
//! second) and 200 epochs a second must stay cheap (target: under 1 s; this was a timed unit
//! test in tests/scenario_verus.rs until the project moved speed targets to benchmarks), and a
//! minute of the link on which Verus's window runs away to about 21000 packets and its delay
//! profile grows to over a thousand basis functions (`alcc mdi train --synthetic 60`'s link 58;
//! the dense fit took minutes there).
//! `cargo bench -p alcc-cc --bench sim` (a filter such as `-- verus_reference` runs one group).

use std::time::Duration;

use alcc_cc::sim::{Capacity, QueueLimit, Scenario};
use alcc_trace::synth::{self, CellularModel};
use criterion::{criterion_group, criterion_main, Criterion};

fn ten_mbps_minute(c: &mut Criterion) {
    // A 10 Mbit/s trace: 5 opportunities every 6 ms (1500 bytes x 8 x 5 / 6 ms = 10 Mbit/s).
    let trace = vec![1, 2, 3, 4, 6];
    let mut scenario = Scenario::new(Capacity::Trace(trace));
    scenario.duration = Duration::from_secs(60);
    let mut group = c.benchmark_group("sim_60s_10mbps");
    group.sample_size(10);
    for name in alcc_cc::registry::names() {
        // An unbounded fixed window would only measure the simulator dropping a 1 Gbit/s flood.
        let spec = if name == "fixed" { "fixed:window=100" } else { name };
        group.bench_function(spec, |b| b.iter(|| scenario.run(spec).map(|r| r.packets.len())));
    }
    group.finish();
}

fn verus_reference_minute(c: &mut Criterion) {
    // tests/common/mod.rs `reference_link`: a constant 12 Mbit/s link, the scenario's
    // defaults otherwise (60 s).
    let scenario = Scenario::new(Capacity::ConstantMbps(12.0));
    let mut group = c.benchmark_group("verus_reference_link_60s");
    group.sample_size(10);
    group.bench_function("verus:r=6", |b| b.iter(|| scenario.run("verus:r=6").map(|r| r.packets.len())));
    group.finish();
}

fn verus_runaway_window_minute(c: &mut Criterion) {
    // `alcc mdi train`'s synthetic link 58: the cellular model with seed 58, mean 14 Mbit/s,
    // 40 ms one way, 1000 packets of queue.
    let model = CellularModel { duration_ms: 60_000, mean_rate_mbps: 14.0, ..CellularModel::default() };
    let trace = synth::cellular(&model, 58).expect("the cellular model's defaults are valid");
    let mut scenario = Scenario::new(Capacity::Trace(trace.opportunities_ms().to_vec()));
    scenario.one_way_delay = Duration::from_millis(40);
    scenario.queue = QueueLimit::Packets(1000);
    scenario.duration = Duration::from_secs(60);
    let mut group = c.benchmark_group("sim_60s_synthetic58");
    group.sample_size(10);
    group.bench_function("verus", |b| b.iter(|| scenario.run("verus").map(|r| r.packets.len())));
    group.finish();
}

criterion_group!(benches, ten_mbps_minute, verus_reference_minute, verus_runaway_window_minute);
criterion_main!(benches);
