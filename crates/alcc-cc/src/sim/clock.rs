//! Virtual time's rules, shared by the one-flow ([`scenario`](super::scenario)) and the
//! several-flows ([`flows`](super::flows)) simulators: how a run moves from one deadline to the
//! next, and when a timer that already fired may fire again.

use std::time::Duration;

use crate::time::Time;

/// Steps at one instant after which the simulator assumes a stuck deadline.
const STALL_LIMIT: u32 = 100_000;

/// Moves a run's virtual time to each next deadline.
#[derive(Default)]
pub(crate) struct Advance {
    steps_at_this_instant: u32,
}

impl Advance {
    /// Moves `now` to the deadline `next`; false once `next` reaches `end` (the run is over).
    /// A component that keeps asking for a deadline it does not act on would stall virtual
    /// time: after [`STALL_LIMIT`] steps at one instant, time moves on by 1 µs.
    pub(crate) fn to(&mut self, now: &mut Time, mut next: Time, end: Time) -> bool {
        if next <= *now {
            self.steps_at_this_instant += 1;
            if self.steps_at_this_instant > STALL_LIMIT {
                next = *now + Duration::from_micros(1);
            }
        }
        if next >= end {
            return false;
        }
        if next > *now {
            self.steps_at_this_instant = 0;
            *now = next;
        }
        true
    }
}

/// The deadline of `timer` at `now`: a timer that already fired at `now` (`fired_at`) is not
/// fired again until time moves on.
pub(crate) fn after_fired(now: Time, timer: Option<Time>, fired_at: Option<Time>) -> Option<Time> {
    let t = timer?;
    if fired_at == Some(now) && t <= now {
        Some(now + Duration::from_micros(1))
    } else {
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_moves_to_each_deadline_and_past_a_stuck_one() {
        let (mut a, end) = (Advance::default(), Time::from_millis(10));
        let mut now = Time::ZERO;
        assert!(a.to(&mut now, Time::from_millis(2), end));
        assert_eq!(now, Time::from_millis(2));
        let stuck = now;
        for _ in 0..STALL_LIMIT {
            assert!(a.to(&mut now, stuck, end));
        }
        assert_eq!(now, Time::from_millis(2), "still at the stuck instant");
        assert!(a.to(&mut now, stuck, end));
        assert_eq!(now, Time::from_millis(2) + Duration::from_micros(1), "moved on by 1 µs");
        assert!(!a.to(&mut now, end, end), "the run is over");
        let t = Time::from_millis(3);
        assert_eq!(after_fired(t, Some(t), Some(t)), Some(t + Duration::from_micros(1)));
        assert_eq!(after_fired(t, Some(t), None), Some(t));
        assert_eq!(after_fired(t, None, Some(t)), None);
    }
}
