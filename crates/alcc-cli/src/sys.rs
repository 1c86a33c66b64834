//! The command's only unsafe code: getrusage, signal dispositions, kill(2), and the plain
//! kernel writer's socket options, memfd and sendfile.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{FromRawFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};

/// Resource usage of this process (all its threads), as getrusage(2) reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    /// CPU time in user mode, seconds.
    pub user_s: f64,
    /// CPU time in the kernel on the process's behalf, seconds.
    pub system_s: f64,
    /// Peak resident set size, KiB.
    pub max_rss_kb: u64,
    /// Voluntary context switches (the process slept: a wake-up each).
    pub voluntary_switches: u64,
}

fn seconds(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 / 1e6
}

/// getrusage(RUSAGE_SELF).
pub fn usage_self() -> io::Result<Usage> {
    usage(libc::RUSAGE_SELF)
}

/// getrusage(RUSAGE_CHILDREN): the children this process has waited for (and their waited-for
/// descendants).
pub fn usage_children() -> io::Result<Usage> {
    usage(libc::RUSAGE_CHILDREN)
}

fn usage(who: libc::c_int) -> io::Result<Usage> {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `ru` is a valid, writable rusage struct; getrusage only writes into it.
    let rc = unsafe { libc::getrusage(who, ru.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: getrusage succeeded, so it filled the struct (which was zeroed anyway).
    let ru = unsafe { ru.assume_init() };
    Ok(Usage {
        user_s: seconds(ru.ru_utime),
        system_s: seconds(ru.ru_stime),
        max_rss_kb: u64::try_from(ru.ru_maxrss).unwrap_or(0),
        voluntary_switches: u64::try_from(ru.ru_nvcsw).unwrap_or(0),
    })
}

/// The last termination signal caught by [`catch_termination`] (0 = none).
static CAUGHT: AtomicI32 = AtomicI32::new(0);

extern "C" fn remember(sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    CAUGHT.store(sig, Ordering::SeqCst);
}

/// Makes SIGINT, SIGTERM and SIGHUP set a flag (read with [`caught`]) instead of ending the
/// process. System calls interrupted by them are restarted.
pub fn catch_termination() -> io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction is a valid value; we set the handler, an empty mask and
        // SA_RESTART, and `remember` only performs an atomic store.
        let rc = unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = remember as extern "C" fn(libc::c_int) as libc::sighandler_t;
            act.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(sig, &act, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The termination signal caught since [`catch_termination`], if any.
pub fn caught() -> Option<i32> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

/// Sends `sig` to process `pid`.
pub fn kill(pid: u32, sig: i32) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    let rc = unsafe { libc::kill(pid, sig) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether the process runs as root (effective user id 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid(2) cannot fail and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// Sets the kernel congestion control of socket `fd` (TCP_CONGESTION).
pub fn set_tcp_congestion(fd: RawFd, name: &str) -> io::Result<()> {
    let bytes = name.as_bytes();
    let len =
        libc::socklen_t::try_from(bytes.len()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `bytes` is valid for `len` bytes for the duration of the call; setsockopt only
    // reads it.
    let rc =
        unsafe { libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, bytes.as_ptr().cast(), len) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes `close` of socket `fd` reset the connection at once (SO_LINGER with a zero timeout).
pub fn set_linger_zero(fd: RawFd) -> io::Result<()> {
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    let len = std::mem::size_of::<libc::linger>() as libc::socklen_t;
    // SAFETY: `linger` is a valid struct of `len` bytes that lives across the call.
    let rc = unsafe {
        libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_LINGER, (&linger as *const libc::linger).cast(), len)
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// An anonymous in-memory file (memfd_create), closed on exec.
pub fn memfd(name: &str) -> io::Result<File> {
    let name = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `name` is a NUL-terminated string that lives across the call.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: memfd_create returned a new descriptor that nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// sendfile(2): copies up to `count` bytes of `file` from `*offset` to socket `socket` in the
/// kernel, advancing `*offset`; returns the bytes sent (0 at the end of the file).
pub fn sendfile(socket: RawFd, file: RawFd, offset: &mut i64, count: usize) -> io::Result<usize> {
    // SAFETY: both are open descriptors of the caller, and `offset` points to a valid off_t
    // that sendfile updates.
    let n = unsafe { libc::sendfile(socket, file, offset, count) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}
