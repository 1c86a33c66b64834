//! Cuts a byte stream, arriving in pieces of any size, into validated frames, and checks
//! what only the order of frames can tell.
//!
//! Rules per direction (docs/wire-format.md, "Stream rules"):
//! - sender to receiver: a `Hello` first and only once, then `Data` frames numbered 0, 1, 2...
//! - receiver to sender: `Ack` frames with strictly increasing sequence numbers and delivered
//!   byte counts, `Report` frames whose byte count and receiver time never go backwards.
//!
//! The first error poisons the decoder: every later call returns it again, so the connection
//! is closed and nothing after a bad frame is ever acted on.

use super::frame::{Frame, FrameKind, RawHeader};
use super::WireError;

/// Which way the frames travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the sending side (server): `Hello`, then `Data`.
    ToReceiver,
    /// From the receiving side (client): `Ack` and `Report`.
    ToSender,
}

/// An incremental frame decoder for one direction of one connection.
#[derive(Clone, Debug)]
pub struct Decoder {
    direction: Direction,
    buf: Vec<u8>,
    start: usize,
    hello_seen: bool,
    next_data_seq: u64,
    last_ack: Option<(u64, u64)>,
    last_report: Option<(u64, u64)>,
    failed: Option<WireError>,
}

impl Decoder {
    /// A decoder for the start of a connection.
    pub fn new(direction: Direction) -> Decoder {
        Decoder {
            direction,
            buf: Vec::new(),
            start: 0,
            hello_seen: false,
            next_data_seq: 0,
            last_ack: None,
            last_report: None,
            failed: None,
        }
    }

    /// Appends bytes just read from the connection.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.failed.is_none() {
            self.buf.extend_from_slice(bytes);
        }
    }

    /// Bytes received and not yet returned as frames.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The next complete frame, `Ok(None)` if more bytes are needed, or the reason the
    /// stream is refused.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, WireError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        // A kind this direction never carries is refused at its header, before its body
        // (up to a megabyte for a data frame) is buffered.
        let header = RawHeader::read(&self.buf[self.start..]).map(|h| h.check());
        let wrong_way = match header {
            Some(Ok(kind)) if !allowed(self.direction).contains(&kind) => {
                Some(WireError::Unexpected { kind, why: "this direction does not carry it" })
            }
            _ => None,
        };
        let result = match wrong_way {
            Some(e) => Err(e),
            None => Frame::parse(&self.buf[self.start..]),
        }
        .and_then(|parsed| match parsed {
            None => Ok(None),
            Some((frame, used)) => {
                self.check_order(&frame)?;
                self.start += used;
                Ok(Some(frame))
            }
        });
        match result {
            Err(e) => {
                self.failed = Some(e.clone());
                self.buf = Vec::new();
                self.start = 0;
                Err(e)
            }
            Ok(f) => {
                self.compact();
                Ok(f)
            }
        }
    }

    /// The connection ended: an error if it ended inside a frame (or had failed before).
    pub fn finish(&self) -> Result<(), WireError> {
        match &self.failed {
            Some(e) => Err(e.clone()),
            None if self.buffered() > 0 => Err(WireError::Truncated(self.buffered())),
            None => Ok(()),
        }
    }

    fn compact(&mut self) {
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start > 0 && self.start >= self.buf.len() / 2 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
    }

    fn check_order(&mut self, frame: &Frame) -> Result<(), WireError> {
        let kind = frame.kind();
        let unexpected = |why| Err(WireError::Unexpected { kind, why });
        match (self.direction, frame) {
            (_, Frame::Close { .. }) => unexpected("Close belongs to UDP mode"),
            (Direction::ToReceiver, Frame::Hello { .. }) if self.hello_seen => unexpected("second Hello"),
            (Direction::ToReceiver, Frame::Hello { .. }) => {
                self.hello_seen = true;
                Ok(())
            }
            (Direction::ToReceiver, _) if !self.hello_seen => unexpected("the first frame must be Hello"),
            (Direction::ToReceiver, Frame::Data { header, .. }) => {
                if header.seq != self.next_data_seq {
                    return Err(WireError::OutOfOrder {
                        what: "data sequence number",
                        prev: self.next_data_seq.wrapping_sub(1),
                        got: header.seq,
                    });
                }
                self.next_data_seq += 1;
                Ok(())
            }
            (Direction::ToReceiver, _) => unexpected("the sender sends only Hello and Data"),
            (Direction::ToSender, Frame::Ack(a)) => {
                if let Some((seq, delivered)) = self.last_ack {
                    if a.seq <= seq {
                        return Err(WireError::OutOfOrder {
                            what: "ACK sequence number",
                            prev: seq,
                            got: a.seq,
                        });
                    }
                    if a.delivered <= delivered {
                        return Err(WireError::OutOfOrder {
                            what: "ACK delivered bytes",
                            prev: delivered,
                            got: a.delivered,
                        });
                    }
                }
                self.last_ack = Some((a.seq, a.delivered));
                Ok(())
            }
            (Direction::ToSender, Frame::Report(f)) => {
                let now = (f.received_or_lost_bytes, f.receiver_time.as_micros());
                if let Some((bytes, time)) = self.last_report {
                    if now.0 < bytes {
                        return Err(WireError::OutOfOrder { what: "report bytes", prev: bytes, got: now.0 });
                    }
                    if now.1 < time {
                        return Err(WireError::OutOfOrder {
                            what: "report receiver time",
                            prev: time,
                            got: now.1,
                        });
                    }
                }
                self.last_report = Some(now);
                Ok(())
            }
            (Direction::ToSender, _) => unexpected("the receiver sends only Ack and Report"),
        }
    }
}

/// The kinds each direction may carry (for documentation and tests).
pub fn allowed(direction: Direction) -> &'static [FrameKind] {
    match direction {
        Direction::ToReceiver => &[FrameKind::Hello, FrameKind::Data],
        Direction::ToSender => &[FrameKind::Ack, FrameKind::Report],
    }
}
