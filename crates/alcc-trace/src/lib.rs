//! Mahimahi packet-delivery traces and link logs, synthetic trace generators, and the
//! per-packet metrics every alcc measurement is computed with.
//!
//! The layers, from the link's description to the numbers in a report:
//!
//! - [`trace`]: the packet-delivery trace format ([`Trace`]): parse and validate (errors name
//!   file and line), write, and replay in a loop ([`Trace::opportunities_from`],
//!   [`Trace::capacity_bytes`]).
//! - [`synth`]: seeded synthetic traces, constant-rate ([`synth::constant`]) and cellular-like
//!   ([`synth::cellular`] with [`CellularModel`]); the project's default traces come from here.
//! - [`log`]: Mahimahi link logs, written by a link as it runs ([`LogWriter`]) and read back
//!   ([`Log`]), with alcc's header line for the one-way propagation delay.
//! - [`flow`]: flow logs, a link log whose packet lines name each packet's flow ([`FlowId`]),
//!   read back per flow ([`FlowLog`]) for several flows sharing one bottleneck.
//! - [`record`]: what happened to each packet on a link ([`Recording`]); a [`Log`] converts to
//!   one, and the simulator builds one directly.
//! - [`metrics`]: capacity, throughput, utilization, loss and one-way delay percentiles of a
//!   [`Recording`] ([`summarize`]), and the same in 500 ms bins ([`time_series`]), by
//!   Pantheon's definitions.
//! - [`window`]: the same figures of a link log over a fixed window of the link's clock
//!   ([`summarize_window`]), so that runs whose logs end at different times are judged alike;
//!   what is still queued at the window's end is counted.
//!
//! ```
//! use alcc_trace::{metrics, synth, Log, LogHeader, LogWriter, Trace};
//!
//! // A 12 Mbit/s link (one 1500-byte packet per ms) described by a two-line trace.
//! let trace = Trace::parse_str("2ms.trace", "1\n2\n").unwrap();
//! assert_eq!(trace.mean_rate_mbps(), 12.0);
//! assert_eq!(synth::constant(12.0, 2).unwrap().opportunities_ms(), trace.opportunities_ms());
//!
//! // One packet crosses it: arrives at 0.2 ms, leaves at the 1 ms opportunity.
//! let header = LogHeader { propagation_delay_us: Some(10_000), ..LogHeader::default() };
//! let mut log = LogWriter::new(Vec::new(), &header).unwrap();
//! log.arrival(200, 1500).unwrap();
//! for at_ms in trace.opportunities_from(0).take(4) {
//!     log.opportunity(at_ms * 1000, 1500).unwrap();
//! }
//! log.departure(1000, 1500, 200).unwrap();
//! let text = log.finish().unwrap();
//!
//! let summary = metrics::summarize(&Log::parse("link.log", text.as_slice()).unwrap().to_recording());
//! assert_eq!(summary.capacity_mbps, 4.0 * 12_000.0 / 3_000.0); // 4 opportunities over 3 ms
//! assert_eq!(summary.loss, 0.0);
//! assert_eq!(summary.delay_p50_ms, Some(11.0)); // 1 ms in the ms-resolution log + 10 ms
//! ```
#![warn(missing_docs)]
#![deny(unsafe_code)]

pub mod flow;
pub mod log;
pub mod metrics;
pub mod record;
pub mod synth;
pub mod trace;
pub mod window;

pub use flow::{FlowId, FlowLog};
pub use log::{Log, LogError, LogEvent, LogHeader, LogWriter, TimeUnit};
pub use metrics::{summarize, time_series, Bin, Summary};
pub use record::{Opportunity, PacketRecord, Recording};
pub use synth::{CellularModel, SynthError};
pub use trace::{Trace, TraceError, PACKET_BYTES};
pub use window::{summarize_window, Window, WindowError, WindowSummary};
