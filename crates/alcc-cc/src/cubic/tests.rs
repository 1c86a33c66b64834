//! Exact tests of CUBIC's rules (RFC 9438) and property tests.

use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::testing::{drive, ops};

const MSS: u64 = 1000;
const RTT: Duration = Duration::from_millis(100);

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance * b.abs().max(1.0)
}

/// A CUBIC flow in congestion avoidance at `cwnd` segments, `seq` packets sent so far.
struct Flow {
    cubic: Cubic,
    seq: u64,
}

impl Flow {
    fn in_congestion_avoidance(params: CubicParams, cwnd: f64) -> Flow {
        let mut cubic = Cubic::new(params, &Config { mss: MSS, seed: 0 });
        cubic.cwnd = cwnd;
        cubic.ssthresh = cwnd;
        cubic.w_max = cwnd;
        cubic.rtt.on_sample(Time::ZERO, RTT);
        Flow { cubic, seq: 0 }
    }

    fn send(&mut self) -> u64 {
        let seq = self.seq;
        self.cubic.on_sent(Time::ZERO, &SentPacket { seq, bytes: MSS, bytes_in_flight: 0 });
        self.seq += 1;
        seq
    }

    /// Sends a packet and immediately loses it: a new congestion event.
    fn congestion_event(&mut self, now: Time) {
        let seq = self.send();
        let loss = LossEvent { seq, bytes: MSS, sent_at: now, bytes_in_flight: 0, memo: 0 };
        self.cubic.on_loss(now, &loss);
    }

    /// Sends a packet and acknowledges it at `now` (which ends any recovery episode).
    fn ack(&mut self, now: Time) {
        let seq = self.send();
        let ack =
            AckSample { seq, bytes: MSS, sent_at: now, rtt: RTT, bytes_in_flight: 0, delivered: 0, memo: 0 };
        self.cubic.on_ack(now, &ack);
    }
}

#[test]
fn cubic_function_and_k() {
    let p = CubicParams::default();
    // K = cbrt(W_max (1 - beta) / C) = cbrt(100 x 0.3 / 0.4) = cbrt(75).
    let k = p.k(100.0, 70.0);
    assert!(close(k, 75f64.cbrt(), 1e-12));
    assert!(close(k, 4.217_163_3, 1e-7));
    assert!(close(p.w_cubic(0.0, k, 100.0), 70.0, 1e-12));
    assert!(close(p.w_cubic(k, k, 100.0), 100.0, 1e-12));
    assert!(close(p.w_cubic(k + 2.0, k, 100.0), 103.2, 1e-12));
    assert_eq!(p.k(100.0, 120.0), 0.0);
    assert!(close(p.alpha(), 0.9 / 1.7, 1e-12));
}

#[test]
fn loss_sets_w_max_ssthresh_and_k() {
    let mut f = Flow::in_congestion_avoidance(CubicParams::default(), 100.0);
    f.congestion_event(Time::from_millis(1_000));
    assert!(close(f.cubic.cwnd(), 70.0, 1e-12));
    assert_eq!(f.cubic.w_max(), 100.0);
    assert!(f.cubic.in_recovery());
    f.ack(Time::from_millis(1_100));
    assert!(!f.cubic.in_recovery());
    assert!(close(f.cubic.k().unwrap(), 75f64.cbrt(), 1e-12));
}

#[test]
fn window_follows_the_cubic_curve_after_a_loss() {
    let mut f = Flow::in_congestion_avoidance(CubicParams::default(), 100.0);
    let start = Time::from_millis(1_000);
    f.congestion_event(start);
    // ACK clocking: one segment acknowledged every RTT / cwnd.
    let mut now = start;
    let k = 75f64.cbrt();
    let mut checked = 0;
    for check_at in [1.0, k, k + 1.5] {
        while (now - start).as_secs_f64() < check_at {
            now += Duration::from_secs_f64(RTT.as_secs_f64() / f.cubic.cwnd());
            f.ack(now);
        }
        let t = (now - start).as_secs_f64();
        // cwnd aims at W_cubic(t + RTT) one RTT ahead and reaches it about one RTT later, so it
        // lies between the curve at t - RTT and at t + RTT.
        let p = CubicParams::default();
        let lo = p.w_cubic(t - 0.1, k, 100.0).min(p.w_cubic(t + 0.1, k, 100.0));
        let hi = p.w_cubic(t + 0.1, k, 100.0);
        assert!(
            f.cubic.cwnd() >= lo - 0.5 && f.cubic.cwnd() <= hi + 0.5,
            "t {t}: {} not in [{lo}, {hi}]",
            f.cubic.cwnd()
        );
        checked += 1;
    }
    assert_eq!(checked, 3);
    // At K the plateau W_max is reached: within half a segment.
    assert!(f.cubic.cwnd() > 100.0);
}

#[test]
fn one_ack_moves_the_window_by_target_minus_cwnd_over_cwnd() {
    let mut f = Flow::in_congestion_avoidance(CubicParams::default(), 100.0);
    f.congestion_event(Time::from_millis(1_000));
    f.ack(Time::from_millis(1_000)); // starts the stage at t = 0
    let k = 75f64.cbrt();
    let p = CubicParams::default();
    let before = f.cubic.cwnd();
    f.ack(Time::from_millis(2_000)); // t = 1 s: cubic (concave) region
    let target = p.w_cubic(1.1, k, 100.0).clamp(before, 1.5 * before);
    assert!(close(f.cubic.cwnd(), before + (target - before) / before, 1e-12));
}

#[test]
fn reno_friendly_region_uses_w_est() {
    let mut f = Flow::in_congestion_avoidance(CubicParams::default(), 100.0);
    f.congestion_event(Time::from_millis(1_000));
    // First ACK of the stage, at t = 0: W_cubic(0) = 70 < W_est = 70 + alpha / 70.
    f.ack(Time::from_millis(1_000));
    let alpha = CubicParams::default().alpha();
    let expected = 70.0 + alpha / 70.0;
    assert!(close(f.cubic.w_est().unwrap(), expected, 1e-12));
    assert!(close(f.cubic.cwnd(), expected, 1e-12));
    // A nearly flat cubic curve (tiny C): the window grows like Reno's estimate, alpha per
    // window, and switches to alpha = 1 once W_est reaches the window before the reduction.
    let flat = CubicParams { c: 0.001, ..CubicParams::default() };
    let mut f = Flow::in_congestion_avoidance(flat, 20.0);
    f.congestion_event(Time::from_millis(1_000));
    assert!(close(f.cubic.cwnd(), 14.0, 1e-12));
    let mut now = Time::from_millis(1_000);
    for _ in 0..14 {
        now += Duration::from_millis(1);
        f.ack(now);
    }
    // 14 ACKs of one segment at about 14 segments: W_est grew by about alpha.
    let w = f.cubic.cwnd();
    assert!(close(w, f.cubic.w_est().unwrap(), 1e-12));
    assert!(w > 14.0 + 0.95 * alpha && w < 14.0 + alpha, "{w}");
    while f.cubic.w_est().unwrap() < 20.0 {
        now += Duration::from_millis(1);
        f.ack(now);
    }
    let before = f.cubic.cwnd();
    now += Duration::from_millis(1);
    f.ack(now);
    assert!(close(f.cubic.cwnd(), before + 1.0 / before, 1e-12), "alpha is 1 above cwnd_prior");
}

#[test]
fn fast_convergence_lowers_w_max_when_the_plateau_drops() {
    let mut f = Flow::in_congestion_avoidance(CubicParams::default(), 100.0);
    f.congestion_event(Time::from_millis(1_000));
    f.ack(Time::from_millis(1_100));
    // A second event before regaining W_max: cwnd about 70 < W_max 100.
    let cwnd = f.cubic.cwnd();
    assert!(cwnd > 70.0 && cwnd < 70.1);
    f.congestion_event(Time::from_millis(1_200));
    assert!(close(f.cubic.w_max(), cwnd * (1.0 + 0.7) / 2.0, 1e-12));
    assert!(close(f.cubic.cwnd(), cwnd * 0.7, 1e-12));
    let off = CubicParams { fast_convergence: false, ..CubicParams::default() };
    let mut f = Flow::in_congestion_avoidance(off, 100.0);
    f.congestion_event(Time::from_millis(1_000));
    f.ack(Time::from_millis(1_100));
    let cwnd = f.cubic.cwnd();
    f.congestion_event(Time::from_millis(1_200));
    assert!(close(f.cubic.w_max(), cwnd, 1e-12));
}

#[test]
fn slow_start_and_floor() {
    let mut c = Cubic::new(CubicParams::default(), &Config { mss: MSS, seed: 0 });
    assert_eq!(c.decision().window, 4 * MSS); // RFC 5681 initial window for a 1000-byte SMSS
    c.on_sent(Time::ZERO, &SentPacket { seq: 0, bytes: MSS, bytes_in_flight: MSS });
    let ack = AckSample {
        seq: 0,
        bytes: 5 * MSS,
        sent_at: Time::ZERO,
        rtt: RTT,
        bytes_in_flight: 0,
        delivered: 0,
        memo: 0,
    };
    c.on_ack(Time::from_millis(100), &ack);
    assert_eq!(c.decision().window, 6 * MSS);
    // Repeated events cannot push the window below 2 segments.
    let mut f = Flow::in_congestion_avoidance(CubicParams::default(), 2.0);
    for i in 0..5 {
        f.congestion_event(Time::from_millis(i * 100));
        f.ack(Time::from_millis(i * 100 + 50));
    }
    assert!(f.cubic.cwnd() >= 2.0);
    assert!(f.cubic.decision().window >= 2 * MSS);
}

#[test]
fn hystart_ends_slow_start_on_an_rtt_rise() {
    let params = CubicParams { hystart: true, ..CubicParams::default() };
    let mut c = Cubic::new(params, &Config { mss: MSS, seed: 0 });
    let mut seq = 0;
    let mut now = Time::ZERO;
    // Rounds of 10 packets; the RTT jumps from 40 to 60 ms in the third round.
    for rtt_ms in [40, 40, 60, 60, 60, 60, 60, 60, 60] {
        let first = seq;
        for _ in 0..10 {
            c.on_sent(now, &SentPacket { seq, bytes: MSS, bytes_in_flight: 0 });
            seq += 1;
        }
        now += Duration::from_millis(rtt_ms);
        for s in first..seq {
            let rtt = Duration::from_millis(rtt_ms);
            let ack = AckSample {
                seq: s,
                bytes: MSS,
                sent_at: now,
                rtt,
                bytes_in_flight: 0,
                delivered: 0,
                memo: 0,
            };
            c.on_ack(now, &ack);
        }
    }
    // 4 initial + 20 in two rounds + 7 in round 3 before its 8th sample enters CSS, then a
    // quarter per ACK: 3 in round 3 and 40 in rounds 4 to 7; the first ACK of round 8 (the
    // fifth CSS round) ends slow start.
    assert!(close(c.ssthresh, 4.0 + 20.0 + 7.0 + 43.0 / 4.0, 1e-12), "{}", c.ssthresh);
    assert_eq!(c.metrics().state, "congestion_avoidance");
}

#[test]
fn parses_parameters() {
    let mut p = Params::parse("cubic:beta=0.8,fast_convergence=off").unwrap();
    let c = Cubic::from_params(&mut p, &Config::default()).unwrap();
    p.finish().unwrap();
    assert_eq!(c.params, CubicParams { c: DEFAULT_C, beta: 0.8, fast_convergence: false, hystart: false });
    let mut p = Params::parse("cubic:hystart=on").unwrap();
    assert!(Cubic::from_params(&mut p, &Config::default()).unwrap().params.hystart);
    let mut p = Params::parse("cubic:beta=1.5").unwrap();
    assert!(Cubic::from_params(&mut p, &Config::default()).is_err());
}

proptest! {
    #[test]
    fn random_events_keep_the_invariants(ops in ops(), fast_convergence in any::<bool>(), hystart in any::<bool>()) {
        let params = CubicParams { fast_convergence, hystart, ..CubicParams::default() };
        let mut c = Cubic::new(params, &Config { mss: 1448, seed: 0 });
        drive(&mut c, &ops, 2 * 1448)?;
        prop_assert!(c.cwnd().is_finite() && c.cwnd() >= MIN_WINDOW_SEGMENTS);
    }
}
