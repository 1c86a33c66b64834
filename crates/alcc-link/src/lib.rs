//! A trace-driven link emulator following Mahimahi's link model.
//!
//! Layers, from the bottom:
//! - [`schedule`], [`queue`], [`link`], [`delay`], [`loss`]: the emulated link, sans-IO,
//!   driven by a `now` in microseconds and tested exactly;
//! - `sys`, [`tun`], [`netns`]: TUN devices and network namespaces (Linux, root);
//! - [`relay`]: the I/O loop moving packets from one TUN device through a link to the other
//!   (one real-time thread per direction), its log written by a `logger` thread in
//!   Mahimahi's format (via `alcc_trace::LogWriter`) with the propagation delay in the header;
//! - [`probe`]: TCP and UDP traffic for measuring a testbed;
//! - [`testbed`]: the public API, two namespaces ("server" and "client") joined only by an
//!   uplink and a downlink.
//!
//! See the crate's README for the model, the deliberate differences from Mahimahi, and what
//! is not supported.
#![warn(missing_docs)]
#![deny(unsafe_code)]

pub mod delay;
pub mod error;
pub mod link;
mod logger;
pub mod loss;
pub mod netns;
mod pool;
pub mod probe;
pub mod queue;
pub mod relay;
pub mod schedule;
#[allow(unsafe_code)] // the crate's one module of system calls; every block has a SAFETY line
mod sys;
pub mod testbed;
pub mod tun;

pub use delay::DelayLine;
pub use error::LinkError;
pub use link::{Link, LinkCounters, LinkEvent};
pub use loss::BernoulliLoss;
pub use queue::{PacketQueue, QueueSpec, Queued};
pub use relay::{CounterSnapshot, DirectionReport, Lateness};
pub use schedule::{Schedule, OPPORTUNITY_BYTES};
pub use testbed::{
    set_congestion_control, Dir, DirectionConfig, Side, Testbed, TestbedConfig, TestbedReport, CLIENT_ADDR,
    SERVER_ADDR,
};
