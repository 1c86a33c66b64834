//! Close and exit semantics (issue 11 item 3; crates/alcc/README.md "Close and exit"): bytes
//! queued when the process exits still arrive, and a close ends even when the peer keeps its
//! window shut.

mod common;

use std::io;
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use alcc::{AlccListener, AlccReceiver, AlccStream, Mode, Options};
use common::{read_all, write_pattern};

/// Bytes the exiting child queues: its whole queue, at a rate that needs about a second.
const QUEUED: u64 = 1 << 20;

/// The child's controller: 8 Mbit/s, so that nearly all of [`QUEUED`] is still in the
/// engine's queue when the child exits.
const SLOW: &str = "fixed:rate=8";

/// In the child process (the test binary run again with `ALCC_EXIT_TEST_PEER`): queue
/// [`QUEUED`] bytes to the peer, drop the stream without closing it and return, which ends
/// the process (libtest exits with the tests' status).
fn exiting_child(peer: &str, mode: Mode) {
    let tcp = TcpStream::connect(peer).expect("child: connect");
    let mut s = AlccStream::from_tcp(tcp, &Options::with_cc(SLOW).mode(mode)).expect("child: alcc");
    write_pattern(&mut s, QUEUED).expect("child: write");
    let queued = s.info().queued;
    eprintln!("child: {queued} of {QUEUED} bytes still queued at exit");
    drop(s);
}

/// Runs this test again in a child process that exits with its bytes queued; returns what
/// the receiving end got and the child's exit status.
fn exit_with_bytes_queued(test: &str, mode: Mode) -> ((u64, u64), std::process::ExitStatus) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let mut child = Command::new(std::env::current_exe().expect("the test binary"))
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env("ALCC_EXIT_TEST_PEER", addr.to_string())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn the child");
    let (tcp, _) = listener.accept().expect("accept");
    let got = match mode {
        Mode::Kernel => read_all(&mut { tcp }).expect("read"),
        _ => {
            let mut r = AlccReceiver::from_tcp(tcp, &Options::with_cc("none").mode(mode)).expect("receiver");
            read_all(&mut r).expect("read")
        }
    };
    (got, child.wait().expect("the child's status"))
}

fn expected_sum() -> u64 {
    let mut sink = io::sink();
    write_pattern(&mut sink, QUEUED).expect("checksum")
}

#[test]
fn queued_bytes_arrive_after_the_process_exits() {
    if let Ok(peer) = std::env::var("ALCC_EXIT_TEST_PEER") {
        return exiting_child(&peer, Mode::Kernel);
    }
    let ((got, sum), status) =
        exit_with_bytes_queued("queued_bytes_arrive_after_the_process_exits", Mode::Kernel);
    assert!(status.success(), "the child failed: {status}");
    assert_eq!(got, QUEUED, "bytes queued at exit were lost");
    assert_eq!(sum, expected_sum());
}

#[test]
fn queued_framed_bytes_arrive_after_the_process_exits() {
    if let Ok(peer) = std::env::var("ALCC_EXIT_TEST_PEER") {
        return exiting_child(&peer, Mode::Framed);
    }
    let ((got, sum), status) =
        exit_with_bytes_queued("queued_framed_bytes_arrive_after_the_process_exits", Mode::Framed);
    assert!(status.success(), "the child failed: {status}");
    assert_eq!(got, QUEUED, "bytes queued at exit were lost");
    assert_eq!(sum, expected_sum());
}

#[test]
fn close_ends_when_the_peer_keeps_its_window_shut() {
    if std::env::var("ALCC_EXIT_TEST_PEER").is_ok() {
        return;
    }
    // No user timeout while open; the close's own (1 s here, 60 s by default) ends it.
    let options = Options { close_user_timeout: Duration::from_secs(1), ..Options::with_cc("fixed") };
    let listener = AlccListener::bind("127.0.0.1:0", options).expect("bind");
    let addr = listener.local_addr().expect("addr");
    // Connected, never read: its window closes and stays closed, and it stays connected.
    let client = TcpStream::connect(addr).expect("connect");
    let (s, _) = listener.accept().expect("accept");
    // Fill the kernel's buffers and part of the queue without blocking.
    let buf = vec![0u8; 64 << 10];
    let mut queued = 0u64;
    loop {
        match s.write_with(&buf, true) {
            Ok(n) => queued += n as u64,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("write: {e}"),
        }
    }
    // close(None) must end by itself; a watchdog turns a hang into a failure.
    let (done, result) = mpsc::channel();
    thread::spawn(move || {
        let _ = done.send(s.close(None));
    });
    let r = result.recv_timeout(Duration::from_secs(120)).expect("close(None) never returned");
    eprintln!("{queued} bytes queued; close(None) ended with {r:?}");
    let e = r.expect_err("nothing was delivered: the close cannot succeed");
    assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
    drop(client);
}
