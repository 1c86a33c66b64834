//! The receiving side of kernel mode: a plain TCP client of any server, whose advertised
//! window a [`WindowControl`] governs (DRWA, the static cap, or the kernel's autotuning).
//!
//! Like the framed and UDP receivers it runs on the reading thread: the control samples
//! TCP_INFO after data was read, as the DRWA paper's kernel patch does when data is copied to
//! user space (section 4.1, Algorithm 3). An application that stops reading stops the
//! updates, and its window then closes by itself as the buffer fills.

use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use crate::receive_window::{WindowControl, WindowStats};
use crate::sys;

/// A connected plain TCP socket, read with its window control.
#[derive(Debug)]
pub struct KernelReceiver {
    fd: RawFd,
    control: WindowControl,
    delivered: u64,
}

impl KernelReceiver {
    /// The receiver of connected socket `fd`, with the control prepared before connect.
    pub fn new(fd: RawFd, control: WindowControl) -> KernelReceiver {
        KernelReceiver { fd, control, delivered: 0 }
    }

    /// Bytes read so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// What the window control has done.
    pub fn window_stats(&self) -> WindowStats {
        self.control.stats()
    }

    /// Reads what the server sent; `Ok(0)` at the end of the stream.
    pub fn read(
        &mut self,
        buf: &mut [u8],
        nonblocking: bool,
        timeout: Option<Duration>,
    ) -> io::Result<usize> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            match sys::recv_nonblocking(self.fd, buf) {
                Ok(n) => {
                    self.delivered += n as u64;
                    if n > 0 {
                        self.control.after_read(self.fd, sys::now())?;
                    }
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && !nonblocking => {
                    let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
                    if left.is_some_and(|l| l.is_zero()) || !sys::poll_one(self.fd, libc::POLLIN, left)? {
                        return Err(io::ErrorKind::TimedOut.into());
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes to the server (a request), waiting for room unless `nonblocking`.
    pub fn write(&mut self, buf: &[u8], nonblocking: bool) -> io::Result<usize> {
        loop {
            match sys::send_parts(self.fd, [buf], false) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && !nonblocking => {
                    sys::poll_one(self.fd, libc::POLLOUT, None)?;
                }
                other => return other,
            }
        }
    }
}
