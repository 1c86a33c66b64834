//! `alcc serve-plain` (the plain-TCP baseline, sendfile) on loopback: the bytes, the deadline,
//! the underlay, the errors, and its CPU record.

use std::process::Command;
use std::time::{Duration, Instant};

mod common;
use common::{pattern, serve_plain, served, TmpDir, ALCC, BLOCK};

/// Waits (at most 30 s) for the server to exit; returns its stderr.
fn wait_ok(child: std::process::Child) -> String {
    common::wait_ok_within(child, Duration::from_secs(30))
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
    let (child, port) =
        serve_plain(&["--bytes", &n.to_string(), "--http", "--rusage", rusage.to_str().unwrap()]);
    let got = get_http(&port, &out);
    assert!(got.status.success(), "{}", String::from_utf8_lossy(&got.stderr));
    let log = wait_ok(child);
    assert!(log.contains(&format!("{n} bytes")) && log.contains("complete"), "{log}");
    let want = served(n);
    let data = std::fs::read(&out).unwrap();
    assert_eq!(data.len(), n);
    for (i, (got, want)) in data.chunks(BLOCK).zip(want.chunks(BLOCK)).enumerate() {
        assert!(got == want, "block {i} differs");
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
    let (child, port) = serve_plain(&["--file", file.to_str().unwrap(), "--http"]);
    assert!(get_http(&port, &out).status.success());
    wait_ok(child);
    assert!(std::fs::read(&out).unwrap() == data, "the copy differs");
}

#[test]
fn seconds_resets_a_download_that_would_not_end() {
    let (child, port) = serve_plain(&["--bytes", "100000000000", "--http", "--seconds", "1"]);
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
    let (child, port) =
        serve_plain(&["--bytes", "100000000000", "--http", "--underlay", "reno", "--seconds", "3"]);
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
