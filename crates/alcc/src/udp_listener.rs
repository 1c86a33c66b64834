//! [`AlccUdpListener`]: a UDP-mode server's port that keeps listening while it serves. Each
//! client that asks to start gets a socket of its own on the same port, connected to it; the
//! listening socket stays unconnected, so the start requests of clients that arrive
//! meanwhile wait in its queue (as TCP's listen backlog holds connections) instead of being
//! answered with ICMP port unreachable, which a client reads as "connection refused".
//!
//! A flow is a client's address and the connection id in its request (docs/wire-format.md,
//! UDP mode): copies of a started flow's request are dropped, while a new client that got an
//! earlier client's port brings a new id and is accepted at once. (While the earlier flow's
//! socket is still open, the kernel hands the new client's requests to that socket, connected
//! to the same address; the flow ends there once its own client has been silent for
//! [`STALE_AFTER`](crate::feedback::udp::STALE_AFTER), and the next request reaches this
//! listener.)

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::options::Options;
use crate::stream::{wait_hello, AlccStream};
use crate::sys;
use crate::wire::udp::ConnectionId;

/// How long a started flow's further start requests are ignored. A client repeats its
/// request every 200 ms until the first datagram arrives, so copies of it wait in the
/// listening queue; they must not start a second flow to the same client. Those queued at
/// the accept are drained then; this window covers a copy the kernel was still delivering
/// or the network delayed. A new client on the same address brings another connection id
/// and is not held back by it.
pub const REPEATED_REQUEST_WINDOW: Duration = Duration::from_secs(10);

/// A UDP port whose clients each get their own flow (one socket per client, SO_REUSEADDR).
#[derive(Debug)]
pub struct AlccUdpListener {
    socket: UdpSocket,
    local: SocketAddr,
    /// Flows started within [`REPEATED_REQUEST_WINDOW`]: client address and connection id.
    started: HashMap<(SocketAddr, ConnectionId), Instant>,
    /// Flows whose start requests were read while draining, in arrival order.
    waiting: VecDeque<(SocketAddr, ConnectionId)>,
}

impl AlccUdpListener {
    /// Binds to `addr` (port 0 picks a free port).
    pub fn bind(addr: impl ToSocketAddrs) -> Result<AlccUdpListener> {
        let mut last = None;
        for addr in addr.to_socket_addrs()? {
            match sys::udp_socket_shared(&addr) {
                Ok(fd) => {
                    let socket = UdpSocket::from(fd);
                    let local = socket.local_addr()?;
                    return Ok(AlccUdpListener {
                        socket,
                        local,
                        started: HashMap::new(),
                        waiting: VecDeque::new(),
                    });
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address to bind")).into())
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Bounds how long [`accept`](Self::accept) waits (`None`: forever); then `WouldBlock`
    /// or `TimedOut`.
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.socket.set_read_timeout(timeout)
    }

    /// Waits for a client's start request and sends to that client under `options`, on a
    /// socket of its own. Copies of that client's request already queued are dropped, and
    /// its requests within [`REPEATED_REQUEST_WINDOW`] are ignored.
    pub fn accept(&mut self, options: &Options) -> Result<(AlccStream, SocketAddr)> {
        let now = Instant::now();
        self.started.retain(|_, at| now.duration_since(*at) < REPEATED_REQUEST_WINDOW);
        let started = &self.started;
        let flow = loop {
            match self.waiting.pop_front() {
                Some(f) if started.contains_key(&f) => continue,
                Some(f) => break f,
                None => break wait_hello(&self.socket, |p, id| !started.contains_key(&(p, id)))?,
            }
        };
        self.started.insert(flow, Instant::now());
        let (peer, id) = flow;
        let socket = UdpSocket::from(sys::udp_socket_shared(&self.local)?);
        socket.connect(peer)?;
        // From now on the client's datagrams reach its own socket: what it sent before and
        // still waits here is a copy of its request. Other flows' requests are kept.
        self.drain_requests(flow)?;
        Ok((AlccStream::start_udp(socket, id, options)?, peer))
    }

    /// Reads every datagram queued on the listening socket, keeping the start requests of
    /// flows other than `started` (once each) for the next accepts.
    fn drain_requests(&mut self, started: (SocketAddr, ConnectionId)) -> io::Result<()> {
        self.socket.set_nonblocking(true)?;
        let result = loop {
            match wait_hello(&self.socket, |_, _| true) {
                Ok(f) if f != started && !self.waiting.contains(&f) => self.waiting.push_back(f),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        self.socket.set_nonblocking(false)?;
        result
    }
}
