//! What a flow of a [`FlowGroup`](super::FlowGroup) is given and how its controller's rate is
//! read: [`Share`], [`calculated_rate`] (RFC 8699's `CC_R`, window-based controllers through
//! `rate = cwnd / RTT`), and [`scale`], the decision that carries a share when the controller
//! does not adopt it itself.

use std::time::Duration;

use crate::event::Decision;

/// The rate a flow's group assigned to it (RFC 8699's `FSE_R(f)`), with the flow's smoothed
/// RTT that turns it into a window (`cwnd = FSE_R x RTT`, [`super::window_of_rate`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Share {
    /// Bytes per second.
    pub rate: f64,
    /// The flow's smoothed RTT, the one its calculated rate was read with.
    pub rtt: Duration,
}

impl Share {
    /// The window that carries this share over one RTT, bytes (rounded down).
    pub fn window(&self) -> u64 {
        super::window_of_rate(self.rate, self.rtt)
    }
}

/// A window at or above this is "no window" (the `fixed` controller's `u64::MAX`): the flow's
/// rate is then its pacing rate alone.
const UNBOUNDED_WINDOW: u64 = u64::MAX / 2;

/// The rate a controller's `decision` amounts to over `rtt` (RFC 8699's calculated rate
/// `CC_R`), bytes per second: the smaller of `window / RTT` (section 5.3.1's rule for
/// window-based controllers, [`super::rate_of_window`]) and the pacing rate. `None` when the
/// decision limits nothing (no window and no pacing rate) or the RTT is not known yet (zero):
/// such a flow has no rate to share and stays out of its group.
pub fn calculated_rate(decision: Decision, rtt: Duration) -> Option<f64> {
    let by_window = (decision.window < UNBOUNDED_WINDOW && !rtt.is_zero())
        .then(|| super::rate_of_window(decision.window, rtt));
    let by_pacing = decision.pacing_rate.map(|r| r as f64);
    match (by_window, by_pacing) {
        (Some(w), Some(p)) => Some(w.min(p)),
        (w, p) => w.or(p),
    }
}

/// `decision` with its window and pacing rate multiplied by `factor` (the share over the rate
/// the controller calculated): the decision in force for a flow whose controller did not take
/// its share over ([`crate::Controller::adopt_share`]'s default). An unbounded window stays
/// unbounded; the window never drops below `min_window` bytes (one packet), a pacing rate
/// never below 1 byte/s.
pub fn scale(decision: Decision, factor: f64, min_window: u64) -> Decision {
    let factor = if factor.is_finite() { factor.max(0.0) } else { 1.0 };
    let window = if decision.window >= UNBOUNDED_WINDOW {
        decision.window
    } else {
        ((decision.window as f64 * factor) as u64).max(min_window)
    };
    let pacing_rate = decision.pacing_rate.map(|r| ((r as f64 * factor) as u64).max(1));
    Decision { window, pacing_rate }
}

/// Whether a share differs from the rate the controller calculated by more than rounding
/// (a millionth): a share within that is the controller's own rate and changes nothing, so a
/// group of one flow leaves its controller exactly as it would run alone.
pub fn differs(share: f64, calculated: f64) -> bool {
    (share - calculated).abs() > 1e-6 * calculated.abs().max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS100: Duration = Duration::from_millis(100);

    #[test]
    fn the_rate_of_a_window_is_window_over_rtt_capped_by_pacing() {
        let d = Decision { window: 100_000, pacing_rate: None };
        assert_eq!(calculated_rate(d, MS100), Some(1_000_000.0));
        let d = Decision { window: 100_000, pacing_rate: Some(400_000) };
        assert_eq!(calculated_rate(d, MS100), Some(400_000.0));
        let d = Decision { window: u64::MAX, pacing_rate: Some(400_000) };
        assert_eq!(calculated_rate(d, Duration::ZERO), Some(400_000.0), "rate-based: no RTT needed");
        assert_eq!(calculated_rate(Decision { window: u64::MAX, pacing_rate: None }, MS100), None);
        assert_eq!(calculated_rate(Decision { window: 100_000, pacing_rate: None }, Duration::ZERO), None);
    }

    #[test]
    fn scaling_keeps_unbounded_windows_and_floors() {
        let d = Decision { window: 100_000, pacing_rate: Some(2_000_000) };
        assert_eq!(scale(d, 0.25, 1448), Decision { window: 25_000, pacing_rate: Some(500_000) });
        assert_eq!(scale(d, 0.0, 1448), Decision { window: 1448, pacing_rate: Some(1) });
        let inf = Decision { window: u64::MAX, pacing_rate: Some(1000) };
        assert_eq!(scale(inf, 3.0, 1448), Decision { window: u64::MAX, pacing_rate: Some(3000) });
        assert_eq!(scale(d, f64::NAN, 1448), d);
    }

    #[test]
    fn rounding_is_no_difference() {
        assert!(!differs(1e6 + 1e-4, 1e6));
        assert!(differs(1e6 + 10.0, 1e6));
        assert!(differs(0.5, 0.0) && !differs(0.0, 0.0));
    }
}
