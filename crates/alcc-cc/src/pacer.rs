//! A token-free pacer: the earliest time the next packet may leave at a given rate.
//!
//! After a packet of `b` bytes leaves at time `t` at rate `r` bytes/s, the next may leave at
//! `t + b / r`. Idle time is not banked: a flow that pauses does not earn a burst. A small burst
//! allowance (`burst` bytes) lets the transport send a few packets per wake-up without
//! breaking the average rate.

use std::time::Duration;

use crate::time::Time;

/// Spaces packets at a rate in bytes per second.
#[derive(Clone, Debug)]
pub struct Pacer {
    next: Time,
    burst: Duration,
}

impl Pacer {
    /// A pacer that lets packets leave up to `burst` ahead of the ideal schedule.
    pub fn new(burst: Duration) -> Pacer {
        Pacer { next: Time::ZERO, burst }
    }

    /// The earliest time a packet may leave at `rate` (bytes/s); `now` or earlier when it may
    /// leave at once. Without a rate, always `now`.
    pub fn ready_at(&self, now: Time, rate: Option<u64>) -> Time {
        match rate {
            Some(_) => self.next.saturating_sub(self.burst).max(now),
            None => now,
        }
    }

    /// Records that `bytes` left at `now` at `rate`.
    pub fn on_sent(&mut self, now: Time, bytes: u64, rate: Option<u64>) {
        let Some(rate) = rate.filter(|&r| r > 0) else {
            self.next = now;
            return;
        };
        let gap_us = bytes.saturating_mul(1_000_000) / rate;
        // Do not bank idle time: the schedule restarts from now when it fell behind.
        let start = self.next.max(now);
        self.next = start + Duration::from_micros(gap_us);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spaces_packets_at_the_rate() {
        let mut p = Pacer::new(Duration::ZERO);
        let rate = Some(1_500_000); // 1500 bytes per ms
        assert_eq!(p.ready_at(Time::ZERO, rate), Time::ZERO);
        p.on_sent(Time::ZERO, 1500, rate);
        assert_eq!(p.ready_at(Time::ZERO, rate), Time::from_millis(1));
        p.on_sent(Time::from_millis(1), 1500, rate);
        assert_eq!(p.ready_at(Time::from_millis(1), rate), Time::from_millis(2));
        // No rate: no pacing.
        assert_eq!(p.ready_at(Time::from_millis(1), None), Time::from_millis(1));
    }

    #[test]
    fn idle_time_is_not_banked_beyond_the_burst() {
        let mut p = Pacer::new(Duration::from_millis(2));
        let rate = Some(1_500_000); // one 1500-byte packet per ms
        p.on_sent(Time::ZERO, 1500, rate);
        // After 100 ms idle, a 2 ms burst allows 3 packets at once (the one due now, 2 ahead).
        let now = Time::from_millis(100);
        let mut sent = 0;
        while p.ready_at(now, rate) <= now {
            p.on_sent(now, 1500, rate);
            sent += 1;
        }
        assert_eq!(sent, 3);
        assert_eq!(p.ready_at(now, rate), Time::from_millis(101));
    }
}
