//! The `tokio` feature: a tokio server (one current-thread runtime) accepts with
//! `AsyncAlccListener`, reads the client's request through `AsyncRead` and answers 3 MiB
//! through `AsyncWrite` under a fixed pacing rate, while a second task on the same thread
//! keeps ticking: the writer waits on the readiness descriptor without blocking the runtime,
//! the bytes arrive intact and paced, and the process's CPU while waiting stays small.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use alcc::{AsyncAlccListener, Options};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const LEN: usize = 3 << 20;

fn pattern() -> Vec<u8> {
    (0..LEN).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect()
}

/// User + system CPU time of this process.
fn cpu() -> Duration {
    let text = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = text.rsplit_once(") ").map(|(_, r)| r.split(' ').collect()).unwrap_or_default();
    let ticks: u64 = fields.get(11..13).map_or(0, |f| f.iter().filter_map(|v| v.parse::<u64>().ok()).sum());
    Duration::from_millis(ticks * 10)
}

#[test]
fn a_tokio_server_writes_paced_without_blocking_its_runtime() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let listener =
        rt.block_on(AsyncAlccListener::bind("127.0.0.1:0", Options::with_cc("fixed:rate=16"))).unwrap();
    let addr = listener.local_addr().unwrap();
    let client = std::thread::spawn(move || {
        let mut conn = TcpStream::connect(addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        conn.write_all(b"GET\n").unwrap();
        let t0 = Instant::now();
        let mut got = Vec::new();
        conn.read_to_end(&mut got).unwrap();
        (got, t0.elapsed())
    });
    let (ticks, cpu_used) = rt.block_on(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        // Accepted under the listener's congestion control, the default underlay reno, not the
        // host's default (tests/accepted_congestion.rs checks every allowed name).
        assert_eq!(stream.get_ref().info().prior_congestion, "reno");
        let mut request = [0u8; 4];
        stream.read_exact(&mut request).await.unwrap();
        assert_eq!(&request, b"GET\n");
        let ticks = Arc::new(AtomicU32::new(0));
        let counter = ticks.clone();
        let ticker = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(10)).await;
                counter.fetch_add(1, Ordering::Relaxed);
            }
        });
        let cpu0 = cpu();
        let t0 = Instant::now();
        stream.write_all(&pattern()).await.unwrap();
        let writing = t0.elapsed();
        let ticked = ticks.load(Ordering::Relaxed);
        stream.shutdown().await.unwrap();
        // The queue still holds up to its capacity: wait until the engine handed it over.
        let info = stream.get_ref().info_handle();
        while !info.is_done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let used = cpu() - cpu0;
        ticker.abort();
        // About one tick per 10 ms of writing if the writer never blocked the thread.
        (ticked as f64 / (writing.as_secs_f64() * 100.0).max(1.0), used)
    });
    let (got, took) = client.join().unwrap();
    assert!(got == pattern(), "{} of {LEN} bytes, not byte-identical", got.len());
    // 3 MiB at 16 Mbit/s is 1.57 s; loopback TCP takes milliseconds.
    assert!(took > Duration::from_millis(1300), "took {took:?}: not paced");
    // A writer that blocked the runtime's one thread would leave the other task at 0 ticks for
    // the whole second; 0.2 leaves room for a loaded machine waking a 10 ms sleep late (up to
    // 50 ms per tick), so scheduling luck cannot fail it.
    assert!(ticks > 0.2, "the other task ticked {ticks:.2} of the expected times while the writer waited");
    // A writer spinning on a full queue would burn the whole 1.5 s on this thread.
    assert!(cpu_used < Duration::from_millis(500), "CPU while paced: {cpu_used:?}");
    eprintln!("3 MiB in {took:?}, CPU {cpu_used:?}, ticks {ticks:.2} of expected");
}
