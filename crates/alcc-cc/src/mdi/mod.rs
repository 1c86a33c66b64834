//! `mdi`: Model-Driven Interpretable congestion control, a Markov model of another
//! algorithm's behaviour (the ALCC paper, section 4.3 and Figure 4: the Android library's
//! controller; the model format is `../shared/mdi/README.md`).
//!
//! Every 5 ms epoch ([`epoch`]) the controller observes the largest RTT of the epoch, `Dmax`,
//! and buckets its scaled relative change from the previous epoch ([`buckets`]). With the
//! previous state (the previous delay bucket and the bucket of the window change made then) and
//! the new delay bucket, the model ([`model`]) gives a distribution over the next window-change
//! bucket; the controller samples it with a seeded generator ([`sampler`]) and moves the window
//! by that bucket's centre. Nothing else: no slow start, no reaction to loss but through delay.
//! A model is trained from any controller's epochs in the simulator by [`train`].
//!
//! Spec: `mdi[:model=FILE][,seed=N]`. The model defaults to [`BUILTIN_MODEL`], the project's
//! own model of Verus; the seed defaults to the flow's [`Config::seed`](crate::Config::seed). Behaviour the published controller left to
//! hand-tuned constants or to chance, all deliberate and shared with the Java library:
//! - An unseen situation borrows the nearest seen state's distribution ([`model`]).
//! - A delay change outside the model's range counts as the edge bucket ([`buckets`]).
//! - The generator is seeded (SplitMix64), so a run is reproducible.
//! - The window starts at [`INITIAL_WINDOW`] packets and stays within [`MIN_WINDOW`] and
//!   [`MAX_WINDOW`]; the state's window bucket is that of the change actually made (after
//!   these limits), as training records it.
//! - Epochs start at the flow's first event. An event at or after an epoch's end closes that
//!   epoch first (so an ACK belongs to the epoch it arrived in, whatever order the transport
//!   calls in); after a jump in time only one epoch runs, as in Verus.
//! - No pacing: the window alone limits what is in flight.

pub mod buckets;
pub mod epoch;
pub mod load;
pub mod model;
pub mod sampler;
pub mod train;

use std::path::Path;
use std::sync::Arc;

use crate::controller::{Config, Controller};
use crate::event::{AckSample, Decision, LossEvent, SentPacket};
use crate::metrics::Metrics;
use crate::spec::{Params, SpecError};
use crate::time::Time;

pub use model::{Layout, MdiModel, ModelError};

use buckets::{apply_change, relative_change};
use epoch::{DelayEpochs, EPOCH};
use sampler::Uniform;

/// The project's model of our Verus, compiled in: `crates/alcc-cc/models/mdi-verus.csv`, made by
/// `alcc mdi train --cc verus --synthetic 60 --out crates/alcc-cc/models/mdi-verus.csv`
/// (60 synthetic cellular traces of 60 s, 3-20 Mbit/s, 10-40 ms; about 719 000 transitions).
/// Retrain it when Verus changes.
pub const BUILTIN_MODEL: &str = include_str!("../../models/mdi-verus.csv");

/// The parsed [`BUILTIN_MODEL`], shared by every flow that uses it.
pub fn builtin_model() -> Result<Arc<MdiModel>, ModelError> {
    static MODEL: std::sync::OnceLock<Result<Arc<MdiModel>, String>> = std::sync::OnceLock::new();
    MODEL
        .get_or_init(|| MdiModel::read(BUILTIN_MODEL.as_bytes()).map(Arc::new).map_err(|e| e.to_string()))
        .clone()
        .map_err(ModelError::Whole)
}

/// The window a flow starts with, in packets.
pub const INITIAL_WINDOW: f64 = 10.0;
/// The smallest window, in packets.
pub const MIN_WINDOW: f64 = 2.0;
/// The largest window, in packets (keeps repeated growth finite).
pub const MAX_WINDOW: f64 = 1_000_000.0;

/// Counters of what an MDI flow did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MdiStats {
    /// Epochs closed.
    pub epochs: u64,
    /// Window decisions drawn from the model.
    pub decisions: u64,
    /// Decisions whose situation training never saw (answered by the nearest seen state).
    pub unseen: u64,
}

/// One MDI flow.
#[derive(Clone, Debug)]
pub struct Mdi {
    model: Arc<MdiModel>,
    mss: u64,
    window: f64,
    delay_bucket: usize,
    window_bucket: usize,
    prev_dmax_ms: Option<f64>,
    epochs: DelayEpochs,
    next_epoch: Option<Time>,
    uniform: Uniform,
    stats: MdiStats,
}

impl Mdi {
    /// A fresh flow on `model`, sampling with `seed`. The first state is "no change" in both
    /// variables.
    pub fn new(model: Arc<MdiModel>, seed: u64, config: &Config) -> Mdi {
        let layout = model.layout();
        Mdi {
            delay_bucket: layout.delay.bucket_of(0.0),
            window_bucket: layout.window.bucket_of(0.0),
            model,
            mss: config.mss.max(1),
            window: INITIAL_WINDOW,
            prev_dmax_ms: None,
            epochs: DelayEpochs::new(),
            next_epoch: None,
            uniform: Uniform::new(seed),
            stats: MdiStats::default(),
        }
    }

    /// Builds from `model=FILE` (default: [`BUILTIN_MODEL`]) and `seed=N` (default: the
    /// flow's seed).
    pub fn from_params(params: &mut Params, config: &Config) -> Result<Mdi, SpecError> {
        let seed = params.take_u64("seed", config.seed, 0, u64::MAX)?;
        let model = match params.take_string("model") {
            Some(path) => {
                load::load(Path::new(&path)).map_err(|e| params.bad_value("model", &path, &e.to_string()))?
            }
            None => builtin_model().map_err(|e| params.bad_value("model", "(built in)", &e.to_string()))?,
        };
        Ok(Mdi::new(model, seed, config))
    }

    /// The window in packets.
    pub fn window_packets(&self) -> f64 {
        self.window
    }

    /// The current state: (delay bucket, window bucket).
    pub fn state(&self) -> (usize, usize) {
        (self.delay_bucket, self.window_bucket)
    }

    /// What the flow has done so far.
    pub fn stats(&self) -> MdiStats {
        self.stats
    }

    /// The model.
    pub fn model(&self) -> &MdiModel {
        &self.model
    }

    /// Starts the epoch clock at the first event, and closes an epoch that has ended.
    fn catch_up(&mut self, now: Time) {
        match self.next_epoch {
            None => self.next_epoch = Some(now + EPOCH),
            Some(end) if now >= end => {
                self.run_epoch(now);
                let next = end + EPOCH;
                self.next_epoch = Some(if next <= now { now + EPOCH } else { next });
            }
            Some(_) => {}
        }
    }

    /// One epoch: observe `Dmax`, bucket its change, sample the next window bucket, move.
    fn run_epoch(&mut self, now: Time) {
        self.stats.epochs += 1;
        let Some(dmax) = self.epochs.close(now) else { return };
        let Some(prev) = self.prev_dmax_ms.replace(dmax) else { return };
        let layout = self.model.layout();
        let c = layout.delay.bucket_of(relative_change(prev, dmax));
        let row = layout.state(self.delay_bucket, self.window_bucket);
        if !self.model.seen(row, c) {
            self.stats.unseen += 1;
        }
        let sampled = self.model.sample(row, c, self.uniform.next_f64());
        let old = self.window;
        let new = apply_change(old, layout.window.centre(sampled)).clamp(MIN_WINDOW, MAX_WINDOW);
        self.window = new;
        self.delay_bucket = c;
        self.window_bucket = layout.window.bucket_of(relative_change(old, new));
        self.stats.decisions += 1;
    }

    fn window_bytes(&self) -> u64 {
        // `as` saturates; the window is finite and at least MIN_WINDOW.
        (self.window * self.mss as f64) as u64
    }
}

impl Controller for Mdi {
    fn name(&self) -> &'static str {
        "mdi"
    }

    fn on_sent(&mut self, now: Time, _packet: &SentPacket) -> u64 {
        self.catch_up(now);
        0
    }

    fn on_ack(&mut self, now: Time, ack: &AckSample) {
        self.catch_up(now);
        self.epochs.on_rtt(now, ack.rtt);
    }

    fn on_loss(&mut self, now: Time, _loss: &LossEvent) {
        self.catch_up(now);
    }

    fn on_timer(&mut self, now: Time) {
        self.catch_up(now);
    }

    fn next_timer(&self) -> Option<Time> {
        self.next_epoch
    }

    fn decision(&self) -> Decision {
        Decision { window: self.window_bytes(), pacing_rate: None }
    }

    fn metrics(&self) -> Metrics {
        Metrics {
            extra: vec![
                ("window_packets", self.window),
                ("dmax_ms", self.prev_dmax_ms.unwrap_or(f64::NAN)),
                ("delay_bucket", self.delay_bucket as f64),
                ("window_bucket", self.window_bucket as f64),
                ("unseen", self.stats.unseen as f64),
            ],
            ..Metrics::new(self.window_bytes(), "mdi")
        }
    }
}

#[cfg(test)]
mod tests;
