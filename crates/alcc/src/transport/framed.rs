//! Framed mode's write path: every chunk leaves as a data frame (docs/wire-format.md), after
//! one `Hello` naming the controller; [`FramedFeedback`] reads the peer's ACK and report
//! frames from the same socket.
//!
//! A frame must reach the kernel whole and in order even when the socket takes only part of
//! it, so frames are assembled in a [`FrameWriter`] and written from its buffer; the next
//! chunk is framed only once the previous frame is entirely in the kernel. The buffer is
//! kept in blocks of at most 64 KiB ([`ByteBlocks`]), like the send queue: a 256 KiB chunk's
//! frame never needs one buffer above glibc's mmap threshold.

use std::io;
use std::os::fd::RawFd;

use alcc_cc::{SenderHint, Time};

use crate::feedback::framed::FramedFeedback;
use crate::flow::byte_blocks::ByteBlocks;
use crate::flow::send_queue::{FileSlice, READ_AHEAD};
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

    /// Frees the frame buffer's blocks kept for reuse.
    pub fn release_spares(&mut self) {
        self.writer.out.release_spares();
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
    /// Framed bytes not yet in the kernel.
    out: ByteBlocks,
    /// A frame header, or a file's bytes read (at most [`READ_AHEAD`]), on their way into `out`.
    scratch: Vec<u8>,
}

impl FrameWriter {
    /// A writer whose first frame announces `spec`.
    pub fn new(spec: &str) -> Result<FrameWriter, WireError> {
        let mut scratch = Vec::new();
        Frame::Hello { spec: spec.trim().to_string() }.encode(&mut scratch)?;
        let mut out = ByteBlocks::default();
        out.push(&scratch);
        Ok(FrameWriter { out, scratch })
    }

    /// Whether everything framed so far is in the kernel.
    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    /// Frames one chunk of `payload` (a file's part is read into the frame).
    pub fn push_chunk(
        &mut self,
        seq: u64,
        now: Time,
        hint: SenderHint,
        payload: Payload<'_>,
    ) -> io::Result<()> {
        let len = payload.len();
        let start = self.out.len();
        let header = DataHeader {
            seq,
            send_time: now,
            time_to_next: hint.time_to_next,
            len: u32::try_from(len).unwrap_or(u32::MAX),
        };
        self.scratch.clear();
        encode_data_header(Envelope::Stream, &header, &mut self.scratch)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        self.out.push(&self.scratch);
        self.push_payload(payload).inspect_err(|_| self.out.truncate(start))
    }

    /// Appends `payload`'s bytes to `out`; a file's are read [`READ_AHEAD`] at a time.
    fn push_payload(&mut self, payload: Payload<'_>) -> io::Result<()> {
        match payload {
            Payload::Bytes(bytes) => {
                for part in bytes.parts() {
                    self.out.push(part);
                }
            }
            Payload::File(f) => {
                let mut done = 0;
                while done < f.len {
                    let len = (f.len - done).min(READ_AHEAD);
                    let piece = FileSlice { fd: f.fd, offset: f.offset + done as u64, len };
                    self.scratch.clear();
                    Payload::File(piece).append_to(&mut self.scratch)?;
                    self.out.push(&self.scratch);
                    done += len;
                }
            }
        }
        Ok(())
    }

    /// Writes what the kernel takes; `Ok(true)` once everything is written, `Ok(false)` if
    /// the socket is full.
    pub fn flush(&mut self, fd: RawFd) -> io::Result<bool> {
        while !self.is_empty() {
            match sys::send_parts(fd, self.out.front(usize::MAX).parts(), false) {
                Ok(n) => self.out.consume(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}
