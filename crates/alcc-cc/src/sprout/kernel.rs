//! The one-tick transition of the link rate: Brownian motion with an outage state.
//!
//! Winstein et al., NSDI 2013, section 3.1: between ticks the rate λ does a Brownian motion of
//! volatility σ = 200 packets/s/√s, and a link in outage (λ = 0) escapes at rate 1/s. As in the
//! reference, a step is the normal distribution of standard deviation σ √τ (τ = one tick)
//! integrated over each destination bin and truncated beyond 5σ; the outage bin keeps
//! exp(-τ × escape rate) of its mass and spreads the rest like a Brownian step from zero.
//!
//! Our choice where the reference only renormalises the whole distribution afterwards: every
//! source row is renormalised to sum to one, so that one evolve step conserves probability
//! exactly. Mass that would leave [0, 1000] packets/s or go beyond 5σ is thereby kept in the
//! reachable bins in proportion to their weight.
//!
//! The kernel is a band matrix (each row reaches about ±36 bins), computed once per process.

use std::sync::OnceLock;

use super::bins::{
    bounds, center, normal_cdf, NUM_BINS, OUTAGE_ESCAPE_RATE, TICK_SECS, TRUNCATION_SIGMAS, VOLATILITY,
};

/// One row of the transition: the probabilities of moving from one bin to `first..first+len`.
#[derive(Clone, Debug)]
pub struct KernelRow {
    /// The first destination bin with non-zero probability.
    pub first: usize,
    /// Transition probabilities to bins `first`, `first + 1`, ...; they sum to one.
    pub weights: Vec<f64>,
}

/// The transition of the rate distribution over one tick, as a band matrix by source bin.
#[derive(Clone, Debug)]
pub struct BrownianKernel {
    rows: Vec<KernelRow>,
}

impl BrownianKernel {
    /// The kernel for one tick of Sprout's model with the paper's constants, built once.
    pub fn tick() -> &'static BrownianKernel {
        static KERNEL: OnceLock<BrownianKernel> = OnceLock::new();
        KERNEL.get_or_init(|| {
            BrownianKernel::new(VOLATILITY * TICK_SECS.sqrt(), TICK_SECS * OUTAGE_ESCAPE_RATE)
        })
    }

    /// A kernel with Brownian standard deviation `stddev` (packets/s) per step, and an outage
    /// bin that escapes with probability `1 - exp(-escape_exponent)` per step.
    pub fn new(stddev: f64, escape_exponent: f64) -> BrownianKernel {
        let escape = 1.0 - (-escape_exponent).exp();
        let rows = (0..NUM_BINS)
            .map(|source| {
                let from = center(source);
                let reach = TRUNCATION_SIGMAS * stddev;
                // Destination bins whose centre lies within the truncation band.
                let mut targets: Vec<usize> =
                    (0..NUM_BINS).filter(|&to| (center(to) - from).abs() <= reach).collect();
                if source == 0 {
                    // Escaping mass goes to the non-outage bins only; the rest stays put.
                    targets.retain(|&to| to != 0);
                }
                let mut weights: Vec<f64> = targets
                    .iter()
                    .map(|&to| {
                        let (lo, hi) = bounds(to);
                        if stddev > 0.0 {
                            normal_cdf((hi - from) / stddev) - normal_cdf((lo - from) / stddev)
                        } else {
                            f64::from(u8::from(to == source))
                        }
                    })
                    .collect();
                let total: f64 = weights.iter().sum();
                if total > 0.0 {
                    weights.iter_mut().for_each(|w| *w /= total);
                }
                if source == 0 {
                    weights.iter_mut().for_each(|w| *w *= escape);
                    weights.insert(0, 1.0 - escape);
                    return KernelRow { first: 0, weights };
                }
                KernelRow { first: targets.first().copied().unwrap_or(source), weights }
            })
            .collect();
        BrownianKernel { rows }
    }

    /// The row of transitions out of bin `source`.
    pub fn row(&self, source: usize) -> &KernelRow {
        &self.rows[source]
    }

    /// Applies one step: `next[j] = Σ_i current[i] × P(i → j)`. Both slices have
    /// [`NUM_BINS`] entries.
    pub fn apply(&self, current: &[f64], next: &mut [f64]) {
        next.iter_mut().for_each(|v| *v = 0.0);
        for (row, &p) in self.rows.iter().zip(current) {
            if p == 0.0 {
                continue;
            }
            for (slot, w) in next[row.first..].iter_mut().zip(&row.weights) {
                *slot += p * w;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_sums_to_one_within_the_band() {
        let k = BrownianKernel::tick();
        let sigma = VOLATILITY * TICK_SECS.sqrt();
        for i in 0..NUM_BINS {
            let row = k.row(i);
            let sum: f64 = row.weights.iter().sum();
            assert!((sum - 1.0).abs() < 1e-12, "row {i} sums to {sum}");
            assert!(row.weights.iter().all(|&w| w >= 0.0));
            if i > 0 {
                let last = row.first + row.weights.len() - 1;
                assert!(center(i) - center(row.first) <= 5.0 * sigma + 1e-9);
                assert!(center(last) - center(i) <= 5.0 * sigma + 1e-9);
            }
        }
        // σ ≈ 28.28 packets/s, a bin is 3.92 wide: an interior row reaches 36 bins each way.
        assert_eq!(k.row(128).weights.len(), 73);
    }

    #[test]
    fn interior_step_has_the_brownian_spread() {
        let k = BrownianKernel::tick();
        let row = k.row(128);
        let from = center(128);
        let (mut mean, mut var) = (0.0, 0.0);
        for (j, w) in row.weights.iter().enumerate() {
            mean += w * center(row.first + j);
        }
        for (j, w) in row.weights.iter().enumerate() {
            var += w * (center(row.first + j) - mean).powi(2);
        }
        assert!((mean - from).abs() < 1e-9, "symmetric step keeps the mean");
        // Variance of the binned normal: σ² + w²/12 (Sheppard), σ² = 200² × 0.02 = 800.
        let expected = 800.0 + super::super::bins::BIN_WIDTH.powi(2) / 12.0;
        assert!((var - expected).abs() / expected < 0.01, "variance {var} vs {expected}");
    }

    #[test]
    fn outage_bin_escapes_with_probability_one_minus_exp() {
        let row = BrownianKernel::tick().row(0);
        assert_eq!(row.first, 0);
        let stay = row.weights[0];
        assert!((stay - (-0.02f64).exp()).abs() < 1e-15);
        let escaped: f64 = row.weights[1..].iter().sum();
        assert!((escaped - (1.0 - (-0.02f64).exp())).abs() < 1e-12);
    }
}
