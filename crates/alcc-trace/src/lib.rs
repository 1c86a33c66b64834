//! Mahimahi packet-delivery traces and link logs, synthetic trace generators, and the
//! per-packet metrics every alcc measurement is computed with.
//!
//! - [`trace`]: the packet-delivery trace format ([`Trace`]): parse, validate, write, loop.
#![warn(missing_docs)]

pub mod trace;

pub use trace::{Trace, TraceError, PACKET_BYTES};
