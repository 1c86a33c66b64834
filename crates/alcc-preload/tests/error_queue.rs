//! The engine's ACK timestamps fill the shared socket's error queue, which makes the kernel
//! report an error on the program's descriptor (EPOLLERR, POLLERR; for `select`, readable)
//! while the engine has not drained it yet. The library keeps those from the program and
//! passes a real error on (src/error_queue.rs). A Python server under the shim sends 2 MiB at
//! 16 Mbit/s from a thread while its main thread waits for input only (epoll level-triggered
//! with EPOLLIN, `select.poll` with POLLIN, `select.select` with a read list): no wake-up may
//! carry an error or a readability with nothing to read, until the client, having read
//! everything, sends `done`; then the client resets the connection, and that error must reach
//! the program (EPOLLERR / POLLERR, `select` readable with `recv` failing ECONNRESET).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{library, python, Server};

/// The server: `mode` is epoll, poll or select. Sends 2 MiB and one byte more, which the client
/// leaves unread so that its close resets the connection. Prints its port, then one line: wake-ups, wake-ups with nothing to read (or with an error), and after the
/// reset whether the error was seen and the socket's error.
const SERVER: &str = r#"
import errno, select, socket, sys, threading
mode = sys.argv[1]
l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen(1)
print(l.getsockname()[1], flush=True)
c, _ = l.accept()
data = bytes(range(256)) * 8192 + b'!'
threading.Thread(target=c.sendall, args=(data,)).start()
ep = select.epoll(); ep.register(c, select.EPOLLIN)
p = select.poll(); p.register(c, select.POLLIN)

def wait():
    """One wait for input: (readable, error reported, hang-up reported)."""
    if mode == 'epoll':
        evs = ep.poll(30)
        ev = evs[0][1] if evs else 0
        return bool(ev & select.EPOLLIN), bool(ev & select.EPOLLERR), bool(ev & select.EPOLLHUP)
    if mode == 'poll':
        evs = p.poll(30000)
        ev = evs[0][1] if evs else 0
        return bool(ev & select.POLLIN), bool(ev & select.POLLERR), bool(ev & select.POLLHUP)
    r, _, _ = select.select([c], [], [], 30)
    return bool(r), False, False

wakeups = spurious = 0
while True:
    readable, err, hup = wait()
    wakeups += 1
    try:
        got = c.recv(16, socket.MSG_DONTWAIT) if readable else b''
    except BlockingIOError:
        got = b''
    if err or hup or not got:
        spurious += 1
    if got:
        break
# The client resets the connection now: the program must learn it from the wait and the read.
seen = ''
for _ in range(50):
    readable, err, hup = wait()
    seen += 'E' if err else ''
    seen += 'H' if hup else ''
    try:
        got = c.recv(16, socket.MSG_DONTWAIT)
        seen += 'eof' if got == b'' else ''
    except ConnectionResetError:
        seen += 'reset'
    except BlockingIOError:
        pass
    if seen:
        break
print(wakeups, spurious, seen or '-', flush=True)
"#;

/// Runs [`SERVER`] in `mode`; returns (wake-ups, spurious ones, how the reset was seen: `E`
/// an error, `H` a hang-up from the wait, `reset` ECONNRESET or `eof` from the read).
fn serve(mode: &str) -> (u64, u64, String) {
    let mut child = Command::new(python())
        .args(["-c", SERVER, mode])
        .env("LD_PRELOAD", library())
        .env("ALCC_CC", "fixed:rate=16")
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let _server = Server(child);
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let port: u16 = line.trim().parse().unwrap_or_else(|_| panic!("the server printed {line:?}"));
    let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut got = vec![0u8; 8192 * 256];
    conn.read_exact(&mut got).unwrap();
    let expected: Vec<u8> = (0..8192).flat_map(|_| 0..=255u8).collect();
    assert!(got == expected, "{mode}: the 2 MiB did not arrive intact");
    conn.write_all(b"done").unwrap();
    // The server's last byte arrives and stays unread: closing now sends a reset.
    std::thread::sleep(Duration::from_millis(300));
    drop(conn);
    line.clear();
    out.read_line(&mut line).unwrap();
    let f: Vec<&str> = line.split_whitespace().collect();
    let count = |i: usize| f.get(i).and_then(|v| v.parse().ok()).unwrap_or(u64::MAX);
    assert_eq!(f.len(), 3, "{mode}: the server printed {line:?}");
    (count(0), count(1), f[2].to_string())
}

fn check(mode: &str) {
    let Some(_env) = alcc_testenv::needs().program("python3").check() else { return };
    let (wakeups, spurious, seen) = serve(mode);
    eprintln!("{mode}: {wakeups} wake-ups, {spurious} spurious, the reset seen as {seen}");
    assert_eq!(spurious, 0, "{mode}: {spurious} of {wakeups} wake-ups reported an error or nothing to read");
    // The reset must reach the program as an error: EPOLLERR / POLLERR from the wait or
    // ECONNRESET from the read. The engine leaves a shared socket's error to the program
    // (alcc's ClosedSocket::LeaveError); before it took it (SO_ERROR), and the program saw
    // only a hang-up and end of file in some runs.
    let dead = seen.contains('E') || seen.contains("reset");
    assert!(dead, "{mode}: the reset reached the program only as {seen:?}");
}

#[test]
fn epoll_reports_no_error_for_the_engines_timestamps_and_a_reset_still() {
    check("epoll");
}

#[test]
fn poll_reports_no_error_for_the_engines_timestamps_and_a_reset_still() {
    check("poll");
}

#[test]
fn select_reports_no_false_readability_and_a_reset_still() {
    check("select");
}
