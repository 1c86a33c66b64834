//! One sending flow: the part the driver owns ([`Flow`]: control, chunks, transport) and the
//! step that moves bytes from the application's queue into the network.
//!
//! A step, never blocking: take the socket's news from the transport's feedback source and
//! hand it to the [`Control`]; fire the controller's timer; apply an abort or a new controller
//! the application asked for; then, while the queue has bytes, ask the control for the next
//! chunk (window, pacer, size) and the [`Transport`] to send it; close when asked and
//! everything is out; publish a [`FlowInfo`](crate::FlowInfo) snapshot; say when to come back.

pub(crate) mod byte_blocks;
pub(crate) mod chunk;
pub(crate) mod control;
pub(crate) mod send_queue;
pub(crate) mod shared;
pub(crate) mod socket_hold;

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

use alcc_cc::Time;

use crate::coupling::groups::{Groups, Membership};
use crate::driver::FlowId;
use crate::feedback::Feedback;
use crate::options::Options;
use crate::sent_chunks::SentChunks;
use crate::sys;
use crate::transport::{OutChunk, Transport};
use crate::underlay::FlowUnderlay;

use self::chunk::SendClock;
use self::control::{Allowance, Control, Sizing};
use self::shared::{ControlChange, Ending, Shared, SharedState};
use self::socket_hold::Stop;

/// How often a flow without ACK stamps (after its FIN, or in plain mode) re-reads TCP_INFO
/// while bytes are in flight, at first; each poll that finds nothing newly acknowledged
/// doubles the interval, up to [`FIN_POLL_MAX`] (a peer holding its window shut after our
/// FIN costs a wake-up a second, not fifty, until the close's user timeout ends it).
const FIN_POLL: Duration = Duration::from_millis(20);

/// The longest interval between such polls.
const FIN_POLL_MAX: Duration = Duration::from_secs(1);

/// The poll interval after `idle` polls that found nothing newly acknowledged.
fn fin_poll_interval(idle: u32) -> Duration {
    FIN_POLL.saturating_mul(1 << idle.min(16)).min(FIN_POLL_MAX)
}

/// How long a window-limited flow waits for feedback before re-reading TCP_INFO anyway.
const STALL_POLL: Duration = Duration::from_millis(200);

/// How often, at most, a step that leaves the queue empty looks whether the application
/// wrote anything since the last look; if not, the queue's spare blocks are freed
/// ([`SendQueue::release_if_idle`](send_queue::SendQueue::release_if_idle)). Looking at every
/// step would free them between two writes of a busy flow.
const IDLE_LOOK: Duration = Duration::from_millis(200);

/// Why the driver steps a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum WokenBy {
    /// A deadline passed, the application asked, or the flow is new.
    Other,
    /// Only its socket reported an event besides room (a timestamp or an error on its error
    /// queue, EPOLLERR; a hang-up; a peer's frame), possibly with room too.
    Socket,
    /// Only its socket reported room to write (EPOLLOUT alone).
    Room,
}

impl WokenBy {
    /// What an event of the flow's socket with epoll flags `events` wakes it by.
    pub fn socket_event(events: u32) -> WokenBy {
        if events & !(libc::EPOLLOUT as u32) == 0 {
            WokenBy::Room
        } else {
            WokenBy::Socket
        }
    }

    /// Whether only the socket woke the flow.
    fn by_socket(self) -> bool {
        matches!(self, WokenBy::Socket | WokenBy::Room)
    }
}

/// What the driver should do with a flow after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Keep it; wake it at this time too (pacing, controller timer), if any.
    Keep(Option<Time>),
    /// Forget it: finished or failed.
    Release,
}

/// Counters of what a flow did, for its [`FlowInfo`](crate::FlowInfo).
#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    chunks_sent: u64,
    losses: u64,
    max_in_flight: u64,
    /// The most bytes in flight beyond the window right after a write (0 if gating holds).
    max_overshoot: u64,
    /// Steps after which the socket's events were held until the next step ([`socket_hold`]).
    socket_holds: u64,
}

/// The driver's part of a flow.
pub(crate) struct Flow {
    pub id: FlowId,
    pub fd: Arc<OwnedFd>,
    pub shared: Arc<Shared>,
    control: Control,
    spec: String,
    transport: Transport,
    /// The kernel congestion control under the controller (src/underlay).
    underlay: FlowUnderlay,
    chunks: SentChunks,
    options: Options,
    events: Vec<Feedback>,
    shut: bool,
    counters: Counters,
    /// The cap last set on the kernel's own pacing (SO_MAX_PACING_RATE).
    kernel_pacing: Option<u64>,
    /// The application's close has been acted on (the close's user timeout set).
    close_noted: bool,
    /// Steps in a row that found nothing newly acknowledged, and the bytes acknowledged at
    /// the last one (the TCP_INFO poll's backoff, [`fin_poll_interval`]).
    idle_polls: (u32, u64),
    /// Its place in its flow group (src/coupling).
    membership: Membership,
    /// The earliest time of the next look for an idle queue ([`IDLE_LOOK`]).
    idle_look_at: Time,
    /// The wake-up time currently scheduled in the driver's heap.
    pub scheduled: Option<Time>,
    /// Whether the last step asked the driver to leave the socket's events unheard until the
    /// flow's next step ([`socket_hold`]).
    pub holds_socket: bool,
    /// Whether the driver has stopped watching the socket (its part of the hold).
    pub socket_unwatched: bool,
    /// When the flow's last step past the quiet check began.
    last_step_at: Time,
}

impl Flow {
    /// A flow on `fd` (already configured for `control`, `transport` and `underlay`).
    pub fn new(
        id: FlowId,
        fd: Arc<OwnedFd>,
        shared: Arc<Shared>,
        control: Control,
        transport: Transport,
        underlay: FlowUnderlay,
        options: &Options,
    ) -> Flow {
        Flow {
            id,
            fd,
            shared,
            control,
            spec: options.cc.clone(),
            transport,
            underlay,
            chunks: SentChunks::new(),
            options: options.clone(),
            events: Vec::new(),
            shut: false,
            counters: Counters::default(),
            kernel_pacing: None,
            close_noted: false,
            idle_polls: (0, 0),
            membership: Membership::new(None, 1.0),
            idle_look_at: Time::ZERO,
            scheduled: None,
            holds_socket: false,
            socket_unwatched: false,
            last_step_at: Time::ZERO,
        }
    }

    /// The flow in its group (src/coupling); uncoupled until this is called.
    pub fn in_group(mut self, membership: Membership) -> Flow {
        self.membership = membership;
        self
    }

    /// Prepares the socket for the flow's controller (once, before the flow is registered);
    /// nothing for `none`.
    pub fn prepare_socket(&mut self) -> io::Result<()> {
        if self.control.is_controlled() {
            self.transport.prepare_for_controller(self.fd.as_raw_fd(), &self.options, &mut self.chunks)?;
        }
        Ok(())
    }

    /// Whether the driver must report the socket's readability.
    pub fn reads_socket(&self) -> bool {
        self.transport.reads_socket()
    }

    /// Leaves the flow's group (it ended): its share goes to the others.
    pub fn leave_group(&mut self, groups: &mut Groups) {
        self.membership.leave(groups, sys::now());
    }

    /// One step. Never blocks. `groups` are the process's flow groups; `woken_by`, why the
    /// driver steps it.
    pub fn step(&mut self, now: Time, groups: &mut Groups, woken_by: WokenBy) -> Next {
        match self.try_step(now, groups, woken_by) {
            Ok(next) => next,
            Err(e) => {
                self.transport.on_failure(self.fd.as_raw_fd());
                let mut st = self.shared.lock();
                st.fail(e.kind(), e.to_string());
                self.publish(&mut st);
                drop(st);
                self.shared.notify();
                Next::Release
            }
        }
    }

    fn try_step(&mut self, now: Time, groups: &mut Groups, woken_by: WokenBy) -> io::Result<Next> {
        let fd = self.fd.as_raw_fd();
        if woken_by.by_socket() && self.control.is_controlled() && !self.shut {
            // A kernel-mode socket event with nothing acknowledged, nothing retransmitted and
            // the kernel still holding unsent bytes (a SCHED stamp of a segment it sent from
            // its queue) changes nothing this step would act on: the stamp waits in the error
            // queue for the step of the next acknowledgement.
            if self.transport.nothing_new(fd, self.options.notsent_lowat)? {
                return Ok(Next::Keep(self.scheduled));
            }
        }
        if let Some(e) = self.transport.take_error(fd)? {
            return Err(e);
        }
        self.events.clear();
        // A flow whose acknowledgements come by polling (no record in flight: plain TCP, or
        // chunks that went without timestamps) has nothing to read when its socket reports
        // room and nothing else: no stamp can be queued, and an error would have come as
        // EPOLLERR. Its feedback is read at its polls ([`Flow::next_wake`]) and at every other
        // step; a room step only writes (issue 18: one TCP_INFO and one error-queue read per
        // step was a tenth of the sender's cost in bench/cpu-per-byte-results.md).
        let looks = woken_by != WokenBy::Room || !self.polls_for_acks();
        if looks {
            self.transport.feedback().collect(fd, now, &mut self.chunks, &mut self.events)?;
        }
        // After a hold the feedback waited: each ACK is heard at the time it arrived.
        let since = std::mem::replace(&mut self.last_step_at, now);
        let arrivals = if self.socket_unwatched { self.transport.feedback_ref().arrivals() } else { &[] };
        self.counters.losses += self.control.on_feedback_arrived(now, &self.events, arrivals, since);
        self.control.fire_timer(now);

        let shared = self.shared.clone();
        let mut st = shared.lock();
        st.wake_pending = false;
        if st.abort {
            sys::set_linger_zero(fd)?;
            st.fail(io::ErrorKind::ConnectionAborted, "connection aborted by the application".into());
            drop(st);
            self.shared.notify();
            return Ok(Next::Release);
        }
        if let Some(change) = st.control_change.take() {
            self.apply(fd, change, &mut st)?;
        }
        if let Some(u) = st.new_underlay.take() {
            self.underlay = u;
        }
        if let Some(w) = st.new_weight.take() {
            self.membership.set_weight(groups, w, now);
        }
        let rtt = self.transport.feedback_ref().tcp_info().map(|i| Duration::from_micros(u64::from(i.rtt)));
        let mss = self.mss();
        self.control.couple(now, rtt.filter(|r| !r.is_zero()), mss, &mut self.membership, groups);
        self.underlay.sync(fd, self.control.decision(), self.mss(), now)?;
        self.pace_kernel(fd)?;
        let (before, was_full, was_handed_over) = (st.queue.len(), st.queue.is_full(), st.handed_over);
        let stop = self.write_queue(fd, now, &mut st)?;
        if st.queue.is_empty() {
            self.control.on_idle();
            if now >= self.idle_look_at {
                self.idle_look_at = now + IDLE_LOOK;
                if st.queue.release_if_idle() {
                    self.transport.release_spares();
                }
            }
        }
        if st.ending.is_ended() && !self.close_noted {
            self.close_noted = true;
            self.transport.on_close(fd, &self.options)?;
        }
        let flushed = st.queue.is_empty() && self.transport.is_flushed();
        let done = match st.ending {
            Ending::Open => false,
            Ending::Finish => {
                if flushed && !self.shut {
                    self.shut = self.transport.finish(fd, &self.chunks, now)?;
                }
                self.shut && self.chunks.bytes_in_flight() == 0 && self.transport.end_delivered(fd)?
            }
            // Everything is in the kernel: it sends the rest; the FIN is the socket's last
            // close's business (close(2) semantics).
            Ending::Release => flushed,
        };
        st.handed_over = done || (self.shut && self.transport.kernel_delivers_after_fin());
        if done {
            st.finished = true;
            st.released = true;
        }
        self.publish(&mut st);
        st.sync_readiness();
        // Application calls wait for room in a full queue (write, send_file), an empty one
        // (flush), the hand-over (the exit flush) or the end (close): they are woken when one
        // of these comes, not after every chunk (a queue holding a file range stays above its
        // capacity for many steps).
        let freed = st.queue.len() < before;
        let room = freed && (st.queue.is_empty() || (was_full && !st.queue.is_full()));
        let wake_waiters = room || done || (st.handed_over && !was_handed_over);
        let active = !st.queue.is_empty() || self.chunks.bytes_in_flight() > 0;
        let open = st.ending == Ending::Open;
        drop(st);
        if wake_waiters {
            self.shared.notify();
        }
        if done {
            return Ok(Next::Release);
        }
        if looks {
            self.note_poll();
        }
        let wake = self.next_wake(now, stop.wake_at(), active);
        let alone = self.membership.key.as_ref().is_none_or(|k| groups.holds_at_most_one(k));
        self.holds_socket = open && alone && self.may_hold_socket(now, stop, wake);
        if self.holds_socket {
            self.counters.socket_holds += 1;
        }
        Ok(Next::Keep(wake))
    }

    /// Whether the socket's events may go unheard until the step at `wake` after a step that
    /// stopped writing for `stop` ([`socket_hold`]): kernel mode (framed and UDP mode read
    /// their feedback from the socket) with stamped chunks before the FIN, nothing left in
    /// the feedback source, and a controller whose feedback can wait that long. The caller
    /// also requires the flow alone in its group (a group's share moves at every step of
    /// the others).
    fn may_hold_socket(&self, now: Time, stop: Stop, wake: Option<Time>) -> bool {
        let Some(info) = self.transport.kernel_info() else { return false };
        if self.shut || self.polls_for_acks() {
            return false;
        }
        if self.transport.feedback_ref().backlogged() {
            return false;
        }
        // The socket refused at TCP_NOTSENT_LOWAT unsent and reports room below half of it.
        let rate = info.pacing_rate.max(info.delivery_rate);
        let drain = socket_hold::drain_time(u64::from(self.options.notsent_lowat / 2), rate);
        let can_wait_until = self.control.feedback_can_wait_until(stop.sends_on_feedback());
        socket_hold::holds(now, can_wait_until, wake, stop, drain)
    }

    /// Whether no event on the socket tells the flow of its acknowledgements, so that it
    /// re-reads TCP_INFO now and then while bytes are in flight: plain TCP, or a flow whose
    /// last chunk went without timestamps.
    fn polls_for_acks(&self) -> bool {
        self.control.polls_for_acks() || self.transport.polls_for_acks()
    }

    /// Counts a step that found nothing newly acknowledged (or resets the count).
    fn note_poll(&mut self) {
        let acked = self.chunks.acked();
        self.idle_polls =
            if acked == self.idle_polls.1 { (self.idle_polls.0 + 1, acked) } else { (0, acked) };
    }

    /// Puts the controller the application asked for in place; a flow that ran as `none`
    /// gets its socket prepared for it first.
    fn apply(&mut self, fd: RawFd, change: ControlChange, st: &mut SharedState) -> io::Result<()> {
        if change.control.is_controlled() && !self.control.is_controlled() {
            self.transport.prepare_for_controller(fd, &self.options, &mut self.chunks)?;
        }
        self.control = change.control;
        self.spec = change.spec;
        st.control_applied = st.control_applied.max(change.generation);
        self.shared.notify();
        Ok(())
    }

    /// Writes chunks while the control allows and the socket takes them. Returns why it
    /// stopped, and with it when to try again (none: when the socket or the feedback says so).
    fn write_queue(&mut self, fd: RawFd, now: Time, st: &mut SharedState) -> io::Result<Stop> {
        loop {
            if !self.transport.flush(fd)? {
                // The socket is full: whatever holds us up, it is not the pacer.
                self.control.on_idle();
                return Ok(Stop::SocketFull);
            }
            if st.queue.is_empty() {
                return Ok(Stop::QueueEmpty);
            }
            let queued = st.queue.len();
            let in_flight = self.chunks.bytes_in_flight();
            let allowance =
                match self.control.next_chunk(now, queued, in_flight, self.sizing(), &self.underlay) {
                    Allowance::Send { len, record } => {
                        (len.min(self.transport.payload_limit().unwrap_or(u64::MAX)), record)
                    }
                    Allowance::PacedUntil(t) => return Ok(Stop::Paced(t)),
                    Allowance::WindowFull => {
                        // Window-limited, not pacer-limited: no catching up afterwards.
                        self.control.on_idle();
                        // Waiting for feedback: it normally arrives on the socket; look again
                        // after STALL_POLL in case it was lost (a full error queue).
                        return Ok(Stop::WindowFull(now + STALL_POLL));
                    }
                };
            let (len, record) = allowance;
            let len = usize::try_from(len).unwrap_or(usize::MAX);
            let front = if self.transport.takes_file_slices(len) {
                st.queue.front(len)
            } else {
                st.queue.front_read(len)?
            };
            let Some(payload) = front else {
                return Ok(Stop::QueueEmpty);
            };
            let chunk = OutChunk {
                seq: self.chunks.next_seq(),
                now,
                hint: self.control.sender_hint(now),
                payload,
                record,
            };
            let offered = chunk.len();
            match self.transport.send(fd, chunk)? {
                // The socket took part of the chunk: its buffer is full (the kernel marked it
                // so and will report it writable again), so trying again now would only
                // return EAGAIN.
                Some(n) if n < offered => {
                    st.queue.consume(n as u64);
                    self.record_sent(now, n as u64);
                    self.control.on_idle();
                    return Ok(Stop::SocketFull);
                }
                Some(n) => {
                    st.queue.consume(n as u64);
                    self.record_sent(now, n as u64);
                }
                None => {
                    self.control.on_idle();
                    return Ok(Stop::SocketFull);
                }
            }
        }
    }

    /// The segment size: the kernel's, once TCP_INFO has been read; [`Options::mss`] before.
    fn mss(&self) -> u64 {
        let info = self.transport.feedback_ref().tcp_info();
        info.map_or(self.options.mss, |i| u64::from(i.snd_mss)).max(1)
    }

    /// How the next chunk is sized: the kernel's MSS, RTT and delivery rate once known.
    fn sizing(&self) -> Sizing {
        let info = self.transport.feedback_ref().tcp_info();
        Sizing {
            mss: self.mss(),
            packet: self.options.mss,
            clock: SendClock {
                pacing_rate: None,
                srtt: info.map(|i| Duration::from_micros(u64::from(i.rtt))),
                delivery_rate: info.map(|i| i.delivery_rate),
            },
            max_chunk: self.options.max_chunk.max(1),
        }
    }

    fn record_sent(&mut self, now: Time, bytes: u64) {
        let in_flight = self.chunks.bytes_in_flight() + bytes;
        let gate = (&self.underlay, self.mss());
        let (memo, overshoot) = self.control.on_sent(now, self.chunks.next_seq(), bytes, in_flight, gate);
        let chunk = self.chunks.push(bytes, now, memo);
        self.transport.feedback().on_sent(&chunk);
        let c = &mut self.counters;
        c.chunks_sent += 1;
        c.max_in_flight = c.max_in_flight.max(in_flight);
        c.max_overshoot = c.max_overshoot.max(overshoot);
    }

    /// When the flow wants its next step besides socket events.
    fn next_wake(&self, now: Time, wake_at: Option<Time>, active: bool) -> Option<Time> {
        let earliest = |a: Option<Time>, b: Option<Time>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // A controller's timer (Verus's epochs) matters only while the flow has something to
        // send or in flight; an idle flow sleeps, and its next step fires an overdue timer.
        let timer = if active { self.control.next_timer() } else { None };
        // The feedback source's own timer (UDP mode's loss detection).
        let wake = earliest(earliest(wake_at, timer), self.transport.feedback_ref().next_deadline());
        // Waiting for the last acknowledgement after the FIN: look again now and then, in
        // case no stamp is coming (plain mode, or a stamp lost to a full error queue).
        // Plain mode has no ACK stamps either, nor a flow whose chunks went without them
        // (an unbounded controller that needs no RTT samples): while bytes are in flight,
        // re-read TCP_INFO now and then so that the info and the final flush stay current.
        // A source that stopped at its read budget comes back at once, after the other due
        // flows: what it left in the socket raises no new edge-triggered event.
        let wake = if self.transport.feedback_ref().backlogged() { Some(now) } else { wake };
        let poll = self.polls_for_acks() && self.chunks.bytes_in_flight() > 0;
        if self.shut || poll {
            earliest(wake, Some(now + fin_poll_interval(self.idle_polls.0)))
        } else {
            wake
        }
    }

    /// Lets the kernel spread each chunk's segments at a little above the controller's
    /// pacing rate (DESIGN.md: SO_MAX_PACING_RATE paces without the fq qdisc), so that a
    /// chunk of several segments does not leave as one burst. Updated when the rate moves
    /// by more than an eighth, to keep system calls rare.
    fn pace_kernel(&mut self, fd: RawFd) -> io::Result<()> {
        let want = self.control.pacing_rate().map(|r| r.saturating_add(r / 4).max(1));
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

    fn publish(&self, st: &mut SharedState) {
        let queued = st.queue.len();
        let info = &mut st.info;
        info.controller.clone_from(&self.spec);
        self.control.publish(info);
        info.bytes_in_flight = self.chunks.bytes_in_flight();
        info.max_bytes_in_flight = self.counters.max_in_flight;
        info.max_window_overshoot = self.counters.max_overshoot;
        info.bytes_written = self.chunks.written();
        info.bytes_acked = self.chunks.acked();
        info.chunks_sent = self.counters.chunks_sent;
        info.losses = self.counters.losses;
        let feedback = self.transport.feedback_ref();
        let stats = feedback.stats();
        info.ack_stamps = stats.primary_acks;
        info.stamp_acks = stats.primary_settled;
        info.info_acks = stats.fallback_acks;
        info.foreign_datagrams = stats.foreign;
        info.quiet_steps = stats.quiet_steps;
        info.socket_holds = self.counters.socket_holds;
        info.ack_latency_total_us = stats.ack_latency_total_us;
        info.ack_latency_max_us = stats.ack_latency_max_us;
        if let Some(ti) = feedback.tcp_info() {
            info.set_kernel(ti);
        }
        info.underlay_cwnd_segments = self.underlay.written_cwnd();
        info.queued = queued;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_room_alone_is_a_room_event() {
        let (out, err, hup, inp) =
            (libc::EPOLLOUT as u32, libc::EPOLLERR as u32, libc::EPOLLHUP as u32, libc::EPOLLIN as u32);
        assert_eq!(WokenBy::socket_event(out), WokenBy::Room);
        // A timestamp or an error on the error queue, a hang-up, a peer's frame: the step reads.
        for events in [out | err, err, out | hup, out | inp, inp] {
            assert_eq!(WokenBy::socket_event(events), WokenBy::Socket, "{events:#x}");
        }
        // A flow due for a deadline as well is stepped as woken by the deadline.
        assert!(WokenBy::Other < WokenBy::Room && WokenBy::Other < WokenBy::Socket);
    }

    #[test]
    fn polls_without_progress_back_off_to_one_a_second() {
        let ms: Vec<u128> = (0..9).map(|n| fin_poll_interval(n).as_millis()).collect();
        assert_eq!(ms, [20, 40, 80, 160, 320, 640, 1000, 1000, 1000]);
        assert_eq!(fin_poll_interval(u32::MAX), FIN_POLL_MAX);
    }
}
