//! Reno on the simulator: a loss-based algorithm fills the drop-tail buffer.

mod common;

/// 12 Mbit/s, 20 ms one way, 1000-packet drop-tail, 60 s: p95 one-way delay above 500 ms at
/// >= 95 % utilization.
#[test]
fn reference_link_fills_the_buffer() {
    let s = common::reference_link();
    let sum = common::run(&s, "reno");
    assert!(sum.utilization >= 0.95, "{sum:?}");
    assert!(common::p95(&sum) > 500.0, "{sum:?}");
    assert!(sum.loss > 0.0, "a full drop-tail buffer drops: {sum:?}");
}
