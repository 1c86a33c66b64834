//! The engine over real kernel TCP on loopback (127.0.0.1 and ::1).

mod common;

use std::io::Read;
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use alcc::{AlccListener, AlccStream, Grouping, Options};
use common::{read_all, write_pattern};

/// Options for controller `cc`, uncoupled: these tests check one flow's own window and rate
/// while the other tests of this binary run flows to 127.0.0.1 from the same process, which
/// would otherwise share one flow group (tests/coupled.rs tests coupling).
fn solo(cc: &str) -> Options {
    Options::with_cc(cc).grouping(Grouping::None)
}

/// Serves `total` pattern bytes to one client under `options`; returns what the client got,
/// the sender's checksum and the flow's final info.
fn one_transfer(bind: &str, options: Options, total: u64) -> ((u64, u64), u64, alcc::FlowInfo, Duration) {
    let listener = AlccListener::bind(bind, options).unwrap();
    let addr = listener.local_addr().unwrap();
    let client = thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        read_all(&mut s).unwrap()
    });
    let (mut stream, _) = listener.accept().unwrap();
    let start = Instant::now();
    let sum = write_pattern(&mut stream, total).unwrap();
    stream.flush_and_wait();
    let info = stream.info();
    stream.close(Some(Duration::from_secs(30))).unwrap();
    let took = start.elapsed();
    (client.join().unwrap(), sum, info, took)
}

trait FlushAndWait {
    fn flush_and_wait(&mut self);
}

impl FlushAndWait for AlccStream {
    /// Waits until everything is in the kernel and acknowledged, without closing.
    fn flush_and_wait(&mut self) {
        use std::io::Write;
        self.flush().unwrap();
        let start = Instant::now();
        while self.info().bytes_in_flight > 0 && start.elapsed() < Duration::from_secs(10) {
            thread::sleep(Duration::from_millis(2));
        }
    }
}

#[test]
fn window_is_enforced_and_bytes_arrive_intact_v4() {
    let total = 8 << 20;
    let ((got, got_sum), sum, info, _) = one_transfer("127.0.0.1:0", solo("fixed:window=8"), total);
    assert_eq!(got, total);
    assert_eq!(got_sum, sum);
    let window = 8 * 1448;
    assert_eq!(info.window, window);
    assert!(info.max_bytes_in_flight <= window, "in flight {} > window {window}", info.max_bytes_in_flight);
    assert!(info.max_bytes_in_flight > 0);
    assert_eq!(info.bytes_written, total);
    assert_eq!(info.bytes_acked, total);
    assert!(info.ack_stamps > 0, "no ACK timestamps: {info:?}");
    assert!(info.chunks_sent >= total / window);
    assert_eq!(info.underlay, "reno", "the default underlay");
    assert_eq!(info.kernel_max_pacing_rate, u64::MAX, "unpaced controller, uncapped kernel");
}

/// `fixed` with no window needs no RTT samples (`RttSamples::NotNeeded`) and nothing bounds
/// it: its chunks go without timestamps, TCP_INFO acknowledges every one of them, and the
/// flow still sees everything acknowledged (it polls while bytes are in flight). With a
/// window the same controller takes them: only acknowledgements reopen a window.
#[test]
fn an_unbounded_controller_that_needs_no_samples_takes_no_timestamps() {
    let total = 32 << 20;
    let ((got, got_sum), sum, info, _) = one_transfer("127.0.0.1:0", solo("fixed"), total);
    assert_eq!((got, got_sum), (total, sum));
    assert_eq!(info.bytes_acked, total);
    assert_eq!(info.bytes_in_flight, 0, "the flow learned of the last acknowledgement: {info:?}");
    assert_eq!(info.ack_stamps, 0, "an unbounded `fixed` took timestamps: {info:?}");
    // A chunk marked lost (TCP_INFO's retransmissions) is settled as a loss instead.
    assert_eq!(info.info_acks + info.losses, info.chunks_sent, "{info:?}");
    let ((got, got_sum), sum, info, _) = one_transfer("127.0.0.1:0", solo("fixed:window=10000"), total);
    assert_eq!((got, got_sum), (total, sum));
    assert!(info.stamp_acks * 10 >= info.chunks_sent * 9, "a window, yet few stamps: {info:?}");
}

#[test]
fn plain_kernel_tcp_over_ipv6() {
    let total = 16 << 20;
    let ((got, got_sum), sum, info, _) = one_transfer("[::1]:0", solo("none").underlay("bbr"), total);
    assert_eq!((got, got_sum), (total, sum));
    assert_eq!(info.controller, "none");
    assert_eq!(info.underlay, "bbr");
    assert_eq!(info.bytes_acked, total);
}

#[test]
fn windowed_transfer_over_ipv6_with_reno() {
    let total = 4 << 20;
    let options = solo("fixed:window=30").underlay("reno");
    let ((got, got_sum), sum, info, _) = one_transfer("[::1]:0", options, total);
    assert_eq!((got, got_sum), (total, sum));
    assert!(info.max_bytes_in_flight <= 30 * 1448);
    assert_eq!(info.underlay, "reno");
}

#[test]
fn pacing_rate_sets_throughput() {
    // 40 Mbit/s = 5 MB/s: 10 MB take 2 s.
    let total = 10_000_000u64;
    let listener = AlccListener::bind("127.0.0.1:0", solo("fixed:rate=40")).unwrap();
    let addr = listener.local_addr().unwrap();
    let client = thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        let mut buf = vec![0u8; 1 << 20];
        let first = s.read(&mut buf).unwrap() as u64;
        let start = Instant::now();
        let (rest, _) = read_all(&mut s).unwrap();
        // The first read's bytes rode on the pacer's initial credit.
        (first + rest, rest as f64 * 8.0 / start.elapsed().as_secs_f64() / 1e6)
    });
    let (mut stream, _) = listener.accept().unwrap();
    write_pattern(&mut stream, total).unwrap();
    // The kernel paces each chunk's segments at 5/4 of the controller's rate.
    assert_eq!(stream.info().kernel_max_pacing_rate, 5_000_000 * 5 / 4);
    stream.close(Some(Duration::from_secs(30))).unwrap();
    let (got, rate) = client.join().unwrap();
    assert_eq!(got, total);
    // One-sided, so that no wall-clock bound can fail on a loaded machine: load can slow a
    // paced flow but never speed it up, so more than the rate means the pacer is wrong. How
    // close to the rate it gets is a benchmark: `cargo bench -p alcc --bench pacing`.
    assert!(rate < 40.0 * 1.05, "paced at {rate:.2} Mbit/s, wanted 40");
}

#[test]
fn bad_specs_and_underlays_are_errors() {
    let listener = AlccListener::bind("127.0.0.1:0", solo("fixed")).unwrap();
    let addr = listener.local_addr().unwrap();
    // Two connections arrive: a refused underlay fails before connecting (the socket gets it
    // before its handshake, src/underlay/initial.rs).
    let t = thread::spawn(move || {
        for _ in 0..2 {
            let _ = listener.accept();
        }
    });
    let err = AlccStream::connect(addr, &solo("nosuch")).unwrap_err();
    assert!(err.to_string().contains("nosuch"), "{err}");
    let err = AlccStream::connect(addr, &solo("fixed").underlay("vegas-not-here")).unwrap_err();
    assert!(err.to_string().contains("vegas-not-here"), "{err}");
    let s = AlccStream::connect(addr, &solo("fixed")).unwrap();
    assert!(s.set_cc("fixed:bogus=1").is_err());
    assert!(s.set_cc("fixed:window=4").is_ok());
    drop(s);
    let _ = t.join();
}

#[test]
fn client_reset_fails_that_flow_only() {
    let listener = AlccListener::bind("127.0.0.1:0", solo("fixed:window=20")).unwrap();
    let addr = listener.local_addr().unwrap();
    // Three clients; the second reads a little and then resets its connection.
    let clients: Vec<_> = (0..3)
        .map(|i| {
            thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                if i == 1 {
                    let mut buf = vec![0u8; 100_000];
                    s.read_exact(&mut buf).unwrap();
                    // SO_LINGER 0 via the engine's stream is not available here; an
                    // unread receive queue makes close() send a reset.
                    drop(s);
                    return None;
                }
                Some(read_all(&mut s).unwrap())
            })
        })
        .collect();
    let total = 32 << 20;
    let servers: Vec<_> = (0..3)
        .map(|_| {
            let (mut s, _) = listener.accept().unwrap();
            thread::spawn(move || {
                let sent = write_pattern(&mut s, total);
                let closed = s.close(Some(Duration::from_secs(20)));
                (sent, closed)
            })
        })
        .collect();
    let results: Vec<_> = servers.into_iter().map(|t| t.join().unwrap()).collect();
    let got: Vec<_> = clients.into_iter().map(|t| t.join().unwrap()).collect();
    let failed = results.iter().filter(|(w, c)| w.is_err() || c.is_err()).count();
    assert_eq!(failed, 1, "exactly the reset flow fails: {results:?}");
    // Accept order need not match client order; every flow carries the same pattern.
    let sum = results.iter().find_map(|(w, _)| w.as_ref().ok().copied()).unwrap();
    let complete: Vec<_> = got.iter().flatten().collect();
    assert_eq!(complete.len(), 2);
    assert!(complete.iter().all(|&&g| g == (total, sum)), "{got:?}");
    let err = results.iter().find_map(|(w, c)| w.as_ref().err().or(c.as_ref().err())).unwrap();
    assert!(
        matches!(err.kind(), std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe),
        "{err:?}"
    );
}

#[test]
fn abort_resets_the_peer() {
    let listener = AlccListener::bind("127.0.0.1:0", solo("fixed")).unwrap();
    let addr = listener.local_addr().unwrap();
    let client = thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        read_all(&mut s)
    });
    let (mut s, _) = listener.accept().unwrap();
    std::io::Write::write_all(&mut s, b"hello").unwrap();
    std::io::Write::flush(&mut s).unwrap();
    thread::sleep(Duration::from_millis(50));
    s.abort();
    let err = client.join().unwrap().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset);
}

#[test]
fn error_queue_overflow_falls_back_to_tcp_info() {
    // A receive buffer of a few KiB holds only a handful of timestamps: most are dropped,
    // and TCP_INFO must acknowledge the chunks instead.
    let total = 64 << 20;
    // A window (far above loopback's BDP): an unbounded `fixed` takes no timestamps at all.
    let options = Options { errqueue_rcvbuf: 2048, max_chunk: 16 << 10, ..solo("fixed:window=10000") };
    let ((got, got_sum), sum, info, _) = one_transfer("127.0.0.1:0", options, total);
    assert_eq!((got, got_sum), (total, sum));
    assert_eq!(info.bytes_acked, total);
    eprintln!(
        "{} chunks: {} by ACK stamp, {} by TCP_INFO",
        info.chunks_sent, info.ack_stamps, info.info_acks
    );
    assert!(info.info_acks > 0, "no chunk needed the TCP_INFO fallback: {info:?}");
}

/// More than 4 GiB, so that the 32-bit timestamp ids wrap: the ACK stamps must keep
/// acknowledging their chunks after the wrap (counted by `stamp_acks`, chunks a stamp
/// matched, not by stamps received). Runs in CI: 2.4 s on loopback here.
#[test]
fn timestamp_ids_wrap_past_4_gib() {
    let total: u64 = (4 << 30) + (256 << 20);
    // A window (far above loopback's BDP): an unbounded `fixed` takes no timestamps at all.
    let listener = AlccListener::bind("127.0.0.1:0", solo("fixed:window=10000")).unwrap();
    let addr = listener.local_addr().unwrap();
    let client = thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        let mut buf = vec![0u8; 1 << 20];
        let mut n = 0u64;
        loop {
            match s.read(&mut buf).unwrap() {
                0 => return n,
                k => n += k as u64,
            }
        }
    });
    let (mut s, _) = listener.accept().unwrap();
    let start = Instant::now();
    let buf = vec![7u8; 1 << 20];
    let mut before_wrap = None;
    for i in 0..(total >> 20) {
        std::io::Write::write_all(&mut s, &buf).unwrap();
        if i == 3840 {
            // 3.75 GiB written: the wrap is ahead.
            s.flush_and_wait();
            let info = s.info();
            before_wrap = Some((info.stamp_acks, info.chunks_sent, info.bytes_acked));
        }
    }
    s.flush_and_wait();
    let info = s.info();
    s.close(Some(Duration::from_secs(30))).unwrap();
    assert_eq!(client.join().unwrap(), total);
    assert_eq!(info.bytes_acked, total);
    let (stamps0, chunks0, acked0) = before_wrap.unwrap();
    assert!(acked0 < 1 << 32, "the first count is taken before the wrap");
    let (stamped, sent) = (info.stamp_acks - stamps0, info.chunks_sent - chunks0);
    eprintln!(
        "{total} bytes in {:?}: {} chunks, {} acknowledged by their stamp ({stamped} of {sent} \
         after 3.75 GiB), {} by TCP_INFO",
        start.elapsed(),
        info.chunks_sent,
        info.stamp_acks,
        info.info_acks
    );
    assert!(stamped * 2 > sent, "after the wrap {stamped} of {sent} chunks acknowledged by their stamp");
}

#[test]
fn dropping_a_stream_still_delivers_everything() {
    let listener = AlccListener::bind("127.0.0.1:0", solo("fixed:window=16")).unwrap();
    let addr = listener.local_addr().unwrap();
    let client = thread::spawn(move || read_all(&mut TcpStream::connect(addr).unwrap()).unwrap());
    let (mut s, _) = listener.accept().unwrap();
    let sum = write_pattern(&mut s, 6 << 20).unwrap();
    drop(s); // no close: the driver flushes and sends the FIN in the background
    assert_eq!(client.join().unwrap(), (6 << 20, sum));
}

#[test]
fn nonblocking_writes_fill_the_queue_then_would_block() {
    let options = Options { queue_capacity: 100_000, ..solo("fixed:window=1") };
    let listener = AlccListener::bind("127.0.0.1:0", options).unwrap();
    let addr = listener.local_addr().unwrap();
    // The client does not read yet, so the window of one packet drains slowly at most.
    let client = TcpStream::connect(addr).unwrap();
    let (mut s, _) = listener.accept().unwrap();
    s.set_nonblocking(true);
    let buf = vec![1u8; 60_000];
    assert_eq!(std::io::Write::write(&mut s, &buf).unwrap(), 60_000);
    let second = std::io::Write::write(&mut s, &buf).unwrap();
    assert!(second <= 60_000);
    let mut written = 60_000 + second as u64;
    let err = loop {
        match std::io::Write::write(&mut s, &buf) {
            Ok(n) => written += n as u64,
            Err(e) => break e,
        }
    };
    assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock);
    assert!(s.info().queued <= 100_000);
    s.set_nonblocking(false);
    let reader = thread::spawn(move || read_all(&mut { client }).unwrap().0);
    s.close(Some(Duration::from_secs(20))).unwrap();
    assert_eq!(reader.join().unwrap(), written);
}

#[test]
fn controller_can_be_replaced_mid_flow() {
    let listener = AlccListener::bind("127.0.0.1:0", solo("fixed:window=4")).unwrap();
    let addr = listener.local_addr().unwrap();
    let client = thread::spawn(move || read_all(&mut TcpStream::connect(addr).unwrap()).unwrap());
    let (mut s, _) = listener.accept().unwrap();
    let mut sum = common::Fnv::default();
    let mut buf = vec![0u8; 1 << 20];
    common::pattern(0, &mut buf);
    sum.update(&buf);
    std::io::Write::write_all(&mut s, &buf).unwrap();
    std::io::Write::flush(&mut s).unwrap();
    assert_eq!(s.info().window, 4 * 1448);
    s.set_cc("fixed:window=40").unwrap();
    s.set_underlay("reno").unwrap();
    common::pattern(1 << 20, &mut buf);
    sum.update(&buf);
    std::io::Write::write_all(&mut s, &buf).unwrap();
    std::io::Write::flush(&mut s).unwrap();
    let info = s.info();
    assert_eq!(info.window, 40 * 1448);
    assert_eq!(info.controller, "fixed:window=40");
    assert_eq!(info.underlay, "reno");
    s.close(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(client.join().unwrap(), (2 << 20, sum.0));
}

#[test]
fn a_peer_that_stops_reading_times_out_as_an_error() {
    let options = Options { user_timeout: Some(Duration::from_secs(1)), ..solo("fixed") };
    let listener = AlccListener::bind("127.0.0.1:0", options).unwrap();
    let addr = listener.local_addr().unwrap();
    // Connected, never read: the peer's window closes and stays closed.
    let client = TcpStream::connect(addr).unwrap();
    let (mut s, _) = listener.accept().unwrap();
    let start = Instant::now();
    let buf = vec![0u8; 1 << 20];
    let err = loop {
        if let Err(e) = std::io::Write::write_all(&mut s, &buf) {
            break e;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no timeout");
    };
    eprintln!("failed after {:.1?}: {err}", start.elapsed());
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut, "{err:?}");
    assert!(s.close(None).is_err());
    drop(client);
}

#[test]
fn every_kernel_mode_controller_delivers_intact() {
    for entry in alcc_cc::registry::ENTRIES.iter().filter(|e| !e.needs_receiver()) {
        let total = 4 << 20;
        let ((got, got_sum), sum, info, took) = one_transfer("127.0.0.1:0", solo(entry.name), total);
        eprintln!(
            "{}: {took:.2?}, window {} B, max in flight {} B, {} chunks, state {:?}",
            entry.name,
            info.window,
            info.max_bytes_in_flight,
            info.chunks_sent,
            info.metrics.as_ref().map(|m| m.state)
        );
        assert_eq!((got, got_sum), (total, sum), "{}", entry.name);
        assert_eq!(info.bytes_acked, total, "{}", entry.name);
        assert_eq!(info.max_window_overshoot, 0, "{}: a write exceeded the window", entry.name);
    }
}

#[test]
fn set_cc_from_none_prepares_the_socket_like_a_controlled_start() {
    // Issue 11 item 4: a flow that starts as plain TCP and gets a controller later must be
    // set up as one that started under it (ACK timestamps, TCP_NODELAY, TCP_NOTSENT_LOWAT),
    // and the controller counts in the flow's Options::mss.
    use std::io::Write;
    let options = Options { mss: 1000, notsent_lowat: 64 << 10, ..solo("none") };
    let listener = AlccListener::bind("127.0.0.1:0", options).unwrap();
    let addr = listener.local_addr().unwrap();
    let client = thread::spawn(move || read_all(&mut TcpStream::connect(addr).unwrap()).unwrap());
    let (mut s, _) = listener.accept().unwrap();
    let total = 8usize << 20;
    let mut data = vec![0u8; total];
    common::pattern(0, &mut data);
    let fd = s.as_raw_fd();
    let tcp_opt = move |name| alcc::sys::get_int(fd, libc::IPPROTO_TCP, name).unwrap();
    // The first megabyte as plain TCP.
    s.write_all(&data[..1 << 20]).unwrap();
    s.flush().unwrap();
    assert_eq!(tcp_opt(libc::TCP_NODELAY), 0, "plain TCP keeps Nagle");
    s.set_cc("fixed:window=10").unwrap();
    assert_eq!(s.info().window, 10 * 1000, "the window counts in Options::mss");
    assert_eq!(tcp_opt(libc::TCP_NODELAY), 1);
    assert_eq!(tcp_opt(libc::TCP_NOTSENT_LOWAT), 64 << 10);
    s.write_all(&data[1 << 20..]).unwrap();
    let handle = s.info_handle();
    s.close(Some(Duration::from_secs(60))).unwrap();
    let info = handle.info();
    let mut sum = common::Fnv::default();
    sum.update(&data);
    assert_eq!(client.join().unwrap(), (total as u64, sum.0));
    assert_eq!(info.bytes_acked, total as u64);
    // Timestamps were switched on mid-stream: the ids of the later chunks must still match
    // (their count starts at the switch), so most chunks are acknowledged by their stamp.
    assert!(
        info.ack_stamps * 2 > info.chunks_sent,
        "{} ACK stamps for {} chunks ({} through TCP_INFO)",
        info.ack_stamps,
        info.chunks_sent,
        info.info_acks
    );
    assert_eq!(info.max_window_overshoot, 0);
}

/// A controller that panics at its `at`-th acknowledgement (a controller bug).
struct PanicsAt {
    inner: Box<dyn alcc_cc::Controller>,
    acks: u32,
    at: u32,
}

impl alcc_cc::Controller for PanicsAt {
    fn name(&self) -> &'static str {
        "panics-at"
    }
    fn on_sent(&mut self, now: alcc_cc::Time, p: &alcc_cc::SentPacket) -> u64 {
        self.inner.on_sent(now, p)
    }
    fn on_ack(&mut self, now: alcc_cc::Time, a: &alcc_cc::AckSample) {
        self.acks += 1;
        assert!(self.acks < self.at, "deliberate panic at ACK {}", self.acks);
        self.inner.on_ack(now, a)
    }
    fn on_loss(&mut self, now: alcc_cc::Time, l: &alcc_cc::LossEvent) {
        self.inner.on_loss(now, l)
    }
    fn decision(&self) -> alcc_cc::Decision {
        self.inner.decision()
    }
    fn metrics(&self) -> alcc_cc::Metrics {
        self.inner.metrics()
    }
}

#[test]
fn a_panicking_controller_fails_its_flow_only() {
    // Issue 11 item 1: a panic in one flow's step must fail that flow, not the driver thread
    // every flow of the process depends on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let total = 8u64 << 20;
    let options = solo("fixed:window=20");
    let serve = |stream: AlccStream| {
        thread::spawn(move || {
            let mut s = stream;
            let r = write_pattern(&mut s, total).and_then(|_| s.close(Some(Duration::from_secs(20))));
            r.map_err(|e| e.to_string())
        })
    };
    let clients: Vec<_> =
        (0..3).map(|_| thread::spawn(move || read_all(&mut TcpStream::connect(addr).unwrap()))).collect();
    let accept = || listener.accept().unwrap().0;
    let inner = alcc_cc::registry::build("fixed:window=20", &alcc_cc::Config::default()).unwrap();
    let bad = AlccStream::from_tcp_with_controller(
        accept(),
        &options,
        Box::new(PanicsAt { inner, acks: 0, at: 50 }),
    );
    let bad = serve(bad.unwrap());
    let good = serve(AlccStream::from_tcp(accept(), &options).unwrap());
    let bad = bad.join().unwrap().expect_err("the panicking flow fails");
    assert!(bad.contains("failed inside the driver") && bad.contains("deliberate panic at ACK 50"), "{bad}");
    assert_eq!(good.join().unwrap(), Ok(()), "the other flow completes");
    // The driver still serves flows started after the panic.
    let later = serve(AlccStream::from_tcp(accept(), &options).unwrap());
    assert_eq!(later.join().unwrap(), Ok(()));
    let got: Vec<_> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    assert_eq!(got.iter().filter(|g| g.as_ref().is_ok_and(|g| g.0 == total)).count(), 2, "{got:?}");
}

/// `fixed:window=20` that runs a timer every 2 ms and, if `patient`, says its feedback can
/// wait for it (`feedback_can_wait_until`), as Verus does after slow start; records when it
/// heard each ACK and the time its RTT says it arrived by.
struct Ticking {
    inner: Box<dyn alcc_cc::Controller>,
    patient: bool,
    next: Option<alcc_cc::Time>,
    /// (heard at, sent at + RTT) per ACK.
    heard: std::sync::Arc<std::sync::Mutex<Vec<(alcc_cc::Time, alcc_cc::Time)>>>,
}

impl alcc_cc::Controller for Ticking {
    fn name(&self) -> &'static str {
        "ticking"
    }
    fn on_sent(&mut self, now: alcc_cc::Time, p: &alcc_cc::SentPacket) -> u64 {
        self.next.get_or_insert(now + Duration::from_millis(2));
        self.inner.on_sent(now, p)
    }
    fn on_ack(&mut self, now: alcc_cc::Time, a: &alcc_cc::AckSample) {
        self.heard.lock().unwrap().push((now, a.sent_at + a.rtt));
        self.inner.on_ack(now, a)
    }
    fn on_loss(&mut self, now: alcc_cc::Time, l: &alcc_cc::LossEvent) {
        self.inner.on_loss(now, l)
    }
    fn on_timer(&mut self, now: alcc_cc::Time) {
        self.next = Some(now + Duration::from_millis(2));
    }
    fn next_timer(&self) -> Option<alcc_cc::Time> {
        self.next
    }
    fn feedback_can_wait_until(&self, _sends_on_feedback: bool) -> Option<alcc_cc::Time> {
        self.next.filter(|_| self.patient)
    }
    fn decision(&self) -> alcc_cc::Decision {
        self.inner.decision()
    }
    fn metrics(&self) -> alcc_cc::Metrics {
        self.inner.metrics()
    }
}

#[test]
fn a_controller_whose_feedback_can_wait_is_not_woken_by_its_socket() {
    // Issue 18: each SCHED stamp wakes the driver (EPOLLERR). A flow whose controller acts on
    // feedback only in its timer stops watching its socket until its next step, then hears
    // every ACK, each at the time it arrived.
    for patient in [true, false] {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let total = 4u64 << 20;
        let client = thread::spawn(move || read_all(&mut TcpStream::connect(addr).unwrap()));
        let inner = alcc_cc::registry::build("fixed:window=20", &alcc_cc::Config::default()).unwrap();
        let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let ticking = Ticking { inner, patient, next: None, heard: heard.clone() };
        let mut stream = AlccStream::from_tcp_with_controller(
            listener.accept().unwrap().0,
            &solo("fixed:window=20"),
            Box::new(ticking),
        )
        .unwrap();
        let sum = write_pattern(&mut stream, total).unwrap();
        stream.flush_and_wait();
        let info = stream.info();
        stream.close(Some(Duration::from_secs(30))).unwrap();
        assert_eq!(client.join().unwrap().unwrap(), (total, sum), "patient: {patient}");
        assert_eq!(info.bytes_acked, total);
        let heard = heard.lock().unwrap();
        assert_eq!(heard.len() as u64, info.chunks_sent, "every chunk heard once");
        if patient {
            assert!(info.socket_holds > 0, "{info:?}");
            // Heard with the time its stamp says it arrived, not the later step's: at or
            // after the time its own RTT gives (the clocks' conversion errs by microseconds).
            let late = heard.iter().filter(|(at, by)| *at + Duration::from_micros(200) < *by).count();
            assert_eq!(late, 0, "ACKs heard before they arrived: {late}");
        } else {
            assert_eq!(info.socket_holds, 0, "{info:?}");
        }
    }
}
