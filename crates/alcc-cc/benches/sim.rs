//! How fast the simulator replays a minute of a 10 Mbit/s link with each controller
//! (target: well under one second per run), and a minute of Verus (R = 6) on the Verus
//! reproduction's 12 Mbit/s reference link, whose profile refit (a penalized spline every
//! second) and 200 epochs a second must stay cheap (target: under 1 s; this was a timed unit
//! test in tests/scenario_verus.rs until the project moved speed targets to benchmarks).
//! `cargo bench -p alcc-cc --bench sim` (a filter such as `-- verus_reference` runs one group).

use std::time::Duration;

use alcc_cc::sim::{Capacity, Scenario};
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

criterion_group!(benches, ten_mbps_minute, verus_reference_minute);
criterion_main!(benches);
