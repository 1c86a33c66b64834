//! One frame: the raw header as it sits in the bytes, and the validated [`Frame`].
//!
//! [`RawHeader::read`] only cuts the first 8 bytes into fields; [`RawHeader::check`] refuses
//! a wrong magic, an unknown version or type and an impossible body length before any body
//! byte is buffered; [`Frame::parse`] then validates the body field by field. All integers
//! are big-endian (network byte order). docs/wire-format.md is the specification.

use std::time::Duration;

use alcc_cc::{Forecast, Time};

use super::udp::{ConnectionId, UDP_VERSION};
use super::{
    WireError, ACK_BODY_LEN, BACKLOGGED, DATA_FIELDS_LEN, HEADER_LEN, MAGIC, MAX_BODY, MAX_COUNTS,
    MAX_PACKET_BYTES, MAX_PAYLOAD, MAX_SPEC, MAX_TICK_US, REPORT_FIELDS_LEN, VERSION,
};

/// The frame types of version 1, with their wire values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// Sender to receiver, first and once: the controller specification (type 1).
    Hello,
    /// Sender to receiver: one chunk of application bytes (type 2).
    Data,
    /// Receiver to sender: one data frame was received (type 3).
    Ack,
    /// Receiver to sender: the receiver-side model's report, Sprout's forecast (type 4).
    Report,
    /// UDP mode only, sender to receiver: the transfer is over (type 5).
    Close,
}

impl FrameKind {
    /// The type byte on the wire.
    pub fn code(self) -> u8 {
        match self {
            FrameKind::Hello => 1,
            FrameKind::Data => 2,
            FrameKind::Ack => 3,
            FrameKind::Report => 4,
            FrameKind::Close => 5,
        }
    }

    /// The type for a wire byte, if version 1 defines it.
    pub fn from_code(code: u8) -> Option<FrameKind> {
        match code {
            1 => Some(FrameKind::Hello),
            2 => Some(FrameKind::Data),
            3 => Some(FrameKind::Ack),
            4 => Some(FrameKind::Report),
            5 => Some(FrameKind::Close),
            _ => None,
        }
    }
}

/// The common header exactly as received, not yet checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawHeader {
    /// Bytes 0-1.
    pub magic: [u8; 2],
    /// Byte 2.
    pub version: u8,
    /// Byte 3.
    pub kind: u8,
    /// Bytes 4-7: length of the body that follows.
    pub body_len: u32,
}

impl RawHeader {
    /// Cuts the first [`HEADER_LEN`] bytes of `buf` into fields (`None` if fewer).
    pub fn read(buf: &[u8]) -> Option<RawHeader> {
        let h = buf.get(..HEADER_LEN)?;
        Some(RawHeader {
            magic: [h[0], h[1]],
            version: h[2],
            kind: h[3],
            body_len: u32::from_be_bytes([h[4], h[5], h[6], h[7]]),
        })
    }

    /// Checks magic, version (framed mode's, [`VERSION`]), type and the body length against
    /// the type's limits.
    pub fn check(&self) -> Result<FrameKind, WireError> {
        self.check_in(Envelope::Stream)
    }

    /// [`check`](Self::check) for a frame in `envelope` (its version).
    pub fn check_in(&self, envelope: Envelope) -> Result<FrameKind, WireError> {
        if self.magic != MAGIC {
            return Err(WireError::BadMagic(self.magic));
        }
        if self.version != envelope.version() {
            return Err(WireError::UnsupportedVersion(self.version));
        }
        let kind = FrameKind::from_code(self.kind).ok_or(WireError::UnknownType(self.kind))?;
        let len = self.body_len;
        let bad = |expected| Err(WireError::BadLength { kind, len, expected });
        match kind {
            FrameKind::Hello if len as usize > MAX_SPEC => {
                return Err(WireError::Oversized { len, max: MAX_SPEC as u32 })
            }
            FrameKind::Hello if len == 0 => return bad("1 to 256"),
            FrameKind::Data if len > MAX_BODY => return Err(WireError::Oversized { len, max: MAX_BODY }),
            FrameKind::Data if len as usize <= DATA_FIELDS_LEN => return bad("21 to 1048596"),
            FrameKind::Ack if len as usize != ACK_BODY_LEN => return bad("24"),
            FrameKind::Close if len != 8 => return bad("8"),
            FrameKind::Report => {
                let max = (REPORT_FIELDS_LEN + 4 * MAX_COUNTS) as u32;
                if len > max {
                    return Err(WireError::Oversized { len, max });
                }
                let counts = (len as usize).checked_sub(REPORT_FIELDS_LEN);
                if counts.is_none_or(|c| c == 0 || c % 4 != 0) {
                    return bad("26 + 4 x (1 to 64)");
                }
            }
            _ => {}
        }
        Ok(kind)
    }
}

/// The fixed fields of a data frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataHeader {
    /// The chunk's sequence number: 0 for the first data frame of a connection, then +1.
    pub seq: u64,
    /// The sender's clock when it sent the chunk (µs, the sender's own epoch).
    pub send_time: Time,
    /// Sprout's "time to next" ([`alcc_cc::SenderHint`]): `None` while backlogged.
    pub time_to_next: Option<Duration>,
    /// Application bytes that follow (1 to [`MAX_PAYLOAD`]).
    pub len: u32,
}

/// An acknowledgement of one data frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    /// The sequence number of the data frame acknowledged.
    pub seq: u64,
    /// The receiver's clock when that frame was read (µs, the receiver's own epoch).
    pub receive_time: Time,
    /// Application bytes received on this connection through this frame (cumulative).
    pub delivered: u64,
}

/// A validated frame.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    /// The sender's controller specification (`sprout`, `copa:delta=0.5`): printable ASCII.
    Hello {
        /// The specification.
        spec: String,
    },
    /// A chunk of application bytes.
    Data {
        /// Its fixed fields.
        header: DataHeader,
        /// The bytes, exactly `header.len` of them.
        payload: Vec<u8>,
    },
    /// An acknowledgement.
    Ack(Ack),
    /// Sprout's forecast (Winstein et al., NSDI 2013, section 3.4).
    Report(Forecast),
    /// UDP mode: the sender is done.
    Close {
        /// Application bytes the sender sent in data datagrams, in all.
        sent: u64,
    },
}

fn be_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

fn be_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(a)
}

/// What a frame travels in, which fixes its header (docs/wire-format.md): framed mode's byte
/// stream or one UDP-mode datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Envelope {
    /// Framed mode (a TCP connection): version 1, the 8-byte common header.
    Stream,
    /// UDP mode: version 2, the common header followed by the flow's connection id.
    Datagram(ConnectionId),
}

impl Envelope {
    /// The version byte of its frames.
    pub fn version(self) -> u8 {
        match self {
            Envelope::Stream => VERSION,
            Envelope::Datagram(_) => UDP_VERSION,
        }
    }

    /// Appends the header of a frame of `kind` whose body is `body_len` bytes.
    fn put_header(self, out: &mut Vec<u8>, kind: FrameKind, body_len: usize) {
        out.extend_from_slice(&MAGIC);
        out.push(self.version());
        out.push(kind.code());
        // Callers only encode bodies within the limits, all far below 4 GiB.
        out.extend_from_slice(&(body_len as u32).to_be_bytes());
        if let Envelope::Datagram(id) = self {
            out.extend_from_slice(&id.0.to_be_bytes());
        }
    }
}

impl Frame {
    /// Its type.
    pub fn kind(&self) -> FrameKind {
        match self {
            Frame::Hello { .. } => FrameKind::Hello,
            Frame::Data { .. } => FrameKind::Data,
            Frame::Ack(_) => FrameKind::Ack,
            Frame::Report(_) => FrameKind::Report,
            Frame::Close { .. } => FrameKind::Close,
        }
    }

    /// Parses the frame at the start of `buf`: `Ok(None)` if `buf` holds only part of it
    /// (a header already known to be invalid is refused at once), else the frame and the
    /// bytes it took.
    pub fn parse(buf: &[u8]) -> Result<Option<(Frame, usize)>, WireError> {
        let Some(raw) = RawHeader::read(buf) else {
            // Refuse a wrong magic as soon as its bytes are there.
            if buf.len() >= 2 && buf[..2] != MAGIC {
                return Err(WireError::BadMagic([buf[0], buf[1]]));
            }
            return Ok(None);
        };
        let kind = raw.check()?;
        let total = HEADER_LEN + raw.body_len as usize;
        let Some(body) = buf.get(HEADER_LEN..total) else { return Ok(None) };
        Ok(Some((Frame::from_body(kind, body)?, total)))
    }

    /// The frame of `kind` whose whole body (its length already checked against the type's
    /// limits by [`RawHeader::check_in`]) is `body`.
    pub(crate) fn from_body(kind: FrameKind, body: &[u8]) -> Result<Frame, WireError> {
        Ok(match kind {
            FrameKind::Hello => Frame::Hello { spec: parse_spec(body)? },
            FrameKind::Data => {
                let len = body.len() - DATA_FIELDS_LEN;
                let ttn = be_u32(body, 16);
                let header = DataHeader {
                    seq: be_u64(body, 0),
                    send_time: Time::from_micros(be_u64(body, 8)),
                    time_to_next: (ttn != BACKLOGGED).then(|| Duration::from_micros(u64::from(ttn))),
                    len: len as u32,
                };
                Frame::Data { header, payload: body[DATA_FIELDS_LEN..].to_vec() }
            }
            FrameKind::Ack => Frame::Ack(Ack {
                seq: be_u64(body, 0),
                receive_time: Time::from_micros(be_u64(body, 8)),
                delivered: be_u64(body, 16),
            }),
            FrameKind::Report => Frame::Report(parse_report(body)?),
            FrameKind::Close => Frame::Close { sent: be_u64(body, 0) },
        })
    }

    /// Appends the frame's bytes (framed mode's, [`Envelope::Stream`]) to `out`. Refuses
    /// (with the error the receiving side would give) a frame outside the limits, so that
    /// nothing invalid is ever sent.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        self.encode_in(Envelope::Stream, out)
    }

    /// [`encode`](Self::encode) in `envelope`.
    pub fn encode_in(&self, envelope: Envelope, out: &mut Vec<u8>) -> Result<(), WireError> {
        let put_header = |out: &mut Vec<u8>, kind, len| envelope.put_header(out, kind, len);
        match self {
            Frame::Hello { spec } => {
                parse_spec(spec.as_bytes())?;
                put_header(out, FrameKind::Hello, spec.len());
                out.extend_from_slice(spec.as_bytes());
            }
            Frame::Data { header, payload } => {
                if header.len as usize != payload.len() {
                    return Err(WireError::BadField {
                        kind: FrameKind::Data,
                        what: "length differs from payload",
                    });
                }
                encode_data_header(envelope, header, out)?;
                out.extend_from_slice(payload);
            }
            Frame::Ack(a) => {
                put_header(out, FrameKind::Ack, ACK_BODY_LEN);
                out.extend_from_slice(&a.seq.to_be_bytes());
                out.extend_from_slice(&a.receive_time.as_micros().to_be_bytes());
                out.extend_from_slice(&a.delivered.to_be_bytes());
            }
            Frame::Close { sent } => {
                put_header(out, FrameKind::Close, 8);
                out.extend_from_slice(&sent.to_be_bytes());
            }
            Frame::Report(f) => {
                check_report(f)?;
                put_header(out, FrameKind::Report, REPORT_FIELDS_LEN + 4 * f.counts.len());
                out.extend_from_slice(&f.received_or_lost_bytes.to_be_bytes());
                out.extend_from_slice(&f.receiver_time.as_micros().to_be_bytes());
                out.extend_from_slice(&(f.tick.as_micros() as u32).to_be_bytes());
                out.extend_from_slice(&f.packet_bytes.to_be_bytes());
                out.extend_from_slice(&(f.counts.len() as u16).to_be_bytes());
                for c in &f.counts {
                    out.extend_from_slice(&c.to_be_bytes());
                }
            }
        }
        Ok(())
    }
}

/// Appends the header and fixed fields of a data frame whose `header.len` payload bytes the
/// caller writes right after (so that the engine sends payload straight from its queue).
/// A time to next of [`BACKLOGGED`] µs or more is sent as the largest finite value.
pub fn encode_data_header(
    envelope: Envelope,
    header: &DataHeader,
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
    if header.len == 0 || header.len > MAX_PAYLOAD {
        return Err(WireError::BadField { kind: FrameKind::Data, what: "payload length not in 1..=1 MiB" });
    }
    envelope.put_header(out, FrameKind::Data, DATA_FIELDS_LEN + header.len as usize);
    out.extend_from_slice(&header.seq.to_be_bytes());
    out.extend_from_slice(&header.send_time.as_micros().to_be_bytes());
    let ttn = header
        .time_to_next
        .map_or(BACKLOGGED, |d| u32::try_from(d.as_micros()).unwrap_or(BACKLOGGED - 1).min(BACKLOGGED - 1));
    out.extend_from_slice(&ttn.to_be_bytes());
    Ok(())
}

fn parse_spec(body: &[u8]) -> Result<String, WireError> {
    let bad = |what| WireError::BadField { kind: FrameKind::Hello, what };
    if body.is_empty() || body.len() > MAX_SPEC {
        return Err(bad("specification not 1 to 256 bytes"));
    }
    if !body.iter().all(|b| b.is_ascii_graphic()) {
        return Err(bad("specification not printable ASCII"));
    }
    String::from_utf8(body.to_vec()).map_err(|_| bad("specification not printable ASCII"))
}

fn parse_report(body: &[u8]) -> Result<Forecast, WireError> {
    let n = usize::from(u16::from_be_bytes([body[24], body[25]]));
    if REPORT_FIELDS_LEN + 4 * n != body.len() {
        return Err(WireError::BadField {
            kind: FrameKind::Report,
            what: "count of counts disagrees with length",
        });
    }
    let counts = (0..n).map(|i| be_u32(body, REPORT_FIELDS_LEN + 4 * i)).collect();
    let f = Forecast {
        received_or_lost_bytes: be_u64(body, 0),
        receiver_time: Time::from_micros(be_u64(body, 8)),
        tick: Duration::from_micros(u64::from(be_u32(body, 16))),
        packet_bytes: be_u32(body, 20),
        counts,
    };
    check_report(&f)?;
    Ok(f)
}

fn check_report(f: &Forecast) -> Result<(), WireError> {
    let bad = |what| Err(WireError::BadField { kind: FrameKind::Report, what });
    let tick = f.tick.as_micros();
    if tick == 0 || tick > u128::from(MAX_TICK_US) || tick != f.tick.as_nanos() / 1000 {
        return bad("tick not a whole number of µs in 1 µs..=1 s");
    }
    if f.packet_bytes == 0 || f.packet_bytes > MAX_PACKET_BYTES {
        return bad("packet size not in 1..=65535");
    }
    if f.counts.is_empty() || f.counts.len() > MAX_COUNTS {
        return bad("not 1 to 64 counts");
    }
    if f.counts.windows(2).any(|w| w[1] < w[0]) {
        return bad("cumulative counts decrease");
    }
    Ok(())
}
