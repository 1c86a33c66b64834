//! The penalized regression spline that the reference fits its delay profile with (ALGLIB's
//! `spline1dfitpenalized(x, y, M, rho = 2.0)`, as ALGLIB documents and computes it; our code).
//!
//! The curve is a natural cubic spline with `M` equidistant nodes over the data's range; its node
//! values `v` minimise
//!
//! ```text
//! sum_i (y_i - S(x_i))^2  +  10^rho * (F / A) * integral S''(t)^2 dt
//! ```
//!
//! with `x` scaled to `t` in [-1, 1] for the integral, `F` the largest squared column norm of the
//! basis matrix (how strongly one node value moves the data term) and `A` the largest diagonal
//! element of the penalty matrix: the scaling that makes `rho = 2` "a moderate amount of
//! nonlinearity" for any number of points and nodes. A tiny Tikhonov term
//! (`F (1 + pdecay) 10 eps`) keeps the system positive definite. Beyond the data's range the
//! curve continues as a straight line with the end slope.
//!
//! Measured against the reference's fit (ALGLIB 3.19, the Debian library the authors' Verus
//! links) on noisy knee-shaped profiles: with `rho = 2` the fit is close to a straight line
//! through the profile (it does not follow the knee where the queue starts to build, nor single
//! outliers), which is why our earlier cubic smoothing spline, tuned to the basis resolution
//! alone, mapped target delays below the knee to windows 2 to 3 times smaller than the
//! reference's (see `bench/reference-results.md`).
//!
//! The linear algebra: the spline's second derivatives at the nodes are a linear map `K` of the
//! node values (the natural spline's tridiagonal system), so both the basis matrix and the
//! penalty `K^T P K` (`P` the exact integral of products of piecewise linear functions) are
//! linear in `v`; the normal equations are solved with `sprs-ldl` (LDL^T).

use sprs::{CsMat, TriMat};
use sprs_ldl::Ldl;

use super::fit::FitError;

/// The natural cubic spline of one fit: node values over equidistant nodes on [-1, 1].
#[derive(Clone, Debug, PartialEq)]
pub struct PenalizedSpline {
    /// Data range mapped to [-1, 1].
    x_min: f64,
    x_max: f64,
    /// Node values and second derivatives at the nodes.
    values: Vec<f64>,
    second: Vec<f64>,
}

/// `K`: the natural spline's second derivatives at `m` equidistant nodes (spacing `h`) as a
/// linear map of its node values, `m x m`, rows 0 and `m - 1` zero.
fn second_derivative_map(m: usize, h: f64) -> Result<Vec<Vec<f64>>, FitError> {
    let mut k = vec![vec![0.0; m]; m];
    let interior = m - 2;
    if interior == 0 {
        return Ok(k);
    }
    // h/6 s[j-1] + 2h/3 s[j] + h/6 s[j+1] = (v[j+1] - 2 v[j] + v[j-1]) / h, s[0] = s[m-1] = 0.
    let mut t = TriMat::new((interior, interior));
    for i in 0..interior {
        t.add_triplet(i, i, 2.0 * h / 3.0);
        if i + 1 < interior {
            t.add_triplet(i, i + 1, h / 6.0);
            t.add_triplet(i + 1, i, h / 6.0);
        }
    }
    let t: CsMat<f64> = t.to_csc();
    let ldl = Ldl::new().numeric(t.view()).map_err(|e| FitError::Spline(format!("{e:?}")))?;
    // Column `col` of K: the second derivatives for the unit node value e_col.
    #[allow(clippy::needless_range_loop)] // `col` is a node index, not only an index into `k`
    for col in 0..m {
        let rhs: Vec<f64> = (1..=interior)
            .map(|j| {
                let mut r = 0.0;
                if col + 1 == j || col == j + 1 {
                    r += 1.0 / h;
                }
                if col == j {
                    r -= 2.0 / h;
                }
                r
            })
            .collect();
        let s = ldl.solve(&rhs);
        for (row, v) in k[1..=interior].iter_mut().zip(s) {
            row[col] = v;
        }
    }
    Ok(k)
}

/// The basis row at `t`: the spline's value at `t` as a linear function of the node values.
fn basis_row(t: f64, m: usize, h: f64, k: &[Vec<f64>], row: &mut [f64]) {
    row.iter_mut().for_each(|r| *r = 0.0);
    let j = (((t + 1.0) / h).floor().max(0.0) as usize).min(m - 2);
    let left = -1.0 + j as f64 * h;
    let b = (t - left) / h;
    let a = 1.0 - b;
    row[j] += a;
    row[j + 1] += b;
    let (ca, cb) = ((a * a * a - a) * h * h / 6.0, (b * b * b - b) * h * h / 6.0);
    for (c, r) in row.iter_mut().enumerate() {
        *r += ca * k[j][c] + cb * k[j + 1][c];
    }
}

impl PenalizedSpline {
    /// Fits `m` (at least 4) node values to the points `(xs[i], ys[i])` (at least two distinct
    /// `x`) with penalty exponent `rho`.
    pub fn fit(xs: &[f64], ys: &[f64], m: usize, rho: f64) -> Result<PenalizedSpline, FitError> {
        if xs.len() != ys.len() || xs.len() < 2 {
            return Err(FitError::TooFewPoints(xs.len().min(ys.len())));
        }
        if m < 4 {
            return Err(FitError::Spline(format!("{m} nodes, need at least 4")));
        }
        let x_min = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let x_max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if x_max.partial_cmp(&x_min) != Some(std::cmp::Ordering::Greater) || ys.iter().any(|y| !y.is_finite())
        {
            return Err(FitError::Spline("the points span no range".into()));
        }
        let h = 2.0 / (m - 1) as f64;
        let k = second_derivative_map(m, h)?;
        // F^T F and F^T y, and the largest squared column norm of F.
        let mut normal = vec![vec![0.0; m]; m];
        let mut rhs = vec![0.0; m];
        let mut col_norm = vec![0.0; m];
        let mut row = vec![0.0; m];
        for (&x, &y) in xs.iter().zip(ys) {
            let t = 2.0 * (x - x_min) / (x_max - x_min) - 1.0;
            basis_row(t, m, h, &k, &mut row);
            for a in 0..m {
                col_norm[a] += row[a] * row[a];
                rhs[a] += row[a] * y;
                for b in a..m {
                    normal[a][b] += row[a] * row[b];
                }
            }
        }
        let f_max = col_norm.iter().copied().fold(0.0, f64::max);
        // Penalty K^T P K, P the integral of products of the piecewise linear second derivatives.
        let mut pk = vec![vec![0.0; m]; m];
        for c in 0..m {
            for j in 0..m - 1 {
                // Interval [j, j+1]: h/3 (s_j^2 + s_j s_j+1 + s_j+1^2) split over the two nodes.
                pk[j][c] += h / 3.0 * k[j][c] + h / 6.0 * k[j + 1][c];
                pk[j + 1][c] += h / 6.0 * k[j][c] + h / 3.0 * k[j + 1][c];
            }
        }
        let penalty = |a: usize, b: usize| (0..m).map(|j| k[j][a] * pk[j][b]).sum::<f64>();
        let a_max = (0..m).map(|a| penalty(a, a).abs()).fold(0.0, f64::max);
        let p_decay = if a_max > 0.0 { 10f64.powf(rho) * f_max / a_max } else { 0.0 };
        let t_decay = f_max * (1.0 + p_decay) * 10.0 * f64::EPSILON;
        let mut system = TriMat::new((m, m));
        for (a, normal_row) in normal.iter().enumerate() {
            for (b, &fit) in normal_row.iter().enumerate().skip(a) {
                let mut v = fit + p_decay * penalty(a, b);
                if a == b {
                    v += t_decay;
                    system.add_triplet(a, a, v);
                } else {
                    system.add_triplet(a, b, v);
                    system.add_triplet(b, a, v);
                }
            }
        }
        let system: CsMat<f64> = system.to_csc();
        let ldl = Ldl::new().numeric(system.view()).map_err(|e| FitError::Spline(format!("{e:?}")))?;
        let values = ldl.solve(&rhs);
        if values.iter().any(|v| !v.is_finite()) {
            return Err(FitError::NonFinite);
        }
        let second: Vec<f64> = (0..m).map(|j| (0..m).map(|c| k[j][c] * values[c]).sum()).collect();
        Ok(PenalizedSpline { x_min, x_max, values, second })
    }

    /// The fitted value at `x`; a straight line with the end slope beyond the data's range.
    pub fn value(&self, x: f64) -> f64 {
        let m = self.values.len();
        let h = 2.0 / (m - 1) as f64;
        let scale = 2.0 / (self.x_max - self.x_min);
        let t = (x - self.x_min) * scale - 1.0;
        let (v, s) = (&self.values, &self.second);
        if t < -1.0 {
            let slope = (v[1] - v[0]) / h - h / 6.0 * (2.0 * s[0] + s[1]);
            return v[0] + slope * (t + 1.0);
        }
        if t > 1.0 {
            let slope = (v[m - 1] - v[m - 2]) / h + h / 6.0 * (s[m - 2] + 2.0 * s[m - 1]);
            return v[m - 1] + slope * (t - 1.0);
        }
        let j = (((t + 1.0) / h).floor() as usize).min(m - 2);
        let b = (t - (-1.0 + j as f64 * h)) / h;
        let a = 1.0 - b;
        a * v[j] + b * v[j + 1] + ((a * a * a - a) * s[j] + (b * b * b - b) * s[j + 1]) * h * h / 6.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_straight_line_is_reproduced_for_any_penalty() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        let ys: Vec<f64> = xs.iter().map(|w| 40.0 + 0.5 * w).collect();
        for rho in [-8.0, 2.0, 8.0] {
            let s = PenalizedSpline::fit(&xs, &ys, 6, rho).unwrap();
            for w in [1.0, 37.5, 100.0, 130.0, -5.0] {
                // The Tikhonov term grows with the penalty: 2e-6 ms off at rho = 8.
                assert!((s.value(w) - (40.0 + 0.5 * w)).abs() < 1e-4, "rho {rho} w {w}: {}", s.value(w));
            }
        }
    }

    #[test]
    fn without_penalty_a_cubic_through_few_nodes_is_exact() {
        // A natural spline with enough nodes and no penalty fits a smooth curve closely.
        let xs: Vec<f64> = (0..=200).map(|i| i as f64 / 10.0).collect();
        let ys: Vec<f64> = xs.iter().map(|x| (x / 3.0).sin()).collect();
        let s = PenalizedSpline::fit(&xs, &ys, 20, -15.0).unwrap();
        for x in [1.0, 7.3, 15.0, 19.9] {
            assert!((s.value(x) - (x / 3.0).sin()).abs() < 1e-3, "{x}");
        }
    }

    #[test]
    fn the_default_penalty_straightens_a_knee() {
        // Flat 20 ms to w = 30, then +3 ms per packet, up to w = 90, fitted as the reference
        // fits it (M = 90 / 15 = 6, rho = 2): the fit cuts the corner, 44.30 ms at the knee
        // where the data say 20, and -13.87 ms at w = 1 (ALGLIB 3.19 gives both to 0.001 ms); with rho = -8 and 18
        // basis functions it follows the knee.
        let xs: Vec<f64> = (1..=90).map(f64::from).collect();
        let clean = |w: f64| 20.0 + (w - 30.0).max(0.0) * 3.0;
        let ys: Vec<f64> = xs.iter().map(|&w| clean(w)).collect();
        let stiff = PenalizedSpline::fit(&xs, &ys, 6, 2.0).unwrap();
        let loose = PenalizedSpline::fit(&xs, &ys, 18, -8.0).unwrap();
        assert!((stiff.value(30.0) - 44.303).abs() < 0.01, "{}", stiff.value(30.0));
        assert!((stiff.value(1.0) + 13.874).abs() < 0.01, "{}", stiff.value(1.0));
        assert!((loose.value(15.0) - 20.0).abs() < 2.0, "{}", loose.value(15.0));
        assert!((loose.value(30.0) - 20.0).abs() < 5.0, "{}", loose.value(30.0));
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(PenalizedSpline::fit(&[1.0], &[2.0], 4, 2.0).is_err());
        assert!(PenalizedSpline::fit(&[1.0, 2.0], &[2.0, 3.0], 3, 2.0).is_err());
        assert!(PenalizedSpline::fit(&[1.0, 1.0], &[2.0, 3.0], 4, 2.0).is_err());
        assert!(PenalizedSpline::fit(&[1.0, 2.0], &[2.0, f64::NAN], 4, 2.0).is_err());
    }
}
