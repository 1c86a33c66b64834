//! The congestion control a socket has when alcc takes it over (`FlowInfo::prior_congestion`),
//! on loopback: a socket accepted by [`AlccListener`] (bound, or wrapped with
//! `from_listener`) or [`AsyncAlccListener`], or connected by `AlccStream::connect`, starts
//! under the underlay, not under the host's default; a socket a program accepted itself under
//! another congestion control is reported as such. A socket started under `bbr` keeps the
//! kernel's pacing after alcc switches it to its underlay (src/underlay/initial.rs), which is
//! why this matters.
//!
//! Every congestion control these tests choose comes from
//! net.ipv4.tcp_allowed_congestion_control (no privilege needed, no sysctl changed). Each
//! allowed name is checked, so on a host whose default is any one of them the others show that
//! the listener's choice, not the default, is what the accepted socket starts under.

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::thread;
use std::time::Duration;

use alcc::{AlccListener, AlccStream, Grouping, Options};

/// The names unprivileged processes may choose here.
fn allowed() -> Vec<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// The host's default congestion control.
fn host_default() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap_or_default().trim().into()
}

/// Whether the test can tell a listener's choice from the host's default: an allowed name
/// other than the default exists (a visible skip otherwise; a failure in CI).
fn distinguishable(allowed: &[String]) -> bool {
    let default = host_default();
    alcc_testenv::needs()
        .that(
            allowed.iter().any(|n| *n != default),
            &format!(
                "needs a congestion control in net.ipv4.tcp_allowed_congestion_control (`{}`) other \
                 than the default `{default}`",
                allowed.join(" ")
            ),
        )
        .check()
        .is_some()
}

/// Runs `check` with every allowed name, when one of them differs from the host's default
/// (otherwise the skip [`distinguishable`] reports).
fn each_allowed_name(mut check: impl FnMut(&str)) {
    let allowed = allowed();
    if distinguishable(&allowed) {
        allowed.iter().for_each(|name| check(name));
    }
}

fn solo(underlay: &str) -> Options {
    Options::with_cc("fixed:window=20").grouping(Grouping::None).underlay(underlay)
}

/// Reads `s` until the sender closes; the bytes read.
fn read_all(mut s: TcpStream) -> u64 {
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    buf.len() as u64
}

/// Connects to `addr` and reads until the server closes.
fn client(addr: std::net::SocketAddr) -> thread::JoinHandle<u64> {
    thread::spawn(move || read_all(TcpStream::connect(addr).unwrap()))
}

/// Sends a few bytes on `stream` and closes it; returns what the flow reported.
fn finish(mut stream: AlccStream, peer: thread::JoinHandle<u64>) -> alcc::FlowInfo {
    use std::io::Write;
    stream.write_all(&[7u8; 10_000]).unwrap();
    let info = stream.info();
    stream.close(Some(Duration::from_secs(20))).unwrap();
    assert_eq!(peer.join().unwrap(), 10_000);
    info
}

#[test]
fn alcc_listener_accepts_under_its_underlay_not_the_host_default() {
    each_allowed_name(|name| {
        let listener = AlccListener::bind("127.0.0.1:0", solo(name)).unwrap();
        assert_eq!(alcc::sys::get_congestion(listener.as_raw_fd()).unwrap(), name);
        let peer = client(listener.local_addr().unwrap());
        let (stream, _) = listener.accept().unwrap();
        let info = finish(stream, peer);
        assert_eq!(info.prior_congestion, name, "host default `{}`: {info:?}", host_default());
        assert_eq!(info.underlay, name);
    });
}

#[test]
fn from_listener_sets_the_underlay_on_a_programs_listener() {
    each_allowed_name(|name| {
        // The program's own listener, under the host's default until alcc takes it.
        let std_listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let listener = AlccListener::from_listener(std_listener, solo(name)).unwrap();
        let peer = client(listener.local_addr().unwrap());
        let (stream, _) = listener.accept().unwrap();
        let info = finish(stream, peer);
        assert_eq!(info.prior_congestion, name, "host default `{}`: {info:?}", host_default());
    });
}

#[test]
fn a_socket_accepted_under_another_congestion_control_says_so() {
    let allowed = allowed();
    let other = allowed.iter().find(|n| *n != "reno").cloned();
    let Some(other) = alcc_testenv::needs()
        .that(
            other.is_some(),
            &format!(
                "needs a congestion control other than reno in net.ipv4.tcp_allowed_congestion_control \
                 (`{}`)",
                allowed.join(" ")
            ),
        )
        .check()
        .and(other)
    else {
        return;
    };
    // A program's listener, set explicitly to `other` (bbr on this project's machines), hands
    // its accepted socket to alcc, whose underlay is reno.
    let std_listener = TcpListener::bind("127.0.0.1:0").unwrap();
    alcc::sys::set_congestion(std_listener.as_raw_fd(), &other).unwrap();
    let peer = client(std_listener.local_addr().unwrap());
    let (tcp, _) = std_listener.accept().unwrap();
    let stream = AlccStream::from_tcp(tcp, &solo("reno")).unwrap();
    let info = finish(stream, peer);
    assert_eq!(info.prior_congestion, other, "{info:?}");
    assert_eq!(info.underlay, "reno");
}

#[test]
fn a_connecting_sender_starts_under_its_underlay_not_the_host_default() {
    each_allowed_name(|name| {
        // The peer reads with a plain listener (the host's default on its side).
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let peer = thread::spawn(move || read_all(listener.accept().unwrap().0));
        let stream = AlccStream::connect(addr, &solo(name)).unwrap();
        let info = finish(stream, peer);
        assert_eq!(info.prior_congestion, name, "host default `{}`: {info:?}", host_default());
    });
}

#[test]
fn a_refused_underlay_fails_the_bind() {
    let e = AlccListener::bind("127.0.0.1:0", solo("no-such-congestion-control")).unwrap_err();
    assert!(e.to_string().contains("`no-such-congestion-control` refused"), "{e}");
}
