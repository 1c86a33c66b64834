//! The receiving side of UDP mode: asks the server to start (a `Hello` datagram, repeated
//! until something arrives), acknowledges every data datagram at once, runs the sender's
//! receiver-side model (Sprout's forecaster) and hands the payloads to the reader in arrival
//! order, each datagram once (a duplicate is acknowledged again but not delivered). Nothing
//! is retransmitted: bytes of lost datagrams are missing from what the reader gets (UDP mode
//! measures the algorithms; it is not a reliable transport), and the end of the stream says
//! so: when the sender's `Close` counts more bytes than arrived, the read that reaches the
//! end fails with `UnexpectedEof` naming both counts instead of returning a clean 0.
//!
//! The flow is the one its random [`ConnectionId`] names: every datagram it sends carries the
//! id, and only datagrams that carry it back count. Anything else that reaches the socket
//! (the datagrams of a flow that still sends to an earlier client of this port, garbage, a
//! version-1 sender) is dropped and counted in [`ReceiverStats::foreign`], costs a header
//! read, is never delivered and never counts as hearing from the sender.
//!
//! A sender whose socket is gone makes the kernel answer our ACKs with ICMP port unreachable,
//! and Linux reports that error on the next `recv` or `send` *before* the datagrams already
//! queued (`__skb_try_recv_datagram` checks `sk_err` first). So a refusal is noted and the
//! queue is read to its end: a sender that sent its `Close` and left loses nothing, and one
//! that left without it fails the read with `ConnectionRefused` once the queue is empty. The
//! same holds before the flow started (a repeated start request can be refused by a sender
//! that answered the first one, sent everything and left); with nothing queued from the
//! sender, a refused start request means no server there.

use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use alcc_cc::{Arrival, Config, ReceiverModel, SenderHint, Time};

use crate::feedback::framed::protocol_error;
use crate::receiver::{model_for_sender, model_report, Failure, ReadyBytes, ReceiverStats};
use crate::sys;
use crate::wire::udp::{encode_datagram, receive, ConnectionId, Received};
use crate::wire::{Ack, Frame, WireError};

/// How often the start request is repeated until the server answers.
const REQUEST_EVERY: Duration = Duration::from_millis(200);

/// How long the receiver waits without any datagram before it gives up.
const IDLE_LIMIT: Duration = Duration::from_secs(10);

/// The receiving state of one UDP-mode flow.
pub(crate) struct UdpReceiver {
    fd: RawFd,
    /// The flow's connection id, chosen here.
    id: ConnectionId,
    config: Config,
    model: Option<Box<dyn ReceiverModel>>,
    stats: ReceiverStats,
    scratch: Vec<u8>,
    /// The datagram being sent (an ACK, a report, a request), reused: no allocation per ACK.
    outgoing: Vec<u8>,
    ready: ReadyBytes,
    started: bool,
    next_request: Instant,
    last_heard: Instant,
    closed: bool,
    /// The sender's port refused a datagram of ours (ICMP port unreachable; module docs).
    refused: bool,
    /// The end was reported to the reader (an error when bytes were missing, then 0).
    end_reported: bool,
    failed: Failure,
    /// Which data datagrams arrived, to drop duplicates.
    seen: SeenSeqs,
}

/// The sequence numbers of the data datagrams that arrived, to tell a duplicate: everything
/// below `base` counts as seen (arrived, or given up when it fell more than [`SEEN_SPAN`]
/// behind the newest), `window[i]` says whether `base + i` arrived.
#[derive(Debug, Default)]
struct SeenSeqs {
    base: u64,
    window: std::collections::VecDeque<bool>,
}

/// How far behind the newest datagram a missing one may still arrive and be delivered (and
/// the most entries [`SeenSeqs`] keeps).
const SEEN_SPAN: u64 = 1 << 16;

impl SeenSeqs {
    /// Records `seq`; whether it is new.
    fn insert(&mut self, seq: u64) -> bool {
        if seq < self.base {
            return false;
        }
        if seq - self.base >= SEEN_SPAN {
            // Far ahead: what lies more than SEEN_SPAN behind it is given up.
            let new_base = seq + 1 - SEEN_SPAN;
            let drop = usize::try_from(new_base - self.base).unwrap_or(usize::MAX).min(self.window.len());
            self.window.drain(..drop);
            self.base = new_base;
        }
        let i = (seq - self.base) as usize;
        if self.window.len() <= i {
            self.window.resize(i + 1, false);
        }
        if std::mem::replace(&mut self.window[i], true) {
            return false;
        }
        while self.window.front() == Some(&true) {
            self.window.pop_front();
            self.base += 1;
        }
        true
    }
}

impl UdpReceiver {
    /// Receives flow `id` on the connected UDP socket `fd` (non-blocking).
    pub fn new(fd: RawFd, id: ConnectionId, config: Config) -> UdpReceiver {
        let now = Instant::now();
        UdpReceiver {
            fd,
            id,
            config,
            model: None,
            stats: ReceiverStats::default(),
            scratch: vec![0; 64 << 10],
            outgoing: Vec::new(),
            ready: ReadyBytes::default(),
            started: false,
            next_request: now,
            last_heard: now,
            closed: false,
            refused: false,
            end_reported: false,
            failed: Failure::default(),
            seen: SeenSeqs::default(),
        }
    }

    /// What it has seen so far.
    pub fn stats(&self) -> ReceiverStats {
        self.stats.clone()
    }

    fn send(&mut self, frame: &Frame) -> io::Result<()> {
        encode_datagram(self.id, frame, &mut self.outgoing)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        match sys::send_parts(self.fd, [&self.outgoing], false) {
            // A full socket buffer drops the datagram, as the network might.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            Err(e) => self.refused(e),
            Ok(_) => Ok(()),
        }
    }

    /// An error of the socket: a refusal is noted, and the datagrams queued are still read
    /// (module docs); anything else is the caller's.
    fn refused(&mut self, e: io::Error) -> io::Result<()> {
        if e.kind() == io::ErrorKind::ConnectionRefused {
            self.refused = true;
            return Ok(());
        }
        Err(e)
    }

    /// The error once the queue is empty after the sender's port refused us before its
    /// `Close`; before the flow started, the system's "connection refused" (no server).
    fn gone(&self) -> io::Error {
        if !self.started {
            return io::Error::from_raw_os_error(libc::ECONNREFUSED);
        }
        io::Error::new(
            io::ErrorKind::ConnectionRefused,
            format!(
                "alcc udp: the sender's port refused our datagrams (ICMP port unreachable) before its \
                 Close arrived: the sender is gone after {} bytes arrived",
                self.stats.delivered
            ),
        )
    }

    fn fail(&mut self, e: io::Error) -> io::Error {
        self.failed.record(e)
    }

    /// Reads application bytes in arrival order; `Ok(0)` once the sender closed.
    pub fn read(
        &mut self,
        buf: &mut [u8],
        nonblocking: bool,
        timeout: Option<Duration>,
    ) -> io::Result<usize> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            self.failed.check()?;
            // Also under a stream of foreign datagrams, which never reach `wait`.
            self.check_idle()?;
            let now = sys::now();
            self.run_model(now)?;
            if let Some(n) = self.ready.read_into(buf) {
                return Ok(n);
            }
            if self.closed {
                return self.end();
            }
            if !self.started && Instant::now() >= self.next_request {
                self.send(&Frame::Hello { spec: "udp".into() })?;
                self.next_request = Instant::now() + REQUEST_EVERY;
            }
            let mut dgram = std::mem::take(&mut self.scratch);
            let got = sys::recv_nonblocking(self.fd, &mut dgram);
            let r = match got {
                Ok(n) => self.take(now, &dgram[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && self.refused => Err(self.gone()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if nonblocking {
                        self.scratch = dgram;
                        return Err(io::ErrorKind::WouldBlock.into());
                    }
                    self.wait(deadline)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
                Err(e) => self.refused(e),
            };
            self.scratch = dgram;
            if let Err(e) = r {
                return Err(self.fail(e));
            }
        }
    }

    fn take(&mut self, now: Time, datagram: &[u8]) -> io::Result<()> {
        let frame = match receive(datagram, self.id).map_err(|e| protocol_error(&e))? {
            Received::Own(frame) => frame,
            Received::OtherStart(_) | Received::Foreign => {
                self.stats.foreign += 1;
                return Ok(());
            }
        };
        self.last_heard = Instant::now();
        match frame {
            Frame::Hello { spec } => {
                self.started = true;
                if self.stats.sender_spec.is_none() {
                    self.model = model_for_sender("udp", &spec, &self.config)?;
                    self.stats.sender_spec = Some(spec);
                }
            }
            Frame::Data { header, payload } => {
                self.started = true;
                if !self.seen.insert(header.seq) {
                    // Acknowledged again (the first ACK may be what was lost), delivered once.
                    self.stats.duplicates += 1;
                    let ack = Ack { seq: header.seq, receive_time: now, delivered: self.stats.delivered };
                    return self.send(&Frame::Ack(ack));
                }
                let bytes = payload.len() as u64;
                self.stats.delivered += bytes;
                self.stats.frames += 1;
                if let Some(m) = self.model.as_mut() {
                    let hint = SenderHint { time_to_next: header.time_to_next };
                    m.on_arrival(now, &Arrival { seq: header.seq, bytes, hint });
                }
                self.ready.push(&payload);
                let ack = Ack { seq: header.seq, receive_time: now, delivered: self.stats.delivered };
                self.send(&Frame::Ack(ack))?;
            }
            Frame::Close { sent } => {
                // The answer: the end was read here, with so many bytes (three times at the
                // first Close, as the server sends its own; once for each repetition).
                // Best effort: a server already gone draws ICMP port unreachable, and its
                // error on our socket must not turn the complete stream into a failure.
                let answer = Frame::Close { sent: self.stats.delivered };
                for _ in 0..if self.closed { 1 } else { 3 } {
                    let _ = self.send(&answer);
                }
                self.stats.sender_sent = Some(sent);
                self.closed = true;
            }
            other => {
                return Err(protocol_error(&WireError::Unexpected {
                    kind: other.kind(),
                    why: "the sender sends only Hello, Data and Close",
                }))
            }
        }
        self.run_model(now)
    }

    /// The end of the stream: 0 when every byte the sender counted arrived; once, an
    /// `UnexpectedEof` naming the counts when some did not.
    fn end(&mut self) -> io::Result<usize> {
        let sent = self.stats.sender_sent.unwrap_or(0);
        let got = self.stats.delivered;
        if got == sent || self.end_reported {
            return Ok(0);
        }
        self.end_reported = true;
        Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!(
                "alcc udp: incomplete stream: the sender sent {sent} bytes, {got} arrived ({} missing; \
                 UDP mode retransmits nothing), {} duplicate datagrams dropped",
                sent.saturating_sub(got),
                self.stats.duplicates
            ),
        ))
    }

    /// `TimedOut` once nothing of this flow came for [`IDLE_LIMIT`].
    fn check_idle(&self) -> io::Result<()> {
        if self.last_heard.elapsed() < IDLE_LIMIT {
            return Ok(());
        }
        let why = if self.started {
            format!("alcc udp: nothing from the sender for {IDLE_LIMIT:?}")
        } else {
            format!(
                "alcc udp: no answer to the start request for {IDLE_LIMIT:?} (is a UDP-mode server of \
                 wire version 2 listening there? {} datagrams of other flows dropped)",
                self.stats.foreign
            )
        };
        Err(io::Error::new(io::ErrorKind::TimedOut, why))
    }

    fn run_model(&mut self, now: Time) -> io::Result<()> {
        if let Some(f) = model_report(&mut self.model, now) {
            self.stats.reports += 1;
            self.send(&Frame::Report(f))?;
        }
        Ok(())
    }

    /// Waits for a datagram, at most until the model's timer, the next start request, the
    /// caller's deadline or the idle limit (then `TimedOut`).
    fn wait(&mut self, deadline: Option<Instant>) -> io::Result<()> {
        let wall = Instant::now();
        if deadline.is_some_and(|d| d <= wall) {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "alcc read timed out"));
        }
        self.check_idle()?;
        let idle_end = self.last_heard + IDLE_LIMIT;
        let mut until = idle_end.min(deadline.unwrap_or(idle_end));
        if !self.started {
            until = until.min(self.next_request);
        }
        let mut limit = until.saturating_duration_since(wall);
        if let Some(t) = self.model.as_ref().and_then(|m| m.next_timer()) {
            let to_timer = t.saturating_since(sys::now()) + Duration::from_micros(999);
            limit = limit.min(to_timer);
        }
        sys::poll_one(self.fd, libc::POLLIN, Some(limit)).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seen_sequence_numbers_tell_duplicates_within_a_bounded_window() {
        let mut s = SeenSeqs::default();
        assert!(s.insert(0) && s.insert(2) && !s.insert(2) && !s.insert(0));
        assert_eq!((s.base, s.window.len()), (1, 2), "1 is still awaited");
        assert!(s.insert(1) && !s.insert(1));
        assert_eq!((s.base, s.window.len()), (3, 0));
        // A datagram far ahead gives up what lies SEEN_SPAN behind it; memory stays bounded.
        assert!(s.insert(3 + 3 * SEEN_SPAN));
        assert!(s.window.len() as u64 <= SEEN_SPAN);
        assert!(!s.insert(10), "given up: counted as seen");
        assert!(s.insert(3 + 3 * SEEN_SPAN - 1));
    }
}
