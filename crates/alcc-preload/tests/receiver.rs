//! The shim's client side: an unmodified `curl`, `wget` and Python `urllib` under
//! `libalcc_preload.so` with `ALCC_RECEIVER` download from a plain kernel TCP server over
//! loopback. The bytes arrive intact; with DRWA the shim's log shows the clamp changing, and
//! the window the SERVER's kernel sees (`ss`'s `snd_wnd` of the server's socket) moves below
//! the buffer's largest window while the transfer runs. A static cap is the buffer asked
//! for. A bad `ALCC_RECEIVER` stops the program before `main`; an unprivileged user gets
//! DRWA with the buffer the kernel grants it.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

mod common;
use common::{library, Scratch};

const BODY: usize = 24 << 20;

fn byte_at(i: usize) -> u8 {
    (i.wrapping_mul(2654435761) >> 13) as u8
}

/// A plain HTTP server on loopback (a std listener: the kernel's TCP, no alcc) that answers
/// one request with [`BODY`] bytes, written in 64 KiB pieces at about `mbit` Mbit/s. Returns
/// its port and the thread.
fn plain_server(mbit: f64) -> (u16, thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = thread::spawn(move || {
        // No client within 60 s (it failed to start): give up, so that the test ends.
        listener.set_nonblocking(true).unwrap();
        let t0 = Instant::now();
        let mut conn = loop {
            match listener.accept() {
                Ok((c, _)) => break c,
                Err(_) if t0.elapsed() < Duration::from_secs(60) => thread::sleep(Duration::from_millis(10)),
                Err(_) => return,
            }
        };
        conn.set_nonblocking(false).unwrap();
        let mut head = Vec::new();
        let mut b = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && conn.read(&mut b).is_ok_and(|n| n == 1) {
            head.push(b[0]);
        }
        let header = format!("HTTP/1.1 200 OK\r\nContent-Length: {BODY}\r\nConnection: close\r\n\r\n");
        if conn.write_all(header.as_bytes()).is_err() {
            return;
        }
        let piece = 64 << 10;
        let t0 = Instant::now();
        let data: Vec<u8> = (0..BODY).map(byte_at).collect();
        for (k, chunk) in data.chunks(piece).enumerate() {
            let due = Duration::from_secs_f64((k * piece) as f64 * 8.0 / (mbit * 1e6));
            if let Some(wait) = due.checked_sub(t0.elapsed()) {
                thread::sleep(wait);
            }
            if conn.write_all(chunk).is_err() {
                return;
            }
        }
    });
    (port, handle)
}

/// The `snd_wnd` values `ss` shows for the server's sockets on `port` while `running`.
fn sample_send_windows(port: u16, running: Arc<AtomicBool>) -> thread::JoinHandle<Vec<u64>> {
    thread::spawn(move || {
        let mut seen = Vec::new();
        while running.load(Ordering::Relaxed) {
            let out = Command::new("ss")
                .args(["-tinH", "state", "established", "sport", "=", &format!(":{port}")])
                .output();
            if let Ok(out) = out {
                let text = String::from_utf8_lossy(&out.stdout);
                seen.extend(
                    text.split_whitespace()
                        .filter_map(|w| w.strip_prefix("snd_wnd:"))
                        .filter_map(|v| v.parse::<u64>().ok()),
                );
            }
            thread::sleep(Duration::from_millis(10));
        }
        seen
    })
}

/// Runs `program args` under the library with `ALCC_RECEIVER=receiver` (and the log in
/// `log`).
fn under_shim(program: &str, args: &[&str], receiver: &str, log: &Path) -> Output {
    Command::new(program)
        .args(args)
        .env("LD_PRELOAD", library())
        .env("ALCC_RECEIVER", receiver)
        .env("ALCC_LOG", log)
        .env_remove("ALCC_CC")
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"))
}

fn assert_intact(path: &Path) {
    let got = std::fs::read(path).unwrap();
    assert_eq!(got.len(), BODY, "{}: length", path.display());
    if let Some(i) = (0..BODY).find(|&i| got[i] != byte_at(i)) {
        panic!("{}: byte {i} differs", path.display());
    }
}

/// The shim's figures line for the connection (`close fd=` or, without a close, `exit fd=`).
fn figures(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .find(|l| l.contains(" close fd=") || l.contains(" exit fd="))
        .unwrap_or_else(|| panic!("no figures line in the log: {text}"))
        .to_string()
}

/// The number before `what` in a figures line (`... 12 clamp changes`).
fn count_before(line: &str, what: &str) -> u64 {
    line.split(what)
        .next()
        .and_then(|s| s.split_whitespace().last())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The number after `what` in a figures line (`largest window 123,`).
fn number_after(line: &str, what: &str) -> u64 {
    line.split(what)
        .nth(1)
        .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).find(|t| !t.is_empty()))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[test]
fn curl_under_drwa_downloads_intact_and_its_window_moves() {
    let Some(_env) = alcc_testenv::needs().program("curl").program("ss").check() else { return };
    let dir = Scratch::new("rx-curl");
    let (port, server) = plain_server(200.0);
    let running = Arc::new(AtomicBool::new(true));
    let sampler = sample_send_windows(port, Arc::clone(&running));
    let out = dir.0.join("got.bin");
    let log = dir.0.join("alcc.log");
    let url = format!("http://127.0.0.1:{port}/file");
    let r = under_shim("curl", &["-sS", "--max-time", "60", "-o", out.to_str().unwrap(), &url], "drwa", &log);
    running.store(false, Ordering::Relaxed);
    let windows = sampler.join().unwrap();
    server.join().unwrap();
    assert!(r.status.success(), "curl: {}", String::from_utf8_lossy(&r.stderr));
    assert_intact(&out);
    let line = figures(&log);
    eprintln!(
        "{line}\nserver's snd_wnd samples: {} ({:?}..)",
        windows.len(),
        &windows[..windows.len().min(20)]
    );
    assert!(line.contains("receive window drwa:lambda=3"), "{line}");
    assert!(count_before(&line, " clamp changes") >= 1, "DRWA never set the clamp: {line}");
    let ceiling = number_after(&line, "largest window ");
    assert!(ceiling > 0, "{line}");
    let lowest = windows.iter().copied().min().unwrap_or(u64::MAX);
    let highest = windows.iter().copied().max().unwrap_or(0);
    assert!(
        lowest < highest && lowest < ceiling / 2,
        "the window the server saw did not move below half the largest window {ceiling}: {lowest}..{highest} over {} samples",
        windows.len()
    );
}

#[test]
fn wget_and_python_read_through_the_shim_too() {
    let Some(_env) = alcc_testenv::needs().program("wget").program("python3").check() else { return };
    let dir = Scratch::new("rx-wget");
    let python = if Path::new("/usr/bin/python3").exists() { "/usr/bin/python3" } else { "python3" };
    for (name, receiver) in
        [("wget", "drwa:lambda=2"), ("python", "drwa"), ("static", "static:rcvbuf=262144")]
    {
        let (port, server) = plain_server(400.0);
        let out = dir.0.join(format!("{name}.bin"));
        let log = dir.0.join(format!("{name}.log"));
        let url = format!("http://127.0.0.1:{port}/file");
        let script = format!(
            "import urllib.request; open({:?}, 'wb').write(urllib.request.urlopen({url:?}).read())",
            out.to_str().unwrap()
        );
        let r = match name {
            "wget" => under_shim("wget", &["-q", "-O", out.to_str().unwrap(), &url], receiver, &log),
            _ => under_shim(python, &["-c", &script], receiver, &log),
        };
        server.join().unwrap();
        assert!(r.status.success(), "{name}: {}", String::from_utf8_lossy(&r.stderr));
        assert_intact(&out);
        let line = figures(&log);
        eprintln!("{name}: {line}");
        if receiver.starts_with("static") {
            assert!(line.contains("static:rcvbuf=262144: buffer 262144 bytes"), "{line}");
        } else {
            assert!(count_before(&line, " updates") >= 1, "{name}: the reads did not reach DRWA: {line}");
        }
    }
}

#[test]
fn a_bad_receiver_spec_stops_the_program_before_main() {
    let Some(_env) = alcc_testenv::needs().program("curl").check() else { return };
    let dir = Scratch::new("rx-bad");
    let log = dir.0.join("alcc.log");
    for (spec, names) in [("drwa:lambda=0", "lambda"), ("drwa:beta=1", "beta"), ("vegas", "vegas")] {
        let r = under_shim("curl", &["--version"], spec, &log);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{spec}: {err}");
        assert!(err.contains("ALCC_RECEIVER") && err.contains(names), "{spec}: {err}");
        assert!(r.stdout.is_empty(), "{spec}: curl's main ran: {}", String::from_utf8_lossy(&r.stdout));
    }
}

#[test]
fn drwa_works_for_an_unprivileged_user() {
    let Some(_env) =
        alcc_testenv::needs().root("runuser to nobody").program("runuser").program("curl").check()
    else {
        return;
    };
    use std::os::unix::fs::PermissionsExt;
    let dir = Scratch::new("rx-nobody");
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o777)).unwrap();
    // A copy of the library nobody can read wherever the checkout is.
    let lib = dir.0.join("libalcc_preload.so");
    std::fs::copy(library(), &lib).unwrap();
    std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (port, server) = plain_server(400.0);
    let out = dir.0.join("got.bin");
    let log = dir.0.join("alcc.log");
    let url = format!("http://127.0.0.1:{port}/file");
    let preload = format!("LD_PRELOAD={}", lib.display());
    let logvar = format!("ALCC_LOG={}", log.display());
    let r = Command::new("runuser")
        .args(["-u", "nobody", "--", "env", &preload, "ALCC_RECEIVER=drwa", &logvar])
        .args(["curl", "-sS", "--max-time", "60", "-o", out.to_str().unwrap(), &url])
        .output()
        .unwrap();
    server.join().unwrap();
    assert!(r.status.success(), "curl as nobody: {}", String::from_utf8_lossy(&r.stderr));
    assert_intact(&out);
    let line = figures(&log);
    eprintln!("nobody: {line}");
    let rmem_max: u64 =
        std::fs::read_to_string("/proc/sys/net/core/rmem_max").unwrap().trim().parse().unwrap();
    let buffer = number_after(&line, "buffer ");
    assert!(buffer > 0 && buffer <= 2 * rmem_max, "nobody's buffer {buffer} vs rmem_max {rmem_max}: {line}");
    assert!(count_before(&line, " updates") >= 1, "{line}");
}
