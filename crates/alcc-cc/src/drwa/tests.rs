//! Exact checks of each DRWA update (the paper's Algorithm 3 and the choices in the module
//! docs), and properties over random measurement sequences.

use std::time::Duration;

use proptest::prelude::*;

use super::{Drwa, DrwaParams, Sample};
use crate::spec::SpecError;
use crate::time::Time;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn at(t_ms: u64, bytes: u64, rtt_ms: u64) -> Sample {
    Sample { now: Time::from_millis(t_ms), bytes_received: bytes, rtt: Some(ms(rtt_ms)) }
}

#[test]
fn the_first_sample_starts_a_round_and_sets_no_window() {
    let mut d = Drwa::new(DrwaParams::default());
    assert_eq!(d.on_sample(at(0, 0, 100)), None);
    assert_eq!(d.window(), None);
    assert_eq!(d.rtt_min(), Some(ms(100)));
    // Less than one RTT later: still within the round.
    assert_eq!(d.on_sample(at(99, 50_000, 100)), None);
    assert_eq!(d.window(), None);
}

#[test]
fn the_first_round_is_taken_as_it_is_then_lambda_scales_it() {
    let mut d = Drwa::new(DrwaParams::default());
    d.on_sample(at(0, 0, 100));
    // cwnd_est = 100 000 (Algorithm 3's initialization); rwnd = 3 x (100/100) x 100 000.
    assert_eq!(d.on_sample(at(100, 100_000, 100)), Some(300_000));
    assert_eq!(d.cwnd_estimate(), Some(100_000.0));
    assert_eq!(d.updates(), 1);
}

#[test]
fn later_rounds_are_smoothed_with_alpha_seven_eighths() {
    let mut d = Drwa::new(DrwaParams::default());
    d.on_sample(at(0, 0, 100));
    d.on_sample(at(100, 100_000, 100));
    // cwnd_est = 7/8 x 100 000 + 1/8 x 180 000 = 110 000; rwnd = 3 x 110 000.
    assert_eq!(d.on_sample(at(200, 280_000, 100)), Some(330_000));
    assert_eq!(d.cwnd_estimate(), Some(110_000.0));
}

#[test]
fn a_longer_rtt_shrinks_the_window_by_rtt_min_over_rtt_est() {
    let mut d = Drwa::new(DrwaParams::default());
    d.on_sample(at(0, 0, 100));
    d.on_sample(at(100, 100_000, 100));
    d.on_sample(at(200, 280_000, 100));
    // RTT_est 300 ms: the round lasts 300 ms. cwnd_est = 7/8 x 110 000 + 1/8 x 300 000 =
    // 133 750; rwnd = 3 x (100/300) x 133 750 = 133 750.
    assert_eq!(d.on_sample(at(400, 480_000, 300)), None, "a round lasts RTT_est");
    assert_eq!(d.on_sample(at(500, 580_000, 300)), Some(133_750));
    assert_eq!(d.rtt_min(), Some(ms(100)));
}

#[test]
fn at_lambda_times_rtt_min_the_window_holds_still() {
    let mut d = Drwa::new(DrwaParams::default());
    d.on_sample(at(0, 0, 100));
    d.on_sample(at(100, 60_000, 100));
    // From now on RTT_est = 3 x RTT_min and the sender delivers 60 000 bytes per RTT.
    let mut bytes = 60_000;
    for k in 1..=5 {
        bytes += 60_000;
        assert_eq!(d.on_sample(at(100 + 300 * k, bytes, 300)), Some(60_000));
    }
}

#[test]
fn a_round_longer_than_rtt_est_counts_bytes_per_rtt() {
    let mut d = Drwa::new(DrwaParams::default());
    d.on_sample(at(0, 0, 100));
    // 200 000 bytes in 200 ms at RTT_est 100 ms: 100 000 per RTT (choice 1).
    assert_eq!(d.on_sample(at(200, 200_000, 100)), Some(300_000));
    assert_eq!(d.cwnd_estimate(), Some(100_000.0));
}

#[test]
fn an_idle_round_changes_nothing_and_restarts_the_round() {
    let mut d = Drwa::new(DrwaParams::default());
    d.on_sample(at(0, 0, 100));
    d.on_sample(at(100, 100_000, 100));
    assert_eq!(d.on_sample(at(250, 100_000, 100)), None, "no bytes: no update (choice 2)");
    assert_eq!((d.window(), d.cwnd_estimate(), d.updates()), (Some(300_000), Some(100_000.0), 1));
    // The next round starts at 250 ms, not 100 ms: 50 ms later it has not ended.
    assert_eq!(d.on_sample(at(300, 150_000, 100)), None);
    // 7/8 x 100 000 + 1/8 x 100 000 at 350 ms (100 000 bytes in 100 ms).
    assert_eq!(d.on_sample(at(350, 200_000, 100)), Some(300_000));
}

#[test]
fn rtt_min_is_the_smallest_estimate_seen_also_inside_a_round() {
    let mut d = Drwa::new(DrwaParams::default());
    d.on_sample(at(0, 0, 100));
    d.on_sample(at(30, 10_000, 40));
    // At 100 ms the estimate is back to 100 ms: cwnd_est 100 000 x 100/100, rwnd = 3 x 40/100 x it.
    assert_eq!(d.on_sample(at(100, 100_000, 100)), Some(120_000));
    assert_eq!(d.rtt_min(), Some(ms(40)));
}

#[test]
fn without_an_rtt_estimate_nothing_is_updated() {
    let mut d = Drwa::new(DrwaParams::default());
    d.on_sample(Sample { now: Time::ZERO, bytes_received: 0, rtt: None });
    let zero = Sample { now: Time::from_millis(500), bytes_received: 1_000_000, rtt: Some(Duration::ZERO) };
    assert_eq!(d.on_sample(zero), None);
    assert_eq!((d.window(), d.rtt_min()), (None, None));
}

#[test]
fn the_window_stays_between_floor_and_ceiling() {
    let mut d = Drwa::new(DrwaParams { floor: 10_000, ceiling: 200_000, ..DrwaParams::default() });
    d.on_sample(at(0, 0, 100));
    assert_eq!(d.on_sample(at(100, 1_000, 100)), Some(10_000), "3 000 raised to the floor");
    let mut d = Drwa::new(DrwaParams { floor: 10_000, ceiling: 200_000, ..DrwaParams::default() });
    d.on_sample(at(0, 0, 100));
    assert_eq!(d.on_sample(at(100, 100_000, 100)), Some(200_000), "300 000 capped");
    d.set_ceiling(150_000);
    assert_eq!(d.window(), Some(150_000), "a lower ceiling applies at once");
    d.set_ceiling(1);
    assert_eq!(d.window(), Some(10_000), "never below the floor");
}

#[test]
fn lambda_and_alpha_are_parameters() {
    let params = DrwaParams { lambda: 2.0, alpha: 0.5, ..DrwaParams::default() };
    let mut d = Drwa::new(params);
    d.on_sample(at(0, 0, 100));
    assert_eq!(d.on_sample(at(100, 100_000, 100)), Some(200_000));
    // 200 000 bytes in one 200 ms round: 0.5 x 100 000 + 0.5 x 200 000 = 150 000; x 2 x 100/200.
    assert_eq!(d.on_sample(at(300, 300_000, 200)), Some(150_000));
}

#[test]
fn round_end_is_the_round_start_plus_the_rtt() {
    let mut d = Drwa::new(DrwaParams::default());
    assert_eq!(d.round_end(ms(100)), None);
    d.on_sample(at(40, 0, 100));
    assert_eq!(d.round_end(ms(100)), Some(Time::from_millis(140)));
}

#[test]
fn the_spec_has_the_papers_defaults_and_names_bad_values() {
    let d = DrwaParams::parse("drwa").unwrap();
    assert_eq!(d, DrwaParams::default());
    assert_eq!((d.lambda, d.alpha, d.floor), (3.0, 0.875, 5792));
    let p = DrwaParams::parse("drwa:lambda=2.5,alpha=0.5,floor=3000").unwrap();
    assert_eq!((p.lambda, p.alpha, p.floor), (2.5, 0.5, 3000));
    assert_eq!(DrwaParams::parse(&p.spec()).unwrap(), p);
    assert!(matches!(DrwaParams::parse("drwa:lambda=0"), Err(SpecError::BadValue { .. })));
    assert!(matches!(DrwaParams::parse("drwa:alpha=1"), Err(SpecError::BadValue { .. })));
    assert!(matches!(DrwaParams::parse("drwa:beta=1"), Err(SpecError::UnknownParam { .. })));
    assert!(matches!(DrwaParams::parse("copa"), Err(SpecError::UnknownName { .. })));
}

/// One step of a random measurement sequence: time advance (ms), bytes received, RTT (ms).
fn steps() -> impl Strategy<Value = Vec<(u64, u64, u64)>> {
    proptest::collection::vec((1u64..300, 0u64..2_000_000, 1u64..2_000), 1..200)
}

proptest! {
    #[test]
    fn the_window_is_always_within_its_bounds(
        steps in steps(), floor in 1u64..100_000, extra in 0u64..10_000_000, lambda in 0.5f64..10.0, alpha in 0.0f64..0.99,
    ) {
        let ceiling = floor + extra;
        let mut d = Drwa::new(DrwaParams { lambda, alpha, floor, ceiling });
        let (mut t, mut bytes) = (0, 0);
        for (dt, b, rtt) in steps {
            t += dt;
            bytes += b;
            if let Some(w) = d.on_sample(at(t, bytes, rtt)) {
                prop_assert!(w >= floor && w <= ceiling, "{w} outside [{floor}, {ceiling}]");
                prop_assert_eq!(d.window(), Some(w));
            }
        }
    }

    #[test]
    fn updates_come_exactly_when_a_round_of_rtt_est_ends_with_data_and_the_estimate_stays_within_the_rounds(
        steps in steps(),
    ) {
        let mut d = Drwa::new(DrwaParams { ceiling: u64::MAX, floor: 1, ..DrwaParams::default() });
        let (mut t, mut bytes) = (0u64, 0u64);
        let mut round_start = None::<(u64, u64)>;
        let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
        for (dt, b, rtt) in steps {
            t += dt;
            bytes += b;
            let updated = d.on_sample(at(t, bytes, rtt));
            let Some((start, start_bytes)) = round_start else {
                round_start = Some((t, bytes));
                continue;
            };
            if t - start >= rtt {
                round_start = Some((t, bytes));
                let per_rtt = (bytes - start_bytes) as f64 * rtt as f64 / (t - start) as f64;
                if bytes > start_bytes {
                    lo = lo.min(per_rtt);
                    hi = hi.max(per_rtt);
                    prop_assert!(updated.is_some());
                } else {
                    prop_assert!(updated.is_none());
                }
            } else {
                prop_assert!(updated.is_none());
            }
            if updated.is_some() {
                let est = d.cwnd_estimate().unwrap();
                prop_assert!(est >= lo * (1.0 - 1e-9) && est <= hi * (1.0 + 1e-9), "{est} not in [{lo}, {hi}]");
            }
        }
    }

    #[test]
    fn a_steady_sender_at_the_target_rtt_gets_its_own_window_back(
        per_rtt in 10_000u64..5_000_000, rtt_min in 5u64..500, rounds in 1usize..50,
    ) {
        let mut d = Drwa::new(DrwaParams { floor: 1, ..DrwaParams::default() });
        let rtt = 3 * rtt_min;
        d.on_sample(at(0, 0, rtt_min));
        let mut bytes = 0;
        for k in 1..=rounds as u64 {
            bytes += per_rtt;
            let w = d.on_sample(at(k * rtt, bytes, rtt));
            prop_assert_eq!(w, Some(per_rtt));
        }
    }
}
