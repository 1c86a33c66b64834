//! Simulator scenarios with the `fixed` controller: the simulator and the metrics agree with
//! what a constant window must give (the pattern for every algorithm's scenario tests).

mod common;

#[test]
fn window_at_bdp_fills_the_link_without_queueing() {
    // 12 Mbit/s x 40 ms round trip = 40 packets of 1500 bytes.
    let s = common::reference_link();
    let sum = common::run(&s, "fixed:window=40");
    assert!(sum.utilization > 0.99, "{sum:?}");
    // After the initial burst drains, no standing queue: p95 at the propagation delay.
    assert!(common::p95(&sum) < common::PROPAGATION_MS + 2.0, "{sum:?}");
}

#[test]
fn window_beyond_the_buffer_fills_it_and_drops() {
    let s = common::reference_link();
    let sum = common::run(&s, "fixed:window=2000");
    // 1000 packets queued at 1 packet/ms: one second of queueing.
    assert!(common::p95(&sum) > 1000.0, "{sum:?}");
    assert!(sum.loss > 0.0, "{sum:?}");
}
