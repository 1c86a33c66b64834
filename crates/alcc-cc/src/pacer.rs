//! [`Pacer`]: the earliest time a flow's next packet (or chunk) may leave at the controller's
//! pacing rate. The engine and the simulator both use this one, so a controller is paced by
//! the same rule in simulation and over a real socket.
//!
//! The rule. A send of `b` bytes at rate `r` bytes/s moves the earliest next send by `b / r`.
//! What it is counted from depends on why the send came when it did:
//! - while only the pacer held the flow back, from the previous slot, however late the sender
//!   got round to sending, as long as the schedule lags `now` by at most [`Pacer::LATE`]
//!   (20 ms): a sender that wakes late (timer slack, a loaded machine, one driver thread
//!   serving many flows) sends the overdue bytes at once, so its average rate is the
//!   controller's, not the controller's minus the lateness;
//! - after the flow stopped for any other reason ([`on_idle`](Pacer::on_idle): nothing to
//!   send, a full window, a full socket or interface), from `now`: the pacer was not what held
//!   the flow, so it owes nothing, and a pause never turns into a burst.
//!
//! Catching up never runs ahead of the ideal schedule; it only sends what was already due.
//! No credit after idleness is what the simulator always did and what Copa's design asks for
//! (NSDI 2018 section 2.1 paces "so that bursts do not inflate the standing RTT"); until this
//! pacer was shared, the engine's own gave a flow one millisecond of credit after every
//! window-limited pause, so the same Copa sent a burst per ACK clock in emulation that it
//! never sent in simulation. A simulator wakes exactly at [`earliest`](Pacer::earliest), so
//! there `LATE` never applies; the engine needs it.
//!
//! A send without a pacing rate leaves the schedule at `now`, so the next send may follow at
//! once. Sans-IO: `now` is passed in.

use std::time::Duration;

use crate::time::Time;

/// The earliest time the next send may happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pacer {
    next: Time,
    idle: bool,
}

impl Default for Pacer {
    fn default() -> Pacer {
        Pacer::new()
    }
}

impl Pacer {
    /// How far behind `now` the schedule of a flow held only by the pacer may fall and still
    /// catch up.
    pub const LATE: Duration = Duration::from_millis(20);

    /// A pacer that allows a send at once.
    pub fn new() -> Pacer {
        Pacer { next: Time::ZERO, idle: true }
    }

    /// The flow stopped for a reason other than the pacer (no data, a full window, a full
    /// socket or interface): its next send restarts the schedule from then, without credit.
    pub fn on_idle(&mut self) {
        self.idle = true;
    }

    /// When the next send may happen.
    pub fn earliest(&self) -> Time {
        self.next
    }

    /// Whether a send may happen at `now`.
    pub fn ready(&self, now: Time) -> bool {
        now >= self.next
    }

    /// `bytes` left at `now`; `rate` is the pacing rate in bytes/s (`None` or 0: unpaced).
    pub fn on_send(&mut self, now: Time, bytes: u64, rate: Option<u64>) {
        match rate {
            Some(r) if r > 0 => {
                let credit = if self.idle { Duration::ZERO } else { Self::LATE };
                let from = self.next.max(now.saturating_sub(credit));
                self.idle = false;
                let gap_us = u128::from(bytes) * 1_000_000 / u128::from(r);
                self.next = from + Duration::from_micros(u64::try_from(gap_us).unwrap_or(u64::MAX));
            }
            _ => self.next = now,
        }
    }

    /// The largest chunk worth sending in one go at `rate`: about one millisecond of data,
    /// so that pacing stays smooth; `None` when unpaced.
    pub fn chunk_budget(rate: Option<u64>) -> Option<u64> {
        rate.map(|r| r / 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn spaces_sends_at_the_rate() {
        let mut p = Pacer::new();
        assert!(p.ready(Time::ZERO));
        // 1 MB/s: 1000 bytes every millisecond.
        p.on_send(Time::from_millis(10), 1000, Some(1_000_000));
        assert_eq!(p.earliest(), Time::from_millis(11));
        assert!(!p.ready(Time::from_micros(10_999)) && p.ready(Time::from_millis(11)));
        // Waking 300 us, or 5 ms, late does not push the schedule back while backlogged.
        p.on_send(Time::from_micros(11_300), 1000, Some(1_000_000));
        assert_eq!(p.earliest(), Time::from_millis(12));
        p.on_send(Time::from_millis(17), 1000, Some(1_000_000));
        assert_eq!(p.earliest(), Time::from_millis(13));
        // After the flow went idle (say its window was full), the schedule restarts at now:
        // the pause earns nothing.
        p.on_idle();
        p.on_send(Time::from_millis(100), 1000, Some(1_000_000));
        assert_eq!(p.earliest(), Time::from_millis(101));
        // Unpaced: always ready.
        p.on_send(Time::from_millis(20), 1 << 20, None);
        assert!(p.ready(Time::from_millis(20)));
    }

    #[test]
    fn lateness_beyond_the_credit_is_not_caught_up() {
        let mut p = Pacer::new();
        let rate = Some(1_500_000); // one 1500-byte packet per ms
        p.on_send(Time::ZERO, 1500, rate);
        p.on_send(Time::from_millis(1), 1500, rate);
        // 100 ms late while backlogged: only LATE (20 ms) is caught up.
        p.on_send(Time::from_millis(100), 1500, rate);
        assert_eq!(p.earliest(), Time::from_millis(81));
        let mut sent = 1;
        let now = Time::from_millis(100);
        while p.ready(now) {
            p.on_send(now, 1500, rate);
            sent += 1;
        }
        assert_eq!(sent, 21, "the slots of 80 to 100 ms: the 20 ms of credit and the one due");
        assert_eq!(p.earliest(), Time::from_millis(101));
    }

    proptest! {
        /// Sending whenever allowed, n sends take (n - 1) gaps of bytes/rate (each to the
        /// microsecond).
        #[test]
        fn long_run_rate_matches(rate in 10_000u64..1_000_000_000, bytes in 1u64..100_000, n in 10u64..500) {
            let mut p = Pacer::new();
            let start = Time::from_millis(5_000);
            let mut now = start;
            for _ in 0..n {
                now = now.max(p.earliest());
                p.on_send(now, bytes, Some(rate));
            }
            let expect = (n as f64 - 1.0) * bytes as f64 / rate as f64 * 1e6;
            let took = (now.as_micros() - start.as_micros()) as f64;
            prop_assert!(took + n as f64 >= expect && took <= expect + n as f64, "{took} vs {expect}");
        }

        /// However late the sender wakes, catching up never runs ahead of the ideal schedule
        /// that started at the first send: the bytes sent by `now` are at most
        /// rate x elapsed plus one send.
        #[test]
        fn catching_up_is_bounded(lateness in proptest::collection::vec(0u64..50_000, 1..300)) {
            let rate = 1_000_000u64; // 1000 bytes per ms
            let mut p = Pacer::new();
            let start = Time::from_millis(1_000);
            let mut now = start;
            let mut bytes = 0u64;
            for late in lateness {
                now = now.max(p.earliest()) + Duration::from_micros(late);
                while p.ready(now) {
                    p.on_send(now, 1000, Some(rate));
                    bytes += 1000;
                }
                let elapsed_us = (now - start).as_micros() as u64;
                let allowed = elapsed_us * rate / 1_000_000 + 1000;
                prop_assert!(bytes <= allowed, "{bytes} > {allowed}");
            }
        }
    }
}
