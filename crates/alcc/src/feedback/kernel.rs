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
    /// What a closed connection's pending error is left to.
    closed: ClosedSocket,
    stamps: Vec<Stamp>,
    acked_base: Option<u64>,
    retrans_seen: u32,
    last_info: TcpInfo,
    /// A TCP_INFO read by [`nothing_new`](Self::nothing_new) that found news: the step's
    /// [`collect`](FeedbackSource::collect) settles with it instead of reading another.
    read_ahead: Option<TcpInfo>,
    /// When the stamps of the last collect arrived ([`FeedbackSource::arrivals`]).
    arrivals: Vec<(usize, Time)>,
    /// Steps that [`nothing_new`](Self::nothing_new) ended at once, for diagnostics.
    pub quiet_steps: u64,
    /// ACK timestamps received, for diagnostics.
    pub ack_stamps: u64,
    /// Chunks acknowledged through TCP_INFO because their stamp had not arrived.
    pub info_acks: u64,
    /// Chunks acknowledged by an ACK timestamp (a stamp whose unwrapped id ended a chunk in
    /// flight, or lay beyond it).
    pub stamp_acks: u64,
    /// Sum of the ages of the ACK stamps when the driver read them, microseconds.
    pub ack_latency_total_us: u64,
    /// The oldest ACK stamp the driver read, microseconds.
    pub ack_latency_max_us: u64,
}

/// Who reads the pending error (SO_ERROR, which reading clears) of a socket whose TCP_INFO
/// shows the connection closed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClosedSocket {
    /// The engine owns the socket: it takes the error and fails the flow with it.
    #[default]
    TakeError,
    /// The application shares the socket ([`AlccStream::from_shared_fd`](crate::AlccStream::from_shared_fd):
    /// an unmodified program under the preload shim) and must find the error itself, on its
    /// `recv`, its `SO_ERROR` or as EPOLLERR: the engine leaves it, and fails the flow with a
    /// reset of its own only when bytes it sent were still unacknowledged (a connection that
    /// closed with everything delivered has nothing left for the flow to lose).
    LeaveError,
}

impl ClosedSocket {
    /// The error that ends a flow on `fd`, whose connection TCP_INFO shows closed, with
    /// `in_flight` bytes unacknowledged; `None`: none.
    fn error(self, fd: RawFd, in_flight: u64) -> io::Result<Option<io::Error>> {
        match self {
            ClosedSocket::TakeError => sys::take_socket_error(fd),
            ClosedSocket::LeaveError => Ok((in_flight > 0).then(|| {
                io::Error::new(
                    io::ErrorKind::ConnectionReset,
                    "the connection closed with bytes unacknowledged (its error is left to the application \
                     that shares the socket)",
                )
            })),
        }
    }
}

impl KernelFeedback {
    /// A source for a socket on which [`sys::enable_ack_timestamps`] was just called, before
    /// any byte was written; `closed` says who reads the error of a closed connection.
    pub fn new(closed: ClosedSocket) -> KernelFeedback {
        KernelFeedback { closed, ..KernelFeedback::default() }
    }

    /// Whether the socket has nothing new for a step woken by its event: TCP_INFO shows no
    /// byte acknowledged and no segment retransmitted since the last
    /// [`collect`](FeedbackSource::collect), the connection open, and the kernel holding at
    /// least half of `notsent_lowat` unsent (TCP_NOTSENT_LOWAT: below that half the kernel
    /// reports room, and the step writes). Then only SCHED stamps can be queued (an ACK stamp
    /// is queued in the same pass under the socket lock that counts its bytes in
    /// `tcpi_bytes_acked`); they wait for the next collect, which reads them before the ACK
    /// stamps of their chunks. Otherwise the TCP_INFO read here is kept for that collect.
    pub fn nothing_new(&mut self, fd: RawFd, notsent_lowat: u32) -> io::Result<bool> {
        if self.acked_base.is_none() {
            return Ok(false);
        }
        let info = sys::tcp_info(fd)?;
        let unsent = u64::from(info.notsent_bytes);
        let quiet = !info.is_closed()
            && info.bytes_acked == self.last_info.bytes_acked
            && info.total_retrans == self.last_info.total_retrans
            && unsent > 0
            && 2 * unsent >= u64::from(notsent_lowat);
        if quiet {
            self.quiet_steps += 1;
        } else {
            self.read_ahead = Some(info);
        }
        Ok(quiet)
    }

    /// The TCP_INFO read by the last [`collect`](FeedbackSource::collect).
    pub fn last_info(&self) -> &TcpInfo {
        &self.last_info
    }

    /// Settles `chunks` for the error-queue stamps read at `now` (`realtime_ns`: the stamp
    /// clock at that moment): a SCHED stamp notes when its chunk entered the scheduler, an
    /// ACK stamp acknowledges everything through its chunk. The 32-bit ids are unwrapped by
    /// [`SentChunks::unwrap_id`]. No system call: unit-tested on synthetic stamps.
    pub fn take_stamps(
        &mut self,
        stamps: &[Stamp],
        now: Time,
        realtime_ns: u64,
        chunks: &mut SentChunks,
        out: &mut Vec<Feedback>,
    ) {
        for s in stamps {
            let end = chunks.unwrap_id(s.id);
            match s.kind {
                StampKind::Sched => chunks.note_sched(end, s.ns),
                StampKind::Snd => {}
                StampKind::Ack => {
                    self.ack_stamps += 1;
                    let ns = s.ns;
                    // How long the stamp waited for the driver: the user-space part of the
                    // feedback loop, which a controller's RTT samples do not include.
                    let age_us = realtime_ns.saturating_sub(ns) / 1_000;
                    self.ack_latency_total_us = self.ack_latency_total_us.saturating_add(age_us);
                    self.ack_latency_max_us = self.ack_latency_max_us.max(age_us);
                    let before = out.len();
                    out.extend(Self::settle(chunks, end, |c| stamp_rtt(c, ns, now, realtime_ns)));
                    self.stamp_acks += (out.len() - before) as u64;
                    if out.len() > before {
                        let arrived = now.saturating_sub(Duration::from_micros(age_us));
                        self.arrivals.push((before, arrived));
                    }
                }
            }
        }
    }

    /// Settles `chunks` for a TCP_INFO read at `now`: `tcpi_bytes_acked` acknowledges what
    /// no stamp did, growth of `tcpi_total_retrans` marks the oldest chunks lost.
    pub fn take_tcp_info(
        &mut self,
        info: TcpInfo,
        now: Time,
        chunks: &mut SentChunks,
        out: &mut Vec<Feedback>,
    ) {
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
        // TCP_INFO before the error queue: the kernel counts an ACK in `tcpi_bytes_acked` and
        // queues its ACK stamp in one pass under the socket lock, so every stamp of what this
        // TCP_INFO acknowledges is already queued when the queue is read next. Each chunk is
        // then settled by its own stamp (the kernel's RTT) whenever the kernel made one, and
        // TCP_INFO settles only chunks without a stamp. Read the other way round, an ACK that
        // came between the two reads was settled by TCP_INFO with an RTT guessed from the
        // driver's clock (20-40 chunks in a 20 s run; shorter than the path when timed at the
        // step's start, up to the driver's wait for a core longer when timed at the read).
        let info = match self.read_ahead.take() {
            Some(info) => info,
            None => sys::tcp_info(fd)?,
        };
        // The socket's pending error (a reset, a timeout) is read only once TCP_INFO shows
        // the connection closed, which every such error does: no SO_ERROR call per step.
        if info.is_closed() {
            if let Some(e) = self.closed.error(fd, chunks.bytes_in_flight())? {
                return Err(e);
            }
        }
        self.stamps.clear();
        sys::drain_error_queue(fd, &mut self.stamps)?;
        let stamps = std::mem::take(&mut self.stamps);
        self.arrivals.clear();
        let first = out.len();
        self.take_stamps(&stamps, now, sys::realtime_ns(), chunks, out);
        for a in &mut self.arrivals {
            a.0 -= first;
        }
        self.stamps = stamps;
        // What TCP_INFO settles below arrived at some time unknown: counted from the step.
        let settled_by_info = out.len() - first;
        if !self.arrivals.is_empty() {
            self.arrivals.push((settled_by_info, now));
        }
        // What TCP_INFO still settles has no stamp (a full error queue dropped it): it was
        // acknowledged at some time before TCP_INFO was read, possibly after the step began,
        // and is timed after the reads, so that its RTT is never shorter than the ACK took.
        self.take_tcp_info(info, sys::now().max(now), chunks, out);
        Ok(())
    }

    fn arrivals(&self) -> &[(usize, Time)] {
        &self.arrivals
    }

    fn tcp_info(&self) -> Option<&TcpInfo> {
        Some(&self.last_info)
    }

    fn stats(&self) -> FeedbackStats {
        FeedbackStats {
            primary_acks: self.ack_stamps,
            primary_settled: self.stamp_acks,
            fallback_acks: self.info_acks,
            ack_latency_total_us: self.ack_latency_total_us,
            ack_latency_max_us: self.ack_latency_max_us,
            foreign: 0,
            quiet_steps: self.quiet_steps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    #[test]
    fn a_shared_socket_keeps_its_reset_for_the_application() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        sys::set_linger_zero(client.as_raw_fd()).unwrap();
        drop(client);
        let fd = server.as_raw_fd();
        let t0 = std::time::Instant::now();
        while !sys::tcp_info(fd).unwrap().is_closed() {
            assert!(t0.elapsed() < std::time::Duration::from_secs(5), "the reset did not arrive");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // Everything delivered: no error for the flow, and the socket's error stays.
        assert!(ClosedSocket::LeaveError.error(fd, 0).unwrap().is_none());
        let e = ClosedSocket::LeaveError.error(fd, 1448).unwrap().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionReset);
        // The engine that owns a socket takes the error, once.
        let e = ClosedSocket::TakeError.error(fd, 0).unwrap().unwrap();
        assert_eq!(e.raw_os_error(), Some(libc::ECONNRESET), "{e}");
        assert!(ClosedSocket::TakeError.error(fd, 0).unwrap().is_none());
    }

    /// The stamp id the kernel reports for a write ending at offset `end`: the offset of its
    /// last byte modulo 2^32 (SOF_TIMESTAMPING_OPT_ID with OPT_ID_TCP).
    fn id_of(end: u64) -> u32 {
        ((end - 1) & 0xffff_ffff) as u32
    }

    #[test]
    fn stamps_keep_matching_chunks_across_the_32_bit_wrap() {
        let mut f = KernelFeedback::new(ClosedSocket::TakeError);
        let mut chunks = SentChunks::new();
        let mut out = Vec::new();
        let now = Time::from_millis(10_000);
        let realtime = 5_000_000_000_000u64;
        // Everything up to 17 bytes and five segments short of 2^32 went and was acknowledged.
        let start = (1u64 << 32) - 5 * 1448 - 17;
        chunks.push(start, Time::ZERO, 0);
        let ack = |end, ns| Stamp { kind: StampKind::Ack, id: id_of(end), ns };
        f.take_stamps(&[ack(start, realtime)], now, realtime, &mut chunks, &mut out);
        assert_eq!((chunks.acked(), out.len()), (start, 1));
        // Twenty chunks straddle 2^32; each is scheduled 1 ms after the previous and
        // acknowledged 20 ms after it was scheduled, stamps arriving in one batch.
        out.clear();
        let mut stamps = Vec::new();
        let mut acks = Vec::new();
        for i in 0..20u64 {
            let c = chunks.push(1448, Time::from_millis(9_000 + i), 100 + i);
            let sched = realtime - 50_000_000 + i * 1_000_000;
            stamps.push(Stamp { kind: StampKind::Sched, id: id_of(c.end), ns: sched });
            acks.push(ack(c.end, sched + 20_000_000));
        }
        assert!(chunks.written() > 1 << 32 && start < 1 << 32, "the ids wrap inside the batch");
        stamps.extend(acks);
        f.take_stamps(&stamps, now, realtime, &mut chunks, &mut out);
        let samples: Vec<&AckSample> = out
            .iter()
            .map(|e| match e {
                Feedback::Ack(a) => a,
                other => panic!("not an ACK: {other:?}"),
            })
            .collect();
        assert_eq!(samples.len(), 20, "every chunk acknowledged by its own stamp");
        for (i, a) in samples.iter().enumerate() {
            assert_eq!((a.seq, a.memo, a.bytes), (1 + i as u64, 100 + i as u64, 1448));
            assert_eq!(a.rtt, Duration::from_millis(20), "RTT from its SCHED stamp");
        }
        assert_eq!(chunks.bytes_in_flight(), 0);
        assert_eq!(f.stamp_acks, 21);
        // Each ACK's arrival on the engine clock: its stamp's age before `now` (the first
        // stamp, read at `realtime`, arrived at `now`; the batch's at 30 ms to 11 ms before).
        let batch = &f.arrivals()[1..];
        assert_eq!(batch.len(), 20);
        for (i, &(from, t)) in batch.iter().enumerate() {
            assert_eq!(from, i, "one sample per stamp");
            assert_eq!(t, now.saturating_sub(Duration::from_millis(30 - i as u64)));
        }
        // TCP_INFO finds nothing left to acknowledge.
        let info = TcpInfo { bytes_acked: chunks.written(), ..TcpInfo::default() };
        f.take_tcp_info(info, now, &mut chunks, &mut out);
        assert_eq!(f.info_acks, 0);
        // A stale stamp from before the wrap (a duplicate) acknowledges nothing more.
        out.clear();
        f.take_stamps(&[ack(start - 1448, realtime)], now, realtime, &mut chunks, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn a_socket_holding_unsent_bytes_without_news_has_nothing_new_until_an_ack() {
        use std::io::Read;
        const LOWAT: u32 = 64 << 10;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        // A small receive buffer that the receiver leaves unread: the sender's kernel holds
        // what it cannot send (the peer's window is shut).
        sys::set_int(listener.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, 16 << 10).unwrap();
        let mut sender = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut receiver, _) = listener.accept().unwrap();
        let fd = sender.as_raw_fd();
        sys::set_int(fd, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, LOWAT as libc::c_int).unwrap();
        sys::enable_ack_timestamps(fd).unwrap();
        sender.set_nonblocking(true).unwrap();
        let mut f = KernelFeedback::new(ClosedSocket::TakeError);
        let mut chunks = SentChunks::new();
        let mut out = Vec::new();
        // No collect yet: no TCP_INFO to compare with.
        assert!(!f.nothing_new(fd, LOWAT).unwrap());
        f.read_ahead = None;
        // The flow's first step reads TCP_INFO before anything is written.
        f.collect(fd, sys::now(), &mut chunks, &mut out).unwrap();
        let block = [5u8; 1448];
        while let Ok(n) = sender.write(&block) {
            chunks.push(n as u64, sys::now(), 0);
        }
        std::thread::sleep(Duration::from_millis(50));
        f.collect(fd, sys::now(), &mut chunks, &mut out).unwrap();
        assert!(f.last_info().notsent_bytes >= LOWAT / 2, "{:?}", f.last_info());
        // Nothing acknowledged since: a socket event changes nothing (a SCHED stamp's).
        assert!(f.nothing_new(fd, LOWAT).unwrap());
        assert_eq!((f.quiet_steps, f.read_ahead.is_some()), (1, false));
        // Not while less than half the low-water mark waits: the step writes.
        assert!(!f.nothing_new(fd, 4 * f.last_info().notsent_bytes).unwrap());
        f.read_ahead = None;
        // The receiver reads: the window opens, more is sent and acknowledged.
        let mut buf = vec![0u8; 64 << 10];
        receiver.set_nonblocking(true).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let acked = f.last_info().bytes_acked;
        while sys::tcp_info(fd).unwrap().bytes_acked == acked {
            assert!(std::time::Instant::now() < deadline, "nothing acknowledged after the read");
            let _ = receiver.read(&mut buf);
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!f.nothing_new(fd, LOWAT).unwrap());
        let kept = f.read_ahead.expect("the TCP_INFO that found news is kept");
        assert!(kept.bytes_acked > acked);
        out.clear();
        f.collect(fd, sys::now(), &mut chunks, &mut out).unwrap();
        assert!(f.read_ahead.is_none() && !out.is_empty(), "the collect settled the acknowledged chunks");
        assert!(f.last_info().bytes_acked >= kept.bytes_acked);
    }

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

    #[test]
    fn an_ack_learned_from_tcp_info_is_timed_when_read() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut sender = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_receiver, _) = listener.accept().unwrap();
        let fd = sender.as_raw_fd();
        sys::enable_ack_timestamps(fd).unwrap();
        let mut f = KernelFeedback::new(ClosedSocket::TakeError);
        let mut l = SentChunks::new();
        let mut out = Vec::new();
        // The flow's first step reads TCP_INFO before anything is written.
        f.collect(fd, sys::now(), &mut l, &mut out).unwrap();
        // The step that will learn of the acknowledgement began right at the write, before
        // the ACK came (a driver thread that waited for a core between its clock and its read).
        let step_began = sys::now();
        let sent_realtime = sys::realtime_ns();
        sender.write_all(&[7u8; 100]).unwrap();
        l.push(100, step_began, 0);
        // Let the ACK come, and take its stamps away: only TCP_INFO can tell of it now.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while sys::tcp_info(fd).unwrap().bytes_acked < 100 {
            assert!(std::time::Instant::now() < deadline, "loopback never acknowledged");
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(20));
        let mut stamps = Vec::new();
        sys::drain_error_queue(fd, &mut stamps).unwrap();
        let Some(ack_ns) = stamps.iter().find(|s| s.kind == StampKind::Ack).map(|s| s.ns) else {
            panic!("no ACK stamp to take away: {stamps:?}")
        };
        let took = Duration::from_nanos(ack_ns.saturating_sub(sent_realtime));
        f.collect(fd, step_began, &mut l, &mut out).unwrap();
        assert_eq!(f.info_acks, 1, "{out:?}");
        let Some(Feedback::Ack(sample)) = out.first() else { panic!("no sample: {out:?}") };
        // Timed at the step's start the sample would be 0, shorter than the ACK took.
        assert!(sample.rtt >= took, "RTT {:?} shorter than the {took:?} the ACK took", sample.rtt);
    }
}
