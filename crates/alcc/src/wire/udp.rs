//! UDP mode's use of the frames (wire version 2): one frame per datagram, checked on its own,
//! behind the flow's [`ConnectionId`].
//!
//! A datagram is the common header (version [`UDP_VERSION`]), the connection id the client
//! chose for the flow, then exactly one frame body (no trailing bytes). Every datagram of a
//! flow, in both directions, carries its id; a side acts only on datagrams with its own id
//! and drops the rest uncounted by its protocol checks ([`Received::Foreign`]): a client that
//! got the port of an earlier client whose flow still sends must not read that flow's bytes.
//! There are no stream rules beyond what each side checks against its own state: datagrams
//! may be lost, duplicated or reordered. Client to server: `Hello` (the request to start,
//! repeated until data arrives), `Ack`, `Report`, `Close` (its answer to the server's, with
//! the bytes it received). Server to client: `Hello` (its controller), `Data`, `Close`.

use std::io;

use super::frame::{Envelope, Frame, FrameKind, RawHeader};
use super::{WireError, HEADER_LEN, MAGIC};

/// The wire version of UDP-mode datagrams (framed mode's frames stay version 1). Version 1
/// datagrams had no connection id.
pub const UDP_VERSION: u8 = 2;

/// Bytes before a datagram's frame body: the common header and the connection id.
pub const DATAGRAM_HEADER_LEN: usize = HEADER_LEN + 8;

/// Largest payload of a data datagram: a 1448-byte segment's worth minus the 36-byte
/// datagram header and data fields, so that the datagram with its IP and UDP headers fits
/// a 1500-byte MTU.
pub const UDP_PAYLOAD: u32 = 1412;

/// A UDP-mode flow's identity on the wire: chosen at random by the client for each flow,
/// carried by every datagram of the flow in both directions. Never 0 for a real flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionId(pub u64);

impl ConnectionId {
    /// A fresh random id (never 0) from the kernel's random source.
    pub fn random() -> io::Result<ConnectionId> {
        loop {
            let id = crate::sys::random_u64()?;
            if id != 0 {
                return Ok(ConnectionId(id));
            }
        }
    }
}

/// What one datagram that reached a flow's socket is to that flow.
#[derive(Clone, Debug, PartialEq)]
pub enum Received {
    /// A valid frame of this flow (its connection id).
    Own(Frame),
    /// Another flow's start request (a `Hello` with another connection id) from this flow's
    /// peer address: that address (port) may now belong to another client.
    OtherStart(ConnectionId),
    /// Not this flow's: too short to hold a connection id, not alcc's magic, another wire
    /// version (a version-1 peer), or another connection id. Dropped and counted; never
    /// delivered, never fails the flow.
    Foreign,
}

/// The connection id of a datagram of version [`UDP_VERSION`], read from its header alone
/// (`None` for anything else: too short, not alcc's magic, another version).
pub fn connection_id(datagram: &[u8]) -> Option<ConnectionId> {
    let id = datagram.get(HEADER_LEN..DATAGRAM_HEADER_LEN)?;
    if datagram[..2] != MAGIC || datagram[2] != UDP_VERSION {
        return None;
    }
    let mut b = [0u8; 8];
    b.copy_from_slice(id);
    Some(ConnectionId(u64::from_be_bytes(b)))
}

/// The connection id and the frame of one datagram; refuses anything else, naming why.
pub fn parse_datagram(datagram: &[u8]) -> Result<(ConnectionId, Frame), WireError> {
    let Some(raw) = RawHeader::read(datagram) else {
        if datagram.len() >= 2 && datagram[..2] != MAGIC {
            return Err(WireError::BadMagic([datagram[0], datagram[1]]));
        }
        return Err(WireError::Truncated(datagram.len()));
    };
    let id = connection_id(datagram);
    let kind = raw.check_in(Envelope::Datagram(id.unwrap_or(ConnectionId(0))))?;
    let (Some(id), Some(body)) = (id, datagram.get(DATAGRAM_HEADER_LEN..)) else {
        return Err(WireError::Truncated(datagram.len()));
    };
    let len = raw.body_len as usize;
    if body.len() < len {
        return Err(WireError::Truncated(datagram.len()));
    }
    if body.len() > len {
        return Err(WireError::BadField { kind, what: "bytes after the frame in a datagram" });
    }
    Ok((id, Frame::from_body(kind, body)?))
}

/// What `datagram` is to the flow `own`: its frame, another flow's start request, or not its
/// own at all. An error only for a datagram with `own`'s id that breaks a rule (which fails
/// the flow: only its peer knows the id). Work per datagram is bounded: the header is read
/// before anything else, and a foreign datagram's body is never parsed.
pub fn receive(datagram: &[u8], own: ConnectionId) -> Result<Received, WireError> {
    match connection_id(datagram) {
        Some(id) if id == own => Ok(Received::Own(parse_datagram(datagram)?.1)),
        Some(id) if datagram[3] == FrameKind::Hello.code() => Ok(Received::OtherStart(id)),
        _ => Ok(Received::Foreign),
    }
}

/// Encodes `frame` as one datagram of flow `id` into `out` (cleared first).
pub fn encode_datagram(id: ConnectionId, frame: &Frame, out: &mut Vec<u8>) -> Result<(), WireError> {
    out.clear();
    frame.encode_in(Envelope::Datagram(id), out)
}

/// Whether `datagram` is a start request of wire version 1 (no connection id): a client of
/// an older alcc, which [`VERSION_NOTICE`] answers.
pub fn is_version1_request(datagram: &[u8]) -> bool {
    matches!(Frame::parse(datagram), Ok(Some((Frame::Hello { .. }, n))) if n == datagram.len())
}

/// The answer to a version-1 start request: a bare common header of version 2 (8 bytes, no
/// larger than any request). A version-1 client refuses it at its header and fails with
/// "unsupported wire version 2 (this side speaks 1)" instead of waiting in vain.
pub const VERSION_NOTICE: [u8; HEADER_LEN] = [MAGIC[0], MAGIC[1], UDP_VERSION, 5, 0, 0, 0, 8];

/// Whether the server may receive `kind` in UDP mode (a `Close` only as the client's answer
/// to the server's).
pub fn to_sender(kind: FrameKind) -> bool {
    matches!(kind, FrameKind::Hello | FrameKind::Ack | FrameKind::Report | FrameKind::Close)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: ConnectionId = ConnectionId(0x0123_4567_89ab_cdef);
    const B: ConnectionId = ConnectionId(42);

    fn datagram(id: ConnectionId, frame: &Frame) -> Vec<u8> {
        let mut d = Vec::new();
        encode_datagram(id, frame, &mut d).unwrap();
        d
    }

    #[test]
    fn one_whole_frame_per_datagram_behind_its_connection_id() {
        let mut d = datagram(A, &Frame::Close { sent: 42 });
        assert_eq!(d.len(), DATAGRAM_HEADER_LEN + 8);
        assert_eq!(&d[..4], &[0xA1, 0xCC, 2, 5]);
        assert_eq!(&d[8..16], &A.0.to_be_bytes());
        assert_eq!(parse_datagram(&d), Ok((A, Frame::Close { sent: 42 })));
        assert_eq!(parse_datagram(&d[..d.len() - 1]), Err(WireError::Truncated(d.len() - 1)));
        assert_eq!(parse_datagram(&d[..12]), Err(WireError::Truncated(12)));
        d.push(0);
        assert!(matches!(parse_datagram(&d), Err(WireError::BadField { kind: FrameKind::Close, .. })));
        assert!(to_sender(FrameKind::Ack) && to_sender(FrameKind::Close) && !to_sender(FrameKind::Data));
    }

    #[test]
    fn a_flow_takes_only_its_own_datagrams() {
        let close = datagram(A, &Frame::Close { sent: 7 });
        assert_eq!(receive(&close, A), Ok(Received::Own(Frame::Close { sent: 7 })));
        assert_eq!(receive(&close, B), Ok(Received::Foreign), "another flow's datagram");
        let hello = datagram(B, &Frame::Hello { spec: "udp".into() });
        assert_eq!(receive(&hello, A), Ok(Received::OtherStart(B)));
        // Truncated, garbage, another version: foreign, whatever follows.
        for bad in [&close[..5], &close[..15], b"definitely not a frame".as_slice(), &[]] {
            assert_eq!(receive(bad, A), Ok(Received::Foreign), "{bad:?}");
        }
        let mut v1 = Vec::new();
        Frame::Close { sent: 7 }.encode(&mut v1).unwrap();
        assert_eq!(receive(&v1, A), Ok(Received::Foreign), "a version-1 datagram");
        // Its own id but a broken body: an error (only its peer knows the id).
        assert!(receive(&close[..close.len() - 1], A).is_err());
        // ... and foreign to every other flow (found by the fuzz target, whose own check
        // had picked the datagram's id as "another" id when its body did not parse).
        assert_eq!(receive(&close[..close.len() - 1], B), Ok(Received::Foreign));
    }

    #[test]
    fn a_version1_client_is_told_the_version() {
        let mut v1 = Vec::new();
        Frame::Hello { spec: "udp".into() }.encode(&mut v1).unwrap();
        assert!(is_version1_request(&v1));
        assert!(!is_version1_request(&datagram(A, &Frame::Hello { spec: "udp".into() })));
        assert!(VERSION_NOTICE.len() <= v1.len());
        // What a version-1 side makes of the notice.
        assert_eq!(Frame::parse(&VERSION_NOTICE), Err(WireError::UnsupportedVersion(2)));
    }
}
