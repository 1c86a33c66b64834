//! The alcc engine: an application writes into an [`AlccStream`]; alcc lets the bytes into
//! the kernel's TCP socket only as fast as a user-space controller from `alcc-cc` allows, so
//! the kernel's large window never becomes a standing queue in the network. Nothing is added
//! on the wire and nothing changes at the client (in the default kernel mode).
//!
//! Layers, from the application down:
//! - [`stream`] and [`listener`]: the public API (std `Read`/`Write`, blocking or not).
//! - `flow`: per-flow state, a bounded send queue shared with the application, and the step
//!   that writes chunks within the controller's window at the pacer's pace.
//! - `driver`: one thread per process, epoll over every flow, a timer heap.
//! - [`feedback`]: where deliveries and losses come from; [`feedback::kernel`] reads ACK
//!   timestamps from the socket error queue and TCP_INFO, [`feedback::framed`] the
//!   peer's ACK and report frames, [`feedback::udp`] per-datagram ACKs.
//! - [`ledger`]: pure bookkeeping, unit- and property-tested. The pacer is
//!   [`alcc_cc::pacer::Pacer`], the same one the simulator uses.
//! - `sys`: every system call, and all of the crate's `unsafe`.
//! - [`underlay`]: the kernel congestion control under the controller, a kernel one by name
//!   or alcc's BPF struct_ops one (`alcc:hold`, `alcc:follow`) that takes its window from
//!   the controller (bpf/alcc_underlay.bpf.c).
//!
//! Framed mode ([`Mode::Framed`]): both ends run alcc; [`wire`] is its wire format, the
//! sender frames each chunk, the receiving side ([`AlccStream::connect`] in framed mode)
//! returns only application bytes and answers with ACK frames and, for Sprout, forecasts
//! from its receiver-side model.
//!
//! UDP mode ([`Mode::Udp`], [`AlccStream::accept_udp`]): the same frames as datagrams, every
//! one acknowledged, losses detected by `alcc_cc::sent_packets::SentPackets`, no retransmission.
//!
//! Linux only. Not supported yet: a readiness notification for non-blocking writers (they
//! retry on `WouldBlock`).
#![warn(missing_docs)]

mod driver;
pub mod error;
pub mod feedback;
mod flow;
mod framing;
pub mod info;
pub mod ledger;
pub mod listener;
pub mod mode;

pub mod receiver;
pub mod stream;
pub mod sys;
mod udp_receiver;
pub mod underlay;
pub mod wire;

pub use error::{Error, Result};
pub use info::FlowInfo;
pub use listener::AlccListener;
pub use mode::Mode;
pub use stream::{driver_stats, AlccStream, DriverStats, InfoHandle, Options};
pub use underlay::{Policy, Underlay};
