//! Many concurrent flows in one process (issue 18 item 2): `FLOWS` alcc streams accepted by one
//! listener in this process, each sending `BYTES` bytes under `fixed:window=40` (kernel mode,
//! ACK timestamps on), read by a client process (this binary again, so that each process needs
//! about `FLOWS` descriptors, not twice that). Every transfer must complete byte-identical (the
//! client checks each flow's FNV-1a checksum). Prints the server's CPU time per flow (getrusage:
//! the sender process alone), its RSS growth per flow, and the driver thread's step and
//! wake-up latency percentiles (`alcc::DriverStats::step_latency`).
//!
//! `cargo bench -p alcc --bench flows` (bench/flows.sh raises `ulimit -n` first);
//! `ALCC_BENCH_FLOWS` (default 10000), `ALCC_BENCH_BYTES` (default 65536).
//! The process needs `FLOWS + 100` descriptors: the README's `ulimit -n` line says so.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use alcc::{AlccListener, AlccStream, Options, Percentiles};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Byte `i` of every flow's stream (the same pattern as the tests').
fn pattern(offset: u64, buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        let x = (offset + i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        *b = (x >> 56) as u8 ^ (x >> 23) as u8;
    }
}

/// FNV-1a, 64-bit.
fn fnv(sum: u64, data: &[u8]) -> u64 {
    data.iter().fold(sum, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

const FNV0: u64 = 0xcbf2_9ce4_8422_2325;

/// A field of /proc/self/status (kB), e.g. `VmRSS`.
fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':')?.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The soft limit on open descriptors.
fn open_files_limit() -> u64 {
    let s = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3)?.parse().ok())
        .unwrap_or(0)
}

/// This process's user and system CPU time (utime + stime of /proc/self/stat).
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rfind(')').map_or("", |i| &stat[i + 2..]);
    let f: Vec<u64> = rest.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// The client process: opens `flows` connections to `addr`, reads each to its end from four
/// threads, prints one line `complete OK BAD` (flows whose bytes and checksum matched, and not).
fn client(addr: &str, flows: usize, bytes: u64) {
    let mut conns = Vec::with_capacity(flows);
    for i in 0..flows {
        let s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {i}: {e}"));
        s.set_nonblocking(true).expect("non-blocking");
        conns.push(s);
    }
    let mut want = vec![0u8; bytes as usize];
    pattern(0, &mut want);
    let want = (bytes, fnv(FNV0, &want));
    let groups: Vec<Vec<TcpStream>> = {
        let per = flows.div_ceil(4).max(1);
        let mut g = Vec::new();
        while !conns.is_empty() {
            let rest = conns.split_off(per.min(conns.len()));
            g.push(std::mem::replace(&mut conns, rest));
        }
        g
    };
    let readers: Vec<_> = groups
        .into_iter()
        .map(|mut group| {
            thread::spawn(move || {
                let mut state = vec![(0u64, FNV0, false); group.len()];
                let mut buf = vec![0u8; 64 << 10];
                while state.iter().any(|s| !s.2) {
                    let mut progress = false;
                    for (s, st) in group.iter_mut().zip(state.iter_mut()).filter(|(_, st)| !st.2) {
                        match s.read(&mut buf) {
                            Ok(0) => st.2 = true,
                            Ok(n) => {
                                st.0 += n as u64;
                                st.1 = fnv(st.1, &buf[..n]);
                                progress = true;
                            }
                            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                            Err(_) => st.2 = true,
                        }
                    }
                    if !progress {
                        thread::sleep(Duration::from_millis(1));
                    }
                }
                state.into_iter().map(|s| (s.0, s.1)).collect::<Vec<_>>()
            })
        })
        .collect();
    let results: Vec<(u64, u64)> = readers.into_iter().flat_map(|t| t.join().expect("reader")).collect();
    let ok = results.iter().filter(|&&r| r == want).count();
    println!("complete {ok} {}", results.len() - ok);
}

fn show(what: &str, p: &Percentiles) {
    println!(
        "{what}: {} recorded, p50 {:.1?}, p99 {:.1?}, p99.9 {:.1?}, max {:.1?}",
        p.count, p.p50, p.p99, p.p999, p.max
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flows = env_u64("ALCC_BENCH_FLOWS", 10_000) as usize;
    let bytes = env_u64("ALCC_BENCH_BYTES", 64 << 10);
    if let Some(i) = args.iter().position(|a| a == "--client") {
        client(&args[i + 1], flows, bytes);
        return;
    }
    let limit = open_files_limit();
    if limit < flows as u64 + 100 {
        eprintln!(
            "flows: {flows} flows need {} open descriptors in this process, the limit is {limit}: \
             raise it first (`ulimit -n {}`, bench/flows.sh does)",
            flows + 100,
            flows + 100
        );
        std::process::exit(1);
    }
    let options = Options { queue_capacity: 64 << 10, ..Options::with_cc("fixed:window=40") };
    let listener = AlccListener::bind("127.0.0.1:0", options).expect("bind");
    let addr = listener.local_addr().expect("address").to_string();
    let drv0 = alcc::driver_stats().expect("driver");
    let (rss0, cpu0, start) = (status_kib("VmRSS"), process_cpu(), Instant::now());
    let exe = std::env::current_exe().expect("own path");
    let mut child =
        Command::new(exe).args(["--client", &addr]).stdout(Stdio::piped()).spawn().expect("client process");

    let mut streams: Vec<(AlccStream, u64)> = Vec::with_capacity(flows);
    for _ in 0..flows {
        let (mut s, _) = listener.accept().expect("accept");
        s.set_nonblocking(true);
        streams.push((s, 0));
    }
    let accepted = start.elapsed();
    let mut buf = vec![0u8; 16 << 10];
    let mut peak_rss = 0;
    loop {
        let (mut progress, mut left) = (false, 0);
        for (s, off) in streams.iter_mut() {
            while *off < bytes {
                let n = (bytes - *off).min(buf.len() as u64) as usize;
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
            left += usize::from(*off < bytes);
        }
        peak_rss = peak_rss.max(status_kib("VmRSS"));
        if left == 0 {
            break;
        }
        if !progress {
            thread::sleep(Duration::from_millis(1));
        }
    }
    let held = alcc::driver_stats().expect("driver").flows;
    let mut failed = 0;
    for (s, _) in streams {
        failed += usize::from(s.close(Some(Duration::from_secs(120))).is_err());
    }
    let took = start.elapsed();
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("client stdout")).read_line(&mut line).expect("client says");
    let status = child.wait().expect("client exit");
    let drv = alcc::driver_stats().expect("driver");
    let cpu = process_cpu() - cpu0;
    let driver_cpu = drv.cpu_time - drv0.cpu_time;
    let per_flow = |d: Duration| d.as_secs_f64() * 1e6 / flows as f64;
    println!("{flows} flows x {bytes} bytes, fixed:window=40, kernel mode, open-files limit {limit}");
    println!("accepted in {accepted:.2?}, all sent and closed in {took:.2?}; {held} flows held at the peak");
    println!("client: {} ({status}); close errors at the server: {failed}", line.trim());
    println!(
        "server CPU {cpu:.2?} ({:.0} us/flow), of it the driver thread {driver_cpu:.2?} ({:.0} us/flow), {} wake-ups",
        per_flow(cpu),
        per_flow(driver_cpu),
        drv.wakeups - drv0.wakeups
    );
    println!(
        "RSS {rss0} -> {peak_rss} KiB at the peak: {:.1} KiB/flow (64 KiB queue capacity each), VmHWM {} KiB",
        peak_rss.saturating_sub(rss0) as f64 / flows as f64,
        status_kib("VmHWM")
    );
    show("driver step", &drv.step_latency.step);
    show("driver wake-up", &drv.step_latency.round);
    std::io::stdout().flush().ok();
    let ok = line.trim() == format!("complete {flows} 0") && failed == 0 && drv.flows == 0;
    if !ok {
        eprintln!("flows: not every transfer completed byte-identical");
        std::process::exit(1);
    }
}
