//! Loopback throughput of one flow: alcc with an unbounded window (`fixed`) and alcc's
//! `none` mode, each as a ratio to plain kernel TCP measured in the same run, rounds
//! interleaved. A benchmark, not a test: `cargo bench -p alcc --bench loopback_throughput`
//! (`ALCC_BENCH_BYTES` sets the bytes per transfer, `ALCC_BENCH_ROUNDS` the rounds,
//! `ALCC_BENCH_CHUNK` and `ALCC_BENCH_LOWAT` the engine's chunk and TCP_NOTSENT_LOWAT).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::Instant;

use alcc::{AlccListener, Options};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Reads to the end; returns the byte count.
fn drain(mut s: TcpStream) -> u64 {
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0;
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return n,
            Ok(k) => n += k as u64,
        }
    }
}

/// Sends `total` bytes through `w`; the clock stops when the client has read them all.
fn timed(total: u64, connect: impl FnOnce() -> TcpStream + Send + 'static, send: impl FnOnce(&[u8])) -> f64 {
    let client = thread::spawn(move || drain(connect()));
    let buf = vec![0x5au8; 1 << 20];
    let start = Instant::now();
    send(&buf);
    let got = client.join().unwrap_or(0);
    assert_eq!(got, total, "short transfer");
    got as f64 * 8.0 / start.elapsed().as_secs_f64() / 1e9
}

/// Writes `total` bytes from repeated `buf`.
fn write_total(out: &mut impl Write, buf: &[u8], total: u64) {
    let mut left = total;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        out.write_all(&buf[..n]).unwrap();
        left -= n as u64;
    }
}

fn plain(total: u64) -> f64 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    timed(
        total,
        move || TcpStream::connect(addr).unwrap(),
        |buf| {
            let (mut s, _) = listener.accept().unwrap();
            write_total(&mut s, buf, total);
        },
    )
}

fn alcc(total: u64, cc: &str) -> f64 {
    let defaults = Options::default();
    let options = Options {
        max_chunk: env_u64("ALCC_BENCH_CHUNK", defaults.max_chunk),
        notsent_lowat: env_u64("ALCC_BENCH_LOWAT", u64::from(defaults.notsent_lowat)) as u32,
        ..Options::with_cc(cc)
    };
    let listener = AlccListener::bind("127.0.0.1:0", options).unwrap();
    let addr = listener.local_addr().unwrap();
    timed(
        total,
        move || TcpStream::connect(addr).unwrap(),
        |buf| {
            let (mut s, _) = listener.accept().unwrap();
            write_total(&mut s, buf, total);
            s.close(None).unwrap();
        },
    )
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs one quick round.
    let quick = !std::env::args().any(|a| a == "--bench");
    let total = env_u64("ALCC_BENCH_BYTES", if quick { 64 << 20 } else { 4 << 30 });
    let rounds = env_u64("ALCC_BENCH_ROUNDS", if quick { 1 } else { 3 }) as usize;
    let (mut p, mut f, mut n) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        p.push(plain(total));
        f.push(alcc(total, "fixed"));
        n.push(alcc(total, "none"));
        println!(
            "round {round}: plain TCP {:.2} Gbit/s, alcc fixed (unbounded) {:.2} Gbit/s, alcc none {:.2} Gbit/s",
            p[round], f[round], n[round]
        );
    }
    let (p, f, n) = (median(&mut p), median(&mut f), median(&mut n));
    println!(
        "median over {rounds} rounds of {} MiB: plain {p:.2} Gbit/s; alcc fixed {f:.2} Gbit/s = {:.2} x plain; \
         alcc none {n:.2} Gbit/s = {:.2} x plain",
        total >> 20,
        f / p,
        n / p
    );
}
