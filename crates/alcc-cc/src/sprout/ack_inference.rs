//! The sender's inference of the link's delivery process from its acknowledgements.
//!
//! Sprout's receiver counts the bytes that arrive in each 20 ms tick (Winstein et al., NSDI
//! 2013, section 3.3). A sender that cannot change its receiver sees the same process one
//! return-path delay later: every acknowledged byte was delivered by the bottleneck about one
//! return delay before its acknowledgement came back. So the sender counts the bytes newly
//! acknowledged in each tick of its own clock, and that count is the tick's observation of the
//! link. Bytes acknowledged or given up as lost together are the receiver's "received or
//! lost" of the queue estimate; lost bytes are no delivery, as at the receiver.
//!
//! What the count needs to be right, and what we assume (each is tested in the simulator,
//! where the true delivery process is known):
//! - A constant return delay. The tick grid is then the receiver's shifted by that delay, and
//!   the count of a tick is what the link delivered in the tick one return delay earlier. A
//!   receiver's forecast arriving now is late by the same return delay, so the forecast clock
//!   ([`ForecastClock`](super::ForecastClock)) treats both alike: with the default (the
//!   reference's arrival clock) neither is corrected, with `clock=half_rtt` both are.
//! - Acknowledgements at least every few packets. Delayed ACKs (one ACK per two segments, RFC
//!   1122 section 4.2.3.2; Linux's 40 ms delayed-ACK timer for a lone segment) move a packet's
//!   count by at most one ACK interval, usually within the tick. Stretch ACKs (every 8 or 16
//!   segments) lump counts but keep the total.
//! - The receiver holds back the acknowledgement of at most [`DELAYED_ACK_PACKETS`] delivered
//!   packet (the odd one of a pair waits for the next packet or the timer). For Sprout's queue
//!   estimate ("sent minus received or lost", section 3.5) the sender therefore counts the
//!   oldest unacknowledged packet as received once a minimum RTT has passed since it was sent
//!   ([`DeliveryInference::credited`]): had it been delivered and acknowledged at once, its
//!   ACK would be back by then. Without this credit a sender that sends a packet or two per
//!   tick always carries the held packet in its queue estimate, which on a slow link (ATT's
//!   LTE downlink, about 400 packets/s, in the simulator) is enough to settle into the low
//!   state of Sprout's sender described in [`super::sender`] (1.2 Mbit/s for the first 4.5 s
//!   where every-packet acknowledgements give 6 to 7 Mbit/s). When the packet is in fact
//!   still queued, the estimate is one packet low.
//! - Idleness is known: a receiver is told by the sender's "time to next" hint that silence is
//!   not an outage (section 3.3); the sender knows its own sending. A tick without any
//!   acknowledgement is taken as "the link delivered nothing" only if, at the tick's end, at
//!   least [`EVIDENCE_PACKETS`] packets sent before the tick began minus the minimum RTT are
//!   still unacknowledged: they could have been acknowledged during the whole tick and were
//!   not. Otherwise the tick is [`Unobserved`](TickObservation::Unobserved), as at an idle
//!   receiver. Two packets, because one packet alone may wait for the delayed-ACK timer.
//! - Losses on the return path are repaired by the next cumulative acknowledgement: the count
//!   moves to the tick where that one arrives.
//!
//! What breaks the first assumption is a return path that queues: acknowledgements held in a
//! cellular uplink's gap and released together (ACK compression) turn deliveries spread over
//! several ticks into silence and then one large count. The simulator test
//! `crates/alcc-cc/tests/sprout_ack.rs` measures the error per tick against the true delivery
//! process in each case. Per tick, with a true mean of 14 packets on CampusWalk: 0.00 packets
//! with every packet acknowledged at once, 0.47 with delayed ACKs, 2.7 with stretch ACKs of 8,
//! 2.0 with CampusWalk's own trace carrying the ACKs; on ATT's LTE link (7.1 packets per tick)
//! 5.8 with its uplink (0.8 Mbit/s, in gaps of 20 ms or more 65 % of the time). Even then the
//! sender's window follows receiver-side Sprout's closely (see [`super::ack_sender`]), because
//! a receiver's forecasts wait in the same gaps.

use std::collections::VecDeque;
use std::time::Duration;

use super::bins::TICK;
use super::model::TickObservation;
use crate::event::{AckSample, LossEvent, SentPacket};
use crate::time::Time;

/// Delivered packets whose acknowledgement a delayed-ACK receiver may hold back (RFC 1122
/// section 4.2.3.2: an ACK for at least every second full-sized segment).
pub const DELAYED_ACK_PACKETS: u64 = 1;

/// Unacknowledged packets, old enough to have been acknowledged within a tick, that make a
/// tick without acknowledgements evidence of an outage (see the module documentation): more
/// than a delayed-ACK receiver may hold back.
pub const EVIDENCE_PACKETS: u64 = DELAYED_ACK_PACKETS + 1;

/// A packet the sender has sent and not yet seen acknowledged or lost.
#[derive(Clone, Copy, Debug)]
struct Outstanding {
    seq: u64,
    bytes: u64,
    sent_at: Time,
}

/// One tick as the inference saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InferredTick {
    /// When the tick ended (sender's clock).
    pub end: Time,
    /// Bytes acknowledged during the tick.
    pub bytes: u64,
    /// What the tick tells the model.
    pub observation: TickObservation,
}

/// Counts acknowledged bytes per tick and decides what each tick tells the model.
#[derive(Clone, Debug)]
pub struct DeliveryInference {
    packet_bytes: u64,
    outstanding: VecDeque<Outstanding>,
    bytes_this_tick: u64,
    resolved: u64,
}

impl DeliveryInference {
    /// An inference counting in packets of `packet_bytes`.
    pub fn new(packet_bytes: u64) -> DeliveryInference {
        DeliveryInference {
            packet_bytes: packet_bytes.max(1),
            outstanding: VecDeque::new(),
            bytes_this_tick: 0,
            resolved: 0,
        }
    }

    /// Bytes acknowledged or given up as lost so far: what Sprout's receiver calls "received
    /// or lost".
    pub fn resolved(&self) -> u64 {
        self.resolved
    }

    /// Bytes taken as received or lost at `now`: [`resolved`](Self::resolved), and the oldest
    /// unacknowledged packet once `min_rtt` (the flow's minimum RTT) has passed since it was
    /// sent (its acknowledgement may be held back by a delayed-ACK receiver; see the module
    /// documentation).
    pub fn credited(&self, now: Time, min_rtt: Option<Duration>) -> u64 {
        let held = match (self.outstanding.front(), min_rtt) {
            (Some(oldest), Some(min_rtt)) if oldest.sent_at + min_rtt <= now => oldest.bytes,
            _ => 0,
        };
        self.resolved.saturating_add(held)
    }

    /// A packet was sent.
    pub fn on_sent(&mut self, now: Time, packet: &SentPacket) {
        self.outstanding.push_back(Outstanding { seq: packet.seq, bytes: packet.bytes, sent_at: now });
    }

    /// A packet was acknowledged: it counts as delivered in the current tick.
    pub fn on_ack(&mut self, ack: &AckSample) {
        self.forget(ack.seq);
        self.bytes_this_tick = self.bytes_this_tick.saturating_add(ack.bytes);
        self.resolved = self.resolved.saturating_add(ack.bytes);
    }

    /// A packet was given up as lost: it leaves the queue estimate but is no delivery, as at
    /// Sprout's receiver, where a gap in sequence numbers counts toward "received or lost" and
    /// not toward the tick's arrivals. (A retransmission timeout during an outage gives up
    /// packets that are only waiting in the queue; counting them as delivered would show the
    /// model a burst in the middle of the outage.)
    pub fn on_loss(&mut self, loss: &LossEvent) {
        self.forget(loss.seq);
        self.resolved = self.resolved.saturating_add(loss.bytes);
    }

    fn forget(&mut self, seq: u64) {
        if let Some(i) = self.outstanding.iter().position(|o| o.seq == seq) {
            self.outstanding.remove(i);
        }
    }

    /// Closes the tick that ends at `end` and says what it observed; `min_rtt` is the flow's
    /// minimum RTT.
    pub fn close_tick(&mut self, end: Time, min_rtt: Option<Duration>) -> InferredTick {
        let bytes = std::mem::take(&mut self.bytes_this_tick);
        let observation = match TickObservation::of_bytes(bytes, self.packet_bytes) {
            TickObservation::Delivered(0) if !self.silence_is_evidence(end, min_rtt) => {
                TickObservation::Unobserved
            }
            seen => seen,
        };
        InferredTick { end, bytes, observation }
    }

    /// Whether enough packets, sent early enough to have been acknowledged during the tick
    /// ending at `end`, are still unacknowledged.
    fn silence_is_evidence(&self, end: Time, min_rtt: Option<Duration>) -> bool {
        let Some(min_rtt) = min_rtt else { return false };
        let Some(latest) = end.as_micros().checked_sub((TICK + min_rtt).as_micros() as u64) else {
            return false;
        };
        let latest = Time::from_micros(latest);
        let old: u64 = self.outstanding.iter().take_while(|o| o.sent_at <= latest).map(|o| o.bytes).sum();
        old >= EVIDENCE_PACKETS * self.packet_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1500;
    const RTT: Option<Duration> = Some(Duration::from_millis(40));

    fn sent(seq: u64) -> SentPacket {
        SentPacket { seq, bytes: MSS, bytes_in_flight: MSS }
    }

    fn ack(seq: u64, rtt_ms: u64) -> AckSample {
        AckSample {
            seq,
            bytes: MSS,
            sent_at: Time::ZERO,
            rtt: Duration::from_millis(rtt_ms),
            bytes_in_flight: 0,
            delivered: 0,
            memo: 0,
        }
    }

    #[test]
    fn counts_acknowledged_bytes_per_tick() {
        let mut inf = DeliveryInference::new(MSS);
        for seq in 0..5 {
            inf.on_sent(Time::ZERO, &sent(seq));
        }
        for seq in 0..3 {
            inf.on_ack(&ack(seq, 40));
        }
        let t = inf.close_tick(Time::from_millis(60), RTT);
        assert_eq!(t.bytes, 3 * MSS);
        assert_eq!(t.observation, TickObservation::Delivered(3));
        // A loss leaves the queue estimate but is no delivery.
        inf.on_loss(&LossEvent { seq: 3, bytes: MSS, sent_at: Time::ZERO, bytes_in_flight: 0, memo: 0 });
        assert_eq!(inf.close_tick(Time::from_millis(80), RTT).bytes, 0);
        assert_eq!(inf.resolved(), 4 * MSS);
    }

    #[test]
    fn silence_is_an_outage_only_with_old_packets_outstanding() {
        let mut inf = DeliveryInference::new(MSS);
        inf.on_sent(Time::ZERO, &sent(0));
        inf.on_ack(&ack(0, 40));
        assert_eq!(inf.close_tick(Time::from_millis(80), RTT).observation, TickObservation::Delivered(1));
        // Nothing outstanding: the sender was idle, the tick says nothing.
        assert_eq!(inf.close_tick(Time::from_millis(100), RTT).observation, TickObservation::Unobserved);
        // Two packets sent at 100 ms: not acknowledgeable before 140 ms, so the tick ending at
        // 160 ms (which began at 140) could have seen them only from its start: still
        // unobserved until the tick that begins after 100 + 40.
        inf.on_sent(Time::from_millis(100), &sent(1));
        inf.on_sent(Time::from_millis(100), &sent(2));
        assert_eq!(inf.close_tick(Time::from_millis(140), RTT).observation, TickObservation::Unobserved);
        assert_eq!(inf.close_tick(Time::from_millis(160), RTT).observation, TickObservation::Delivered(0));
        // One old packet alone may be waiting for a delayed acknowledgement.
        inf.on_ack(&ack(1, 60));
        assert_eq!(inf.close_tick(Time::from_millis(180), RTT).observation, TickObservation::Delivered(1));
        assert_eq!(inf.close_tick(Time::from_millis(200), RTT).observation, TickObservation::Unobserved);
    }
}
