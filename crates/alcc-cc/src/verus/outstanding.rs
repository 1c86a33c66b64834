//! Which packets are outstanding, which are missing, and when a missing one counts as lost.
//!
//! The reference detects losses itself: when an ACK skips sequence numbers, the skipped
//! packets become "missing"; a missing packet still unacknowledged 150 ms after it was found
//! missing is lost (the clock starts when the gap is seen, as in the reference, not at send).
//! The transport may also declare a packet lost; whichever comes first counts, and a packet
//! leaves this set at its first ACK or loss, so nothing is counted lost twice.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use crate::time::Time;

/// One packet in flight, as Verus remembers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outstanding {
    /// Its sequence number.
    pub seq: u64,
    /// Its payload bytes.
    pub bytes: u64,
    /// The encoded [`SendMemo`](super::memo::SendMemo) it was sent with.
    pub memo: u64,
}

/// What an ACK did to the outstanding packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acked {
    /// The packet, if it was still outstanding (not yet acknowledged, lost or forgotten).
    pub packet: Option<Outstanding>,
    /// Whether it is the highest sequence acknowledged so far (the reference's `seqLast`).
    pub advanced: bool,
}

/// The packets Verus counts in flight (`Wcrt`) and the missing-packet queue.
#[derive(Clone, Debug, Default)]
pub struct OutstandingPackets {
    /// The packet size whole packets are counted in (see [`Self::whole_packets`]).
    mss: u64,
    outstanding: BTreeMap<u64, Outstanding>,
    outstanding_bytes: u64,
    whole_packets: u64,
    highest_acked: Option<u64>,
    highest_sent: Option<u64>,
    /// Missing packets in the order they were found missing, with that time.
    missing: VecDeque<(u64, Time)>,
}

impl OutstandingPackets {
    /// No packet outstanding; whole packets are counted in packets of `mss` bytes.
    pub fn new(mss: u64) -> OutstandingPackets {
        OutstandingPackets { mss: mss.max(1), ..OutstandingPackets::default() }
    }

    /// A packet was sent.
    pub fn sent(&mut self, seq: u64, bytes: u64, memo: u64) {
        if let Some(old) = self.outstanding.insert(seq, Outstanding { seq, bytes, memo }) {
            // A transport reusing a sequence number: count the packet once.
            self.outstanding_bytes = self.outstanding_bytes.saturating_sub(old.bytes);
            self.whole_packets = self.whole_packets.saturating_sub(self.packets_of(old.bytes));
        }
        self.outstanding_bytes = self.outstanding_bytes.saturating_add(bytes);
        self.whole_packets = self.whole_packets.saturating_add(self.packets_of(bytes));
        self.highest_sent = Some(self.highest_sent.map_or(seq, |h| h.max(seq)));
    }

    /// A packet was acknowledged at `now`. Outstanding packets between the previous highest
    /// acknowledged sequence and this one become missing.
    pub fn acked(&mut self, now: Time, seq: u64) -> Acked {
        let advanced = self.highest_acked.is_none_or(|h| seq > h);
        if advanced {
            let from = self.highest_acked.map_or(0, |h| h.saturating_add(1));
            for (&gap, _) in self.outstanding.range(from..seq) {
                self.missing.push_back((gap, now));
            }
            self.highest_acked = Some(seq);
        }
        Acked { packet: self.remove(seq), advanced }
    }

    /// The transport declared `seq` lost: the packet, if Verus still counted it.
    pub fn lost(&mut self, seq: u64) -> Option<Outstanding> {
        self.remove(seq)
    }

    /// Removes and returns the missing packets found missing at least `expiry` before `now`.
    pub fn expire(&mut self, now: Time, expiry: Duration) -> Vec<Outstanding> {
        let mut lost = Vec::new();
        while let Some(&(seq, since)) = self.missing.front() {
            if now.saturating_since(since) < expiry {
                break;
            }
            self.missing.pop_front();
            if let Some(p) = self.remove(seq) {
                lost.push(p);
            }
        }
        lost
    }

    /// Stops counting every outstanding packet and treats everything sent so far as
    /// acknowledged territory (the reference's timeout: `Wcrt = 0`, `seqLast = last sent`).
    /// Later ACKs of these packets are ignored.
    pub fn forget_all(&mut self) {
        self.outstanding.clear();
        self.outstanding_bytes = 0;
        self.whole_packets = 0;
        self.missing.clear();
        if self.highest_sent > self.highest_acked {
            self.highest_acked = self.highest_sent;
        }
    }

    /// Forgets everything, including what was acknowledged (a slow-start restart).
    pub fn clear(&mut self) {
        *self = OutstandingPackets { highest_sent: self.highest_sent, ..OutstandingPackets::new(self.mss) };
    }

    /// Bytes Verus counts in flight.
    pub fn outstanding_bytes(&self) -> u64 {
        self.outstanding_bytes
    }

    /// Number of packets Verus counts in flight.
    pub fn outstanding_packets(&self) -> usize {
        self.outstanding.len()
    }

    /// `Wcrt` in whole packets, as the reference counts it (an integer it adds one to per
    /// packet sent and takes one from per packet acknowledged or expired): each outstanding
    /// packet of at most `mss` bytes is one, whatever its size (UDP mode's carry 1412 bytes),
    /// and a chunk of several packets (kernel mode, the engine) counts the `mss`-sized packets
    /// it fills, rounded up.
    pub fn whole_packets(&self) -> u64 {
        self.whole_packets
    }

    /// Whether anything has been acknowledged since the last [`clear`](Self::clear).
    pub fn anything_acked(&self) -> bool {
        self.highest_acked.is_some()
    }

    /// Number of packets currently missing (found missing, neither acknowledged nor lost).
    pub fn missing_count(&self) -> usize {
        self.missing.iter().filter(|(seq, _)| self.outstanding.contains_key(seq)).count()
    }

    fn remove(&mut self, seq: u64) -> Option<Outstanding> {
        let p = self.outstanding.remove(&seq)?;
        self.outstanding_bytes = self.outstanding_bytes.saturating_sub(p.bytes);
        self.whole_packets = self.whole_packets.saturating_sub(self.packets_of(p.bytes));
        Some(p)
    }

    /// The whole packets of `mss` bytes that `bytes` fill, at least one.
    fn packets_of(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.mss.max(1)).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: u64) -> Time {
        Time::from_millis(t)
    }

    fn outstanding_with(seqs: std::ops::RangeInclusive<u64>) -> OutstandingPackets {
        let mut l = OutstandingPackets::new(1448);
        for s in seqs {
            l.sent(s, 1000, s * 10);
        }
        l
    }

    #[test]
    fn gaps_expire_150ms_after_they_are_seen() {
        let mut l = outstanding_with(1..=5);
        assert_eq!(l.outstanding_packets(), 5);
        let a = l.acked(ms(10), 1);
        assert!(a.advanced);
        assert_eq!(a.packet.map(|p| p.memo), Some(10));
        let a = l.acked(ms(20), 4); // 2 and 3 go missing at t = 20
        assert!(a.advanced);
        assert_eq!(l.missing_count(), 2);
        assert_eq!(l.outstanding_bytes(), 3000);
        assert!(l.expire(ms(169), Duration::from_millis(150)).is_empty());
        let a = l.acked(ms(100), 2); // late but not expired: acknowledged normally
        assert!(!a.advanced);
        assert!(a.packet.is_some());
        let lost = l.expire(ms(170), Duration::from_millis(150));
        assert_eq!(lost.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![3]);
        assert_eq!(l.acked(ms(200), 3).packet, None); // expired: its ACK is ignored
        assert_eq!(l.outstanding_packets(), 1); // 5
    }

    #[test]
    fn never_lost_twice() {
        let mut l = outstanding_with(1..=3);
        l.acked(ms(1), 3); // 1, 2 missing
        assert_eq!(l.lost(1).map(|p| p.seq), Some(1)); // the transport first
        assert_eq!(l.lost(1), None);
        let lost = l.expire(ms(500), Duration::from_millis(150));
        assert_eq!(lost.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![2]);
        assert_eq!(l.lost(2), None);
        assert_eq!(l.outstanding_bytes(), 0);
    }

    #[test]
    fn forget_and_clear() {
        let mut l = outstanding_with(1..=4);
        l.acked(ms(1), 2);
        l.forget_all();
        assert_eq!((l.outstanding_packets(), l.outstanding_bytes(), l.missing_count()), (0, 0, 0));
        assert!(!l.acked(ms(2), 3).advanced); // below the new highest
        l.sent(5, 1000, 0);
        assert!(l.acked(ms(3), 5).advanced);
        assert!(l.anything_acked());
        l.clear();
        assert!(!l.anything_acked());
        l.sent(6, 100, 0);
        l.sent(6, 100, 0); // reused sequence counted once
        assert_eq!(l.outstanding_bytes(), 100);
        assert_eq!(l.whole_packets(), 1);
    }

    #[test]
    fn whole_packets_count_each_small_packet_as_one() {
        // Two of UDP mode's 1412-byte packets are 2 packets, not 2824 / 1448 = 1.95.
        let mut l = OutstandingPackets::new(1448);
        l.sent(1, 1412, 0);
        l.sent(2, 1412, 0);
        assert_eq!(l.whole_packets(), 2);
        // A chunk of 3.5 packets counts 4; a 1-byte packet counts 1.
        l.sent(3, 3 * 1448 + 724, 0);
        l.sent(4, 1, 0);
        assert_eq!(l.whole_packets(), 7);
        l.acked(ms(1), 3); // 1 and 2 go missing; the chunk is acknowledged
        assert_eq!(l.whole_packets(), 3);
        assert_eq!(l.expire(ms(200), Duration::from_millis(150)).len(), 2);
        assert_eq!(l.whole_packets(), 1);
        l.forget_all();
        assert_eq!(l.whole_packets(), 0);
    }
}
