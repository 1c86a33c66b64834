//! [`AlccListener`]: accepts TCP connections and makes each an [`AlccStream`].
//!
//! The listening socket carries the congestion control the accepted flows start under
//! ([`crate::underlay::initial`]): the options' kernel underlay, or `reno` under the BPF
//! one, never the host's default (a socket accepted under `bbr` keeps the kernel's pacing
//! after alcc switches it to its underlay).

use std::io;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};

use crate::error::Result;
use crate::options::Options;
use crate::stream::AlccStream;
use crate::underlay;

/// A listening socket whose accepted connections run under alcc.
#[derive(Debug)]
pub struct AlccListener {
    inner: TcpListener,
    options: Options,
}

impl AlccListener {
    /// Binds to `addr` (port 0 picks a free port); accepted flows use `options`. The
    /// socket's congestion control is set for `options.underlay` before it listens; one the
    /// kernel refuses is this call's error.
    pub fn bind(addr: impl ToSocketAddrs, options: Options) -> Result<AlccListener> {
        let inner = underlay::bind_listener(addr, &options.underlay)?;
        Ok(AlccListener { inner, options })
    }

    /// Wraps an existing listener, and sets its congestion control for `options.underlay`
    /// as [`AlccListener::bind`] does. Connections that completed their handshake before
    /// this call keep the congestion control they started under (the host's default, `bbr`
    /// on many hosts, whose kernel pacing then stays on): set it before listen(2) for those.
    pub fn from_listener(inner: TcpListener, options: Options) -> Result<AlccListener> {
        underlay::set_initial_congestion(inner.as_raw_fd(), &options.underlay)?;
        Ok(AlccListener { inner, options })
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// The options accepted flows get; change them for later accepts (a new underlay
    /// applies to the listening socket at the next accept's attach only: create a new
    /// listener to start later connections under it).
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
