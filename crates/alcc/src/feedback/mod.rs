//! Feedback sources: how a flow learns what was delivered and what was lost.
//!
//! Each transport (`crate::transport`) is paired with one source: the driver asks a flow's
//! [`FeedbackSource`] for news whenever the flow's socket reports activity (or its deadline
//! passes), the source settles the flow's [`SentChunks`](crate::sent_chunks::SentChunks) and
//! returns each [`Feedback`] for the controller. [`kernel`] reads the kernel's own ACK
//! information (error-queue ACK timestamps and TCP_INFO), [`framed`] the receiver's ACK and
//! report frames from the same socket, [`udp`] the receiver's ACK and report datagrams.
//! [`budget`] bounds what one peer can make a step do (frames read, events kept, floods cut).

pub mod budget;
pub mod framed;
pub mod kernel;
pub mod udp;

use std::io;
use std::os::fd::RawFd;

use alcc_cc::{AckSample, LossEvent, ReceiverReport, Time};

use crate::sent_chunks::{Chunk, SentChunks};
use crate::sys::TcpInfo;

/// Counters of a feedback source, for diagnostics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FeedbackStats {
    /// Acknowledgements received from the primary signal (ACK timestamps, ACK frames, echoes).
    pub primary_acks: u64,
    /// Chunks the primary signal acknowledged (an ACK stamp that matched, an ACK frame).
    pub primary_settled: u64,
    /// Chunks acknowledged by a fallback (TCP_INFO) because the primary signal missed them.
    pub fallback_acks: u64,
    /// Sum over primary acknowledgements of the time from the kernel's stamp to the driver
    /// reading it, microseconds (0 where the source has no stamp clock).
    pub ack_latency_total_us: u64,
    /// The largest such time, microseconds.
    pub ack_latency_max_us: u64,
    /// UDP mode: datagrams dropped as not the flow's own (another connection id, garbage).
    pub foreign: u64,
    /// Kernel mode: steps woken by the socket that ended after one TCP_INFO read, nothing new.
    pub quiet_steps: u64,
}

/// One thing a feedback source learned.
#[derive(Clone, Debug, PartialEq)]
pub enum Feedback {
    /// A chunk was delivered.
    Ack(AckSample),
    /// A chunk is considered lost (the kernel retransmitted it).
    Loss(LossEvent),
    /// UDP mode: the first ACK of a packet already declared lost (a [`Feedback::Loss`] went
    /// out for it), for [`Controller::on_late_ack`](alcc_cc::Controller::on_late_ack). Kernel
    /// and framed modes never report one.
    LateAck(AckSample),
    /// The receiver-side model reported (framed mode: Sprout's forecast).
    Report(ReceiverReport),
}

/// A source of delivery information for one flow.
pub trait FeedbackSource: Send {
    /// Its name (`"kernel"`, `"framed"`, `"udp"`).
    fn name(&self) -> &'static str;

    /// Reads whatever the socket `fd` has to say, settles the sent chunks (acknowledged and lost
    /// chunks) and appends what the controller must hear to `out`, oldest first.
    fn collect(
        &mut self,
        fd: RawFd,
        now: Time,
        chunks: &mut SentChunks,
        out: &mut Vec<Feedback>,
    ) -> io::Result<()>;

    /// The flow just sent `chunk` (sources that track packets themselves, UDP mode).
    fn on_sent(&mut self, _chunk: &Chunk) {}

    /// Whether the last `collect` stopped at its budget ([`budget::READ_BUDGET`],
    /// [`budget::FRAME_BUDGET`]) with more to read: the flow is stepped again at once, after
    /// the other due flows.
    fn backlogged(&self) -> bool {
        false
    }

    /// When the source wants `collect` called even without socket activity (a loss timer).
    fn next_deadline(&self) -> Option<Time> {
        None
    }

    /// When what the last `collect` appended arrived, for a source that knows (kernel
    /// mode: each ACK stamp's time): `(i, t)`, the events from index `i` of that `collect`'s
    /// output on (up to the next entry's) arrived at `t`; events before the first entry, or
    /// all with none, when the step began.
    fn arrivals(&self) -> &[(usize, Time)] {
        &[]
    }

    /// The TCP_INFO read by the last `collect`, if this source reads one.
    fn tcp_info(&self) -> Option<&TcpInfo> {
        None
    }

    /// Its counters.
    fn stats(&self) -> FeedbackStats {
        FeedbackStats::default()
    }
}
