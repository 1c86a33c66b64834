//! Copa's RTT history: smoothed RTT, minimum RTT, standing RTT and the recent extremes used
//! for mode detection (Arun and Balakrishnan, NSDI 2018, sections 2.1 and 4; genericCC's
//! "markovian" sender for the window lengths). The smoothing and the minimum are the shared
//! [`RttEstimator`]'s; this adds Copa's own queries and the maximum for mode detection.

use std::time::Duration;

use crate::rtt::{MinRttWindow, RttEstimator};
use crate::time::Time;
use crate::windowed::WindowedFilter;

/// Gain of the smoothed RTT's exponentially weighted moving average (reference: 1/16).
pub const SRTT_GAIN_DIVISOR: u32 = 16;
/// The minimum RTT is taken over at least this long...
pub const MIN_RTT_WINDOW_FLOOR: Duration = Duration::from_secs(10);
/// ... or over this many minimum RTTs, whichever is longer.
pub const MIN_RTT_WINDOW_RTTS: u32 = 20;
/// Mode detection looks at the last this-many smoothed RTTs (paper section 4: "the last
/// 5 RTTs" in the text, 4 x srtt in the reference).
pub const MODE_WINDOW_SRTTS: u32 = 4;
/// RTT samples below this are raised to it, so that rates derived from them stay finite.
pub const RTT_FLOOR: Duration = Duration::from_micros(1);

/// The RTT estimates Copa derives from its samples.
#[derive(Clone, Debug)]
pub struct RttHistory {
    estimator: RttEstimator,
    maxs: WindowedFilter<Duration>,
}

impl Default for RttHistory {
    fn default() -> RttHistory {
        RttHistory::new()
    }
}

impl RttHistory {
    /// No sample yet.
    pub fn new() -> RttHistory {
        let window = MinRttWindow::Scaled { floor: MIN_RTT_WINDOW_FLOOR, rtts: MIN_RTT_WINDOW_RTTS };
        let estimator = RttEstimator::new()
            .with_srtt_gain(SRTT_GAIN_DIVISOR)
            .with_min_window(window)
            .retaining_srtts(MODE_WINDOW_SRTTS);
        RttHistory { estimator, maxs: WindowedFilter::max() }
    }

    /// Records one RTT sample taken at `now`.
    pub fn on_sample(&mut self, now: Time, rtt: Duration) {
        let rtt = rtt.max(RTT_FLOOR);
        self.estimator.on_sample(now, rtt);
        self.maxs.push(now, rtt);
        self.maxs.expire(now, self.mode_span());
    }

    /// The span mode detection looks at: 4 x srtt.
    pub fn mode_span(&self) -> Duration {
        self.estimator.srtt().unwrap_or_default().saturating_mul(MODE_WINDOW_SRTTS)
    }

    /// The span the minimum RTT is currently taken over: max(10 s, 20 x the minimum RTT).
    pub fn min_rtt_window(&self) -> Duration {
        let min = self.estimator.min_rtt().unwrap_or_default();
        MIN_RTT_WINDOW_FLOOR.max(min.saturating_mul(MIN_RTT_WINDOW_RTTS))
    }

    /// The smoothed RTT (EWMA, gain 1/16).
    pub fn srtt(&self) -> Option<Duration> {
        self.estimator.srtt()
    }

    /// The minimum RTT over the last max(10 s, 20 x minimum RTT).
    pub fn min_rtt(&self) -> Option<Duration> {
        self.estimator.min_rtt()
    }

    /// The standing RTT: the minimum over the last srtt / 2 (paper section 2.1: it filters out
    /// the ACK compression and jitter that a single sample carries).
    pub fn standing_rtt(&self, now: Time) -> Option<Duration> {
        let srtt = self.estimator.srtt()?;
        self.estimator.min_within(now, srtt / 2)
    }

    /// The minimum RTT over the last 4 x srtt (for mode detection).
    pub fn recent_min(&self, now: Time) -> Option<Duration> {
        self.estimator.min_within(now, self.mode_span())
    }

    /// The maximum RTT over the last 4 x srtt (for mode detection).
    pub fn recent_max(&self, now: Time) -> Option<Duration> {
        self.maxs.best_within(now, self.mode_span())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn srtt_is_an_ewma_with_gain_one_sixteenth() {
        let mut h = RttHistory::new();
        h.on_sample(Time::from_millis(0), ms(100));
        assert_eq!(h.srtt(), Some(ms(100)));
        h.on_sample(Time::from_millis(1), ms(260));
        // 100 + (260 - 100) / 16 = 110
        assert_eq!(h.srtt(), Some(ms(110)));
    }

    #[test]
    fn standing_and_minimum_use_their_own_windows() {
        let mut h = RttHistory::new();
        // srtt stays near 40 ms; standing window is srtt / 2, about 20 ms.
        for (t, rtt) in [(0, 40), (100, 41), (200, 42), (300, 43), (310, 39), (330, 44), (340, 45)] {
            h.on_sample(Time::from_millis(t), ms(rtt));
        }
        let now = Time::from_millis(340);
        assert_eq!(h.min_rtt(), Some(ms(39)));
        // Samples in [320, 340]: 44 and 45.
        let srtt = h.srtt().unwrap();
        assert!(srtt > ms(40) && srtt < ms(42), "{srtt:?}");
        assert_eq!(h.standing_rtt(now), Some(ms(44)));
        // Mode window 4 x srtt (about 164 ms): samples from t >= 176 ms.
        assert_eq!(h.recent_min(now), Some(ms(39)));
        assert_eq!(h.recent_max(now), Some(ms(45)));
    }

    #[test]
    fn minimum_expires_after_ten_seconds() {
        let mut h = RttHistory::new();
        h.on_sample(Time::from_millis(0), ms(20));
        h.on_sample(Time::from_millis(5_000), ms(30));
        assert_eq!(h.min_rtt(), Some(ms(20)));
        h.on_sample(Time::from_millis(10_001), ms(35));
        assert_eq!(h.min_rtt(), Some(ms(30)));
    }

    #[test]
    fn zero_samples_are_floored() {
        let mut h = RttHistory::new();
        h.on_sample(Time::ZERO, Duration::ZERO);
        assert_eq!(h.min_rtt(), Some(RTT_FLOOR));
    }
}
