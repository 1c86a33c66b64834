//! CUBIC on the simulator: a loss-based algorithm fills the drop-tail buffer.

mod common;

/// 12 Mbit/s, 20 ms one way, 1000-packet drop-tail, 60 s: p95 one-way delay above 500 ms at
/// >= 95 % utilization.
#[test]
fn reference_link_fills_the_buffer() {
    let s = common::reference_link();
    for spec in ["cubic", "cubic:hystart=on"] {
        let sum = common::run(&s, spec);
        assert!(sum.utilization >= 0.95, "{spec}: {sum:?}");
        assert!(common::p95(&sum) > 500.0, "{spec}: {sum:?}");
        assert!(sum.loss > 0.0, "{spec}: a full drop-tail buffer drops: {sum:?}");
    }
}
