//! `fixed`: a constant window and an optional constant pacing rate.
//!
//! Not a congestion controller: a baseline and a tool. `fixed:window=inf` lets the transport
//! run at whatever the kernel allows (the engine's overhead benchmark), `fixed:window=40` holds
//! 40 packets in flight, `fixed:rate=12` paces at 12 Mbit/s.

use crate::controller::{Config, Controller, RttSamples};
use crate::event::{AckSample, Decision, LossEvent, SentPacket};
use crate::metrics::Metrics;
use crate::spec::{Params, SpecError};
use crate::time::Time;

/// A constant window (bytes) and optional constant pacing rate (bytes per second).
#[derive(Debug, Clone)]
pub struct Fixed {
    window: u64,
    pacing_rate: Option<u64>,
}

impl Fixed {
    /// A controller with the given window in bytes and pacing rate in bytes per second.
    pub fn new(window: u64, pacing_rate: Option<u64>) -> Fixed {
        Fixed { window, pacing_rate }
    }

    /// Builds from `window=PACKETS|inf` (default `inf`) and `rate=MBIT_PER_S` (default none).
    pub fn from_params(params: &mut Params, config: &Config) -> Result<Fixed, SpecError> {
        let packets = params.take_f64("window", f64::INFINITY, 1.0, f64::INFINITY).or_else(|e| {
            // `take_f64` refuses non-finite values; accept the word `inf` explicitly.
            match &e {
                SpecError::BadValue { value, .. } if value.eq_ignore_ascii_case("inf") => Ok(f64::INFINITY),
                _ => Err(e),
            }
        })?;
        let window = if packets.is_finite() { (packets as u64).saturating_mul(config.mss) } else { u64::MAX };
        let rate_mbps = params.take_f64("rate", 0.0, 0.0, 1e6)?;
        let pacing_rate = (rate_mbps > 0.0).then(|| (rate_mbps * 1e6 / 8.0) as u64);
        Ok(Fixed::new(window, pacing_rate))
    }
}

impl Controller for Fixed {
    fn name(&self) -> &'static str {
        "fixed"
    }

    fn on_sent(&mut self, _now: Time, _packet: &SentPacket) -> u64 {
        0
    }

    fn on_ack(&mut self, _now: Time, _ack: &AckSample) {}

    fn on_loss(&mut self, _now: Time, _loss: &LossEvent) {}

    fn decision(&self) -> Decision {
        Decision { window: self.window, pacing_rate: self.pacing_rate }
    }

    /// None: its window and rate are constants, and it reads nothing of its acknowledgements.
    fn rtt_samples(&self) -> RttSamples {
        RttSamples::NotNeeded
    }

    fn metrics(&self) -> Metrics {
        Metrics { pacing_rate: self.pacing_rate, ..Metrics::new(self.window, "fixed") }
    }
}
