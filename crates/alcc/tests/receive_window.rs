//! The receiving side of kernel mode against a plain kernel TCP server on loopback: DRWA's
//! window clamp is applied (read back from the socket), the bytes arrive intact, the window
//! scale covers the largest window, the static cap's buffer is what was asked, and a buffer
//! the kernel will not grant is refused with a cause.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::thread;

use alcc::{sys, AlccReceiver, Options, ReceiveWindow};

mod common;
use common::{read_all, write_pattern};

/// A plain kernel TCP server (no alcc) that writes `total` pattern bytes, paced by the kernel
/// at `rate` bytes/s, and returns their checksum.
fn plain_server(total: u64, rate: u64) -> (std::net::SocketAddr, thread::JoinHandle<u64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = thread::spawn(move || {
        let (mut s, _): (TcpStream, _) = listener.accept().unwrap();
        sys::set_max_pacing_rate(s.as_raw_fd(), Some(rate)).unwrap();
        let sum = write_pattern(&mut s, total).unwrap();
        s.flush().unwrap();
        sum
    });
    (addr, handle)
}

fn receive(window: &str, total: u64, rate: u64) -> (AlccReceiver, u64, u64, u64) {
    let (addr, server) = plain_server(total, rate);
    let options = Options::default().receive_window(window.parse().unwrap());
    let mut r = AlccReceiver::connect(addr, &options).expect("connect");
    let (n, sum) = read_all(&mut r).unwrap();
    (r, n, sum, server.join().unwrap())
}

#[test]
fn drwa_clamps_the_window_and_the_bytes_arrive_intact() {
    // 16 MiB paced at 400 Mbit/s: about 0.3 s, many RTTs of DRWA rounds.
    let total = 16 << 20;
    let (r, n, sum, sent) = receive("drwa", total, 50_000_000);
    assert_eq!((n, sum), (total, sent), "bytes intact");
    let w = r.stats().window.expect("window stats");
    assert!(w.updates >= 10, "the model updated once per RTT: {w:?}");
    let clamp = w.clamp.expect("a clamp was applied");
    assert!(w.clamp_sets >= 1);
    assert!(clamp < w.ceiling, "DRWA set a window below the buffer's largest: {w:?}");
    let fd = r.as_raw_fd();
    let applied = sys::get_int(fd, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP).unwrap() as u64;
    assert_eq!(applied, clamp, "the kernel holds the clamp DRWA set");
    // The window scale, chosen in the SYN, can express the largest window the buffer allows.
    let info = sys::tcp_info(fd).unwrap();
    let rcv_wscale = u32::from(info.wscale >> 4);
    assert!(65535u64 << rcv_wscale >= w.ceiling, "wscale {rcv_wscale} too small for {}", w.ceiling);
    assert!(w.rcvbuf >= 4 << 20, "a locked buffer of several MiB: {w:?}");
}

#[test]
fn the_static_cap_is_the_buffer_asked_for() {
    let total = 8 << 20;
    let (r, n, sum, sent) = receive("static:rcvbuf=262144", total, 100_000_000);
    assert_eq!((n, sum), (total, sent));
    let w = r.stats().window.unwrap();
    assert_eq!((w.rcvbuf, w.clamp, w.updates), (262144, None, 0));
    let fd = r.as_raw_fd();
    assert_eq!(sys::get_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF).unwrap(), 262144);
    // Locked: autotuning did not grow it while 8 MiB came in.
    assert!(u64::from(sys::tcp_info(fd).unwrap().rcv_wnd) <= 262144);
}

#[test]
fn kernel_mode_receiver_sends_a_request_and_reads_the_answer() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut req = [0u8; 4];
        s.read_exact(&mut req).unwrap();
        s.write_all(&req).unwrap();
    });
    let options = Options::default().receive_window(ReceiveWindow::Kernel);
    let mut r = AlccReceiver::connect(addr, &options).unwrap();
    r.write_all(b"ping").unwrap();
    let mut back = Vec::new();
    r.read_to_end(&mut back).unwrap();
    assert_eq!(back, b"ping");
    server.join().unwrap();
}

#[test]
fn an_explicit_buffer_the_kernel_will_not_grant_is_refused_with_its_cause() {
    // 1 GiB + : beyond rmem_max for everyone but CAP_NET_ADMIN, and beyond what SO_RCVBUFFORCE
    // gives root too (the kernel caps the doubled value at INT_MAX, so ask for just below it
    // and expect a grant when privileged).
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let rmem_max: u64 =
        std::fs::read_to_string("/proc/sys/net/core/rmem_max").unwrap().trim().parse().unwrap();
    let ask = 4 * rmem_max + 4096;
    let options = Options::default().receive_window(format!("drwa:rcvbuf={ask}").parse().unwrap());
    match AlccReceiver::connect(addr, &options) {
        Ok(r) => {
            // Only a process with CAP_NET_ADMIN (SO_RCVBUFFORCE) gets it.
            assert!(r.stats().window.unwrap().rcvbuf >= ask);
            assert_eq!(unsafe_free_uid(), 0, "granted {ask} bytes without privilege");
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains("net.core.rmem_max"), "{msg}");
            assert_ne!(unsafe_free_uid(), 0, "refused although root: {msg}");
        }
    }
    drop(listener);
}

/// The effective uid, from /proc (no unsafe in tests).
fn unsafe_free_uid() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}
