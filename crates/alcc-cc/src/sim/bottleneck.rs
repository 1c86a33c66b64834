//! The bottleneck queue: drop-tail in packets or bytes (or unlimited), drained by delivery
//! opportunities with byte accounting, as in Mahimahi's `link_queue`: one opportunity carries up
//! to 1500 bytes, a packet may span opportunities, and an opportunity with nothing queued is
//! wasted.

use std::collections::VecDeque;

use crate::sim::capacity::OPPORTUNITY_BYTES;
use crate::time::Time;

/// The queue's limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueLimit {
    /// No limit.
    Infinite,
    /// At most this many packets queued.
    Packets(u64),
    /// At most this many bytes queued.
    Bytes(u64),
}

/// A packet waiting in the bottleneck.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queued {
    /// Index of the packet in the simulation's records.
    pub id: usize,
    /// Its size in bytes on the link.
    pub bytes: u64,
    /// When it entered the queue.
    pub enqueued_at: Time,
}

/// A drop-tail queue served by delivery opportunities.
#[derive(Clone, Debug)]
pub struct Bottleneck {
    limit: QueueLimit,
    queue: VecDeque<Queued>,
    queued_bytes: u64,
    /// Bytes of the head packet already carried by earlier opportunities.
    head_sent: u64,
}

impl Bottleneck {
    /// An empty queue with the given limit.
    pub fn new(limit: QueueLimit) -> Bottleneck {
        Bottleneck { limit, queue: VecDeque::new(), queued_bytes: 0, head_sent: 0 }
    }

    /// Offers a packet; returns `false` (drop-tail) when it does not fit.
    pub fn enqueue(&mut self, packet: Queued) -> bool {
        let fits = match self.limit {
            QueueLimit::Infinite => true,
            QueueLimit::Packets(n) => (self.queue.len() as u64) < n,
            QueueLimit::Bytes(n) => self.queued_bytes + packet.bytes <= n,
        };
        if fits {
            self.queued_bytes += packet.bytes;
            self.queue.push_back(packet);
        }
        fits
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Bytes queued.
    pub fn queued_bytes(&self) -> u64 {
        self.queued_bytes
    }

    /// Uses one delivery opportunity; calls `depart` for each packet that finishes leaving.
    pub fn serve(&mut self, mut depart: impl FnMut(Queued)) {
        let mut budget = OPPORTUNITY_BYTES;
        while budget > 0 {
            let Some(head) = self.queue.front().copied() else { break };
            let left = head.bytes - self.head_sent;
            if left <= budget {
                budget -= left;
                self.head_sent = 0;
                self.queued_bytes -= head.bytes;
                self.queue.pop_front();
                depart(head);
            } else {
                self.head_sent += budget;
                budget = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(id: usize, bytes: u64) -> Queued {
        Queued { id, bytes, enqueued_at: Time::ZERO }
    }

    fn serve_ids(b: &mut Bottleneck) -> Vec<usize> {
        let mut out = Vec::new();
        b.serve(|p| out.push(p.id));
        out
    }

    #[test]
    fn one_opportunity_carries_several_small_packets() {
        let mut b = Bottleneck::new(QueueLimit::Infinite);
        for id in 0..4 {
            assert!(b.enqueue(pkt(id, 500)));
        }
        assert_eq!(serve_ids(&mut b), vec![0, 1, 2]);
        assert_eq!(serve_ids(&mut b), vec![3]);
        assert!(b.is_empty());
    }

    #[test]
    fn a_large_packet_spans_opportunities() {
        let mut b = Bottleneck::new(QueueLimit::Infinite);
        b.enqueue(pkt(0, 1000));
        b.enqueue(pkt(1, 1000));
        assert_eq!(serve_ids(&mut b), vec![0]); // 500 bytes of packet 1 carried too
        assert_eq!(serve_ids(&mut b), vec![1]);
        assert_eq!(b.queued_bytes(), 0);
    }

    #[test]
    fn drop_tail_limits() {
        let mut b = Bottleneck::new(QueueLimit::Packets(2));
        assert!(b.enqueue(pkt(0, 1500)) && b.enqueue(pkt(1, 1500)));
        assert!(!b.enqueue(pkt(2, 1500)));
        let mut b = Bottleneck::new(QueueLimit::Bytes(2000));
        assert!(b.enqueue(pkt(0, 1500)));
        assert!(!b.enqueue(pkt(1, 1500)));
        assert!(b.enqueue(pkt(2, 500)));
    }
}
