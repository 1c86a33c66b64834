//! Seeded Bernoulli packet loss (Mahimahi's `mm-loss`): each packet is lost independently
//! with probability `p`, from a ChaCha8 generator so that a seed reproduces a run.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::LinkError;

/// Independent random loss.
#[derive(Debug)]
pub struct BernoulliLoss {
    p: f64,
    rng: ChaCha8Rng,
}

impl BernoulliLoss {
    /// Loss with probability `p` in [0, 1]; `stream` separates directions sharing a seed.
    pub fn new(p: f64, seed: u64, stream: u64) -> Result<Self, LinkError> {
        if !(0.0..=1.0).contains(&p) {
            return Err(LinkError::Loss(p));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        Ok(BernoulliLoss { p, rng })
    }

    /// Whether the next packet is lost.
    pub fn lose(&mut self) -> bool {
        self.p > 0.0 && self.rng.random_bool(self.p)
    }

    /// The loss probability.
    pub fn probability(&self) -> f64 {
        self.p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_matches_probability_over_many_packets() {
        let mut l = BernoulliLoss::new(0.01, 7, 0).unwrap();
        let lost = (0..1_000_000).filter(|_| l.lose()).count();
        // Standard deviation ~ 99.5 packets: 5 sigma.
        assert!((lost as i64 - 10_000).abs() < 500, "{lost}");
    }

    #[test]
    fn seeded_and_stream_separated() {
        let draw = |seed, stream| {
            let mut l = BernoulliLoss::new(0.3, seed, stream).unwrap();
            (0..64).map(|_| l.lose()).collect::<Vec<_>>()
        };
        assert_eq!(draw(1, 0), draw(1, 0));
        assert_ne!(draw(1, 0), draw(1, 1));
        assert_ne!(draw(1, 0), draw(2, 0));
    }

    #[test]
    fn extremes_and_invalid() {
        assert!(!(0..1000).any(|_| BernoulliLoss::new(0.0, 1, 0).unwrap().lose()));
        let mut all = BernoulliLoss::new(1.0, 1, 0).unwrap();
        assert!((0..1000).all(|_| all.lose()));
        for bad in [-0.1, 1.5, f64::NAN] {
            assert!(BernoulliLoss::new(bad, 1, 0).unwrap_err().to_string().contains("between 0 and 1"));
        }
    }
}
