//! [`RttEstimator`]: the one round-trip-time estimator every controller and transport shares.
//!
//! From the RTT samples of one flow it keeps:
//! - the smoothed RTT and its variation, RFC 6298 section 2: the first sample `R` sets
//!   `SRTT = R`, `RTTVAR = R / 2` (2.2); each later one sets `RTTVAR = (1 - beta) RTTVAR +
//!   beta |SRTT - R|`, then `SRTT = (1 - alpha) SRTT + alpha R` (2.3, RTTVAR first, from the
//!   old SRTT), with `beta = 1/4` and `alpha = 1/8` unless a controller asks for another
//!   `alpha` (Copa's reference smooths with 1/16; [`RttEstimator::with_srtt_gain`]);
//! - [`rfc6298_rto`](RttEstimator::rfc6298_rto), `SRTT + 4 RTTVAR` (2.3, with `K = 4` and the
//!   clock granularity `G` taken as zero); the caller applies its own floor and back-off;
//! - the latest sample;
//! - the minimum RTT, over the whole flow ([`MinRttWindow::Forever`]: Sprout, Verus) or over a
//!   sliding window of `max(floor, n x min RTT)` ([`MinRttWindow::Scaled`]: Copa, NSDI 2018
//!   section 2.1, "the minimum over a long period, 10 s or 20 RTTs"), with exact
//!   [`min_within`](RttEstimator::min_within) queries over shorter spans (Copa's standing RTT).
//!
//! Arithmetic is on [`Duration`]s (whole nanoseconds), so every user sees the same values for
//! the same samples. Samples are taken as given: a controller that needs a floor (a rate
//! divided by an RTT) applies it before [`on_sample`](RttEstimator::on_sample).

use std::time::Duration;

use crate::time::Time;
use crate::windowed::WindowedFilter;

/// RFC 6298 section 2.3: `alpha = 1/8`, written as its divisor.
pub const RFC6298_SRTT_GAIN_DIVISOR: u32 = 8;
/// RFC 6298 section 2.3: `beta = 1/4`, written as its divisor.
pub const RFC6298_RTTVAR_GAIN_DIVISOR: u32 = 4;
/// RFC 6298 section 2.3: `K = 4`.
pub const RFC6298_K: u32 = 4;

/// Over how long the minimum RTT is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MinRttWindow {
    /// Over every sample since the estimator was made (or reset). Keeps one value.
    Forever,
    /// Over the last `max(floor, rtts x the minimum RTT)` (the minimum as of the previous
    /// sample, or the sample itself for the first one). Keeps the samples that can still be
    /// a minimum in that window (a monotonic deque, amortised constant time per sample).
    Scaled {
        /// The shortest window.
        floor: Duration,
        /// The window in minimum RTTs, when that is longer than `floor`.
        rtts: u32,
    },
}

/// Where the minimum lives, by [`MinRttWindow`].
#[derive(Clone, Debug)]
enum MinTracker {
    Forever(Option<Duration>),
    Scaled { floor: Duration, rtts: u32, samples: WindowedFilter<Duration>, min: Option<Duration> },
}

/// Smoothed RTT, RTT variation, latest and minimum RTT of one flow.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt_gain_divisor: u32,
    srtt: Option<Duration>,
    rttvar: Duration,
    latest: Option<Duration>,
    min: MinTracker,
    /// Keep samples for `min_within` queries over up to this many smoothed RTTs.
    retain_srtts: u32,
}

impl Default for RttEstimator {
    fn default() -> RttEstimator {
        RttEstimator::new()
    }
}

impl RttEstimator {
    /// No sample yet; RFC 6298 gains, minimum over the whole flow.
    pub fn new() -> RttEstimator {
        RttEstimator {
            srtt_gain_divisor: RFC6298_SRTT_GAIN_DIVISOR,
            srtt: None,
            rttvar: Duration::ZERO,
            latest: None,
            min: MinTracker::Forever(None),
            retain_srtts: 0,
        }
    }

    /// Smooths with `alpha = 1 / divisor` instead of RFC 6298's 1/8 (at least 1).
    pub fn with_srtt_gain(mut self, divisor: u32) -> RttEstimator {
        self.srtt_gain_divisor = divisor.max(1);
        self
    }

    /// Takes the minimum RTT over `window`.
    pub fn with_min_window(mut self, window: MinRttWindow) -> RttEstimator {
        self.min = match window {
            MinRttWindow::Forever => MinTracker::Forever(None),
            MinRttWindow::Scaled { floor, rtts } => {
                MinTracker::Scaled { floor, rtts, samples: WindowedFilter::min(), min: None }
            }
        };
        self
    }

    /// With a [`MinRttWindow::Scaled`] window, also keeps the samples of the last `srtts`
    /// smoothed RTTs, so that [`min_within`](Self::min_within) is exact for spans up to that
    /// long even when they exceed the minimum's window.
    pub fn retaining_srtts(mut self, srtts: u32) -> RttEstimator {
        self.retain_srtts = srtts;
        self
    }

    /// Records one RTT sample taken at `now` (RFC 6298 sections 2.2 and 2.3).
    pub fn on_sample(&mut self, now: Time, rtt: Duration) {
        self.latest = Some(rtt);
        let divisor = self.srtt_gain_divisor;
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(srtt) => {
                let beta = RFC6298_RTTVAR_GAIN_DIVISOR;
                self.rttvar = (self.rttvar * (beta - 1) + srtt.abs_diff(rtt)) / beta;
                // srtt + (rtt - srtt) / divisor, without a signed difference.
                self.srtt = Some((srtt * (divisor - 1) + rtt) / divisor);
            }
        }
        let retain = self.srtt.unwrap_or_default().saturating_mul(self.retain_srtts);
        match &mut self.min {
            MinTracker::Forever(min) => *min = Some(min.map_or(rtt, |m| m.min(rtt))),
            MinTracker::Scaled { floor, rtts, samples, min } => {
                samples.push(now, rtt);
                let span = (*floor).max(min.unwrap_or(rtt).saturating_mul(*rtts));
                samples.expire(now, span.max(retain));
                *min = samples.best_within(now, span);
            }
        }
    }

    /// The smoothed RTT, once there is a sample.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// The RTT variation (zero before the first sample).
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// `SRTT + 4 RTTVAR` (RFC 6298 section 2.3), once there is a sample; floors, the initial
    /// value and back-off are the caller's.
    pub fn rfc6298_rto(&self) -> Option<Duration> {
        self.srtt.map(|s| s + self.rttvar * RFC6298_K)
    }

    /// The most recent sample.
    pub fn latest(&self) -> Option<Duration> {
        self.latest
    }

    /// The minimum RTT over the estimator's [`MinRttWindow`], as of the latest sample.
    pub fn min_rtt(&self) -> Option<Duration> {
        match &self.min {
            MinTracker::Forever(min) | MinTracker::Scaled { min, .. } => *min,
        }
    }

    /// The minimum of the samples taken at or after `now - span`. Exact with a
    /// [`MinRttWindow::Scaled`] window for spans up to the window (or the retained smoothed
    /// RTTs); `None` with [`MinRttWindow::Forever`], which keeps no history.
    pub fn min_within(&self, now: Time, span: Duration) -> Option<Duration> {
        match &self.min {
            MinTracker::Forever(_) => None,
            MinTracker::Scaled { samples, .. } => samples.best_within(now, span),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn rfc6298_first_and_later_samples() {
        let mut e = RttEstimator::new();
        assert_eq!((e.srtt(), e.latest(), e.min_rtt(), e.rfc6298_rto()), (None, None, None, None));
        // 2.2: SRTT = R, RTTVAR = R / 2.
        e.on_sample(Time::ZERO, ms(100));
        assert_eq!((e.srtt(), e.rttvar()), (Some(ms(100)), ms(50)));
        assert_eq!(e.rfc6298_rto(), Some(ms(300)));
        // 2.3: RTTVAR = 3/4 x 50 + 1/4 x |100 - 180| = 57.5; SRTT = 7/8 x 100 + 1/8 x 180 = 110.
        e.on_sample(Time::from_millis(1), ms(180));
        assert_eq!(e.rttvar(), Duration::from_micros(57_500));
        assert_eq!(e.srtt(), Some(ms(110)));
        assert_eq!(e.rfc6298_rto(), Some(ms(340)));
        assert_eq!(e.latest(), Some(ms(180)));
        assert_eq!(e.min_rtt(), Some(ms(100)));
        assert_eq!(e.min_within(Time::from_millis(1), ms(10)), None, "Forever keeps no history");
    }

    #[test]
    fn another_gain() {
        let mut e = RttEstimator::new().with_srtt_gain(16);
        e.on_sample(Time::ZERO, ms(100));
        e.on_sample(Time::from_millis(1), ms(260));
        // 100 + (260 - 100) / 16 = 110.
        assert_eq!(e.srtt(), Some(ms(110)));
    }

    #[test]
    fn scaled_window_expires_old_minima() {
        let window = MinRttWindow::Scaled { floor: Duration::from_secs(10), rtts: 20 };
        let mut e = RttEstimator::new().with_min_window(window);
        e.on_sample(Time::from_millis(0), ms(20));
        e.on_sample(Time::from_millis(5_000), ms(30));
        assert_eq!(e.min_rtt(), Some(ms(20)));
        e.on_sample(Time::from_millis(10_001), ms(35));
        assert_eq!(e.min_rtt(), Some(ms(30)));
        assert_eq!(e.min_within(Time::from_millis(10_001), ms(1)), Some(ms(35)));
        // 20 x 1 s = 20 s beats the 10 s floor.
        let mut e = RttEstimator::new().with_min_window(window);
        e.on_sample(Time::ZERO, Duration::from_secs(1));
        e.on_sample(Time::from_millis(15_000), Duration::from_secs(2));
        assert_eq!(e.min_rtt(), Some(Duration::from_secs(1)));
    }

    #[test]
    fn retained_srtts_keep_short_queries_exact() {
        // A 1 ms floor and 1 RTT window: without retention the 50 ms sample 100 ms ago is gone.
        let window = MinRttWindow::Scaled { floor: ms(1), rtts: 1 };
        let mut e = RttEstimator::new().with_min_window(window).retaining_srtts(4);
        e.on_sample(Time::from_millis(0), ms(50));
        e.on_sample(Time::from_millis(100), ms(60));
        // srtt ~51 ms, 4 x srtt ~205 ms retained.
        assert_eq!(e.min_within(Time::from_millis(100), ms(150)), Some(ms(50)));
        assert_eq!(e.min_rtt(), Some(ms(60)));
    }

    proptest! {
        /// The minimum over the whole flow is the smallest sample; SRTT stays within the range
        /// of the samples; the RTO is never below SRTT.
        #[test]
        fn estimates_stay_within_the_samples(samples in proptest::collection::vec(1u64..10_000_000, 1..200)) {
            let mut e = RttEstimator::new();
            for (i, &us) in samples.iter().enumerate() {
                e.on_sample(Time::from_micros(i as u64), Duration::from_micros(us));
                let lo = Duration::from_micros(*samples[..=i].iter().min().unwrap());
                let hi = Duration::from_micros(*samples[..=i].iter().max().unwrap());
                prop_assert_eq!(e.min_rtt(), Some(lo));
                let srtt = e.srtt().unwrap();
                prop_assert!(srtt >= lo.saturating_sub(Duration::from_nanos(i as u64 + 1)) && srtt <= hi);
                prop_assert!(e.rfc6298_rto().unwrap() >= srtt);
            }
        }
    }
}
