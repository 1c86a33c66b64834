//! One direction of a simulated link: a [`Bottleneck`] queue and the delivery opportunities
//! that drain it, with Mahimahi's rule that an opportunity passing an empty queue is wasted.

use crate::sim::bottleneck::{Bottleneck, QueueLimit, Queued};
use crate::sim::capacity::Capacity;
use crate::time::Time;

/// A queue served by a capacity's opportunities up to an end time.
#[derive(Clone, Debug)]
pub struct ServedQueue {
    queue: Bottleneck,
    opportunities: Vec<Time>,
    next: usize,
}

impl ServedQueue {
    /// A queue with `limit`, served by the opportunities of `capacity` before `end`.
    pub fn new(capacity: &Capacity, limit: QueueLimit, end: Time) -> ServedQueue {
        let opportunities = capacity.opportunities().take_while(|&t| t < end).collect();
        ServedQueue { queue: Bottleneck::new(limit), opportunities, next: 0 }
    }

    /// Every opportunity within the run, used or not.
    pub fn opportunities(&self) -> &[Time] {
        &self.opportunities
    }

    /// Offers a packet at `now`; `false` when the drop-tail queue refuses it.
    pub fn enqueue(&mut self, now: Time, packet: Queued) -> bool {
        let was_empty = self.queue.is_empty();
        let accepted = self.queue.enqueue(packet);
        if accepted && was_empty {
            // Opportunities that passed while the queue was empty were wasted.
            while self.opportunities.get(self.next).is_some_and(|&t| t < now) {
                self.next += 1;
            }
        }
        accepted
    }

    /// When the next packet can leave, if anything is queued.
    pub fn deadline(&self) -> Option<Time> {
        if self.queue.is_empty() {
            return None;
        }
        self.opportunities.get(self.next).copied()
    }

    /// Uses every opportunity due at `now`; `depart` gets each packet that finished leaving.
    pub fn serve_due(&mut self, now: Time, mut depart: impl FnMut(Queued)) {
        while !self.queue.is_empty() && self.opportunities.get(self.next).is_some_and(|&t| t <= now) {
            self.next += 1;
            self.queue.serve(&mut depart);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(id: usize, at_ms: u64) -> Queued {
        Queued { id, bytes: 1500, enqueued_at: Time::from_millis(at_ms) }
    }

    #[test]
    fn opportunities_before_a_packet_are_wasted() {
        let mut q =
            ServedQueue::new(&Capacity::Trace(vec![1, 2, 5, 6]), QueueLimit::Infinite, Time::from_millis(7));
        assert_eq!(q.opportunities().len(), 4);
        assert_eq!(q.deadline(), None);
        assert!(q.enqueue(Time::from_millis(3), pkt(0, 3)));
        assert!(q.enqueue(Time::from_millis(3), pkt(1, 3)));
        assert_eq!(q.deadline(), Some(Time::from_millis(5)));
        let mut out = Vec::new();
        q.serve_due(Time::from_millis(5), |p| out.push(p.id));
        assert_eq!(out, vec![0]);
        assert_eq!(q.deadline(), Some(Time::from_millis(6)));
        q.serve_due(Time::from_millis(6), |p| out.push(p.id));
        assert_eq!(out, vec![0, 1]);
        assert_eq!(q.deadline(), None);
    }
}
