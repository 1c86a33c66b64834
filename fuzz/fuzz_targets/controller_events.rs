//! Any registered controller driven by an arbitrary event sequence through a small transport
//! model (in the manner of s2n-quic's congestion-controller fuzzing): packets are sent,
//! acknowledged and lost in any order, time jumps by up to minutes, timers are served, Sprout
//! gets arbitrary forecasts. After every event the decision must stay sane: a window no smaller
//! than the algorithm's floor (two packets for Reno, CUBIC, Copa and MDI, as their property
//! tests require; one for `fixed`; none for Verus and Sprout, whose windows may close), a
//! closed window with nothing in flight only while a timer is pending (else the flow stalls
//! for good), a positive pacing rate if any, metrics that agree with the decision, and a
//! served timer that does not ask to be served again at once.
#![no_main]

use std::time::Duration;

use alcc_cc::{registry, AckSample, Config, Forecast, LossEvent, ReceiverReport, SentPacket, Time};
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

/// One thing that happens to the flow.
#[derive(Arbitrary, Debug)]
enum Op {
    /// A packet of 1 + n % 65535 bytes is sent (whatever the window says).
    Send(u16),
    /// The outstanding packet at this index (modulo their number) is acknowledged.
    Ack(u16),
    /// The outstanding packet at this index (modulo their number) is declared lost.
    Lose(u16),
    /// Time passes, microseconds.
    Wait(u32),
    /// The controller's timer is served if it is due.
    Timer,
    /// A receiver report (Sprout's forecast).
    Report { received: u32, tick_ms: u8, counts: Vec<u16> },
}

#[derive(Arbitrary, Debug)]
struct Input {
    controller: u8,
    mss: u16,
    seed: u64,
    ops: Vec<Op>,
}

struct Outstanding {
    seq: u64,
    bytes: u64,
    sent_at: Time,
    memo: u64,
}

/// The specs driven (every registered algorithm with its defaults, a few with parameters) and
/// the smallest window each may decide, in packets. Verus's and Sprout's windows are what is in
/// flight plus an allowance that may be zero (Verus between epochs, Sprout when its forecast
/// allows nothing): theirs may close, and liveness is checked instead.
const SPECS: &[(&str, u64)] = &[
    ("fixed", 1),
    ("fixed:window=10,rate=5", 10),
    ("copa", 2),
    ("copa:delta=0.1,mode=default", 2),
    ("reno", 2),
    ("cubic", 2),
    ("cubic:c=2,beta=0.5,fast_convergence=off", 2),
    ("sprout", 0),
    ("sprout-ack", 0),
    ("verus", 0),
    ("verus:r=2", 0),
    ("mdi", 2),
];

fuzz_target!(|input: Input| {
    let (spec, floor_packets) = SPECS[usize::from(input.controller) % SPECS.len()];
    let mss = u64::from(input.mss % 9000).max(536);
    let floor = floor_packets * mss;
    let config = Config { mss, seed: input.seed };
    let mut c = registry::build(spec, &config).expect("a listed spec builds");
    let mut now = Time::from_millis(1);
    let (mut next_seq, mut in_flight, mut delivered) = (0u64, 0u64, 0u64);
    let mut outstanding: Vec<Outstanding> = Vec::new();
    for op in input.ops.iter().take(2000) {
        match op {
            Op::Send(n) => {
                let bytes = 1 + u64::from(*n);
                in_flight += bytes;
                let memo = c.on_sent(now, &SentPacket { seq: next_seq, bytes, bytes_in_flight: in_flight });
                outstanding.push(Outstanding { seq: next_seq, bytes, sent_at: now, memo });
                next_seq += 1;
            }
            Op::Ack(i) if !outstanding.is_empty() => {
                let p = outstanding.remove(usize::from(*i) % outstanding.len());
                in_flight -= p.bytes;
                delivered += p.bytes;
                c.on_ack(
                    now,
                    &AckSample {
                        seq: p.seq,
                        bytes: p.bytes,
                        sent_at: p.sent_at,
                        rtt: now.saturating_since(p.sent_at),
                        bytes_in_flight: in_flight,
                        delivered,
                        memo: p.memo,
                    },
                );
            }
            Op::Lose(i) if !outstanding.is_empty() => {
                let p = outstanding.remove(usize::from(*i) % outstanding.len());
                in_flight -= p.bytes;
                c.on_loss(
                    now,
                    &LossEvent {
                        seq: p.seq,
                        bytes: p.bytes,
                        sent_at: p.sent_at,
                        bytes_in_flight: in_flight,
                        memo: p.memo,
                    },
                );
            }
            Op::Ack(_) | Op::Lose(_) => {}
            Op::Wait(us) => now = now.saturating_add(Duration::from_micros(u64::from(*us))),
            Op::Timer => {
                if let Some(deadline) = c.next_timer() {
                    if deadline <= now {
                        c.on_timer(now);
                        if let Some(again) = c.next_timer() {
                            assert!(again > now, "{spec}: timer {again:?} not after {now:?} once served");
                        }
                    }
                }
            }
            Op::Report { received, tick_ms, counts } => {
                let mut total = 0u32;
                // 1 to 64 counts, as the wire format allows (docs/wire-format.md).
                if counts.is_empty() {
                    continue;
                }
                let counts: Vec<u32> = counts
                    .iter()
                    .take(64)
                    .map(|&n| {
                        total = total.saturating_add(u32::from(n));
                        total
                    })
                    .collect();
                let forecast = Forecast {
                    received_or_lost_bytes: u64::from(*received),
                    receiver_time: now,
                    tick: Duration::from_millis(u64::from(*tick_ms).max(1)),
                    counts,
                    packet_bytes: mss as u32,
                };
                c.on_report(now, &ReceiverReport::Forecast(forecast));
            }
        }
        let d = c.decision();
        assert!(d.window >= floor, "{spec}: window {} below {floor} after {op:?}", d.window);
        assert!(d.pacing_rate != Some(0), "{spec}: zero pacing rate after {op:?}");
        assert_eq!(c.metrics().window, d.window, "{spec}: metrics disagree after {op:?}");
        // Liveness: with nothing in flight no ACK will come, so a window that allows nothing
        // must be reopened by a timer. Checked once something was sent: Sprout holding a zero
        // forecast before its first packet waits for the next forecast (its heartbeat counts
        // from the last packet sent), which the receiver sends every tick.
        if next_seq > 0 && outstanding.is_empty() && d.window == 0 {
            assert!(
                c.next_timer().is_some(),
                "{spec}: window closed, nothing in flight, no timer after {op:?}"
            );
        }
        let _ = c.sender_hint(now);
    }
});
