//! The C boundary of the client side ([`crate::receiving`]): `connect` prepares the receive
//! window before the kernel's connect, and the read family (`read`, `recv`, `recvfrom`,
//! `recvmsg`, `readv`) tells the window control after a read returned data. Every call goes
//! to libc's function unchanged; a descriptor that is not a receiving connection costs one
//! atomic load after it.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;

use libc::{c_int, c_void, iovec, msghdr, size_t, sockaddr, socklen_t, ssize_t};

use super::{last_errno, next_symbol, set_errno};

type ConnectFn = unsafe extern "C" fn(c_int, *const sockaddr, socklen_t) -> c_int;
type ReadFn = unsafe extern "C" fn(c_int, *mut c_void, size_t) -> ssize_t;
type RecvFn = unsafe extern "C" fn(c_int, *mut c_void, size_t, c_int) -> ssize_t;
type RecvFromFn =
    unsafe extern "C" fn(c_int, *mut c_void, size_t, c_int, *mut sockaddr, *mut socklen_t) -> ssize_t;
type RecvMsgFn = unsafe extern "C" fn(c_int, *mut msghdr, c_int) -> ssize_t;
type ReadvFn = unsafe extern "C" fn(c_int, *const iovec, c_int) -> ssize_t;

/// libc's own functions of the client side, found once.
struct Real {
    connect: ConnectFn,
    read: ReadFn,
    recv: RecvFn,
    recvfrom: RecvFromFn,
    recvmsg: RecvMsgFn,
    readv: ReadvFn,
}

fn real() -> &'static Real {
    static REAL: OnceLock<Real> = OnceLock::new();
    REAL.get_or_init(|| Real {
        connect: real_fn!(c"connect", ConnectFn),
        read: real_fn!(c"read", ReadFn),
        recv: real_fn!(c"recv", RecvFn),
        recvfrom: real_fn!(c"recvfrom", RecvFromFn),
        recvmsg: real_fn!(c"recvmsg", RecvMsgFn),
        readv: real_fn!(c"readv", ReadvFn),
    })
}

/// An unconnected IPv4 TCP socket (the start check's probe).
pub fn tcp_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket(2) with constant arguments; it returns a new descriptor or -1.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a descriptor socket(2) just returned, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn sockopt_int(fd: RawFd, name: c_int) -> Option<c_int> {
    let mut v: c_int = 0;
    let mut len = std::mem::size_of::<c_int>() as socklen_t;
    // SAFETY: the option writes one c_int into `v`, whose size `len` says.
    let r = unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, name, (&mut v as *mut c_int).cast(), &mut len) };
    (r == 0).then_some(v)
}

extern "C" fn on_exit() {
    crate::receiving::log_open_at_exit();
}

/// Logs the window figures of the connections still open when the program exits.
pub fn log_at_exit() {
    // SAFETY: atexit(3) with a function that takes no arguments and does not unwind (it
    // only formats and writes log lines).
    unsafe { libc::atexit(on_exit) };
}

/// Whether `fd` is an IPv4 or IPv6 stream socket (TCP).
pub fn is_inet_stream(fd: RawFd) -> bool {
    sockopt_int(fd, libc::SO_TYPE) == Some(libc::SOCK_STREAM)
        && matches!(sockopt_int(fd, libc::SO_DOMAIN), Some(libc::AF_INET | libc::AF_INET6))
}

/// Tells the window control after a read of `fd` returned `n`, keeping the caller's errno.
fn after_read(fd: c_int, n: ssize_t) -> ssize_t {
    if n > 0 && crate::receiving::marked(fd) {
        let errno = last_errno();
        crate::receiving::after_read(fd);
        set_errno(errno);
    }
    n
}

/// connect(2): an IPv4/IPv6 TCP socket's receive window is prepared first (see
/// `crate::receiving`); a socket it cannot be prepared on fails with that errno.
///
/// # Safety
/// As connect(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn connect(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int {
    if let Err(e) = crate::receiving::before_connect(fd) {
        set_errno(e);
        return -1;
    }
    // SAFETY: the caller's arguments, as connect(2) takes them.
    let r = unsafe { (real().connect)(fd, addr, len) };
    let errno = last_errno();
    crate::receiving::after_connect(fd, if r == 0 { Ok(()) } else { Err(errno) });
    set_errno(errno);
    r
}

/// read(2).
///
/// # Safety
/// As read(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, len: size_t) -> ssize_t {
    // SAFETY: the caller's arguments, as read(2) takes them.
    after_read(fd, unsafe { (real().read)(fd, buf, len) })
}

/// recv(2).
///
/// # Safety
/// As recv(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn recv(fd: c_int, buf: *mut c_void, len: size_t, flags: c_int) -> ssize_t {
    // SAFETY: the caller's arguments, as recv(2) takes them.
    after_read(fd, unsafe { (real().recv)(fd, buf, len, flags) })
}

/// recvfrom(2).
///
/// # Safety
/// As recvfrom(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn recvfrom(
    fd: c_int,
    buf: *mut c_void,
    len: size_t,
    flags: c_int,
    addr: *mut sockaddr,
    addr_len: *mut socklen_t,
) -> ssize_t {
    // SAFETY: the caller's arguments, as recvfrom(2) takes them.
    after_read(fd, unsafe { (real().recvfrom)(fd, buf, len, flags, addr, addr_len) })
}

/// recvmsg(2); descriptors it brings (SCM_RIGHTS) may be connections to govern
/// ([`super::after_recvmsg`]).
///
/// # Safety
/// As recvmsg(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn recvmsg(fd: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t {
    // SAFETY: the caller's arguments, as recvmsg(2) takes them.
    let n = unsafe { (real().recvmsg)(fd, msg, flags) };
    // SAFETY: `msg` is the caller's msghdr, filled when n >= 0.
    unsafe { super::after_recvmsg(n, msg) };
    after_read(fd, n)
}

/// readv(2).
///
/// # Safety
/// As readv(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn readv(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t {
    // SAFETY: the caller's arguments, as readv(2) takes them.
    after_read(fd, unsafe { (real().readv)(fd, iov, n) })
}
