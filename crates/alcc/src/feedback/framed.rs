//! Framed-mode feedback: the receiver's ACK and report frames, read from the flow's own
//! socket (docs/wire-format.md).
//!
//! Each ACK frame names one data frame (one sent chunk) and the cumulative application
//! bytes received through it. It must be exactly the end of a chunk in flight; anything else
//! is a protocol error that closes the connection. The RTT sample is the sender's clock now
//! minus the sender's send time of that chunk (the receiver's clock is not comparable).
//! Reports (Sprout's forecasts) go to the controller's `on_report`.

use std::io;
use std::os::fd::RawFd;

use alcc_cc::{AckSample, ReceiverReport, Time};

use crate::feedback::budget::{keep_newest_report, FloodLimit, FRAME_BUDGET, READ_BUDGET};
use crate::feedback::{Feedback, FeedbackSource, FeedbackStats};
use crate::sent_chunks::SentChunks;
use crate::sys;
use crate::wire::{Ack, Decoder, Direction, Frame, WireError};

/// Bytes read from the socket per `recv`.
const READ_SIZE: usize = 64 << 10;

/// Framed-mode feedback for one connection.
#[derive(Debug)]
pub struct FramedFeedback {
    decoder: Decoder,
    scratch: Vec<u8>,
    acks: u64,
    /// Chunks the ACK frames settled.
    settled: u64,
    reports: u64,
    peer_closed: bool,
    /// Reports per second, to cut a flooding peer.
    flood: FloodLimit,
    /// The last collect stopped at its budget with more to read.
    backlogged: bool,
}

impl Default for FramedFeedback {
    fn default() -> FramedFeedback {
        FramedFeedback::new()
    }
}

/// The error a flow fails with when its peer breaks the wire format.
pub fn protocol_error(e: &WireError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("alcc framed: bad frame from the peer: {e}"))
}

impl FramedFeedback {
    /// A source for a connection on which nothing was read yet.
    pub fn new() -> FramedFeedback {
        FramedFeedback {
            decoder: Decoder::new(Direction::ToSender),
            scratch: vec![0; READ_SIZE],
            acks: 0,
            settled: 0,
            reports: 0,
            peer_closed: false,
            flood: FloodLimit::default(),
            backlogged: false,
        }
    }

    /// Reports received so far.
    pub fn reports(&self) -> u64 {
        self.reports
    }

    /// Settles the sent chunks for one ACK frame, checking it against what was sent.
    fn settle(chunks: &mut SentChunks, now: Time, ack: &Ack, out: &mut Vec<Feedback>) -> io::Result<()> {
        let (written, acked) = (chunks.written(), chunks.acked());
        let mismatch = |why: &str| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "alcc framed: ACK for chunk {} through byte {} {why} (sent {}, acknowledged {})",
                    ack.seq, ack.delivered, written, acked
                ),
            )
        };
        if ack.delivered > chunks.written() || ack.seq >= chunks.next_seq() {
            return Err(mismatch("acknowledges bytes never sent"));
        }
        let settled = chunks.ack_through(ack.delivered);
        match settled.last() {
            Some(c) if c.seq == ack.seq && c.end == ack.delivered => {}
            _ => return Err(mismatch("does not end a chunk in flight")),
        }
        for c in settled {
            out.push(Feedback::Ack(AckSample {
                seq: c.seq,
                bytes: c.bytes(),
                sent_at: c.sent_at,
                rtt: now.saturating_since(c.sent_at),
                bytes_in_flight: chunks.bytes_in_flight(),
                delivered: chunks.acked(),
                memo: c.memo,
            }));
        }
        Ok(())
    }

    /// Acts on one frame read at `at`; this step's events begin at `out[first]`.
    fn take(
        &mut self,
        frame: Frame,
        at: Time,
        chunks: &mut SentChunks,
        out: &mut Vec<Feedback>,
        first: usize,
    ) -> io::Result<()> {
        match frame {
            Frame::Ack(a) => {
                self.acks += 1;
                let before = out.len();
                Self::settle(chunks, at, &a, out)?;
                self.settled += (out.len() - before) as u64;
            }
            Frame::Report(f) => {
                self.flood.note(at, "report frames")?;
                self.reports += 1;
                keep_newest_report(out, first, ReceiverReport::Forecast(f));
            }
            // The decoder lets only Ack and Report through in this direction.
            other => {
                return Err(protocol_error(&WireError::Unexpected {
                    kind: other.kind(),
                    why: "the receiver sends only Ack and Report",
                }))
            }
        }
        Ok(())
    }
}

impl FeedbackSource for FramedFeedback {
    fn name(&self) -> &'static str {
        "framed"
    }

    fn collect(
        &mut self,
        fd: RawFd,
        now: Time,
        chunks: &mut SentChunks,
        out: &mut Vec<Feedback>,
    ) -> io::Result<()> {
        // Edge-triggered readiness: read until the socket is empty, or until this step's
        // budget (src/feedback/budget.rs) is spent; then `backlogged`, and the flow comes
        // back at once, after the other due flows, to decode what the decoder still holds
        // and read the rest. Frames are timed when read, not when the step began (`now`):
        // an ACK that arrives after the driver read its clock would otherwise get an RTT
        // shorter than the path's.
        let mut at = now;
        let (mut read, mut frames) = (0usize, 0u32);
        let first = out.len();
        self.backlogged = false;
        loop {
            while frames < FRAME_BUDGET {
                let Some(frame) = self.decoder.next_frame().map_err(|e| protocol_error(&e))? else { break };
                frames += 1;
                self.take(frame, at, chunks, out, first)?;
            }
            if frames >= FRAME_BUDGET || read >= READ_BUDGET {
                self.backlogged = true;
                break;
            }
            if self.peer_closed {
                break;
            }
            match sys::recv_nonblocking(fd, &mut self.scratch) {
                Ok(0) => {
                    self.peer_closed = true;
                    self.decoder.finish().map_err(|e| protocol_error(&e))?;
                }
                Ok(n) => {
                    at = at.max(sys::now());
                    read += n;
                    self.decoder.push(&self.scratch[..n]);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.peer_closed && chunks.bytes_in_flight() > 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "alcc framed: the peer closed with {} bytes unacknowledged",
                    chunks.bytes_in_flight()
                ),
            ));
        }
        Ok(())
    }

    fn backlogged(&self) -> bool {
        self.backlogged
    }

    fn stats(&self) -> FeedbackStats {
        FeedbackStats { primary_acks: self.acks, primary_settled: self.settled, ..FeedbackStats::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(seq: u64, delivered: u64) -> Ack {
        Ack { seq, receive_time: Time::ZERO, delivered }
    }

    #[test]
    fn an_ack_read_after_the_step_began_is_timed_when_read() {
        use std::io::Write;
        use std::net::{TcpListener, TcpStream};
        use std::os::fd::AsRawFd;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let sender = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut receiver, _) = listener.accept().unwrap();
        sender.set_nonblocking(true).unwrap();
        let mut f = FramedFeedback::new();
        let mut l = SentChunks::new();
        let sent = sys::now();
        l.push(100, sent, 0);
        // The step's clock is read, then the ACK arrives 20 ms later, before the step reads
        // the socket (a descheduled driver thread).
        let step_began = sys::now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let ack_sent = sys::now();
        let mut frame = Vec::new();
        Frame::Ack(ack(0, 100)).encode(&mut frame).unwrap();
        receiver.write_all(&frame).unwrap();
        let mut out = Vec::new();
        // Loopback TCP delivers at once, but give it a moment to be sure.
        for _ in 0..100 {
            f.collect(sender.as_raw_fd(), step_began, &mut l, &mut out).unwrap();
            if !out.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let Some(Feedback::Ack(sample)) = out.first() else { panic!("no sample: {out:?}") };
        assert!(
            sample.rtt >= ack_sent.saturating_since(sent),
            "RTT {:?} shorter than the {:?} the ACK took to come",
            sample.rtt,
            ack_sent.saturating_since(sent)
        );
    }

    fn report(bytes: u64) -> Frame {
        Frame::Report(alcc_cc::Forecast {
            received_or_lost_bytes: bytes,
            receiver_time: Time::from_millis(bytes),
            tick: std::time::Duration::from_millis(20),
            packet_bytes: 1440,
            counts: vec![1, 2, 3],
        })
    }

    #[test]
    fn a_step_takes_at_most_its_budget_and_one_report_event() {
        use crate::feedback::budget::FLOOD_PER_SECOND;
        use std::io::Write;
        use std::net::{TcpListener, TcpStream};
        use std::os::fd::AsRawFd;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let sender = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut receiver, _) = listener.accept().unwrap();
        // More reports than one step may take (but fewer than a flood), all at once.
        let n = 2 * FRAME_BUDGET as u64 + 100;
        assert!(n < FLOOD_PER_SECOND);
        let mut bytes = Vec::new();
        for i in 0..n {
            report(i).encode(&mut bytes).unwrap();
        }
        receiver.write_all(&bytes).unwrap();
        let mut f = FramedFeedback::new();
        let mut chunks = SentChunks::new();
        let mut steps = Vec::new();
        while f.reports() < n && steps.len() < 100 {
            let mut out = Vec::new();
            f.collect(sender.as_raw_fd(), sys::now(), &mut chunks, &mut out).unwrap();
            if out.is_empty() {
                // Loopback delivers at once; should the bytes be late, wait for them.
                std::thread::sleep(std::time::Duration::from_millis(1));
                continue;
            }
            assert_eq!(out.len(), 1, "one report event per step: {out:?}");
            let Feedback::Report(ReceiverReport::Forecast(newest)) = &out[0] else { panic!("{out:?}") };
            steps.push((f.reports(), f.backlogged(), newest.received_or_lost_bytes));
        }
        // Each step ends at the budget (and says it is backlogged) until the last frame.
        let budget = u64::from(FRAME_BUDGET);
        assert_eq!(
            steps,
            [(budget, true, budget - 1), (2 * budget, true, 2 * budget - 1), (n, false, n - 1)],
            "(reports taken so far, backlogged, newest report) per step"
        );
    }

    #[test]
    fn a_report_flood_is_cut() {
        use crate::feedback::budget::FLOOD_PER_SECOND;
        use std::io::Write;
        use std::net::{TcpListener, TcpStream};
        use std::os::fd::AsRawFd;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let sender = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut receiver, _) = listener.accept().unwrap();
        let mut bytes = Vec::new();
        for i in 0..FLOOD_PER_SECOND + 1 {
            report(i).encode(&mut bytes).unwrap();
        }
        receiver.write_all(&bytes).unwrap();
        let mut f = FramedFeedback::new();
        let mut chunks = SentChunks::new();
        let t0 = sys::now();
        // However the steps fall, within one second of the flow's clock the 1001st is refused.
        let mut err = None;
        for step in 0..1000u64 {
            let mut out = Vec::new();
            match f.collect(
                sender.as_raw_fd(),
                t0 + std::time::Duration::from_micros(step),
                &mut chunks,
                &mut out,
            ) {
                Ok(()) => std::thread::sleep(std::time::Duration::from_micros(100)),
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        let err = err.expect("the flood was never cut");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("more than 1000 report frames in one second"), "{err}");
        assert_eq!(f.reports(), FLOOD_PER_SECOND);
    }

    #[test]
    fn acks_settle_whole_chunks_and_lies_are_refused() {
        let mut l = SentChunks::new();
        l.push(100, Time::from_millis(1), 11);
        l.push(50, Time::from_millis(2), 22);
        l.push(10, Time::from_millis(3), 33);
        let mut out = Vec::new();
        FramedFeedback::settle(&mut l, Time::from_millis(30), &ack(0, 100), &mut out).unwrap();
        let Feedback::Ack(a) = out[0].clone() else { panic!("an ack") };
        assert_eq!((a.seq, a.bytes, a.memo, a.delivered, a.bytes_in_flight), (0, 100, 11, 100, 60));
        assert_eq!(a.rtt, std::time::Duration::from_millis(29));
        // Bytes never sent, a chunk never sent, a cut inside a chunk: refused.
        assert!(FramedFeedback::settle(&mut l, Time::ZERO, &ack(2, 161), &mut out).is_err());
        assert!(FramedFeedback::settle(&mut l, Time::ZERO, &ack(3, 160), &mut out).is_err());
        assert!(FramedFeedback::settle(&mut l, Time::ZERO, &ack(1, 120), &mut out).is_err());
        // A sequence number that does not match the chunk ending there.
        let mut l2 = SentChunks::new();
        l2.push(10, Time::ZERO, 0);
        l2.push(10, Time::ZERO, 0);
        assert!(FramedFeedback::settle(&mut l2, Time::ZERO, &ack(0, 20), &mut out).is_err());
    }
}
