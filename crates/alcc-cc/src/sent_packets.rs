//! [`SentPackets`]: the packets a sender has in flight, turned into ACK samples and losses
//! (RFC 8985 style loss detection).
//!
//! Used by transports that number packets consecutively and get one acknowledgement per packet
//! (the simulator, UDP mode). It remembers each packet's send time and the controller's memo,
//! turns acknowledgements into [`AckSample`]s and declares packets lost:
//! - by packet threshold: 3 later packets acknowledged (the RFC 5681 duplicate-ACK threshold);
//! - by time threshold: a later packet acknowledged and `9/8 x max(srtt, latest RTT)` elapsed
//!   since it was sent (RFC 8985 section 6.2, reordering window);
//! - by timeout: nothing acknowledged for an RTO (`srtt + 4 x rttvar`, at least 200 ms, 1 s before
//!   any sample; RFC 6298, from the shared [`RttEstimator`]), after which every packet sent before `now - RTO` is lost. Each
//!   timeout doubles the RTO until the next acknowledgement (RFC 6298 section 5.5, "back off
//!   the timer"; at most 60 s, section 2.5), so that a long outage of the path (a cellular
//!   trace's gap of 800 ms) costs one or two timeouts, not one every 200 ms, each condemning
//!   a window of packets that are only waiting in the bottleneck queue.
//!
//! # Late acknowledgements
//!
//! A packet declared lost may still arrive: a timeout during an outage of the path condemns
//! packets that are only waiting in the bottleneck queue, and their ACKs come seconds later.
//! [`SentPackets::on_ack`] tells those apart ([`Acknowledged::DeclaredLost`]) so that the
//! controller hears them ([`Controller::on_late_ack`](crate::Controller::on_late_ack)): the
//! authors' Verus re-arms its loss timer on every ACK, late ones included. This is QUIC's
//! spurious loss detection (RFC 9002 section 6, "a packet declared lost may later be
//! acknowledged"), whose implementations keep the records of lost packets for a while
//! (quic-go drops them 3 PTOs after they were sent).
//!
//! - A declared-lost packet's record is kept for [`LOST_MEMORY_RTOS`] times the current RTO
//!   (with its back-off) after it was sent: RFC 9002 section 7.6's persistent-congestion span
//!   (`kPersistentCongestionThreshold` = 3 PTOs), with our RTO as the PTO. During an outage the
//!   RTO backs off, so the memory grows with the outage, as the ACKs' lateness does. The
//!   records hold only declared-lost packets (sorted by sequence number), so memory is the
//!   packets declared lost within that span.
//! - A late ACK changes nothing in the loss detection itself: its RTT is not a sample of the
//!   RTO's estimator (RFC 9002 section 5.1 and A.7: a packet removed as lost is not newly
//!   acknowledged), the back-off stays, and the largest acknowledged packet does not move. Its
//!   bytes count as delivered (the receiver has them); the flight does not change (they left
//!   it when the packet was declared lost).

use std::collections::VecDeque;
use std::time::Duration;

use crate::controller::Controller;
use crate::event::{AckSample, LossEvent};
use crate::rtt::RttEstimator;
use crate::time::{duration_micros, Time};

const PACKET_THRESHOLD: u64 = 3;
const MIN_RTO: Duration = Duration::from_millis(200);
const INITIAL_RTO: Duration = Duration::from_secs(1);
/// RFC 6298 section 2.5: a maximum may be placed on the RTO, provided it is at least 60 s.
const MAX_RTO: Duration = Duration::from_secs(60);
/// How long, in RTOs (with the back-off) after it was sent, a declared-lost packet's record is
/// kept so that its late ACK can still be told to the controller: RFC 9002 section 7.6's
/// persistent-congestion span, 3 PTOs (`kPersistentCongestionThreshold`).
pub const LOST_MEMORY_RTOS: u32 = 3;

#[derive(Clone, Copy, Debug)]
struct Entry {
    bytes: u64,
    sent_at: Time,
    memo: u64,
}

/// What the first acknowledgement of a packet tells the controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acknowledged {
    /// The packet was in flight: for [`Controller::on_ack`](crate::Controller::on_ack).
    InFlight(AckSample),
    /// The packet had been declared lost (a [`LossEvent`] went out for it) and its record was
    /// still kept: for [`Controller::on_late_ack`](crate::Controller::on_late_ack). The
    /// sample's `bytes_in_flight` is the flight now, unchanged by this ACK.
    DeclaredLost(AckSample),
}

impl Acknowledged {
    /// Hands the acknowledgement to `controller` as its contract says (`on_ack` for a packet
    /// in flight, `on_late_ack` for one declared lost), and returns the sample of a packet that
    /// was in flight: the acknowledgements a transport counts as its own.
    pub fn deliver_to(self, now: Time, controller: &mut dyn Controller) -> Option<AckSample> {
        match self {
            Acknowledged::InFlight(sample) => {
                controller.on_ack(now, &sample);
                Some(sample)
            }
            Acknowledged::DeclaredLost(sample) => {
                controller.on_late_ack(now, &sample);
                None
            }
        }
    }
}

/// Packets in flight, indexed by consecutive sequence numbers.
#[derive(Clone, Debug, Default)]
pub struct SentPackets {
    /// `slots[i]` is packet `base + i`; `None` once acknowledged or declared lost.
    slots: VecDeque<Option<Entry>>,
    /// Packets declared lost and not yet acknowledged, by sequence number (ascending), kept
    /// for [`LOST_MEMORY_RTOS`] RTOs after they were sent.
    lost: VecDeque<(u64, Entry)>,
    base: u64,
    bytes: u64,
    delivered: u64,
    largest_acked: Option<u64>,
    rtt: RttEstimator,
    last_ack_at: Option<Time>,
    /// Timeouts since the last acknowledgement: the RTO is doubled this many times.
    backoff: u32,
}

impl SentPackets {
    /// An empty ledger whose first packet will be `first_seq`.
    pub fn new(first_seq: u64) -> SentPackets {
        SentPackets { base: first_seq, ..SentPackets::default() }
    }

    /// Bytes sent and neither acknowledged nor declared lost.
    pub fn bytes_in_flight(&self) -> u64 {
        self.bytes
    }

    /// Cumulative bytes acknowledged.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// The smoothed RTT (RFC 6298), once there is a sample.
    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }

    /// The next sequence number `on_sent` expects.
    pub fn next_seq(&self) -> u64 {
        self.base + self.slots.len() as u64
    }

    /// Records packet `seq` (which must be [`next_seq`](Self::next_seq)) as sent.
    pub fn on_sent(&mut self, seq: u64, bytes: u64, sent_at: Time, memo: u64) {
        debug_assert_eq!(seq, self.next_seq(), "sequence numbers must be consecutive");
        self.slots.push_back(Some(Entry { bytes, sent_at, memo }));
        self.bytes += bytes;
    }

    /// The first acknowledgement of `seq`, in flight or declared lost ([`Acknowledged`]);
    /// `None` when it is unknown, a duplicate, or declared lost longer ago than the records
    /// are kept ([`LOST_MEMORY_RTOS`]).
    pub fn on_ack(&mut self, now: Time, seq: u64) -> Option<Acknowledged> {
        self.forget_old_losses(now);
        match self.on_ack_in_flight(now, seq) {
            Some(sample) => Some(Acknowledged::InFlight(sample)),
            None => self.on_late_ack(now, seq).map(Acknowledged::DeclaredLost),
        }
    }

    /// Packets declared lost whose records are kept (their late ACKs would still be heard).
    pub fn declared_lost_kept(&self) -> usize {
        self.lost.len()
    }

    fn on_late_ack(&mut self, now: Time, seq: u64) -> Option<AckSample> {
        let at = self.lost.binary_search_by_key(&seq, |(s, _)| *s).ok()?;
        let (_, entry) = self.lost.remove(at)?;
        self.delivered += entry.bytes;
        Some(AckSample {
            seq,
            bytes: entry.bytes,
            sent_at: entry.sent_at,
            rtt: now.saturating_since(entry.sent_at),
            bytes_in_flight: self.bytes,
            delivered: self.delivered,
            memo: entry.memo,
        })
    }

    fn on_ack_in_flight(&mut self, now: Time, seq: u64) -> Option<AckSample> {
        let index = usize::try_from(seq.checked_sub(self.base)?).ok()?;
        let entry = self.slots.get_mut(index)?.take()?;
        self.bytes -= entry.bytes;
        self.delivered += entry.bytes;
        let rtt = now.saturating_since(entry.sent_at);
        self.rtt.on_sample(now, rtt);
        self.last_ack_at = Some(now);
        self.backoff = 0;
        self.largest_acked = Some(self.largest_acked.map_or(seq, |l| l.max(seq)));
        self.trim();
        Some(AckSample {
            seq,
            bytes: entry.bytes,
            sent_at: entry.sent_at,
            rtt,
            bytes_in_flight: self.bytes,
            delivered: self.delivered,
            memo: entry.memo,
        })
    }

    /// Declares lost, and returns, every packet the rules above condemn at `now`.
    pub fn detect_losses(&mut self, now: Time) -> Vec<LossEvent> {
        self.forget_old_losses(now);
        let reorder_window = self.reorder_window();
        let rto = self.rto();
        let timed_out = self.last_ack_at.is_none_or(|t| now.saturating_since(t) >= rto);
        let mut lost = Vec::new();
        for (i, slot) in self.slots.iter_mut().enumerate() {
            let seq = self.base + i as u64;
            let Some(entry) = *slot else { continue };
            let age = now.saturating_since(entry.sent_at);
            let overtaken = self.largest_acked.is_some_and(|l| l > seq);
            let by_count = self.largest_acked.is_some_and(|l| l >= seq + PACKET_THRESHOLD);
            let by_time = overtaken && age >= reorder_window;
            let by_timeout = timed_out && age >= rto;
            if !(by_count || by_time || by_timeout) {
                if !overtaken {
                    break; // later packets are younger and not overtaken either
                }
                continue;
            }
            *slot = None;
            self.bytes -= entry.bytes;
            // Losses are declared oldest first (every rule condemns older packets first), so
            // this is almost always an append.
            let at = self.lost.partition_point(|(s, _)| *s < seq);
            self.lost.insert(at, (seq, entry));
            lost.push(LossEvent {
                seq,
                bytes: entry.bytes,
                sent_at: entry.sent_at,
                bytes_in_flight: self.bytes,
                memo: entry.memo,
            });
        }
        if timed_out && !lost.is_empty() {
            // A timeout backs the timer off and restarts it, as a retransmission would
            // (RFC 6298 5.5 and 5.6).
            self.last_ack_at = Some(now);
            self.backoff = self.backoff.saturating_add(1);
        }
        self.trim();
        lost
    }

    /// When [`detect_losses`](Self::detect_losses) could next find something, if anything is
    /// in flight.
    pub fn loss_deadline(&self) -> Option<Time> {
        let (i, oldest) = self.slots.iter().enumerate().find_map(|(i, s)| s.map(|e| (i, e)))?;
        let seq = self.base + i as u64;
        let rto_at = self.last_ack_at.unwrap_or(oldest.sent_at).max(oldest.sent_at) + self.rto();
        if self.largest_acked.is_some_and(|l| l > seq) {
            Some((oldest.sent_at + self.reorder_window()).min(rto_at))
        } else {
            Some(rto_at)
        }
    }

    /// In whole microseconds, so that [`loss_deadline`](Self::loss_deadline) and
    /// [`detect_losses`](Self::detect_losses) agree exactly on `Time`'s resolution.
    fn reorder_window(&self) -> Duration {
        let base = self.rtt.srtt().unwrap_or(INITIAL_RTO).max(self.rtt.latest().unwrap_or_default());
        whole_micros(base * 9 / 8)
    }

    fn rto(&self) -> Duration {
        let base = self.rtt.rfc6298_rto().map_or(INITIAL_RTO, |rto| rto.max(MIN_RTO));
        let factor = 1u32.checked_shl(self.backoff).unwrap_or(u32::MAX);
        whole_micros(base.checked_mul(factor).unwrap_or(MAX_RTO).min(MAX_RTO))
    }

    /// Drops the records of declared-lost packets sent more than [`LOST_MEMORY_RTOS`] RTOs
    /// before `now` (sequence order is send order, so the oldest are in front).
    fn forget_old_losses(&mut self, now: Time) {
        let memory = self.rto().saturating_mul(LOST_MEMORY_RTOS);
        while self.lost.front().is_some_and(|(_, e)| now.saturating_since(e.sent_at) > memory) {
            self.lost.pop_front();
        }
    }

    fn trim(&mut self) {
        while matches!(self.slots.front(), Some(None)) {
            self.slots.pop_front();
            self.base += 1;
        }
    }
}

fn whole_micros(d: Duration) -> Duration {
    Duration::from_micros(duration_micros(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Time {
        Time::from_millis(v)
    }

    #[test]
    fn ack_returns_sample_with_memo_and_rtt() {
        let mut f = SentPackets::new(0);
        f.on_sent(0, 1500, ms(0), 7);
        f.on_sent(1, 1500, ms(1), 8);
        assert_eq!(f.bytes_in_flight(), 3000);
        let Some(Acknowledged::InFlight(a)) = f.on_ack(ms(41), 0) else { panic!("in flight") };
        assert_eq!((a.seq, a.bytes, a.memo, a.rtt), (0, 1500, 7, Duration::from_millis(41)));
        assert_eq!((a.bytes_in_flight, a.delivered), (1500, 1500));
        assert!(f.on_ack(ms(42), 0).is_none(), "duplicate");
        assert!(f.on_ack(ms(42), 9).is_none(), "never sent");
    }

    #[test]
    fn three_later_acks_declare_a_loss() {
        let mut f = SentPackets::new(0);
        for s in 0..5 {
            f.on_sent(s, 1000, ms(s), 0);
        }
        f.on_ack(ms(40), 1);
        f.on_ack(ms(41), 2);
        assert!(f.detect_losses(ms(41)).is_empty());
        f.on_ack(ms(42), 3);
        let lost = f.detect_losses(ms(42));
        assert_eq!(lost.len(), 1);
        assert_eq!((lost[0].seq, lost[0].bytes_in_flight), (0, 1000));
        // Its late ACK is told apart, with its RTT; the flight is unchanged.
        let Some(Acknowledged::DeclaredLost(late)) = f.on_ack(ms(43), 0) else { panic!("a late ACK") };
        assert_eq!((late.seq, late.rtt, late.bytes_in_flight), (0, Duration::from_millis(43), 1000));
        assert_eq!(f.bytes_in_flight(), 1000);
        assert_eq!(f.delivered(), 4000, "its bytes reached the receiver");
        assert!(f.on_ack(ms(44), 0).is_none(), "a second late ACK is a duplicate");
        assert_eq!(f.declared_lost_kept(), 0);
    }

    #[test]
    fn late_acks_after_a_timeout_are_heard_and_change_no_timer() {
        let mut f = SentPackets::new(0);
        f.on_sent(0, 1000, ms(0), 0);
        f.on_ack(ms(40), 0); // RTO 200 ms
        for seq in 1..4 {
            f.on_sent(seq, 1000, ms(50), seq);
        }
        assert_eq!(f.detect_losses(ms(250)).len(), 3, "a timeout: the outage holds them");
        f.on_sent(4, 1000, ms(250), 4);
        assert_eq!(f.loss_deadline(), Some(ms(650)), "backed off to 400 ms");
        // The outage ends: the condemned packets' ACKs arrive, late.
        let Some(Acknowledged::DeclaredLost(late)) = f.on_ack(ms(600), 2) else { panic!("a late ACK") };
        assert_eq!((late.seq, late.memo, late.rtt), (2, 2, Duration::from_millis(550)));
        assert_eq!(late.bytes_in_flight, 1000, "packet 4 alone is in flight");
        // Nothing in the loss detection moved: the same (backed-off) deadline, srtt 40 ms.
        assert_eq!(f.loss_deadline(), Some(ms(650)));
        assert_eq!(f.srtt(), Some(Duration::from_millis(40)));
        assert_eq!(f.declared_lost_kept(), 2);
    }

    #[test]
    fn declared_lost_records_are_kept_for_three_rtos() {
        let mut f = SentPackets::new(0);
        f.on_sent(0, 1000, ms(0), 0);
        f.on_ack(ms(40), 0); // RTO 200 ms
        f.on_sent(1, 1000, ms(50), 0);
        f.on_sent(2, 1000, ms(60), 0);
        f.on_sent(3, 1000, ms(60), 0);
        f.on_ack(ms(100), 3); // RTO max(srtt + 4 rttvar, 200 ms): still 200 ms
        assert_eq!(f.rto(), Duration::from_millis(200));
        assert_eq!(f.detect_losses(ms(110)).len(), 2, "overtaken and older than 9/8 RTT");
        // Kept while younger than 3 RTOs (600 ms after it was sent), then forgotten.
        assert!(matches!(f.on_ack(ms(650), 1), Some(Acknowledged::DeclaredLost(_))));
        assert!(f.on_ack(ms(661), 2).is_none(), "sent at 60, older than 600 ms at 661");
        assert_eq!(f.declared_lost_kept(), 0);
    }

    #[test]
    fn time_threshold_after_a_later_ack() {
        let mut f = SentPackets::new(0);
        f.on_sent(0, 1000, ms(0), 0);
        f.on_sent(1, 1000, ms(0), 0);
        f.on_ack(ms(40), 1); // srtt = 40 ms, window 45 ms
        assert!(f.detect_losses(ms(44)).is_empty());
        assert_eq!(f.loss_deadline(), Some(ms(45)));
        assert_eq!(f.detect_losses(ms(45)).len(), 1);
        assert_eq!(f.loss_deadline(), None);
    }

    #[test]
    fn timeout_declares_everything_old() {
        let mut f = SentPackets::new(10);
        f.on_sent(10, 1000, ms(0), 0);
        f.on_sent(11, 1000, ms(500), 0);
        assert_eq!(f.loss_deadline(), Some(ms(1000)));
        let lost = f.detect_losses(ms(1000));
        assert_eq!(lost.iter().map(|l| l.seq).collect::<Vec<_>>(), vec![10]);
        // The RTO restarted at 1000, doubled: packet 11 (sent at 500) goes at 3000.
        assert_eq!(f.loss_deadline(), Some(ms(3000)));
        assert!(f.detect_losses(ms(2999)).is_empty());
        assert_eq!(f.detect_losses(ms(3000)).len(), 1);
        assert_eq!(f.bytes_in_flight(), 0);
    }

    #[test]
    fn timeouts_back_off_until_an_ack() {
        let mut f = SentPackets::new(0);
        f.on_sent(0, 1000, ms(0), 0);
        f.on_ack(ms(40), 0); // srtt 40, rttvar 20: RTO max(120, 200) = 200 ms
                             // An outage: what is sent is only queued; nothing comes back for 900 ms.
        f.on_sent(1, 1000, ms(50), 0);
        assert_eq!(f.loss_deadline(), Some(ms(250)));
        assert_eq!(f.detect_losses(ms(250)).len(), 1);
        f.on_sent(2, 1000, ms(250), 0);
        // Backed off to 400 ms from the timeout at 250, not 200.
        assert_eq!(f.loss_deadline(), Some(ms(650)));
        assert!(f.detect_losses(ms(450)).is_empty());
        assert_eq!(f.detect_losses(ms(650)).len(), 1);
        f.on_sent(3, 1000, ms(650), 0);
        assert_eq!(f.loss_deadline(), Some(ms(1450)), "800 ms after the second timeout");
        // The path is back: an ACK (RTT 300 ms) resets the back-off. srtt 72.5 ms, rttvar
        // 80 ms: RTO 392.5 ms.
        f.on_ack(ms(950), 3);
        f.on_sent(4, 1000, ms(950), 0);
        assert_eq!(f.loss_deadline(), Some(ms(950) + Duration::from_micros(392_500)));
    }

    #[test]
    fn backed_off_rto_is_capped_at_60_s() {
        let mut f = SentPackets::new(0);
        let mut now = ms(0);
        for seq in 0..12 {
            f.on_sent(seq, 1000, now, 0);
            let at = f.loss_deadline().unwrap();
            assert_eq!(f.detect_losses(at).len(), 1);
            now = at;
        }
        assert_eq!(f.rto(), MAX_RTO);
    }
}
