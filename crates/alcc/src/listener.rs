//! [`AlccListener`]: accepts TCP connections and makes each an [`AlccStream`].

use std::io;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};

use crate::error::Result;
use crate::options::Options;
use crate::stream::AlccStream;

/// A listening socket whose accepted connections run under alcc.
#[derive(Debug)]
pub struct AlccListener {
    inner: TcpListener,
    options: Options,
}

impl AlccListener {
    /// Binds to `addr` (port 0 picks a free port); accepted flows use `options`.
    pub fn bind(addr: impl ToSocketAddrs, options: Options) -> Result<AlccListener> {
        Ok(AlccListener { inner: TcpListener::bind(addr)?, options })
    }

    /// Wraps an existing listener.
    pub fn from_listener(inner: TcpListener, options: Options) -> AlccListener {
        AlccListener { inner, options }
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// The options accepted flows get; change them for later accepts.
    pub fn options_mut(&mut self) -> &mut Options {
        &mut self.options
    }

    /// Waits for a connection and returns it as an alcc stream.
    pub fn accept(&self) -> Result<(AlccStream, SocketAddr)> {
        let (tcp, peer) = self.inner.accept()?;
        Ok((AlccStream::from_tcp(tcp, &self.options)?, peer))
    }

    /// Makes `accept` return `WouldBlock` instead of waiting.
    pub fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        self.inner.set_nonblocking(nonblocking)
    }

    /// The listening socket.
    pub fn as_raw_fd(&self) -> RawFd {
        self.inner.as_raw_fd()
    }
}
