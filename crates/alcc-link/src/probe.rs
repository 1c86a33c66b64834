//! Traffic for measuring a testbed: a TCP bulk download and a UDP blast, with plain std
//! sockets opened inside the namespaces. Used by the end-to-end tests and the benchmark.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::error::LinkError;
use crate::relay::CounterSnapshot;
use crate::testbed::{set_congestion_control, Dir, Side, Testbed, SERVER_ADDR};

/// Downlink counters at the end of a transfer's warm-up and at its end.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// After the warm-up.
    pub start: CounterSnapshot,
    /// At the end.
    pub end: CounterSnapshot,
    /// Bytes the receiving application read over the whole transfer.
    pub received: u64,
}

impl Window {
    /// Bytes departed over bytes the opportunities in between could carry.
    pub fn utilization(&self) -> f64 {
        let offered =
            (self.end.opportunities - self.start.opportunities) as f64 * crate::OPPORTUNITY_BYTES as f64;
        (self.end.departure_bytes - self.start.departure_bytes) as f64 / offered.max(1.0)
    }
}

fn io_err(what: &str) -> impl FnOnce(io::Error) -> LinkError + '_ {
    move |e| LinkError::io(what.to_string(), e)
}

/// A TCP transfer from the server to the client (the downlink) with kernel congestion
/// control `cc`, lasting `total`; returns the downlink counters after `warmup` and at the end.
pub fn bulk_download(tb: &Testbed, cc: &str, warmup: Duration, total: Duration) -> Result<Window, LinkError> {
    let listener =
        tb.run_in(Side::Server, || TcpListener::bind((SERVER_ADDR, 0)))?.map_err(io_err("listen"))?;
    let port = listener.local_addr().map_err(io_err("listen"))?.port();
    let client =
        tb.run_in(Side::Client, || TcpStream::connect((SERVER_ADDR, port)))?.map_err(io_err("connect"))?;
    let (server, _) = listener.accept().map_err(io_err("accept"))?;
    set_congestion_control(&server, cc).map_err(io_err("setting TCP_CONGESTION"))?;
    let mut reader = client.try_clone().map_err(io_err("clone"))?;
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
    let mut writer = server.try_clone().map_err(io_err("clone"))?;
    let sending = thread::spawn(move || {
        let chunk = vec![7u8; 1 << 16];
        while !writer_stop.load(Ordering::Relaxed) && writer.write_all(&chunk).is_ok() {}
    });
    let t0 = Instant::now();
    thread::sleep(warmup);
    let start = tb.counters(Dir::Downlink);
    thread::sleep(total.saturating_sub(t0.elapsed()));
    let end = tb.counters(Dir::Downlink);
    stop.store(true, Ordering::Relaxed);
    // Unblocks both threads without waiting for the queue to drain.
    let _ = server.shutdown(Shutdown::Both);
    let _ = client.shutdown(Shutdown::Both);
    let _ = sending.join();
    let received = receiving.join().unwrap_or(0);
    Ok(Window { start, end, received })
}

/// Sends `count` UDP datagrams of `size` bytes from the client to the server, `burst` at a
/// time with a 1 ms pause, and returns how many the server's socket received.
pub fn udp_blast(tb: &Testbed, count: u64, size: usize, burst: u64) -> Result<u64, LinkError> {
    let rx = tb.run_in(Side::Server, || UdpSocket::bind((SERVER_ADDR, 0)))?.map_err(io_err("bind"))?;
    let port = rx.local_addr().map_err(io_err("bind"))?.port();
    let tx = tb.run_in(Side::Client, || UdpSocket::bind(("0.0.0.0", 0)))?.map_err(io_err("bind"))?;
    rx.set_read_timeout(Some(Duration::from_millis(300))).map_err(io_err("timeout"))?;
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
        for _ in 0..burst.max(1).min(count - sent) {
            tx.send_to(&payload, (SERVER_ADDR, port)).map_err(io_err("send"))?;
            sent += 1;
        }
        thread::sleep(Duration::from_millis(1));
    }
    Ok(receiving.join().unwrap_or(0))
}
