//! Helpers of the end-to-end tests: root check, leak check, TCP bulk transfer, UDP blast.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use alcc_link::{set_congestion_control, CounterSnapshot, Dir, Side, Testbed, SERVER_ADDR};

/// The tests share the machine's network setup: run them one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Whether the tests can run; prints why not otherwise.
pub fn root_or_skip(test: &str) -> bool {
    let root = Command::new("id").arg("-u").output().map(|o| o.stdout == b"0\n").unwrap_or(false);
    if !root {
        eprintln!("SKIPPED {test}: the link emulator's end-to-end tests need root (namespaces, TUN)");
    }
    root
}

pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn our_namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().expect("ip netns list");
    let prefix = format!("alcc-{}-", std::process::id());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with(&prefix))
        .map(|l| l.to_string())
        .collect()
}

fn links() -> String {
    let out = Command::new("ip").args(["-o", "link"]).output().expect("ip link");
    // Counters and state change; names do not.
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split(':').nth(1).map(|s| s.trim().to_string()))
        .collect::<Vec<_>>()
        .join(",")
}

/// Runs `body`, then checks (even when it panicked) that no namespace of this process and no
/// new link in the root namespace remain, then re-raises the body's panic.
pub fn leak_checked(body: impl FnOnce() + std::panic::UnwindSafe) {
    let before_ns = our_namespaces();
    let before_links = links();
    let result = std::panic::catch_unwind(body);
    assert_eq!(our_namespaces(), Vec::<String>::new(), "namespaces leaked (before: {before_ns:?})");
    assert_eq!(links(), before_links, "links of the root namespace changed");
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

pub fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("alcc-link-test-{}-{name}", std::process::id()))
}

/// Counters at two instants of a transfer.
pub struct Window {
    pub start: CounterSnapshot,
    pub end: CounterSnapshot,
}

impl Window {
    /// Bytes departed over bytes offered by the opportunities in between.
    pub fn utilization(&self) -> f64 {
        let offered = (self.end.opportunities - self.start.opportunities) as f64 * 1500.0;
        (self.end.departure_bytes - self.start.departure_bytes) as f64 / offered
    }
}

/// A TCP transfer from the server to the client (downlink) with congestion control `cc`
/// lasting `total`; returns the downlink counters at `warmup` and at the end.
pub fn bulk_download(tb: &Testbed, cc: &str, warmup: Duration, total: Duration) -> Window {
    let listener = tb.run_in(Side::Server, || TcpListener::bind((SERVER_ADDR, 0))).unwrap().unwrap();
    let port = listener.local_addr().unwrap().port();
    let client = tb.run_in(Side::Client, || TcpStream::connect((SERVER_ADDR, port))).unwrap().unwrap();
    let (mut server, _) = listener.accept().unwrap();
    set_congestion_control(&server, cc).unwrap();
    let mut reader = client.try_clone().unwrap();
    let receiving = thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        let mut n = 0u64;
        while let Ok(k) = reader.read(&mut buf) {
            if k == 0 {
                break;
            }
            n += k as u64;
        }
        n
    });
    let stop = Arc::new(AtomicBool::new(false));
    let writer_stop = stop.clone();
    let mut writer_sock = server.try_clone().unwrap();
    let sending = thread::spawn(move || {
        let chunk = vec![7u8; 1 << 16];
        while !writer_stop.load(Ordering::Relaxed) {
            if writer_sock.write_all(&chunk).is_err() {
                break;
            }
        }
    });
    let t0 = Instant::now();
    thread::sleep(warmup);
    let start = tb.counters(Dir::Downlink);
    thread::sleep(total.saturating_sub(t0.elapsed()));
    let end = tb.counters(Dir::Downlink);
    stop.store(true, Ordering::Relaxed);
    let _ = server.shutdown(Shutdown::Both);
    let _ = client.shutdown(Shutdown::Both);
    sending.join().unwrap();
    let received = receiving.join().unwrap();
    assert!(received > 0, "nothing received");
    let _ = server.flush();
    Window { start, end }
}

/// Sends `count` UDP datagrams of `size` bytes from the client to the server, `burst` at a
/// time with a 1 ms pause, and returns how many the server received.
pub fn udp_blast(tb: &Testbed, count: u64, size: usize, burst: u64) -> u64 {
    let rx = tb.run_in(Side::Server, || UdpSocket::bind((SERVER_ADDR, 0))).unwrap().unwrap();
    let port = rx.local_addr().unwrap().port();
    let tx = tb.run_in(Side::Client, || UdpSocket::bind(("0.0.0.0", 0))).unwrap().unwrap();
    rx.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let receiving = thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let mut n = 0u64;
        while rx.recv(&mut buf).is_ok() {
            n += 1;
        }
        n
    });
    let payload = vec![1u8; size];
    let mut sent = 0;
    while sent < count {
        for _ in 0..burst.min(count - sent) {
            tx.send_to(&payload, (SERVER_ADDR, port)).unwrap();
            sent += 1;
        }
        thread::sleep(Duration::from_millis(1));
    }
    receiving.join().unwrap()
}

/// The `p`-quantile (nearest rank) of `values`.
pub fn quantile(values: &mut [u64], p: f64) -> u64 {
    values.sort_unstable();
    let rank = ((p * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}
