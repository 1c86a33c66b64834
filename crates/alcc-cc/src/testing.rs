//! Property-test support shared by every controller's tests: random event sequences and a
//! small transport model that feeds them to a [`Controller`] and checks its invariants.

use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::controller::Controller;
use crate::event::{AckSample, LossEvent, SentPacket};
use crate::time::Time;

/// One thing that happens to a flow.
#[derive(Clone, Debug)]
pub enum Op {
    /// The transport sends a packet of this many bytes (whatever the window says).
    Send(u64),
    /// The outstanding packet at this index (modulo their number) is acknowledged.
    Ack(usize),
    /// The outstanding packet at this index (modulo their number) is declared lost.
    Lose(usize),
    /// Time passes, in microseconds.
    Wait(u64),
    /// The transport serves the controller's timer if it has passed.
    Timer,
}

/// Random event sequences: mostly sends, ACKs and short waits, some losses, long waits
/// (beyond reset timeouts) and timers.
pub fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        6 => (1u64..=4_500).prop_map(Op::Send),
        6 => any::<usize>().prop_map(Op::Ack),
        2 => any::<usize>().prop_map(Op::Lose),
        5 => (0u64..60_000).prop_map(Op::Wait),
        1 => (0u64..3_000_000).prop_map(Op::Wait),
        1 => Just(Op::Timer),
    ];
    proptest::collection::vec(op, 1..400)
}

struct Outstanding {
    seq: u64,
    bytes: u64,
    sent_at: Time,
    memo: u64,
}

/// Feeds `ops` to `controller` and checks, after every event, that the window is at least
/// `floor` bytes, that a pacing rate, if any, is positive, that metrics agree with the
/// decision, and that a served timer moves forward. Time never goes backwards by construction.
pub fn drive(controller: &mut dyn Controller, ops: &[Op], floor: u64) -> Result<(), TestCaseError> {
    let mut now = Time::from_millis(1);
    let mut next_seq = 0u64;
    let mut in_flight = 0u64;
    let mut delivered = 0u64;
    let mut outstanding: Vec<Outstanding> = Vec::new();
    for op in ops {
        match *op {
            Op::Send(bytes) => {
                in_flight += bytes;
                let packet = SentPacket { seq: next_seq, bytes, bytes_in_flight: in_flight };
                let memo = controller.on_sent(now, &packet);
                outstanding.push(Outstanding { seq: next_seq, bytes, sent_at: now, memo });
                next_seq += 1;
            }
            Op::Ack(i) if !outstanding.is_empty() => {
                let p = outstanding.remove(i % outstanding.len());
                in_flight -= p.bytes;
                delivered += p.bytes;
                let ack = AckSample {
                    seq: p.seq,
                    bytes: p.bytes,
                    sent_at: p.sent_at,
                    rtt: now - p.sent_at,
                    bytes_in_flight: in_flight,
                    delivered,
                    memo: p.memo,
                };
                controller.on_ack(now, &ack);
            }
            Op::Lose(i) if !outstanding.is_empty() => {
                let p = outstanding.remove(i % outstanding.len());
                in_flight -= p.bytes;
                let loss = LossEvent {
                    seq: p.seq,
                    bytes: p.bytes,
                    sent_at: p.sent_at,
                    bytes_in_flight: in_flight,
                    memo: p.memo,
                };
                controller.on_loss(now, &loss);
            }
            Op::Ack(_) | Op::Lose(_) => {}
            Op::Wait(us) => now += Duration::from_micros(us),
            Op::Timer => {
                if let Some(deadline) = controller.next_timer() {
                    if deadline <= now {
                        controller.on_timer(now);
                        // A served timer must not ask to be served again at once (a busy loop).
                        if let Some(again) = controller.next_timer() {
                            prop_assert!(again > now, "timer {again} not after {now} once served");
                        }
                    }
                }
            }
        }
        let d = controller.decision();
        prop_assert!(d.window >= floor, "window {} below floor {} after {:?}", d.window, floor, op);
        if let Some(rate) = d.pacing_rate {
            prop_assert!(rate > 0, "zero pacing rate after {:?}", op);
        }
        let m = controller.metrics();
        prop_assert_eq!(m.window, d.window);
    }
    Ok(())
}
