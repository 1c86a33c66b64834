//! A discrete-event simulator of one flow (or several, [`flows`]) over one trace-driven
//! bottleneck.
//!
//! It drives any [`Controller`](crate::Controller) (and its [`ReceiverModel`](crate::ReceiverModel))
//! in virtual time, so a minute of a cellular trace runs in milliseconds and every run is
//! deterministic for a seed. See [`Scenario`] for the model and [`SimResult`] for what it records.

pub mod ack;
pub mod bottleneck;
pub mod capacity;
mod clock;
mod events;
pub mod flows;
pub mod link;
pub mod parse;
pub mod record;
pub mod scenario;

pub use ack::{AckPolicy, DelayedAcks};
pub use bottleneck::QueueLimit;
pub use capacity::Capacity;
pub use flows::FlowSpec;
pub use parse::ParseSimSpecError;
pub use record::{AckRecord, DropCause, Outcome, PacketRecord, SimResult};
pub use scenario::{ReturnPath, Scenario, SimError};
