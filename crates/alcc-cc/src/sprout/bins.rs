//! The discretised rate axis of Sprout's model and the model's constants.
//!
//! The link's delivery rate λ is a distribution over [`NUM_BINS`] bins whose centres are evenly
//! spaced on [0, [`MAX_RATE`]] packets/s, bin 0 being the outage state λ = 0 (Winstein et al.,
//! NSDI 2013, section 3.1; the reference uses 256 bins up to 1000 packets/s). Bin `i` covers the
//! rates within half a bin width of its centre, clipped to the axis.

use std::time::Duration;

/// Number of rate bins.
pub const NUM_BINS: usize = 256;

/// The highest rate the model represents, packets per second.
pub const MAX_RATE: f64 = 1000.0;

/// Length of one model tick (section 3.1: "every 20 ms").
pub const TICK: Duration = Duration::from_millis(20);

/// [`TICK`] in seconds.
pub const TICK_SECS: f64 = 0.02;

/// Volatility σ of the rate's Brownian motion, packets/s per √s (section 3.1; the reference's
/// `BROWNIAN_MOTION_RATE`). Over one tick the standard deviation is σ √0.02 ≈ 28.3 packets/s.
pub const VOLATILITY: f64 = 200.0;

/// The Brownian step is truncated beyond this many standard deviations (as the reference does).
pub const TRUNCATION_SIGMAS: f64 = 5.0;

/// Rate at which the link escapes an outage, per second (section 3.1; the reference's
/// `OUTAGE_ESCAPE_RATE`): the outage bin keeps its mass with probability exp(-1/s × 0.02 s) per tick.
pub const OUTAGE_ESCAPE_RATE: f64 = 1.0;

/// Number of ticks the forecast covers (8 × 20 ms = 160 ms, section 3.4).
pub const HORIZON_TICKS: usize = 8;

/// Width of one bin, packets/s.
pub const BIN_WIDTH: f64 = MAX_RATE / (NUM_BINS - 1) as f64;

/// The rate at the centre of bin `index`, packets/s.
pub fn center(index: usize) -> f64 {
    index as f64 * BIN_WIDTH
}

/// The rates bin `index` covers: `[lower, upper]`, packets/s, clipped to `[0, MAX_RATE]`.
pub fn bounds(index: usize) -> (f64, f64) {
    let c = center(index);
    ((c - BIN_WIDTH / 2.0).max(0.0), (c + BIN_WIDTH / 2.0).min(MAX_RATE))
}

/// The standard normal cumulative distribution function Φ(x).
///
/// Computed from the complementary error function with the rational Chebyshev approximation of
/// Numerical Recipes (section 6.2, `erfcc`), whose fractional error is below 1.2e-7 everywhere;
/// the kernel renormalises every row, so this error never leaks probability.
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_spans_zero_to_max() {
        assert_eq!(center(0), 0.0);
        assert!((center(NUM_BINS - 1) - MAX_RATE).abs() < 1e-9);
        assert_eq!(bounds(0).0, 0.0);
        assert_eq!(bounds(NUM_BINS - 1).1, MAX_RATE);
        // Adjacent bins share their boundary.
        for i in 1..NUM_BINS {
            assert!((bounds(i - 1).1 - bounds(i).0).abs() < 1e-9);
        }
    }

    #[test]
    fn normal_cdf_matches_tabulated_values() {
        // Values of Φ from standard tables.
        for (x, phi) in
            [(0.0, 0.5), (1.0, 0.841_344_7), (-1.0, 0.158_655_3), (1.644_853_6, 0.95), (-3.0, 0.001_349_9)]
        {
            assert!((normal_cdf(x) - phi).abs() < 1e-6, "Φ({x}) = {} not {phi}", normal_cdf(x));
        }
        assert!(normal_cdf(-40.0) >= 0.0 && normal_cdf(40.0) <= 1.0);
    }
}
