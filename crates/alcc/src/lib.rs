//! The alcc engine: an application writes into an [`AlccStream`]; alcc lets the bytes into
//! the network only as fast as a user-space controller from `alcc-cc` allows, so the kernel's
//! large window never becomes a standing queue in the network. In the default kernel mode
//! nothing is added on the wire and nothing changes at the client.
//!
//! # Layout, from the application down
//!
//! - [`stream`]: [`AlccStream`], the sending side (std `Read`/`Write`, blocking or not,
//!   `close`, `abort`, `info`, `set_cc`), and [`listener`]: [`AlccListener`], whose
//!   accepted connections send. [`options`]: [`Options`], how a flow is set up.
//! - [`receiver`]: [`AlccReceiver`], the receiving side of framed and UDP mode (both ends
//!   run alcc): std `Read` of the sender's bytes, with the ACKs and the receiver-side model
//!   (Sprout's forecaster) driven inside `read`. A separate type: it shares nothing with the
//!   sending side but the wire format.
//! - `flow`: one sending flow. `flow::shared` is what the application and the driver share
//!   (the bounded send queue, close/abort requests, the flow's fate, its [`FlowInfo`]) and
//!   the one wait every blocking call uses (write, flush, close, `set_cc`); `flow::control`
//!   is `none` (plain kernel TCP, an enum variant) or a controller with its pacer
//!   ([`alcc_cc::pacer::Pacer`], the simulator's); `flow::chunk` sizes chunks; the step
//!   moves bytes from the queue through the transport.
//! - `transport`: one per [`Mode`], chosen once when the flow starts, each with its own
//!   write path and paired with its feedback source, and the one place that prepares a
//!   socket for a controller: `kernel` (one `sendmsg` record per chunk), `framed` (a data
//!   frame per chunk), `udp` (a datagram per chunk).
//! - [`feedback`]: what the transport learns back, mirrored one to one:
//!   [`feedback::kernel`] (ACK timestamps from the socket error queue and TCP_INFO),
//!   [`feedback::framed`] (the peer's ACK and report frames), [`feedback::udp`]
//!   (per-datagram ACKs, losses by [`alcc_cc::sent_packets::SentPackets`]). Each settles
//!   the flow's [`sent_chunks`] and hands ACK samples, losses and reports to the controller.
//! - `driver`: one thread per process, epoll (edge-triggered) over every flow's socket, an
//!   eventfd inbox, one timerfd over a heap of per-flow deadlines. Flow ids cannot collide
//!   with its own tokens.
//! - [`underlay`]: the kernel congestion control under the controller, a kernel one by name
//!   or alcc's BPF struct_ops one (`alcc:hold`, `alcc:follow`) that takes its window from
//!   the controller (bpf/alcc_underlay.bpf.c); set up with the socket, synced once per step.
//! - [`exit`]: the process's exit hook ([`flush_at_exit`]): flows still holding queued bytes
//!   are closed and handed to the kernel within a bounded linger, never silently dropped.
//! - [`wire`]: framed and UDP mode's wire format (docs/wire-format.md).
//! - `tokio_io` (feature `tokio`): `AsyncAlccStream` (tokio's AsyncRead/AsyncWrite, waiting
//!   on the flow's readiness descriptor) and `AsyncAlccListener`.
//! - [`sys`]: every system call, and all of the crate's `unsafe`.
//!
//! # Modes
//!
//! [`Mode::Kernel`] (default): the accepting (or connecting) side sends under alcc; the
//! peer is any TCP program. [`Mode::Framed`]: both ends run alcc over TCP; an
//! [`AlccStream`] sends (accepted or connected), an [`AlccReceiver`] receives.
//! [`Mode::Udp`]: the same frames as datagrams ([`AlccStream::accept_udp`] sends,
//! [`AlccReceiver::connect`] receives), every one acknowledged, no retransmission.
//!
//! # Event loops and shared descriptors
//!
//! [`AlccStream::writable_fd`] is a per-flow descriptor (an eventfd, made on first use) that
//! polls EPOLLOUT exactly while a non-blocking write would not fail with `WouldBlock`: the
//! queue has room, or the flow ended or failed (the write then returns the error at once:
//! that is how a failure wakes a waiter). Level- and edge-triggered; one edge per
//! transition from full to room (flow/shared.rs module docs). C: `alcc_writable_fd`.
//! [`AlccStream::from_shared_fd`] takes over a `dup` of a socket the application keeps
//! using (the engine leaves O_NONBLOCK alone and passes MSG_DONTWAIT, and leaves a closed
//! connection's pending error for the application to read), ended with
//! [`AlccStream::release`] (close(2) semantics: flush, then let go without a FIN) or
//! [`AlccStream::finish`] (shutdown(SHUT_WR)); crates/alcc-preload builds on them. In a
//! forked child the first flow starts a driver of its own; flows inherited from the parent
//! fail there (their bytes are the parent's driver's to move).
//!
//! Linux only.
#![warn(missing_docs)]
#![deny(unsafe_code)]

pub mod coupling;
mod driver;
pub mod error;
pub mod exit;
pub mod feedback;
mod flow;
pub mod info;
pub mod listener;
pub mod mode;
pub mod options;
pub mod receive_window;
pub mod receiver;
pub mod sent_chunks;
pub mod step_latency;
pub mod stream;
#[allow(unsafe_code)] // the crate's one module of system calls; every block has a SAFETY line
pub mod sys;
#[cfg(feature = "tokio")]
pub mod tokio_io;
mod transport;
pub mod udp_listener;
pub mod underlay;
pub mod wire;

pub use coupling::Grouping;
pub use error::{errno_of, Error, Result};
pub use exit::flush_at_exit;
pub use info::FlowInfo;
pub use listener::AlccListener;
pub use mode::Mode;
pub use options::{check_spec, check_spec_for, Options};
pub use receive_window::{ReceiveWindow, WindowControl, WindowStats};
pub use receiver::{AlccReceiver, ReceiverStats};
pub use step_latency::{Percentiles, StepLatency};
pub use stream::{driver_stats, AlccStream, DriverStats, InfoHandle};
#[cfg(feature = "tokio")]
pub use tokio_io::{AsyncAlccListener, AsyncAlccStream};
pub use udp_listener::AlccUdpListener;
pub use underlay::{Policy, Underlay};
