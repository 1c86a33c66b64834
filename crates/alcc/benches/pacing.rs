//! How close a paced flow gets to its rate on loopback: `fixed:rate=R` for R = 10, 40 and
//! 100 Mbit/s, two seconds each, the rate the receiver measured as a ratio to R (the first
//! read, which rides on the pacer's initial credit, not counted). A benchmark, not a test
//! (tests/loopback.rs only checks that the pacer never exceeds its rate, which load cannot
//! cause): `cargo bench -p alcc --bench pacing`, on a quiet machine.

use std::io::Read;
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use alcc::{AlccListener, Options};

/// Sends `seconds` worth of bytes at `mbps` under `fixed:rate=mbps`; the receiver's rate.
fn paced(mbps: u64, seconds: u64) -> f64 {
    let total = mbps * 1_000_000 / 8 * seconds;
    let spec = format!("fixed:rate={mbps}");
    let listener = AlccListener::bind("127.0.0.1:0", Options::with_cc(&spec)).expect("bind");
    let addr = listener.local_addr().expect("addr");
    let client = thread::spawn(move || {
        let mut s = TcpStream::connect(addr).expect("connect");
        let mut buf = vec![0u8; 1 << 20];
        let first = s.read(&mut buf).expect("read") as u64;
        let start = Instant::now();
        let mut rest = 0u64;
        loop {
            match s.read(&mut buf).expect("read") {
                0 => break,
                n => rest += n as u64,
            }
        }
        (first + rest, rest as f64 * 8.0 / start.elapsed().as_secs_f64() / 1e6)
    });
    let (mut stream, _) = listener.accept().expect("accept");
    let buf = vec![0x5au8; 1 << 16];
    let mut sent = 0;
    while sent < total {
        let n = (total - sent).min(buf.len() as u64) as usize;
        std::io::Write::write_all(&mut stream, &buf[..n]).expect("write");
        sent += n as u64;
    }
    stream.close(Some(Duration::from_secs(60))).expect("close");
    let (got, rate) = client.join().expect("client");
    assert_eq!(got, total, "short transfer");
    rate
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to filter here.
    for mbps in [10, 40, 100] {
        let rate = paced(mbps, 2);
        println!("fixed:rate={mbps}: {rate:.2} Mbit/s, {:.3} of the rate", rate / mbps as f64);
    }
}
