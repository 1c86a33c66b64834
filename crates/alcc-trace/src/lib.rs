//! Mahimahi packet-delivery traces and link logs, synthetic trace generators, and the
//! per-packet metrics every alcc measurement is computed with.
//!
//! - [`trace`]: the packet-delivery trace format ([`Trace`]): parse, validate, write, loop.
//! - [`log`]: Mahimahi link logs ([`Log`], [`LogWriter`]), with alcc's propagation-delay header.
//! - [`record`]: what happened to each packet on a link ([`Recording`]), from a log or the simulator.
#![warn(missing_docs)]

pub mod log;
pub mod record;
pub mod trace;

pub use log::{Log, LogError, LogEvent, LogHeader, LogWriter, TimeUnit};
pub use record::{Opportunity, PacketRecord, Recording};
pub use trace::{Trace, TraceError, PACKET_BYTES};
