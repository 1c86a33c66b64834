//! The fitted delay profile: a smoothing spline through the points `(w, wList[w])`,
//! tabulated at whole windows.
//!
//! # Smoothing, against the reference
//!
//! The reference fits a penalized regression spline (ALGLIB `spline1dfitpenalized`,
//! `rho = 2.0`) with `M = max_w / N` basis functions, `N = min(15, floor(max_w / 5))`
//! (it starts at 15 and is lowered while `max_w / N < 5`). Its smoothing is dominated by the
//! coarse basis: one degree of freedom per `N` windows, so it resolves wiggles no shorter than
//! about `2N` windows.
//!
//! We fit a cubic smoothing spline instead (`csaps`, which minimises
//! `p * sum (y_i - f(x_i))^2 + (1 - p) * integral f''^2`). On unit-spaced data its frequency
//! response is `1 / (1 + lambda * omega^4)` with `lambda = (1 - p) / p`, so choosing
//! `lambda = (N / pi)^4` puts the half-power cut-off at `omega = pi / N`, the same resolution
//! as the reference's basis. We do not translate ALGLIB's extra `rho` penalty (its scaling is
//! internal to ALGLIB); the basis size is the larger effect.
//!
//! # Tabulation and extrapolation
//!
//! `curve(d)` only ever evaluates whole windows (the reference scans `w = 2, 3, ...`), so the
//! fit is evaluated once per refit at `w = 1 ..= max_w` and kept as a table; `curve_inv(w)`
//! interpolates linearly between table points. Beyond `max_w` the curve continues as a
//! straight line with the slope of its last table step (never negative): the reference
//! extrapolates the end polynomial piece, which a penalized fit makes nearly linear, while a
//! cubic extrapolation of a noisy end could turn down and make every target delay reachable.

use thiserror::Error;

use super::constants::MAX_WINDOW;

/// Why a refit produced no curve. The caller keeps the previous curve.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum FitError {
    /// Fewer than two profile points.
    #[error("delay profile has {0} points, need at least 2")]
    TooFewPoints(usize),
    /// The spline library refused the data.
    #[error("smoothing spline failed: {0}")]
    Spline(String),
    /// The fit produced a non-finite value.
    #[error("smoothing spline produced a non-finite value")]
    NonFinite,
}

/// The smoothing parameter `p` whose resolution matches a regression spline with one basis
/// function per `spacing` windows (see the module documentation).
pub fn smoothing_for_spacing(spacing: f64) -> f64 {
    let lambda = (spacing.max(1.0) / std::f64::consts::PI).powi(4);
    1.0 / (1.0 + lambda)
}

/// A fitted profile: delay (ms) as a function of the window (packets).
#[derive(Clone, Debug, PartialEq)]
pub struct FittedCurve {
    /// `table[i]` is the fitted delay at window `i + 1`.
    table: Vec<f64>,
    /// `running_max[i]` is the largest fitted delay over windows `2 ..= i + 1` (for `curve`).
    running_max: Vec<f64>,
    /// Slope (ms per packet) of the straight continuation beyond the table, `>= 0`.
    tail_slope: f64,
}

impl FittedCurve {
    /// Fits a smoothing spline with parameter `smooth` through `(xs[i], ys[i])` (windows
    /// strictly increasing, at least 1) and tabulates it at `1 ..= max(xs)`.
    pub fn fit(xs: &[f64], ys: &[f64], smooth: f64) -> Result<FittedCurve, FitError> {
        if xs.len() < 2 || xs.len() != ys.len() {
            return Err(FitError::TooFewPoints(xs.len().min(ys.len())));
        }
        let max_w = xs.iter().copied().fold(1.0_f64, f64::max).min((MAX_WINDOW - 1) as f64) as usize;
        let grid: Vec<f64> = (1..=max_w).map(|w| w as f64).collect();
        let spline = csaps::CubicSmoothingSpline::new(xs, ys)
            .with_smooth(smooth.clamp(0.0, 1.0))
            .make()
            .map_err(|e| FitError::Spline(e.to_string()))?;
        let values = spline.evaluate(&grid).map_err(|e| FitError::Spline(e.to_string()))?;
        let table: Vec<f64> = values.iter().copied().collect();
        FittedCurve::from_table(table)
    }

    /// A curve from its values at windows `1, 2, ...` (at least one value, all finite).
    pub fn from_table(table: Vec<f64>) -> Result<FittedCurve, FitError> {
        if table.is_empty() {
            return Err(FitError::TooFewPoints(0));
        }
        if table.iter().any(|v| !v.is_finite()) {
            return Err(FitError::NonFinite);
        }
        let mut running_max = Vec::with_capacity(table.len());
        let mut best = f64::NEG_INFINITY;
        for (i, &v) in table.iter().enumerate() {
            // The scan of `curve` starts at window 2 (index 1).
            if i >= 1 {
                best = best.max(v);
            }
            running_max.push(best);
        }
        let n = table.len();
        let tail_slope = if n >= 2 { (table[n - 1] - table[n - 2]).max(0.0) } else { 0.0 };
        Ok(FittedCurve { table, running_max, tail_slope })
    }

    /// The largest window of the table.
    pub fn max_window(&self) -> usize {
        self.table.len()
    }

    /// `curve_inv(w)`: the fitted delay at window `w` (linear between whole windows, a
    /// straight continuation beyond the table, the value at 1 below 1).
    pub fn delay_at(&self, w: f64) -> f64 {
        let n = self.table.len();
        let last = self.table[n - 1];
        if w.is_nan() || w <= 1.0 {
            return self.table[0];
        }
        if w >= n as f64 {
            return last + self.tail_slope * (w - n as f64);
        }
        let lo = w.floor() as usize; // 1 <= lo < n
        let frac = w - lo as f64;
        self.table[lo - 1] * (1.0 - frac) + self.table[lo] * frac
    }

    /// `curve(d)`: one less than the first window `w >= 2` whose fitted delay exceeds `d`,
    /// or `None` if no window below [`MAX_WINDOW`] does (the reference then restarts).
    pub fn window_for(&self, d: f64) -> Option<usize> {
        if d.is_nan() {
            return None;
        }
        let n = self.table.len();
        if n >= 2 && self.running_max[n - 1] > d {
            // First index i >= 1 with running_max[i] > d; window = i + 1; answer = i.
            let i = 1 + self.running_max[1..].partition_point(|&m| m <= d);
            return Some(i);
        }
        // Beyond the table: last + slope * (w - n) > d for the first w > n.
        if self.tail_slope <= 0.0 {
            return None;
        }
        let last = self.table[n - 1];
        let steps = ((d - last) / self.tail_slope).floor().max(0.0) + 1.0;
        let first = n as f64 + steps;
        if first >= MAX_WINDOW as f64 {
            return None;
        }
        Some(first as usize - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smoothing_matches_spacing() {
        // spacing 15: lambda = (15 / pi)^4 = 519.7
        let p = smoothing_for_spacing(15.0);
        assert!((1.0 / p - 1.0 - (15.0 / std::f64::consts::PI).powi(4)).abs() < 1e-6);
        assert!(smoothing_for_spacing(1.0) > smoothing_for_spacing(5.0));
        assert!(smoothing_for_spacing(0.0) < 1.0);
    }

    #[test]
    fn table_lookups() {
        // delay 40 ms up to w = 4, then +10 ms per packet: 40 40 40 40 50 60
        let c = FittedCurve::from_table(vec![40.0, 40.0, 40.0, 40.0, 50.0, 60.0]).unwrap();
        assert_eq!(c.delay_at(0.5), 40.0);
        assert_eq!(c.delay_at(4.5), 45.0);
        assert_eq!(c.delay_at(6.0), 60.0);
        assert_eq!(c.delay_at(8.0), 80.0); // tail slope 10
        assert_eq!(c.window_for(39.0), Some(1)); // w = 2 already exceeds
        assert_eq!(c.window_for(40.0), Some(4)); // w = 5 is the first above 40
        assert_eq!(c.window_for(55.0), Some(5));
        assert_eq!(c.window_for(60.0), Some(6)); // 70 at w = 7
        assert_eq!(c.window_for(75.0), Some(7)); // 80 at w = 8
        assert_eq!(c.window_for(80.0), Some(8));
        assert_eq!(c.window_for(f64::NAN), None);
        assert_eq!(c.window_for(1e9), None); // beyond MAX_WINDOW
    }

    #[test]
    fn flat_tail_cannot_map_high_delays() {
        let c = FittedCurve::from_table(vec![40.0, 50.0, 50.0]).unwrap();
        assert_eq!(c.window_for(45.0), Some(1));
        assert_eq!(c.window_for(50.0), None);
        assert!(FittedCurve::from_table(vec![]).is_err());
        assert_eq!(FittedCurve::from_table(vec![1.0, f64::INFINITY]), Err(FitError::NonFinite));
    }

    #[test]
    fn curve_scans_from_two_with_a_non_monotone_profile() {
        // A dip after a bump: the first exceedance wins, like the reference's upward scan.
        let c = FittedCurve::from_table(vec![10.0, 30.0, 20.0, 40.0]).unwrap();
        assert_eq!(c.window_for(25.0), Some(1));
        assert_eq!(c.window_for(35.0), Some(3));
    }

    #[test]
    fn spline_through_a_line_reproduces_it() {
        let xs: Vec<f64> = (1..=200).map(f64::from).collect();
        let ys: Vec<f64> = xs.iter().map(|w| 40.0 + 0.5 * w).collect();
        let c = FittedCurve::fit(&xs, &ys, smoothing_for_spacing(15.0)).unwrap();
        assert_eq!(c.max_window(), 200);
        for w in [1.0, 50.0, 123.5, 200.0] {
            assert!((c.delay_at(w) - (40.0 + 0.5 * w)).abs() < 1e-6, "{w}");
        }
        assert!((c.delay_at(210.0) - 145.0).abs() < 1e-6);
        assert_eq!(c.window_for(100.0), Some(120)); // f(121) = 100.5 > 100
    }

    #[test]
    fn spline_smooths_noise() {
        // A hockey stick (flat 40 ms to w = 100, then +1 ms per packet) with +-5 ms of
        // alternating noise: the fit should stay within 2 ms of the clean shape away from the knee.
        let xs: Vec<f64> = (1..=300).map(f64::from).collect();
        let clean = |w: f64| if w <= 100.0 { 40.0 } else { 40.0 + (w - 100.0) };
        let ys: Vec<f64> =
            xs.iter().enumerate().map(|(i, &w)| clean(w) + if i % 2 == 0 { 5.0 } else { -5.0 }).collect();
        let c = FittedCurve::fit(&xs, &ys, smoothing_for_spacing(15.0)).unwrap();
        for w in [20.0, 60.0, 160.0, 250.0] {
            assert!((c.delay_at(w) - clean(w)).abs() < 2.0, "w={w}: {}", c.delay_at(w));
        }
    }

    #[test]
    fn fit_rejects_bad_input() {
        assert_eq!(FittedCurve::fit(&[1.0], &[2.0], 0.5), Err(FitError::TooFewPoints(1)));
        assert!(matches!(
            FittedCurve::fit(&[2.0, 1.0, 3.0], &[1.0, 2.0, 3.0], 0.5),
            Err(FitError::Spline(_))
        ));
    }
}
