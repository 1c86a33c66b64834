//! A fixed one-way propagation delay (Mahimahi's `mm-delay`): every packet leaving the link
//! is delivered exactly `delay` later. Departures are in time order and the delay is
//! constant, so a FIFO suffices.

use std::collections::VecDeque;

/// Packets in flight on the wire after the bottleneck.
#[derive(Debug)]
pub struct DelayLine<P> {
    delay_us: u64,
    in_flight: VecDeque<(u64, P)>,
}

impl<P> DelayLine<P> {
    /// A line that delays by `delay_us` microseconds.
    pub fn new(delay_us: u64) -> Self {
        DelayLine { delay_us, in_flight: VecDeque::new() }
    }

    /// A packet that left the link at `departed_us` (non-decreasing from call to call).
    pub fn push(&mut self, departed_us: u64, packet: P) {
        self.in_flight.push_back((departed_us.saturating_add(self.delay_us), packet));
    }

    /// The next packet due at or before `now_us`, with its due time.
    pub fn pop_due(&mut self, now_us: u64) -> Option<(u64, P)> {
        match self.in_flight.front() {
            Some(&(due, _)) if due <= now_us => self.in_flight.pop_front(),
            _ => None,
        }
    }

    /// When the next packet is due.
    pub fn next_due(&self) -> Option<u64> {
        self.in_flight.front().map(|&(due, _)| due)
    }

    /// The one-way delay, µs.
    pub fn delay_us(&self) -> u64 {
        self.delay_us
    }

    /// Packets in flight.
    pub fn len(&self) -> usize {
        self.in_flight.len()
    }

    /// Whether nothing is in flight.
    pub fn is_empty(&self) -> bool {
        self.in_flight.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivers_exactly_delay_later_in_order() {
        let mut d = DelayLine::new(20_000);
        d.push(1_000, 'a');
        d.push(1_000, 'b');
        d.push(1_500, 'c');
        assert_eq!(d.next_due(), Some(21_000));
        assert_eq!(d.pop_due(20_999), None);
        assert_eq!(d.pop_due(21_000), Some((21_000, 'a')));
        assert_eq!(d.pop_due(21_400), Some((21_000, 'b')));
        assert_eq!(d.pop_due(21_400), None);
        assert_eq!(d.pop_due(30_000), Some((21_500, 'c')));
        assert!(d.is_empty());
    }

    #[test]
    fn zero_delay_is_immediate() {
        let mut d = DelayLine::new(0);
        d.push(7, 1u8);
        assert_eq!(d.pop_due(7), Some((7, 1)));
    }
}
