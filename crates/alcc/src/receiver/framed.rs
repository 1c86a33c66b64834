//! The receiving side of framed mode: reads frames, hands only the application bytes to the
//! reader, drives the receiver-side model of the sender's algorithm (Sprout's forecaster) and
//! answers with ACK and report frames on the same connection.
//!
//! It runs on the reading thread, inside `read`: every data frame is acknowledged as soon as
//! it is taken from the socket, and while the reader waits, the wait ends at the model's next
//! timer (Sprout's 20 ms tick) so that forecasts keep flowing. A reader that stops reading
//! stops acknowledging, which the sender sees as a stalled path (as with any TCP receiver
//! whose application stops reading).
//!
//! The other way round, a sender that never reads its ACKs: they wait in `out` for room in
//! the socket, at most [`MAX_FEEDBACK_BACKLOG`] bytes of them. Beyond that the receiver stops
//! reading data (backpressure: the sender's bytes stay in the kernel's buffers, its writes
//! stall as a TCP sender's do when its peer stops reading) until the ACKs it owes have gone
//! out; `read` meanwhile waits for room to write (or times out, or says `WouldBlock`).

use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use alcc_cc::{Arrival, Config, ReceiverModel, SenderHint, Time};

use crate::feedback::framed::protocol_error;
use crate::receiver::{model_for_sender, model_report, Failure, ReadyBytes, ReceiverStats};
use crate::sys;
use crate::wire::{Ack, Decoder, Direction, Frame};

/// Bytes read from the socket per `recv`.
const READ_SIZE: usize = 256 << 10;

/// Most bytes of ACK and report frames that may wait for room in the socket before the
/// receiver stops reading data (about 2000 ACKs; the module docs).
pub(crate) const MAX_FEEDBACK_BACKLOG: usize = 64 << 10;

/// Whether [`FramedReceiver::take_frames`] took any frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Taken {
    /// At least one: look at what it produced before reading more.
    Some,
    /// None whole in the decoder: read the socket.
    Nothing,
}

/// The receiving state of one framed connection.
pub(crate) struct FramedReceiver {
    fd: RawFd,
    config: Config,
    decoder: Decoder,
    model: Option<Box<dyn ReceiverModel>>,
    /// The sender's controller, from its Hello.
    spec: Option<String>,
    scratch: Vec<u8>,
    /// Application bytes decoded and not yet read.
    ready: ReadyBytes,
    /// ACK and report frames not yet written, from `out_at` on.
    out: Vec<u8>,
    out_at: usize,
    delivered: u64,
    eof: bool,
    /// The reader got the end of the stream (`Ok(0)`), the last ACKs delivered before it.
    end_read: bool,
    failed: Failure,
    frames: u64,
    reports: u64,
    /// The most bytes of ACK and report frames that waited for room at once.
    max_backlog: u64,
}

impl FramedReceiver {
    /// Receives on the connected socket `fd` (non-blocking); `config` sizes the model.
    pub fn new(fd: RawFd, config: Config) -> FramedReceiver {
        FramedReceiver {
            fd,
            config,
            decoder: Decoder::new(Direction::ToReceiver),
            model: None,
            spec: None,
            scratch: vec![0; READ_SIZE],
            ready: ReadyBytes::default(),
            out: Vec::new(),
            out_at: 0,
            delivered: 0,
            eof: false,
            end_read: false,
            failed: Failure::default(),
            frames: 0,
            reports: 0,
            max_backlog: 0,
        }
    }

    /// What it has seen so far.
    pub fn stats(&self) -> ReceiverStats {
        ReceiverStats {
            sender_spec: self.spec.clone(),
            delivered: self.delivered,
            frames: self.frames,
            reports: self.reports,
            max_feedback_backlog: self.max_backlog,
            ..ReceiverStats::default()
        }
    }

    /// Reads application bytes; `Ok(0)` at the end of the stream. `nonblocking` returns
    /// `WouldBlock` instead of waiting; `timeout` bounds a blocking wait.
    pub fn read(
        &mut self,
        buf: &mut [u8],
        nonblocking: bool,
        timeout: Option<Duration>,
    ) -> io::Result<usize> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            self.failed.check()?;
            let now = sys::now();
            self.run_model(now).inspect_err(|_| self.cut())?;
            if let Some(n) = self.ready.read_into(buf) {
                self.flush_out()?;
                return Ok(n);
            }
            if self.eof {
                // The sender waits for the last ACKs before it finishes: deliver them.
                self.flush_blocking(deadline)?;
                self.end_read = true;
                return Ok(0);
            }
            if self.backlog() >= MAX_FEEDBACK_BACKLOG {
                // Backpressure: no more data until the ACKs owed have room (module docs).
                self.flush_out()?;
                if self.backlog() >= MAX_FEEDBACK_BACKLOG {
                    if nonblocking {
                        return Err(io::ErrorKind::WouldBlock.into());
                    }
                    self.wait(deadline, 0)?;
                    continue;
                }
            }
            // Frames already read first; the socket only once the decoder holds none whole.
            match self.take_frames(now) {
                Err(e) => return Err(self.fail(e)),
                Ok(Taken::Some) => {
                    self.flush_out()?;
                    continue;
                }
                Ok(Taken::Nothing) => {}
            }
            match sys::recv_nonblocking(self.fd, &mut self.scratch) {
                Ok(0) => {
                    self.eof = true;
                    if let Err(e) = self.decoder.finish() {
                        return Err(self.fail(protocol_error(&e)));
                    }
                }
                Ok(n) => {
                    let chunk = std::mem::take(&mut self.scratch);
                    self.decoder.push(&chunk[..n]);
                    self.scratch = chunk;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.flush_out()?;
                    if nonblocking {
                        return Err(io::ErrorKind::WouldBlock.into());
                    }
                    self.wait(deadline, libc::POLLIN)?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.fail(e)),
            }
        }
    }

    /// Whether the reader got the end of the stream, after the ACKs of every data frame
    /// were handed to the kernel: from then on the sender may finish and go.
    pub fn end_read(&self) -> bool {
        self.end_read
    }

    /// Sends whatever ACKs are pending, waiting up to `timeout` for room.
    pub fn close(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.failed.check()?;
        self.flush_blocking(timeout.map(|t| Instant::now() + t))
    }

    /// Records a failure, cuts the connection, and returns the error.
    fn fail(&mut self, e: io::Error) -> io::Error {
        let e = self.failed.record(e);
        self.cut();
        e
    }

    fn cut(&mut self) {
        let _ = sys::shutdown_both(self.fd);
    }

    /// Decodes the complete frames buffered, payload to `ready` and an ACK per data frame,
    /// until none is left or the ACKs owed reach [`MAX_FEEDBACK_BACKLOG`].
    fn take_frames(&mut self, now: Time) -> io::Result<Taken> {
        let mut taken = Taken::Nothing;
        while self.backlog() < MAX_FEEDBACK_BACKLOG {
            let Some(frame) = self.decoder.next_frame().map_err(|e| protocol_error(&e))? else { break };
            taken = Taken::Some;
            match frame {
                Frame::Hello { spec } => {
                    self.model = model_for_sender("framed", &spec, &self.config)?;
                    self.spec = Some(spec);
                }
                Frame::Data { header, payload } => {
                    let bytes = payload.len() as u64;
                    self.delivered += bytes;
                    self.frames += 1;
                    if let Some(m) = self.model.as_mut() {
                        let hint = SenderHint { time_to_next: header.time_to_next };
                        m.on_arrival(now, &Arrival { seq: header.seq, bytes, hint });
                    }
                    self.ready.push(&payload);
                    let ack = Ack { seq: header.seq, receive_time: now, delivered: self.delivered };
                    self.push_frame(&Frame::Ack(ack))?;
                }
                other => {
                    return Err(protocol_error(&crate::wire::WireError::Unexpected {
                        kind: other.kind(),
                        why: "the sender sends only Hello and Data",
                    }))
                }
            }
        }
        self.run_model(now)?;
        Ok(taken)
    }

    /// Fires the model's timer when due and frames its new report.
    /// A forecast that finds [`MAX_FEEDBACK_BACKLOG`] reached is dropped (the next tick's
    /// replaces it), so that a sender that never reads cannot grow the backlog by ticks.
    fn run_model(&mut self, now: Time) -> io::Result<()> {
        if let Some(f) = model_report(&mut self.model, now) {
            if self.backlog() >= MAX_FEEDBACK_BACKLOG {
                return Ok(());
            }
            self.reports += 1;
            self.push_frame(&Frame::Report(f))?;
        }
        Ok(())
    }

    fn push_frame(&mut self, frame: &Frame) -> io::Result<()> {
        if self.out_at == self.out.len() {
            self.out.clear();
            self.out_at = 0;
        } else if self.out_at >= self.out.len() / 2 {
            self.out.drain(..self.out_at);
            self.out_at = 0;
        }
        frame.encode(&mut self.out).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        self.max_backlog = self.max_backlog.max(self.backlog() as u64);
        Ok(())
    }

    /// Bytes of ACK and report frames not yet written.
    fn backlog(&self) -> usize {
        self.out.len() - self.out_at
    }

    /// Writes pending frames without waiting.
    fn flush_out(&mut self) -> io::Result<()> {
        while self.out_at < self.out.len() {
            match sys::send_parts(self.fd, [&self.out[self.out_at..]], false) {
                Ok(n) => self.out_at += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.fail(e)),
            }
        }
        Ok(())
    }

    fn flush_blocking(&mut self, deadline: Option<Instant>) -> io::Result<()> {
        loop {
            self.flush_out()?;
            if self.out_at == self.out.len() {
                return Ok(());
            }
            self.wait(deadline, libc::POLLOUT)?;
        }
    }

    /// Waits for `events` (and, with pending frames, for room to write them), at most until
    /// the model's next timer or `deadline` (then `TimedOut`).
    fn wait(&mut self, deadline: Option<Instant>, events: libc::c_short) -> io::Result<()> {
        let now = sys::now();
        let mut limit = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if limit.is_some_and(|l| l.is_zero()) {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "alcc read timed out"));
        }
        if let Some(t) = self.model.as_ref().and_then(|m| m.next_timer()) {
            // Round up to the next millisecond (poll's resolution) so as not to spin.
            let until = t.saturating_since(now) + Duration::from_micros(999);
            limit = Some(limit.map_or(until, |l| l.min(until)));
        }
        let events = if self.out_at < self.out.len() { events | libc::POLLOUT } else { events };
        sys::poll_one(self.fd, events, limit).map(drop)
    }
}
