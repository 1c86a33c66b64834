//! Copa's velocity parameter (Arun and Balakrishnan, NSDI 2018, section 2.2).
//!
//! Each ACK moves the window by `v / (delta x cwnd)` packets towards the target. Once per RTT
//! the window is compared with its value one RTT earlier: if it moved in the same direction as
//! in the previous RTT, `v` doubles (the paper waits for three such RTTs; the reference
//! "markovian" sender doubles at once, and so do we); otherwise `v` returns to 1. If `v`
//! exceeds `cwnd x delta` it is halved, and it never goes below 1.

use crate::time::Time;

/// Which way the window moved over one RTT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// It grew.
    Up,
    /// It shrank.
    Down,
    /// It did not move (or there is no previous RTT to compare with).
    Still,
}

impl Direction {
    fn between(before: f64, after: f64) -> Direction {
        if after > before {
            Direction::Up
        } else if after < before {
            Direction::Down
        } else {
            Direction::Still
        }
    }
}

/// The velocity and what it needs to remember from the previous RTT.
#[derive(Clone, Debug, PartialEq)]
pub struct Velocity {
    v: f64,
    direction: Direction,
    cwnd_at_last_update: f64,
}

impl Velocity {
    /// Velocity 1, no direction yet, the window now being `cwnd` packets.
    pub fn new(cwnd: f64) -> Velocity {
        Velocity { v: 1.0, direction: Direction::Still, cwnd_at_last_update: cwnd }
    }

    /// The current velocity (at least 1).
    pub fn value(&self) -> f64 {
        self.v
    }

    /// The direction the window moved in over the last completed RTT.
    pub fn direction(&self) -> Direction {
        self.direction
    }

    /// Once per RTT: compares `cwnd` (packets) with the window one RTT ago and updates `v`.
    pub fn on_round(&mut self, cwnd: f64, delta: f64) {
        let direction = Direction::between(self.cwnd_at_last_update, cwnd);
        if direction != Direction::Still && direction == self.direction {
            self.v *= 2.0;
        } else {
            self.v = 1.0;
        }
        if self.v > cwnd * delta {
            self.v /= 2.0;
        }
        self.v = self.v.max(1.0);
        self.direction = direction;
        self.cwnd_at_last_update = cwnd;
    }
}

/// Fires once per RTT: at the first event at least one RTT after the previous firing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoundClock {
    next: Option<Time>,
}

impl RoundClock {
    /// A clock that fires at the first call of [`tick`](Self::tick).
    pub fn new() -> RoundClock {
        RoundClock { next: None }
    }

    /// Whether a round has ended at `now`; if so, the next one ends `rtt` from now.
    pub fn tick(&mut self, now: Time, rtt: std::time::Duration) -> bool {
        match self.next {
            Some(next) if now < next => false,
            _ => {
                self.next = Some(now + rtt);
                true
            }
        }
    }
}

impl Default for RoundClock {
    fn default() -> RoundClock {
        RoundClock::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn doubles_while_the_direction_holds_and_resets_on_a_change() {
        let mut v = Velocity::new(100.0);
        v.on_round(110.0, 0.5); // first Up: no previous direction
        assert_eq!((v.value(), v.direction()), (1.0, Direction::Up));
        v.on_round(120.0, 0.5);
        assert_eq!(v.value(), 2.0);
        v.on_round(130.0, 0.5);
        assert_eq!(v.value(), 4.0);
        v.on_round(140.0, 0.5);
        assert_eq!(v.value(), 8.0);
        v.on_round(135.0, 0.5); // turned down
        assert_eq!((v.value(), v.direction()), (1.0, Direction::Down));
        v.on_round(130.0, 0.5);
        assert_eq!(v.value(), 2.0);
        v.on_round(130.0, 0.5); // did not move
        assert_eq!((v.value(), v.direction()), (1.0, Direction::Still));
    }

    #[test]
    fn halves_when_above_cwnd_times_delta() {
        let mut v = Velocity::new(10.0);
        v.on_round(11.0, 0.5);
        v.on_round(12.0, 0.5);
        v.on_round(13.0, 0.5); // 4 <= 6.5
        assert_eq!(v.value(), 4.0);
        v.on_round(14.0, 0.5); // 8 > 7: halved to 4
        assert_eq!(v.value(), 4.0);
        // A tiny window cannot push v below 1.
        let mut v = Velocity::new(2.0);
        v.on_round(2.5, 0.1);
        v.on_round(3.0, 0.1); // 2 > 0.3: halved to 1
        assert_eq!(v.value(), 1.0);
    }

    #[test]
    fn round_clock_fires_once_per_rtt() {
        let mut c = RoundClock::new();
        let rtt = Duration::from_millis(40);
        assert!(c.tick(Time::from_millis(0), rtt));
        assert!(!c.tick(Time::from_millis(39), rtt));
        assert!(c.tick(Time::from_millis(40), rtt));
        assert!(!c.tick(Time::from_millis(79), rtt));
        assert!(c.tick(Time::from_millis(100), rtt));
    }
}
