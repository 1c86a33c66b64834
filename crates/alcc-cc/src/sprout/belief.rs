//! The receiver's posterior belief about the link's delivery rate.
//!
//! Winstein et al., NSDI 2013, section 3.3: the belief starts uniform over the rate bins; every
//! tick it is first evolved by the Brownian transition ([`BrownianKernel`]) and then
//! multiplied by the Poisson likelihood of the packets that arrived during the tick,
//! P(k | λ) = (λτ)^k e^(-λτ) / k!, and renormalised.

use std::sync::OnceLock;

use super::bins::{center, NUM_BINS, TICK_SECS};
use super::kernel::BrownianKernel;

/// A probability distribution over the [`NUM_BINS`] rate bins; always normalised.
#[derive(Clone, Debug, PartialEq)]
pub struct RateBelief {
    probs: Vec<f64>,
    scratch: Vec<f64>,
}

impl Default for RateBelief {
    fn default() -> RateBelief {
        RateBelief::uniform()
    }
}

impl RateBelief {
    /// The uninformed prior: every bin equally likely.
    pub fn uniform() -> RateBelief {
        RateBelief { probs: vec![1.0 / NUM_BINS as f64; NUM_BINS], scratch: vec![0.0; NUM_BINS] }
    }

    /// A belief certain that the rate is the centre of bin `index` (clamped to the axis).
    pub fn certain(index: usize) -> RateBelief {
        let mut probs = vec![0.0; NUM_BINS];
        probs[index.min(NUM_BINS - 1)] = 1.0;
        RateBelief { probs, scratch: vec![0.0; NUM_BINS] }
    }

    /// The probability of each bin.
    pub fn probabilities(&self) -> &[f64] {
        &self.probs
    }

    /// The posterior mean rate, packets/s.
    pub fn mean(&self) -> f64 {
        self.probs.iter().enumerate().map(|(i, p)| p * center(i)).sum()
    }

    /// The probability that the link is in an outage (the λ = 0 bin).
    pub fn outage_probability(&self) -> f64 {
        self.probs[0]
    }

    /// Lets one tick pass: the rate does one step of its Brownian motion (section 3.1).
    pub fn evolve(&mut self) {
        self.evolve_with(BrownianKernel::tick());
    }

    /// One step with a given kernel.
    pub fn evolve_with(&mut self, kernel: &BrownianKernel) {
        kernel.apply(&self.probs, &mut self.scratch);
        std::mem::swap(&mut self.probs, &mut self.scratch);
        self.normalise();
    }

    /// Conditions on `count` packets having arrived during one tick (section 3.3).
    ///
    /// Works in log space relative to the most likely bin, so that a count far from every
    /// bin's expectation (a burst of 60 packets when 1000 packets/s allows 20 per tick) does not
    /// underflow the whole distribution to zero.
    pub fn observe(&mut self, count: u32) {
        let k = f64::from(count);
        let log_mu = log_expected_counts();
        let log_likelihood = |i: usize| {
            let mu = center(i) * TICK_SECS;
            if mu == 0.0 {
                if count == 0 {
                    0.0
                } else {
                    f64::NEG_INFINITY
                }
            } else {
                // The k! term is common to all bins and cancels in the normalisation.
                k * log_mu[i] - mu
            }
        };
        let best = (0..NUM_BINS)
            .filter(|&i| self.probs[i] > 0.0)
            .map(log_likelihood)
            .fold(f64::NEG_INFINITY, f64::max);
        if !best.is_finite() {
            // Only the outage bin had mass and packets arrived: the prior is refuted outright.
            // Fall back to the likelihood alone (a uniform prior).
            self.probs.iter_mut().for_each(|p| *p = 1.0);
            return self.observe(count);
        }
        for (i, p) in self.probs.iter_mut().enumerate() {
            *p *= (log_likelihood(i) - best).exp();
        }
        self.normalise();
    }

    /// Scales the distribution to sum to one, flushing values too small to matter (below
    /// 1e-250) to zero so that later steps never work with subnormal numbers.
    fn normalise(&mut self) {
        let total: f64 = self.probs.iter().sum();
        if !(total.is_finite() && total > 0.0) {
            *self = RateBelief::uniform();
            return;
        }
        for p in &mut self.probs {
            *p /= total;
            if *p < 1e-250 {
                *p = 0.0;
            }
        }
    }
}

/// ln(λτ) for every bin (unused for the outage bin), computed once.
fn log_expected_counts() -> &'static [f64] {
    static LOG_MU: OnceLock<Vec<f64>> = OnceLock::new();
    LOG_MU.get_or_init(|| (0..NUM_BINS).map(|i| (center(i) * TICK_SECS).ln()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(b: &RateBelief) -> f64 {
        b.probabilities().iter().sum()
    }

    #[test]
    fn uniform_prior_has_mean_half_the_axis() {
        let b = RateBelief::uniform();
        assert!((total(&b) - 1.0).abs() < 1e-12);
        assert!((b.mean() - 500.0).abs() < 1e-9);
    }

    #[test]
    fn evolve_conserves_probability_and_spreads() {
        let mut b = RateBelief::certain(128);
        let before = b.mean();
        b.evolve();
        assert!((total(&b) - 1.0).abs() < 1e-12);
        assert!((b.mean() - before).abs() < 1e-9, "an interior step is symmetric");
        assert!(b.probabilities()[128] < 0.2, "mass spread out: {}", b.probabilities()[128]);
        let mut u = RateBelief::uniform();
        for _ in 0..100 {
            u.evolve();
            assert!((total(&u) - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn observation_moves_the_mean_toward_k_over_tau() {
        // Ten packets in a tick: the likelihood peaks at λ = 10 / 0.02 = 500 packets/s.
        let mut b = RateBelief::certain(51); // 200 packets/s
        b.evolve();
        let prior = b.mean();
        b.observe(10);
        assert!(b.mean() > prior + 5.0, "mean {} did not move up from {prior}", b.mean());

        // From the uniform prior a single observation of k gives (on the continuous axis) the
        // Gamma(k + 1, τ) posterior truncated at 1000 packets/s. Its mean is
        // (k + 1)/τ × P(Gamma(k + 2) ≤ 1000) / P(Gamma(k + 1) ≤ 1000)
        // = 550 × P(Poisson(20) ≥ 12) / P(Poisson(20) ≥ 11) = 544.12 for k = 10.
        let mut u = RateBelief::uniform();
        u.observe(10);
        assert!((u.mean() - 544.12).abs() < 0.5, "posterior mean {}", u.mean());
        assert!((total(&u) - 1.0).abs() < 1e-12);

        // Zero arrivals favour low rates, and repeated zeros make the outage bin dominant.
        let mut z = RateBelief::uniform();
        for _ in 0..20 {
            z.evolve();
            z.observe(0);
        }
        assert!(z.outage_probability() > 0.5, "outage {}", z.outage_probability());
    }

    #[test]
    fn outage_escapes_at_one_per_second() {
        let mut b = RateBelief::certain(0);
        b.evolve();
        assert!((b.outage_probability() - (-0.02f64).exp()).abs() < 1e-12);
        // Without observations, after 1 s (50 ticks) e^-1 of the mass has not left (Brownian
        // steps from low rates also fall back in, so at least that much remains).
        for _ in 1..50 {
            b.evolve();
        }
        assert!(b.outage_probability() >= (-1.0f64).exp() - 1e-9);
        // One arrival rules the outage out entirely.
        b.observe(1);
        assert_eq!(b.outage_probability(), 0.0);
        assert!((total(&b) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn impossible_burst_does_not_underflow() {
        let mut b = RateBelief::certain(10);
        b.observe(500);
        assert!((total(&b) - 1.0).abs() < 1e-12);
        assert!(b.probabilities().iter().all(|p| p.is_finite()));
        let mut o = RateBelief::certain(0);
        o.observe(3);
        assert!((total(&o) - 1.0).abs() < 1e-12);
        assert_eq!(o.outage_probability(), 0.0);
    }
}
