//! The host manager (docs/coupled-flows.md "The host manager") with real processes and kernel
//! TCP on loopback: two `alcc serve` processes share one group through `alcc manager`, and when
//! one is killed with -9 the other reclaims its share within 2 s.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

mod common;
use common::{spawn_first_line, TmpDir, ALCC};

/// Children killed when the test ends, also when it fails.
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `alcc serve` paced at 16 Mbit/s (`fixed:rate=16`, 2 MB/s) in group `g` on `socket`.
fn serve(socket: &std::path::Path) -> (Child, u16) {
    let (child, line) = spawn_first_line(
        Command::new(ALCC)
            .args(["serve", "--cc", "fixed:rate=16", "--bytes", "100000000000", "--http", "--port", "0"])
            .args(["--group", "g", "--manager"])
            .arg(socket),
    );
    let port = line.trim().rsplit(':').next().unwrap().parse().expect("serve printed its port");
    (child, port)
}

/// A client asking for weight `w` that counts what it receives.
fn client(port: u16, w: u32, counter: Arc<AtomicU64>) {
    thread::spawn(move || {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(s, "GET /?weight={w} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut buf = vec![0u8; 64 << 10];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            counter.fetch_add(n as u64, Ordering::Relaxed);
        }
    });
}

fn rate_over(c: &AtomicU64, span: Duration) -> f64 {
    let a = c.load(Ordering::Relaxed);
    thread::sleep(span);
    (c.load(Ordering::Relaxed) - a) as f64 / span.as_secs_f64()
}

#[test]
fn two_processes_share_a_group_and_reclaim_a_killed_members_share() {
    let dir = TmpDir::new("manager");
    let socket = dir.path("m.sock");
    let (manager, line) = spawn_first_line(Command::new(ALCC).arg("manager").arg("--socket").arg(&socket));
    assert!(line.starts_with("alcc manager: listening"), "{line:?}");
    let mut children = Children(vec![manager]);
    let (a, port_a) = serve(&socket);
    children.0.push(a);
    let (b, port_b) = serve(&socket);
    children.0.push(b);
    let (ca, cb) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    client(port_a, 1, ca.clone());
    client(port_b, 3, cb.clone());
    // Two flows paced at 2 MB/s each: the group's aggregate is 4 MB/s, shared 1:3 across the
    // two processes.
    thread::sleep(Duration::from_millis(1500));
    let a0 = ca.load(Ordering::Relaxed);
    let b0 = cb.load(Ordering::Relaxed);
    thread::sleep(Duration::from_secs(1));
    let (ra, rb) = ((ca.load(Ordering::Relaxed) - a0) as f64, (cb.load(Ordering::Relaxed) - b0) as f64);
    eprintln!("shared: a {ra} B/s, b {rb} B/s");
    assert!((ra / 1e6 - 1.0).abs() < 0.15, "weight 1 got {ra} B/s, want 1 MB/s");
    assert!((rb / 3e6 - 1.0).abs() < 0.15, "weight 3 got {rb} B/s, want 3 MB/s");
    // kill -9 the second process: the first reclaims the whole aggregate.
    let killed = Instant::now();
    children.0[2].kill().unwrap();
    let mut reclaimed = None;
    while killed.elapsed() < Duration::from_secs(4) {
        if rate_over(&ca, Duration::from_millis(100)) > 0.9 * 4e6 {
            reclaimed = Some(killed.elapsed());
            break;
        }
    }
    eprintln!("reclaimed after {reclaimed:?}");
    let after = reclaimed.expect("the survivor never reached 90 % of the aggregate");
    assert!(after < Duration::from_secs(2), "reclaimed after {after:?}");
}

#[test]
fn manager_without_a_name_or_a_manager_is_refused() {
    let out = Command::new(ALCC)
        .args([
            "serve",
            "--cc",
            "copa",
            "--bytes",
            "1",
            "--group",
            "auto",
            "--manager",
            "/nonexistent/m.sock",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--group NAME"));
    let out =
        Command::new(ALCC).args(["serve", "--cc", "copa", "--bytes", "1", "--weight", "0"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("weight"));
}
