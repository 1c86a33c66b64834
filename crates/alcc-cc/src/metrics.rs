//! A small snapshot of a controller's state, for telemetry and applications.

use std::time::Duration;

use serde::Serialize;

/// A controller's state at one moment. New fields may be added; construct it with
/// [`Metrics::new`] and set what the algorithm knows.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Metrics {
    /// The window in bytes, as in [`Decision::window`](crate::Decision::window).
    pub window: u64,
    /// The pacing rate in bytes per second, if the algorithm paces.
    pub pacing_rate: Option<u64>,
    /// Smoothed RTT, if the algorithm keeps one.
    pub srtt: Option<Duration>,
    /// Minimum RTT, if the algorithm keeps one.
    pub min_rtt: Option<Duration>,
    /// A short name of the algorithm's state (`"slow_start"`, `"loss"`, ...).
    pub state: &'static str,
    /// Algorithm-specific values by name (Copa's velocity, Verus's target delay, ...).
    pub extra: Vec<(&'static str, f64)>,
}

impl Metrics {
    /// Metrics with the given window and state and nothing else known.
    pub fn new(window: u64, state: &'static str) -> Metrics {
        Metrics { window, state, ..Metrics::default() }
    }
}
