//! The wire format of framed mode: what the two ends of a framed connection say to each other.
//!
//! Every frame starts with the same 8-byte header (magic, version, type, body length); the
//! body depends on the type. The sender (server) sends one `Hello` naming its controller,
//! then `Data` frames, each carrying one chunk of application bytes; the receiver (client)
//! answers every data frame with an `Ack` and, for an algorithm that keeps its model at the
//! receiver (Sprout), sends `Report` frames. docs/wire-format.md is the specification.
//!
//! Two layers, in the smoltcp manner: [`frame`] turns bytes into a validated [`Frame`] (or a
//! [`WireError`]) and a frame into bytes, checking everything a single frame can say about
//! itself; [`decoder`] cuts a byte stream that arrives in arbitrary pieces into frames and
//! checks what only the sequence can tell (a `Hello` first, consecutive data sequence numbers,
//! monotonic acknowledgements). The engine acts only on what the decoder returns.

pub mod decoder;
pub mod frame;
pub mod udp;

pub use decoder::{Decoder, Direction};
pub use frame::{Ack, DataHeader, Envelope, Frame, FrameKind};

use thiserror::Error;

/// The first two bytes of every frame.
pub const MAGIC: [u8; 2] = [0xA1, 0xCC];

/// The version this code speaks; a frame of any other version is refused.
pub const VERSION: u8 = 1;

/// Bytes of the common header: magic (2), version (1), type (1), body length (4).
pub const HEADER_LEN: usize = 8;

/// Bytes of a data frame's fixed fields after the common header: sequence (8), send time (8),
/// time to next (4).
pub const DATA_FIELDS_LEN: usize = 20;

/// Bytes of an ACK frame's body: sequence (8), receive time (8), delivered bytes (8).
pub const ACK_BODY_LEN: usize = 24;

/// Bytes of a report frame's fixed fields: received-or-lost bytes (8), receiver time (8),
/// tick (4), packet size (4), count of counts (2).
pub const REPORT_FIELDS_LEN: usize = 26;

/// Most application bytes in one data frame (1 MiB; the engine's chunks are at most
/// `Options::max_chunk`, 256 KiB by default).
pub const MAX_PAYLOAD: u32 = 1 << 20;

/// Most bytes in a `Hello`'s controller specification.
pub const MAX_SPEC: usize = 256;

/// Most forecast counts in a report (Sprout sends 8).
pub const MAX_COUNTS: usize = 64;

/// Longest forecast tick a report may announce (Sprout's is 20 ms).
pub const MAX_TICK_US: u32 = 1_000_000;

/// Largest packet size a report may count in.
pub const MAX_PACKET_BYTES: u32 = 65_535;

/// The wire value of a data frame's time to next that means "backlogged, will keep sending".
pub const BACKLOGGED: u32 = u32::MAX;

/// Largest body any frame may announce; longer announcements are refused before buffering.
pub const MAX_BODY: u32 = DATA_FIELDS_LEN as u32 + MAX_PAYLOAD;

/// Why bytes from the peer were refused. Any of these closes the connection that sent them.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum WireError {
    /// The first two bytes of a frame are not [`MAGIC`].
    #[error("bad magic {0:02x?}: not an alcc framed-mode peer")]
    BadMagic([u8; 2]),
    /// A version this code does not speak.
    #[error("unsupported wire version {0} (this side speaks {VERSION})")]
    UnsupportedVersion(u8),
    /// A frame type this version does not define.
    #[error("unknown frame type {0}")]
    UnknownType(u8),
    /// The body length is larger than any frame may be.
    #[error("frame body of {len} bytes exceeds the limit of {max}")]
    Oversized {
        /// The announced body length.
        len: u32,
        /// The limit for this frame type.
        max: u32,
    },
    /// The body length does not fit the frame type.
    #[error("{kind:?} frame with a body of {len} bytes (expected {expected})")]
    BadLength {
        /// The frame type.
        kind: FrameKind,
        /// The announced body length.
        len: u32,
        /// What the type requires.
        expected: &'static str,
    },
    /// A field holds a value outside its limits.
    #[error("{kind:?} frame: {what}")]
    BadField {
        /// The frame type.
        kind: FrameKind,
        /// Which field and why.
        what: &'static str,
    },
    /// A frame type that may not travel in this direction or at this point of the stream.
    #[error("unexpected {kind:?} frame: {why}")]
    Unexpected {
        /// The frame type.
        kind: FrameKind,
        /// Why it is refused.
        why: &'static str,
    },
    /// A sequence number or counter went backwards or skipped.
    #[error("{what}: got {got} after {prev}")]
    OutOfOrder {
        /// Which field.
        what: &'static str,
        /// The previous value.
        prev: u64,
        /// The value received.
        got: u64,
    },
    /// The stream ended inside a frame.
    #[error("stream ended inside a frame ({0} bytes of it received)")]
    Truncated(usize),
}

#[cfg(test)]
mod tests;
