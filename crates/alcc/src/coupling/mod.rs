//! Coupled congestion control between the flows of a process (docs/coupled-flows.md): flows
//! grouped by peer address, by name, or not at all ([`Grouping`]), each with a priority
//! weight; the driver thread owns the groups ([`alcc_cc::fse::FlowGroup`], RFC 8699's active
//! FSE). Each flow's own controller keeps running; after every step in which the controller
//! took feedback, the flow reports its controller's change to its group and runs under the
//! share it gets back (the controller adopts it, [`alcc_cc::Controller::adopt_share`], or its
//! decision is scaled to it). A flow joins at its first step with a rate (an RTT known) and
//! leaves when it ends. A group of one flow leaves its controller exactly as it runs alone.
//!
//! Across processes, a named group with [`Options::manager`](crate::Options::manager) lives in
//! the host's manager ([`manager`], `alcc manager`), reached over a Unix socket with the tiny
//! protocol of [`protocol`]; the driver keeps the connection ([`remote`]).

mod grouping;
pub(crate) mod groups;
pub mod manager;
pub mod protocol;
pub(crate) mod remote;

pub use self::grouping::{check_weight, parse_weight, GroupKey, Grouping, MAX_GROUP_NAME};
pub use self::manager::{Access, Manager, MEMBER_TIMEOUT};
pub use self::remote::REPORT_EVERY;
