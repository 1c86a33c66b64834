//! Framed mode's write path: every chunk leaves as a data frame (docs/wire-format.md), after
//! one `Hello` naming the controller; [`FramedFeedback`] reads the peer's ACK and report
//! frames from the same socket.
//!
//! A frame must reach the kernel whole and in order even when the socket takes only part of
//! it, so frames are assembled in a [`FrameWriter`] and written from its buffer; the next
//! chunk is framed only once the previous frame is entirely in the kernel.

use std::io;
use std::os::fd::RawFd;

use alcc_cc::{SenderHint, Time};

use crate::feedback::framed::FramedFeedback;
use crate::sys;
use crate::transport::{OutChunk, Payload};
use crate::wire::frame::{encode_data_header, Envelope};
use crate::wire::{DataHeader, Frame, WireError};

/// Framed mode: frames on the TCP connection.
#[derive(Debug)]
pub(crate) struct FramedTransport {
    writer: FrameWriter,
    /// The peer's ACK and report frames.
    pub feedback: FramedFeedback,
}

impl FramedTransport {
    /// A transport whose first frame announces `spec`.
    pub fn new(spec: &str) -> io::Result<FramedTransport> {
        let writer = FrameWriter::new(spec).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        Ok(FramedTransport { writer, feedback: FramedFeedback::new() })
    }

    /// Writes the frame in progress; `Ok(false)` if the socket is full.
    pub fn flush(&mut self, fd: RawFd) -> io::Result<bool> {
        self.writer.flush(fd)
    }

    /// Whether every frame is wholly in the kernel.
    pub fn is_flushed(&self) -> bool {
        self.writer.is_empty()
    }

    /// Frames `chunk`; it is written by the next [`flush`](Self::flush).
    pub fn send(&mut self, chunk: &OutChunk<'_>) -> io::Result<Option<usize>> {
        self.writer.push_chunk(chunk.seq, chunk.now, chunk.hint, chunk.payload)?;
        Ok(Some(chunk.len()))
    }
}

/// Frames not yet (wholly) written into the kernel.
#[derive(Debug)]
pub(crate) struct FrameWriter {
    out: Vec<u8>,
    written: usize,
}

impl FrameWriter {
    /// A writer whose first frame announces `spec`.
    pub fn new(spec: &str) -> Result<FrameWriter, WireError> {
        let mut out = Vec::new();
        Frame::Hello { spec: spec.trim().to_string() }.encode(&mut out)?;
        Ok(FrameWriter { out, written: 0 })
    }

    /// Whether everything framed so far is in the kernel.
    pub fn is_empty(&self) -> bool {
        self.written == self.out.len()
    }

    /// Frames one chunk of `payload` (a file's part is read into the frame).
    pub fn push_chunk(
        &mut self,
        seq: u64,
        now: Time,
        hint: SenderHint,
        payload: Payload<'_>,
    ) -> io::Result<()> {
        if self.is_empty() {
            self.out.clear();
            self.written = 0;
        }
        let len = payload.len();
        let start = self.out.len();
        let header = DataHeader {
            seq,
            send_time: now,
            time_to_next: hint.time_to_next,
            len: u32::try_from(len).unwrap_or(u32::MAX),
        };
        encode_data_header(Envelope::Stream, &header, &mut self.out)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        payload.append_to(&mut self.out).inspect_err(|_| self.out.truncate(start))
    }

    /// Writes what the kernel takes; `Ok(true)` once everything is written, `Ok(false)` if
    /// the socket is full.
    pub fn flush(&mut self, fd: RawFd) -> io::Result<bool> {
        while !self.is_empty() {
            match sys::send_parts(fd, &[&self.out[self.written..]], false) {
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}
