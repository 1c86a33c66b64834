//! How fast the simulator replays a minute of a 10 Mbit/s link with each controller
//! (target: well under one second per run).

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

criterion_group!(benches, ten_mbps_minute);
criterion_main!(benches);
