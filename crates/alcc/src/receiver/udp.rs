//! The receiving side of UDP mode: asks the server to start (a `Hello` datagram, repeated
//! until something arrives), acknowledges every data datagram at once, runs the sender's
//! receiver-side model (Sprout's forecaster) and hands the payloads to the reader in arrival
//! order. Nothing is retransmitted: bytes of lost datagrams are missing from what the reader
//! gets (UDP mode measures the algorithms; it is not a reliable transport).

use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use alcc_cc::{Arrival, Config, ReceiverModel, SenderHint, Time};

use crate::feedback::framed::protocol_error;
use crate::receiver::{model_for_sender, model_report, ReadyBytes, ReceiverStats};
use crate::sys;
use crate::wire::udp::parse_datagram;
use crate::wire::{Ack, Frame, WireError};

/// How often the start request is repeated until the server answers.
const REQUEST_EVERY: Duration = Duration::from_millis(200);

/// How long the receiver waits without any datagram before it gives up.
const IDLE_LIMIT: Duration = Duration::from_secs(10);

/// The receiving state of one UDP-mode flow.
pub(crate) struct UdpReceiver {
    fd: RawFd,
    config: Config,
    model: Option<Box<dyn ReceiverModel>>,
    stats: ReceiverStats,
    scratch: Vec<u8>,
    ready: ReadyBytes,
    started: bool,
    next_request: Instant,
    last_heard: Instant,
    closed: bool,
    failed: Option<(io::ErrorKind, String)>,
    /// Application bytes the sender says it sent (from its Close).
    pub sent_by_peer: Option<u64>,
}

impl UdpReceiver {
    /// Receives on the connected UDP socket `fd` (non-blocking).
    pub fn new(fd: RawFd, config: Config) -> UdpReceiver {
        let now = Instant::now();
        UdpReceiver {
            fd,
            config,
            model: None,
            stats: ReceiverStats::default(),
            scratch: vec![0; 64 << 10],
            ready: ReadyBytes::default(),
            started: false,
            next_request: now,
            last_heard: now,
            closed: false,
            failed: None,
            sent_by_peer: None,
        }
    }

    /// What it has seen so far.
    pub fn stats(&self) -> ReceiverStats {
        self.stats.clone()
    }

    fn send(&self, frame: &Frame) -> io::Result<()> {
        let mut d = Vec::new();
        frame.encode(&mut d).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        match sys::send_parts(self.fd, &[&d], false) {
            // A full socket buffer drops the datagram, as the network might.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            other => other.map(drop),
        }
    }

    fn fail(&mut self, e: io::Error) -> io::Error {
        self.failed = Some((e.kind(), e.to_string()));
        e
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
            if let Some((kind, msg)) = &self.failed {
                return Err(io::Error::new(*kind, msg.clone()));
            }
            let now = sys::now();
            self.run_model(now)?;
            if let Some(n) = self.ready.read_into(buf) {
                return Ok(n);
            }
            if self.closed {
                return Ok(0);
            }
            if !self.started && Instant::now() >= self.next_request {
                self.send(&Frame::Hello { spec: "udp".into() })?;
                self.next_request = Instant::now() + REQUEST_EVERY;
            }
            let mut dgram = std::mem::take(&mut self.scratch);
            let got = sys::recv_nonblocking(self.fd, &mut dgram);
            let r = match got {
                Ok(n) => {
                    self.last_heard = Instant::now();
                    self.take(now, &dgram[..n])
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if nonblocking {
                        self.scratch = dgram;
                        return Err(io::ErrorKind::WouldBlock.into());
                    }
                    self.wait(deadline)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
                Err(e) => Err(e),
            };
            self.scratch = dgram;
            if let Err(e) = r {
                return Err(self.fail(e));
            }
        }
    }

    fn take(&mut self, now: Time, datagram: &[u8]) -> io::Result<()> {
        match parse_datagram(datagram).map_err(|e| protocol_error(&e))? {
            Frame::Hello { spec } => {
                self.started = true;
                if self.stats.sender_spec.is_none() {
                    self.model = model_for_sender("udp", &spec, &self.config)?;
                    self.stats.sender_spec = Some(spec);
                }
            }
            Frame::Data { header, payload } => {
                self.started = true;
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
                self.sent_by_peer = Some(sent);
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
        let idle_end = self.last_heard + IDLE_LIMIT;
        if idle_end <= wall {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("alcc udp: nothing from the sender for {IDLE_LIMIT:?}"),
            ));
        }
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
