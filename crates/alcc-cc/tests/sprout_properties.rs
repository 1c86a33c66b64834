//! Property tests of Sprout's receiver model and sender on random event sequences.

use std::time::Duration;

use alcc_cc::sprout::{RateBelief, ReportClock, SproutParams, SproutReceiver, SproutSender};
use alcc_cc::{
    AckSample, Arrival, Config, Controller, Forecast, LossEvent, ReceiverModel, ReceiverReport, SenderHint,
    SentPacket, Time,
};
use proptest::prelude::*;

const MSS: u64 = 1500;

fn assert_normalised(b: &RateBelief) -> Result<(), TestCaseError> {
    let p = b.probabilities();
    prop_assert!(p.iter().all(|x| x.is_finite() && *x >= 0.0), "NaN or negative probability");
    let total: f64 = p.iter().sum();
    prop_assert!((total - 1.0).abs() <= 1e-9, "sum {}", total);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Any sequence of ticks with any counts keeps the belief a probability distribution.
    #[test]
    fn belief_stays_normalised(counts in prop::collection::vec(prop_oneof![0u32..30, 0u32..3, 100u32..100_000], 1..200)) {
        let mut b = RateBelief::uniform();
        for k in counts {
            b.evolve();
            assert_normalised(&b)?;
            b.observe(k);
            assert_normalised(&b)?;
        }
    }

    /// Random arrivals (sizes, sequence gaps, reordering, idleness hints, silences) and timers.
    #[test]
    fn receiver_stays_consistent(
        events in prop::collection::vec(
            (0u64..60_000, 1u64..3_000, 0u64..4, any::<bool>(), prop::option::of(0u64..200), any::<bool>()),
            1..400,
        ),
        tick_timer in any::<bool>(),
    ) {
        let report_clock = if tick_timer { ReportClock::Tick } else { ReportClock::Arrival };
        let params = SproutParams { report_clock, ..SproutParams::default() };
        let mut r = SproutReceiver::new(params, &Config { mss: MSS, seed: 0 });
        let mut now = Time::ZERO;
        let mut seq = 0u64;
        let mut last_rol = 0;
        for (gap_us, bytes, seq_step, reorder, idle_ms, timer) in events {
            now += Duration::from_micros(gap_us);
            if timer {
                if let Some(t) = r.next_timer() {
                    now = now.max(t);
                }
                r.on_timer(now);
            } else {
                seq += seq_step;
                let s = if reorder { seq.saturating_sub(2) } else { seq };
                let hint = SenderHint { time_to_next: idle_ms.map(Duration::from_millis) };
                r.on_arrival(now, &Arrival { seq: s, bytes, hint });
            }
            if let Some(t) = r.next_timer() {
                prop_assert!(t > now, "timer {} not after now {}", t, now);
            }
            assert_normalised(r.belief())?;
            let c = r.counts();
            prop_assert!(c.windows(2).all(|w| w[0] <= w[1]), "counts decrease: {:?}", c);
            if let Some(ReceiverReport::Forecast(f)) = r.take_report(now) {
                prop_assert!(f.counts.windows(2).all(|w| w[0] <= w[1]));
                prop_assert!(f.received_or_lost_bytes >= last_rol);
                prop_assert!(f.receiver_time <= now);
                last_rol = f.received_or_lost_bytes;
            }
        }
    }

    /// Random sends, ACKs, losses, forecasts and timers: the window never falls below what is
    /// in flight (the allowance is never negative) and nothing panics or overflows.
    #[test]
    fn sender_window_never_negative(
        events in prop::collection::vec(
            (0u8..5, 0u64..30_000, prop::collection::vec(0u32..40, 8), 0u64..200),
            1..400,
        )
    ) {
        let mut s = SproutSender::new(SproutParams::default(), &Config { mss: MSS, seed: 0 });
        let mut now = Time::ZERO;
        let mut in_flight = 0u64;
        let mut seq = 0;
        let mut sent = 0u64;
        let mut receiver_clock = Time::ZERO;
        for (kind, gap_us, increments, fraction) in events {
            now += Duration::from_micros(gap_us);
            match kind {
                0 => {
                    let _hint = s.sender_hint(now);
                    in_flight += MSS;
                    sent += MSS;
                    s.on_sent(now, &SentPacket { seq, bytes: MSS, bytes_in_flight: in_flight });
                    seq += 1;
                }
                1 if in_flight > 0 => {
                    in_flight -= MSS;
                    let ack = AckSample {
                        seq: 0,
                        bytes: MSS,
                        sent_at: Time::ZERO,
                        rtt: Duration::from_millis(40),
                        bytes_in_flight: in_flight,
                        delivered: 0,
                        memo: 0,
                    };
                    s.on_ack(now, &ack);
                }
                2 if in_flight > 0 => {
                    in_flight -= MSS;
                    let loss =
                        LossEvent { seq: 0, bytes: MSS, sent_at: Time::ZERO, bytes_in_flight: in_flight, memo: 0 };
                    s.on_loss(now, &loss);
                }
                3 => {
                    let mut total = 0u32;
                    let counts: Vec<u32> = increments.iter().map(|i| { total += i; total }).collect();
                    receiver_clock += Duration::from_micros(gap_us);
                    let f = Forecast {
                        received_or_lost_bytes: sent * fraction.min(100) / 100,
                        receiver_time: receiver_clock,
                        tick: Duration::from_millis(20),
                        counts,
                        packet_bytes: MSS as u32,
                    };
                    s.on_report(now, &ReceiverReport::Forecast(f));
                }
                _ => {
                    if let Some(t) = s.next_timer() {
                        now = now.max(t);
                    }
                    s.on_timer(now);
                }
            }
            let d = s.decision();
            prop_assert!(d.window >= in_flight, "window {} below in flight {}", d.window, in_flight);
            if let Some(t) = s.next_timer() {
                prop_assert!(t > now, "timer {} not after now {}", t, now);
            }
            let m = s.metrics();
            prop_assert_eq!(m.window, d.window);
        }
    }
}

proptest! {
    // Each case is a 5 s flow: about 0.05 s in release, 1 s unoptimised.
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Whole flows in the simulator over random links (rate, delay, queue, random loss, packet
    /// size, an on/off trace): nothing panics, something is delivered (heartbeats and forecasts
    /// recover from every outage and loss pattern), and packets go out in order and in time.
    #[test]
    fn simulated_flows_over_random_links(
        mbps in 0.2f64..40.0,
        delay_ms in 1u64..150,
        queue in 5u64..2_000,
        loss in prop_oneof![Just(0.0), 0.0f64..0.2],
        packet_bytes in prop_oneof![Just(1500u64), 200u64..9_000],
        on_off in any::<bool>(),
        seed in any::<u64>(),
    ) {
        use alcc_cc::sim::{Capacity, Outcome, QueueLimit, Scenario};
        let capacity = if on_off {
            // 300 ms at one packet per ms, then a 700 ms outage, repeated.
            Capacity::Trace((1..=300).chain(std::iter::once(1_000)).collect())
        } else {
            Capacity::ConstantMbps(mbps)
        };
        let mut s = Scenario::new(capacity);
        s.one_way_delay = Duration::from_millis(delay_ms);
        s.queue = QueueLimit::Packets(queue);
        s.loss = loss;
        s.packet_bytes = packet_bytes;
        s.duration = Duration::from_secs(5);
        s.seed = seed;
        let result = s.run("sprout").map_err(|e| TestCaseError::fail(e.to_string()))?;
        let delivered = result.packets.iter().filter(|p| matches!(p.outcome, Outcome::Delivered { .. })).count();
        prop_assert!(delivered > 0, "nothing delivered in 5 s");
        // Sent in order, in non-decreasing time.
        prop_assert!(result.packets.windows(2).all(|w| w[0].sent <= w[1].sent && w[0].seq < w[1].seq));
        prop_assert!(result.windows.windows(2).all(|w| w[0].0 <= w[1].0));
    }
}
