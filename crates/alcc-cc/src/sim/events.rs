//! The simulators' event queue ([`scenario`](super::scenario) for one flow,
//! [`flows`](super::flows) for several): events wait for their time and are taken in time
//! order, and among equal times in the order they were scheduled, so that a run is
//! deterministic.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::time::Time;

/// Events of type `E` waiting for their time.
pub(crate) struct EventQueue<E> {
    /// Due time, then the scheduling order (FIFO among equal times); an index into `events`.
    heap: BinaryHeap<(Reverse<(Time, u64)>, usize)>,
    events: Vec<Option<E>>,
    order: u64,
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub(crate) fn new() -> EventQueue<E> {
        EventQueue { heap: BinaryHeap::new(), events: Vec::new(), order: 0 }
    }

    /// Schedules `event` for `at`.
    pub(crate) fn schedule(&mut self, at: Time, event: E) {
        let index = self.events.len();
        self.events.push(Some(event));
        self.heap.push((Reverse((at, self.order)), index));
        self.order += 1;
    }

    /// When the earliest event is due.
    pub(crate) fn next_due(&self) -> Option<Time> {
        self.heap.peek().map(|(Reverse((t, _)), _)| *t)
    }

    /// Takes the earliest event due at or before `now`.
    pub(crate) fn pop_due(&mut self, now: Time) -> Option<E> {
        while let Some(&(Reverse((t, _)), index)) = self.heap.peek() {
            if t > now {
                return None;
            }
            self.heap.pop();
            if let Some(event) = self.events[index].take() {
                return Some(event);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_in_time_order_then_in_scheduling_order() {
        let mut q = EventQueue::new();
        let t = |ms| Time::from_millis(ms);
        q.schedule(t(5), "b");
        q.schedule(t(2), "a");
        q.schedule(t(5), "c");
        assert_eq!(q.next_due(), Some(t(2)));
        assert_eq!(q.pop_due(t(1)), None, "nothing due yet");
        assert_eq!(q.pop_due(t(5)), Some("a"));
        assert_eq!(q.pop_due(t(5)), Some("b"));
        assert_eq!(q.pop_due(t(5)), Some("c"));
        assert_eq!((q.pop_due(t(9)), q.next_due()), (None, None));
    }
}
