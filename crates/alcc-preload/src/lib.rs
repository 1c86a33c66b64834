//! `libalcc_preload.so`: alcc for programs that were not written for it.
//!
//! ```text
//! LD_PRELOAD=target/release/libalcc_preload.so ALCC_CC=copa [ALCC_UNDERLAY=reno]
//!     [ALCC_PORTS=80,8080] [ALCC_MODE=kernel] [ALCC_QUEUE=bytes] [ALCC_LOG=stderr|FILE]
//!     [ALCC_FORK=lazy|start] program args
//! ```
//!
//! Every TCP connection the program accepts (on the listed local ports, or all), or receives
//! from another process over a Unix socket (SCM_RIGHTS, [`after_receive`]), is governed:
//! the library keeps the program's descriptor a real, connected socket (reads, `getpeername`,
//! `setsockopt`, polling for input all reach the kernel as before) and hands a `dup` of it to
//! the alcc engine ([`alcc::AlccStream::from_shared_fd`]). What the program writes
//! (`write`, `send`, `sendto`, `sendmsg`, `writev`, `sendfile`) goes into the flow's queue;
//! the engine's controller decides when it enters the kernel. The engine leaves the open
//! file's O_NONBLOCK alone (it passes MSG_DONTWAIT on every call), so the program's own
//! blocking or non-blocking choice holds: a blocking write waits for room in the queue, a
//! non-blocking one fails with EAGAIN.
//!
//! Listening: `listen` on a TCP socket of a covered port first sets the congestion control
//! its connections start under ([`before_listen`]): the underlay when it is a kernel one,
//! `reno` under the BPF one, never the host's default (a connection accepted under `bbr`
//! keeps the kernel's pacing after the engine switches it to the underlay).
//!
//! Ends: `shutdown(SHUT_WR)` queues the FIN behind the queued bytes
//! ([`alcc::AlccStream::finish`]); `close` of the last descriptor of a connection lets go
//! like close(2) ([`alcc::AlccStream::release`]): the engine still moves what is queued into
//! the kernel under the controller, then drops its descriptor, and the kernel sends the FIN
//! when the socket's last descriptor closes. `dup`, `dup2`, `dup3` and `fcntl(F_DUPFD*)` of a
//! governed descriptor give another governed descriptor of the same flow.
//!
//! Readiness: `epoll_ctl` on a governed descriptor watches the socket for everything but
//! EPOLLOUT and the flow's readiness descriptor for EPOLLOUT, with the program's data, so an
//! epoll loop wakes for output exactly when the queue has room ([`epoll_ctl`]); `poll`,
//! `ppoll` ([`poll`]), `select` and `pselect` likewise. The errors that only the engine's ACK
//! timestamps raise on the shared socket are kept from `epoll_wait`, `epoll_pwait`, `poll`,
//! `ppoll`, `select` and `pselect` (`error_queue`); a real one passes.
//!
//! Not yet governed (see docs/unmodified-programs.md): a connection inherited across `fork` (writes in the child fail with EIO and
//! a log line; connections the child accepts itself are governed by the child's own engine
//! thread, which starts at its first governed connection, or at fork with `ALCC_FORK=start`
//! for programs whose children may not make threads later), io_uring and raw system calls.
//! At exit the engine's own hook ([`alcc::flush_at_exit`]) hands every flow's queued bytes to
//! the kernel within `ALCC_EXIT_LINGER`; `_exit`, which skips atexit hooks, runs it too
//! ([`before_exit`]). Docs: docs/unmodified-programs.md.
//!
//! Client side: `ALCC_RECEIVER=drwa[:spec]` (or `static:rcvbuf=N`) governs the advertised
//! receive window of the TCP connections the program opens (an unmodified curl, wget or
//! Python client as a DRWA receiver); `receiving` (module docs) interposes `connect` and
//! the read family. `ALCC_CC` may then be left unset.
//!
//! Layout: [`config`] reads the environment; this module keeps the table of governed
//! descriptors and does the work; `receiving` does the same for the client side;
//! `error_queue` tells the timestamps' errors from real ones; `sys`
//! holds the exported symbols, the look-up of the real functions and the constructor, and
//! is the only place with `unsafe`.

#![deny(unsafe_code)]

pub mod config;
mod error_queue;
mod receiving;
mod sys;

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use alcc::{errno_of, AlccStream};

use crate::config::{Config, ConfigError, ForkStart, LogTarget};

/// An errno value.
pub type Errno = libc::c_int;

/// Descriptors below this number can be governed: one bit each, read without a lock on
/// every interposed call, so that ungoverned descriptors cost one atomic load.
const MAX_FD: usize = 1 << 16;

/// The bits of governed descriptors.
static MARKS: [AtomicU64; MAX_FD / 64] = [const { AtomicU64::new(0) }; MAX_FD / 64];

/// The last process that governed a connection (its pid): a closed connection leaves the
/// table at once while the engine may still flush it, which `_exit` must wait for.
static SERVED_HERE: AtomicU32 = AtomicU32::new(0);

/// The shim's state, set up by the constructor.
static STATE: OnceLock<State> = OnceLock::new();

/// One governed connection, shared by every descriptor of it the program holds.
struct Governed {
    stream: AlccStream,
    /// The program's descriptors of this connection.
    descriptors: AtomicUsize,
    /// The process whose engine serves the flow (a forked child's copy is not served).
    pid: u32,
    /// The descriptor it was accepted as (for log lines).
    first_fd: RawFd,
    /// Whether the child-process refusal was logged.
    inherited_logged: AtomicBool,
    /// The program's epoll instances watching this flow for EPOLLOUT through its readiness
    /// descriptor, by the program's descriptor they were registered for.
    watchers: Mutex<Vec<(RawFd, RawFd)>>,
}

struct State {
    config: Config,
    table: Mutex<HashMap<RawFd, Arc<Governed>>>,
    log: Mutex<Option<File>>,
    /// Whether a descriptor above [`MAX_FD`] was refused (logged once).
    too_high_logged: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Reads the configuration and checks it against the kernel; called once by the
/// constructor before the program's `main`.
pub fn init() -> Result<(), ConfigError> {
    let config = Config::from_vars(|k| std::env::var(k).ok())?;
    config.check_kernel()?;
    receiving::check(&config.receive_window)?;
    let log = match &config.log {
        LogTarget::File(path) => {
            Some(std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| {
                ConfigError { variable: "ALCC_LOG", message: format!("cannot open {}: {e}", path.display()) }
            })?)
        }
        _ => None,
    };
    let start = match config.ports {
        config::Ports::None => {
            format!("start receiver={} (accepted connections: not governed)", config.receive_window)
        }
        _ => format!(
            "start cc={} underlay={} queue={} ports={:?} receiver={}",
            config.options.cc,
            config.options.underlay,
            config.options.queue_capacity,
            config.ports,
            config.receive_window
        ),
    };
    let fork = config.fork;
    let _ = STATE.set(State {
        config,
        table: Mutex::new(HashMap::new()),
        log: Mutex::new(log),
        too_high_logged: AtomicBool::new(false),
    });
    log_line(&start);
    if fork == ForkStart::AtFork {
        sys::start_engine_in_forked_children()
            .map_err(|e| ConfigError { variable: "ALCC_FORK", message: format!("pthread_atfork: {e}") })?;
    }
    Ok(())
}

/// Fork's child handler under `ALCC_FORK=start`: starts this process's engine thread now,
/// before the program can forbid new threads (vsftpd's RLIMIT_NPROC = 0).
pub fn start_engine_after_fork() {
    if let Err(e) = alcc::driver_stats() {
        log_line(&format!("fork: could NOT start the engine's thread in the child: {e}"));
    }
}

fn state() -> Option<&'static State> {
    STATE.get()
}

/// Writes one log line (`alcc-preload pid=N ...`) where `ALCC_LOG` says.
fn log_line(text: &str) {
    let Some(st) = state() else { return };
    let line = format!("alcc-preload pid={} {text}\n", std::process::id());
    match &st.config.log {
        LogTarget::Off => {}
        LogTarget::Stderr => {
            let _ = io::stderr().write_all(line.as_bytes());
        }
        LogTarget::File(_) => {
            if let Some(f) = lock(&st.log).as_mut() {
                let _ = f.write_all(line.as_bytes());
            }
        }
    }
}

fn mark(fd: RawFd, on: bool) {
    let i = fd as usize;
    let bit = 1u64 << (i % 64);
    if on {
        MARKS[i / 64].fetch_or(bit, Ordering::AcqRel);
    } else {
        MARKS[i / 64].fetch_and(!bit, Ordering::AcqRel);
    }
}

pub(crate) fn marked(fd: RawFd) -> bool {
    usize::try_from(fd)
        .is_ok_and(|i| i < MAX_FD && MARKS[i / 64].load(Ordering::Acquire) & (1u64 << (i % 64)) != 0)
}

/// The governed connection behind `fd`, if any.
fn governed(fd: RawFd) -> Option<Arc<Governed>> {
    if !marked(fd) {
        return None;
    }
    lock(&state()?.table).get(&fd).cloned()
}

/// Whether `fd` is a governed descriptor (for tests and the status of a program).
pub fn is_governed(fd: RawFd) -> bool {
    governed(fd).is_some()
}

fn log_flow(what: &str, g: &Governed) {
    let info = serde_json::to_string(&g.stream.info()).unwrap_or_else(|e| format!("\"{e}\""));
    log_line(&format!("{what} fd={} info={info}", g.first_fd));
}

/// Called before the real listen(2) on `fd`: a TCP socket on a port the configuration covers
/// gets the congestion control its accepted connections are to start under (the kernel
/// underlay, or reno under the BPF one: alcc::underlay::initial). Otherwise they would start
/// under the host's default, and one accepted under bbr keeps the kernel's pacing after the
/// engine switches it to the underlay. Set before listen(2) so that no connection completes
/// its handshake first; a refusal is logged and the program's listen goes on unchanged.
pub fn before_listen(fd: RawFd) {
    let Some(st) = state() else { return };
    let Some(port) = sys::local_tcp_port(fd) else { return };
    if !st.config.ports.covers(port) {
        return;
    }
    let underlay = &st.config.options.underlay;
    match alcc::underlay::set_initial_congestion(fd, underlay) {
        Ok(name) => log_line(&format!("listen fd={fd} port={port} congestion={name}")),
        Err(e) => log_line(&format!(
            "listen fd={fd} port={port}: could NOT set the listener's congestion control for underlay \
             {underlay}: {e}; its connections start under the host's default"
        )),
    }
}

/// Called after the real accept/accept4 returned the connection `fd`: governs it if the
/// configuration covers its local port.
pub fn after_accept(fd: RawFd) {
    govern(fd, "accept");
}

/// Called for each descriptor recvmsg brought (SCM_RIGHTS): a connected TCP socket on a
/// covered port is governed as an accepted one (a listening socket or anything else is not).
pub fn after_receive(fd: RawFd) {
    if sys::has_peer(fd) {
        govern(fd, "received");
    }
}

/// Governs the connection `fd` if the configuration covers its local port; `how` it came
/// (`accept`, `received`) names the log line.
fn govern(fd: RawFd, how: &str) {
    let Some(st) = state() else { return };
    let Some(port) = sys::local_tcp_port(fd) else { return };
    if !st.config.ports.covers(port) {
        return;
    }
    if usize::try_from(fd).map_or(true, |i| i >= MAX_FD) {
        if !st.too_high_logged.swap(true, Ordering::Relaxed) {
            log_line(&format!("descriptor {fd} is above {MAX_FD}: its connection is NOT governed"));
        }
        return;
    }
    let result = sys::dup_cloexec(fd)
        .map_err(alcc::Error::Io)
        .and_then(|dup| AlccStream::from_shared_fd(dup, &st.config.options));
    match result {
        Ok(stream) => {
            let g = Arc::new(Governed {
                stream,
                descriptors: AtomicUsize::new(1),
                pid: std::process::id(),
                first_fd: fd,
                inherited_logged: AtomicBool::new(false),
                watchers: Mutex::new(Vec::new()),
            });
            lock(&st.table).insert(fd, g);
            mark(fd, true);
            SERVED_HERE.store(std::process::id(), Ordering::Relaxed);
            log_line(&format!("{how} fd={fd} port={port} cc={}", st.config.options.cc));
        }
        Err(e) => log_line(&format!("{how} fd={fd}: could NOT govern the connection: {e}")),
    }
}

/// The flow behind `fd` if this process serves it; an inherited one gives EIO.
fn flow(fd: RawFd) -> Option<Result<Arc<Governed>, Errno>> {
    let g = governed(fd)?;
    if g.pid != std::process::id() {
        if !g.inherited_logged.swap(true, Ordering::Relaxed) {
            log_line(&format!(
                "fd={fd} was governed by the parent process {}; writing to it in a forked child is not supported (EIO)",
                g.pid
            ));
        }
        return Some(Err(libc::EIO));
    }
    Some(Ok(g))
}

/// A write to a governed descriptor: `bufs` in order, as far as the queue takes them. A
/// blocking call waits for room before the first byte only (a partial count afterwards, as
/// a socket's write may return). `None`: not governed, call the real function.
pub fn write(fd: RawFd, bufs: &[&[u8]], dontwait: bool) -> Option<Result<usize, Errno>> {
    let g = match flow(fd)? {
        Ok(g) => g,
        Err(e) => return Some(Err(e)),
    };
    let nonblocking = dontwait || sys::is_nonblocking(fd);
    let mut total = 0usize;
    for buf in bufs.iter().filter(|b| !b.is_empty()) {
        let mut off = 0;
        while off < buf.len() {
            match g.stream.write_with(&buf[off..], nonblocking || total > 0) {
                Ok(n) => {
                    off += n;
                    total += n;
                }
                Err(e) if total > 0 && e.kind() == io::ErrorKind::WouldBlock => return Some(Ok(total)),
                Err(e) if total > 0 => {
                    // The bytes taken so far are the call's result; the error comes next time.
                    let _ = e;
                    return Some(Ok(total));
                }
                Err(e) => return Some(Err(errno_of(&e))),
            }
        }
    }
    Some(Ok(total))
}

/// Largest piece of a file `sendfile` reads into memory at once.
const SENDFILE_PIECE: usize = 256 << 10;

/// sendfile(2) to a governed descriptor: reads at most 256 KiB of the file
/// at the offset (`offset`, or the file's position when `None`) and queues what the flow
/// takes; the offset or position moves by that much. The whole file is never in memory.
pub fn sendfile(
    out: RawFd,
    input: RawFd,
    offset: Option<&mut i64>,
    count: usize,
) -> Option<Result<usize, Errno>> {
    if !marked(out) {
        return None;
    }
    let Some(at) = offset.as_deref().copied().map_or_else(|| sys::file_position(input), Ok).ok() else {
        return Some(Err(libc::ESPIPE));
    };
    let mut buf = vec![0u8; count.min(SENDFILE_PIECE)];
    let n = match sys::pread(input, &mut buf, at) {
        Ok(n) => n,
        Err(e) => return Some(Err(e)),
    };
    if n == 0 {
        return Some(Ok(0));
    }
    let taken = match write(out, &[&buf[..n]], false)? {
        Ok(k) => k,
        Err(e) => return Some(Err(e)),
    };
    let end = at + taken as i64;
    match offset {
        Some(o) => *o = end,
        None => {
            if let Err(e) = sys::set_file_position(input, end) {
                return Some(Err(e));
            }
        }
    }
    Some(Ok(taken))
}

/// Forgets descriptor `fd` of a governed connection (close, or dup2 over it); the flow is
/// let go (flushed in the background, close(2) semantics) when its last descriptor goes.
/// Returns whether `fd` was governed; the caller closes the descriptor itself.
pub fn forget(fd: RawFd) -> bool {
    receiving::forget(fd);
    error_queue::closing(fd);
    if !marked(fd) {
        return false;
    }
    let Some(st) = state() else { return false };
    let g = {
        let mut table = lock(&st.table);
        mark(fd, false);
        table.remove(&fd)
    };
    let Some(g) = g else { return false };
    // An epoll registration belongs to the open file, which the engine's dup keeps open:
    // the program's registrations of this descriptor go now, as close(2) would end them.
    let watching: Vec<RawFd> = {
        let mut w = lock(&g.watchers);
        let (mine, rest) = w.drain(..).partition(|&(f, _)| f == fd);
        *w = rest;
        mine.into_iter().map(|(_, ep)| ep).collect()
    };
    for ep in watching {
        let _ = sys::epoll_del(ep, fd);
        if let Ok(w) = g.stream.writable_fd() {
            let _ = sys::epoll_del(ep, w);
        }
    }
    if g.descriptors.fetch_sub(1, Ordering::AcqRel) == 1 && g.pid == std::process::id() {
        // The engine flushes in the background; dropping our handle (here, or when a write
        // in another thread returns) lets its descriptor close once the flush is done.
        g.stream.release();
        log_flow("close", &g);
    }
    true
}

/// Before `_exit`: the engine's exit flush ([`alcc::flush_at_exit`] with `ALCC_EXIT_LINGER`),
/// which exit(3) runs through its atexit hook and `_exit` skips, when this process serves any
/// governed connection. A process without one (a forked child that never accepted) ends at
/// once.
pub fn before_exit() {
    if state().is_some() && SERVED_HERE.load(Ordering::Relaxed) == std::process::id() {
        let left = alcc::flush_at_exit(alcc::exit::exit_linger());
        if left > 0 {
            log_line(&format!("_exit: {left} connection(s) still held queued bytes after ALCC_EXIT_LINGER"));
        }
    }
}

/// shutdown(2) on a governed descriptor: SHUT_WR and SHUT_RDWR queue the FIN behind the
/// queued bytes (the engine sends it after the flush); the receiving half goes to the
/// kernel at once. Returns the `how` still to pass to the real shutdown, if any.
pub fn shutdown(fd: RawFd, how: libc::c_int) -> Option<Result<Option<libc::c_int>, Errno>> {
    let g = match flow(fd)? {
        Ok(g) => g,
        Err(e) => return Some(Err(e)),
    };
    Some(Ok(match how {
        libc::SHUT_WR => {
            g.stream.finish();
            None
        }
        libc::SHUT_RDWR => {
            g.stream.finish();
            Some(libc::SHUT_RD)
        }
        other => Some(other),
    }))
}

/// After a successful dup of `old` as `new`: `new` is another descriptor of the same flow.
pub fn after_dup(old: RawFd, new: RawFd) {
    receiving::after_dup(old, new);
    if old == new || usize::try_from(new).map_or(true, |i| i >= MAX_FD) {
        return;
    }
    let Some(g) = governed(old) else { return };
    let Some(st) = state() else { return };
    g.descriptors.fetch_add(1, Ordering::AcqRel);
    lock(&st.table).insert(new, g);
    mark(new, true);
}

/// epoll_ctl(2) on a governed descriptor: the socket itself is watched for everything but
/// EPOLLOUT (input, errors, hang-up reach the program as before), and EPOLLOUT comes from
/// the flow's readiness descriptor, registered in the same epoll instance with the same
/// data (and the program's EPOLLET / EPOLLONESHOT): the program wakes for output exactly
/// when alcc's queue has room. `None`: not governed, call the real function.
pub fn epoll_ctl(
    ep: RawFd,
    op: libc::c_int,
    fd: RawFd,
    event: Option<libc::epoll_event>,
) -> Option<Result<(), Errno>> {
    let g = match flow(fd)? {
        Ok(g) => g,
        Err(_) => return None,
    };
    let wfd = match g.stream.writable_fd() {
        Ok(w) => w,
        Err(e) => return Some(Err(errno_of(&e))),
    };
    let mut watchers = lock(&g.watchers);
    let watching = watchers.contains(&(fd, ep));
    match (op, event) {
        (libc::EPOLL_CTL_ADD | libc::EPOLL_CTL_MOD, Some(ev)) => {
            let out = ev.events & libc::EPOLLOUT as u32 != 0;
            let socket_ev = libc::epoll_event { events: ev.events & !(libc::EPOLLOUT as u32), u64: ev.u64 };
            if let Err(e) = sys::epoll_ctl_real(ep, op, fd, Some(socket_ev)) {
                return Some(Err(e));
            }
            error_queue::registered(ep, fd, ev.u64);
            let keep = (libc::EPOLLET | libc::EPOLLONESHOT) as u32;
            let ready_ev =
                libc::epoll_event { events: libc::EPOLLOUT as u32 | (ev.events & keep), u64: ev.u64 };
            let r = match (out, watching) {
                (true, false) => {
                    sys::epoll_ctl_real(ep, libc::EPOLL_CTL_ADD, wfd, Some(ready_ev)).map(|()| {
                        watchers.push((fd, ep));
                    })
                }
                (true, true) => sys::epoll_ctl_real(ep, libc::EPOLL_CTL_MOD, wfd, Some(ready_ev)),
                (false, true) => sys::epoll_del(ep, wfd).map(|()| watchers.retain(|&w| w != (fd, ep))),
                (false, false) => Ok(()),
            };
            Some(r)
        }
        (libc::EPOLL_CTL_DEL, _) => {
            error_queue::unregistered(ep, fd);
            if watching {
                let _ = sys::epoll_del(ep, wfd);
                watchers.retain(|&w| w != (fd, ep));
            }
            Some(sys::epoll_ctl_real(ep, op, fd, event))
        }
        _ => None,
    }
}

/// poll(2)/ppoll(2) over descriptors some of which are governed: a governed entry that asks
/// for POLLOUT is polled without it, and its flow's readiness descriptor is polled for
/// POLLOUT beside it; the program sees POLLOUT exactly when alcc's queue has room. `poll`
/// runs the real call on the rewritten array. `None`: no governed entry asks for POLLOUT,
/// call the real function on the program's array.
pub fn poll(
    fds: &mut [libc::pollfd],
    poll: impl FnOnce(&mut [libc::pollfd]) -> libc::c_int,
) -> Option<libc::c_int> {
    let out = libc::POLLOUT;
    let mut extra: Vec<(usize, libc::pollfd)> = Vec::new();
    for (i, p) in fds.iter().enumerate() {
        if p.events & out == 0 || !marked(p.fd) {
            continue;
        }
        let Some(Ok(g)) = flow(p.fd) else { continue };
        if let Ok(w) = g.stream.writable_fd() {
            extra.push((i, libc::pollfd { fd: w, events: out, revents: 0 }));
        }
    }
    if extra.is_empty() {
        return None;
    }
    let mut all: Vec<libc::pollfd> = fds.to_vec();
    for &(i, _) in &extra {
        all[i].events &= !out;
    }
    all.extend(extra.iter().map(|&(_, p)| p));
    let r = poll(&mut all);
    if r < 0 {
        return Some(r);
    }
    for (p, q) in fds.iter_mut().zip(&all) {
        p.revents = q.revents;
    }
    for (k, &(i, _)) in extra.iter().enumerate() {
        if all[fds.len() + k].revents & out != 0 {
            fds[i].revents |= out;
        }
    }
    Some(fds.iter().filter(|p| p.revents != 0).count() as libc::c_int)
}

/// The readiness descriptors that stand in for the governed descriptors among `fds` (the
/// program's descriptors in a `select` write set): pairs of (program's, readiness).
pub fn select_substitutes(fds: impl Iterator<Item = RawFd>) -> Vec<(RawFd, RawFd)> {
    fds.filter(|&fd| marked(fd))
        .filter_map(|fd| match flow(fd)? {
            Ok(g) => g.stream.writable_fd().ok().map(|w| (fd, w)),
            Err(_) => None,
        })
        .collect()
}
