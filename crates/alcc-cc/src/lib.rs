//! Congestion-control algorithms for alcc, sans-IO: Verus, Copa, Sprout, Reno, CUBIC, and MDI
//! (a Markov model of another algorithm, trained here from the simulator).
//!
//! Every algorithm implements [`Controller`]: the transport reports what happened (a packet
//! sent, acknowledged or lost, a receiver report, a timer) with the time passed in as
//! [`Time`], and reads back a [`Decision`] (a window in bytes and an optional pacing rate).
//! No algorithm reads a clock or touches a socket, so the same code runs over kernel TCP, over
//! alcc's framing, over UDP, and in the simulator, deterministically.
//!
//! Algorithms whose model lives at the receiver (Sprout) also implement [`ReceiverModel`].
//! [`drwa`] is the receiver alone: a receive window for any sender (DRWA, IMC 2012).
//! [`fse`] couples the flows of one host: a flow group divides the sum of its controllers' rates
//! by priority (RFC 8699's active Flow State Exchange).
//! Controllers are built by name with [`registry::by_name`] (`"copa:delta=0.5"`).
//!
//! Pieces every transport and controller shares, so that the simulator and the engine treat a
//! controller alike: [`pacer::Pacer`] (when the next packet may leave at the pacing rate),
//! [`rtt::RttEstimator`] (RFC 6298 smoothing, latest and windowed minimum RTT),
//! [`sent_packets::SentPackets`] (numbered packets in flight, ACK samples, RFC 8985 loss
//! detection: the simulator and UDP mode), [`windowed::WindowedFilter`] (exact sliding
//! minimum and maximum) and [`recovery::Recovery`] (one congestion event per round trip).
#![warn(missing_docs)]
#![deny(unsafe_code)]

pub mod controller;
pub mod copa;
pub mod cubic;
pub mod drwa;
pub mod event;
pub mod fixed;
pub mod fse;
pub mod mdi;
pub mod metrics;
pub mod pacer;
pub mod recovery;
pub mod registry;
pub mod reno;
pub mod rtt;
pub mod sent_packets;
pub mod sim;
pub mod spec;
pub mod sprout;
pub mod time;
pub mod verus;
pub mod windowed;

#[cfg(test)]
mod testing;

pub use controller::{Config, Controller, ReceiverModel, RttSamples};
pub use event::{AckSample, Arrival, Decision, Forecast, LossEvent, ReceiverReport, SenderHint, SentPacket};
pub use metrics::Metrics;
pub use registry::{build, build_receiver, by_name};
pub use spec::{Params, SpecError};
pub use time::Time;
