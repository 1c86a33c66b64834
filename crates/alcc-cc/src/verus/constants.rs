//! Verus's constants, as the reference implementation sets them (Zaki et al., SIGCOMM 2015,
//! section 4, and `verus.hpp` of the authors' code). Delays are in milliseconds.

use std::time::Duration;

/// Length of one Verus epoch (paper section 4: "epoch of 5 ms").
pub const EPOCH: Duration = Duration::from_millis(5);
/// [`EPOCH`] in milliseconds, for the delay arithmetic of rule 6.
pub const EPOCH_MS: f64 = 5.0;
/// delta1: the step by which the target delay falls while the delay rises (rule 4).
pub const DELTA1_MS: f64 = 1.0;
/// delta2: the step by which the target delay rises, or falls past the ratio threshold (rule 4).
pub const DELTA2_MS: f64 = 2.0;
/// Multiplicative decrease applied to the window of a lost packet (paper section 4.4).
pub const MULTIPLICATIVE_DECREASE: f64 = 0.7;
/// The default ratio threshold R of `Dmax / Dmin` (the reference's `VERUS_R`).
pub const DEFAULT_R: f64 = 6.0;
/// How often the delay profile is refitted.
pub const REFIT_INTERVAL: Duration = Duration::from_secs(1);
/// Slow start ends when an RTT sample exceeds this.
pub const SLOW_START_EXIT_RTT_MS: f64 = 500.0;
/// Slow start also ends on a loss once the window exceeds this many packets.
pub const SLOW_START_LOSS_EXIT_WINDOW: f64 = 20.0;
/// A packet reported missing (a later one was acknowledged) counts as lost after this long.
pub const MISSING_EXPIRY: Duration = Duration::from_millis(150);
/// Timeout armed at the start of each slow-start session.
pub const INITIAL_TIMEOUT: Duration = Duration::from_millis(1000);
/// Lower bound of the loss timeout `clamp(5 x RTT, 150, 1000)` ms.
pub const MIN_TIMEOUT_MS: f64 = 150.0;
/// Upper bound of the loss timeout.
pub const MAX_TIMEOUT_MS: f64 = 1000.0;
/// How many RTTs the loss timeout waits.
pub const TIMEOUT_RTTS: f64 = 5.0;
/// When the target delay sits at `Dmin` with fewer than 2 packets in flight, `Dmin` rises by this.
pub const DMIN_BUMP_MS: f64 = 10.0;
/// The largest window (packets) the delay profile holds (the reference's `MAX_W_DELAY_CURVE`).
pub const MAX_WINDOW: usize = 40_000;
/// A packet counts as sent at a window-limited moment when the peak flight is within this many
/// packets of W (see `usage`; our addition for transports that hold the flight below W).
pub const WINDOW_USE_SLACK: f64 = 1.0;
/// In slow start, an ACK of a packet that was not window-limited caps W at this many times the
/// used flight (RFC 7661 section 4.3's idea: the window stays near twice what was used).
pub const UNUSED_WINDOW_CAP: f64 = 2.0;
/// The delay the reference's raw profile `wList` holds for a window no packet was sent at
/// (its initial value); read as a target delay it lies below every delay (see `variant`).
pub const UNSET_DELAY_MS: f64 = -1.0;
/// Dmin before any RTT sample (the reference's initial value).
pub const INITIAL_DMIN_MS: f64 = 1000.0;
/// Gain of the EWMA of the per-window profile delays (`dTbar`, the smoothed RTT, is the shared
/// [`RttEstimator`](crate::rtt::RttEstimator)'s, whose RFC 6298 gain is the same 1/8).
pub const EWMA_GAIN: f64 = 1.0 / 8.0;
/// Weight of the previous `DmaxLast` in its smoothing (rule 7).
pub const DMAX_LAST_KEEP: f64 = 0.2;

/// The loss timeout for an RTT sample: `clamp(5 x rtt, 150, 1000)` ms.
pub fn loss_timeout(rtt_ms: f64) -> Duration {
    let ms = (TIMEOUT_RTTS * rtt_ms).clamp(MIN_TIMEOUT_MS, MAX_TIMEOUT_MS);
    // `clamp` on a NaN returns NaN; fall back to the upper bound.
    let ms = if ms.is_nan() { MAX_TIMEOUT_MS } else { ms };
    Duration::from_micros((ms * 1000.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_timeout_is_clamped() {
        assert_eq!(loss_timeout(10.0), Duration::from_millis(150));
        assert_eq!(loss_timeout(40.0), Duration::from_millis(200));
        assert_eq!(loss_timeout(199.9), Duration::from_micros(999_500));
        assert_eq!(loss_timeout(1000.0), Duration::from_millis(1000));
        assert_eq!(loss_timeout(f64::NAN), Duration::from_millis(1000));
    }
}
