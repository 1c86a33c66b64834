//! Seeded synthetic packet-delivery traces: a constant-rate link and a cellular-like link.
//!
//! # Constant rate
//!
//! [`constant`]: `N = round(rate x duration / 12 kbit)` packets (one packet is 1500 B = 12 kbit,
//! so 12 Mbit/s is one packet per ms), the k-th (1-based) at `ceil(k x duration / N)` ms. The
//! packets are evenly spread, the last one is at `duration`, so the period is exactly the
//! duration and the mean rate is `N x 12 / duration` Mbit/s, the requested rate to within
//! one packet per period.
//!
//! # Cellular-like
//!
//! [`cellular`], with every parameter in [`CellularModel`]. Time advances in steps of `step_ms`
//! (default 100 ms). The logarithm of the rate follows a discrete Ornstein-Uhlenbeck process
//! (an AR(1) random walk pulled back to its mean):
//!
//! `x[n+1] = mu + phi (x[n] - mu) + s sqrt(1 - phi^2) z[n]`, with `z[n]` standard normal,
//! `phi = exp(-step / correlation)` and `mu = ln(mean) - s^2 / 2`,
//!
//! so the log-rate has stationary standard deviation `s` (`log_sd`), decorrelates over
//! `correlation_ms`, and the rate `exp(x)` is log-normal with mean `mean_rate_mbps`; each
//! step's rate is then clamped to `[min_rate_mbps, max_rate_mbps]`. The walk starts from its
//! stationary distribution. Outages arrive as a Poisson process (`outages_per_minute`); each
//! lasts `outage_min_ms` plus an exponential time of mean `outage_mean_ms - outage_min_ms`,
//! at most `outage_max_ms`, and delivers nothing. Within a step, packets are released by a
//! byte-credit counter at the step's rate (so rates below one packet per ms still come out
//! right on average); an outage also empties the credit. If the trace would not end with an
//! opportunity at `duration_ms`, one is added there so that the period is the duration.
//!
//! The defaults resemble the ALCC paper's 3G/LTE traces. Measured on `alcc-paper/*` and
//! Mahimahi's LTE traces: means of 5-17 Mbit/s; standard deviation of the log of 100 ms rates
//! 0.35-0.85; autocorrelation of that log about 0.3-0.6 at 1 s; ratio of the 95th to the 5th
//! percentile of 1 s rates 2.1-4.5 for the ALCC traces and 9-11 for the LTE ones; 2-20 gaps of
//! at least 100 ms per 100 s, 120-270 ms long on average and up to 1.4 s. Defaults: mean
//! 9 Mbit/s, `s` = 0.5, correlation 1 s (100 ms rates spread x5 between their 5th and 95th
//! percentiles, 1 s rates about x4, so the rate changes several-fold within seconds), six
//! outages a minute of 250 ms on average (80 ms to 1.5 s). The clamp and the outages make the
//! realised mean a few percent lower than `mean_rate_mbps`.
//!
//! Everything is deterministic per seed (ChaCha8).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::trace::{Trace, PACKET_BYTES};

/// The most packets one synthetic trace may hold (about 400 MB of timestamps).
pub const MAX_PACKETS: u64 = 50_000_000;

/// The longest cellular trace: one day, in ms (the generator walks every millisecond).
pub const MAX_DURATION_MS: u64 = 86_400_000;

/// Why a synthetic trace could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SynthError {
    /// A parameter is outside its range.
    #[error("{name} = {value} is out of range: {expected}")]
    BadParameter {
        /// The parameter's name.
        name: &'static str,
        /// Its value.
        value: f64,
        /// What it must be.
        expected: &'static str,
    },
    /// The trace would hold more than [`MAX_PACKETS`] packets.
    #[error("the trace would hold {packets} packets, more than {MAX_PACKETS}")]
    TooLarge {
        /// How many.
        packets: u64,
    },
}

fn check(name: &'static str, value: f64, ok: bool, expected: &'static str) -> Result<(), SynthError> {
    if ok && value.is_finite() {
        Ok(())
    } else {
        Err(SynthError::BadParameter { name, value, expected })
    }
}

/// Packets per ms at `mbps`: one 12-kbit packet per ms is 12 Mbit/s.
fn packets_per_ms(mbps: f64) -> f64 {
    mbps * 1000.0 / (PACKET_BYTES as f64 * 8.0)
}

/// A constant-rate trace of `rate_mbps` lasting `duration_ms` (see the module docs).
pub fn constant(rate_mbps: f64, duration_ms: u64) -> Result<Trace, SynthError> {
    check("rate_mbps", rate_mbps, rate_mbps > 0.0, "a positive number of Mbit/s")?;
    check("duration_ms", duration_ms as f64, duration_ms > 0, "at least 1 ms")?;
    let exact = packets_per_ms(rate_mbps) * duration_ms as f64;
    if exact > MAX_PACKETS as f64 {
        return Err(SynthError::TooLarge { packets: exact as u64 });
    }
    let packets = exact.round().max(1.0) as u64;
    let times = (1..=packets)
        .map(|k| {
            let t = (u128::from(k) * u128::from(duration_ms)).div_ceil(u128::from(packets));
            t as u64 // <= duration_ms, since k <= packets.
        })
        .collect();
    // Non-decreasing in k, and the last (k = packets) is exactly duration_ms > 0.
    Ok(Trace::from_valid(format!("constant-{rate_mbps}mbps-{duration_ms}ms"), times))
}

/// The parameters of the cellular-like model (see the module docs for the model).
#[derive(Debug, Clone, PartialEq)]
pub struct CellularModel {
    /// How long the trace lasts (its period), in ms.
    pub duration_ms: u64,
    /// The mean of the (unclamped, outage-free) rate, Mbit/s.
    pub mean_rate_mbps: f64,
    /// The rate changes every `step_ms`.
    pub step_ms: u64,
    /// Stationary standard deviation `s` of the natural log of the rate.
    pub log_sd: f64,
    /// Correlation time of the log-rate, in ms: `phi = exp(-step / correlation)`.
    pub correlation_ms: f64,
    /// The rate never goes below this (outside outages), Mbit/s.
    pub min_rate_mbps: f64,
    /// The rate never goes above this, Mbit/s.
    pub max_rate_mbps: f64,
    /// Mean number of outages per minute (Poisson arrivals); 0 for none.
    pub outages_per_minute: f64,
    /// Shortest outage, ms.
    pub outage_min_ms: f64,
    /// Mean outage length, ms (at least `outage_min_ms`).
    pub outage_mean_ms: f64,
    /// Longest outage, ms.
    pub outage_max_ms: f64,
}

impl Default for CellularModel {
    fn default() -> Self {
        CellularModel {
            duration_ms: 60_000,
            mean_rate_mbps: 9.0,
            step_ms: 100,
            log_sd: 0.5,
            correlation_ms: 1000.0,
            min_rate_mbps: 0.3,
            max_rate_mbps: 60.0,
            outages_per_minute: 6.0,
            outage_min_ms: 80.0,
            outage_mean_ms: 250.0,
            outage_max_ms: 1500.0,
        }
    }
}

impl CellularModel {
    /// Checks every parameter's range.
    pub fn validate(&self) -> Result<(), SynthError> {
        let m = self;
        let duration_ok = (1..=MAX_DURATION_MS).contains(&m.duration_ms);
        check("duration_ms", m.duration_ms as f64, duration_ok, "between 1 ms and one day")?;
        check("mean_rate_mbps", m.mean_rate_mbps, m.mean_rate_mbps > 0.0, "positive")?;
        check("step_ms", m.step_ms as f64, m.step_ms > 0, "at least 1 ms")?;
        check("log_sd", m.log_sd, (0.0..=5.0).contains(&m.log_sd), "between 0 and 5")?;
        check("correlation_ms", m.correlation_ms, m.correlation_ms > 0.0, "positive")?;
        check("min_rate_mbps", m.min_rate_mbps, m.min_rate_mbps >= 0.0, "non-negative")?;
        let max_ok = m.max_rate_mbps >= m.min_rate_mbps && m.max_rate_mbps > 0.0;
        check("max_rate_mbps", m.max_rate_mbps, max_ok, "positive and at least min_rate_mbps")?;
        check("outages_per_minute", m.outages_per_minute, m.outages_per_minute >= 0.0, "non-negative")?;
        check("outage_min_ms", m.outage_min_ms, m.outage_min_ms >= 0.0, "non-negative")?;
        let mean_ok = m.outage_mean_ms >= m.outage_min_ms;
        check("outage_mean_ms", m.outage_mean_ms, mean_ok, "at least outage_min_ms")?;
        let max_ok = m.outage_max_ms >= m.outage_min_ms;
        check("outage_max_ms", m.outage_max_ms, max_ok, "at least outage_min_ms")?;
        let bound = packets_per_ms(m.max_rate_mbps) * m.duration_ms as f64;
        if bound > MAX_PACKETS as f64 {
            return Err(SynthError::TooLarge { packets: bound as u64 });
        }
        Ok(())
    }
}

/// A standard normal draw (Box-Muller).
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1 = 1.0 - rng.random::<f64>(); // (0, 1]
    let u2 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// An exponential draw of mean `mean`.
fn exponential(rng: &mut ChaCha8Rng, mean: f64) -> f64 {
    -(1.0 - rng.random::<f64>()).ln() * mean
}

/// A cellular-like trace from `model`, deterministic per `seed` (see the module docs).
pub fn cellular(model: &CellularModel, seed: u64) -> Result<Trace, SynthError> {
    model.validate()?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let s = model.log_sd;
    let phi = (-(model.step_ms as f64) / model.correlation_ms).exp();
    let mu = model.mean_rate_mbps.ln() - s * s / 2.0;
    let innovation = s * (1.0 - phi * phi).sqrt();
    let mut log_rate = mu + s * normal(&mut rng);
    let outage_gap_mean_ms =
        if model.outages_per_minute > 0.0 { 60_000.0 / model.outages_per_minute } else { f64::INFINITY };
    let mut next_outage_ms = exponential(&mut rng, outage_gap_mean_ms);
    let mut outage_end_ms = 0.0;
    let mut credit = 0.0; // packets
    let mut times = Vec::new();
    let mut rate = 0.0;
    for t in 1..=model.duration_ms {
        let now = t as f64;
        if (t - 1) % model.step_ms == 0 {
            if t > 1 {
                log_rate = mu + phi * (log_rate - mu) + innovation * normal(&mut rng);
            }
            rate = packets_per_ms(log_rate.exp().clamp(model.min_rate_mbps, model.max_rate_mbps));
        }
        while next_outage_ms <= now {
            let extra = exponential(&mut rng, model.outage_mean_ms - model.outage_min_ms);
            let length = (model.outage_min_ms + extra).min(model.outage_max_ms);
            outage_end_ms = f64::max(outage_end_ms, next_outage_ms + length);
            next_outage_ms += exponential(&mut rng, outage_gap_mean_ms);
        }
        if now <= outage_end_ms {
            credit = 0.0;
            continue;
        }
        credit += rate;
        while credit >= 1.0 {
            times.push(t);
            credit -= 1.0;
        }
    }
    if times.last() != Some(&model.duration_ms) {
        times.push(model.duration_ms);
    }
    let name = format!("cellular-{}mbps-seed{seed}", model.mean_rate_mbps);
    // Pushed in increasing ms, ending at duration_ms > 0.
    Ok(Trace::from_valid(name, times))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn constant_rate_by_hand() {
        let t = constant(12.0, 5).unwrap();
        assert_eq!(t.opportunities_ms(), &[1, 2, 3, 4, 5]);
        // 18 Mbit/s = 1.5 packets/ms: 6 packets in 4 ms, at ceil(4k/6) = 1, 2, 2, 3, 4, 4.
        assert_eq!(constant(18.0, 4).unwrap().opportunities_ms(), &[1, 2, 2, 3, 4, 4]);
        // 3 Mbit/s = a packet every 4 ms.
        assert_eq!(constant(3.0, 12).unwrap().opportunities_ms(), &[4, 8, 12]);
        let t = constant(10.0, 300_000).unwrap();
        assert_eq!(t.period_ms(), 300_000);
        assert!((t.mean_rate_mbps() - 10.0).abs() < 1e-3);
    }

    #[test]
    fn constant_rejects_bad_input() {
        assert!(matches!(constant(0.0, 10), Err(SynthError::BadParameter { name: "rate_mbps", .. })));
        assert!(matches!(constant(f64::NAN, 10), Err(SynthError::BadParameter { .. })));
        assert!(matches!(constant(5.0, 0), Err(SynthError::BadParameter { name: "duration_ms", .. })));
        assert!(matches!(constant(1e12, 1000), Err(SynthError::TooLarge { .. })));
        // Far below one packet per period still yields one packet at the end.
        assert_eq!(constant(0.001, 10).unwrap().opportunities_ms(), &[10]);
    }

    /// Standard deviation of the log of the 100 ms rates (bins with packets).
    fn log_sd_100ms(t: &Trace) -> f64 {
        let bins = (t.period_ms() / 100 + 1) as usize;
        let mut counts = vec![0u32; bins];
        for &ms in t.opportunities_ms() {
            counts[(ms / 100) as usize] += 1;
        }
        let logs: Vec<f64> = counts.iter().filter(|&&c| c > 0).map(|&c| f64::from(c).ln()).collect();
        let mean = logs.iter().sum::<f64>() / logs.len() as f64;
        (logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / logs.len() as f64).sqrt()
    }

    /// Gaps of at least 100 ms between consecutive opportunities.
    fn long_gaps(t: &Trace) -> usize {
        t.opportunities_ms().windows(2).filter(|w| w[1] - w[0] >= 100).count()
    }

    #[test]
    fn cellular_defaults_resemble_the_paper_traces() {
        let model = CellularModel { duration_ms: 300_000, ..CellularModel::default() };
        for seed in 0..4 {
            let t = cellular(&model, seed).unwrap();
            assert_eq!(t.period_ms(), 300_000);
            let mean = t.mean_rate_mbps();
            assert!((7.0..=11.0).contains(&mean), "seed {seed}: mean {mean}");
            let sd = log_sd_100ms(&t);
            assert!((0.35..=0.9).contains(&sd), "seed {seed}: log sd {sd}");
            let gaps = long_gaps(&t);
            assert!((6..=60).contains(&gaps), "seed {seed}: {gaps} gaps");
            let mut per_second: Vec<u64> =
                (0..300).map(|s| t.capacity_bytes(s * 1000, s * 1000 + 1000)).collect();
            per_second.sort_unstable();
            let spread = per_second[284] as f64 / per_second[14] as f64; // 95th / 5th percentile
            assert!((2.5..=8.0).contains(&spread), "seed {seed}: 1 s rates spread x{spread}");
        }
    }

    #[test]
    fn cellular_is_deterministic_per_seed() {
        let model = CellularModel { duration_ms: 20_000, ..CellularModel::default() };
        assert_eq!(cellular(&model, 7).unwrap(), cellular(&model, 7).unwrap());
        assert_ne!(cellular(&model, 7).unwrap(), cellular(&model, 8).unwrap());
    }

    #[test]
    fn cellular_without_variation_is_constant() {
        let model = CellularModel {
            duration_ms: 10_000,
            mean_rate_mbps: 6.0,
            log_sd: 0.0,
            outages_per_minute: 0.0,
            ..CellularModel::default()
        };
        let t = cellular(&model, 1).unwrap();
        // 6 Mbit/s = half a packet per ms: one every 2 ms.
        assert_eq!(t.opportunities_ms().len(), 5000);
        assert!(t.opportunities_ms().iter().all(|ms| ms % 2 == 0));
    }

    #[test]
    fn cellular_rejects_bad_parameters() {
        let bad = CellularModel { min_rate_mbps: 5.0, max_rate_mbps: 1.0, ..CellularModel::default() };
        assert!(matches!(cellular(&bad, 0), Err(SynthError::BadParameter { name: "max_rate_mbps", .. })));
        let bad = CellularModel { step_ms: 0, ..CellularModel::default() };
        assert!(cellular(&bad, 0).is_err());
        let bad = CellularModel { outage_mean_ms: 10.0, ..CellularModel::default() };
        assert!(cellular(&bad, 0).is_err());
        let bad = CellularModel { log_sd: f64::INFINITY, ..CellularModel::default() };
        assert!(cellular(&bad, 0).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn cellular_never_panics_and_is_valid(
            seed in any::<u64>(),
            duration_ms in 1u64..3000,
            mean in 0.01f64..100.0,
            step_ms in 1u64..500,
            log_sd in 0.0f64..3.0,
            outages in 0.0f64..600.0,
        ) {
            let model = CellularModel {
                duration_ms, mean_rate_mbps: mean, step_ms, log_sd, outages_per_minute: outages,
                ..CellularModel::default()
            };
            let t = cellular(&model, seed).unwrap();
            prop_assert_eq!(t.period_ms(), duration_ms);
            prop_assert!(t.opportunities_ms().windows(2).all(|w| w[0] <= w[1]));
        }

        #[test]
        fn constant_has_the_asked_rate(rate in 0.5f64..200.0, duration_ms in 1000u64..20_000) {
            let t = constant(rate, duration_ms).unwrap();
            prop_assert_eq!(t.period_ms(), duration_ms);
            // Within one packet (12 kbit) per period.
            prop_assert!((t.mean_rate_mbps() - rate).abs() <= 12.0 / duration_ms as f64 + 1e-9);
        }
    }
}
