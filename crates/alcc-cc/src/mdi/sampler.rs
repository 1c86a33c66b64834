//! The uniform numbers MDI samples with: SplitMix64 (Steele, Lea and Flood, "Fast splittable
//! pseudorandom number generators", OOPSLA 2014; `rand_xoshiro::SplitMix64`), seeded with the
//! flow's seed, each 64-bit output `x` turned into `(x >> 11) x 2^-53`, a double in [0, 1).
//!
//! SplitMix64 is specified by a few lines of integer arithmetic, so the Java library
//! (`java/`) reproduces the same stream bit for bit and makes the same decisions for the same
//! seed; the shared test vectors check it.

use rand::{RngCore, SeedableRng};
use rand_xoshiro::SplitMix64;

/// A seeded stream of uniform doubles in [0, 1).
#[derive(Clone, Debug)]
pub struct Uniform {
    rng: SplitMix64,
}

impl Uniform {
    /// The stream for `seed`.
    pub fn new(seed: u64) -> Uniform {
        Uniform { rng: SplitMix64::seed_from_u64(seed) }
    }

    /// The next raw 64-bit output.
    pub fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// The next double in [0, 1): the top 53 bits of the next output, times 2^-53.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_reference_outputs() {
        // The first outputs of the reference splitmix64.c for seed 1477776061723855037
        // (rand_xoshiro's own test vector).
        let mut u = Uniform::new(1_477_776_061_723_855_037);
        assert_eq!(u.next_u64(), 1_985_237_415_132_408_290);
        assert_eq!(u.next_u64(), 2_979_275_885_539_914_483);
        let mut u = Uniform::new(0);
        let x = u.clone().next_u64();
        assert_eq!(u.next_f64(), (x >> 11) as f64 / 9_007_199_254_740_992.0);
        for _ in 0..1000 {
            let v = u.next_f64();
            assert!((0.0..1.0).contains(&v));
        }
    }
}
