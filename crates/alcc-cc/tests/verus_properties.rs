//! Property tests of Verus on random event sequences: whatever the network does (random
//! RTTs, reordering, losses declared or silent, jumps in time), Verus never panics, its
//! window never falls below what is in flight, its target window stays at least one
//! packet, and its timer never asks to go back in time.

use std::collections::BTreeMap;
use std::time::Duration;

use alcc_cc::{build, AckSample, Config, Controller, LossEvent, SentPacket, Time};
use proptest::prelude::*;

const MSS: u64 = 1448;

#[derive(Clone, Debug)]
enum Step {
    /// Time passes (ms), firing due timers.
    Wait(u32),
    /// A jump in time (s), firing the timer once.
    Jump(u16),
    /// Send what the window allows.
    Send,
    /// Acknowledge the outstanding packet at this index (modulo), with this extra RTT (ms).
    Ack(usize, u32),
    /// The transport declares the packet at this index lost.
    Lose(usize),
    /// The packet at this index silently vanishes (never acknowledged nor declared lost).
    Drop(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u32..60).prop_map(Step::Wait),
        1 => (1u16..30).prop_map(Step::Jump),
        4 => Just(Step::Send),
        6 => (any::<usize>(), 0u32..800).prop_map(|(i, r)| Step::Ack(i, r)),
        1 => any::<usize>().prop_map(Step::Lose),
        1 => any::<usize>().prop_map(Step::Drop),
    ]
}

struct Driver {
    cc: Box<dyn Controller>,
    now: Time,
    seq: u64,
    /// seq -> (memo, sent at, counted in flight by the transport)
    flight: BTreeMap<u64, (u64, Time)>,
    vanished: u64,
}

impl Driver {
    fn bif(&self) -> u64 {
        (self.flight.len() as u64 + self.vanished) * MSS
    }

    fn check(&self) {
        let d = self.cc.decision();
        assert!(d.window >= self.bif(), "window {} below in flight {}", d.window, self.bif());
        assert_eq!(d.pacing_rate, None);
        let m = self.cc.metrics();
        let w = m.extra.iter().find(|(k, _)| *k == "w").map(|(_, v)| *v).expect("w in metrics");
        assert!(w >= 1.0 && w.is_finite(), "W = {w}");
        for (k, v) in &m.extra {
            assert!(v.is_finite(), "{k} = {v}");
        }
    }

    fn fire_timers(&mut self, until: Time) {
        let mut guard = 0;
        while let Some(t) = self.cc.next_timer() {
            if t > until || guard > 100_000 {
                break;
            }
            let t = t.max(self.now);
            self.now = t;
            self.cc.on_timer(t);
            let next = self.cc.next_timer();
            assert!(next.is_none_or(|n| n > t), "timer did not advance: {next:?} after {t}");
            guard += 1;
        }
        self.now = self.now.max(until);
    }

    fn apply(&mut self, s: &Step) {
        match *s {
            Step::Wait(ms) => {
                let until = self.now + Duration::from_millis(ms.into());
                self.fire_timers(until);
            }
            Step::Jump(secs) => {
                self.now += Duration::from_secs(secs.into());
                self.cc.on_timer(self.now);
                let next = self.cc.next_timer();
                assert!(next.is_none_or(|n| n > self.now), "timer did not advance: {next:?}");
            }
            Step::Send => {
                let mut n = 0;
                while self.bif() + MSS <= self.cc.decision().window && n < 5000 {
                    self.seq += 1;
                    let p = SentPacket { seq: self.seq, bytes: MSS, bytes_in_flight: self.bif() + MSS };
                    let memo = self.cc.on_sent(self.now, &p);
                    self.flight.insert(self.seq, (memo, self.now));
                    n += 1;
                }
            }
            Step::Ack(i, extra) => {
                if let Some(&seq) = self.flight.keys().nth(i % self.flight.len().max(1)) {
                    let (memo, sent_at) = self.flight.remove(&seq).unwrap_or_default();
                    let rtt = (self.now - sent_at) + Duration::from_millis(extra.into());
                    self.now += Duration::from_millis(extra.into());
                    let ack = AckSample {
                        seq,
                        bytes: MSS,
                        sent_at,
                        rtt,
                        bytes_in_flight: self.bif(),
                        delivered: seq * MSS,
                        memo,
                    };
                    self.cc.on_ack(self.now, &ack);
                }
            }
            Step::Lose(i) => {
                if let Some(&seq) = self.flight.keys().nth(i % self.flight.len().max(1)) {
                    let (memo, sent_at) = self.flight.remove(&seq).unwrap_or_default();
                    let loss = LossEvent { seq, bytes: MSS, sent_at, bytes_in_flight: self.bif(), memo };
                    self.cc.on_loss(self.now, &loss);
                }
            }
            Step::Drop(i) => {
                if let Some(&seq) = self.flight.keys().nth(i % self.flight.len().max(1)) {
                    self.flight.remove(&seq);
                    self.vanished += 1; // the transport still counts it in flight
                }
            }
        }
        self.check();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn verus_survives_random_events(
        r in prop_oneof![Just(2.0), Just(4.0), Just(6.0), 1.0f64..20.0],
        steps in prop::collection::vec(step(), 1..400),
    ) {
        let cc = build(&format!("verus:r={r}"), &Config { mss: MSS, seed: 1 }).unwrap();
        let mut d = Driver { cc, now: Time::ZERO, seq: 0, flight: BTreeMap::new(), vanished: 0 };
        d.check();
        for s in &steps {
            d.apply(s);
        }
    }
}

/// A long run on a crafted path (RTT = 40 ms + 1 ms per packet in flight above 40) with
/// 1 % of packets vanishing: Verus keeps running, leaves slow start and refits its profile.
#[test]
fn verus_runs_a_minute_on_a_queueing_path() {
    let cc = build("verus:r=2", &Config { mss: MSS, seed: 1 }).unwrap();
    let mut d = Driver { cc, now: Time::ZERO, seq: 0, flight: BTreeMap::new(), vanished: 0 };
    let mut rng = 12345u64;
    let end = Time::from_millis(60_000);
    while d.now < end {
        d.apply(&Step::Send);
        // Everything sent at least one RTT ago is acknowledged now, in order.
        let in_flight = d.flight.len() as u64;
        let rtt = Duration::from_millis(40 + in_flight.saturating_sub(40));
        let due: Vec<u64> =
            d.flight.iter().filter(|(_, (_, t))| d.now - *t >= rtt).map(|(s, _)| *s).collect();
        for seq in due {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let (memo, sent_at) = d.flight.remove(&seq).unwrap_or_default();
            if (rng >> 33) % 100 == 0 {
                continue; // vanished: Verus must find it missing and expire it
            }
            let ack = AckSample {
                seq,
                bytes: MSS,
                sent_at,
                rtt: d.now - sent_at,
                bytes_in_flight: d.bif(),
                delivered: 0,
                memo,
            };
            d.cc.on_ack(d.now, &ack);
        }
        d.check();
        let until = d.now + Duration::from_millis(1);
        d.fire_timers(until);
    }
    let m = d.cc.metrics();
    assert_ne!(m.state, "slow_start");
    assert!(d.seq > 1000, "sent only {} packets", d.seq);
}
