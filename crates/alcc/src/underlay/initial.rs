//! The congestion control a socket starts under, before alcc attaches its underlay: one that
//! leaves the kernel's pacing off.
//!
//! A TCP socket starts under the host's default (net.ipv4.tcp_congestion_control) unless one
//! is chosen before its handshake; an accepted socket starts under its listener's, or the
//! default when nobody chose one for the listener (net/ipv4/tcp_minisocks.c,
//! tcp_ca_openreq_child). The kernel initialises it when the handshake completes, before
//! connect(2) or accept(2) returns. BBR's init turns the kernel's internal pacing on
//! (net/ipv4/tcp_bbr.c, bbr_init: `sk_pacing_status` from NONE to NEEDED), and switching the
//! socket to another congestion control later (TCP_CONGESTION, tcp_reinit_congestion_control
//! in net/ipv4/tcp_cong.c) never turns it off: a flow that alcc moves from bbr to its underlay
//! stays paced by the kernel at 2x (slow start) or 1.2x cwnd/srtt (tcp_update_pacing_rate).
//!
//! So the sockets alcc creates get, before listen(2) or connect(2), the underlay itself when
//! it is a kernel congestion control (`bbr` only when asked for), and `reno` for the BPF
//! underlay: each flow's attach writes the BPF target into the socket's storage and then
//! switches to the struct_ops, whose init reads that target; socket storage is not copied to
//! accepted sockets, and the struct_ops is registered per process, so on a listener it would
//! only run before any target exists.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};

use socket2::{Domain, Protocol, Socket, Type};

use super::Underlay;
use crate::error::Error;
use crate::sys;

/// The backlog of listeners made here: the one `std::net::TcpListener::bind` uses on Linux.
const BACKLOG: i32 = 128;

impl Underlay {
    /// The kernel congestion control a socket starts under before this underlay is attached
    /// (a listener's accepted sockets inherit it): a kernel underlay itself, `reno` for the
    /// BPF underlay (whose per-flow attach chooses the struct_ops after writing the target).
    pub fn initial_congestion(&self) -> &str {
        match self {
            Underlay::Kernel(name) => name,
            Underlay::Alcc(_) => "reno",
        }
    }

    /// Sets [`Underlay::initial_congestion`] on the socket `fd`: before listen(2) or
    /// connect(2), or on a listening socket (connections already in its backlog keep the
    /// congestion control they started under).
    pub fn set_initial(&self, fd: RawFd) -> Result<(), Error> {
        let name = self.initial_congestion();
        sys::set_congestion(fd, name).map_err(|source| Error::underlay(name, source))
    }
}

/// Sets the initial congestion control for `underlay` (a name as in
/// [`Options::underlay`](crate::Options::underlay)) on the socket `fd`
/// ([`Underlay::set_initial`]); returns the name it set (`reno` under the BPF underlay).
pub fn set_initial_congestion(fd: RawFd, underlay: &str) -> Result<String, Error> {
    let underlay: Underlay = underlay.parse()?;
    underlay.set_initial(fd)?;
    Ok(underlay.initial_congestion().to_string())
}

/// A TCP listener on the first of `addr`'s addresses that binds (as
/// `std::net::TcpListener::bind`: SO_REUSEADDR, backlog 128) whose congestion control is
/// set for `underlay` before listen(2), so that no connection is ever accepted under the
/// host's default. A congestion control the kernel refuses is the error (naming what is
/// allowed), not a fallback.
pub fn bind_listener(addr: impl ToSocketAddrs, underlay: &str) -> Result<TcpListener, Error> {
    let underlay: Underlay = underlay.parse()?;
    first_of(addr, |addr| {
        let socket = tcp_socket(addr, &underlay)?;
        socket.set_reuse_address(true)?;
        socket.bind(&addr.into())?;
        socket.listen(BACKLOG)?;
        Ok(socket.into())
    })
}

/// A TCP connection to the first of `addr`'s addresses that accepts (as
/// `std::net::TcpStream::connect`), whose congestion control is set for `underlay` before
/// connect(2): the kernel initialises that one at the handshake, never the host's default.
pub fn connect(addr: impl ToSocketAddrs, underlay: &str) -> Result<TcpStream, Error> {
    let underlay: Underlay = underlay.parse()?;
    first_of(addr, |addr| {
        let socket = tcp_socket(addr, &underlay)?;
        sys::connect(socket.as_raw_fd(), &addr)?;
        Ok(socket.into())
    })
}

/// A TCP socket of `addr`'s family under `underlay`'s initial congestion control.
fn tcp_socket(addr: SocketAddr, underlay: &Underlay) -> Result<Socket, Error> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    underlay.set_initial(socket.as_raw_fd())?;
    Ok(socket)
}

/// `make` on each of `addr`'s addresses until one succeeds; the last I/O error otherwise. A
/// refused congestion control is returned at once (every address would refuse it).
fn first_of<T>(
    addr: impl ToSocketAddrs,
    mut make: impl FnMut(SocketAddr) -> Result<T, Error>,
) -> Result<T, Error> {
    let mut last = None;
    for addr in addr.to_socket_addrs()? {
        match make(addr) {
            Ok(made) => return Ok(made),
            Err(Error::Io(e)) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address to use")).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockets_start_under_the_kernel_underlay_or_reno() {
        assert_eq!(Underlay::Kernel("cubic".into()).initial_congestion(), "cubic");
        assert_eq!(Underlay::Kernel("bbr".into()).initial_congestion(), "bbr");
        assert_eq!("alcc:follow".parse::<Underlay>().unwrap().initial_congestion(), "reno");
        assert_eq!("alcc".parse::<Underlay>().unwrap().initial_congestion(), "reno");
    }

    #[test]
    fn a_bound_listener_and_a_connection_carry_the_congestion_control() {
        let listener = bind_listener("127.0.0.1:0", "reno").unwrap();
        assert_eq!(sys::get_congestion(listener.as_raw_fd()).unwrap(), "reno");
        let listener = bind_listener("127.0.0.1:0", "alcc:hold").unwrap();
        assert_eq!(sys::get_congestion(listener.as_raw_fd()).unwrap(), "reno");
        let stream = connect(listener.local_addr().unwrap(), "reno").unwrap();
        assert_eq!(sys::get_congestion(stream.as_raw_fd()).unwrap(), "reno");
    }

    #[test]
    fn a_refused_congestion_control_is_the_error() {
        let e = bind_listener("127.0.0.1:0", "no-such-cc").unwrap_err();
        assert!(matches!(e, Error::Underlay { .. }), "{e}");
        assert!(e.to_string().contains("no-such-cc"), "{e}");
        let e = connect("127.0.0.1:9", "no-such-cc").unwrap_err();
        assert!(matches!(e, Error::Underlay { .. }), "{e}");
    }
}
