//! Simulator scenarios for Sprout (sender and receiver model driven together).
//!
//! Figures measured when these were written (60 s runs, 20 ms one-way delay, 1000-packet
//! drop-tail queue): on the 12 Mbit/s reference link 99.9 % utilization at p95 one-way delay
//! 70 ms; on the default synthetic cellular trace (seeds 1 to 3) 96 to 99 % utilization at p95
//! 90 to 95 ms and 96 to 99 % of CUBIC's throughput, where CUBIC sees p95 of 2.0 to 2.3 s.

mod common;

use alcc_trace::metrics::Summary;

/// A window far beyond the buffer: what a loss-based controller (CUBIC, Reno) converges to on
/// a 1000-packet drop-tail queue, full buffer and full link; a baseline that does not depend
/// on any other algorithm's implementation.
const BUFFER_FILLER: &str = "fixed:window=2000";

fn beats(sprout: &Summary, baseline: &Summary, name: &str) {
    assert!(
        common::p95(sprout) * 4.0 <= common::p95(baseline),
        "sprout p95 {:.1} ms is not 4x below {name}'s {:.1} ms",
        common::p95(sprout),
        common::p95(baseline)
    );
    assert!(
        sprout.throughput_mbps >= 0.7 * baseline.throughput_mbps,
        "sprout {:.2} Mbit/s is below 70 % of {name}'s {:.2} Mbit/s",
        sprout.throughput_mbps,
        baseline.throughput_mbps
    );
}

#[test]
fn reference_link_keeps_delay_within_150_ms_of_propagation() {
    let s = common::reference_link();
    let sum = common::run(&s, "sprout");
    assert!(common::p95(&sum) < common::PROPAGATION_MS + 150.0, "{sum:?}");
    // At 1000 packets/s the link sits at the top of the model's rate axis: the forecast is
    // confident and the link stays busy.
    assert!(sum.utilization > 0.95, "{sum:?}");
}

#[test]
fn cellular_trace_beats_a_buffer_filler_fourfold_on_delay() {
    for seed in 1..=3 {
        let s = common::cellular_link(seed);
        let sprout = common::run(&s, "sprout");
        let filler = common::run(&s, BUFFER_FILLER);
        beats(&sprout, &filler, BUFFER_FILLER);
        assert!(common::p95(&sprout) < common::PROPAGATION_MS + 150.0, "seed {seed}: {sprout:?}");
    }
}

#[test]
fn cellular_trace_beats_cubic_fourfold_on_delay() {
    for seed in 1..=3 {
        let s = common::cellular_link(seed);
        let sprout = common::run(&s, "sprout");
        let cubic = common::run(&s, "cubic");
        beats(&sprout, &cubic, "cubic");
    }
}

/// The two forecast clocks on the Verizon LTE downlink at 20 ms one-way (60 s): the reference's
/// (`sprout`, counting a forecast's ticks from its arrival) keeps the link busy, and our variant
/// `clock=half_rtt` (counting from its estimated creation) trades delay for throughput.
/// Measured: 82 % of the capacity at p95 100 ms against 89 % at 119 ms. (Before the sender looked
/// ahead as the reference does, over the 5 ticks after the current one, the arrival clock starved
/// here: 26 % of the capacity.)
#[test]
fn verizon_lte_forecast_clocks() {
    let Some(s) = common::shared_trace_link("mahimahi/Verizon-LTE-short.down") else { return };
    let reference = common::run(&s, "sprout");
    let half_rtt = common::run(&s, "sprout:clock=half_rtt");
    let filler = common::run(&s, BUFFER_FILLER);
    assert!(reference.utilization > 0.75, "{reference:?}");
    assert!(half_rtt.utilization > reference.utilization, "{half_rtt:?} vs {reference:?}");
    assert!(common::p95(&half_rtt) > common::p95(&reference), "{half_rtt:?} vs {reference:?}");
    for sum in [&reference, &half_rtt] {
        assert!(common::p95(sum) < common::PROPAGATION_MS + 150.0, "{sum:?}");
        beats(sum, &filler, BUFFER_FILLER);
    }
}

/// The recorded LTE downlinks of the shared traces (skipped visibly without them, a failure in CI).
#[test]
fn recorded_lte_traces_beat_cubic_fourfold_on_delay() {
    for trace in [
        "mahimahi/Verizon-LTE-short.down",
        "mahimahi/TMobile-LTE-short.down",
        "mahimahi/ATT-LTE-driving.down",
    ] {
        let Some(s) = common::shared_trace_link(trace) else { return };
        let sprout = common::run(&s, "sprout");
        let cubic = common::run(&s, "cubic");
        beats(&sprout, &cubic, "cubic");
    }
}
