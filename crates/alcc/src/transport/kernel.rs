//! Kernel mode's write path: each chunk of written bytes is one `sendmsg` straight from the
//! send queue's slices, with MSG_EOR under a controller so that the kernel timestamps its last
//! byte ([`KernelFeedback`] reads the stamps back); each chunk of a file range is one
//! sendfile(2) on a socket the engine owns, so those bytes never pass through user space.
//!
//! sendfile takes no MSG_EOR: the kernel may append the next chunk to the segment that holds
//! a file chunk's last byte. The ACK timestamp still carries that byte's id (OPT_ID) and
//! comes when that byte is acknowledged (the kernel checks the id against the acknowledged
//! sequence, also for a segment acknowledged in part), so each chunk keeps its own sample.
//! sendfile may also timestamp a chunk in several places (it hands the socket a few pages at
//! a time); the stamps inside a chunk acknowledge it in part, as TCP_INFO would.

use std::io;
use std::os::fd::RawFd;

use crate::feedback::kernel::{ClosedSocket, KernelFeedback};
use crate::flow::send_queue::shrank;
use crate::sys;
use crate::transport::{OutChunk, Payload};

/// The shortest file chunk sent by sendfile; shorter ones are sent from bytes read ahead
/// (one pread per [`READ_AHEAD`](crate::flow::send_queue::READ_AHEAD)). sendfile's fixed cost
/// per call outweighs a copy of a few segments: in a namespace with a 1500-byte MTU, 1 448-byte
/// chunks cost the sender 1.5x the CPU by sendfile that they cost copied, 2 896- and 4 344-byte
/// chunks about the same, 7 240-byte chunks 0.55-0.85x (one flow, 100-200 MB, loopback).
pub(crate) const MIN_SENDFILE: usize = 4096;

/// How kernel mode sends a file range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileSends {
    /// By sendfile(2): the engine owns the socket and set O_NONBLOCK on it, so sendfile
    /// never blocks the driver.
    Sendfile,
    /// As bytes read ahead from the file (pread(2)) and `sendmsg`: the socket's open file is
    /// shared with the application ([`AlccStream::from_shared_fd`](crate::AlccStream::from_shared_fd)), whose
    /// O_NONBLOCK the engine must not change, and sendfile has no MSG_DONTWAIT.
    Read,
}

impl FileSends {
    /// Who reads a closed connection's error: the engine when it owns the socket, the
    /// application when it shares it (the reason for [`FileSends::Read`]).
    fn closed_socket(self) -> ClosedSocket {
        match self {
            FileSends::Sendfile => ClosedSocket::TakeError,
            FileSends::Read => ClosedSocket::LeaveError,
        }
    }

    /// Sends `len` bytes of `file` at `offset` into socket `fd`; returns the bytes taken.
    fn send(self, fd: RawFd, scratch: &mut Vec<u8>, chunk: &OutChunk<'_>) -> io::Result<usize> {
        match (self, chunk.payload) {
            (_, Payload::Bytes(parts)) => sys::send_parts(fd, &parts, chunk.record),
            (FileSends::Sendfile, Payload::File(f)) => match sys::sendfile(fd, f.fd, f.offset, f.len)? {
                0 if f.len > 0 => Err(shrank()),
                n => Ok(n),
            },
            (FileSends::Read, payload @ Payload::File(_)) => {
                scratch.clear();
                payload.append_to(scratch)?;
                sys::send_parts(fd, &[scratch], chunk.record)
            }
        }
    }
}

/// Kernel mode: the application's bytes and nothing else go into the TCP socket.
#[derive(Debug)]
pub(crate) struct KernelTransport {
    /// ACK timestamps and TCP_INFO.
    pub feedback: KernelFeedback,
    files: FileSends,
    /// A file chunk read for [`FileSends::Read`].
    scratch: Vec<u8>,
}

impl KernelTransport {
    /// A transport for a socket on which nothing was written yet.
    pub fn new(files: FileSends) -> KernelTransport {
        KernelTransport { feedback: KernelFeedback::new(files.closed_socket()), files, scratch: Vec::new() }
    }

    /// Whether a file chunk of `len` bytes goes by sendfile (see [`MIN_SENDFILE`]).
    pub fn takes_file_slices(&self, len: usize) -> bool {
        self.files == FileSends::Sendfile && len >= MIN_SENDFILE
    }

    /// Writes `chunk` (the kernel may take part of it); `None` if the socket is full.
    pub fn send(&mut self, fd: RawFd, chunk: OutChunk<'_>) -> io::Result<Option<usize>> {
        loop {
            match self.files.send(fd, &mut self.scratch, &chunk) {
                Ok(n) => return Ok(Some(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}
