//! Every system call of this crate that needs `unsafe`: TUN creation, entering a network
//! namespace, clocks, timerfd, poll, signal masks. Each function is a thin checked wrapper.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Whether the effective user is root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Creates (in the calling thread's network namespace) a TUN device named `name` carrying raw
/// IP packets without the packet-information header, and returns its non-blocking descriptor.
pub fn open_tun(name: &str) -> io::Result<OwnedFd> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("bad interface name `{name}`")));
    }
    // SAFETY: the path is a valid NUL-terminated string; the returned descriptor is checked.
    let raw = check(unsafe {
        libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC)
    })?;
    // SAFETY: `raw` is a freshly opened descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &src) in ifr.ifr_name.iter_mut().zip(name.as_bytes()) {
        *dst = src as libc::c_char;
    }
    ifr.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes one ifreq, which lives for the whole call.
    check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut ifr as *mut libc::ifreq) })?;
    Ok(fd)
}

/// Moves the calling thread into the network namespace `ns` (a descriptor of
/// `/run/netns/NAME`). Only this thread changes namespace.
pub fn enter_netns(ns: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: setns takes a descriptor and a flag; the descriptor is valid for the call.
    check(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) })?;
    Ok(())
}

fn clock_us(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out-pointer; the clocks used here always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000
}

/// CLOCK_MONOTONIC, µs.
pub fn monotonic_us() -> u64 {
    clock_us(libc::CLOCK_MONOTONIC)
}

/// CPU time consumed by the calling thread, µs.
pub fn thread_cpu_us() -> u64 {
    clock_us(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Sets the calling thread's timer slack to 1 ns, so that timers fire when asked rather than
/// up to 50 µs late (the default slack).
pub fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument; failure is harmless.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

/// A non-blocking timerfd on CLOCK_MONOTONIC, armed with absolute deadlines.
pub fn timerfd() -> io::Result<OwnedFd> {
    // SAFETY: plain constructor; the result is checked.
    let raw = check(unsafe {
        libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC)
    })?;
    // SAFETY: `raw` is a freshly created descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Arms `timer` to expire once at CLOCK_MONOTONIC time `deadline_us` (absolute).
pub fn timerfd_arm_at(timer: BorrowedFd<'_>, deadline_us: u64) -> io::Result<()> {
    let spec = libc::itimerspec {
        it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
        it_value: libc::timespec {
            tv_sec: (deadline_us / 1_000_000) as libc::time_t,
            // A zero it_value would disarm the timer.
            tv_nsec: ((deadline_us % 1_000_000) * 1000).max(1) as libc::c_long,
        },
    };
    // SAFETY: `spec` is valid for the call; the old-value pointer may be null.
    check(unsafe {
        libc::timerfd_settime(timer.as_raw_fd(), libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut())
    })?;
    Ok(())
}

/// Waits until one of `fds` is readable (or `timeout_ms` passes, -1 for never) and returns
/// which are.
pub fn poll_readable<const N: usize>(fds: [BorrowedFd<'_>; N], timeout_ms: i32) -> io::Result<[bool; N]> {
    let mut pfds = fds.map(|fd| libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 });
    loop {
        // SAFETY: `pfds` is an array of N initialised pollfd that outlives the call.
        let r = unsafe { libc::poll(pfds.as_mut_ptr(), N as libc::nfds_t, timeout_ms) };
        if r >= 0 {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(pfds.map(|p| p.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0))
}

/// The termination signals alcc cleans up on: SIGINT, SIGTERM, SIGHUP.
pub const TERMINATION_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

fn termination_set() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t; the signal numbers are valid.
    unsafe {
        libc::sigemptyset(&mut set);
        for s in TERMINATION_SIGNALS {
            libc::sigaddset(&mut set, s);
        }
    }
    set
}

/// Blocks the termination signals in the calling thread (and the threads it creates later),
/// so that only [`wait_termination_signal`] receives them. Child processes started by
/// `std::process::Command` get an empty mask again.
pub fn block_termination_signals() -> io::Result<()> {
    let set = termination_set();
    // SAFETY: valid set pointer; the old-mask pointer may be null.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// Waits for one of the (blocked) termination signals and returns its number.
pub fn wait_termination_signal() -> io::Result<libc::c_int> {
    let set = termination_set();
    let mut sig: libc::c_int = 0;
    // SAFETY: valid set and out-pointer.
    let r = unsafe { libc::sigwait(&set, &mut sig) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(sig)
}

/// Sends `signal` to process `pid` (errors such as "no such process" are returned).
pub fn kill(pid: i32, signal: libc::c_int) -> io::Result<()> {
    // SAFETY: kill has no memory-safety preconditions.
    check(unsafe { libc::kill(pid, signal) })?;
    Ok(())
}

/// Sets a socket option holding a string (e.g. TCP_CONGESTION) on `fd`.
pub fn set_string_sockopt(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: &str,
) -> io::Result<()> {
    let value = CString::new(value)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in option value"))?;
    let bytes = value.as_bytes();
    // SAFETY: the buffer and its length describe `value`, alive for the call.
    check(unsafe {
        libc::setsockopt(fd.as_raw_fd(), level, name, bytes.as_ptr().cast(), bytes.len() as libc::socklen_t)
    })?;
    Ok(())
}

/// Gives the calling thread real-time (SCHED_FIFO) priority `priority`, so that a loaded
/// machine does not delay the link's deadlines.
pub fn set_realtime_priority(priority: i32) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: pid 0 is the calling thread; `param` is valid for the call.
    check(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) })?;
    Ok(())
}
