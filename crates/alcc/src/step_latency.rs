//! How long the driver thread spends per flow step and per wake-up: [`StepLatency`] in
//! [`DriverStats`](crate::DriverStats), recorded into HdrHistograms (the `hdrhistogram` crate,
//! 1 % resolution) so that percentiles over millions of steps cost a few kilobytes.
//!
//! A step is one [`Flow::step`](crate::flow::Flow::step): feedback read, controller fed,
//! chunks written. A wake-up ("round") is everything the thread does between two `epoll_wait`
//! returns: the steps of every due flow, one after the other; with many flows due at once, a
//! round is the latency the last of them sees.

use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;

/// Longest duration recorded as itself (a minute); longer ones count as a minute.
const MAX_NS: u64 = 60_000_000_000;

/// Percentiles of one kind of driver work, since the driver started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Percentiles {
    /// How many were recorded.
    pub count: u64,
    /// Median.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// 99.9th percentile.
    pub p999: Duration,
    /// Longest.
    pub max: Duration,
}

/// The driver thread's step and wake-up durations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepLatency {
    /// One flow's step.
    pub step: Percentiles,
    /// One wake-up: all the steps of the flows due at once.
    pub round: Percentiles,
}

/// The histograms the driver thread records into and others read.
pub(crate) struct LatencyRecorder {
    hists: Mutex<(Histogram<u64>, Histogram<u64>)>,
}

fn histogram() -> Histogram<u64> {
    // Bounds are constants within what the crate accepts (low >= 1, high >= 2 low, 2 digits).
    Histogram::new_with_bounds(1, MAX_NS, 2).expect("valid histogram bounds")
}

fn percentiles(h: &Histogram<u64>) -> Percentiles {
    let at = |q: f64| Duration::from_nanos(h.value_at_quantile(q));
    Percentiles {
        count: h.len(),
        p50: at(0.5),
        p99: at(0.99),
        p999: at(0.999),
        max: Duration::from_nanos(h.max()),
    }
}

impl LatencyRecorder {
    /// Empty histograms.
    pub fn new() -> LatencyRecorder {
        LatencyRecorder { hists: Mutex::new((histogram(), histogram())) }
    }

    /// Records one wake-up: the durations of its steps, nanoseconds, and its own.
    pub fn record_round(&self, steps_ns: &[u64], round_ns: u64) {
        let mut h = self.hists.lock().unwrap_or_else(|p| p.into_inner());
        for &ns in steps_ns {
            h.0.saturating_record(ns.clamp(1, MAX_NS));
        }
        h.1.saturating_record(round_ns.clamp(1, MAX_NS));
    }

    /// The percentiles so far.
    pub fn snapshot(&self) -> StepLatency {
        let h = self.hists.lock().unwrap_or_else(|p| p.into_inner());
        StepLatency { step: percentiles(&h.0), round: percentiles(&h.1) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_follow_what_was_recorded() {
        let r = LatencyRecorder::new();
        assert_eq!(r.snapshot().step.count, 0);
        let steps: Vec<u64> = (1..=1000).map(|i| i * 1000).collect();
        r.record_round(&steps, 5_000_000);
        r.record_round(&[0, u64::MAX], 1);
        let s = r.snapshot();
        assert_eq!(s.step.count, 1002);
        assert_eq!(s.round.count, 2);
        let near = |d: Duration, us: u64| d.as_nanos().abs_diff(u128::from(us) * 1000) <= u128::from(us) * 10;
        assert!(near(s.step.p50, 500), "{s:?}");
        assert!(near(s.step.p99, 991), "{s:?}");
        // A step longer than a minute counts as a minute.
        assert!(near(s.step.max, 60_000_000), "{s:?}");
        assert!(near(s.round.max, 5000), "{s:?}");
    }
}
