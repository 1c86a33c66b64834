//! Windowed minimum and maximum filters over timestamped samples.
//!
//! [`WindowedFilter`] answers "the smallest (or largest) sample seen in the last `span`" exactly,
//! for any `span` up to the retention the caller keeps, in amortised constant time per sample.
//! It keeps a monotonic deque: a sample that is older than a newer sample which is at least as
//! good (no larger for a minimum, no smaller for a maximum) can never be the answer again,
//! because every window ending now that contains the older sample also contains the newer one.
//! So the deque is ordered by time from front to back and strictly improving from back to
//! front, and the answer for a window is its first sample inside that window.
//!
//! Copa (Arun and Balakrishnan, NSDI 2018, section 2.1) uses one such filter for its minimum
//! RTT, its standing RTT and its mode detection, each with a different span.

use std::collections::VecDeque;
use std::time::Duration;

use crate::time::Time;

/// Which extremum a [`WindowedFilter`] tracks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extremum {
    /// The smallest sample.
    Min,
    /// The largest sample.
    Max,
}

/// The exact minimum or maximum of the samples in a sliding time window.
#[derive(Clone, Debug)]
pub struct WindowedFilter<V> {
    kind: Extremum,
    samples: VecDeque<(Time, V)>,
}

impl<V: Copy + PartialOrd> WindowedFilter<V> {
    /// An empty filter tracking `kind`.
    pub fn new(kind: Extremum) -> WindowedFilter<V> {
        WindowedFilter { kind, samples: VecDeque::new() }
    }

    /// An empty filter tracking the minimum.
    pub fn min() -> WindowedFilter<V> {
        WindowedFilter::new(Extremum::Min)
    }

    /// An empty filter tracking the maximum.
    pub fn max() -> WindowedFilter<V> {
        WindowedFilter::new(Extremum::Max)
    }

    /// Which extremum this filter tracks.
    pub fn kind(&self) -> Extremum {
        self.kind
    }

    /// Adds a sample taken at `at`. Samples must come in non-decreasing time order; a sample
    /// older than the newest one kept is treated as taken at the newest one's time.
    pub fn push(&mut self, at: Time, value: V) {
        let at = match self.samples.back() {
            Some(&(newest, _)) if newest > at => newest,
            _ => at,
        };
        while let Some(&(_, kept)) = self.samples.back() {
            if self.at_least_as_good(value, kept) {
                self.samples.pop_back();
            } else {
                break;
            }
        }
        self.samples.push_back((at, value));
    }

    /// Forgets samples taken more than `keep` before `now`. Queries over spans longer than
    /// `keep` then see only what is left.
    pub fn expire(&mut self, now: Time, keep: Duration) {
        let cutoff = now.saturating_sub(keep);
        while let Some(&(at, _)) = self.samples.front() {
            if at < cutoff {
                self.samples.pop_front();
            } else {
                break;
            }
        }
    }

    /// The extremum of the samples taken at or after `now - span`, if there is any.
    pub fn best_within(&self, now: Time, span: Duration) -> Option<V> {
        let cutoff = now.saturating_sub(span);
        let first_inside = self.samples.partition_point(|&(at, _)| at < cutoff);
        self.samples.get(first_inside).map(|&(_, v)| v)
    }

    /// The extremum of every sample kept.
    pub fn best(&self) -> Option<V> {
        self.samples.front().map(|&(_, v)| v)
    }

    /// The most recent sample kept (always the most recent sample pushed, if any).
    pub fn latest(&self) -> Option<V> {
        self.samples.back().map(|&(_, v)| v)
    }

    /// How many samples the filter holds (at most the number pushed since they expired).
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether the filter holds no sample.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Forgets every sample.
    pub fn clear(&mut self) {
        self.samples.clear();
    }

    fn at_least_as_good(&self, new: V, old: V) -> bool {
        match self.kind {
            Extremum::Min => new <= old,
            Extremum::Max => new >= old,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(v: u64) -> Time {
        Time::from_millis(v)
    }

    #[test]
    fn min_over_spans() {
        let mut f = WindowedFilter::min();
        for (t, v) in [(0, 50), (10, 30), (20, 40), (30, 35), (40, 60)] {
            f.push(ms(t), v);
        }
        // Samples 50 (t=0) and 40 (t=20) are dominated by later, smaller ones.
        assert_eq!(f.len(), 3);
        assert_eq!(f.best(), Some(30));
        assert_eq!(f.best_within(ms(40), Duration::from_millis(40)), Some(30));
        assert_eq!(f.best_within(ms(40), Duration::from_millis(25)), Some(35));
        assert_eq!(f.best_within(ms(40), Duration::from_millis(5)), Some(60));
        assert_eq!(f.best_within(ms(100), Duration::from_millis(5)), None);
        assert_eq!(f.latest(), Some(60));
        f.expire(ms(40), Duration::from_millis(20));
        assert_eq!(f.best(), Some(35));
    }

    #[test]
    fn max_over_spans() {
        let mut f = WindowedFilter::max();
        for (t, v) in [(0, 5), (10, 9), (20, 7), (30, 8)] {
            f.push(ms(t), v);
        }
        assert_eq!(f.best(), Some(9));
        assert_eq!(f.best_within(ms(30), Duration::from_millis(15)), Some(8));
        f.expire(ms(30), Duration::from_millis(15));
        assert_eq!(f.best(), Some(8));
        f.clear();
        assert!(f.is_empty());
        assert_eq!(f.kind(), Extremum::Max);
    }

    #[test]
    fn out_of_order_time_is_clamped() {
        let mut f = WindowedFilter::min();
        f.push(ms(10), 5);
        f.push(ms(3), 7);
        // Both count as taken at 10 ms.
        assert_eq!(f.best_within(ms(10), Duration::ZERO), Some(5));
        assert_eq!(f.latest(), Some(7));
        f.expire(ms(10), Duration::ZERO);
        assert_eq!(f.len(), 2);
    }

    proptest! {
        /// The filter agrees with a brute-force scan for random samples, spans and expiries.
        #[test]
        fn agrees_with_brute_force(
            steps in proptest::collection::vec((0u64..20, 0u32..1000, 0u64..200, any::<bool>()), 1..200),
            keep in 1u64..300,
        ) {
            let mut min = WindowedFilter::min();
            let mut max = WindowedFilter::max();
            let mut all: Vec<(Time, u32)> = Vec::new();
            let mut now = 0u64;
            for (dt, v, span, is_max_query) in steps {
                now += dt;
                let t = ms(now);
                min.push(t, v);
                max.push(t, v);
                all.push((t, v));
                min.expire(t, Duration::from_millis(keep));
                max.expire(t, Duration::from_millis(keep));
                let span = span.min(keep);
                let cutoff = t.saturating_sub(Duration::from_millis(span));
                let inside = all.iter().filter(|(at, _)| *at >= cutoff).map(|&(_, v)| v);
                if is_max_query {
                    prop_assert_eq!(max.best_within(t, Duration::from_millis(span)), inside.max());
                } else {
                    prop_assert_eq!(min.best_within(t, Duration::from_millis(span)), inside.min());
                }
            }
        }
    }
}
