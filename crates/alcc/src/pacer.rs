//! The pacer: spaces chunks so that a flow sends at the controller's pacing rate.
//!
//! Each chunk of `b` bytes at rate `r` bytes/s advances the earliest next send time by
//! `b / r`. The schedule runs from the previous slot, not from the moment the driver woke,
//! so timer lateness does not lower the rate. The schedule never lags `now` by more than a
//! bounded credit: [`Pacer::BURST`] after the flow ran out of data (so an application pause
//! does not turn into a burst) or was held by its window, [`Pacer::LATE`] while only the
//! pacer held it (so a driver woken late by a loaded machine catches up). Pure: `now` is
//! passed in.

use std::time::Duration;

use alcc_cc::Time;

/// The earliest time the next chunk may go.
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
    /// How far behind `now` an idle schedule may restart (the credit an idle flow keeps).
    pub const BURST: Duration = Duration::from_millis(1);
    /// How far behind `now` the schedule of a backlogged flow may fall and still catch up.
    pub const LATE: Duration = Duration::from_millis(20);

    /// A pacer that allows a send at once.
    pub fn new() -> Pacer {
        Pacer { next: Time::ZERO, idle: true }
    }

    /// The flow stopped for a reason other than the pacer (no data, a full window, a full
    /// kernel buffer): its next send restarts the schedule with at most [`Pacer::BURST`]
    /// of credit.
    pub fn on_idle(&mut self) {
        self.idle = true;
    }

    /// When the next chunk may be sent.
    pub fn earliest(&self) -> Time {
        self.next
    }

    /// Whether a chunk may be sent at `now`.
    pub fn ready(&self, now: Time) -> bool {
        now >= self.next
    }

    /// A chunk of `bytes` went at `now`; `rate` is the pacing rate in bytes/s (`None`: unpaced).
    pub fn on_send(&mut self, now: Time, bytes: u64, rate: Option<u64>) {
        match rate {
            Some(r) if r > 0 => {
                let credit = if self.idle { Self::BURST } else { Self::LATE };
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
    fn spaces_chunks_at_the_rate() {
        let mut p = Pacer::new();
        assert!(p.ready(Time::ZERO));
        // 1 MB/s: 1000 bytes every millisecond.
        p.on_send(Time::from_millis(10), 1000, Some(1_000_000));
        assert_eq!(p.earliest(), Time::from_micros(10_000));
        // The first send after idleness starts from now - BURST: one chunk of credit.
        let mut p = Pacer::new();
        p.on_send(Time::from_millis(10), 1000, Some(1_000_000));
        p.on_send(Time::from_millis(10), 1000, Some(1_000_000));
        assert_eq!(p.earliest(), Time::from_millis(11));
        // Waking 300 us, or 5 ms, late does not push the schedule back while backlogged.
        p.on_send(Time::from_micros(11_300), 1000, Some(1_000_000));
        assert_eq!(p.earliest(), Time::from_millis(12));
        p.on_send(Time::from_millis(17), 1000, Some(1_000_000));
        assert_eq!(p.earliest(), Time::from_millis(13));
        // After the flow went idle, a pause leaves only BURST of credit.
        p.on_idle();
        p.on_send(Time::from_millis(100), 1000, Some(1_000_000));
        assert_eq!(p.earliest(), Time::from_millis(100));
        // Unpaced: always ready.
        p.on_send(Time::from_millis(20), 1 << 20, None);
        assert!(p.ready(Time::from_millis(20)));
    }

    proptest! {
        #[test]
        fn long_run_rate_matches(rate in 10_000u64..1_000_000_000, bytes in 1u64..100_000, n in 10u64..500) {
            let mut p = Pacer::new();
            let start = Time::from_millis(5_000);
            let mut now = start;
            for _ in 0..n {
                now = now.max(p.earliest());
                p.on_send(now, bytes, Some(rate));
            }
            // n chunks need (n - 1) gaps of bytes/rate after the credit of the first.
            let expect = (n as f64 - 1.0) * bytes as f64 / rate as f64 * 1e6;
            let took = (now.as_micros() - start.as_micros()) as f64;
            prop_assert!(took + 1000.0 + n as f64 >= expect && took <= expect + n as f64, "{took} vs {expect}");
        }
    }
}
