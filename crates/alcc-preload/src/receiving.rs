//! The shim's client side: `ALCC_RECEIVER=drwa[:lambda=3,alpha=0.875,floor=5792,rcvbuf=N]`
//! (or `static:rcvbuf=N`) makes every TCP connection the program opens with `connect(2)` a
//! receiver whose advertised window alcc governs ([`alcc::ReceiveWindow`]): an unmodified
//! `curl`, `wget` or Python `urllib` downloading from someone else's CUBIC or BBR server keeps
//! the bottleneck queue short by itself (DRWA, IMC 2012).
//!
//! - `connect`: before the kernel's connect the socket is prepared
//!   ([`alcc::ReceiveWindow::prepare`]: the receive buffer is locked, which decides the window
//!   scale in the SYN); a socket that is not IPv4/IPv6 TCP is left alone. A socket the window
//!   cannot be prepared on fails its connect with the error's errno and a log line (no silent
//!   fallback to the kernel's window).
//! - `read`, `recv`, `recvfrom`, `recvmsg`, `readv`: after a read that returned data the
//!   window control samples TCP_INFO and, once per RTT, sets TCP_WINDOW_CLAMP
//!   ([`alcc::WindowControl::after_read`]), as the paper's kernel patch does when data is
//!   copied to user space. The first read with data also starts the control (the handshake is
//!   over by then, also after a non-blocking connect).
//! - `close` of the connection's last descriptor writes its window figures to the log
//!   ([`alcc::WindowStats`]), and so does the exit for connections still open; `dup*`
//!   share the connection's control.
//!
//! `ALCC_RECEIVER` alone (no `ALCC_CC`) governs only the program's own connections; with
//! both, a program's accepted connections send under `ALCC_CC` and its connections receive
//! under `ALCC_RECEIVER`. A spec that does not parse, or a window this process cannot have
//! (a static buffer above what `net.core.rmem_max` grants an unprivileged process), stops the
//! program before `main` ([`check`] prepares a probe socket).

// Under `cargo test` the exported symbols that call into this module are left out (see sys).
#![cfg_attr(test, allow(dead_code))]

use std::collections::HashMap;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use alcc::{errno_of, ReceiveWindow, WindowControl};

use crate::config::ConfigError;
use crate::{lock, log_line, state, Errno, MAX_FD};

/// The bits of receiving descriptors (one atomic load per interposed read of any other).
static MARKS: [AtomicU64; MAX_FD / 64] = [const { AtomicU64::new(0) }; MAX_FD / 64];

/// Whether a connection on a descriptor above [`MAX_FD`] was left alone (logged once).
static TOO_HIGH_LOGGED: AtomicBool = AtomicBool::new(false);

/// One receiving connection, shared by every descriptor of it the program holds.
struct Connection {
    control: WindowControl,
    /// Whether [`WindowControl::start`] ran (at the first read with data).
    started: bool,
    /// The program's descriptors of this connection.
    descriptors: usize,
    /// The descriptor it was connected as (for log lines).
    first_fd: RawFd,
}

type Table = Mutex<HashMap<RawFd, Arc<Mutex<Connection>>>>;

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Parses `ALCC_RECEIVER`: unset or empty is `kernel` (connections are left alone).
pub fn parse(text: Option<&str>) -> Result<ReceiveWindow, ConfigError> {
    match text.map(str::trim) {
        None | Some("") => Ok(ReceiveWindow::Kernel),
        Some(spec) => spec.parse::<ReceiveWindow>().map_err(|e| ConfigError {
            variable: "ALCC_RECEIVER",
            message: format!(
                "`{spec}`: {e}; expected drwa[:lambda=L,alpha=A,floor=BYTES,rcvbuf=BYTES], \
                 static:rcvbuf=BYTES or kernel"
            ),
        }),
    }
}

/// Prepares `window` on a probe socket once at start, so that a window this process cannot
/// have fails before `main`, not at the program's first connection.
pub fn check(window: &ReceiveWindow) -> Result<(), ConfigError> {
    if *window == ReceiveWindow::Kernel {
        return Ok(());
    }
    let fail = |message: String| ConfigError { variable: "ALCC_RECEIVER", message };
    let probe = crate::sys::receiving::tcp_socket().map_err(|e| fail(format!("a probe TCP socket: {e}")))?;
    window.prepare(probe.as_raw_fd()).map_err(|e| fail(format!("`{window}`: {e}")))?;
    crate::sys::receiving::log_at_exit();
    Ok(())
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

/// Whether `fd` is a receiving connection's descriptor.
pub(crate) fn marked(fd: RawFd) -> bool {
    usize::try_from(fd)
        .is_ok_and(|i| i < MAX_FD && MARKS[i / 64].load(Ordering::Acquire) & (1u64 << (i % 64)) != 0)
}

fn connection(fd: RawFd) -> Option<Arc<Mutex<Connection>>> {
    if !marked(fd) {
        return None;
    }
    lock(table()).get(&fd).cloned()
}

/// Before the real connect(2) of `fd`: prepares the window of an IPv4/IPv6 TCP socket (once;
/// a repeated connect of a non-blocking socket finds it prepared). `Err`: the connect fails
/// with this errno.
pub fn before_connect(fd: RawFd) -> Result<(), Errno> {
    let Some(st) = state() else { return Ok(()) };
    let window = &st.config.receive_window;
    if *window == ReceiveWindow::Kernel || marked(fd) || !crate::sys::receiving::is_inet_stream(fd) {
        return Ok(());
    }
    if usize::try_from(fd).map_or(true, |i| i >= MAX_FD) {
        if !TOO_HIGH_LOGGED.swap(true, Ordering::Relaxed) {
            log_line(&format!("descriptor {fd} is above {MAX_FD}: its connection's window is NOT governed"));
        }
        return Ok(());
    }
    let control = window.prepare(fd).map_err(|e| {
        log_line(&format!("connect fd={fd}: could NOT prepare receive window {window}: {e}"));
        errno_of(&std::io::Error::from(e))
    })?;
    let c = Connection { control, started: false, descriptors: 1, first_fd: fd };
    lock(table()).insert(fd, Arc::new(Mutex::new(c)));
    mark(fd, true);
    log_line(&format!("connect fd={fd} receive window {window}"));
    Ok(())
}

/// After the real connect(2) of `fd` returned `result`: a connection that failed (other than
/// still in progress, or already connected) is forgotten.
pub fn after_connect(fd: RawFd, result: Result<(), Errno>) {
    let failed = matches!(result, Err(e) if ![libc::EINPROGRESS, libc::EALREADY, libc::EISCONN, libc::EINTR].contains(&e));
    if failed && marked(fd) {
        let mut t = lock(table());
        mark(fd, false);
        t.remove(&fd);
    }
}

/// After a read of `fd` returned data: the window control samples and may set the clamp. A
/// failure of the control ends the control of that connection only (logged); the program's
/// read is not affected.
pub fn after_read(fd: RawFd) {
    let Some(c) = connection(fd) else { return };
    let mut c = lock(&c);
    let result = if c.started {
        Ok(())
    } else {
        c.started = true;
        c.control.start(fd).map_err(|e| e.to_string())
    };
    if let Err(e) = result.and_then(|()| c.control.after_read_now(fd).map_err(|e| e.to_string())) {
        log_line(&format!("fd={fd}: receive window control stopped: {e}; {}", c.control.stats()));
        c.control = WindowControl::Kernel;
    }
}

/// Forgets descriptor `fd` (close, or dup2 over it); the last descriptor of a connection
/// writes its window figures to the log.
pub fn forget(fd: RawFd) {
    if !marked(fd) {
        return;
    }
    let c = {
        let mut t = lock(table());
        mark(fd, false);
        t.remove(&fd)
    };
    let Some(c) = c else { return };
    let mut c = lock(&c);
    c.descriptors -= 1;
    if c.descriptors == 0 {
        log_line(&format!("close fd={} {}", c.first_fd, c.control.stats()));
    }
}

/// At exit: the window figures of every connection still open (a program that exits
/// without closing, as wget does, would leave none otherwise).
pub fn log_open_at_exit() {
    let open: Vec<Arc<Mutex<Connection>>> = {
        let t = lock(table());
        let mut seen: Vec<Arc<Mutex<Connection>>> = Vec::new();
        for c in t.values() {
            if !seen.iter().any(|s| Arc::ptr_eq(s, c)) {
                seen.push(Arc::clone(c));
            }
        }
        seen
    };
    for c in open {
        let c = lock(&c);
        log_line(&format!("exit fd={} {}", c.first_fd, c.control.stats()));
    }
}

/// After a successful dup of `old` as `new`: `new` reads the same connection.
pub fn after_dup(old: RawFd, new: RawFd) {
    if old == new || usize::try_from(new).map_or(true, |i| i >= MAX_FD) {
        return;
    }
    let Some(c) = connection(old) else { return };
    lock(&c).descriptors += 1;
    lock(table()).insert(new, c);
    mark(new, true);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receiver_specs_parse_or_name_the_variable() {
        assert_eq!(parse(None).unwrap(), ReceiveWindow::Kernel);
        assert_eq!(parse(Some(" ")).unwrap(), ReceiveWindow::Kernel);
        assert!(matches!(parse(Some("drwa")).unwrap(), ReceiveWindow::Drwa { rcvbuf: None, .. }));
        assert_eq!(parse(Some("static:rcvbuf=484848")).unwrap(), ReceiveWindow::Static { rcvbuf: 484848 });
        for bad in ["drwa:lambda=0", "drwa:beta=1", "static", "bbr"] {
            let e = parse(Some(bad)).unwrap_err();
            assert_eq!(e.variable, "ALCC_RECEIVER");
            assert!(e.message.contains(bad) && e.message.contains("expected drwa"), "{e}");
        }
    }

    #[test]
    fn a_window_the_process_can_have_passes_the_start_check() {
        assert!(check(&ReceiveWindow::Kernel).is_ok());
        assert!(check(&parse(Some("drwa")).unwrap()).is_ok());
        assert!(check(&parse(Some("static:rcvbuf=65536")).unwrap()).is_ok());
    }
}
