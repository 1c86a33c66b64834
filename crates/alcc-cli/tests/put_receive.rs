//! The uplink on loopback: `alcc put` (the connecting side sends) to `alcc serve --receive`
//! (the accepting side receives and acknowledges), in framed and kernel mode; `curl -T` to the
//! HTTP PUT receiver; a connection that sends garbage is closed alone while another upload
//! goes on; argument errors.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{spawn_listening, wait_ok, TmpDir, ALCC};

/// Starts `alcc serve --receive ARGS --port 0`; returns the child and the port it printed.
fn receive(args: &[&str]) -> (Child, String) {
    spawn_listening(
        Command::new(ALCC).args(["serve", "--receive", "--port", "0", "--bind", "127.0.0.1"]).args(args),
        "alcc serve: receiving",
    )
}

fn random_file(path: &Path, len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let data: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    std::fs::write(path, &data).unwrap();
    data
}

fn put(port: &str, args: &[&str]) -> std::process::Output {
    Command::new(ALCC).args(["put", &format!("127.0.0.1:{port}")]).args(args).output().unwrap()
}

#[test]
fn put_uploads_framed_with_every_controller_kind() {
    let dir = TmpDir::new("put-framed");
    let file = dir.path("data.bin");
    let data = random_file(&file, 7_654_321, 1);
    let out = dir.path("out");
    std::fs::create_dir_all(&out).unwrap();
    let (server, port) = receive(&["--count", "3", "--out", out.to_str().unwrap()]);
    // One upload at a time, so that upload-N is the N-th controller's.
    for cc in ["mdi", "copa", "sprout"] {
        let r = put(&port, &["--cc", cc, "--file", file.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(r.status.success(), "{cc}: {err}");
        assert!(err.contains(&format!("{} bytes acknowledged", data.len())), "{cc}: {err}");
    }
    let log = wait_ok(server);
    for (n, cc) in ["mdi", "copa", "sprout"].iter().enumerate() {
        assert!(std::fs::read(out.join(format!("upload-{n}"))).unwrap() == data, "{cc}: the copy differs");
        assert!(log.contains(&format!("sender `{cc}`")), "{log}");
    }
}

#[test]
fn the_receiving_server_runs_sprouts_model_and_sends_its_forecasts_back() {
    // An upload bounded by time, not size: on loopback a 7.6 MB file can be delivered before
    // Sprout's first 20-ms tick closes (CI saw 42 ms and 0 reports), so a file's upload cannot
    // show that the forecasts flow. Two seconds hold a hundred ticks.
    let (server, port) = receive(&["--count", "1", "--seconds", "2"]);
    let r = put(&port, &["--cc", "sprout", "--bytes", "100000000000"]);
    assert!(!r.status.success(), "the server's deadline ended the upload with a reset");
    let log = wait_ok(server);
    let sprout = log.lines().find(|l| l.contains("sender `sprout`")).unwrap_or_else(|| panic!("{log}"));
    assert!(sprout.contains("stopped at --seconds"), "{sprout}");
    let reports: u64 = sprout
        .split(", ")
        .find_map(|part| part.strip_suffix(" reports"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no report count in {sprout}"));
    assert!(reports >= 10, "{reports} forecasts in 2 s of Sprout traffic: {sprout}");
}

#[test]
fn put_in_kernel_mode_and_curl_put_reach_the_plain_receiver() {
    let dir = TmpDir::new("put-kernel");
    let file = dir.path("data.bin");
    let data = random_file(&file, 3_000_001, 2);
    let out = dir.path("out");
    std::fs::create_dir_all(&out).unwrap();
    let (server, port) = receive(&["--mode", "kernel", "--count", "1", "--out", out.to_str().unwrap()]);
    let r = put(&port, &["--cc", "copa", "--mode", "kernel", "--file", file.to_str().unwrap()]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let log = wait_ok(server);
    assert!(log.contains("received 3000001 bytes"), "{log}");
    assert!(std::fs::read(out.join("upload-0")).unwrap() == data);

    let (server, port) =
        receive(&["--mode", "kernel", "--http", "--count", "2", "--out", out.to_str().unwrap()]);
    let url = format!("http://127.0.0.1:{port}/upload");
    alcc_testenv::require!(alcc_testenv::needs().program("curl"));
    let curl = Command::new("curl").args(["-sS", "-f", "-T"]).arg(&file).arg(&url).output().unwrap();
    assert!(curl.status.success(), "{}", String::from_utf8_lossy(&curl.stderr));
    // A GET is refused with its status, and the server goes on.
    let get =
        Command::new("curl").args(["-sS", "-o", "/dev/null", "-w", "%{http_code}", &url]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&get.stdout), "405");
    let log = wait_ok(server);
    assert!(std::fs::read(out.join("upload-0")).unwrap() == data, "curl's upload differs");
    assert!(log.contains("received 3000001 bytes"), "{log}");
    assert!(log.contains("GET: this server receives uploads"), "{log}");
}

/// An uploader that sends garbage has its connection closed with the rule it broke, while a
/// good upload at the same time completes byte-identical and the server keeps going.
#[test]
fn garbage_from_an_uploader_closes_that_connection_only() {
    let dir = TmpDir::new("put-garbage");
    let file = dir.path("data.bin");
    let data = random_file(&file, 20_000_000, 3);
    let out = dir.path("out");
    std::fs::create_dir_all(&out).unwrap();
    let (server, port) = receive(&["--count", "3", "--out", out.to_str().unwrap()]);
    // The good upload is paced (fixed rate) so that it is still running when the garbage comes.
    let mut good = Command::new(ALCC)
        .args(["put", &format!("127.0.0.1:{port}"), "--cc", "fixed:window=100,rate=200", "--file"])
        .arg(&file)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let mut bad = TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    bad.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    bad.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    // The server answers nothing and closes: EOF (or a reset), never a hang.
    let mut buf = [0u8; 64];
    let closed = matches!(bad.read(&mut buf), Ok(0) | Err(_));
    assert!(closed, "the server kept a connection that sent garbage");
    // A valid Hello followed by a data frame out of sequence is refused too.
    let mut bad = TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    bad.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut frames = vec![0xA1, 0xCC, 1, 1, 0, 0, 0, 3];
    frames.extend_from_slice(b"mdi");
    frames.extend_from_slice(&[0xA1, 0xCC, 1, 2, 0, 0, 0, 21]);
    frames.extend_from_slice(&7u64.to_be_bytes()); // sequence 7, not 0
    frames.extend_from_slice(&[0; 12]);
    frames.push(b'x');
    bad.write_all(&frames).unwrap();
    assert!(matches!(bad.read(&mut buf), Ok(0) | Err(_)), "an out-of-sequence frame was kept");
    let status = good.wait().unwrap();
    let mut err = String::new();
    good.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success(), "the good upload failed: {err}");
    let log = wait_ok(server);
    assert!(log.contains("upload failed") && log.contains("bad magic"), "{log}");
    assert!(log.contains("sequence"), "{log}");
    assert!(log.contains("received 20000000 bytes"), "{log}");
    assert!(std::fs::read(out.join("upload-0")).unwrap() == data, "the good upload differs");
}

#[test]
fn seconds_bound_an_upload_at_either_end() {
    let (server, port) = receive(&["--count", "1"]);
    let start = Instant::now();
    let r = put(&port, &["--cc", "fixed:window=20,rate=40", "--bytes", "100000000000", "--seconds", "1"]);
    let took = start.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    assert!(err.contains("stopped at --seconds"), "{err}");
    assert!((0.9..10.0).contains(&took), "the upload took {took} s");
    wait_ok(server);

    // A trickle (0.1 Mbit/s: one 256 KiB write would take 21 s): --seconds still ends it, not
    // the end of the write that was under way (each write gets only the time left).
    let (server, port) = receive(&["--count", "1"]);
    let start = Instant::now();
    let r = put(&port, &["--cc", "fixed:window=2,rate=0.1", "--bytes", "100000000000", "--seconds", "1"]);
    let took = start.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success() && err.contains("stopped at --seconds"), "{err}");
    assert!((0.9..10.0).contains(&took), "the slow upload took {took} s");
    wait_ok(server);

    let (server, port) = receive(&["--count", "1", "--seconds", "1"]);
    let start = Instant::now();
    let r = put(&port, &["--cc", "fixed:window=20,rate=40", "--bytes", "100000000000"]);
    assert!(!r.status.success(), "the server's deadline ended the upload with a reset");
    assert!(start.elapsed() < Duration::from_secs(10));
    let log = wait_ok(server);
    assert!(log.contains("stopped at --seconds"), "{log}");
}

#[test]
fn argument_errors_name_their_cause() {
    let run = |args: &[&str]| {
        let out = Command::new(ALCC).args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(run(&["serve", "--receive", "--cc", "copa"]).contains("cannot be used with"));
    assert!(run(&["serve", "--bytes", "10"]).contains("--cc"));
    assert!(run(&["serve", "--out", "/tmp"]).contains("--receive"));
    assert!(run(&["serve", "--receive", "--http", "--port", "0"]).contains("--http needs --mode kernel"));
    assert!(run(&["serve", "--receive", "--out", "/nonexistent-alcc-dir", "--port", "0"])
        .contains("not a directory"));
    assert!(run(&["put", "127.0.0.1:9", "--cc", "copa"]).contains("--file"));
    assert!(run(&["put", "127.0.0.1:9", "--cc", "nosuch", "--bytes", "1"]).contains("nosuch"));
    assert!(
        run(&["put", "127.0.0.1:9", "--cc", "sprout", "--mode", "kernel", "--bytes", "1"]).contains("framed")
    );
    assert!(run(&["put", "127.0.0.1:9", "--cc", "copa", "--mode", "udp", "--bytes", "1"]).contains("udp"));
}
