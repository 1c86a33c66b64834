//! The exported C functions: every raw pointer and descriptor handed across the boundary
//! is turned into safe Rust here, and every call runs under `catch_unwind`, so that no
//! panic unwinds into C. The work is done in the crate root.

use std::ffi::CStr;
use std::net::TcpStream;
use std::os::fd::{FromRawFd, RawFd};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::{CInfo, Closing, Errno};

fn set_errno(e: Errno) {
    // SAFETY: __errno_location returns this thread's errno slot, always valid.
    unsafe { *libc::__errno_location() = e };
}

/// Runs `f`, turning `Err(errno)` and panics into -1 with errno set.
fn guard<T: From<i8>>(f: impl FnOnce() -> Result<T, Errno>) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            set_errno(e);
            T::from(-1)
        }
        Err(_) => {
            set_errno(libc::EIO);
            T::from(-1)
        }
    }
}

fn last_errno() -> Errno {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// Takes ownership of a connected descriptor as a `TcpStream`.
fn tcp_from(fd: RawFd) -> TcpStream {
    // SAFETY: the caller passes a descriptor it just obtained from accept/connect and hands
    // its ownership to alcc (the documented contract of alcc_accept/alcc_connect).
    unsafe { TcpStream::from_raw_fd(fd) }
}

/// accept(2), then the connection runs under alcc.
///
/// # Safety
/// `addr` and `addrlen` as for accept(2): both null, or valid for writing.
#[no_mangle]
pub unsafe extern "C" fn alcc_accept(
    sockfd: RawFd,
    addr: *mut libc::sockaddr,
    addrlen: *mut libc::socklen_t,
) -> RawFd {
    guard(|| {
        // The listener gets the underlay's initial congestion control for the connections it
        // accepts from now on. A refusal is not this call's error here: taking the connection
        // over fails with the same errno below (the connection is then closed).
        let _ = crate::prepare_sending(sockfd, false);
        // SAFETY: the pointers are the caller's, valid as for accept(2).
        let fd = unsafe { libc::accept4(sockfd, addr, addrlen, libc::SOCK_CLOEXEC) };
        if fd < 0 {
            return Err(last_errno());
        }
        crate::adopt(fd, tcp_from(fd), sockfd, false)?;
        Ok(fd)
    })
}

/// connect(2), then the connection runs under alcc.
///
/// # Safety
/// `addr` must point to `addrlen` readable bytes, as for connect(2).
#[no_mangle]
pub unsafe extern "C" fn alcc_connect(
    sockfd: RawFd,
    addr: *const libc::sockaddr,
    addrlen: libc::socklen_t,
) -> libc::c_int {
    guard(|| {
        // A receive window chosen for this socket sets its buffer before the handshake.
        let window = crate::prepare_connect(sockfd)?;
        if window.is_none() {
            // A sending connection starts under the underlay, not the host's default.
            crate::prepare_sending(sockfd, true)?;
        }
        loop {
            // SAFETY: the caller's address, valid as for connect(2).
            if unsafe { libc::connect(sockfd, addr, addrlen) } == 0 {
                break;
            }
            let e = last_errno();
            if e != libc::EINTR {
                return Err(e);
            }
        }
        match window {
            Some(control) => crate::adopt_receiver(sockfd, tcp_from(sockfd), control)?,
            None => crate::adopt(sockfd, tcp_from(sockfd), sockfd, true)?,
        }
        Ok(0)
    })
}

/// send(2) through alcc's queue.
///
/// # Safety
/// `buf` must point to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn alcc_send(
    sockfd: RawFd,
    buf: *const libc::c_void,
    len: usize,
    flags: libc::c_int,
) -> isize {
    guard(|| {
        if buf.is_null() && len > 0 {
            return Err(libc::EFAULT);
        }
        let data = if len == 0 {
            &[][..]
        } else {
            // SAFETY: the caller guarantees `len` readable bytes at `buf`.
            unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) }
        };
        crate::send(sockfd, data, flags).map(|n| n as isize)
    })
}

/// sendfile(2) through alcc: `count` bytes of `in_fd` from `*offset` (or from its file
/// position when `offset` is null, which then moves) queued by reference.
///
/// # Safety
/// `offset` must be null or point to a valid `off_t`; `in_fd` must stay open during the call.
#[no_mangle]
pub unsafe extern "C" fn alcc_sendfile(
    sockfd: RawFd,
    in_fd: RawFd,
    offset: *mut libc::off_t,
    count: usize,
    flags: libc::c_int,
) -> isize {
    guard(|| {
        if in_fd < 0 {
            return Err(libc::EBADF);
        }
        // SAFETY: the caller keeps `in_fd` open for the call; the engine dups it before
        // keeping it.
        let file = unsafe { std::os::fd::BorrowedFd::borrow_raw(in_fd) };
        let at = if offset.is_null() {
            // SAFETY: lseek on a descriptor; a bad one is reported through errno.
            match unsafe { libc::lseek(in_fd, 0, libc::SEEK_CUR) } {
                p if p < 0 => return Err(last_errno()),
                p => p,
            }
        } else {
            // SAFETY: the caller guarantees a valid `off_t` at `offset`.
            unsafe { *offset }
        };
        let start = u64::try_from(at).map_err(|_| libc::EINVAL)?;
        let n = crate::sendfile(sockfd, file, start, count, flags)?;
        let end = at.saturating_add(libc::off_t::try_from(n).unwrap_or(libc::off_t::MAX));
        if offset.is_null() {
            // SAFETY: as above.
            if unsafe { libc::lseek(in_fd, end, libc::SEEK_SET) } < 0 {
                return Err(last_errno());
            }
        } else {
            // SAFETY: as above.
            unsafe { *offset = end };
        }
        Ok(isize::try_from(n).unwrap_or(isize::MAX))
    })
}

/// recv(2) on an alcc connection.
///
/// # Safety
/// `buf` must point to `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn alcc_recv(
    sockfd: RawFd,
    buf: *mut libc::c_void,
    len: usize,
    flags: libc::c_int,
) -> isize {
    guard(|| {
        if buf.is_null() && len > 0 {
            return Err(libc::EFAULT);
        }
        let data = if len == 0 {
            &mut [][..]
        } else {
            // SAFETY: the caller guarantees `len` writable bytes at `buf`.
            unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) }
        };
        crate::recv(sockfd, data, flags).map(|n| n as isize)
    })
}

/// close(2): flush, FIN, wait for the acknowledgements, close.
#[no_mangle]
pub extern "C" fn alcc_close(fd: RawFd) -> libc::c_int {
    guard(|| match crate::close(fd) {
        Closing::Flushed(r) => r.map(|()| 0),
        Closing::Plain => {
            // SAFETY: closing a descriptor the caller owns and gave up.
            if unsafe { libc::close(fd) } == 0 {
                Ok(0)
            } else {
                Err(last_errno())
            }
        }
    })
}

/// `alcc_exit_flush`: closes every open alcc connection and waits at most `linger_ms` until
/// each has handed its bytes over; returns how many had not (alcc.h).
#[no_mangle]
pub extern "C" fn alcc_exit_flush(linger_ms: libc::c_uint) -> libc::c_int {
    guard(|| Ok(crate::exit_flush(linger_ms)))
}

/// Chooses the controller and (unless `underlay` is null) the kernel congestion control.
///
/// # Safety
/// `spec` must be a NUL-terminated string; `underlay` null or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn alcc_set_cc(
    fd: RawFd,
    spec: *const libc::c_char,
    underlay: *const libc::c_char,
) -> libc::c_int {
    guard(|| {
        if spec.is_null() {
            return Err(libc::EINVAL);
        }
        // SAFETY: the caller guarantees NUL-terminated strings.
        let spec = unsafe { CStr::from_ptr(spec) }.to_str().map_err(|_| libc::EINVAL)?;
        let underlay = if underlay.is_null() {
            None
        } else {
            // SAFETY: as above.
            Some(unsafe { CStr::from_ptr(underlay) }.to_str().map_err(|_| libc::EINVAL)?)
        };
        crate::set_cc(fd, spec, underlay).map(|()| 0)
    })
}

/// Chooses the mode (`"kernel"` or `"framed"`) of a listening or not yet connected socket.
///
/// # Safety
/// `mode` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn alcc_set_mode(fd: RawFd, mode: *const libc::c_char) -> libc::c_int {
    guard(|| {
        if mode.is_null() {
            return Err(libc::EINVAL);
        }
        // SAFETY: the caller guarantees a NUL-terminated string.
        let mode = unsafe { CStr::from_ptr(mode) }.to_str().map_err(|_| libc::EINVAL)?;
        crate::set_mode(fd, mode).map(|()| 0)
    })
}

/// Chooses the receive-window control of a not yet connected socket (kernel mode).
///
/// # Safety
/// `spec` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn alcc_set_receive_window(fd: RawFd, spec: *const libc::c_char) -> libc::c_int {
    guard(|| {
        if spec.is_null() {
            return Err(libc::EINVAL);
        }
        // SAFETY: the caller guarantees a NUL-terminated string.
        let spec = unsafe { CStr::from_ptr(spec) }.to_str().map_err(|_| libc::EINVAL)?;
        crate::set_receive_window(fd, spec).map(|()| 0)
    })
}

/// Chooses the role (`"send"` or `"receive"`) of a listening or not yet connected socket.
///
/// # Safety
/// `role` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn alcc_set_role(fd: RawFd, role: *const libc::c_char) -> libc::c_int {
    guard(|| {
        if role.is_null() {
            return Err(libc::EINVAL);
        }
        // SAFETY: the caller guarantees a NUL-terminated string.
        let role = unsafe { CStr::from_ptr(role) }.to_str().map_err(|_| libc::EINVAL)?;
        crate::set_role(fd, role).map(|()| 0)
    })
}

/// Chooses the flow group (`"auto"`, `"none"`, a name; null keeps the current choice) and
/// the priority weight; see `alcc.h`.
///
/// # Safety
/// `group` must be null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn alcc_set_group(fd: RawFd, group: *const libc::c_char, weight: f64) -> libc::c_int {
    guard(|| {
        let group = if group.is_null() {
            None
        } else {
            // SAFETY: the caller guarantees a NUL-terminated string.
            Some(unsafe { CStr::from_ptr(group) }.to_str().map_err(|_| libc::EINVAL)?)
        };
        crate::set_group(fd, group, weight).map(|()| 0)
    })
}

/// Fills `*info` for an alcc connection.
///
/// # Safety
/// `info` must point to a writable `struct alcc_info`.
#[no_mangle]
pub unsafe extern "C" fn alcc_get_info(fd: RawFd, info: *mut CInfo) -> libc::c_int {
    guard(|| {
        if info.is_null() {
            return Err(libc::EFAULT);
        }
        let i = crate::info(fd)?;
        // SAFETY: the caller guarantees a writable struct alcc_info at `info`.
        unsafe { info.write(i) };
        Ok(0)
    })
}

/// The descriptor that polls writable (POLLOUT / EPOLLOUT) exactly while `alcc_send` on `fd`
/// would not block; see `alcc.h`.
#[no_mangle]
pub extern "C" fn alcc_writable_fd(fd: RawFd) -> RawFd {
    guard(|| crate::writable_fd(fd))
}
