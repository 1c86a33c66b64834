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

/// With random loss p and no queue to fill, Reno's throughput follows the Mathis et al. (1997)
/// model, MSS / RTT x sqrt(3 / (2 p)); within 30 % for p = 1 % and 2 % on the reference link
/// (40 ms round trip, 1500-byte packets).
#[test]
fn random_loss_follows_the_mathis_model() {
    for p in [0.01, 0.02] {
        let mut s = common::reference_link();
        s.loss = p;
        let sum = common::run(&s, "reno");
        let model_mbps = 1500.0 * 8.0 / 0.040 * (1.5 / p).sqrt() / 1e6;
        let ratio = sum.throughput_mbps / model_mbps;
        assert!((0.7..=1.3).contains(&ratio), "p {p}: {} Mbit/s vs model {model_mbps}", sum.throughput_mbps);
    }
}
