//! Mahimahi packet-delivery traces and link logs, synthetic trace generators, and the
//! per-packet metrics every alcc measurement is computed with.
//!
//! - [`trace`]: the packet-delivery trace format ([`Trace`]): parse, validate, write, loop.
//! - [`log`]: Mahimahi link logs ([`Log`], [`LogWriter`]), with alcc's propagation-delay header.
//! - [`metrics`]: capacity, throughput, utilization, loss, delay percentiles, 500 ms series.
//! - [`synth`]: seeded synthetic traces, constant-rate and cellular-like ([`CellularModel`]).
//! - [`record`]: what happened to each packet on a link ([`Recording`]), from a log or the simulator.
#![warn(missing_docs)]

pub mod log;
pub mod metrics;
pub mod record;
pub mod synth;
pub mod trace;

pub use log::{Log, LogError, LogEvent, LogHeader, LogWriter, TimeUnit};
pub use metrics::{summarize, time_series, Bin, Summary};
pub use record::{Opportunity, PacketRecord, Recording};
pub use synth::{CellularModel, SynthError};
pub use trace::{Trace, TraceError, PACKET_BYTES};
