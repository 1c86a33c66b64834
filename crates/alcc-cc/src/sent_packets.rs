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

use std::collections::VecDeque;
use std::time::Duration;

use crate::event::{AckSample, LossEvent};
use crate::rtt::RttEstimator;
use crate::time::{duration_micros, Time};

const PACKET_THRESHOLD: u64 = 3;
const MIN_RTO: Duration = Duration::from_millis(200);
const INITIAL_RTO: Duration = Duration::from_secs(1);
/// RFC 6298 section 2.5: a maximum may be placed on the RTO, provided it is at least 60 s.
const MAX_RTO: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug)]
struct Entry {
    bytes: u64,
    sent_at: Time,
    memo: u64,
}

/// Packets in flight, indexed by consecutive sequence numbers.
#[derive(Clone, Debug, Default)]
pub struct SentPackets {
    /// `slots[i]` is packet `base + i`; `None` once acknowledged or declared lost.
    slots: VecDeque<Option<Entry>>,
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

    /// An acknowledgement of `seq`; `None` when it is unknown, a duplicate, or already lost.
    pub fn on_ack(&mut self, now: Time, seq: u64) -> Option<AckSample> {
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
        let a = f.on_ack(ms(41), 0).unwrap();
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
        assert!(f.on_ack(ms(43), 0).is_none(), "a lost packet is not acknowledged later");
        assert_eq!(f.bytes_in_flight(), 1000);
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
