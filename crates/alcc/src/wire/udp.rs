//! UDP mode's use of the frames: one frame per datagram, checked on its own.
//!
//! A datagram must hold exactly one valid frame (no trailing bytes). There are no stream
//! rules beyond what each side checks against its own state: datagrams may be lost,
//! duplicated or reordered. Client to server: `Hello` (the request to start, repeated until
//! data arrives), `Ack`, `Report`. Server to client: `Hello` (its controller), `Data`, `Close`.

use super::frame::{Frame, FrameKind};
use super::WireError;

/// Largest payload of a data datagram: a 1448-byte segment's worth minus the 28-byte frame
/// header, so that the datagram with its IP and UDP headers fits a 1500-byte MTU.
pub const UDP_PAYLOAD: u32 = 1420;

/// The frame in one datagram.
pub fn parse_datagram(datagram: &[u8]) -> Result<Frame, WireError> {
    match Frame::parse(datagram)? {
        Some((frame, used)) if used == datagram.len() => Ok(frame),
        Some((frame, _)) => {
            Err(WireError::BadField { kind: frame.kind(), what: "bytes after the frame in a datagram" })
        }
        None => Err(WireError::Truncated(datagram.len())),
    }
}

/// Whether the server may receive `kind` in UDP mode.
pub fn to_sender(kind: FrameKind) -> bool {
    matches!(kind, FrameKind::Hello | FrameKind::Ack | FrameKind::Report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_whole_frame_per_datagram() {
        let mut d = Vec::new();
        Frame::Close { sent: 42 }.encode(&mut d).unwrap();
        assert_eq!(parse_datagram(&d), Ok(Frame::Close { sent: 42 }));
        assert_eq!(parse_datagram(&d[..d.len() - 1]), Err(WireError::Truncated(d.len() - 1)));
        d.push(0);
        assert!(matches!(parse_datagram(&d), Err(WireError::BadField { kind: FrameKind::Close, .. })));
        assert!(to_sender(FrameKind::Ack) && !to_sender(FrameKind::Data) && !to_sender(FrameKind::Close));
    }
}
