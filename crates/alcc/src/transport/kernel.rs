//! Kernel mode's write path: each chunk is one `sendmsg` straight from the send queue's
//! slices, with MSG_EOR under a controller so that the kernel timestamps its last byte
//! ([`KernelFeedback`] reads the stamps back).

use std::io;
use std::os::fd::RawFd;

use crate::feedback::kernel::KernelFeedback;
use crate::sys;
use crate::transport::OutChunk;

/// Kernel mode: the application's bytes and nothing else go into the TCP socket.
#[derive(Debug, Default)]
pub(crate) struct KernelTransport {
    /// ACK timestamps and TCP_INFO.
    pub feedback: KernelFeedback,
}

impl KernelTransport {
    /// A transport for a socket on which nothing was written yet.
    pub fn new() -> KernelTransport {
        KernelTransport { feedback: KernelFeedback::new() }
    }

    /// Writes `chunk` (the kernel may take part of it); `None` if the socket is full.
    pub fn send(&mut self, fd: RawFd, chunk: OutChunk<'_>) -> io::Result<Option<usize>> {
        loop {
            match sys::send_parts(fd, &chunk.parts, chunk.record) {
                Ok(n) => return Ok(Some(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}
