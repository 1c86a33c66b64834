//! `cubic`: CUBIC congestion control (RFC 9438), for fidelity checks against the kernel's own.
//!
//! Windows are kept in segments (SMSS) as the RFC writes them and reported in bytes. Slow
//! start is Reno's with RFC 3465 byte counting (RFC 9438 section 4.10), optionally with
//! HyStart++ ([`hystart`], `hystart=on`; off by default so that plain runs follow RFC 9438
//! alone); losses are grouped into one congestion event per round trip by [`Recovery`].
//! `ssthresh` after a loss is `cwnd x beta` (section 4.6 also allows the flight size).
//!
//! A congestion-avoidance stage starts at the first ACK after slow start or after a recovery
//! episode; `t` below is the time since then, `RTT` the smoothed RTT (RFC 6298 gains).

pub mod hystart;

use self::hystart::{Growth, HyStart};
use crate::controller::{Config, Controller};
use crate::event::{AckSample, Decision, LossEvent, SentPacket};
use crate::metrics::Metrics;
use crate::recovery::{slow_start_increase, Recovery};
use crate::reno::initial_window;
use crate::rtt::RttEstimator;
use crate::spec::{Params, SpecError};
use crate::time::Time;

/// RFC 9438 section 5: C = 0.4 (segments per second cubed).
pub const DEFAULT_C: f64 = 0.4;
/// RFC 9438 section 5: beta_cubic = 0.7.
pub const DEFAULT_BETA: f64 = 0.7;
/// RFC 9438 section 4.6: the window never goes below 2 segments after a reduction.
pub const MIN_WINDOW_SEGMENTS: f64 = 2.0;
/// RFC 9438 section 4.2: the target is at most 1.5 x cwnd.
pub const MAX_TARGET_GROWTH: f64 = 1.5;

/// CUBIC's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubicParams {
    /// `C`, the cubic scaling constant.
    pub c: f64,
    /// `beta_cubic`, the multiplicative decrease factor.
    pub beta: f64,
    /// Whether fast convergence (RFC 9438 section 4.7) is on.
    pub fast_convergence: bool,
    /// Whether slow start uses HyStart++ (RFC 9406).
    pub hystart: bool,
}

impl Default for CubicParams {
    fn default() -> CubicParams {
        CubicParams { c: DEFAULT_C, beta: DEFAULT_BETA, fast_convergence: true, hystart: false }
    }
}

impl CubicParams {
    /// `W_cubic(t) = C x (t - K)^3 + W_max` (RFC 9438 section 4.2, equation 1), `t` and `K`
    /// in seconds, windows in segments.
    pub fn w_cubic(&self, t: f64, k: f64, w_max: f64) -> f64 {
        self.c * (t - k).powi(3) + w_max
    }

    /// `K = cbrt((W_max - cwnd_epoch) / C)` (RFC 9438 section 4.2, equation 2); zero when the
    /// stage starts at or above `W_max`.
    pub fn k(&self, w_max: f64, cwnd_epoch: f64) -> f64 {
        ((w_max - cwnd_epoch).max(0.0) / self.c).cbrt()
    }

    /// `alpha_cubic = 3 x (1 - beta) / (1 + beta)` (RFC 9438 section 4.3, equation 4).
    pub fn alpha(&self) -> f64 {
        3.0 * (1.0 - self.beta) / (1.0 + self.beta)
    }
}

/// The state of one congestion-avoidance stage.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Epoch {
    start: Time,
    k: f64,
    /// The Reno-friendly estimate `W_est` (RFC 9438 section 4.3).
    w_est: f64,
}

/// One CUBIC flow.
#[derive(Clone, Debug)]
pub struct Cubic {
    mss: u64,
    params: CubicParams,
    cwnd: f64,
    ssthresh: f64,
    w_max: f64,
    cwnd_prior: f64,
    epoch: Option<Epoch>,
    rtt: RttEstimator,
    recovery: Recovery,
    /// HyStart++ state while the first slow start lasts (with `hystart=on`).
    hystart: Option<HyStart>,
}

impl Cubic {
    /// A fresh flow with the RFC 5681 initial window.
    pub fn new(params: CubicParams, config: &Config) -> Cubic {
        let mss = config.mss.max(1);
        Cubic {
            mss,
            params,
            cwnd: (initial_window(mss) / mss) as f64,
            ssthresh: f64::INFINITY,
            w_max: 0.0,
            cwnd_prior: 0.0,
            epoch: None,
            rtt: RttEstimator::new(),
            recovery: Recovery::new(),
            hystart: params.hystart.then(HyStart::new),
        }
    }

    /// Builds from `c=C` (0.4), `beta=B` (0.7), `fast_convergence=on|off` (on) and
    /// `hystart=on|off` (off).
    pub fn from_params(params: &mut Params, config: &Config) -> Result<Cubic, SpecError> {
        let c = params.take_f64("c", DEFAULT_C, 0.001, 100.0)?;
        let beta = params.take_f64("beta", DEFAULT_BETA, 0.1, 0.95)?;
        let fast_convergence = params.take_choice("fast_convergence", "on", &["on", "off"])? == "on";
        let hystart = params.take_choice("hystart", "off", &["on", "off"])? == "on";
        Ok(Cubic::new(CubicParams { c, beta, fast_convergence, hystart }, config))
    }

    /// The window in segments.
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// `W_max` in segments: the window before the last reduction (after fast convergence).
    pub fn w_max(&self) -> f64 {
        self.w_max
    }

    /// `K` of the current congestion-avoidance stage, in seconds.
    pub fn k(&self) -> Option<f64> {
        self.epoch.map(|e| e.k)
    }

    /// The Reno-friendly estimate `W_est` of the current stage, in segments.
    pub fn w_est(&self) -> Option<f64> {
        self.epoch.map(|e| e.w_est)
    }

    /// Whether a recovery episode is under way.
    pub fn in_recovery(&self) -> bool {
        self.recovery.active()
    }

    /// One ACK of `segments` in congestion avoidance (RFC 9438 sections 4.2 to 4.5).
    fn congestion_avoidance(&mut self, now: Time, segments: f64) {
        let params = self.params;
        let epoch = match self.epoch {
            Some(epoch) => epoch,
            None => {
                if self.cwnd >= self.w_max {
                    // No reduction to recover from (first stage after slow start): the plateau
                    // is where we are, K = 0.
                    self.w_max = self.cwnd;
                }
                let epoch = Epoch { start: now, k: params.k(self.w_max, self.cwnd), w_est: self.cwnd };
                self.epoch = Some(epoch);
                epoch
            }
        };
        let t = (now - epoch.start).as_secs_f64();
        let rtt = self.rtt.srtt().unwrap_or_default().as_secs_f64();
        // Section 4.3: W_est += alpha x segments_acked / cwnd, alpha = 1 once W_est has
        // reached the window before the last reduction.
        let alpha = if epoch.w_est >= self.cwnd_prior { 1.0 } else { params.alpha() };
        let w_est = epoch.w_est + alpha * segments / self.cwnd;
        self.epoch = Some(Epoch { w_est, ..epoch });
        if params.w_cubic(t, epoch.k, self.w_max) < w_est {
            // Section 4.3: the Reno-friendly region.
            self.cwnd = w_est;
        } else {
            // Sections 4.2, 4.4, 4.5: target W_cubic(t + RTT) clamped to [cwnd, 1.5 cwnd],
            // cwnd += (target - cwnd) / cwnd per segment acknowledged.
            let target =
                params.w_cubic(t + rtt, epoch.k, self.w_max).clamp(self.cwnd, MAX_TARGET_GROWTH * self.cwnd);
            self.cwnd += (target - self.cwnd) / self.cwnd * segments;
        }
    }
}

impl Controller for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn on_sent(&mut self, _now: Time, packet: &SentPacket) -> u64 {
        self.recovery.on_sent(packet.seq);
        if let Some(h) = &mut self.hystart {
            h.on_sent(packet.seq);
        }
        0
    }

    fn on_ack(&mut self, now: Time, ack: &AckSample) {
        // RFC 9438 section 4.2 reads the smoothed RTT of RFC 6298.
        self.rtt.on_sample(now, ack.rtt);
        self.recovery.on_ack(ack.seq);
        if self.recovery.active() {
            return;
        }
        if self.cwnd < self.ssthresh {
            // Section 4.10: Reno's slow start (RFC 3465 byte counting, L = 2).
            let divisor = match self.hystart.as_mut().map(|h| h.on_ack(ack.seq, ack.rtt)) {
                Some(Growth::Exit) => {
                    // RFC 9406 section 4.2: CSS is over, congestion avoidance starts here.
                    self.ssthresh = self.cwnd;
                    self.hystart = None;
                    return;
                }
                Some(Growth::Divided(d)) => d,
                None => 1,
            };
            let grown = slow_start_increase(ack.bytes, self.mss) as f64 / self.mss as f64;
            self.cwnd += grown / divisor as f64;
            return;
        }
        self.congestion_avoidance(now, ack.bytes as f64 / self.mss as f64);
    }

    fn on_loss(&mut self, _now: Time, loss: &LossEvent) {
        if !self.recovery.on_loss(loss.seq) {
            return;
        }
        let beta = self.params.beta;
        // RFC 9406 applies to the first slow start only (the contract has no RTO).
        self.hystart = None;
        self.cwnd_prior = self.cwnd;
        // Section 4.7 fast convergence: a flow whose plateau keeps dropping releases bandwidth.
        self.w_max = if self.params.fast_convergence && self.cwnd < self.w_max {
            self.cwnd * (1.0 + beta) / 2.0
        } else {
            self.cwnd
        };
        // Section 4.6: ssthresh = cwnd x beta_cubic, at least 2 segments; cwnd = ssthresh.
        self.ssthresh = (self.cwnd * beta).max(MIN_WINDOW_SEGMENTS);
        self.cwnd = self.ssthresh;
        self.epoch = None;
    }

    fn decision(&self) -> Decision {
        Decision { window: self.window_bytes(), pacing_rate: None }
    }

    fn metrics(&self) -> Metrics {
        let state = if self.recovery.active() {
            "recovery"
        } else if self.hystart.as_ref().is_some_and(HyStart::in_css) {
            "conservative_slow_start"
        } else if self.cwnd < self.ssthresh {
            "slow_start"
        } else {
            "congestion_avoidance"
        };
        Metrics {
            srtt: self.rtt.srtt(),
            extra: vec![
                ("cwnd_segments", self.cwnd),
                ("ssthresh_segments", self.ssthresh),
                ("w_max_segments", self.w_max),
                ("k_s", self.k().unwrap_or(f64::NAN)),
                ("w_est_segments", self.w_est().unwrap_or(f64::NAN)),
            ],
            ..Metrics::new(self.window_bytes(), state)
        }
    }
}

impl Cubic {
    fn window_bytes(&self) -> u64 {
        // `as` saturates; cwnd is finite and at least 2 segments.
        (self.cwnd * self.mss as f64) as u64
    }
}

#[cfg(test)]
mod tests;
