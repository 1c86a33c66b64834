//! Readiness for event loops (`AlccStream::writable_fd`) and the descriptor-sharing entry
//! points the LD_PRELOAD shim builds on (`from_shared_fd`, `release`), over loopback TCP.

mod common;

use std::io::{self, Read};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::thread;
use std::time::{Duration, Instant};

use alcc::sys::{poll_one, Epoll};
use alcc::{AlccStream, Grouping, Options};

/// Options for controller `cc`, uncoupled: these tests check one flow's own pacing while the
/// other tests of this binary run flows to 127.0.0.1 from the same process, which would
/// otherwise share one flow group (docs/coupled-flows.md).
fn solo(cc: &str) -> Options {
    Options::with_cc(cc).grouping(Grouping::None)
}
use common::{pattern, read_all, Fnv};

/// A connected pair: (accepted server side, client side).
fn pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    (l.accept().unwrap().0, c)
}

/// What an event loop did while it wrote.
#[derive(Debug, Default)]
struct LoopStats {
    wakeups: u64,
    /// Wake-ups after which the first write made no progress (a spurious EPOLLOUT).
    spurious: u64,
    would_block: u64,
    cpu: Duration,
}

fn thread_cpu() -> Duration {
    alcc::sys::thread_cpu_time()
}

/// Writes `total` pattern bytes to a non-blocking stream, waiting for writability with
/// `wait` (which blocks until the readiness descriptor says so) whenever a write would block.
fn event_loop_write(stream: &AlccStream, total: u64, mut wait: impl FnMut() -> bool) -> (u64, LoopStats) {
    let mut stats = LoopStats::default();
    let mut buf = vec![0u8; 64 << 10];
    let mut sum = Fnv::default();
    let mut off = 0u64;
    let cpu0 = thread_cpu();
    let mut after_wake = false;
    while off < total {
        let n = (total - off).min(buf.len() as u64) as usize;
        pattern(off, &mut buf[..n]);
        match stream.write_with(&buf[..n], true) {
            Ok(k) => {
                assert!(k > 0);
                sum.update(&buf[..k]);
                off += k as u64;
                after_wake = false;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                stats.would_block += 1;
                if after_wake {
                    stats.spurious += 1;
                }
                assert!(wait(), "the readiness descriptor did not become writable within 10 s");
                stats.wakeups += 1;
                after_wake = true;
            }
            Err(e) => panic!("write failed: {e}"),
        }
    }
    stats.cpu = thread_cpu().saturating_sub(cpu0);
    (sum.0, stats)
}

/// 3 MB at 8 Mbit/s through a 64 KiB queue: about 3 s of waiting for the controller.
fn slow_options() -> Options {
    Options { queue_capacity: 64 << 10, ..solo("fixed:rate=8") }
}

fn run_loop(edge: bool) {
    let total: u64 = 3 << 20;
    let (server, mut client) = pair();
    let reader = thread::spawn(move || read_all(&mut client).unwrap());
    let stream = AlccStream::from_tcp(server, &slow_options()).unwrap();
    let fd = stream.writable_fd().unwrap();
    let ep = Epoll::new().unwrap();
    let started = Instant::now();
    let (sum, stats) = if edge {
        ep.add(fd, (libc::EPOLLOUT | libc::EPOLLET) as u32, 1).unwrap();
        let mut events = Vec::with_capacity(4);
        event_loop_write(&stream, total, || {
            // Edge-triggered: the edge after the write that found the queue full.
            ep.wait(&mut events, Some(Duration::from_secs(10))).unwrap();
            events.iter().any(|e| e.events & libc::EPOLLOUT as u32 != 0)
        })
    } else {
        event_loop_write(&stream, total, || {
            poll_one(fd, libc::POLLOUT, Some(Duration::from_secs(10))).unwrap()
        })
    };
    stream.close(Some(Duration::from_secs(30))).unwrap();
    let took = started.elapsed();
    let (got, got_sum) = reader.join().unwrap();
    let kind = if edge { "epoll ET" } else { "poll LT" };
    eprintln!("{kind}: {got} bytes in {took:?}, {stats:?}");
    assert_eq!(got, total, "{kind}: every byte arrives");
    assert_eq!(got_sum, sum, "{kind}: intact");
    assert!(took > Duration::from_secs(2), "{kind}: the controller limited the rate ({took:?})");
    assert!(stats.wakeups > 10, "{kind}: the loop waited ({stats:?})");
    assert_eq!(stats.spurious, 0, "{kind}: a wake-up without room ({stats:?})");
    // Waiting costs (almost) nothing: each wake-up is one write of up to the queue's free
    // room; 2 % of the time the loop spent covers the copies with a wide margin.
    assert!(stats.cpu < took / 50, "{kind}: the loop used {:?} of CPU in {took:?}", stats.cpu);
}

#[test]
fn an_edge_triggered_epoll_loop_never_misses_an_edge_nor_spins() {
    run_loop(true);
}

#[test]
fn a_level_triggered_poll_loop_sleeps_while_the_queue_is_full() {
    run_loop(false);
}

#[test]
fn a_released_stream_delivers_everything_and_the_fin_waits_for_the_last_descriptor() {
    let (server, mut client) = pair();
    // The application keeps `server`; the engine works on a dup of it.
    let engine_fd: OwnedFd = server.try_clone().unwrap().into();
    server.set_nonblocking(false).unwrap();
    let stream = AlccStream::from_shared_fd(engine_fd, &solo("fixed:rate=40")).unwrap();
    // O_NONBLOCK belongs to the application: the engine left it as it was.
    assert!(!alcc::sys::is_nonblocking(server.as_raw_fd()).unwrap());
    let total = 2 << 20;
    let mut buf = vec![0u8; total];
    pattern(0, &mut buf);
    // The client reads everything, then checks that no FIN came while the application's
    // descriptor is open, and tells the test; then it waits for the end of the stream.
    let (told, heard) = std::sync::mpsc::channel();
    let expected = buf.clone();
    let reader = thread::spawn(move || {
        let mut got = vec![0u8; total];
        client.read_exact(&mut got).unwrap();
        assert!(got == expected, "the released stream's bytes arrive intact");
        client.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
        let mut one = [0u8; 1];
        let e = client.read(&mut one).unwrap_err();
        assert!(matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut), "{e}");
        told.send(()).unwrap();
        client.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        client.read(&mut one).unwrap()
    });
    let mut off = 0;
    while off < total {
        off += stream.write_with(&buf[off..], false).unwrap();
    }
    stream.release();
    drop(stream);
    heard.recv_timeout(Duration::from_secs(20)).expect("the client read everything and saw no FIN");
    // The application closes its descriptor: the kernel sends the FIN.
    drop(server);
    assert_eq!(reader.join().unwrap(), 0, "end of stream after the last close");
}

#[test]
fn a_failure_wakes_an_edge_triggered_watcher_and_the_write_returns_the_error() {
    let (server, client) = pair();
    let options = Options { queue_capacity: 16 << 10, ..solo("fixed:rate=1") };
    let stream = AlccStream::from_tcp(server, &options).unwrap();
    let fd = stream.writable_fd().unwrap();
    let ep = Epoll::new().unwrap();
    ep.add(fd, (libc::EPOLLOUT | libc::EPOLLET) as u32, 1).unwrap();
    let mut events = Vec::with_capacity(4);
    ep.wait(&mut events, Some(Duration::ZERO)).unwrap();
    assert_eq!(events.len(), 1, "the registration's first edge");
    // Fill the queue: the next write would block, and no edge is pending.
    let chunk = vec![7u8; 4096];
    loop {
        match stream.write_with(&chunk, true) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("write: {e}"),
        }
    }
    assert!(!stream.accepts_write());
    ep.wait(&mut events, Some(Duration::ZERO)).unwrap();
    assert!(events.is_empty(), "no edge while full: {events:?}");
    // The peer closes with unread bytes: the kernel resets the connection.
    thread::sleep(Duration::from_millis(100));
    drop(client);
    // An event loop: each edge means room (write until WouldBlock again) or the failure
    // (the write returns it); it never sleeps past the failure.
    let t0 = Instant::now();
    let failure = loop {
        assert!(t0.elapsed() < Duration::from_secs(10), "no failure reported within 10 s");
        ep.wait(&mut events, Some(Duration::from_secs(1))).unwrap();
        if !events.iter().any(|e| e.events & libc::EPOLLOUT as u32 != 0) {
            continue;
        }
        assert!(stream.accepts_write(), "an edge means a write would not block");
        let mut wrote = 0;
        let failure = loop {
            match stream.write_with(&chunk, true) {
                Ok(n) => wrote += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break None,
                Err(e) => break Some(e),
            }
        };
        if let Some(e) = failure {
            break e;
        }
        assert!(wrote > 0, "a spurious edge: no room and no failure");
    };
    assert!(
        matches!(failure.kind(), io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe),
        "the write returns the flow's failure: {failure}"
    );
    assert!(stream.failure().is_some(), "the failure is kept: {failure}");
}
