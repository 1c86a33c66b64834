//! The `tokio` feature: an alcc stream and listener for tokio programs.
//!
//! [`AsyncAlccStream`] implements tokio's [`AsyncWrite`] and [`AsyncRead`] over an
//! [`AlccStream`]. A write that finds the flow's queue full does not block a runtime thread:
//! the task waits on the flow's readiness descriptor ([`AlccStream::writable_fd`], an eventfd
//! that polls writable exactly while the queue has room) registered with tokio's reactor
//! through [`AsyncFd`], so it wakes when the controller has let bytes into the kernel. A read
//! (kernel mode: the peer's bytes) waits on the socket itself.
//!
//! `poll_flush` returns at once, as tokio's `TcpStream` does: bytes in alcc's queue are like
//! bytes in a socket's send buffer, on their way. `poll_shutdown` queues the FIN behind the
//! queued bytes ([`AlccStream::finish`]); the engine's exit hook hands what is still queued to
//! the kernel when the process exits ([`crate::flush_at_exit`]).
//!
//! [`AsyncAlccListener`] accepts with tokio's `TcpListener` and governs each connection under
//! the listener's [`Options`]; its socket's congestion control is set for the options'
//! underlay before it listens, as [`crate::AlccListener`]'s is.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::{lookup_host, TcpListener, ToSocketAddrs};

use crate::sys::{self, Watched};
use crate::underlay;
use crate::{AlccStream, Options};

/// An [`AlccStream`] for tokio: [`AsyncWrite`] through the flow's queue, [`AsyncRead`] from
/// the socket (kernel mode).
pub struct AsyncAlccStream {
    // Declared first: deregistered from the reactor before the stream closes the descriptors.
    writable: AsyncFd<Watched>,
    readable: AsyncFd<Watched>,
    stream: AlccStream,
}

impl AsyncAlccStream {
    /// Wraps `stream`; must be called inside a tokio runtime (it registers the flow's
    /// readiness descriptor and the socket with the runtime's reactor).
    pub fn new(stream: AlccStream) -> io::Result<AsyncAlccStream> {
        let writable = sys::watch(stream.writable_fd()?, Interest::WRITABLE)?;
        let readable = sys::watch(stream.as_raw_fd(), Interest::READABLE)?;
        Ok(AsyncAlccStream { writable, readable, stream })
    }

    /// The stream underneath (its figures: [`AlccStream::info`]).
    pub fn get_ref(&self) -> &AlccStream {
        &self.stream
    }
}

impl AsyncWrite for AsyncAlccStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        loop {
            let mut guard = ready!(this.writable.poll_write_ready(cx))?;
            match this.stream.write_with(buf, true) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => guard.clear_ready(),
                result => return Poll::Ready(result),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.stream.finish();
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for AsyncAlccStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            let mut guard = ready!(this.readable.poll_read_ready(cx))?;
            match this.stream.read_with(buf.initialize_unfilled(), true) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => guard.clear_ready(),
                Err(e) => return Poll::Ready(Err(e)),
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
            }
        }
    }
}

/// Accepts TCP connections with tokio and governs each under the same [`Options`].
pub struct AsyncAlccListener {
    listener: TcpListener,
    options: Options,
}

impl AsyncAlccListener {
    /// Listens on `addr` (the first of its addresses that binds); every accepted connection
    /// runs under `options`, and starts under the congestion control set for its underlay
    /// on the listening socket before listen(2) ([`crate::underlay::bind_listener`]). One
    /// the kernel refuses is this call's error.
    pub async fn bind(addr: impl ToSocketAddrs, options: Options) -> io::Result<AsyncAlccListener> {
        let addrs: Vec<SocketAddr> = lookup_host(addr).await?.collect();
        let listener = underlay::bind_listener(&addrs[..], &options.underlay)?;
        listener.set_nonblocking(true)?;
        Ok(AsyncAlccListener { listener: TcpListener::from_std(listener)?, options })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The next connection, governed; an error of the engine (an unknown controller, an
    /// underlay the kernel refuses) is returned as `io::Error`, naming the cause.
    pub async fn accept(&self) -> io::Result<(AsyncAlccStream, SocketAddr)> {
        let (tcp, peer) = self.listener.accept().await?;
        let tcp = tcp.into_std()?;
        let stream = AlccStream::from_tcp(tcp, &self.options).map_err(io::Error::from)?;
        Ok((AsyncAlccStream::new(stream)?, peer))
    }
}
