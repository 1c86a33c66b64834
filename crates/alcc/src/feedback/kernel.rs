//! Kernel feedback: ACK timestamps from the socket error queue, and TCP_INFO.
//!
//! Each chunk is written with MSG_EOR, so with SO_TIMESTAMPING (TX_SCHED | TX_ACK | OPT_ID |
//! OPT_ID_TCP | OPT_TSONLY) the kernel queues, per chunk, a SCHED stamp when it enters the
//! scheduler and an ACK stamp when its last byte is cumulatively acknowledged, both carrying
//! the 32-bit offset of that byte. The network RTT of a chunk is ACK minus SCHED (DESIGN.md,
//! "The engine"). TCP_INFO backs this up: `tcpi_bytes_acked` acknowledges whatever the
//! error queue missed (a full queue drops stamps) and chunks acknowledged in part, and growth
//! of `tcpi_total_retrans` reports losses, one retransmitted segment marking the oldest
//! chunk not yet reported lost.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use alcc_cc::{AckSample, LossEvent, Time};

use crate::feedback::{Feedback, FeedbackSource, FeedbackStats};
use crate::sent_chunks::{Chunk, SentChunks};
use crate::sys::{self, Stamp, StampKind, TcpInfo};

/// Kernel-mode feedback for one TCP socket.
#[derive(Debug, Default)]
pub struct KernelFeedback {
    stamps: Vec<Stamp>,
    acked_base: Option<u64>,
    retrans_seen: u32,
    last_info: TcpInfo,
    /// ACK timestamps received, for diagnostics.
    pub ack_stamps: u64,
    /// Chunks acknowledged through TCP_INFO because their stamp had not arrived.
    pub info_acks: u64,
    /// Sum of the ages of the ACK stamps when the driver read them, microseconds.
    pub ack_latency_total_us: u64,
    /// The oldest ACK stamp the driver read, microseconds.
    pub ack_latency_max_us: u64,
}

impl KernelFeedback {
    /// A source for a socket on which [`sys::enable_ack_timestamps`] was just called, before
    /// any byte was written.
    pub fn new() -> KernelFeedback {
        KernelFeedback::default()
    }

    /// The TCP_INFO read by the last [`collect`](FeedbackSource::collect).
    pub fn last_info(&self) -> &TcpInfo {
        &self.last_info
    }

    fn settle(chunks: &mut SentChunks, offset: u64, ack_rtt: impl Fn(&Chunk) -> Duration) -> Vec<Feedback> {
        chunks
            .ack_through(offset)
            .into_iter()
            .filter(|c| !c.lost)
            .map(|c| {
                Feedback::Ack(AckSample {
                    seq: c.seq,
                    bytes: c.bytes(),
                    sent_at: c.sent_at,
                    rtt: ack_rtt(&c),
                    bytes_in_flight: chunks.bytes_in_flight_not_lost(),
                    delivered: chunks.acked(),
                    memo: c.memo,
                })
            })
            .collect()
    }
}

/// The RTT of a chunk acknowledged at `ack_ns` (stamp clock): ACK minus SCHED when the SCHED
/// stamp is known, else the engine-clock time from the write to the acknowledgement.
fn stamp_rtt(chunk: &Chunk, ack_ns: u64, now: Time, realtime_now_ns: u64) -> Duration {
    match chunk.sched_ns {
        Some(s) if ack_ns >= s => Duration::from_nanos(ack_ns - s),
        _ => {
            let age = Duration::from_nanos(realtime_now_ns.saturating_sub(ack_ns));
            now.saturating_sub(age).saturating_since(chunk.sent_at)
        }
    }
}

impl FeedbackSource for KernelFeedback {
    fn name(&self) -> &'static str {
        "kernel"
    }

    fn collect(
        &mut self,
        fd: RawFd,
        now: Time,
        chunks: &mut SentChunks,
        out: &mut Vec<Feedback>,
    ) -> io::Result<()> {
        self.stamps.clear();
        sys::drain_error_queue(fd, &mut self.stamps)?;
        let realtime = sys::realtime_ns();
        let stamps = std::mem::take(&mut self.stamps);
        for s in &stamps {
            let end = chunks.unwrap_id(s.id);
            match s.kind {
                StampKind::Sched => chunks.note_sched(end, s.ns),
                StampKind::Snd => {}
                StampKind::Ack => {
                    self.ack_stamps += 1;
                    let ns = s.ns;
                    // How long the stamp waited for the driver: the user-space part of the
                    // feedback loop, which a controller's RTT samples do not include.
                    let age_us = realtime.saturating_sub(ns) / 1_000;
                    self.ack_latency_total_us = self.ack_latency_total_us.saturating_add(age_us);
                    self.ack_latency_max_us = self.ack_latency_max_us.max(age_us);
                    out.extend(Self::settle(chunks, end, |c| stamp_rtt(c, ns, now, realtime)));
                }
            }
        }
        self.stamps = stamps;

        let info = sys::tcp_info(fd)?;
        let base = *self.acked_base.get_or_insert(info.bytes_acked);
        let through = info.bytes_acked.saturating_sub(base);
        let before = out.len();
        out.extend(Self::settle(chunks, through, |c| now.saturating_since(c.sent_at)));
        self.info_acks += (out.len() - before) as u64;

        let retrans = info.total_retrans.wrapping_sub(self.retrans_seen);
        self.retrans_seen = info.total_retrans;
        if retrans > 0 && retrans < u32::MAX / 2 {
            for c in chunks.mark_lost(u64::from(retrans)) {
                out.push(Feedback::Loss(LossEvent {
                    seq: c.seq,
                    bytes: c.bytes(),
                    sent_at: c.sent_at,
                    bytes_in_flight: chunks.bytes_in_flight_not_lost(),
                    memo: c.memo,
                }));
            }
        }
        self.last_info = info;
        Ok(())
    }

    fn tcp_info(&self) -> Option<&TcpInfo> {
        Some(&self.last_info)
    }

    fn stats(&self) -> FeedbackStats {
        FeedbackStats {
            primary_acks: self.ack_stamps,
            fallback_acks: self.info_acks,
            ack_latency_total_us: self.ack_latency_total_us,
            ack_latency_max_us: self.ack_latency_max_us,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtt_prefers_sched_stamp() {
        let mut c = Chunk {
            seq: 0,
            start: 0,
            end: 10,
            sent_at: Time::from_millis(100),
            memo: 0,
            sched_ns: None,
            lost: false,
        };
        // Acknowledged 2 ms ago (stamp clock), written 30 ms before now: RTT 28 ms.
        let rtt = stamp_rtt(&c, 1_000_000_000, Time::from_millis(130), 1_002_000_000);
        assert_eq!(rtt, Duration::from_millis(28));
        c.sched_ns = Some(990_000_000);
        assert_eq!(
            stamp_rtt(&c, 1_000_000_000, Time::from_millis(130), 1_002_000_000),
            Duration::from_millis(10)
        );
    }
}
