//! The congestion control of a listening socket, so that the connections it accepts start
//! under one that leaves the kernel's pacing off.
//!
//! An accepted socket starts under its listener's congestion control, or under the host's
//! default (net.ipv4.tcp_congestion_control) when nobody chose one for the listener
//! (net/ipv4/tcp_minisocks.c, tcp_ca_openreq_child); the kernel initialises it when the
//! handshake completes, before accept(2) returns. BBR's init turns the kernel's internal
//! pacing on (net/ipv4/tcp_bbr.c, bbr_init: `sk_pacing_status` from NONE to NEEDED), and
//! switching the socket to another congestion control later (TCP_CONGESTION,
//! tcp_reinit_congestion_control in net/ipv4/tcp_cong.c) never turns it off: a flow that
//! alcc moves from bbr to its underlay stays paced by the kernel at 2x (slow start) or
//! 1.2x cwnd/srtt (tcp_update_pacing_rate). So the listener carries the underlay itself when
//! it is a kernel congestion control (`bbr` only when asked for), and `reno` for the BPF
//! underlay: each flow's attach writes the BPF target into the socket's storage and then
//! switches to the struct_ops, whose init reads that target; socket storage is not copied
//! to accepted sockets, and the struct_ops is registered per process, so on the listener it
//! would only run before any target exists.

use std::io;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};

use socket2::{Domain, Protocol, Socket, Type};

use super::Underlay;
use crate::error::Error;
use crate::sys;

/// The backlog of listeners made here: the one `std::net::TcpListener::bind` uses on Linux.
const BACKLOG: i32 = 128;

impl Underlay {
    /// The kernel congestion control a listening socket gets, so that the connections it
    /// accepts start under it: a kernel underlay itself, `reno` for the BPF underlay (whose
    /// per-flow attach chooses the struct_ops after writing the target).
    pub fn listening_congestion(&self) -> &str {
        match self {
            Underlay::Kernel(name) => name,
            Underlay::Alcc(_) => "reno",
        }
    }

    /// Sets [`Underlay::listening_congestion`] on the socket `fd`, before listen(2) or on a
    /// listening socket (connections already in its backlog keep the congestion control
    /// they started under).
    pub fn prepare_listener(&self, fd: RawFd) -> Result<(), Error> {
        let name = self.listening_congestion();
        sys::set_congestion(fd, name).map_err(|source| Error::underlay(name, source))
    }
}

/// Sets the congestion control for accepted flows under `underlay` (a name as in
/// [`Options::underlay`](crate::Options::underlay)) on the listening socket `fd`.
pub fn prepare_listener(fd: RawFd, underlay: &str) -> Result<(), Error> {
    underlay.parse::<Underlay>()?.prepare_listener(fd)
}

/// A TCP listener on the first of `addr`'s addresses that binds (as
/// `std::net::TcpListener::bind`: SO_REUSEADDR, backlog 128) whose congestion control is
/// set for `underlay` before listen(2), so that no connection is ever accepted under the
/// host's default. A congestion control the kernel refuses is the error (naming what is
/// allowed), not a fallback.
pub fn bind_listener(addr: impl ToSocketAddrs, underlay: &str) -> Result<TcpListener, Error> {
    let underlay: Underlay = underlay.parse()?;
    let mut last = None;
    for addr in addr.to_socket_addrs()? {
        match listen_on(addr, &underlay) {
            Ok(listener) => return Ok(listener),
            Err(Error::Io(e)) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address to listen on")).into())
}

fn listen_on(addr: SocketAddr, underlay: &Underlay) -> Result<TcpListener, Error> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    underlay.prepare_listener(socket.as_raw_fd())?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    Ok(socket.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listeners_take_the_kernel_underlay_or_reno() {
        assert_eq!(Underlay::Kernel("cubic".into()).listening_congestion(), "cubic");
        assert_eq!(Underlay::Kernel("bbr".into()).listening_congestion(), "bbr");
        assert_eq!("alcc:follow".parse::<Underlay>().unwrap().listening_congestion(), "reno");
        assert_eq!("alcc".parse::<Underlay>().unwrap().listening_congestion(), "reno");
    }

    #[test]
    fn a_bound_listener_carries_the_congestion_control() {
        let listener = bind_listener("127.0.0.1:0", "reno").unwrap();
        assert_eq!(sys::get_congestion(listener.as_raw_fd()).unwrap(), "reno");
        let listener = bind_listener("127.0.0.1:0", "alcc:hold").unwrap();
        assert_eq!(sys::get_congestion(listener.as_raw_fd()).unwrap(), "reno");
    }

    #[test]
    fn a_refused_congestion_control_is_the_error() {
        let e = bind_listener("127.0.0.1:0", "no-such-cc").unwrap_err();
        assert!(matches!(e, Error::Underlay { .. }), "{e}");
        assert!(e.to_string().contains("no-such-cc"), "{e}");
    }
}
