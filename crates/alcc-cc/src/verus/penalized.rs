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
//! The linear algebra: the same natural spline is written in the cubic B-spline basis over the
//! nodes (`m + 2` coefficients, the two outside ones fixed by the natural end conditions
//! `S''(-1) = S''(1) = 0`), in which every data point touches 4 coefficients and the penalty
//! couples only neighbours within 3: the normal equations are a band of half-width 3, solved
//! with `sprs-ldl` (LDL^T) in `O(points + M)`. The node values are a fixed linear map of the
//! coefficients (`v_j = (c_{j-1} + 4 c_j + c_{j+1}) / 6`), so minimising over the coefficients
//! minimises the same sum as over the node values. `F` and `A` (defined on the node values'
//! basis, the natural cardinal splines) are computed from each cardinal spline's coefficients,
//! which fall off by a factor `2 - sqrt(3)` per node away from its own node: each is solved
//! over [`CARDINAL_REACH`] nodes either side, where the neglected part is below `1e-24` of it.
//!
//! The first version built the normal equations on the node values themselves: the natural
//! spline's second derivatives are a dense linear map of them, so every point touched all `M`
//! columns and the penalty cost `M^3`. After Verus's window once ran up to 21000 packets
//! (`alcc mdi train --synthetic 60`'s link 58: 59 refits of 1292 basis functions on average),
//! refits took seconds each and the 60 s simulation did not finish in 400 s; it takes 0.2 s of
//! CPU now. [`PenalizedSpline::system_nonzeros`] exposes the band that bounds the work. The two
//! versions agree to 5e-7 ms on 180 random knee-shaped profiles, and Verus's simulated runs
//! on the shared traces (10 and 20 ms) came out identical.

use sprs::{CsMat, TriMat};
use sprs_ldl::Ldl;

use super::fit::FitError;

/// Half-width of the band of the normal equations in the B-spline basis: a point in node
/// interval `j` touches coefficients `j - 1 ..= j + 2`.
pub const HALF_BANDWIDTH: usize = 3;

/// How many nodes either side of its own node a cardinal spline's B-spline coefficients are
/// solved for when `F` and `A` are computed: they fall off by `2 - sqrt(3)` (about 0.268) per
/// node, so at 44 nodes they are below `1e-24` of the largest.
pub const CARDINAL_REACH: usize = 44;

/// The natural cubic spline of one fit: node values over equidistant nodes on [-1, 1].
#[derive(Clone, Debug, PartialEq)]
pub struct PenalizedSpline {
    /// Data range mapped to [-1, 1].
    x_min: f64,
    x_max: f64,
    /// Node values and second derivatives at the nodes.
    values: Vec<f64>,
    second: Vec<f64>,
    /// Stored entries of the normal equations that were factorized.
    system_nonzeros: usize,
}

/// Coefficient `k` of the extended B-spline basis (`k = -1 ..= m`, centred on node `k`) as a
/// combination of the free coefficients `0 ..= m - 1`: the natural end conditions give
/// `c_{-1} = 2 c_0 - c_1` and `c_m = 2 c_{m-1} - c_{m-2}`.
fn extended(k: isize, m: usize) -> [(usize, f64); 2] {
    let last = m as isize - 1;
    if k < 0 {
        [(0, 2.0), (1, -1.0)]
    } else if k > last {
        [(m - 1, 2.0), (m - 2, -1.0)]
    } else {
        [(k as usize, 1.0), (k as usize, 0.0)]
    }
}

/// A sparse row over the free coefficients: the weights `w[r]` of extended coefficients
/// `first + r`, expanded through [`extended`] and summed per coefficient.
fn expand(first: isize, weights: &[f64], m: usize, out: &mut Vec<(usize, f64)>) {
    out.clear();
    for (r, &w) in weights.iter().enumerate() {
        for (i, f) in extended(first + r as isize, m) {
            if f == 0.0 {
                continue;
            }
            match out.iter_mut().find(|(j, _)| *j == i) {
                Some((_, v)) => *v += w * f,
                None => out.push((i, w * f)),
            }
        }
    }
}

/// The node interval of `t` (`0 ..= m - 2`) and the position in it, `u` in [0, 1] inside the
/// range.
fn interval(t: f64, m: usize, h: f64) -> (usize, f64) {
    let j = (((t + 1.0) / h).floor().max(0.0) as usize).min(m - 2);
    (j, (t - (-1.0 + j as f64 * h)) / h)
}

/// The four cubic B-splines that are non-zero on a node interval, at position `u`.
fn bspline_values(u: f64) -> [f64; 4] {
    let (u2, u3) = (u * u, u * u * u);
    let v = 1.0 - u;
    [
        v * v * v / 6.0,
        (3.0 * u3 - 6.0 * u2 + 4.0) / 6.0,
        (-3.0 * u3 + 3.0 * u2 + 3.0 * u + 1.0) / 6.0,
        u3 / 6.0,
    ]
}

/// A symmetric band matrix of half-width [`HALF_BANDWIDTH`], upper part stored by row.
struct Band {
    rows: Vec<[f64; HALF_BANDWIDTH + 1]>,
}

impl Band {
    fn new(m: usize) -> Band {
        Band { rows: vec![[0.0; HALF_BANDWIDTH + 1]; m] }
    }

    /// Adds `scale * row row^T`.
    fn add_outer(&mut self, row: &[(usize, f64)], scale: f64) {
        for &(a, va) in row {
            for &(b, vb) in row {
                if b >= a {
                    self.rows[a][b - a] += scale * va * vb;
                }
            }
        }
    }

    /// Adds `scale * (p q^T + q p^T) / 2`.
    fn add_symmetric(&mut self, p: &[(usize, f64)], q: &[(usize, f64)], scale: f64) {
        for &(a, va) in p {
            for &(b, vb) in q {
                let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                self.rows[lo][hi - lo] += scale * va * vb / 2.0 * if a == b { 2.0 } else { 1.0 };
            }
        }
    }

    /// `x^T B x` for an `x` that is zero outside `first .. first + x.len()`.
    fn quadratic(&self, first: usize, x: &[f64]) -> f64 {
        let mut sum = 0.0;
        for (i, &xi) in x.iter().enumerate() {
            let row = &self.rows[first + i];
            sum += row[0] * xi * xi;
            for (d, &bd) in row.iter().enumerate().skip(1) {
                if let Some(&xj) = x.get(i + d) {
                    sum += 2.0 * bd * xi * xj;
                }
            }
        }
        sum
    }
}

/// The B-spline coefficients (of nodes `first ..`) of the natural cardinal spline whose node
/// values are 1 at node `a` and 0 elsewhere, solved over [`CARDINAL_REACH`] nodes either side
/// (zero beyond). Node values are `c_0` and `c_{m-1}` at the ends and `(c_{j-1} + 4 c_j +
/// c_{j+1}) / 6` inside: a tridiagonal system, solved by forward elimination and back
/// substitution (the Thomas algorithm).
fn cardinal(a: usize, m: usize) -> (usize, Vec<f64>) {
    let first = a.saturating_sub(CARDINAL_REACH);
    let last = (a + CARDINAL_REACH).min(m - 1);
    let n = last - first + 1;
    // Row i: lower[i] x[i-1] + diag[i] x[i] + upper[i] x[i+1] = rhs[i].
    let row =
        |j: usize| if j == 0 || j == m - 1 { (0.0, 1.0, 0.0) } else { (1.0 / 6.0, 4.0 / 6.0, 1.0 / 6.0) };
    let mut upper = vec![0.0; n];
    let mut x = vec![0.0; n];
    let mut previous = (0.0, 0.0); // (modified upper, modified rhs) of the row before
    for i in 0..n {
        let (l, d, u) = row(first + i);
        let rhs = if first + i == a { 1.0 } else { 0.0 };
        let l = if i == 0 { 0.0 } else { l };
        let pivot = d - l * previous.0;
        upper[i] = u / pivot;
        x[i] = (rhs - l * previous.1) / pivot;
        previous = (upper[i], x[i]);
    }
    for i in (0..n.saturating_sub(1)).rev() {
        x[i] -= upper[i] * x[i + 1];
    }
    (first, x)
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
        let mut row = Vec::with_capacity(8);
        let mut other = Vec::with_capacity(8);
        // The data term F^T F and F^T y in the coefficients.
        let mut data = Band::new(m);
        let mut rhs = vec![0.0; m];
        for (&x, &y) in xs.iter().zip(ys) {
            let (j, u) = interval(2.0 * (x - x_min) / (x_max - x_min) - 1.0, m, h);
            expand(j as isize - 1, &bspline_values(u), m, &mut row);
            data.add_outer(&row, 1.0);
            for &(a, v) in &row {
                rhs[a] += v * y;
            }
        }
        // The penalty: S'' is linear on each interval between its node values
        // s_j = (c_{j-1} - 2 c_j + c_{j+1}) / h^2, so the integral of S''^2 over interval j is
        // h/3 (s_j^2 + s_j s_{j+1} + s_{j+1}^2).
        let mut penalty = Band::new(m);
        let second_row = |j: usize, out: &mut Vec<(usize, f64)>| {
            let k = 1.0 / (h * h);
            expand(j as isize - 1, &[k, -2.0 * k, k], m, out);
        };
        for j in 0..m - 1 {
            second_row(j, &mut row);
            second_row(j + 1, &mut other);
            penalty.add_outer(&row, h / 3.0);
            penalty.add_symmetric(&row, &other, h / 3.0);
            penalty.add_outer(&other, h / 3.0);
        }
        // The node values, for the Tikhonov term on them.
        let mut nodes = Band::new(m);
        for j in 0..m {
            expand(j as isize - 1, &[1.0 / 6.0, 4.0 / 6.0, 1.0 / 6.0], m, &mut row);
            nodes.add_outer(&row, 1.0);
        }
        // F and A over the node values' basis (the cardinal splines).
        let (mut f_max, mut a_max) = (0.0_f64, 0.0_f64);
        for a in 0..m {
            let (first, x) = cardinal(a, m);
            f_max = f_max.max(data.quadratic(first, &x));
            a_max = a_max.max(penalty.quadratic(first, &x).abs());
        }
        let p_decay = if a_max > 0.0 { 10f64.powf(rho) * f_max / a_max } else { 0.0 };
        let t_decay = f_max * (1.0 + p_decay) * 10.0 * f64::EPSILON;
        let mut system = TriMat::new((m, m));
        for a in 0..m {
            for d in 0..=HALF_BANDWIDTH {
                let b = a + d;
                if b >= m {
                    break;
                }
                let v = data.rows[a][d] + p_decay * penalty.rows[a][d] + t_decay * nodes.rows[a][d];
                system.add_triplet(a, b, v);
                if d > 0 {
                    system.add_triplet(b, a, v);
                }
            }
        }
        let system: CsMat<f64> = system.to_csc();
        let system_nonzeros = system.nnz();
        let ldl = Ldl::new().numeric(system.view()).map_err(|e| FitError::Spline(format!("{e:?}")))?;
        let c = ldl.solve(&rhs);
        if c.iter().any(|v| !v.is_finite()) {
            return Err(FitError::NonFinite);
        }
        let coefficient = |k: isize| extended(k, m).iter().map(|&(i, f)| f * c[i]).sum::<f64>();
        let values: Vec<f64> = (0..m as isize)
            .map(|j| (coefficient(j - 1) + 4.0 * coefficient(j) + coefficient(j + 1)) / 6.0)
            .collect();
        let second: Vec<f64> = (0..m as isize)
            .map(|j| (coefficient(j - 1) - 2.0 * coefficient(j) + coefficient(j + 1)) / (h * h))
            .collect();
        Ok(PenalizedSpline { x_min, x_max, values, second, system_nonzeros })
    }

    /// Stored entries of the factorized normal equations: at most `(2 x 3 + 1) M`, the bound
    /// on the solver's work (the first version's were `M^2`).
    pub fn system_nonzeros(&self) -> usize {
        self.system_nonzeros
    }

    /// The number of nodes `M`.
    pub fn nodes(&self) -> usize {
        self.values.len()
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
    fn the_solver_work_grows_with_the_nodes_not_their_square() {
        // A profile as wide as Verus's after its window ran to 25000 packets: M = 25000 / 15 =
        // 1666 nodes, 3000 points. The factorized system holds at most 7 M entries (the dense
        // first version held M^2 = 2.8 million), and the fit still follows the data.
        let xs: Vec<f64> = (0..3000).map(|i| 1.0 + i as f64 * 8.33).collect();
        let noise = |i: usize| if i % 3 == 0 { 4.0 } else { -2.0 };
        let ys: Vec<f64> = xs.iter().enumerate().map(|(i, w)| 40.0 + 0.02 * w + noise(i)).collect();
        let s = PenalizedSpline::fit(&xs, &ys, 1666, 2.0).unwrap();
        assert_eq!(s.nodes(), 1666);
        assert!(s.system_nonzeros() <= 7 * 1666, "{}", s.system_nonzeros());
        for w in [10.0, 5000.0, 20000.0, 24900.0] {
            assert!((s.value(w) - (40.0 + 0.02 * w)).abs() < 2.5, "w={w}: {}", s.value(w));
        }
    }

    #[test]
    fn a_cardinal_spline_has_decayed_at_its_reach() {
        // Mid-range, the coefficients fall by 2 - sqrt(3) per node: at CARDINAL_REACH they are
        // below 1e-24 of the largest, so F and A are computed to double precision.
        let (first, x) = cardinal(500, 1000);
        assert_eq!((first, x.len()), (500 - CARDINAL_REACH, 2 * CARDINAL_REACH + 1));
        let largest = x.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
        assert!(x[0].abs() < 1e-24 * largest && x[x.len() - 1].abs() < 1e-24 * largest, "{x:?}");
        let ratio = x[CARDINAL_REACH + 2] / x[CARDINAL_REACH + 1];
        assert!((ratio + (2.0 - 3f64.sqrt())).abs() < 1e-9, "{ratio}");
        // Near an end the whole range is solved.
        let (first, x) = cardinal(3, 10);
        assert_eq!((first, x.len()), (0, 10));
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(PenalizedSpline::fit(&[1.0], &[2.0], 4, 2.0).is_err());
        assert!(PenalizedSpline::fit(&[1.0, 2.0], &[2.0, 3.0], 3, 2.0).is_err());
        assert!(PenalizedSpline::fit(&[1.0, 1.0], &[2.0, 3.0], 4, 2.0).is_err());
        assert!(PenalizedSpline::fit(&[1.0, 2.0], &[2.0, f64::NAN], 4, 2.0).is_err());
    }
}
