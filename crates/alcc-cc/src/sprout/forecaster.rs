//! The delivery forecast: how many packets the link will deliver, with high confidence, over
//! each of the next [`HORIZON_TICKS`] ticks.
//!
//! Winstein et al., NSDI 2013, section 3.4. For every rate bin we precompute, once per process,
//! the distribution of the cumulative number of packets delivered over 1..=8 ticks if the link
//! starts the horizon at that bin's rate. A forecast then mixes these per-rate distributions by
//! the current posterior and reports, for each horizon, a low quantile (the 5th percentile by
//! default) of the mixture.
//!
//! How the rate evolves across the horizon (as in the reference implementation): a component
//! starting at rate λ₀ has, during tick `h` of the horizon, the rate distribution obtained by
//! `h - 1` Brownian steps from λ₀; the tick's count is Poisson given that rate, mixed over that
//! distribution; and the cumulative count is the convolution of the per-tick counts, as if the
//! ticks were independent given λ₀. Correlation between ticks thus comes only from the
//! posterior over λ₀ (the outer mixture), not from the rate's path within the horizon, which
//! makes the per-component spread somewhat narrower than an exact path model would. Per-tick
//! counts are truncated at [`MAX_ARRIVALS_PER_TICK`] (the tail mass is lumped there; at the
//! highest rate, 20 packets per tick expected, the lumped tail is below 1e-8).

use std::sync::OnceLock;

use super::belief::RateBelief;
use super::bins::{center, HORIZON_TICKS, NUM_BINS, TICK_SECS};
use super::kernel::BrownianKernel;

/// Per-tick counts above this are lumped into this count.
pub const MAX_ARRIVALS_PER_TICK: usize = 50;

/// Posterior mass below this is ignored when mixing (it cannot move a percentile).
const NEGLIGIBLE: f64 = 1e-12;

/// The per-rate cumulative delivery distributions, as cumulative distribution functions.
///
/// Stored by horizon, then count, then bin, so that mixing one count's probabilities by the
/// posterior is a dot product over contiguous memory.
#[derive(Clone, Debug)]
pub struct ForecastTables {
    /// `by_horizon[h - 1][c * NUM_BINS + bin]` = P(at most `c` packets in `h` ticks | bin).
    by_horizon: Vec<Vec<f64>>,
}

impl ForecastTables {
    /// The tables for Sprout's model, built on first use (about 10^8 arithmetic operations).
    pub fn get() -> &'static ForecastTables {
        static TABLES: OnceLock<ForecastTables> = OnceLock::new();
        TABLES.get_or_init(|| ForecastTables::build(BrownianKernel::tick()))
    }

    /// Builds the tables for a given one-tick kernel.
    pub fn build(kernel: &BrownianKernel) -> ForecastTables {
        let poisson: Vec<Vec<f64>> = (0..NUM_BINS).map(|i| tick_counts(center(i) * TICK_SECS)).collect();
        let mut by_horizon: Vec<Vec<f64>> =
            (1..=HORIZON_TICKS).map(|h| vec![0.0; (h * MAX_ARRIVALS_PER_TICK + 1) * NUM_BINS]).collect();
        for start in 0..NUM_BINS {
            let mut rate = RateBelief::certain(start);
            let mut cumulative = vec![1.0];
            for table in by_horizon.iter_mut() {
                let mut this_tick = vec![0.0; MAX_ARRIVALS_PER_TICK + 1];
                for (p, counts) in rate.probabilities().iter().zip(&poisson) {
                    if *p > 0.0 {
                        this_tick.iter_mut().zip(counts).for_each(|(t, c)| *t += p * c);
                    }
                }
                cumulative = convolve(&cumulative, &this_tick);
                for (c, f) in running_sum(&cumulative).into_iter().enumerate() {
                    table[c * NUM_BINS + start] = f;
                }
                rate.evolve_with(kernel);
            }
        }
        ForecastTables { by_horizon }
    }

    /// P(at most `count` packets within `horizon` ticks | the rate starts at bin `bin`).
    pub fn cdf(&self, bin: usize, horizon: usize, count: usize) -> f64 {
        let table = &self.by_horizon[horizon - 1];
        table.get(count * NUM_BINS + bin).copied().unwrap_or(1.0)
    }

    /// For each horizon 1..=[`HORIZON_TICKS`], the largest count `c` such that the link
    /// delivers at least `c` packets with probability at least `1 - quantile`: the smallest `c`
    /// whose mixed cumulative probability P(N ≤ c) reaches `quantile`. Counts are
    /// non-decreasing in the horizon (enforced against rounding).
    pub fn forecast(&self, belief: &RateBelief, quantile: f64) -> [u32; HORIZON_TICKS] {
        let probs = belief.probabilities();
        // The bins that carry the posterior (mass below NEGLIGIBLE cannot move a percentile).
        let first = probs.iter().position(|&p| p > NEGLIGIBLE).unwrap_or(0);
        let last = probs.iter().rposition(|&p| p > NEGLIGIBLE).unwrap_or(NUM_BINS - 1).max(first);
        let weights = &probs[first..=last];
        let mut counts = [0u32; HORIZON_TICKS];
        let mut floor = 0usize;
        for (h, slot) in counts.iter_mut().enumerate() {
            let table = &self.by_horizon[h];
            let mixed = |c: usize| -> f64 {
                let row = &table[c * NUM_BINS + first..=c * NUM_BINS + last];
                row.iter().zip(weights).map(|(f, p)| f * p).sum()
            };
            // Binary search for the smallest c with mixed(c) >= quantile; mixed is
            // non-decreasing in c and reaches (almost) 1 at the largest count.
            let (mut lo, mut hi) = (floor, (h + 1) * MAX_ARRIVALS_PER_TICK);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if mixed(mid) >= quantile {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            floor = lo;
            *slot = u32::try_from(lo).unwrap_or(u32::MAX);
        }
        counts
    }
}

/// The distribution of one tick's count at expected count `mu`, truncated at
/// [`MAX_ARRIVALS_PER_TICK`] with the tail lumped there.
fn tick_counts(mu: f64) -> Vec<f64> {
    let mut pmf = Vec::with_capacity(MAX_ARRIVALS_PER_TICK + 1);
    let mut p = (-mu).exp();
    let mut total = 0.0;
    for k in 0..MAX_ARRIVALS_PER_TICK {
        pmf.push(p);
        total += p;
        p *= mu / (k + 1) as f64;
    }
    pmf.push((1.0 - total).max(0.0));
    pmf
}

fn convolve(a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; a.len() + b.len() - 1];
    for (i, x) in a.iter().enumerate() {
        if *x == 0.0 {
            continue;
        }
        for (o, y) in out[i..].iter_mut().zip(b) {
            *o += x * y;
        }
    }
    out
}

fn running_sum(pmf: &[f64]) -> Vec<f64> {
    let mut sum = 0.0;
    pmf.iter()
        .map(|p| {
            sum += p;
            sum.min(1.0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_counts_are_a_distribution() {
        for mu in [0.0, 0.5, 2.0, 20.0] {
            let pmf = tick_counts(mu);
            assert_eq!(pmf.len(), MAX_ARRIVALS_PER_TICK + 1);
            assert!((pmf.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            let mean: f64 = pmf.iter().enumerate().map(|(k, p)| k as f64 * p).sum();
            assert!((mean - mu).abs() < 1e-6, "mean {mean} vs {mu}");
        }
        assert_eq!(tick_counts(0.0)[0], 1.0);
    }

    #[test]
    fn tables_are_cdfs_that_shift_right_with_horizon() {
        let t = ForecastTables::get();
        for bin in [0, 1, 26, 128, 255] {
            for h in 1..=HORIZON_TICKS {
                let last = h * MAX_ARRIVALS_PER_TICK;
                assert!((t.cdf(bin, h, last) - 1.0).abs() < 1e-9, "bin {bin} h {h}");
                for c in 1..=last {
                    assert!(t.cdf(bin, h, c) >= t.cdf(bin, h, c - 1));
                    if h > 1 {
                        assert!(t.cdf(bin, h, c) <= t.cdf(bin, h - 1, c) + 1e-12);
                    }
                }
            }
        }
        // A certain outage delivers nothing in the first tick.
        assert_eq!(t.cdf(0, 1, 0), 1.0);
        // At 500 packets/s (bin 127.5 -> 128 is 501.96) the first tick is Poisson(10.04).
        let p0 = (-center(128) * TICK_SECS).exp();
        assert!((t.cdf(128, 1, 0) - p0).abs() < 1e-12);
    }

    #[test]
    fn certain_outage_forecasts_nothing_soon() {
        let counts = ForecastTables::get().forecast(&RateBelief::certain(0), 0.05);
        // Escape within 160 ms has probability 1 - e^-0.14 < 5 %: the 5th percentile is zero.
        assert_eq!(counts, [0; HORIZON_TICKS]);
    }

    /// The steady-state forecast at a known rate, against a hand calculation.
    ///
    /// Steady arrivals of k packets per tick: the posterior settles where Brownian spreading
    /// (q = σ²τ = 800 (packets/s)² per tick) balances the information of one tick's count
    /// (variance of k/τ: r = λ/τ). The Kalman steady state P = (-q + √(q² + 4qr)) / 2 gives
    /// P ≈ 4090 (sd 64 packets/s) at 500 packets/s and P ≈ 1640 (sd 40) at 100 packets/s.
    /// Over h ticks the count has mean λhτ and variance ≈ (hτ)² P + λhτ + τ² q h(h-1)/2, so
    /// with the normal approximation the 5th percentile is mean - 1.645 sd. At 500 packets/s:
    /// for h = 5, 50 - 1.645 √(40.9 + 50 + 3.2) ≈ 34.0; for h = 8, 80 - 1.645 √(104.7 + 80 + 9)
    /// ≈ 57.1. At 100 packets/s and h = 8 the normal approximation, 16 - 1.645 √(42 + 16 + 9)
    /// ≈ 2.5, ignores the posterior's right skew near zero and is only a lower bound; the upper
    /// bound is the 5th percentile of Poisson(16) with no rate uncertainty at all, which is 10
    /// since P(N ≤ 9) = 0.043 and P(N ≤ 10) = 0.077.
    #[test]
    fn steady_arrivals_forecast_matches_hand_calculation() {
        let tables = ForecastTables::get();
        let mut fast = RateBelief::uniform();
        let mut slow = RateBelief::uniform();
        for _ in 0..500 {
            fast.evolve();
            fast.observe(10);
            slow.evolve();
            slow.observe(2);
        }
        assert!((fast.mean() - 500.0).abs() < 10.0, "mean {}", fast.mean());
        let f = tables.forecast(&fast, 0.05);
        assert!((30..=38).contains(&f[4]), "5 ticks at 500/s: {f:?}");
        assert!((52..=62).contains(&f[7]), "8 ticks at 500/s: {f:?}");
        assert!(f[0] >= 3 && f[0] <= 6, "1 tick at 500/s: {f:?}");
        let s = tables.forecast(&slow, 0.05);
        assert_eq!(s[0], 0, "{s:?}");
        assert!((3..=9).contains(&s[7]), "8 ticks at 100/s: {s:?}");
        for w in f.windows(2).chain(s.windows(2)) {
            assert!(w[0] <= w[1]);
        }
        // A looser quantile forecasts more.
        let median = tables.forecast(&fast, 0.5);
        assert!(median[7] > f[7] && (75..=85).contains(&median[7]), "{median:?}");
    }
}
