//! Virtual time. Algorithms never read a clock: every event carries `now`, a [`Time`].
//!
//! A [`Time`] is a point on a monotonic microsecond axis whose origin the caller chooses
//! (the simulator starts at zero; the engine uses the process's monotonic clock). Spans
//! between points are plain [`std::time::Duration`]s.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};
use std::time::Duration;

use serde::Serialize;

/// A point in time, in microseconds since an origin chosen by the caller.
/// Serialized as the number of microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Time(u64);

impl Time {
    /// The origin.
    pub const ZERO: Time = Time(0);
    /// The latest representable point; useful as "never".
    pub const MAX: Time = Time(u64::MAX);

    /// A point `us` microseconds after the origin.
    pub const fn from_micros(us: u64) -> Time {
        Time(us)
    }

    /// A point `ms` milliseconds after the origin (saturating).
    pub const fn from_millis(ms: u64) -> Time {
        Time(ms.saturating_mul(1000))
    }

    /// Microseconds since the origin.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// Milliseconds since the origin, as a float.
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    /// Seconds since the origin, as a float.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// The span from `earlier` to `self`, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Time) -> Duration {
        Duration::from_micros(self.0.saturating_sub(earlier.0))
    }

    /// `self + d`, saturating at [`Time::MAX`].
    pub fn saturating_add(self, d: Duration) -> Time {
        Time(self.0.saturating_add(duration_micros(d)))
    }

    /// `self - d`, saturating at the origin.
    pub fn saturating_sub(self, d: Duration) -> Time {
        Time(self.0.saturating_sub(duration_micros(d)))
    }
}

/// A duration in whole microseconds, saturating at `u64::MAX`.
pub fn duration_micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl Add<Duration> for Time {
    type Output = Time;
    /// Saturating addition: time never wraps.
    fn add(self, d: Duration) -> Time {
        self.saturating_add(d)
    }
}

impl AddAssign<Duration> for Time {
    fn add_assign(&mut self, d: Duration) {
        *self = self.saturating_add(d);
    }
}

impl Sub<Time> for Time {
    type Output = Duration;
    /// Saturating difference: zero when `rhs` is later than `self`.
    fn sub(self, rhs: Time) -> Duration {
        self.saturating_since(rhs)
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3}ms", self.as_millis_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Time::from_millis(5);
        assert_eq!(t.as_micros(), 5_000);
        assert_eq!(t + Duration::from_micros(7), Time::from_micros(5_007));
        assert_eq!(Time::from_millis(1) - t, Duration::ZERO);
        assert_eq!(t - Time::from_millis(2), Duration::from_millis(3));
        assert_eq!(Time::MAX + Duration::from_secs(1), Time::MAX);
        assert_eq!(Time::ZERO.saturating_sub(Duration::from_secs(1)), Time::ZERO);
    }
}
