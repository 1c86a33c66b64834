//! One flow: the state the application shares with the driver, and the driver's own part
//! (controller, ledger, pacer, feedback source) with the step that moves bytes.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use alcc_cc::{Controller, SenderHint, SentPacket, Time};

use crate::feedback::framed::FramedFeedback;
use crate::feedback::kernel::KernelFeedback;
use crate::feedback::udp::UdpFeedback;
use crate::feedback::{Feedback, FeedbackSource};
use crate::framing::FrameWriter;
use crate::info::FlowInfo;
use crate::ledger::Ledger;
use crate::sys;
use crate::underlay::FlowUnderlay;
use alcc_cc::pacer::Pacer;

/// What the application side and the driver both touch, under one lock.
#[derive(Default)]
pub(crate) struct SharedState {
    /// Bytes the application wrote that the driver has not yet handed to the kernel.
    pub queue: VecDeque<u8>,
    /// Most bytes `queue` may hold.
    pub capacity: usize,
    /// The application closed (or dropped) its stream: flush, then FIN.
    pub closing: bool,
    /// Everything was handed to the kernel, the FIN sent and all acknowledged.
    pub finished: bool,
    /// The flow failed (reset, timeout, ...); kind and message.
    pub error: Option<(io::ErrorKind, String)>,
    /// The driver has a wake-up for this flow pending.
    pub wake_pending: bool,
    /// The driver no longer holds the flow.
    pub released: bool,
    /// The application asks to abort (reset) the connection.
    pub abort: bool,
    /// A controller replacing the current one (`set_cc`), with its spec.
    pub new_controller: Option<(String, Option<Box<dyn Controller>>)>,
    /// An underlay replacing the current one (`set_underlay`), its socket already set up.
    pub new_underlay: Option<FlowUnderlay>,
    /// The driver's latest snapshot.
    pub info: FlowInfo,
}

/// The shared part of a flow.
pub(crate) struct Shared {
    pub state: Mutex<SharedState>,
    pub cond: Condvar,
}

impl Shared {
    pub fn new(capacity: usize, info: FlowInfo) -> Arc<Shared> {
        Arc::new(Shared {
            state: Mutex::new(SharedState { capacity, info, ..SharedState::default() }),
            cond: Condvar::new(),
        })
    }

    /// Locks the state; a poisoned lock (a panicking application thread) is still usable.
    pub fn lock(&self) -> MutexGuard<'_, SharedState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Tunables of a flow.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// Largest chunk written at once.
    pub max_chunk: u64,
    /// Segment size assumed until the feedback source reports the kernel's.
    pub default_mss: u64,
}

/// What the driver should do with a flow after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Keep it; wake it at this time too (pacing, controller timer), if any.
    Keep(Option<Time>),
    /// Forget it: finished or failed.
    Release,
}

/// The driver's part of a flow.
pub(crate) struct Flow {
    pub id: u64,
    pub fd: Arc<OwnedFd>,
    pub shared: Arc<Shared>,
    /// `None`: plain kernel TCP (`--cc none`), no gating and no records.
    controller: Option<Box<dyn Controller>>,
    spec: String,
    ledger: Ledger,
    pacer: Pacer,
    feedback: Box<dyn FeedbackSource>,
    /// Framed mode: the writer that puts each chunk in a data frame.
    framing: Option<FrameWriter>,
    /// UDP mode: one datagram per chunk (and the `Hello` still to send, if any).
    datagrams: Option<Datagrams>,
    /// Segment size to use while no TCP_INFO is known.
    default_mss: u64,
    limits: Limits,
    events: Vec<Feedback>,
    shut: bool,
    chunks_sent: u64,
    losses: u64,
    max_in_flight: u64,
    /// The most bytes in flight beyond the window right after a write (0 if gating holds).
    max_overshoot: u64,
    /// The cap last set on the kernel's own pacing (SO_MAX_PACING_RATE).
    kernel_pacing: Option<u64>,
    /// The kernel congestion control under the controller (src/underlay).
    underlay: FlowUnderlay,
    /// The wake-up time currently scheduled in the driver's heap.
    pub scheduled: Option<Time>,
}

impl Flow {
    pub fn new(
        id: u64,
        fd: Arc<OwnedFd>,
        shared: Arc<Shared>,
        controller: Option<Box<dyn Controller>>,
        spec: String,
        limits: Limits,
    ) -> Flow {
        Flow {
            id,
            fd,
            shared,
            controller,
            spec,
            ledger: Ledger::new(),
            pacer: Pacer::new(),
            feedback: Box::new(KernelFeedback::new()),
            framing: None,
            datagrams: None,
            default_mss: limits.default_mss,
            limits,
            events: Vec::new(),
            shut: false,
            chunks_sent: 0,
            losses: 0,
            max_in_flight: 0,
            max_overshoot: 0,
            kernel_pacing: None,
            underlay: FlowUnderlay::Kernel,
            scheduled: None,
        }
    }

    /// Sets the underlay the socket was set up with ([`crate::underlay::Underlay::attach`]).
    pub fn with_underlay(mut self, underlay: FlowUnderlay) -> Flow {
        self.underlay = underlay;
        self
    }

    /// Makes this a framed-mode flow (docs/wire-format.md): chunks leave as data frames
    /// written by `writer`, feedback comes from the peer's ACK and report frames.
    pub fn framed(mut self, writer: FrameWriter) -> Flow {
        self.feedback = Box::new(FramedFeedback::new());
        self.framing = Some(writer);
        self
    }

    /// Makes this a UDP-mode flow on a connected UDP socket: every chunk is one data
    /// datagram, after a `Hello` naming `spec`; feedback comes from per-datagram ACKs.
    pub fn udp(mut self, hello: Vec<u8>) -> Flow {
        self.feedback = Box::new(UdpFeedback::new());
        self.datagrams = Some(Datagrams { hello: Some(hello), buf: Vec::new() });
        self
    }

    /// Whether the driver must report the socket's readability (the peer's frames).
    pub fn reads_socket(&self) -> bool {
        self.framing.is_some() || self.datagrams.is_some()
    }

    /// One step: take in feedback, fire the controller's timer, write what the window and
    /// pacer allow, flush and close when asked. Never blocks.
    pub fn step(&mut self, now: Time) -> Next {
        match self.try_step(now) {
            Ok(next) => next,
            Err(e) => {
                if self.framing.is_some() {
                    // A framed peer that broke the protocol (or failed) is cut off at once.
                    let _ = sys::shutdown_both(self.fd.as_raw_fd());
                }
                let mut st = self.shared.lock();
                if st.error.is_none() {
                    st.error = Some((e.kind(), e.to_string()));
                }
                self.publish(&mut st);
                st.released = true;
                drop(st);
                self.shared.cond.notify_all();
                Next::Release
            }
        }
    }

    fn try_step(&mut self, now: Time) -> io::Result<Next> {
        let fd = self.fd.as_raw_fd();
        if let Some(e) = sys::take_socket_error(fd)? {
            return Err(e);
        }
        self.events.clear();
        self.feedback.collect(fd, now, &mut self.ledger, &mut self.events)?;
        if let Some(c) = self.controller.as_mut() {
            for ev in &self.events {
                match ev {
                    Feedback::Ack(a) => c.on_ack(now, a),
                    Feedback::Loss(l) => {
                        self.losses += 1;
                        c.on_loss(now, l)
                    }
                    Feedback::Report(r) => c.on_report(now, r),
                }
            }
            if c.next_timer().is_some_and(|t| t <= now) {
                c.on_timer(now);
            }
        }

        let shared = self.shared.clone();
        let mut st = shared.lock();
        st.wake_pending = false;
        if st.abort {
            sys::set_linger_zero(fd)?;
            st.error =
                Some((io::ErrorKind::ConnectionAborted, "connection aborted by the application".into()));
            st.released = true;
            drop(st);
            self.shared.cond.notify_all();
            return Ok(Next::Release);
        }
        if let Some((spec, c)) = st.new_controller.take() {
            self.controller = c;
            self.spec = spec;
        }
        if let Some(u) = st.new_underlay.take() {
            self.underlay = u;
        }
        self.underlay.sync(fd, self.controller.as_ref().map(|c| c.decision()), self.mss())?;
        self.pace_kernel(fd)?;
        let before = st.queue.len();
        let mut wake_at = None;
        if self.framing.is_some() {
            wake_at = self.write_framed(fd, now, &mut st)?;
        }
        if self.datagrams.is_some() {
            wake_at = self.write_datagrams(fd, now, &mut st)?;
        }
        while self.framing.is_none() && self.datagrams.is_none() && !st.queue.is_empty() {
            match self.next_chunk(now, st.queue.len() as u64) {
                Ok(len) => {
                    // Straight from the queue's (at most two) slices: no copy in user space.
                    let (a, b) = st.queue.as_slices();
                    let len = len as usize;
                    let first = &a[..len.min(a.len())];
                    let second = &b[..(len - first.len()).min(b.len())];
                    let n = match sys::send_parts(fd, &[first, second], self.controller.is_some()) {
                        Ok(n) => n,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            // The kernel is full: whatever holds us up, it is not the pacer.
                            self.pacer.on_idle();
                            break;
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e),
                    };
                    st.queue.drain(..n);
                    self.record_sent(now, n as u64);
                }
                Err(wait) => {
                    if wait.is_none() {
                        // Window-limited, not pacer-limited: no catching up afterwards.
                        self.pacer.on_idle();
                    }
                    // Waiting for feedback: it normally arrives as an ACK stamp; look again
                    // after STALL_POLL in case the error queue dropped it.
                    wake_at = Some(wait.unwrap_or(now + STALL_POLL));
                    break;
                }
            }
        }
        if st.queue.is_empty() {
            self.pacer.on_idle();
        }
        let framed_pending = self.framing.as_ref().is_some_and(|w| !w.is_empty());
        if st.closing && st.queue.is_empty() && !framed_pending && !self.shut {
            if self.datagrams.is_none() {
                sys::shutdown_write(fd)?;
                self.shut = true;
            } else if self.ledger.bytes_in_flight() == 0 {
                // UDP mode: every datagram acknowledged or lost; tell the receiver (a few
                // times: nothing is retransmitted).
                let mut close = Vec::new();
                crate::wire::Frame::Close { sent: self.ledger.written() }
                    .encode(&mut close)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                for _ in 0..3 {
                    let _ = sys::send_parts(fd, &[&close], false);
                }
                self.shut = true;
            }
        }
        let done = self.shut && self.ledger.bytes_in_flight() == 0;
        if done {
            st.finished = true;
            st.released = true;
        }
        self.publish(&mut st);
        let freed = st.queue.len() < before;
        let active = !st.queue.is_empty() || self.ledger.bytes_in_flight() > 0;
        drop(st);
        if freed || done {
            self.shared.cond.notify_all();
        }
        if done {
            return Ok(Next::Release);
        }
        // A controller's timer (Verus's epochs) matters only while the flow has something to
        // send or in flight; an idle flow sleeps, and its next step fires an overdue timer.
        let timer = if active { self.controller.as_ref().and_then(|c| c.next_timer()) } else { None };
        let wake = match (wake_at, timer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // A source's own timer (UDP mode's loss detection).
        let wake = match (wake, self.feedback.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // Waiting for the last acknowledgement after the FIN: look again now and then, in
        // case no stamp is coming (plain mode, or a stamp lost to a full error queue).
        // Plain mode has no ACK stamps either: while bytes are in flight, re-read TCP_INFO
        // now and then so that the info and the final flush stay current.
        let plain_poll = self.controller.is_none() && self.ledger.bytes_in_flight() > 0;
        let wake =
            if self.shut || plain_poll { Some(wake.unwrap_or(Time::MAX).min(now + FIN_POLL)) } else { wake };
        Ok(Next::Keep(wake))
    }

    /// Framed mode's writes: finish the frame in progress, then frame and write chunks while
    /// the window and pacer allow. Returns when to try again (as the kernel-mode loop).
    fn write_framed(
        &mut self,
        fd: std::os::fd::RawFd,
        now: Time,
        st: &mut SharedState,
    ) -> io::Result<Option<Time>> {
        loop {
            let Some(writer) = self.framing.as_mut() else { return Ok(None) };
            if !writer.flush(fd)? {
                // The kernel is full: whatever holds us up, it is not the pacer.
                self.pacer.on_idle();
                return Ok(None);
            }
            if st.queue.is_empty() {
                return Ok(None);
            }
            let len = match self.next_chunk(now, st.queue.len() as u64) {
                Ok(len) => len.min(u64::from(crate::wire::MAX_PAYLOAD)) as usize,
                Err(wait) => {
                    if wait.is_none() {
                        self.pacer.on_idle();
                    }
                    return Ok(Some(wait.unwrap_or(now + STALL_POLL)));
                }
            };
            let hint = self.controller.as_ref().map_or_else(SenderHint::default, |c| c.sender_hint(now));
            let seq = self.ledger.next_seq();
            let (a, b) = st.queue.as_slices();
            let first = &a[..len.min(a.len())];
            let second = &b[..(len - first.len()).min(b.len())];
            if let Some(writer) = self.framing.as_mut() {
                writer.push_chunk(seq, now, hint, [first, second])?;
            }
            st.queue.drain(..len);
            self.record_sent(now, len as u64);
        }
    }

    /// UDP mode's writes: the `Hello` (three times), then one data datagram per chunk of at
    /// most [`UDP_PAYLOAD`](crate::wire::udp::UDP_PAYLOAD) bytes while the window and pacer
    /// allow. Returns when to try again.
    fn write_datagrams(
        &mut self,
        fd: std::os::fd::RawFd,
        now: Time,
        st: &mut SharedState,
    ) -> io::Result<Option<Time>> {
        let Some(mut d) = self.datagrams.take() else { return Ok(None) };
        let result = self.write_datagrams_with(&mut d, fd, now, st);
        self.datagrams = Some(d);
        result
    }

    fn write_datagrams_with(
        &mut self,
        d: &mut Datagrams,
        fd: std::os::fd::RawFd,
        now: Time,
        st: &mut SharedState,
    ) -> io::Result<Option<Time>> {
        if let Some(hello) = d.hello.take() {
            for _ in 0..3 {
                let _ = sys::send_parts(fd, &[&hello], false);
            }
        }
        while !st.queue.is_empty() {
            let len = match self.next_chunk(now, st.queue.len() as u64) {
                Ok(len) => len.min(u64::from(crate::wire::udp::UDP_PAYLOAD)) as usize,
                Err(wait) => {
                    if wait.is_none() {
                        self.pacer.on_idle();
                    }
                    return Ok(Some(wait.unwrap_or(now + STALL_POLL)));
                }
            };
            let hint = self.controller.as_ref().map_or_else(SenderHint::default, |c| c.sender_hint(now));
            let header = crate::wire::DataHeader {
                seq: self.ledger.next_seq(),
                send_time: now,
                time_to_next: hint.time_to_next,
                len: len as u32,
            };
            d.buf.clear();
            crate::wire::frame::encode_data_header(&header, &mut d.buf)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
            let (a, b) = st.queue.as_slices();
            let first = &a[..len.min(a.len())];
            d.buf.extend_from_slice(first);
            d.buf.extend_from_slice(&b[..(len - first.len()).min(b.len())]);
            match sys::send_parts(fd, &[&d.buf], false) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // The socket buffer is full: EPOLLOUT brings us back.
                    self.pacer.on_idle();
                    return Ok(None);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            st.queue.drain(..len);
            self.record_sent(now, len as u64);
        }
        Ok(None)
    }

    /// The size of the next chunk, or `Err(when)` if nothing may go now (`when`: a time to
    /// try again, `None` to wait for feedback).
    fn next_chunk(&self, now: Time, queued: u64) -> Result<u64, Option<Time>> {
        let Some(c) = self.controller.as_ref() else {
            return Ok(queued.min(self.limits.max_chunk));
        };
        let mss = self.mss();
        let d = self.underlay.gate(c.decision(), mss);
        let in_flight = self.ledger.bytes_in_flight();
        if in_flight < d.window && !self.pacer.ready(now) {
            return Err(Some(self.pacer.earliest()));
        }
        let info = self.feedback.tcp_info();
        let clock = SendClock {
            pacing_rate: d.pacing_rate,
            srtt: info.map(|i| Duration::from_micros(u64::from(i.rtt))),
            delivery_rate: info.map(|i| i.delivery_rate),
        };
        chunk_size(queued, d.window, in_flight, mss, clock, self.limits.max_chunk).ok_or(None)
    }

    /// Lets the kernel spread each chunk's segments at a little above the controller's
    /// pacing rate (DESIGN.md: SO_MAX_PACING_RATE paces without the fq qdisc), so that a
    /// chunk of several segments does not leave as one burst. Updated when the rate moves
    /// by more than an eighth, to keep system calls rare.
    fn pace_kernel(&mut self, fd: std::os::fd::RawFd) -> io::Result<()> {
        let rate = self.controller.as_ref().and_then(|c| c.decision().pacing_rate);
        let want = rate.map(|r| r.saturating_add(r / 4).max(1));
        let stale = match (self.kernel_pacing, want) {
            (None, None) => false,
            (Some(have), Some(w)) => have.abs_diff(w) > have / 8,
            _ => true,
        };
        if stale {
            sys::set_max_pacing_rate(fd, want)?;
            self.kernel_pacing = want;
        }
        Ok(())
    }

    /// The segment size: the kernel's, once TCP_INFO has been read.
    fn mss(&self) -> u64 {
        self.feedback.tcp_info().map_or(self.default_mss, |i| u64::from(i.snd_mss)).max(1)
    }

    fn record_sent(&mut self, now: Time, bytes: u64) {
        let in_flight = self.ledger.bytes_in_flight() + bytes;
        let mss = self.mss();
        let memo = match self.controller.as_mut() {
            Some(c) => {
                // What alcc's own gate enforced (the controller's decision, or under the
                // `follow` underlay the wider gate of Policy::gate).
                let gate = self.underlay.gate(c.decision(), mss);
                self.max_overshoot = self.max_overshoot.max(in_flight.saturating_sub(gate.window));
                let packet = SentPacket { seq: self.ledger.next_seq(), bytes, bytes_in_flight: in_flight };
                let memo = c.on_sent(now, &packet);
                self.pacer.on_send(now, bytes, gate.pacing_rate);
                memo
            }
            None => 0,
        };
        let chunk = self.ledger.push(bytes, now, memo);
        self.feedback.on_sent(&chunk);
        self.chunks_sent += 1;
        self.max_in_flight = self.max_in_flight.max(in_flight);
    }

    fn publish(&self, st: &mut SharedState) {
        let info = &mut st.info;
        info.controller.clone_from(&self.spec);
        match self.controller.as_ref() {
            Some(c) => {
                let d = c.decision();
                info.window = d.window;
                info.pacing_rate = d.pacing_rate;
                info.metrics = Some(c.metrics());
            }
            None => {
                info.window = u64::MAX;
                info.pacing_rate = None;
                info.metrics = None;
            }
        }
        info.bytes_in_flight = self.ledger.bytes_in_flight();
        info.max_bytes_in_flight = self.max_in_flight;
        info.max_window_overshoot = self.max_overshoot;
        info.bytes_written = self.ledger.written();
        info.bytes_acked = self.ledger.acked();
        info.chunks_sent = self.chunks_sent;
        info.losses = self.losses;
        let stats = self.feedback.stats();
        info.ack_stamps = stats.primary_acks;
        info.info_acks = stats.fallback_acks;
        info.ack_latency_total_us = stats.ack_latency_total_us;
        info.ack_latency_max_us = stats.ack_latency_max_us;
        if let Some(ti) = self.feedback.tcp_info() {
            info.set_kernel(ti);
        }
        info.queued = st.queue.len() as u64;
        info.underlay_cwnd_segments = self.underlay.written_cwnd();
    }
}

/// UDP mode's sending state.
pub(crate) struct Datagrams {
    /// The encoded `Hello`, until it is sent.
    hello: Option<Vec<u8>>,
    /// The datagram being built.
    buf: Vec<u8>,
}

/// How often a flow without ACK stamps (after its FIN, or in plain mode) re-reads TCP_INFO
/// while bytes are in flight.
const FIN_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// How long a window-limited flow waits for feedback before re-reading TCP_INFO anyway.
const STALL_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// How many bytes the next chunk carries, or `None` to wait for acknowledgements.
///
/// The chunk fits the window (`in_flight + chunk <= window`, the controller contract), is at
/// most `max_chunk`, about a millisecond of sending and a quarter of the window (so that ACK
/// timestamps come several times per window), and is a whole number of segments whenever at
/// least one segment fits (DESIGN.md: write MSS multiples). A millisecond is read at the
/// pacing rate, or, for an unpaced controller, at the lower of two rates ([`SendClock`]): the
/// rate its window implies over the kernel's smoothed RTT, `window / srtt` (an unpaced window
/// is spent over about one RTT), and the kernel's measured delivery rate (a window far above
/// what the path carries, as Verus's is in slow start or after a jump, would otherwise claim
/// a rate the link never delivers). Without this an unpaced controller with a large window
/// (Verus) gets its allowance in a few big writes and one ACK sample per write, a handful per
/// RTT where it expects one per packet. With data in flight it waits for a whole segment of
/// room rather than writing slivers; with nothing in flight it sends what the window allows,
/// however small.
pub(crate) fn chunk_size(
    queued: u64,
    window: u64,
    in_flight: u64,
    mss: u64,
    clock: SendClock,
    max_chunk: u64,
) -> Option<u64> {
    let mss = mss.max(1);
    let room = window.saturating_sub(in_flight);
    if room == 0 || queued == 0 || (room < mss && in_flight > 0 && queued >= mss) {
        return None;
    }
    let budget = clock.millisecond(window).unwrap_or(u64::MAX).min(window / 4).max(mss);
    let want = queued.min(room).min(max_chunk.max(mss)).min(budget);
    Some(if want >= mss { want / mss * mss } else { want })
}

/// What "a millisecond of sending" is measured against when sizing a chunk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SendClock {
    /// The controller's pacing rate, bytes/s; when set it alone decides.
    pub pacing_rate: Option<u64>,
    /// The kernel's smoothed RTT.
    pub srtt: Option<Duration>,
    /// The kernel's delivery rate (TCP_INFO `tcpi_delivery_rate`), bytes/s; `None` or 0 when
    /// not measured yet.
    pub delivery_rate: Option<u64>,
}

impl SendClock {
    /// The bytes of one millisecond of sending, `None` when nothing bounds it.
    fn millisecond(&self, window: u64) -> Option<u64> {
        if self.pacing_rate.is_some() {
            return Pacer::chunk_budget(self.pacing_rate);
        }
        let by_window = self.srtt.and_then(|rtt| window_per_millisecond(window, rtt));
        let by_delivery = self.delivery_rate.filter(|&r| r > 0).map(|r| (r / 1000).max(1));
        match (by_window, by_delivery) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// The bytes of `window` sent in one millisecond if the window is spread over `srtt`;
/// `None` (no limit) for an RTT below a millisecond.
fn window_per_millisecond(window: u64, srtt: Duration) -> Option<u64> {
    let rtt_us = u64::try_from(srtt.as_micros()).unwrap_or(u64::MAX);
    if rtt_us <= 1000 {
        return None;
    }
    let bytes = u128::from(window) * 1000 / u128::from(rtt_us);
    Some(u64::try_from(bytes).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A clock of a pacing rate and an RTT, no delivery rate measured.
    fn clk(pacing_rate: Option<u64>, srtt: Option<Duration>) -> SendClock {
        SendClock { pacing_rate, srtt, delivery_rate: None }
    }

    #[test]
    fn chunks_fit_the_window_in_whole_segments() {
        // 10 segments of window, 3 in flight: room 7, capped at a quarter window (2.5 -> 2).
        assert_eq!(chunk_size(1 << 20, 10_000, 3_000, 1_000, clk(None, None), 64_000), Some(2_000));
        // Less than a segment of room with data in flight: wait.
        assert_eq!(chunk_size(1 << 20, 10_000, 9_500, 1_000, clk(None, None), 64_000), None);
        // A window below one segment still moves when nothing is in flight.
        assert_eq!(chunk_size(1 << 20, 700, 0, 1_000, clk(None, None), 64_000), Some(700));
        // The tail of the queue goes as it is.
        assert_eq!(chunk_size(300, 10_000, 5_000, 1_000, clk(None, None), 64_000), Some(300));
        // 1 MB/s pacing: a millisecond is 1000 bytes, one segment.
        assert_eq!(chunk_size(1 << 20, u64::MAX, 0, 1_000, clk(Some(1_000_000), None), 64_000), Some(1_000));
        // Unbounded window: max_chunk, rounded down to segments.
        assert_eq!(chunk_size(1 << 20, u64::MAX, 0, 1_448, clk(None, None), 65_536), Some(65_160));
        assert_eq!(chunk_size(0, u64::MAX, 0, 1_448, clk(None, None), 65_536), None);
        assert_eq!(chunk_size(10, 100, 100, 1_448, clk(None, None), 65_536), None);
    }

    #[test]
    fn unpaced_chunks_are_a_millisecond_of_the_window_over_the_rtt() {
        let rtt = |ms| Some(Duration::from_millis(ms));
        // 1 MB window over a 500 ms RTT: 2 000 bytes a millisecond, one 1 448-byte segment
        // (without the RTT: a quarter window, capped at 256 KiB).
        assert_eq!(chunk_size(1 << 30, 1_000_000, 0, 1_448, clk(None, rtt(500)), 262_144), Some(1_448));
        assert_eq!(chunk_size(1 << 30, 1_000_000, 0, 1_448, clk(None, None), 262_144), Some(249_056));
        // 40 ms: 25 000 bytes a millisecond, 17 segments.
        assert_eq!(chunk_size(1 << 30, 1_000_000, 0, 1_448, clk(None, rtt(40)), 262_144), Some(24_616));
        // Never below a segment.
        assert_eq!(chunk_size(1 << 30, 100_000, 0, 1_448, clk(None, rtt(900)), 262_144), Some(1_448));
        // A sub-millisecond RTT (loopback) sets no limit: a quarter window.
        let lo = Some(Duration::from_micros(40));
        assert_eq!(chunk_size(1 << 30, 4_000_000, 0, 1_000, clk(None, lo), 262_144), Some(262_000));
        // A pacing rate, when there is one, decides instead of the RTT.
        assert_eq!(
            chunk_size(1 << 30, 1_000_000, 0, 1_000, clk(Some(5_000_000), rtt(500)), 262_144),
            Some(5_000)
        );
        assert_eq!(window_per_millisecond(u64::MAX, Duration::from_millis(2)), Some(u64::MAX / 2));
    }

    #[test]
    fn unpaced_chunks_follow_the_delivery_rate_when_the_window_claims_more() {
        let at = |delivery_rate| SendClock {
            pacing_rate: None,
            srtt: Some(Duration::from_millis(40)),
            delivery_rate,
        };
        // 1 MB over 40 ms claims 25 000 bytes a millisecond; the path delivers 1.5 MB/s
        // (12 Mbit/s), 1 500 bytes a millisecond: one segment per chunk.
        assert_eq!(chunk_size(1 << 30, 1_000_000, 0, 1_448, at(Some(1_500_000)), 262_144), Some(1_448));
        // A faster delivery rate than the window's leaves the window's figure.
        assert_eq!(chunk_size(1 << 30, 1_000_000, 0, 1_448, at(Some(100_000_000)), 262_144), Some(24_616));
        // Not measured yet (0): the window's figure.
        assert_eq!(chunk_size(1 << 30, 1_000_000, 0, 1_448, at(Some(0)), 262_144), Some(24_616));
        // Without an RTT the delivery rate alone: 10 MB/s, 10 000 bytes, 6 segments.
        let no_rtt = SendClock { pacing_rate: None, srtt: None, delivery_rate: Some(10_000_000) };
        assert_eq!(chunk_size(1 << 30, 1_000_000, 0, 1_448, no_rtt, 262_144), Some(8_688));
        // A pacing rate still decides alone.
        let paced = SendClock { pacing_rate: Some(5_000_000), ..at(Some(1_000)) };
        assert_eq!(chunk_size(1 << 30, 1_000_000, 0, 1_000, paced, 262_144), Some(5_000));
    }

    proptest! {
        #[test]
        fn chunk_never_overfills_the_window(
            queued in 0u64..10_000_000,
            window in 0u64..10_000_000,
            in_flight in 0u64..10_000_000,
            mss in 1u64..70_000,
            rate in proptest::option::of(1u64..10_000_000_000),
            srtt_us in proptest::option::of(0u64..10_000_000),
            delivery_rate in proptest::option::of(0u64..10_000_000_000),
            max_chunk in 1u64..1_000_000,
        ) {
            let srtt = srtt_us.map(Duration::from_micros);
            let clock = SendClock { pacing_rate: rate, srtt, delivery_rate };
            if let Some(c) = chunk_size(queued, window, in_flight, mss, clock, max_chunk) {
                prop_assert!(c > 0);
                if let (None, Some(d)) = (rate, delivery_rate.filter(|&d| d > 0)) {
                    // Unpaced: never more than a millisecond of the delivery rate.
                    prop_assert!(c <= (d / 1000).max(1).max(mss));
                }
                if let (None, Some(us)) = (rate, srtt_us) {
                    if us > 1000 {
                        // Unpaced: about a millisecond of the window spread over the RTT.
                        let ms = (u128::from(window) * 1000 / u128::from(us)) as u64;
                        prop_assert!(c <= ms.max(mss));
                    }
                }
                prop_assert!(c <= queued);
                prop_assert!(in_flight + c <= window);
                prop_assert!(c <= max_chunk.max(mss));
                prop_assert!(c < mss || c % mss == 0);
            }
        }
    }
}
