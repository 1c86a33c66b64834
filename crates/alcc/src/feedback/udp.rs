//! UDP-mode feedback: the receiver's per-datagram ACKs and reports, with loss detection by
//! [`alcc_cc::sent_packets::SentPackets`] (3 later packets acknowledged, a reordering window of
//! 9/8 RTT, or an RTO; RFC 8985 and RFC 6298), as the simulator does. Nothing is retransmitted:
//! a lost datagram's bytes are gone, as in the reference implementations.
//!
//! Only datagrams with the flow's connection id count (docs/wire-format.md, UDP mode):
//! anything else that reaches the socket is dropped and counted, never fails the flow, and
//! costs a header read. One exception: another client's start request from the flow's own
//! peer address means that the address (port) was given to a new client, so this flow's client
//! is gone if it has also been silent for [`STALE_AFTER`]; the flow then fails, its socket
//! closes, and the new client's next request reaches the listening socket. A client that
//! still acknowledges is never ended that way (a forged request costs it nothing).
//!
//! The first ACK of a packet already declared lost (within the span SentPackets keeps its
//! record: 3 RTOs after it was sent) is handed on as [`Feedback::LateAck`], for the
//! controller's [`on_late_ack`](alcc_cc::Controller::on_late_ack); it settles nothing (the
//! packet was settled at its loss).
//!
//! The flow's sent chunks count bytes by offset; here a chunk leaves them (is "settled") once it
//! and every chunk before it was acknowledged or declared lost, so the sent chunks' bytes in
//! flight never undercount what SentPackets holds.

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use alcc_cc::sent_packets::{Acknowledged, SentPackets};
use alcc_cc::{ReceiverReport, Time};

use crate::feedback::budget::{keep_newest_report, FloodLimit, FRAME_BUDGET};
use crate::feedback::framed::protocol_error;
use crate::feedback::{Feedback, FeedbackSource, FeedbackStats};
use crate::sent_chunks::{Chunk, SentChunks};
use crate::sys;
use crate::wire::udp::{receive, to_sender, ConnectionId, Received};
use crate::wire::{Frame, FrameKind, WireError};

/// What the flood limit counts in UDP mode (src/feedback/budget.rs), for its error.
const WORTHLESS: &str = "datagrams that acknowledged nothing new (repeated ACKs, reports, Hellos)";

/// How long a flow's client must have been silent before another client's start request from
/// its address ends the flow. A live client acknowledges every data datagram within an RTT;
/// a new client repeats its request every 200 ms and gives up after 10 s.
pub const STALE_AFTER: Duration = Duration::from_secs(1);

/// How often the server repeats its `Close` while the client has not answered it.
pub const CLOSE_REPEAT: Duration = Duration::from_millis(200);

/// How long the server waits, after its `Close`, for the client's answer while hearing
/// nothing from it (the client's own idle limit): then the flow fails, since a client that
/// stopped reading or went away cannot be told from one that got everything.
pub const CLOSE_LIMIT: Duration = Duration::from_secs(10);

/// The server's end of the stream: its `Close` went out; the client's answer is awaited.
#[derive(Clone, Copy, Debug)]
struct Closing {
    /// When the `Close` is sent again if no answer came.
    repeat_at: Time,
    /// The client's answer: the bytes it received in all.
    answered: Option<u64>,
}

/// UDP-mode feedback for one flow.
#[derive(Debug, Default)]
pub struct UdpFeedback {
    /// The end of the stream, once the server's `Close` went out.
    closing: Option<Closing>,
    /// After the `Close`: the client's port refused a datagram (it is gone); its answer may
    /// still wait in the socket.
    refused: bool,
    /// The flow's connection id: datagrams with another are not its own.
    id: ConnectionId,
    /// Datagrams dropped as not its own ([`Received::Foreign`], [`Received::OtherStart`]).
    foreign: u64,
    /// When the client was last heard (a datagram with the flow's id), or the first look.
    heard: Option<Time>,
    sent: SentPackets,
    /// Chunks not yet settled: (sequence, end offset, acknowledged or lost).
    pending: VecDeque<(u64, u64, bool)>,
    scratch: Vec<u8>,
    acks: u64,
    /// Packets the ACKs settled (not duplicates, not already declared lost).
    settled: u64,
    losses: u64,
    /// Datagrams that moved nothing forward, per second, to cut a flooding peer.
    flood: FloodLimit,
    /// The last collect stopped at its budget with more to read.
    backlogged: bool,
}

impl UdpFeedback {
    /// A source for flow `id` that has sent nothing yet.
    pub fn new(id: ConnectionId) -> UdpFeedback {
        UdpFeedback { id, scratch: vec![0; 64 << 10], ..UdpFeedback::default() }
    }

    /// Datagrams that reached the socket and were not the flow's own (dropped).
    pub fn foreign(&self) -> u64 {
        self.foreign
    }

    /// The server's `Close` went out at `now`, or went out again.
    pub fn close_sent(&mut self, now: Time) {
        let answered = self.closing.and_then(|c| c.answered);
        self.closing = Some(Closing { repeat_at: now + CLOSE_REPEAT, answered });
    }

    /// Whether the `Close` is due to be sent (again): not sent yet, or unanswered past its
    /// repeat time. Fails once the client has been silent for [`CLOSE_LIMIT`] since.
    pub fn close_due(&self, now: Time) -> io::Result<bool> {
        let Some(c) = self.closing else { return Ok(true) };
        if c.answered.is_some() {
            return Ok(false);
        }
        let silent = now.saturating_since(self.heard.unwrap_or(now));
        if silent >= CLOSE_LIMIT {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "alcc udp: the client did not confirm the end of the stream (silent for {silent:?}): it \
                     stopped reading or is gone"
                ),
            ));
        }
        Ok(now >= c.repeat_at)
    }

    /// The client's answer to the `Close`: the bytes it received (`None` until it came).
    pub fn end_confirmed(&self) -> Option<u64> {
        self.closing.and_then(|c| c.answered)
    }

    /// A socket error: once the `Close` went out, ICMP port unreachable is what a client
    /// that answered and closed its socket leaves behind (its answer may still wait in the
    /// socket, behind the error), so it is noted, not fatal; anything else fails the flow.
    pub fn absorb_refusal(&mut self, e: io::Error) -> io::Result<()> {
        if self.closing.is_some() && e.kind() == io::ErrorKind::ConnectionRefused {
            self.refused = true;
            return Ok(());
        }
        Err(e)
    }

    /// Whether the client's port refused a datagram after the `Close` went out.
    pub fn refused(&self) -> bool {
        self.refused
    }

    fn mark(&mut self, seq: u64) {
        let Some(front) = self.pending.front().map(|p| p.0) else { return };
        if let Some(p) = seq.checked_sub(front).and_then(|i| self.pending.get_mut(i as usize)) {
            p.2 = true;
        }
    }

    fn settle(&mut self, chunks: &mut SentChunks) {
        let mut through = None;
        while let Some(&(_, end, true)) = self.pending.front() {
            through = Some(end);
            self.pending.pop_front();
        }
        if let Some(end) = through {
            chunks.ack_through(end);
        }
    }

    /// Handles one datagram from the receiver.
    fn take(&mut self, now: Time, datagram: &[u8], out: &mut Vec<Feedback>, first: usize) -> io::Result<()> {
        let heard = *self.heard.get_or_insert(now);
        let frame = match receive(datagram, self.id).map_err(|e| protocol_error(&e))? {
            Received::Own(frame) => frame,
            Received::Foreign => {
                self.foreign += 1;
                return Ok(());
            }
            Received::OtherStart(other) => {
                self.foreign += 1;
                let silent = now.saturating_since(heard);
                if silent < STALE_AFTER {
                    return Ok(());
                }
                return Err(io::Error::new(
                    io::ErrorKind::ConnectionReset,
                    format!(
                        "alcc udp: the client is gone: silent for {silent:?}, and its address now asks to                          start another flow (connection id {:016x}, this flow's {:016x})",
                        other.0, self.id.0
                    ),
                ));
            }
        };
        self.heard = Some(now);
        if !to_sender(frame.kind()) {
            return Err(protocol_error(&WireError::Unexpected {
                kind: frame.kind(),
                why: "the receiver sends only Hello, Ack and Report",
            }));
        }
        match frame {
            Frame::Ack(a) => {
                if a.seq >= self.sent.next_seq() {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("alcc udp: ACK for packet {} never sent", a.seq),
                    ));
                }
                self.acks += 1;
                // A packet already declared lost was marked then; its late ACK goes to the
                // controller. Duplicates (and late ACKs past the records' span) carry nothing.
                match self.sent.on_ack(now, a.seq) {
                    Some(Acknowledged::InFlight(sample)) => {
                        self.mark(a.seq);
                        self.settled += 1;
                        out.push(Feedback::Ack(sample));
                    }
                    Some(Acknowledged::DeclaredLost(sample)) => out.push(Feedback::LateAck(sample)),
                    None => self.flood.note(now, WORTHLESS)?,
                }
            }
            Frame::Report(f) => {
                self.flood.note(now, WORTHLESS)?;
                keep_newest_report(out, first, ReceiverReport::Forecast(f));
            }
            Frame::Close { sent: received } => match self.closing.as_mut() {
                Some(c) if c.answered.is_none() => c.answered = Some(received),
                Some(_) => self.flood.note(now, WORTHLESS)?,
                None => {
                    return Err(protocol_error(&WireError::Unexpected {
                        kind: FrameKind::Close,
                        why: "the client answers a Close, it never sends one first",
                    }))
                }
            },
            // A repeated start request: the flow is already running.
            _ => self.flood.note(now, WORTHLESS)?,
        }
        Ok(())
    }
}

impl FeedbackSource for UdpFeedback {
    fn name(&self) -> &'static str {
        "udp"
    }

    fn on_sent(&mut self, chunk: &Chunk) {
        self.sent.on_sent(chunk.seq, chunk.bytes(), chunk.sent_at, chunk.memo);
        // Its ACK may come late (after the packet was declared lost) or twice (a network
        // that duplicates): allowed, one per datagram sent.
        self.flood.allow_one(chunk.sent_at);
        self.pending.push_back((chunk.seq, chunk.end, false));
    }

    fn collect(
        &mut self,
        fd: RawFd,
        now: Time,
        chunks: &mut SentChunks,
        out: &mut Vec<Feedback>,
    ) -> io::Result<()> {
        // Until the socket is empty or this step's budget is spent (then `backlogged`).
        self.backlogged = false;
        self.heard.get_or_insert(now);
        let mut datagrams = 0u32;
        let first = out.len();
        loop {
            if datagrams >= FRAME_BUDGET {
                self.backlogged = true;
                break;
            }
            datagrams += 1;
            let mut buf = std::mem::take(&mut self.scratch);
            let got = sys::recv_nonblocking(fd, &mut buf);
            let r = match got {
                // Timed when read, not when the step began: the driver takes `now` once per
                // wake-up, and an ACK that arrives while the thread is descheduled or still
                // in this loop would otherwise get an RTT shorter than the path's (UDP-mode
                // min RTTs of 15 ms on a 20 ms path).
                Ok(n) => self.take(now.max(sys::now()), &buf[..n], out, first),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.scratch = buf;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
                // Among others, a datagram that bounced (ICMP port unreachable): the
                // receiver is gone.
                Err(e) => self.absorb_refusal(e),
            };
            self.scratch = buf;
            r?;
        }
        for loss in self.sent.detect_losses(now) {
            self.losses += 1;
            self.mark(loss.seq);
            out.push(Feedback::Loss(loss));
        }
        self.settle(chunks);
        Ok(())
    }

    fn next_deadline(&self) -> Option<Time> {
        let repeat = self.closing.filter(|c| c.answered.is_none()).map(|c| c.repeat_at);
        match (self.sent.loss_deadline(), repeat) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn backlogged(&self) -> bool {
        self.backlogged
    }

    fn stats(&self) -> FeedbackStats {
        FeedbackStats {
            primary_acks: self.acks,
            primary_settled: self.settled,
            foreign: self.foreign,
            ..FeedbackStats::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Ack;
    use std::time::Duration;

    const ID: ConnectionId = ConnectionId(7);

    fn ack(seq: u64) -> Vec<u8> {
        let mut d = Vec::new();
        let frame = Frame::Ack(Ack { seq, receive_time: Time::ZERO, delivered: 1 });
        crate::wire::udp::encode_datagram(ID, &frame, &mut d).unwrap();
        d
    }

    #[test]
    fn out_of_order_acks_and_losses_settle_the_ledger_in_order() {
        let mut f = UdpFeedback::new(ID);
        let mut l = SentChunks::new();
        for i in 0..5 {
            let c = l.push(100, Time::from_millis(i), i);
            f.on_sent(&c);
        }
        let mut out = Vec::new();
        // Packet 0 is missing; 1..=4 arrive: 0 is lost by the packet threshold.
        for seq in 1..5 {
            f.take(Time::from_millis(20), &ack(seq), &mut out, 0).unwrap();
        }
        assert_eq!(l.bytes_in_flight(), 500, "nothing settles past the hole");
        for loss in f.sent.detect_losses(Time::from_millis(20)) {
            f.mark(loss.seq);
            out.push(Feedback::Loss(loss));
        }
        f.settle(&mut l);
        assert_eq!(l.bytes_in_flight(), 0);
        assert_eq!(out.iter().filter(|e| matches!(e, Feedback::Ack(_))).count(), 4);
        assert!(matches!(out.last(), Some(Feedback::Loss(loss)) if loss.seq == 0));
        // A duplicate gives no sample; an ACK beyond what was sent is refused.
        f.take(Time::from_millis(21), &ack(3), &mut out, 0).unwrap();
        assert_eq!(out.len(), 5);
        assert!(f.take(Time::from_millis(21), &ack(5), &mut out, 0).is_err());
        let mut data = Vec::new();
        crate::wire::udp::encode_datagram(ID, &Frame::Close { sent: 0 }, &mut data).unwrap();
        assert!(f.take(Time::from_millis(21), &data, &mut out, 0).is_err(), "a Close before the server's");
        // Garbage and other flows' datagrams are dropped and counted; nothing fails.
        f.take(Time::from_millis(21), b"garbage!", &mut out, 0).unwrap();
        crate::wire::udp::encode_datagram(ConnectionId(8), &Frame::Close { sent: 0 }, &mut data).unwrap();
        f.take(Time::from_millis(21), &data, &mut out, 0).unwrap();
        assert_eq!((out.len(), f.foreign()), (5, 2));
    }

    #[test]
    fn another_clients_start_request_ends_the_flow_only_once_its_client_is_silent() {
        let mut f = UdpFeedback::new(ID);
        let mut l = SentChunks::new();
        f.on_sent(&l.push(100, Time::ZERO, 0));
        let mut out = Vec::new();
        let mut hello = Vec::new();
        crate::wire::udp::encode_datagram(ConnectionId(9), &Frame::Hello { spec: "udp".into() }, &mut hello)
            .unwrap();
        f.take(Time::ZERO, &ack(0), &mut out, 0).unwrap();
        // Heard 0.9 s ago: a forged (or early) request changes nothing.
        f.take(Time::from_millis(900), &hello, &mut out, 0).unwrap();
        assert_eq!(f.foreign(), 1);
        // Silent for STALE_AFTER: the address belongs to a new client; this flow ends.
        let e = f.take(Time::ZERO + STALE_AFTER, &hello, &mut out, 0).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionReset, "{e}");
        assert!(e.to_string().contains("the client is gone"), "{e}");
    }

    #[test]
    fn an_ack_read_after_the_step_began_is_timed_when_read() {
        use std::net::UdpSocket;
        use std::os::fd::AsRawFd;
        let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
        let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
        sender.connect(receiver.local_addr().unwrap()).unwrap();
        receiver.connect(sender.local_addr().unwrap()).unwrap();
        sender.set_nonblocking(true).unwrap();
        let mut f = UdpFeedback::new(ID);
        let mut l = SentChunks::new();
        let sent = sys::now();
        f.on_sent(&l.push(100, sent, 0));
        // The step's clock is read, then the ACK arrives 20 ms later, before the step reads
        // the socket (a descheduled driver thread).
        let step_began = sys::now();
        std::thread::sleep(Duration::from_millis(20));
        let ack_sent = sys::now();
        receiver.send(&ack(0)).unwrap();
        let mut out = Vec::new();
        f.collect(sender.as_raw_fd(), step_began, &mut l, &mut out).unwrap();
        let Some(Feedback::Ack(sample)) = out.first() else { panic!("no sample: {out:?}") };
        assert!(
            sample.rtt >= ack_sent.saturating_since(sent),
            "RTT {:?} shorter than the {:?} the ACK took to come",
            sample.rtt,
            ack_sent.saturating_since(sent)
        );
    }

    proptest::proptest! {
        /// Random sends, ACKs (of any sequence number, duplicates, out of order) and loss
        /// checks: no panic; the sent chunks never count fewer bytes in flight than SentPackets; a
        /// packet is reported at most once (acknowledged or lost), a late ACK only after its
        /// loss and at most once; once every packet is
        /// acknowledged or lost, the sent chunks are settled.
        #[test]
        fn random_feedback_keeps_the_ledger_consistent(
            steps in proptest::collection::vec((0u8..3, 0u64..40, 1u64..1500, 0u64..50_000), 1..200),
        ) {
            let mut f = UdpFeedback::new(ID);
            let mut l = SentChunks::new();
            let mut now = Time::ZERO;
            let mut reported = std::collections::HashSet::new();
            let (mut lost, mut late) = (std::collections::HashSet::new(), std::collections::HashSet::new());
            for (kind, seq, bytes, dt) in steps {
                now += Duration::from_micros(dt);
                let mut out = Vec::new();
                match kind {
                    0 => {
                        let c = l.push(bytes, now, 0);
                        f.on_sent(&c);
                    }
                    1 => {
                        let r = f.take(now, &ack(seq), &mut out, 0);
                        proptest::prop_assert_eq!(r.is_err(), seq >= l.next_seq());
                    }
                    _ => {}
                }
                for loss in f.sent.detect_losses(now) {
                    f.mark(loss.seq);
                    out.push(Feedback::Loss(loss));
                }
                f.settle(&mut l);
                for e in &out {
                    let seq = match e {
                        Feedback::Ack(a) => a.seq,
                        Feedback::Loss(x) => {
                            lost.insert(x.seq);
                            x.seq
                        }
                        Feedback::LateAck(a) => {
                            proptest::prop_assert!(lost.contains(&a.seq), "late ACK of {} never lost", a.seq);
                            proptest::prop_assert!(late.insert(a.seq), "late ACK of {} twice", a.seq);
                            continue;
                        }
                        Feedback::Report(_) => continue,
                    };
                    proptest::prop_assert!(reported.insert(seq), "packet {} reported twice", seq);
                }
                proptest::prop_assert!(l.bytes_in_flight() >= f.sent.bytes_in_flight());
            }
            if f.sent.bytes_in_flight() == 0 {
                proptest::prop_assert_eq!(l.bytes_in_flight(), 0);
            }
        }
    }
}
