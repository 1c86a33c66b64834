//! The delay profile (paper section 4.2): `wList[w]`, the smoothed RTT of packets sent at
//! window `w`, and the curve fitted through it every second.
//!
//! `curve(d)` maps a target delay to a window, `curve_inv(w)` a window to its delay. Before
//! the first fit both read the raw `wList` (as the reference does); afterwards the fitted
//! [`FittedCurve`].

use super::constants::{EWMA_GAIN, MAX_WINDOW};
use super::fit::{FitError, FittedCurve};

/// The reference's first divisor `N` of the basis size `max_w / N`.
pub const INITIAL_BASIS_SPACING: f64 = 15.0;

/// The reference lowers `N` while `max_w / N` is below this.
pub const MIN_POINTS_PER_BASIS: f64 = 5.0;

/// Outcome of [`DelayProfile::refit`].
#[derive(Debug, Clone, PartialEq)]
pub enum Refit {
    /// A new curve replaced the previous one.
    Fitted,
    /// The fit failed; the previous curve (or the raw profile) stays in use.
    KeptPrevious(FitError),
    /// The profile spans fewer than 5 windows: the reference restarts slow start.
    TooNarrow,
}

/// `wList` and its fitted curve.
#[derive(Clone, Debug, Default)]
pub struct DelayProfile {
    /// `raw[w]`: EWMA of the RTT (ms) of packets sent at window `w`; NaN when never seen.
    raw: Vec<f64>,
    fitted: Option<FittedCurve>,
    /// Windows at or above this are dropped at the next refit (the reference's `curveStop`).
    stop: Option<usize>,
    /// `N`: windows per basis function; starts at 15 and is only ever lowered (the reference
    /// keeps it across refits of one slow-start session). `None` before the first refit.
    spacing: Option<f64>,
}

impl DelayProfile {
    /// An empty profile.
    pub fn new() -> DelayProfile {
        DelayProfile::default()
    }

    /// Records the RTT of a packet sent at window `w`: `wList[w] = 7/8 wList[w] + 1/8 rtt`,
    /// or `rtt` for the first sample of that window.
    pub fn record(&mut self, w: usize, rtt_ms: f64) {
        if !rtt_ms.is_finite() {
            return;
        }
        let w = w.min(MAX_WINDOW - 1);
        if self.raw.len() <= w {
            self.raw.resize(w + 1, f64::NAN);
        }
        let old = self.raw[w];
        self.raw[w] = if old.is_nan() { rtt_ms } else { (1.0 - EWMA_GAIN) * old + EWMA_GAIN * rtt_ms };
    }

    /// `wList[w]`, if any packet sent at window `w` has been acknowledged.
    pub fn raw(&self, w: usize) -> Option<f64> {
        self.raw.get(w).copied().filter(|v| !v.is_nan())
    }

    /// `wList[floor(w)]` exactly as the reference indexes it: `None` for a window no packet was
    /// sent at (or a negative or non-finite `w`).
    pub fn raw_at(&self, w: f64) -> Option<f64> {
        if !(w.is_finite() && w >= 0.0) {
            return None;
        }
        self.raw(w as usize)
    }

    /// Whether a fitted curve is in use.
    pub fn has_fit(&self) -> bool {
        self.fitted.is_some()
    }

    /// The fitted curve, if any.
    pub fn fitted(&self) -> Option<&FittedCurve> {
        self.fitted.as_ref()
    }

    /// Drops windows at or above `stop` at the next refit (after a loss ends slow start, the
    /// reference keeps only windows below `max(100, w_lost)`).
    pub fn limit_to(&mut self, stop: usize) {
        self.stop = Some(stop);
    }

    /// `curve(d)`: the window whose delay is just below `d`, scanning up from `w = 2` for the
    /// first window whose delay exceeds `d` and taking the one before it.
    ///
    /// Without a fit, a target above every recorded delay is lowered in steps of delta2 until
    /// some window exceeds it (the reference's recursion), and an empty profile gives 1.
    /// With a fit, `None` means no window below [`MAX_WINDOW`] reaches `d`.
    pub fn curve(&self, d: f64) -> Option<f64> {
        if let Some(fit) = &self.fitted {
            return fit.window_for(d).map(|w| w as f64);
        }
        if d.is_nan() {
            return None;
        }
        let first_above = |d: f64| (2..self.raw.len()).find(|&w| self.raw[w] > d);
        if let Some(w) = first_above(d) {
            return Some((w - 1) as f64);
        }
        let highest = self.raw.iter().skip(2).copied().filter(|v| !v.is_nan()).fold(f64::NAN, f64::max);
        if highest.is_nan() {
            return Some(1.0);
        }
        // The smallest k with d - k * delta2 < highest.
        let step = super::constants::DELTA2_MS;
        let k = ((d - highest) / step).floor() + 1.0;
        Some(first_above(d - k * step).map_or(1.0, |w| (w - 1) as f64))
    }

    /// `curve_inv(w)`: the delay of window `w`. Without a fit, `wList[floor(w)]`, or when that
    /// window was never seen, the nearest recorded window below it, else above it; `None` for
    /// an empty profile.
    pub fn curve_inv(&self, w: f64) -> Option<f64> {
        if let Some(fit) = &self.fitted {
            return Some(fit.delay_at(w));
        }
        let at = if w.is_nan() || w < 0.0 { 0 } else { (w as usize).min(MAX_WINDOW - 1) };
        let below = (0..=at.min(self.raw.len().saturating_sub(1))).rev().find_map(|i| self.raw(i));
        below.or_else(|| (at..self.raw.len()).find_map(|i| self.raw(i)))
    }

    /// Refits the curve through `(w, wList[w])`, `w >= 1` (every second after slow start).
    ///
    /// As the reference: `M = floor(max_w / N)` basis functions, where `N` (15 at first) is
    /// lowered by one while `max_w / N < 5` and never raised again in this session; when `N`
    /// falls below 1 (fewer than 5 windows) slow start restarts.
    pub fn refit(&mut self) -> Refit {
        if let Some(stop) = self.stop.take() {
            if self.raw.len() > stop {
                self.raw.truncate(stop);
            }
        }
        let (xs, ys): (Vec<f64>, Vec<f64>) =
            (1..self.raw.len()).filter_map(|w| self.raw(w).map(|d| (w as f64, d))).unzip();
        let max_w = xs.last().copied().unwrap_or(0.0);
        let mut spacing = self.spacing.unwrap_or(INITIAL_BASIS_SPACING);
        while max_w / spacing < MIN_POINTS_PER_BASIS {
            spacing -= 1.0;
            if spacing < 1.0 {
                return Refit::TooNarrow;
            }
        }
        self.spacing = Some(spacing);
        match FittedCurve::fit(&xs, &ys, (max_w / spacing) as usize) {
            Ok(curve) => {
                self.fitted = Some(curve);
                Refit::Fitted
            }
            Err(e) => Refit::KeptPrevious(e),
        }
    }

    /// `N`, the windows per basis function of the last refit.
    pub fn basis_spacing(&self) -> Option<f64> {
        self.spacing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(points: &[(usize, f64)]) -> DelayProfile {
        let mut p = DelayProfile::new();
        for &(w, d) in points {
            p.record(w, d);
        }
        p
    }

    #[test]
    fn record_is_an_ewma_per_window() {
        let mut p = profile(&[(3, 80.0)]);
        assert_eq!(p.raw(3), Some(80.0));
        p.record(3, 160.0);
        assert_eq!(p.raw(3), Some(90.0));
        assert_eq!(p.raw(2), None);
        p.record(MAX_WINDOW + 5, 1.0);
        assert_eq!(p.raw(MAX_WINDOW - 1), Some(1.0));
        p.record(4, f64::NAN);
        assert_eq!(p.raw(4), None);
    }

    #[test]
    fn raw_curve_and_inverse() {
        // 40 ms up to w = 4, then 50, 60, 70 (w = 5, 6, 7); w = 8 never seen, w = 9 at 90.
        let p = profile(&[
            (1, 40.0),
            (2, 40.0),
            (3, 40.0),
            (4, 40.0),
            (5, 50.0),
            (6, 60.0),
            (7, 70.0),
            (9, 90.0),
        ]);
        assert!(!p.has_fit());
        assert_eq!(p.curve(30.0), Some(1.0)); // w = 2 exceeds 30
        assert_eq!(p.curve(45.0), Some(4.0));
        assert_eq!(p.curve(65.0), Some(6.0));
        assert_eq!(p.curve(75.0), Some(8.0)); // w = 9 is the first above 75
                                              // Above everything: 95 is lowered by 2 ms steps to 89, the first below the highest (90).
        assert_eq!(p.curve(95.0), Some(8.0));
        assert_eq!(p.curve_inv(6.0), Some(60.0));
        assert_eq!(p.curve_inv(6.9), Some(60.0));
        assert_eq!(p.curve_inv(8.0), Some(70.0)); // nearest below
        assert_eq!(p.curve_inv(500.0), Some(90.0));
        assert_eq!(p.curve_inv(0.0), Some(40.0)); // nearest above
        assert_eq!(DelayProfile::new().curve(50.0), Some(1.0));
        assert_eq!(DelayProfile::new().curve_inv(5.0), None);
    }

    #[test]
    fn refit_needs_five_windows_and_replaces_the_raw_curve() {
        let mut p = profile(&[(1, 40.0), (2, 40.0), (3, 41.0), (4, 42.0)]);
        assert_eq!(p.refit(), Refit::TooNarrow);
        let mut p = DelayProfile::new();
        for w in 1..=100 {
            p.record(w, 40.0 + w as f64); // a straight line: the fit reproduces it
        }
        assert_eq!(p.refit(), Refit::Fitted);
        assert!(p.has_fit());
        assert!((p.curve_inv(50.0).unwrap() - 90.0).abs() < 1e-6);
        assert_eq!(p.curve(90.5), Some(50.0));
        assert_eq!(p.curve(150.0), Some(110.0)); // straight continuation
        assert_eq!(p.basis_spacing(), Some(15.0));
    }

    #[test]
    fn the_basis_spacing_is_only_ever_lowered() {
        // 40 windows: N falls from 15 to 8 (40 / 8 = 5); later 300 windows keep N = 8
        // (M = 37 basis functions, where a fresh profile would use N = 15, M = 20).
        let mut p = DelayProfile::new();
        for w in 1..=40 {
            p.record(w, 40.0 + w as f64);
        }
        assert_eq!(p.refit(), Refit::Fitted);
        assert_eq!(p.basis_spacing(), Some(8.0));
        for w in 41..=300 {
            p.record(w, 40.0 + w as f64);
        }
        assert_eq!(p.refit(), Refit::Fitted);
        assert_eq!(p.basis_spacing(), Some(8.0));
    }

    #[test]
    fn failed_refit_keeps_the_previous_curve() {
        let mut p = DelayProfile::new();
        for w in 1..=10 {
            p.record(w, 10.0 * w as f64);
        }
        assert_eq!(p.refit(), Refit::Fitted);
        let before = p.fitted().cloned();
        p.limit_to(2); // keeps only w = 1: one point cannot be fitted
        assert_eq!(p.refit(), Refit::TooNarrow);
        assert_eq!(p.fitted().cloned(), before);
        let mut q = profile(&[(5, 40.0)]); // max_w = 5, N = 1, one point
        assert!(matches!(q.refit(), Refit::KeptPrevious(FitError::TooFewPoints(1))));
        assert!(!q.has_fit());
    }

    #[test]
    fn limit_drops_high_windows_once() {
        let mut p = DelayProfile::new();
        for w in 1..=300 {
            p.record(w, 40.0 + 0.1 * w as f64);
        }
        p.limit_to(100);
        assert_eq!(p.refit(), Refit::Fitted);
        assert_eq!(p.fitted().unwrap().max_window(), 99);
        assert_eq!(p.raw(150), None);
        p.record(150, 60.0);
        assert_eq!(p.refit(), Refit::Fitted);
        assert_eq!(p.fitted().unwrap().max_window(), 150);
    }
}
