//! 1 GiB through a windowed flow on loopback, checksums compared (FNV over 2 GiB: about 5 s in
//! a release build). A test binary of its own, so that it does not share the CPU with the
//! timing-sensitive tests of loopback.rs (cargo runs test binaries one after another).

mod common;

use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use alcc::{AlccListener, Options};
use common::{read_all, write_pattern};

#[test]
fn gigabyte_arrives_identical() {
    let total = 1 << 30;
    let cc = std::env::var("ALCC_TEST_CC").unwrap_or_else(|_| "fixed:window=100".into());
    let listener = AlccListener::bind("127.0.0.1:0", Options::with_cc(&cc)).unwrap();
    let addr = listener.local_addr().unwrap();
    let client = thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        read_all(&mut s).unwrap()
    });
    let (mut stream, _) = listener.accept().unwrap();
    let start = Instant::now();
    let sum = write_pattern(&mut stream, total).unwrap();
    std::io::Write::flush(&mut stream).unwrap();
    // Everything in the kernel and acknowledged, before close takes the stream.
    let waiting = Instant::now();
    while stream.info().bytes_in_flight > 0 && waiting.elapsed() < Duration::from_secs(10) {
        thread::sleep(Duration::from_millis(2));
    }
    let info = stream.info();
    stream.close(Some(Duration::from_secs(60))).unwrap();
    let took = start.elapsed();
    let (got, got_sum) = client.join().unwrap();
    eprintln!(
        "1 GiB with {cc}: {took:.2?} ({:.0} Mbit/s incl. checksums), {} chunks, {} ACK stamps, {} TCP_INFO acks",
        total as f64 * 8.0 / took.as_secs_f64() / 1e6,
        info.chunks_sent,
        info.ack_stamps,
        info.info_acks
    );
    assert_eq!((got, got_sum), (total, sum));
    assert_eq!(info.bytes_acked, total);
}
