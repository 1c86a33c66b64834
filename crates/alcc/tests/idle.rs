//! An idle flow costs no CPU. Its own test binary, so no other test's flows share the driver.

mod common;

use std::io::Read;
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use alcc::{AlccListener, Options};
use common::write_pattern;

#[test]
fn idle_flow_costs_no_cpu() {
    let listener = AlccListener::bind("127.0.0.1:0", Options::with_cc("fixed:window=10")).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut client = TcpStream::connect(addr).unwrap();
    let (mut s, _) = listener.accept().unwrap();
    write_pattern(&mut s, 1 << 20).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    client.read_exact(&mut buf).unwrap();
    std::io::Write::flush(&mut s).unwrap();
    let start = Instant::now();
    while s.info().bytes_in_flight > 0 && start.elapsed() < Duration::from_secs(10) {
        thread::sleep(Duration::from_millis(2));
    }
    thread::sleep(Duration::from_millis(100));
    let d0 = alcc::driver_stats().unwrap();
    let ticks0 = common::thread_ticks("alcc-driver").unwrap();
    thread::sleep(Duration::from_secs(1));
    let d1 = alcc::driver_stats().unwrap();
    let (flows, cpu0, cpu1) = (d1.flows, d0.cpu_time, d1.cpu_time);
    let ticks1 = common::thread_ticks("alcc-driver").unwrap();
    eprintln!(
        "idle second: driver cpu {:?}, {} ticks, {} wakeups, {flows} flows",
        cpu1 - cpu0,
        ticks1 - ticks0,
        d1.wakeups - d0.wakeups
    );
    assert!(flows >= 1);
    assert!(cpu1 - cpu0 < Duration::from_micros(500), "driver used {:?} while idle", cpu1 - cpu0);
    assert_eq!(ticks1, ticks0);
    s.close(Some(Duration::from_secs(5))).unwrap();
}
