//! [`SentChunks`]: the chunks a flow handed to the kernel and not yet saw acknowledged, with
//! the flow's byte counters (the engine's counterpart of `alcc_cc::sent_packets`, by byte
//! offset instead of packet number).
//!
//! Offsets count the flow's bytes from zero. A chunk is one write into the kernel (one
//! controller "packet"): `[start, end)`, its send time, the controller's memo and, once the
//! kernel reports it, the SCHED timestamp of its last byte. Acknowledgements arrive as an
//! offset through which everything is delivered (from an ACK timestamp, whose 32-bit id is
//! unwrapped here, or from `tcpi_bytes_acked`); an offset inside a chunk acknowledges it in
//! part. Pure: no clock, no socket.

use std::collections::VecDeque;

use alcc_cc::Time;

/// One write into the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// The controller's sequence number of this chunk.
    pub seq: u64,
    /// Offset of its first byte.
    pub start: u64,
    /// Offset one past its last byte.
    pub end: u64,
    /// When it was written into the kernel (engine clock).
    pub sent_at: Time,
    /// The value the controller returned from `on_sent`.
    pub memo: u64,
    /// The kernel's first SCHED timestamp of its last byte (nanoseconds, the kernel's stamp
    /// clock): when it first left for the network. A retransmission stamps it again; see
    /// [`SentChunks::note_sched`].
    pub sched_ns: Option<u64>,
    /// Whether the controller was already told that this chunk was lost.
    pub lost: bool,
}

impl Chunk {
    /// Payload bytes of the chunk.
    pub fn bytes(&self) -> u64 {
        self.end - self.start
    }
}

/// Chunks in flight, oldest first, and the flow's byte counters.
#[derive(Clone, Debug, Default)]
pub struct SentChunks {
    chunks: VecDeque<Chunk>,
    written: u64,
    acked: u64,
    next_seq: u64,
    id_base: u64,
}

impl SentChunks {
    /// Nothing sent yet; the first byte has offset 0.
    pub fn new() -> SentChunks {
        SentChunks::default()
    }

    /// Bytes written into the kernel so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Bytes acknowledged so far (cumulative).
    pub fn acked(&self) -> u64 {
        self.acked
    }

    /// Bytes written and not yet acknowledged.
    pub fn bytes_in_flight(&self) -> u64 {
        self.written - self.acked
    }

    /// Chunks in flight (wholly or partly unacknowledged).
    pub fn chunks_in_flight(&self) -> usize {
        self.chunks.len()
    }

    /// The sequence number the next chunk will get.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Offset at which the kernel's timestamp ids start: the kernel numbers bytes from the
    /// moment timestamping was enabled, so bytes written earlier (none, normally) are skipped.
    pub fn set_id_base(&mut self, base: u64) {
        self.id_base = base;
    }

    /// Records a chunk of `bytes` written at `now`; returns it.
    pub fn push(&mut self, bytes: u64, now: Time, memo: u64) -> Chunk {
        let chunk = Chunk {
            seq: self.next_seq,
            start: self.written,
            end: self.written + bytes,
            sent_at: now,
            memo,
            sched_ns: None,
            lost: false,
        };
        self.next_seq += 1;
        self.written += bytes;
        if bytes > 0 {
            self.chunks.push_back(chunk);
        }
        chunk
    }

    /// The 64-bit offset one past the byte whose 32-bit timestamp id is `id`.
    ///
    /// With `SOF_TIMESTAMPING_OPT_ID` the kernel reports, per write, the id of its last byte:
    /// the byte's offset modulo 2^32. Of all offsets with that residue we take the one
    /// nearest the acknowledged offset (ids in flight span far less than 2 GiB).
    pub fn unwrap_id(&self, id: u32) -> u64 {
        let reference = self.acked.saturating_sub(self.id_base);
        let half = 1u64 << 31;
        let low = reference.saturating_sub(half);
        // The smallest value >= low that is congruent to id modulo 2^32.
        let base = low & !0xffff_ffff;
        let mut candidate = base | u64::from(id);
        if candidate < low {
            candidate += 1 << 32;
        }
        self.id_base + candidate + 1
    }

    /// Notes a SCHED timestamp of the chunk ending at `end`, if it is still in flight. Only
    /// the first counts: the kernel stamps a chunk again each time it sends it again (a tail
    /// loss probe, a retransmission timeout), and the acknowledgement that follows may be for
    /// the first transmission. Measured from a retransmission, an RTT can come out shorter
    /// than the path's (Karn's ambiguity, RFC 6298 section 3; measured: 50 ms and 2.3 ms on
    /// a 20 ms path after a tail loss probe at the start of highwayGold); measured from the
    /// first transmission it is never shorter, only longer when the first one was lost.
    pub fn note_sched(&mut self, end: u64, stamp_ns: u64) {
        if let Some(c) = self.chunk_ending_at(end) {
            c.sched_ns.get_or_insert(stamp_ns);
        }
    }

    fn chunk_ending_at(&mut self, end: u64) -> Option<&mut Chunk> {
        let i = self.chunks.binary_search_by(|c| c.end.cmp(&end)).ok()?;
        self.chunks.get_mut(i)
    }

    /// Everything before `offset` is delivered. Returns the chunks this completes, oldest
    /// first; a chunk the offset falls inside stays, acknowledged in part (its bytes leave
    /// [`bytes_in_flight`](Self::bytes_in_flight) at once). Offsets at or below what is
    /// already acknowledged, and beyond what was written, are clamped.
    pub fn ack_through(&mut self, offset: u64) -> Vec<Chunk> {
        let offset = offset.min(self.written);
        if offset <= self.acked {
            return Vec::new();
        }
        self.acked = offset;
        let mut done = Vec::new();
        while let Some(front) = self.chunks.front() {
            if front.end > offset {
                break;
            }
            if let Some(c) = self.chunks.pop_front() {
                done.push(c);
            }
        }
        done
    }

    /// Marks up to `count` of the oldest chunks not yet reported lost as lost, and returns them.
    pub fn mark_lost(&mut self, count: u64) -> Vec<Chunk> {
        let mut out = Vec::new();
        for c in self.chunks.iter_mut().filter(|c| !c.lost) {
            if out.len() as u64 >= count {
                break;
            }
            c.lost = true;
            out.push(*c);
        }
        out
    }

    /// Bytes in flight not yet reported lost to the controller.
    pub fn bytes_in_flight_not_lost(&self) -> u64 {
        let lost: u64 = self.chunks.iter().filter(|c| c.lost).map(|c| c.end - c.start.max(self.acked)).sum();
        self.bytes_in_flight() - lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(us: u64) -> Time {
        Time::from_micros(us)
    }

    #[test]
    fn a_retransmission_does_not_move_the_send_stamp() {
        let mut l = SentChunks::new();
        l.push(1448, t(1), 0);
        l.note_sched(1448, 1_000_000);
        // A tail loss probe sends it again 64 ms later; the ACK that follows may be the
        // first transmission's.
        l.note_sched(1448, 65_000_000);
        let done = l.ack_through(1448);
        assert_eq!(done[0].sched_ns, Some(1_000_000));
        // A stamp for a chunk no longer in flight, or not ending there, is ignored.
        l.note_sched(1448, 70_000_000);
        l.push(100, t(2), 0);
        l.note_sched(1500, 71_000_000);
        assert_eq!(l.ack_through(1548)[0].sched_ns, None);
    }

    #[test]
    fn whole_and_partial_acks() {
        let mut l = SentChunks::new();
        l.push(100, t(1), 7);
        l.push(50, t(2), 8);
        assert_eq!(l.bytes_in_flight(), 150);
        // Half of the first chunk.
        assert!(l.ack_through(40).is_empty());
        assert_eq!(l.bytes_in_flight(), 110);
        assert_eq!(l.chunks_in_flight(), 2);
        let done = l.ack_through(100);
        assert_eq!(done.len(), 1);
        assert_eq!((done[0].seq, done[0].start, done[0].end, done[0].memo), (0, 0, 100, 7));
        // Stale and duplicate acknowledgements change nothing.
        assert!(l.ack_through(60).is_empty());
        assert!(l.ack_through(100).is_empty());
        let done = l.ack_through(10_000);
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].seq, 1);
        assert_eq!(l.bytes_in_flight(), 0);
        assert_eq!(l.acked(), 150);
    }

    #[test]
    fn unwraps_ids_of_last_bytes() {
        let mut l = SentChunks::new();
        l.push(1000, t(0), 0);
        assert_eq!(l.unwrap_id(999), 1000);
        // Near the 32-bit boundary: offsets 2^32 - 10 .. 2^32 + 90.
        let mut l = SentChunks::new();
        let near = (1u64 << 32) - 10;
        l.push(near, t(0), 0);
        l.ack_through(near);
        l.push(100, t(1), 0);
        let id_of_last = ((near + 99) & 0xffff_ffff) as u32;
        assert_eq!(id_of_last, 89);
        assert_eq!(l.unwrap_id(id_of_last), near + 100);
        // An id just below the acknowledged offset stays below (a stale report).
        assert_eq!(l.unwrap_id(((near - 5) & 0xffff_ffff) as u32), near - 4);
    }

    #[test]
    fn id_base_shifts_offsets() {
        let mut l = SentChunks::new();
        l.set_id_base(10);
        l.push(30, t(0), 0);
        assert_eq!(l.unwrap_id(19), 30);
    }

    #[test]
    fn sched_and_loss_marks() {
        let mut l = SentChunks::new();
        l.push(10, t(0), 0);
        l.push(10, t(1), 0);
        l.push(10, t(2), 0);
        l.note_sched(20, 555);
        l.note_sched(25, 1); // no chunk ends there
        let lost = l.mark_lost(2);
        assert_eq!(lost.iter().map(|c| c.seq).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(l.bytes_in_flight_not_lost(), 10);
        let lost = l.mark_lost(5);
        assert_eq!(lost.iter().map(|c| c.seq).collect::<Vec<_>>(), vec![2]);
        let done = l.ack_through(30);
        assert_eq!(done[1].sched_ns, Some(555));
        assert!(done.iter().all(|c| c.lost));
        assert!(l.mark_lost(1).is_empty());
    }

    proptest! {
        #[test]
        fn random_sequences_keep_invariants(ops in proptest::collection::vec((0u8..4, 1u64..70_000), 1..300)) {
            let mut l = SentChunks::new();
            let mut now = 0;
            let mut completed = 0u64;
            for (op, x) in ops {
                now += x % 100;
                match op {
                    0 | 1 => { l.push(x, t(now), x); }
                    2 => {
                        let target = l.acked() + x;
                        for c in l.ack_through(target) {
                            prop_assert!(c.end <= l.acked());
                            completed += c.bytes();
                        }
                    }
                    _ => { l.mark_lost(x % 3); }
                }
                prop_assert!(l.acked() <= l.written());
                prop_assert!(l.bytes_in_flight_not_lost() <= l.bytes_in_flight());
                // Completed chunks plus the chunks still held cover exactly what was written.
                let held: u64 = l.chunks.iter().map(|c| c.bytes()).sum();
                prop_assert_eq!(completed + held, l.written());
            }
        }

        #[test]
        fn unwrap_inverts_wrapping(acked in 0u64..(1 << 40), ahead in 1u64..(1 << 30)) {
            let mut l = SentChunks::new();
            l.push(acked, t(0), 0);
            l.ack_through(acked);
            l.push(ahead, t(1), 0);
            let end = acked + ahead;
            let id = ((end - 1) & 0xffff_ffff) as u32;
            prop_assert_eq!(l.unwrap_id(id), end);
        }
    }
}
