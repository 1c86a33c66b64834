//! `alcc serve-plain` (the plain-TCP baseline, sendfile) on loopback: the bytes, the deadline,
//! the underlay, the errors, and its CPU record.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::TmpDir;

const ALCC: &str = env!("CARGO_BIN_EXE_alcc");

/// Size of the block `--bytes` repeats (serve_plain.rs).
const BLOCK: usize = 8 << 20;

fn pattern(offset: u64, buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        let x = (offset + i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        *b = (x >> 56) as u8 ^ (x >> 23) as u8;
    }
}

/// Starts `alcc serve-plain ARGS --port 0 --count 1`; returns the child and its port.
fn serve(args: &[&str]) -> (Child, String) {
    let mut child = Command::new(ALCC)
        .arg("serve-plain")
        .args(args)
        .args(["--port", "0", "--count", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("alcc serve-plain: listening on "), "printed {line:?}");
    let port = line.trim().rsplit(':').next().unwrap().to_string();
    (child, port)
}

/// Waits (at most 30 s) for the server to exit; returns its stderr.
fn wait_ok(mut child: Child) -> String {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("serve-plain did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "serve-plain failed: {err}");
    err
}

fn get_http(port: &str, out: &std::path::Path) -> std::process::Output {
    Command::new(ALCC)
        .args(["get", &format!("127.0.0.1:{port}"), "--http", "--out"])
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn generated_bytes_are_the_pattern_block_repeated_and_rusage_is_written() {
    let n = 2 * BLOCK + 12_345;
    let dir = TmpDir::new("plain-bytes");
    let (out, rusage) = (dir.path("got.bin"), dir.path("rusage.json"));
    let (child, port) = serve(&["--bytes", &n.to_string(), "--http", "--rusage", rusage.to_str().unwrap()]);
    let got = get_http(&port, &out);
    assert!(got.status.success(), "{}", String::from_utf8_lossy(&got.stderr));
    let log = wait_ok(child);
    assert!(log.contains(&format!("{n} bytes")) && log.contains("complete"), "{log}");
    let mut block = vec![0u8; BLOCK];
    pattern(0, &mut block);
    let data = std::fs::read(&out).unwrap();
    assert_eq!(data.len(), n);
    for (i, chunk) in data.chunks(BLOCK).enumerate() {
        assert!(chunk == &block[..chunk.len()], "block {i} differs");
    }
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&rusage).unwrap()).unwrap();
    assert!(r["cpu_s"].as_f64().unwrap() > 0.0 && r["max_rss_kb"].as_u64().unwrap() > 0, "{r}");
}

#[test]
fn a_file_is_served_byte_identical() {
    let dir = TmpDir::new("plain-file");
    let (file, out) = (dir.path("data.bin"), dir.path("copy.bin"));
    let mut data = vec![0u8; 5_432_109];
    pattern(99, &mut data);
    std::fs::write(&file, &data).unwrap();
    let (child, port) = serve(&["--file", file.to_str().unwrap(), "--http"]);
    assert!(get_http(&port, &out).status.success());
    wait_ok(child);
    assert!(std::fs::read(&out).unwrap() == data, "the copy differs");
}

#[test]
fn seconds_resets_a_download_that_would_not_end() {
    let (child, port) = serve(&["--bytes", "100000000000", "--http", "--seconds", "1"]);
    let start = Instant::now();
    // A reader that reads slowly: the server blocks in sendfile, and the deadline must end it.
    let mut slow = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    std::io::Write::write_all(&mut slow, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let log = wait_ok(child);
    let took = start.elapsed().as_secs_f64();
    assert!((0.9..10.0).contains(&took), "the server stopped after {took} s");
    assert!(log.contains("stopped at --seconds, connection reset"), "{log}");
    let mut buf = vec![0u8; 1 << 20];
    let mut result = Ok(1);
    while matches!(result, Ok(n) if n > 0) {
        result = std::io::Read::read(&mut slow, &mut buf);
    }
    assert_eq!(result.map_err(|e| e.kind()), Err(std::io::ErrorKind::ConnectionReset));
}

#[test]
fn the_underlay_is_the_connections_congestion_control() {
    alcc_testenv::require!(alcc_testenv::needs().program("ss").kernel_cc("reno"));
    let (child, port) = serve(&["--bytes", "100000000000", "--http", "--underlay", "reno", "--seconds", "3"]);
    let mut client = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    std::io::Write::write_all(&mut client, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut buf = vec![0u8; 1 << 16];
    std::io::Read::read_exact(&mut client, &mut buf).unwrap();
    // The server's side of the connection, as the kernel reports it.
    let ss = Command::new("ss").args(["-tin", &format!("sport = :{port}")]).output().unwrap();
    let text = String::from_utf8_lossy(&ss.stdout);
    assert!(text.contains(" reno "), "ss does not show reno: {text}");
    drop(client);
    let log = wait_ok(child);
    assert!(log.contains("the client left") || log.contains("connection reset"), "{log}");
}

#[test]
fn a_refused_underlay_names_the_allowed_list_before_listening() {
    let out =
        Command::new(ALCC).args(["serve-plain", "--underlay", "nosuch", "--bytes", "1"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`nosuch` refused") && err.contains("allowed without privileges:"), "{err}");
    assert!(out.stdout.is_empty(), "it listened: {}", String::from_utf8_lossy(&out.stdout));
    let out = Command::new(ALCC).args(["serve-plain", "--count", "1"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--file F or --bytes N"));
}
