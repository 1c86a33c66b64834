//! The boundary with C: the exported functions that take the place of libc's (each turns its
//! raw pointers into slices and asks the crate root whether the descriptor is governed; if
//! not, it calls the real function), the look-up of the real functions (`dlsym(RTLD_NEXT)`),
//! the constructor that reads the configuration before `main`, and the few plain system
//! calls the crate root needs. The only module with `unsafe`.
//!
//! Nothing here may panic across the C boundary: the exported functions call only code that
//! returns errors. Logging and the engine call libc themselves (`write` for a log line,
//! `send` on the engine's own descriptor, `close`): those reach the functions below again and
//! pass straight through, because only the program's accepted descriptors are governed.
#![allow(unsafe_code)]
// Under `cargo test` the exported symbols and the constructor are left out (the test binary
// must keep libc's functions), and what only they use is unused.
#![cfg_attr(test, allow(dead_code))]

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;
use std::time::Duration;

use libc::{c_int, c_void, iovec, msghdr, off_t, size_t, sockaddr, socklen_t, ssize_t};

type ListenFn = unsafe extern "C" fn(c_int, c_int) -> c_int;
type AcceptFn = unsafe extern "C" fn(c_int, *mut sockaddr, *mut socklen_t) -> c_int;
type Accept4Fn = unsafe extern "C" fn(c_int, *mut sockaddr, *mut socklen_t, c_int) -> c_int;
type WriteFn = unsafe extern "C" fn(c_int, *const c_void, size_t) -> ssize_t;
type SendFn = unsafe extern "C" fn(c_int, *const c_void, size_t, c_int) -> ssize_t;
type SendToFn =
    unsafe extern "C" fn(c_int, *const c_void, size_t, c_int, *const sockaddr, socklen_t) -> ssize_t;
type SendMsgFn = unsafe extern "C" fn(c_int, *const msghdr, c_int) -> ssize_t;
type WritevFn = unsafe extern "C" fn(c_int, *const iovec, c_int) -> ssize_t;
type SendFileFn = unsafe extern "C" fn(c_int, c_int, *mut off_t, size_t) -> ssize_t;
type CloseFn = unsafe extern "C" fn(c_int) -> c_int;
type ShutdownFn = unsafe extern "C" fn(c_int, c_int) -> c_int;
type DupFn = unsafe extern "C" fn(c_int) -> c_int;
type Dup2Fn = unsafe extern "C" fn(c_int, c_int) -> c_int;
type Dup3Fn = unsafe extern "C" fn(c_int, c_int, c_int) -> c_int;
type FcntlFn = unsafe extern "C" fn(c_int, c_int, libc::c_ulong) -> c_int;
type EpollCtlFn = unsafe extern "C" fn(c_int, c_int, c_int, *mut libc::epoll_event) -> c_int;
type EpollWaitFn = unsafe extern "C" fn(c_int, *mut libc::epoll_event, c_int, c_int) -> c_int;
type EpollPwaitFn =
    unsafe extern "C" fn(c_int, *mut libc::epoll_event, c_int, c_int, *const libc::sigset_t) -> c_int;
type SelectFn = unsafe extern "C" fn(
    c_int,
    *mut libc::fd_set,
    *mut libc::fd_set,
    *mut libc::fd_set,
    *mut libc::timeval,
) -> c_int;
type ExitFn = unsafe extern "C" fn(c_int) -> !;
type PselectFn = unsafe extern "C" fn(
    c_int,
    *mut libc::fd_set,
    *mut libc::fd_set,
    *mut libc::fd_set,
    *const libc::timespec,
    *const libc::sigset_t,
) -> c_int;
type PollFn = unsafe extern "C" fn(*mut libc::pollfd, libc::nfds_t, c_int) -> c_int;
type PpollFn = unsafe extern "C" fn(
    *mut libc::pollfd,
    libc::nfds_t,
    *const libc::timespec,
    *const libc::sigset_t,
) -> c_int;

/// libc's own functions, found once.
struct Real {
    listen: ListenFn,
    accept: AcceptFn,
    accept4: Accept4Fn,
    write: WriteFn,
    send: SendFn,
    sendto: SendToFn,
    sendmsg: SendMsgFn,
    writev: WritevFn,
    sendfile: SendFileFn,
    sendfile64: SendFileFn,
    close: CloseFn,
    shutdown: ShutdownFn,
    dup: DupFn,
    dup2: Dup2Fn,
    dup3: Dup3Fn,
    fcntl: FcntlFn,
    fcntl64: FcntlFn,
    epoll_ctl: EpollCtlFn,
    epoll_wait: EpollWaitFn,
    epoll_pwait: EpollPwaitFn,
    poll: PollFn,
    ppoll: PpollFn,
    select: SelectFn,
    pselect: PselectFn,
    exit: ExitFn,
    exit_c99: ExitFn,
}

static REAL: OnceLock<Real> = OnceLock::new();

/// The next definition of `name` after this library (libc's), or a message naming it.
fn next_symbol(name: &std::ffi::CStr) -> *mut c_void {
    // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only looks a symbol up.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    if p.is_null() {
        let msg = format!("alcc-preload: libc has no {name:?}; cannot run\n");
        // SAFETY: writing a byte slice to stderr with the raw syscall (libc's write may be us).
        unsafe { libc::syscall(libc::SYS_write, 2, msg.as_ptr(), msg.len()) };
        std::process::abort();
    }
    p
}

macro_rules! real_fn {
    ($name:literal, $ty:ty) => {{
        let p = next_symbol($name);
        // SAFETY: the symbol is libc's function of this name, whose C type is `$ty`.
        unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
    }};
}

pub mod receiving;

fn real() -> &'static Real {
    REAL.get_or_init(|| Real {
        listen: real_fn!(c"listen", ListenFn),
        accept: real_fn!(c"accept", AcceptFn),
        accept4: real_fn!(c"accept4", Accept4Fn),
        write: real_fn!(c"write", WriteFn),
        send: real_fn!(c"send", SendFn),
        sendto: real_fn!(c"sendto", SendToFn),
        sendmsg: real_fn!(c"sendmsg", SendMsgFn),
        writev: real_fn!(c"writev", WritevFn),
        sendfile: real_fn!(c"sendfile", SendFileFn),
        sendfile64: real_fn!(c"sendfile64", SendFileFn),
        close: real_fn!(c"close", CloseFn),
        shutdown: real_fn!(c"shutdown", ShutdownFn),
        dup: real_fn!(c"dup", DupFn),
        dup2: real_fn!(c"dup2", Dup2Fn),
        dup3: real_fn!(c"dup3", Dup3Fn),
        fcntl: real_fn!(c"fcntl", FcntlFn),
        fcntl64: real_fn!(c"fcntl64", FcntlFn),
        epoll_ctl: real_fn!(c"epoll_ctl", EpollCtlFn),
        epoll_wait: real_fn!(c"epoll_wait", EpollWaitFn),
        epoll_pwait: real_fn!(c"epoll_pwait", EpollPwaitFn),
        poll: real_fn!(c"poll", PollFn),
        ppoll: real_fn!(c"ppoll", PpollFn),
        select: real_fn!(c"select", SelectFn),
        pselect: real_fn!(c"pselect", PselectFn),
        exit: real_fn!(c"_exit", ExitFn),
        exit_c99: real_fn!(c"_Exit", ExitFn),
    })
}

fn set_errno(e: c_int) {
    // SAFETY: __errno_location returns this thread's errno slot, always valid.
    unsafe { *libc::__errno_location() = e };
}

fn last_errno() -> c_int {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// A C result from the crate root's: the count, or -1 with errno set (and SIGPIPE raised
/// for EPIPE unless the caller asked for MSG_NOSIGNAL, as the kernel does).
fn ssize_result(r: Result<usize, crate::Errno>, signal: bool) -> ssize_t {
    match r {
        Ok(n) => n as ssize_t,
        Err(e) => {
            if e == libc::EPIPE && signal {
                // SAFETY: raising a signal in this thread, as the kernel would on EPIPE.
                unsafe { libc::raise(libc::SIGPIPE) };
            }
            set_errno(e);
            -1
        }
    }
}

/// `len` bytes at `buf` as a slice (empty for a null pointer or a zero length).
///
/// # Safety
/// The caller's contract: `buf` points to `len` readable bytes when `len > 0`.
unsafe fn bytes<'a>(buf: *const c_void, len: size_t) -> &'a [u8] {
    if buf.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: as the function's contract says.
    unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) }
}

/// An iovec array as slices.
///
/// # Safety
/// `iov` points to `n` valid iovecs, each describing readable memory (writev's contract).
unsafe fn iov_slices<'a>(iov: *const iovec, n: c_int) -> Vec<&'a [u8]> {
    let n = usize::try_from(n).unwrap_or(0);
    if iov.is_null() || n == 0 {
        return Vec::new();
    }
    // SAFETY: as the function's contract says.
    let iovs = unsafe { std::slice::from_raw_parts(iov, n) };
    // SAFETY: each iovec describes readable memory (the caller's contract).
    iovs.iter().map(|v| unsafe { bytes(v.iov_base, v.iov_len) }).collect()
}

// ---- The constructor ----

extern "C" fn on_load() {
    if let Err(e) = crate::init() {
        let msg = format!("alcc-preload: {e}\nalcc-preload: refusing to start the program ungoverned\n");
        // SAFETY: a byte slice to stderr with the raw syscall.
        unsafe { libc::syscall(libc::SYS_write, 2, msg.as_ptr(), msg.len()) };
        std::process::exit(2);
    }
}

/// Runs [`on_load`] when the dynamic linker loads the library, before the program's `main`.
#[cfg(not(test))]
#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

// ---- Plain system calls for the crate root ----

/// Registers [`child_after_fork`] as fork's child handler (`ALCC_FORK=start`).
pub fn start_engine_in_forked_children() -> io::Result<()> {
    // SAFETY: registering a plain extern "C" function as fork's child handler.
    let r = unsafe { libc::pthread_atfork(None, None, Some(child_after_fork)) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(r))
    }
}

/// Fork's child handler: no panic leaves it.
extern "C" fn child_after_fork() {
    let _ = std::panic::catch_unwind(crate::start_engine_after_fork);
}

/// Whether `fd` is a connected socket (it has a peer): a listening socket does not.
pub fn has_peer(fd: RawFd) -> bool {
    // SAFETY: sockaddr_storage is plain data; all zeroes is a valid value.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as socklen_t;
    // SAFETY: getpeername writes at most `len` bytes into `ss`.
    unsafe { libc::getpeername(fd, (&mut ss as *mut libc::sockaddr_storage).cast(), &mut len) == 0 }
}

/// The descriptors an SCM_RIGHTS message in `msg`'s control data brought.
///
/// # Safety
/// `msg` is a msghdr that recvmsg(2) just filled.
unsafe fn received_fds(msg: &libc::msghdr) -> Vec<RawFd> {
    let mut fds = Vec::new();
    // SAFETY: walking the control buffer recvmsg filled, with the kernel's own macros.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c).cast::<c_int>();
                let bytes = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                for i in 0..bytes / std::mem::size_of::<c_int>() {
                    fds.push(data.add(i).read_unaligned());
                }
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    fds
}

/// The local TCP port of `fd` if it is an IPv4/IPv6 stream socket.
pub fn local_tcp_port(fd: RawFd) -> Option<u16> {
    let mut ty: c_int = 0;
    let mut len = std::mem::size_of::<c_int>() as socklen_t;
    // SAFETY: SO_TYPE writes one c_int into `ty`, whose size `len` says.
    let r = unsafe {
        libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_TYPE, (&mut ty as *mut c_int).cast(), &mut len)
    };
    if r != 0 || ty != libc::SOCK_STREAM {
        return None;
    }
    // SAFETY: sockaddr_storage is plain data; all zeroes is a valid value.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as socklen_t;
    // SAFETY: getsockname writes at most `len` bytes into `ss`.
    if unsafe { libc::getsockname(fd, (&mut ss as *mut libc::sockaddr_storage).cast(), &mut len) } != 0 {
        return None;
    }
    match c_int::from(ss.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says `ss` holds a sockaddr_in.
            let a = unsafe { &*(&ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            Some(u16::from_be(a.sin_port))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says `ss` holds a sockaddr_in6.
            let a = unsafe { &*(&ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            Some(u16::from_be(a.sin6_port))
        }
        _ => None,
    }
}

/// A close-on-exec duplicate of `fd` for the engine.
pub fn dup_cloexec(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC returns a new descriptor or -1.
    let new = unsafe { (real().fcntl)(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `new` was just made and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// Whether the open file behind `fd` is non-blocking.
pub fn is_nonblocking(fd: RawFd) -> bool {
    // SAFETY: F_GETFL only reads the flags.
    let flags = unsafe { (real().fcntl)(fd, libc::F_GETFL, 0) };
    flags >= 0 && flags & libc::O_NONBLOCK != 0
}

/// The file position of `fd`.
pub fn file_position(fd: RawFd) -> Result<i64, crate::Errno> {
    // SAFETY: lseek only moves or reads a position.
    let p = unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) };
    if p < 0 {
        Err(last_errno())
    } else {
        Ok(p)
    }
}

/// Sets the file position of `fd`.
pub fn set_file_position(fd: RawFd, at: i64) -> Result<(), crate::Errno> {
    // SAFETY: lseek only moves a position.
    if unsafe { libc::lseek(fd, at, libc::SEEK_SET) } < 0 {
        Err(last_errno())
    } else {
        Ok(())
    }
}

/// pread(2) into `buf`.
pub fn pread(fd: RawFd, buf: &mut [u8], at: i64) -> Result<usize, crate::Errno> {
    loop {
        // SAFETY: writes at most `buf.len()` bytes into `buf`.
        let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), at) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = last_errno();
        if e != libc::EINTR {
            return Err(e);
        }
    }
}

/// libc's epoll_ctl with `event` (None: a null pointer, for EPOLL_CTL_DEL).
pub fn epoll_ctl_real(
    ep: RawFd,
    op: c_int,
    fd: RawFd,
    event: Option<libc::epoll_event>,
) -> Result<(), crate::Errno> {
    let mut ev = event.unwrap_or(libc::epoll_event { events: 0, u64: 0 });
    let p = if event.is_some() { &mut ev as *mut libc::epoll_event } else { std::ptr::null_mut() };
    // SAFETY: `p` is null or points to `ev`, which lives across the call.
    if unsafe { (real().epoll_ctl)(ep, op, fd, p) } == 0 {
        Ok(())
    } else {
        Err(last_errno())
    }
}

/// Removes `fd` from the epoll instance `ep`.
pub fn epoll_del(ep: RawFd, fd: RawFd) -> Result<(), crate::Errno> {
    epoll_ctl_real(ep, libc::EPOLL_CTL_DEL, fd, None)
}

/// The state TCP_INFO reports for a closed connection (include/net/tcp_states.h).
pub const TCP_CLOSE: u8 = 7;

/// The TCP state of socket `fd` (`tcpi_state`, the first byte of TCP_INFO), read without side
/// effects; `None` if it is not a TCP socket.
pub fn tcp_state(fd: RawFd) -> Option<u8> {
    // SAFETY: tcp_info is plain data; all zeroes is a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as socklen_t;
    // SAFETY: TCP_INFO writes at most `len` bytes into `info`.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (r == 0 && len >= 1).then_some(info.tcpi_state)
}

/// Whether the program asked for messages on `fd`'s error queue itself: ICMP errors
/// (IP_RECVERR, IPV6_RECVERR) or MSG_ZEROCOPY notifications (SO_ZEROCOPY). Reading these
/// options changes nothing.
pub fn wants_error_queue(fd: RawFd) -> bool {
    let on = |level: c_int, name: c_int| {
        let mut v: c_int = 0;
        let mut len = std::mem::size_of::<c_int>() as socklen_t;
        // SAFETY: the option is one c_int, written into `v`, whose size `len` says.
        let r = unsafe { libc::getsockopt(fd, level, name, (&mut v as *mut c_int).cast(), &mut len) };
        r == 0 && v != 0
    };
    on(libc::SOL_IP, libc::IP_RECVERR)
        || on(libc::SOL_IPV6, libc::IPV6_RECVERR)
        || on(libc::SOL_SOCKET, libc::SO_ZEROCOPY)
}

/// The `revents` of `fd` polled now (no waiting) for `events`; `None` if poll failed.
pub fn poll_now(fd: RawFd, events: i16) -> Option<i16> {
    let mut p = libc::pollfd { fd, events, revents: 0 };
    // SAFETY: one valid pollfd, no waiting.
    let r = unsafe { (real().poll)(&mut p, 1, 0) };
    (r >= 0).then_some(p.revents)
}

/// A timespec of `d` (for the real ppoll/pselect).
fn timespec(d: Duration) -> libc::timespec {
    libc::timespec { tv_sec: d.as_secs() as libc::time_t, tv_nsec: d.subsec_nanos() as libc::c_long }
}

/// The Duration of a caller's timespec (null: no limit; a negative one counts as zero).
///
/// # Safety
/// `t` is null or valid for reading.
unsafe fn duration_of_timespec(t: *const libc::timespec) -> Option<Duration> {
    // SAFETY: as the function's contract says.
    let t = unsafe { t.as_ref() }?;
    Some(Duration::new(t.tv_sec.max(0) as u64, t.tv_nsec.clamp(0, 999_999_999) as u32))
}

// ---- The interposed functions ----

/// listen(2); a TCP socket on a covered port first gets the congestion control its
/// connections are to start under ([`crate::before_listen`]), which never fails the call.
///
/// # Safety
/// As listen(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn listen(fd: c_int, backlog: c_int) -> c_int {
    crate::before_listen(fd);
    // SAFETY: the caller's arguments, as listen(2) takes them.
    unsafe { (real().listen)(fd, backlog) }
}

/// accept(2); the connection is governed if the configuration covers it.
///
/// # Safety
/// As accept(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn accept(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int {
    // SAFETY: the caller's arguments, as accept(2) takes them.
    let c = unsafe { (real().accept)(fd, addr, len) };
    if c >= 0 {
        crate::after_accept(c);
    }
    c
}

/// accept4(2); the connection is governed if the configuration covers it.
///
/// # Safety
/// As accept4(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn accept4(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t, flags: c_int) -> c_int {
    // SAFETY: the caller's arguments, as accept4(2) takes them.
    let c = unsafe { (real().accept4)(fd, addr, len, flags) };
    if c >= 0 {
        crate::after_accept(c);
    }
    c
}

/// After recvmsg(2) returned `n` into `msg` (the one interposed recvmsg is in
/// [`receiving`]): a connection another process accepted and passed over a Unix socket
/// (SCM_RIGHTS; vsftpd's privileged process hands each passive data connection to its session
/// process this way) is governed here as if this process had accepted it.
///
/// # Safety
/// `msg` is the caller's msghdr that recvmsg just filled when `n >= 0`.
pub(crate) unsafe fn after_recvmsg(n: ssize_t, msg: *const libc::msghdr) {
    if n < 0 || msg.is_null() {
        return;
    }
    // SAFETY: recvmsg succeeded, so `msg` is a filled msghdr.
    let msg = unsafe { &*msg };
    if msg.msg_controllen > 0 && !msg.msg_control.is_null() {
        // SAFETY: as above.
        for received in unsafe { received_fds(msg) } {
            crate::after_receive(received);
        }
    }
}

/// write(2): a governed descriptor's bytes go into its flow's queue.
///
/// # Safety
/// As write(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, len: size_t) -> ssize_t {
    if crate::marked(fd) {
        // SAFETY: write(2)'s contract: `len` readable bytes at `buf`.
        let b = unsafe { bytes(buf, len) };
        if let Some(r) = crate::write(fd, &[b], false) {
            return ssize_result(r, true);
        }
    }
    // SAFETY: the caller's arguments, as write(2) takes them.
    unsafe { (real().write)(fd, buf, len) }
}

/// send(2): a governed descriptor's bytes go into its flow's queue (MSG_DONTWAIT and
/// MSG_NOSIGNAL honoured; MSG_MORE, MSG_EOR are the engine's business).
///
/// # Safety
/// As send(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn send(fd: c_int, buf: *const c_void, len: size_t, flags: c_int) -> ssize_t {
    if crate::marked(fd) {
        // SAFETY: send(2)'s contract: `len` readable bytes at `buf`.
        let b = unsafe { bytes(buf, len) };
        if let Some(r) = crate::write(fd, &[b], flags & libc::MSG_DONTWAIT != 0) {
            return ssize_result(r, flags & libc::MSG_NOSIGNAL == 0);
        }
    }
    // SAFETY: the caller's arguments, as send(2) takes them.
    unsafe { (real().send)(fd, buf, len, flags) }
}

/// sendto(2): as send(2) on a governed (connected) descriptor, whose address is ignored
/// as the kernel ignores it on a connected TCP socket.
///
/// # Safety
/// As sendto(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn sendto(
    fd: c_int,
    buf: *const c_void,
    len: size_t,
    flags: c_int,
    addr: *const sockaddr,
    alen: socklen_t,
) -> ssize_t {
    if crate::marked(fd) {
        // SAFETY: sendto(2)'s contract: `len` readable bytes at `buf`.
        let b = unsafe { bytes(buf, len) };
        if let Some(r) = crate::write(fd, &[b], flags & libc::MSG_DONTWAIT != 0) {
            return ssize_result(r, flags & libc::MSG_NOSIGNAL == 0);
        }
    }
    // SAFETY: the caller's arguments, as sendto(2) takes them.
    unsafe { (real().sendto)(fd, buf, len, flags, addr, alen) }
}

/// sendmsg(2): the data of a governed descriptor's message goes into its flow's queue
/// (ancillary data has no meaning on a TCP byte stream and is refused with EOPNOTSUPP).
///
/// # Safety
/// As sendmsg(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn sendmsg(fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t {
    if crate::marked(fd) && !msg.is_null() {
        // SAFETY: sendmsg(2)'s contract: `msg` points to a valid msghdr.
        let m = unsafe { &*msg };
        if !m.msg_control.is_null() && m.msg_controllen > 0 {
            set_errno(libc::EOPNOTSUPP);
            return -1;
        }
        // SAFETY: the msghdr's iovecs describe readable memory.
        let bufs = unsafe { iov_slices(m.msg_iov, m.msg_iovlen as c_int) };
        if let Some(r) = crate::write(fd, &bufs, flags & libc::MSG_DONTWAIT != 0) {
            return ssize_result(r, flags & libc::MSG_NOSIGNAL == 0);
        }
    }
    // SAFETY: the caller's arguments, as sendmsg(2) takes them.
    unsafe { (real().sendmsg)(fd, msg, flags) }
}

/// writev(2): a governed descriptor's buffers go into its flow's queue, in order.
///
/// # Safety
/// As writev(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn writev(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t {
    if crate::marked(fd) {
        // SAFETY: writev(2)'s contract: `n` valid iovecs at `iov`.
        let bufs = unsafe { iov_slices(iov, n) };
        if let Some(r) = crate::write(fd, &bufs, false) {
            return ssize_result(r, true);
        }
    }
    // SAFETY: the caller's arguments, as writev(2) takes them.
    unsafe { (real().writev)(fd, iov, n) }
}

/// The shared body of sendfile and sendfile64.
///
/// # Safety
/// `offset` null or valid for reading and writing (sendfile(2)'s contract).
unsafe fn sendfile_governed(out: c_int, input: c_int, offset: *mut off_t, count: size_t) -> Option<ssize_t> {
    // SAFETY: the caller's contract: null or a valid off_t.
    let off = unsafe { offset.as_mut() };
    crate::sendfile(out, input, off, count).map(|r| ssize_result(r, true))
}

/// sendfile(2) to a governed descriptor: pieces of the file enter its flow's queue.
///
/// # Safety
/// As sendfile(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn sendfile(out: c_int, input: c_int, offset: *mut off_t, count: size_t) -> ssize_t {
    // SAFETY: sendfile(2)'s contract for `offset`.
    if let Some(r) = unsafe { sendfile_governed(out, input, offset, count) } {
        return r;
    }
    // SAFETY: the caller's arguments, as sendfile(2) takes them.
    unsafe { (real().sendfile)(out, input, offset, count) }
}

/// sendfile64: the same as [`sendfile`] on a 64-bit system.
///
/// # Safety
/// As sendfile(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn sendfile64(out: c_int, input: c_int, offset: *mut off_t, count: size_t) -> ssize_t {
    // SAFETY: sendfile(2)'s contract for `offset`.
    if let Some(r) = unsafe { sendfile_governed(out, input, offset, count) } {
        return r;
    }
    // SAFETY: the caller's arguments, as sendfile(2) takes them.
    unsafe { (real().sendfile64)(out, input, offset, count) }
}

/// close(2): a governed connection's last descriptor lets its flow go (flushed in the
/// background, close(2) semantics), then the descriptor closes.
#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn close(fd: c_int) -> c_int {
    crate::forget(fd);
    // SAFETY: closing the caller's descriptor, as it asked.
    unsafe { (real().close)(fd) }
}

/// _exit(2): ends the process without exit(3)'s atexit hooks (forked children do, Python's
/// `os._exit`, vsftpd): the engine's exit flush runs first, as at exit(3), then the real one.
#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn _exit(status: c_int) -> ! {
    crate::before_exit();
    // SAFETY: ending the process as the caller asked.
    unsafe { (real().exit)(status) }
}

/// _Exit(2), C99's name of [`_exit`]: the same.
#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn _Exit(status: c_int) -> ! {
    crate::before_exit();
    // SAFETY: ending the process as the caller asked.
    unsafe { (real().exit_c99)(status) }
}

/// shutdown(2): SHUT_WR on a governed descriptor queues the FIN behind the queued bytes.
#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn shutdown(fd: c_int, how: c_int) -> c_int {
    let how = match crate::shutdown(fd, how) {
        None => Some(how),
        Some(Ok(rest)) => rest,
        Some(Err(e)) => {
            set_errno(e);
            return -1;
        }
    };
    match how {
        // SAFETY: the caller's arguments, as shutdown(2) takes them.
        Some(h) => unsafe { (real().shutdown)(fd, h) },
        None => 0,
    }
}

/// dup(2): a duplicate of a governed descriptor is governed too.
#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn dup(fd: c_int) -> c_int {
    // SAFETY: the caller's argument, as dup(2) takes it.
    let new = unsafe { (real().dup)(fd) };
    if new >= 0 {
        crate::after_dup(fd, new);
    }
    new
}

/// dup2(2): `new` is closed first (let go if governed), then is a duplicate of `old`.
#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    if old != new {
        crate::forget(new);
    }
    // SAFETY: the caller's arguments, as dup2(2) takes them.
    let r = unsafe { (real().dup2)(old, new) };
    if r >= 0 {
        crate::after_dup(old, r);
    }
    r
}

/// dup3(2): as [`dup2`].
#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    if old != new {
        crate::forget(new);
    }
    // SAFETY: the caller's arguments, as dup3(2) takes them.
    let r = unsafe { (real().dup3)(old, new, flags) };
    if r >= 0 {
        crate::after_dup(old, r);
    }
    r
}

/// The shared body of fcntl and fcntl64: F_DUPFD and F_DUPFD_CLOEXEC of a governed
/// descriptor give a governed one. The third argument is taken as one machine word, which
/// is how the x86-64 and AArch64 Linux calling conventions pass fcntl's optional int or
/// pointer.
fn fcntl_common(f: FcntlFn, fd: c_int, cmd: c_int, arg: libc::c_ulong) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    let r = unsafe { f(fd, cmd, arg) };
    if r >= 0 && (cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC) {
        crate::after_dup(fd, r);
    }
    r
}

/// fcntl(2), see [`fcntl_common`].
#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: libc::c_ulong) -> c_int {
    fcntl_common(real().fcntl, fd, cmd, arg)
}

/// fcntl64 (what programs built with 64-bit file offsets call), see [`fcntl_common`].
#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: libc::c_ulong) -> c_int {
    fcntl_common(real().fcntl64, fd, cmd, arg)
}

/// epoll_ctl(2): a governed descriptor's EPOLLOUT comes from its flow's readiness descriptor
/// (see `crate::epoll_ctl`).
///
/// # Safety
/// As epoll_ctl(2): `event` null (EPOLL_CTL_DEL) or valid for reading.
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn epoll_ctl(ep: c_int, op: c_int, fd: c_int, event: *mut libc::epoll_event) -> c_int {
    if crate::marked(fd) {
        // SAFETY: epoll_ctl(2)'s contract: null or a valid epoll_event.
        let ev = unsafe { event.as_ref() }.copied();
        match crate::epoll_ctl(ep, op, fd, ev) {
            Some(Ok(())) => return 0,
            Some(Err(e)) => {
                set_errno(e);
                return -1;
            }
            None => {}
        }
    }
    // SAFETY: the caller's arguments, as epoll_ctl(2) takes them.
    unsafe { (real().epoll_ctl)(ep, op, fd, event) }
}

/// The events an epoll wait wrote, as a slice.
///
/// # Safety
/// `events` holds at least `n` events written by the kernel.
unsafe fn epoll_events<'a>(events: *mut libc::epoll_event, n: c_int) -> &'a mut [libc::epoll_event] {
    // SAFETY: as the function's contract says.
    unsafe { std::slice::from_raw_parts_mut(events, n.max(0) as usize) }
}

/// epoll_wait(2) without the EPOLLERR that only the engine's ACK timestamps raise on governed
/// descriptors (`crate::error_queue`).
///
/// # Safety
/// As epoll_wait(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn epoll_wait(
    ep: c_int,
    events: *mut libc::epoll_event,
    max: c_int,
    timeout: c_int,
) -> c_int {
    let limit = u64::try_from(timeout).ok().map(Duration::from_millis);
    crate::error_queue::wait_for_genuine(
        limit,
        // SAFETY: the caller's arguments, with the time left.
        |left| unsafe { (real().epoll_wait)(ep, events, max, crate::error_queue::millis(left)) },
        // SAFETY: the kernel wrote `n` events into the caller's array.
        |n| crate::error_queue::filter_events(ep, unsafe { epoll_events(events, n) }) as c_int,
    )
}

/// epoll_pwait(2): as [`epoll_wait`].
///
/// # Safety
/// As epoll_pwait(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn epoll_pwait(
    ep: c_int,
    events: *mut libc::epoll_event,
    max: c_int,
    timeout: c_int,
    sigmask: *const libc::sigset_t,
) -> c_int {
    let limit = u64::try_from(timeout).ok().map(Duration::from_millis);
    crate::error_queue::wait_for_genuine(
        limit,
        // SAFETY: the caller's arguments, with the time left.
        |left| unsafe { (real().epoll_pwait)(ep, events, max, crate::error_queue::millis(left), sigmask) },
        // SAFETY: the kernel wrote `n` events into the caller's array.
        |n| crate::error_queue::filter_events(ep, unsafe { epoll_events(events, n) }) as c_int,
    )
}

/// The program's pollfd array as a slice (empty for a null pointer).
///
/// # Safety
/// `fds` points to `n` valid pollfds (poll(2)'s contract).
unsafe fn pollfds<'a>(fds: *mut libc::pollfd, n: libc::nfds_t) -> &'a mut [libc::pollfd] {
    if fds.is_null() || n == 0 {
        return &mut [];
    }
    // SAFETY: as the function's contract says.
    unsafe { std::slice::from_raw_parts_mut(fds, n as usize) }
}

/// poll(2): a governed descriptor's POLLOUT comes from its flow's readiness descriptor
/// (see `crate::poll`).
///
/// # Safety
/// As poll(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn poll(fds: *mut libc::pollfd, n: libc::nfds_t, timeout: c_int) -> c_int {
    let limit = u64::try_from(timeout).ok().map(Duration::from_millis);
    let once = |left: Option<Duration>| {
        let ms = crate::error_queue::millis(left);
        // SAFETY: poll(2)'s contract for `fds` and `n`.
        let slice = unsafe { pollfds(fds, n) };
        // SAFETY: the rewritten array is a valid pollfd array of its own length.
        let real_poll = |all: &mut [libc::pollfd]| unsafe {
            (real().poll)(all.as_mut_ptr(), all.len() as libc::nfds_t, ms)
        };
        // SAFETY: the caller's arguments, as poll(2) takes them.
        crate::poll(slice, real_poll).unwrap_or_else(|| unsafe { (real().poll)(fds, n, ms) })
    };
    // SAFETY: poll(2)'s contract for `fds` and `n`.
    let keep = |_| crate::error_queue::filter_revents(unsafe { pollfds(fds, n) }) as c_int;
    crate::error_queue::wait_for_genuine(limit, once, keep)
}

/// ppoll(2): as [`poll`].
///
/// # Safety
/// As ppoll(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn ppoll(
    fds: *mut libc::pollfd,
    n: libc::nfds_t,
    timeout: *const libc::timespec,
    sigmask: *const libc::sigset_t,
) -> c_int {
    // SAFETY: ppoll(2)'s contract: `timeout` is null or valid.
    let limit = unsafe { duration_of_timespec(timeout) };
    let once = |left: Option<Duration>| {
        let ts = left.map(timespec);
        let t = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: ppoll(2)'s contract for `fds` and `n`.
        let slice = unsafe { pollfds(fds, n) };
        // SAFETY: the rewritten array is valid; `t` is null or `ts`; `sigmask` is the caller's.
        let real_poll = |all: &mut [libc::pollfd]| unsafe {
            (real().ppoll)(all.as_mut_ptr(), all.len() as libc::nfds_t, t, sigmask)
        };
        // SAFETY: the caller's array, the time left, the caller's mask.
        crate::poll(slice, real_poll).unwrap_or_else(|| unsafe { (real().ppoll)(fds, n, t, sigmask) })
    };
    // SAFETY: ppoll(2)'s contract for `fds` and `n`.
    let keep = |_| crate::error_queue::filter_revents(unsafe { pollfds(fds, n) }) as c_int;
    crate::error_queue::wait_for_genuine(limit, once, keep)
}

/// Whether `fd` is in the set `set` points to (null: no set).
fn fd_in(set: *const libc::fd_set, fd: c_int) -> bool {
    // SAFETY: `set` is null or the caller's fd_set; `fd` is below FD_SETSIZE (checked).
    !set.is_null() && (0..libc::FD_SETSIZE as c_int).contains(&fd) && unsafe { libc::FD_ISSET(fd, set) }
}

/// select(2)/pselect(2) with governed descriptors: one in the write set is replaced there by
/// its flow's readiness descriptor, and set again in the result when that one is writable;
/// one reported readable only for the engine's timestamps (`crate::error_queue`) is taken out
/// of the read set, and a wait left with nothing is repeated for the time left (the sets as the
/// caller gave them). `call` runs the real function with the (possibly larger) first argument
/// and the time it may wait. `None`: no governed descriptor in the read or write set.
///
/// # Safety
/// The sets are null or valid fd_sets (select(2)'s contract).
unsafe fn select_governed(
    nfds: c_int,
    rd: *mut libc::fd_set,
    wr: *mut libc::fd_set,
    ex: *mut libc::fd_set,
    timeout: Option<Duration>,
    mut call: impl FnMut(c_int, Option<Duration>) -> c_int,
) -> Option<c_int> {
    let limit = nfds.clamp(0, libc::FD_SETSIZE as c_int);
    let subs: Vec<(c_int, c_int)> = crate::select_substitutes((0..limit).filter(|&fd| fd_in(wr, fd)))
        .into_iter()
        .filter(|&(_, w)| w < libc::FD_SETSIZE as c_int)
        .collect();
    let reads: Vec<c_int> = (0..limit).filter(|&fd| fd_in(rd, fd) && crate::marked(fd)).collect();
    if subs.is_empty() && reads.is_empty() {
        return None;
    }
    // SAFETY: each set is null or the caller's valid fd_set (plain data, copied).
    let given: Vec<Option<libc::fd_set>> =
        [rd, wr, ex].iter().map(|s| unsafe { s.as_ref() }.copied()).collect();
    let count = || (0..limit).map(|fd| [rd, wr, ex].iter().filter(|s| fd_in(**s, fd)).count() as c_int).sum();
    let mut first = true;
    let once = |left: Option<Duration>| {
        if !first {
            for (set, copy) in [rd, wr, ex].into_iter().zip(&given) {
                if let Some(copy) = copy {
                    // SAFETY: `set` is the caller's non-null set `copy` was taken from.
                    unsafe { *set = *copy };
                }
            }
        }
        first = false;
        let mut top = nfds;
        for &(fd, w) in &subs {
            // SAFETY: both descriptors are below FD_SETSIZE; `wr` is the caller's set.
            unsafe {
                libc::FD_CLR(fd, wr);
                libc::FD_SET(w, wr);
            }
            top = top.max(w + 1);
        }
        let r = call(top, left);
        if r < 0 {
            // The sets are unspecified after an error, as the kernel leaves them.
            return r;
        }
        for &(fd, w) in &subs {
            let ready = fd_in(wr, w);
            // SAFETY: as above.
            unsafe {
                libc::FD_CLR(w, wr);
                if ready {
                    libc::FD_SET(fd, wr);
                }
            }
        }
        count()
    };
    let keep = |_| {
        for &fd in &reads {
            if fd_in(rd, fd) && crate::error_queue::falsely_readable(fd) {
                // SAFETY: `fd` is below FD_SETSIZE and in the caller's read set.
                unsafe { libc::FD_CLR(fd, rd) };
            }
        }
        count()
    };
    Some(crate::error_queue::wait_for_genuine(timeout, once, keep))
}

/// select(2): a governed descriptor's writability comes from its flow's readiness descriptor;
/// readability without the engine's timestamps (see [`select_governed`]).
///
/// # Safety
/// As select(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn select(
    nfds: c_int,
    rd: *mut libc::fd_set,
    wr: *mut libc::fd_set,
    ex: *mut libc::fd_set,
    timeout: *mut libc::timeval,
) -> c_int {
    let start = std::time::Instant::now();
    // SAFETY: select(2)'s contract: `timeout` is null or valid.
    let limit = unsafe { timeout.as_ref() }.map(|t| {
        Duration::from_secs(t.tv_sec.max(0) as u64)
            + Duration::from_micros(t.tv_usec.clamp(0, 999_999) as u64)
    });
    let call = |n: c_int, left: Option<Duration>| {
        let mut tv = left.map(|d| libc::timeval {
            tv_sec: d.as_secs() as libc::time_t,
            tv_usec: d.subsec_micros() as libc::suseconds_t,
        });
        let t = tv.as_mut().map_or(std::ptr::null_mut(), |t| t as *mut libc::timeval);
        // SAFETY: the caller's sets; `t` is null or `tv`.
        unsafe { (real().select)(n, rd, wr, ex, t) }
    };
    // SAFETY: select(2)'s contract for the sets.
    if let Some(r) = unsafe { select_governed(nfds, rd, wr, ex, limit, call) } {
        if let (Some(l), Some(t)) = (limit, unsafe { timeout.as_mut() }) {
            // Linux's select leaves the time not slept in `timeout`.
            let rest = l.saturating_sub(start.elapsed());
            t.tv_sec = rest.as_secs() as libc::time_t;
            t.tv_usec = rest.subsec_micros() as libc::suseconds_t;
        }
        return r;
    }
    // SAFETY: the caller's arguments, as select(2) takes them.
    unsafe { (real().select)(nfds, rd, wr, ex, timeout) }
}

/// pselect(2): as [`select`].
///
/// # Safety
/// As pselect(2).
#[cfg(not(test))]
#[no_mangle]
pub unsafe extern "C" fn pselect(
    nfds: c_int,
    rd: *mut libc::fd_set,
    wr: *mut libc::fd_set,
    ex: *mut libc::fd_set,
    timeout: *const libc::timespec,
    sigmask: *const libc::sigset_t,
) -> c_int {
    // SAFETY: pselect(2)'s contract: `timeout` is null or valid.
    let limit = unsafe { duration_of_timespec(timeout) };
    let call = |n: c_int, left: Option<Duration>| {
        let ts = left.map(timespec);
        let t = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: the caller's sets and mask; `t` is null or `ts`.
        unsafe { (real().pselect)(n, rd, wr, ex, t, sigmask) }
    };
    // SAFETY: pselect(2)'s contract for the sets.
    if let Some(r) = unsafe { select_governed(nfds, rd, wr, ex, limit, call) } {
        return r;
    }
    // SAFETY: the caller's arguments, as pselect(2) takes them.
    unsafe { (real().pselect)(nfds, rd, wr, ex, timeout, sigmask) }
}
