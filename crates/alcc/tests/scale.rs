//! A thousand concurrent flows in one process all complete, byte-identical. Prints the
//! driver's CPU time and the process's memory per flow (run with `--nocapture`).

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use alcc::{AlccListener, AlccStream, Options};
use common::{pattern, Fnv};

const FLOWS: usize = 1000;
const BYTES: u64 = 256 << 10;

fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rfind(')').map_or("", |i| &stat[i + 2..]);
    let f: Vec<u64> = rest.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    // utime and stime are fields 14 and 15 (11 and 12 after the state letter, which does not parse).
    let ticks = f.get(10).copied().unwrap_or(0) + f.get(11).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

#[test]
fn a_thousand_flows_complete() {
    // Two sockets per flow (server and client) plus a duplicate per client reader.
    // `make test` raises the soft limit to the hard one.
    alcc_testenv::require!(alcc_testenv::needs().open_files(3 * FLOWS as u64 + 100));
    let options = Options { queue_capacity: 64 << 10, ..Options::with_cc("fixed:window=40") };
    let listener = AlccListener::bind("127.0.0.1:0", options).unwrap();
    let addr = listener.local_addr().unwrap();
    let rss0 = common::rss_kib();
    let cpu0 = process_cpu();
    let drv0 = alcc::driver_stats().unwrap();
    let start = Instant::now();

    let server = thread::spawn(move || {
        let mut flows: Vec<(AlccStream, u64)> = Vec::new();
        for _ in 0..FLOWS {
            let (mut s, _) = listener.accept().unwrap();
            s.set_nonblocking(true);
            flows.push((s, 0));
        }
        let mut buf = vec![0u8; 16 << 10];
        let mut peak_rss = 0;
        loop {
            let mut progress = false;
            let mut left = 0;
            for (s, off) in flows.iter_mut() {
                while *off < BYTES {
                    let n = (BYTES - *off).min(buf.len() as u64) as usize;
                    pattern(*off, &mut buf[..n]);
                    match s.write(&buf[..n]) {
                        Ok(k) => {
                            *off += k as u64;
                            progress = true;
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(e) => panic!("write: {e}"),
                    }
                }
                left += usize::from(*off < BYTES);
            }
            peak_rss = peak_rss.max(common::rss_kib());
            if left == 0 {
                break;
            }
            if !progress {
                thread::sleep(Duration::from_millis(1));
            }
        }
        let drv = alcc::driver_stats().unwrap();
        for (s, _) in flows {
            s.close(Some(Duration::from_secs(60))).unwrap();
        }
        (peak_rss, drv.flows)
    });

    let mut conns = Vec::new();
    for _ in 0..FLOWS {
        let s = TcpStream::connect(addr).unwrap();
        s.set_nonblocking(true).unwrap();
        conns.push(s);
    }
    let readers: Vec<_> = conns
        .chunks(FLOWS / 4)
        .map(|c| c.iter().map(|s| s.try_clone().unwrap()).collect::<Vec<_>>())
        .map(|mut group| {
            thread::spawn(move || {
                let mut state = vec![(0u64, Fnv::default(), false); group.len()];
                let mut buf = vec![0u8; 64 << 10];
                while state.iter().any(|s| !s.2) {
                    let mut progress = false;
                    for (s, st) in group.iter_mut().zip(state.iter_mut()) {
                        if st.2 {
                            continue;
                        }
                        match s.read(&mut buf) {
                            Ok(0) => st.2 = true,
                            Ok(n) => {
                                st.0 += n as u64;
                                st.1.update(&buf[..n]);
                                progress = true;
                            }
                            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                            Err(e) => panic!("read: {e}"),
                        }
                    }
                    if !progress {
                        thread::sleep(Duration::from_millis(1));
                    }
                }
                state.into_iter().map(|s| (s.0, s.1 .0)).collect::<Vec<_>>()
            })
        })
        .collect();
    drop(conns);
    let mut expect = Fnv::default();
    let mut all = vec![0u8; BYTES as usize];
    pattern(0, &mut all);
    expect.update(&all);
    let results: Vec<(u64, u64)> = readers.into_iter().flat_map(|t| t.join().unwrap()).collect();
    let (peak_rss, peak_flows) = server.join().unwrap();
    let took = start.elapsed();
    assert_eq!(results.len(), FLOWS);
    assert!(results.iter().all(|&r| r == (BYTES, expect.0)), "a flow arrived incomplete or altered");
    let drv = alcc::driver_stats().unwrap();
    let cpu = process_cpu() - cpu0;
    let driver_cpu = drv.cpu_time - drv0.cpu_time;
    eprintln!(
        "{FLOWS} flows x {} KiB in {took:.2?}: driver CPU {driver_cpu:.2?} ({:.0} us/flow), process CPU {cpu:?} \
         (clients included), RSS {} -> {} KiB ({:.1} KiB/flow incl. 64 KiB queues), {peak_flows} flows held, \
         {} driver wakeups",
        BYTES >> 10,
        driver_cpu.as_secs_f64() * 1e6 / FLOWS as f64,
        rss0,
        peak_rss,
        peak_rss.saturating_sub(rss0) as f64 / FLOWS as f64,
        drv.wakeups - drv0.wakeups,
    );
    assert_eq!(drv.flows, 0, "every flow released after close");
}
