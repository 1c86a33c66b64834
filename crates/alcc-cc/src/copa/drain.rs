//! The drain check: how competitive mode finds out that no buffer-filler is left.
//!
//! Copa's mode detector (section 4 of the paper, [`super::mode`]) reads "the queue has not
//! come near empty for 4 x srtt" as the sign of a buffer-filling competitor. From passive
//! measurements alone Copa cannot tell its own queued packets from a competitor's: at its
//! equilibrium rate `lambda = 1 / (delta x dq)` its own packets in the queue are
//! `lambda x dq = 1 / delta` whether or not anyone else is there. The default mode gets away
//! with this because Copa's oscillation empties the queue every few RTTs when it is alone
//! (section 2.2). Competitive mode does not: `1/delta` grows by one packet per RTT without a
//! loss, and once Copa's own standing queue (`1/delta` packets) is a sizeable fraction of the
//! bandwidth-delay product its window settles at the target instead of oscillating, the queue
//! never empties, and the detector keeps reading Copa's own queue as a competitor's. On a deep
//! buffer nothing is lost, so `delta` never doubles either: alone, competitive mode cannot end,
//! and the minimum RTT drifts up with the queue once its 10 s window passes. (Measured: in the
//! simulator, Copa with a fixed `delta` of 0.05 on a constant 9 Mbit/s, 20 ms link never empties
//! the queue; the authors' Copa over our emulator stays there in 2 of 10 runs of the synthetic
//! trace; see docs/reproduce.md.)
//!
//! So competitive mode checks its premise the only way a single flow can: it drains its own
//! queue and looks. The window is held at the pipe, `cwnd x minRTT / RTTstanding` (the packets
//! the path holds at the current rate without a queue), until a packet sent after the hold
//! began is acknowledged: that packet met only the queue other flows keep. If the mode detector
//! then sees the queue empty, Copa returns to the default mode; if not, a competitor is there,
//! and the next check waits twice as long, from one mode window (4 x srtt) after entering
//! competitive mode up to one minimum-RTT window (which also keeps the minimum RTT true while
//! a competitor holds the queue). A check costs about one RTT of Copa's own queued packets.

use std::time::Duration;

use crate::time::Time;

/// Where the drain check stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrainCheck {
    /// Default mode: nothing to check.
    Idle,
    /// Competitive mode: the next drain starts at `due`; `interval` is the wait that led to it.
    Scheduled {
        /// When the next drain starts.
        due: Time,
        /// How long the check waited since competitive mode began or the last drain ended.
        interval: Duration,
    },
    /// The window is held at the pipe since `since`, until a packet sent at or after `since`
    /// is acknowledged.
    Draining {
        /// When the hold began.
        since: Time,
        /// The wait that led to this drain.
        interval: Duration,
    },
}

impl DrainCheck {
    /// Whether the window is being held at the pipe.
    pub fn holds(&self) -> bool {
        matches!(self, DrainCheck::Draining { .. })
    }

    /// Competitive mode began at `now`: the first drain comes one mode window (`mode_span`)
    /// later. Does nothing if a check is already under way.
    pub fn on_competitive(&mut self, now: Time, mode_span: Duration) {
        if *self == DrainCheck::Idle {
            *self = DrainCheck::Scheduled { due: now + mode_span, interval: mode_span };
        }
    }

    /// The default mode is back: no more checks.
    pub fn on_default(&mut self) {
        *self = DrainCheck::Idle;
    }

    /// Starts the drain if it is due at `now`; returns whether it started (the caller then
    /// holds its window at the pipe).
    pub fn start_if_due(&mut self, now: Time) -> bool {
        match *self {
            DrainCheck::Scheduled { due, interval } if now >= due => {
                *self = DrainCheck::Draining { since: now, interval };
                true
            }
            _ => false,
        }
    }

    /// Starts the drain at `now`, whenever it was due, if competitive mode has one scheduled
    /// (a coupled group drains together: [`crate::Controller::drain_with_group`]); returns
    /// whether it started. Nothing in the default mode or while a drain is under way.
    pub fn start_now(&mut self, now: Time) -> bool {
        match *self {
            DrainCheck::Scheduled { interval, .. } => {
                *self = DrainCheck::Draining { since: now, interval };
                true
            }
            _ => false,
        }
    }

    /// Whether the acknowledgement of a packet sent at `sent_at` ends the drain: the packet
    /// was sent after the hold began. The caller then asks the mode detector whether the queue
    /// emptied.
    pub fn ends_with(&self, sent_at: Time) -> bool {
        matches!(*self, DrainCheck::Draining { since, .. } if sent_at >= since)
    }

    /// The drain that just ended found a competitor's queue: wait twice as long (at most
    /// `longest`) before the next one.
    pub fn on_competitor(&mut self, now: Time, longest: Duration) {
        if let DrainCheck::Draining { interval, .. } = *self {
            let interval = interval.saturating_mul(2).min(longest);
            *self = DrainCheck::Scheduled { due: now + interval, interval };
        }
    }
}

/// The window, in packets, that the path holds at the current rate without a queue:
/// `cwnd x minRTT / RTTstanding` (never above `cwnd`).
pub fn pipe_window(cwnd: f64, min_rtt: Duration, standing_rtt: Duration) -> f64 {
    let standing = standing_rtt.as_secs_f64();
    if standing <= 0.0 {
        return cwnd;
    }
    (cwnd * min_rtt.as_secs_f64() / standing).min(cwnd)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn at(v: u64) -> Time {
        Time::from_millis(v)
    }

    #[test]
    fn drains_one_mode_window_after_competitive_mode_begins() {
        let mut c = DrainCheck::Idle;
        c.on_competitive(at(1000), ms(100));
        assert!(!c.start_if_due(at(1099)));
        assert!(!c.holds());
        assert!(c.start_if_due(at(1100)));
        assert!(c.holds());
        // Only a packet sent after the hold began ends it.
        assert!(!c.ends_with(at(1099)));
        assert!(c.ends_with(at(1100)));
        // Entering competitive mode again while a check runs changes nothing.
        c.on_competitive(at(1150), ms(100));
        assert!(c.holds());
    }

    #[test]
    fn a_confirmed_competitor_doubles_the_wait_up_to_the_longest() {
        let mut c = DrainCheck::Idle;
        c.on_competitive(at(0), ms(100));
        let mut now = 0;
        let mut waits = Vec::new();
        for _ in 0..10 {
            let DrainCheck::Scheduled { due, interval } = c else { panic!("{c:?}") };
            waits.push(interval.as_millis());
            now = now.max(due.as_micros() / 1000);
            assert!(c.start_if_due(at(now)));
            now += 30; // the drain takes an RTT
            c.on_competitor(at(now), ms(1000));
        }
        assert_eq!(waits, [100, 200, 400, 800, 1000, 1000, 1000, 1000, 1000, 1000]);
        // A longest wait below the first is still obeyed.
        let mut c = DrainCheck::Idle;
        c.on_competitive(at(0), ms(100));
        assert!(c.start_if_due(at(100)));
        c.on_competitor(at(130), ms(50));
        assert_eq!(c, DrainCheck::Scheduled { due: at(180), interval: ms(50) });
    }

    #[test]
    fn a_drain_can_start_early_in_competitive_mode_only() {
        let mut c = DrainCheck::Idle;
        assert!(!c.start_now(at(10)), "default mode: nothing to drain");
        c.on_competitive(at(0), ms(100));
        assert!(c.start_now(at(10)), "before it was due");
        assert_eq!(c, DrainCheck::Draining { since: at(10), interval: ms(100) });
        assert!(!c.start_now(at(20)), "one drain at a time");
    }

    #[test]
    fn the_default_mode_cancels_the_check() {
        let mut c = DrainCheck::Idle;
        c.on_competitive(at(0), ms(100));
        c.on_default();
        assert_eq!(c, DrainCheck::Idle);
        assert!(!c.start_if_due(at(1_000_000)));
    }

    #[test]
    fn the_pipe_is_the_window_without_its_queue() {
        // 60 packets over a 60 ms standing RTT on a 20 ms path: 20 packets in the pipe.
        assert!((pipe_window(60.0, ms(20), ms(60)) - 20.0).abs() < 1e-9);
        assert_eq!(pipe_window(60.0, ms(20), ms(20)), 60.0);
        assert_eq!(pipe_window(60.0, ms(30), ms(20)), 60.0, "never above the window");
        assert_eq!(pipe_window(60.0, ms(20), Duration::ZERO), 60.0);
    }
}
