//! The fitted delay profile: the reference's penalized regression spline
//! ([`PenalizedSpline`]) through the points `(w, wList[w])`, tabulated at whole windows.
//!
//! The reference fits `spline1dfitpenalized(x, y, M = max_w / N, rho = 2.0)` (ALGLIB), with
//! `N` starting at 15 and lowered while `max_w / N < 5` (see
//! [`DelayProfile::refit`](super::profile::DelayProfile::refit)). We fit the same spline.
//!
//! # Tabulation and extrapolation
//!
//! `curve(d)` only ever evaluates whole windows (the reference scans `w = 2, 3, ...`), so the
//! fit is evaluated once per refit at `w = 1 ..= max_w` and kept as a table; `curve_inv(w)`
//! interpolates linearly between table points. Beyond `max_w` the curve continues as a
//! straight line with the slope of its last table step, as the reference's spline does
//! (ALGLIB adds nodes that make it linear outside the data); a slope below zero counts as zero,
//! so that no target delay is reachable there and the caller restarts slow start, as the
//! reference's scan to 40000 windows does.

use thiserror::Error;

use super::constants::MAX_WINDOW;
use super::penalized::PenalizedSpline;

/// The reference's penalty exponent (`rho` of `spline1dfitpenalized`, "a moderate amount of
/// nonlinearity").
pub const PENALTY_RHO: f64 = 2.0;

/// The fewest basis functions of a fit (ALGLIB's minimum).
pub const MIN_BASIS: usize = 4;

/// Why a refit produced no curve. The caller keeps the previous curve.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum FitError {
    /// Fewer than two profile points.
    #[error("delay profile has {0} points, need at least 2")]
    TooFewPoints(usize),
    /// The spline could not be fitted.
    #[error("penalized spline failed: {0}")]
    Spline(String),
    /// The fit produced a non-finite value.
    #[error("penalized spline produced a non-finite value")]
    NonFinite,
}

/// The size of one fit: what bounds its work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FitWork {
    /// Basis functions (nodes) `M`.
    pub nodes: usize,
    /// Entries of the factorized normal equations (at most `7 M`; see [`PenalizedSpline`]).
    pub system_nonzeros: usize,
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
    /// The fit's size (zero for a curve made from a table).
    work: FitWork,
}

impl FittedCurve {
    /// Fits the reference's penalized spline with `basis` basis functions (at least
    /// [`MIN_BASIS`]) through `(xs[i], ys[i])` (windows strictly increasing, at least 1) and
    /// tabulates it at `1 ..= max(xs)`.
    pub fn fit(xs: &[f64], ys: &[f64], basis: usize) -> Result<FittedCurve, FitError> {
        if xs.len() < 2 || xs.len() != ys.len() {
            return Err(FitError::TooFewPoints(xs.len().min(ys.len())));
        }
        let spline = PenalizedSpline::fit(xs, ys, basis.max(MIN_BASIS), PENALTY_RHO)?;
        let max_w = xs.iter().copied().fold(1.0_f64, f64::max).min((MAX_WINDOW - 1) as f64) as usize;
        let table: Vec<f64> = (1..=max_w).map(|w| spline.value(w as f64)).collect();
        let work = FitWork { nodes: spline.nodes(), system_nonzeros: spline.system_nonzeros() };
        Ok(FittedCurve { work, ..FittedCurve::from_table(table)? })
    }

    /// The fit's size.
    pub fn work(&self) -> FitWork {
        self.work
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
        Ok(FittedCurve { table, running_max, tail_slope, work: FitWork::default() })
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
        let c = FittedCurve::fit(&xs, &ys, 13).unwrap();
        assert_eq!(c.max_window(), 200);
        for w in [1.0, 50.0, 123.5, 200.0] {
            assert!((c.delay_at(w) - (40.0 + 0.5 * w)).abs() < 1e-6, "{w}");
        }
        assert!((c.delay_at(210.0) - 145.0).abs() < 1e-6);
        // f(120) = 100 and f(121) = 100.5 (a target between them, not at a tie of rounding).
        assert_eq!(c.window_for(100.25), Some(120));
    }

    #[test]
    fn the_fit_ignores_single_outliers() {
        // A line with +-5 ms of alternating noise and one 200 ms outlier: the fit stays within
        // 3 ms of the line everywhere.
        let xs: Vec<f64> = (1..=150).map(f64::from).collect();
        let line = |w: f64| 30.0 + 0.8 * w;
        let ys: Vec<f64> = xs
            .iter()
            .enumerate()
            .map(|(i, &w)| {
                line(w)
                    + if i == 40 {
                        200.0
                    } else if i % 2 == 0 {
                        5.0
                    } else {
                        -5.0
                    }
            })
            .collect();
        let c = FittedCurve::fit(&xs, &ys, 10).unwrap();
        for w in [5.0, 41.0, 90.0, 150.0] {
            assert!((c.delay_at(w) - line(w)).abs() < 3.0, "w={w}: {}", c.delay_at(w));
        }
    }

    #[test]
    fn fit_rejects_bad_input() {
        assert_eq!(FittedCurve::fit(&[1.0], &[2.0], 4), Err(FitError::TooFewPoints(1)));
        assert!(matches!(FittedCurve::fit(&[1.0, 1.0], &[1.0, 2.0], 4), Err(FitError::Spline(_))));
    }
}
