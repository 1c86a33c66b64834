//! The C ABI of alcc: `libalcc.so`/`libalcc.a` and `include/alcc.h`.
//!
//! Drop-in calls in the spirit of the ALCC paper: `alcc_accept`, `alcc_connect`,
//! `alcc_send`, `alcc_recv`, `alcc_close` take the arguments of the socket calls they
//! replace and return -1 with `errno` on failure; `alcc_set_cc` picks the controller and the
//! kernel congestion control, `alcc_get_info` reads a connection's state. The exported
//! functions and every pointer they touch live in [`sys`]; this module keeps the table of
//! connections by descriptor and does the work in safe Rust. No panic crosses the boundary.
#![warn(missing_docs)]
#![deny(unsafe_code)]

#[allow(unsafe_code)] // the exported C functions and every raw pointer; each block has a SAFETY line
pub mod sys;

pub mod role;

#[cfg(test)]
mod layout_tests;

use std::collections::HashMap;
use std::io;
use std::net::TcpStream;
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use engine::{AlccReceiver, AlccStream, FlowInfo, Mode, Options, ReceiveWindow, WindowControl};

use crate::role::Role;

/// `struct alcc_info` of `alcc.h`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
#[allow(missing_docs)]
pub struct CInfo {
    pub window: u64,
    pub pacing_rate: u64,
    pub bytes_in_flight: u64,
    pub max_bytes_in_flight: u64,
    pub queued: u64,
    pub bytes_written: u64,
    pub bytes_acked: u64,
    pub losses: u64,
    pub srtt_us: u64,
    pub min_rtt_us: u64,
    pub kernel_cwnd: u64,
    pub kernel_delivery_rate: u64,
    pub kernel_rtt_us: u32,
    pub kernel_min_rtt_us: u32,
    pub kernel_notsent: u32,
    pub kernel_total_retrans: u32,
    pub controller: [u8; 64],
    pub underlay: [u8; 16],
    pub prior_congestion: [u8; 16],
}

fn c_string<const N: usize>(s: &str) -> [u8; N] {
    let mut out = [0u8; N];
    let n = s.len().min(N - 1);
    out[..n].copy_from_slice(&s.as_bytes()[..n]);
    out
}

impl From<&FlowInfo> for CInfo {
    fn from(i: &FlowInfo) -> CInfo {
        let m = i.metrics.as_ref();
        let us = |d: Option<Duration>| d.map_or(0, |d| d.as_micros() as u64);
        CInfo {
            window: i.window,
            pacing_rate: i.pacing_rate.unwrap_or(0),
            bytes_in_flight: i.bytes_in_flight,
            max_bytes_in_flight: i.max_bytes_in_flight,
            queued: i.queued,
            bytes_written: i.bytes_written,
            bytes_acked: i.bytes_acked,
            losses: i.losses,
            srtt_us: us(m.and_then(|m| m.srtt)),
            min_rtt_us: us(m.and_then(|m| m.min_rtt)),
            kernel_cwnd: i.kernel_cwnd,
            kernel_delivery_rate: i.kernel_delivery_rate,
            kernel_rtt_us: i.kernel_rtt_us,
            kernel_min_rtt_us: i.kernel_min_rtt_us,
            kernel_notsent: i.kernel_notsent,
            kernel_total_retrans: i.kernel_total_retrans,
            controller: c_string(&i.controller),
            underlay: c_string(&i.underlay),
            prior_congestion: c_string(&i.prior_congestion),
        }
    }
}

/// An errno value.
pub type Errno = libc::c_int;

/// The errno for an I/O error (engine errors carry a kind, not always an OS code).
pub use engine::errno_of;

/// One alcc connection: the sending side, or (framed mode) the receiving one.
enum Conn {
    Sending(Box<AlccStream>),
    Receiving(AlccReceiver),
}

impl Conn {
    fn send(&self, buf: &[u8], nonblocking: bool) -> io::Result<usize> {
        match self {
            Conn::Sending(s) => s.write_with(buf, nonblocking),
            // Kernel mode's receiver (a receive window chosen) sends requests; framed
            // mode's refuses with EOPNOTSUPP.
            Conn::Receiving(r) => r.write_with(buf, nonblocking),
        }
    }

    fn recv(&self, buf: &mut [u8], nonblocking: bool) -> io::Result<usize> {
        match self {
            Conn::Sending(s) => s.read_with(buf, nonblocking),
            Conn::Receiving(r) => r.read_with(buf, nonblocking),
        }
    }

    fn close(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Conn::Sending(s) => s.close_ref(timeout),
            Conn::Receiving(r) => r.close_ref(timeout),
        }
    }

    fn mode(&self) -> Mode {
        match self {
            Conn::Sending(s) => s.mode(),
            Conn::Receiving(r) => r.mode(),
        }
    }
}

#[derive(Default)]
struct Table {
    /// Connections running under alcc, by descriptor.
    conns: HashMap<RawFd, Arc<Conn>>,
    /// Choices made with `alcc_set_cc` on listening or not yet connected sockets.
    pending: HashMap<RawFd, (String, String)>,
    /// Modes chosen with `alcc_set_mode` on listening or not yet connected sockets.
    modes: HashMap<RawFd, Mode>,
    /// Receive windows chosen with `alcc_set_receive_window` on not yet connected sockets.
    windows: HashMap<RawFd, ReceiveWindow>,
    /// Roles chosen with `alcc_set_role` on listening or not yet connected sockets.
    roles: HashMap<RawFd, Role>,
    /// Groups and weights chosen with `alcc_set_group` on listening or not yet connected
    /// sockets (`None`: the grouping of the environment).
    groups: HashMap<RawFd, (Option<engine::Grouping>, f64)>,
}

fn table() -> MutexGuard<'static, Table> {
    static TABLE: OnceLock<Mutex<Table>> = OnceLock::new();
    TABLE.get_or_init(Mutex::default).lock().unwrap_or_else(|p| p.into_inner())
}

fn env_options() -> Options {
    let cc = std::env::var("ALCC_CC").unwrap_or_else(|_| "fixed".into());
    let underlay = std::env::var("ALCC_UNDERLAY").unwrap_or_else(|_| "reno".into());
    // Like ALCC_MODE here, a value that does not parse keeps the default (the preload shim
    // refuses it at start instead).
    let grouping = std::env::var("ALCC_GROUP").ok().and_then(|g| g.parse().ok()).unwrap_or_default();
    let weight = std::env::var("ALCC_WEIGHT")
        .ok()
        .and_then(|w| engine::coupling::parse_weight(&w).ok())
        .unwrap_or(1.0);
    Options::with_cc(&cc).underlay(&underlay).grouping(grouping).weight(weight)
}

/// The mode from `ALCC_MODE` (`kernel`, the default, or `framed`).
fn env_mode() -> Mode {
    std::env::var("ALCC_MODE").ok().and_then(|m| m.parse().ok()).unwrap_or_default()
}

fn mode_for(fd: RawFd) -> Mode {
    table().modes.get(&fd).copied().unwrap_or_else(env_mode)
}

/// The role chosen for `fd` (`alcc_set_role`, else `ALCC_ROLE`), if any.
fn chosen_role(fd: RawFd) -> Option<Role> {
    let chosen = table().roles.get(&fd).copied();
    chosen.or_else(|| std::env::var("ALCC_ROLE").ok().and_then(|r| r.parse().ok()))
}

fn options_for(fd: RawFd) -> Options {
    let mode = mode_for(fd);
    let t = table();
    let mut options = match t.pending.get(&fd) {
        Some((cc, underlay)) => {
            let env = env_options();
            Options::with_cc(cc).underlay(underlay).grouping(env.grouping).weight(env.weight)
        }
        None => env_options(),
    };
    if let Some((grouping, weight)) = t.groups.get(&fd) {
        if let Some(g) = grouping {
            options.grouping = g.clone();
        }
        options.weight = *weight;
    }
    options.mode(mode)
}

fn conn(fd: RawFd) -> Result<Arc<Conn>, Errno> {
    table().conns.get(&fd).cloned().ok_or(libc::EBADF)
}

/// Before accept(2) on the listening socket `fd` (`connected` false) or connect(2) of `fd`
/// (`connected` true): when the connection is to send, the socket gets the underlay's initial
/// congestion control ([`engine::underlay::set_initial_congestion`]), so that the connection
/// does not start under the host's default (bbr's init turns the kernel's pacing on, and it
/// stays on under the underlay). On a listener, connections already in its backlog keep the
/// one they started under: `alcc_set_cc` before listen(2) sets it for every connection.
pub fn prepare_sending(fd: RawFd, connected: bool) -> Result<(), Errno> {
    let options = options_for(fd);
    let role = chosen_role(fd).unwrap_or_else(|| Role::default_for(options.mode, connected));
    if role != Role::Send {
        return Ok(());
    }
    engine::underlay::set_initial_congestion(fd, &options.underlay).map(drop).map_err(|e| underlay_errno(&e))
}

/// Puts the connected socket `tcp` (descriptor `fd`) under alcc with the options and role
/// chosen for `chosen_on`. Without a chosen role, the accepting side sends and the connecting
/// side (`connected`) receives in framed mode ([`Role::default_for`]). A role the mode cannot
/// take (receiving in kernel mode) is EINVAL; as with any failure here, `tcp` is closed.
pub fn adopt(fd: RawFd, tcp: TcpStream, chosen_on: RawFd, connected: bool) -> Result<(), Errno> {
    let options = options_for(chosen_on);
    let role = chosen_role(chosen_on).unwrap_or_else(|| Role::default_for(options.mode, connected));
    if !role.allowed_in(options.mode) {
        return Err(libc::EINVAL);
    }
    let conn = match role {
        Role::Receive => AlccReceiver::from_tcp(tcp, &options).map(Conn::Receiving),
        Role::Send => AlccStream::from_tcp(tcp, &options).map(|s| Conn::Sending(Box::new(s))),
    };
    let conn = conn.map_err(|e| errno_of(&io::Error::from(e)))?;
    let mut t = table();
    t.pending.remove(&fd);
    t.modes.remove(&fd);
    t.roles.remove(&fd);
    t.groups.remove(&fd);
    t.conns.insert(fd, Arc::new(conn));
    Ok(())
}

/// Before `connect(2)`: the receive window chosen for `fd` with `alcc_set_receive_window`
/// prepares the socket (its buffer must be in place before the handshake); `None` when none
/// was chosen.
pub fn prepare_connect(fd: RawFd) -> Result<Option<WindowControl>, Errno> {
    let Some(window) = table().windows.get(&fd).cloned() else { return Ok(None) };
    window.prepare(fd).map(Some).map_err(|e| errno_of(&io::Error::from(e)))
}

/// After `connect(2)` of a socket [`prepare_connect`] prepared: the connection is a kernel-mode
/// receiver whose advertised window `control` governs.
pub fn adopt_receiver(fd: RawFd, tcp: TcpStream, control: WindowControl) -> Result<(), Errno> {
    let receiver = AlccReceiver::from_prepared(tcp, control).map_err(|e| errno_of(&io::Error::from(e)))?;
    let mut t = table();
    t.pending.remove(&fd);
    t.modes.remove(&fd);
    t.windows.remove(&fd);
    t.roles.remove(&fd);
    t.conns.insert(fd, Arc::new(Conn::Receiving(receiver)));
    Ok(())
}

/// `alcc_set_receive_window`: on a not yet connected socket (EISCONN on a connection);
/// EINVAL for a malformed spec or a mode other than kernel.
pub fn set_receive_window(fd: RawFd, spec: &str) -> Result<(), Errno> {
    let window: ReceiveWindow = spec.parse().map_err(|_| libc::EINVAL)?;
    if mode_for(fd) != Mode::Kernel {
        return Err(libc::EINVAL);
    }
    let mut t = table();
    if t.conns.contains_key(&fd) {
        return Err(libc::EISCONN);
    }
    t.windows.insert(fd, window);
    Ok(())
}

/// `alcc_send` on a connection.
pub fn send(fd: RawFd, buf: &[u8], flags: libc::c_int) -> Result<usize, Errno> {
    conn(fd)?.send(buf, flags & libc::MSG_DONTWAIT != 0).map_err(|e| errno_of(&e))
}

/// `alcc_sendfile` on a connection: `count` bytes of `file` from `offset`, queued by
/// reference ([`AlccStream::send_file_with`]); returns the bytes taken.
pub fn sendfile(
    fd: RawFd,
    file: std::os::fd::BorrowedFd<'_>,
    offset: u64,
    count: usize,
    flags: libc::c_int,
) -> Result<usize, Errno> {
    match &*conn(fd)? {
        Conn::Sending(s) => s
            .send_file_with(file, offset, count as u64, flags & libc::MSG_DONTWAIT != 0)
            .map(|n| usize::try_from(n).unwrap_or(count))
            .map_err(|e| errno_of(&e)),
        Conn::Receiving(_) => Err(libc::EOPNOTSUPP),
    }
}

/// `alcc_recv` on a connection.
pub fn recv(fd: RawFd, buf: &mut [u8], flags: libc::c_int) -> Result<usize, Errno> {
    conn(fd)?.recv(buf, flags & libc::MSG_DONTWAIT != 0).map_err(|e| errno_of(&e))
}

/// What `alcc_close` must still do after the table was updated.
pub enum Closing {
    /// An alcc connection: flushed here; its descriptor closes when the engine lets go.
    Flushed(Result<(), Errno>),
    /// Not an alcc connection: the caller closes the descriptor itself.
    Plain,
}

/// `alcc_close`: flushes and forgets an alcc connection.
pub fn close(fd: RawFd) -> Closing {
    let stream = {
        let mut t = table();
        t.pending.remove(&fd);
        t.modes.remove(&fd);
        t.windows.remove(&fd);
        t.roles.remove(&fd);
        t.conns.remove(&fd)
    };
    let Some(conn) = stream else { return Closing::Plain };
    let timeout =
        std::env::var("ALCC_CLOSE_TIMEOUT").ok().and_then(|s| s.parse().ok()).map(Duration::from_secs_f64);
    Closing::Flushed(conn.close(timeout).map_err(|e| errno_of(&e)))
}

/// `alcc_exit_flush`: [`engine::flush_at_exit`] with a linger in milliseconds; the number of
/// connections that still held queued bytes when it ran out.
pub fn exit_flush(linger_ms: u32) -> libc::c_int {
    let left = engine::flush_at_exit(Duration::from_millis(u64::from(linger_ms)));
    libc::c_int::try_from(left).unwrap_or(libc::c_int::MAX)
}

/// `alcc_set_cc`.
pub fn set_cc(fd: RawFd, spec: &str, underlay: Option<&str>) -> Result<(), Errno> {
    let existing = table().conns.get(&fd).cloned();
    let mode = existing.as_ref().map_or_else(|| mode_for(fd), |c| c.mode());
    engine::check_spec_for(spec, mode).map_err(|_| libc::EINVAL)?;
    match existing.as_deref() {
        // The receiving side runs no controller (the sender's Hello chose its model).
        Some(Conn::Receiving(_)) => Err(libc::EOPNOTSUPP),
        Some(Conn::Sending(stream)) => {
            if let Some(u) = underlay {
                stream.set_underlay(u).map_err(|e| underlay_errno(&e))?;
            }
            stream.set_cc(spec).map_err(|_| libc::EINVAL)
        }
        None => {
            let mut t = table();
            let prev_underlay = t.pending.get(&fd).map(|p| p.1.clone());
            let underlay =
                underlay.map(str::to_string).or(prev_underlay).unwrap_or_else(|| env_options().underlay);
            match underlay.parse::<engine::Underlay>().map_err(|_| libc::EINVAL)? {
                // Loads the BPF underlay now, so that a missing privilege, BTF or build
                // is this call's error rather than the later accept's.
                engine::Underlay::Alcc(_) => {
                    drop(engine::underlay::loader::acquire().map_err(|e| e.errno())?)
                }
                engine::Underlay::Kernel(name) => {
                    engine::underlay::check(&name).map_err(|e| underlay_errno(&e))?;
                }
            }
            // The socket itself starts under it now: a listener's later connections, or this
            // socket's own connection, are never initialised under the host's default.
            engine::underlay::set_initial_congestion(fd, &underlay).map_err(|e| underlay_errno(&e))?;
            t.pending.insert(fd, (spec.to_string(), underlay));
            Ok(())
        }
    }
}

/// The errno of a refused underlay: the BPF underlay's own (EPERM without privilege,
/// EOPNOTSUPP without BTF or without the program in this build); for a kernel name the
/// kernel's own (EPERM: not in net.ipv4.tcp_allowed_congestion_control for this unprivileged
/// process, ENOENT: not in this kernel); EINVAL for an unknown `alcc:` policy.
fn underlay_errno(e: &engine::Error) -> Errno {
    match e {
        engine::Error::Bpf(b) => b.errno(),
        engine::Error::Underlay { source, .. } => source.raw_os_error().unwrap_or(libc::ENOENT),
        _ => libc::EINVAL,
    }
}

/// `alcc_set_mode`: on a listening or not yet connected socket (EISCONN on a connection).
pub fn set_mode(fd: RawFd, mode: &str) -> Result<(), Errno> {
    let mode: Mode = mode.parse().map_err(|_| libc::EINVAL)?;
    if mode == Mode::Udp {
        // The C calls wrap TCP sockets; UDP mode is in the Rust API and the CLI.
        return Err(libc::EOPNOTSUPP);
    }
    let mut t = table();
    if t.conns.contains_key(&fd) {
        return Err(libc::EISCONN);
    }
    t.modes.insert(fd, mode);
    Ok(())
}

/// `alcc_writable_fd`: the sending side's readiness descriptor.
pub fn writable_fd(fd: RawFd) -> Result<RawFd, Errno> {
    match conn(fd)?.as_ref() {
        Conn::Sending(s) => s.writable_fd().map_err(|e| errno_of(&e)),
        Conn::Receiving(_) => Err(libc::EOPNOTSUPP),
    }
}

/// `alcc_set_role`: `send` or `receive`, on a listening or not yet connected socket (EISCONN
/// on a connection, EINVAL for another name or for `receive` on a socket already set to
/// kernel mode; a kernel-mode connection whose role is `receive` fails when it is adopted).
pub fn set_role(fd: RawFd, role: &str) -> Result<(), Errno> {
    let role: Role = role.parse().map_err(|_| libc::EINVAL)?;
    let mut t = table();
    if t.conns.contains_key(&fd) {
        return Err(libc::EISCONN);
    }
    if t.modes.get(&fd).is_some_and(|m| !role.allowed_in(*m)) {
        return Err(libc::EINVAL);
    }
    t.roles.insert(fd, role);
    Ok(())
}

/// `alcc_set_group`: on a listening or not yet connected socket, the group (`None`: keep the
/// environment's) and weight of its later connections; on a sending connection, its weight
/// from now on (a group given there is EISCONN: a flow stays in the group it started in).
/// EINVAL for a malformed name or a weight not finite and above zero.
pub fn set_group(fd: RawFd, group: Option<&str>, weight: f64) -> Result<(), Errno> {
    let weight = engine::coupling::check_weight(weight).map_err(|_| libc::EINVAL)?;
    let grouping = group.map(str::parse::<engine::Grouping>).transpose().map_err(|_| libc::EINVAL)?;
    let existing = table().conns.get(&fd).cloned();
    match existing.as_deref() {
        Some(Conn::Receiving(_)) => Err(libc::EOPNOTSUPP),
        Some(Conn::Sending(_)) if grouping.is_some() => Err(libc::EISCONN),
        Some(Conn::Sending(stream)) => stream.set_weight(weight).map_err(|_| libc::EINVAL),
        None => {
            table().groups.insert(fd, (grouping, weight));
            Ok(())
        }
    }
}

/// `alcc_get_info`.
pub fn info(fd: RawFd) -> Result<CInfo, Errno> {
    match conn(fd)?.as_ref() {
        Conn::Sending(s) => Ok(CInfo::from(&s.info())),
        Conn::Receiving(_) => Err(libc::EOPNOTSUPP),
    }
}
