//! The sending side of framed mode: every chunk leaves as a data frame (docs/wire-format.md),
//! after one `Hello` naming the controller.
//!
//! A frame must reach the kernel whole and in order even when the socket takes only part of
//! it, so frames are assembled here and written from this buffer; the next chunk is framed
//! only once the previous frame is entirely in the kernel.

use std::io;
use std::os::fd::RawFd;

use alcc_cc::{SenderHint, Time};

use crate::sys;
use crate::wire::frame::encode_data_header;
use crate::wire::{DataHeader, Frame, WireError};

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

    /// Frames one chunk, its payload the concatenation of `parts`.
    pub fn push_chunk(&mut self, seq: u64, now: Time, hint: SenderHint, parts: [&[u8]; 2]) -> io::Result<()> {
        if self.is_empty() {
            self.out.clear();
            self.written = 0;
        }
        let len = parts[0].len() + parts[1].len();
        let header = DataHeader {
            seq,
            send_time: now,
            time_to_next: hint.time_to_next,
            len: u32::try_from(len).unwrap_or(u32::MAX),
        };
        encode_data_header(&header, &mut self.out)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        self.out.extend_from_slice(parts[0]);
        self.out.extend_from_slice(parts[1]);
        Ok(())
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
