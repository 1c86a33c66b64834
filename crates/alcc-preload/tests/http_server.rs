//! An unmodified Debian server under `libalcc_preload.so`: `python3 -m http.server` (threads,
//! blocking sends through `sendall`) downloaded by `curl` over loopback. The controller is a
//! fixed pacing rate, so that the download's duration shows it governed the connection; the
//! shim's log shows the flow's figures. Also: a configuration that does not parse stops the
//! program before `main`, and a port outside ALCC_PORTS is left alone.

mod common;

use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{
    curl, free_port, library, nginx, open_descriptors, pattern_file, python, start_nginx, start_server,
    Scratch, Server, NGINX_MISSING,
};

/// python3 and curl (scripts/setup.sh installs curl; python3 is part of Debian's base).
fn programs() -> Option<alcc_testenv::Env> {
    alcc_testenv::needs().program("curl").program("python3").check()
}

#[test]
fn python_http_server_downloads_are_governed_and_byte_identical() {
    let Some(_env) = programs() else { return };
    let dir = Scratch::new("http");
    let data = pattern_file(&dir.0.join("file.bin"), 3 << 20);
    let log = dir.0.join("alcc.log");
    let port = free_port();
    let server = start_server(
        &dir.0,
        port,
        &[
            ("ALCC_CC", "fixed:rate=16"),
            ("ALCC_LOG", log.to_str().unwrap()),
            ("ALCC_PORTS", &port.to_string()),
        ],
    );
    thread::sleep(Duration::from_millis(300));
    let fds_before = open_descriptors(server.0.id());
    let url = format!("http://127.0.0.1:{port}/file.bin");
    for round in 0..2 {
        let out = dir.0.join(format!("got-{round}.bin"));
        let took = curl(&url, &out);
        let got = std::fs::read(&out).unwrap();
        assert!(
            got.len() == data.len() && got == data,
            "download {round}: {} bytes, not byte-identical",
            got.len()
        );
        // 3 MiB at 16 Mbit/s is 1.57 s; plain loopback TCP takes milliseconds.
        assert!(
            took > Duration::from_millis(1300),
            "download {round} took {took:?}: the controller did not pace it"
        );
        eprintln!("download {round}: {} bytes in {took:?}", got.len());
    }
    thread::sleep(Duration::from_millis(500));
    let fds_after = open_descriptors(server.0.id());
    assert_eq!(fds_after, fds_before, "descriptors of the server before and after two downloads");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("start cc=fixed:rate=16"), "log: {text}");
    let closes: Vec<&str> = text.lines().filter(|l| l.contains(" close fd=")).collect();
    assert!(closes.len() >= 2, "two governed connections closed: {text}");
    for line in &closes {
        assert!(line.contains("\"controller\":\"fixed:rate=16\""), "{line}");
    }
}

/// listen(2) under the shim gives the program's listener the underlay's congestion control, so
/// its connections are accepted under the underlay and not under the host's default (one
/// accepted under bbr keeps the kernel's pacing after the switch). The underlay is an allowed
/// name other than the host's default, so the check cannot pass by the default alone.
#[test]
fn connections_are_accepted_under_the_underlay_not_the_host_default() {
    let read = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/net/ipv4/{name}")).unwrap_or_default().trim().to_string()
    };
    let (allowed, default) = (read("tcp_allowed_congestion_control"), read("tcp_congestion_control"));
    let other = allowed.split_whitespace().find(|n| *n != default).map(String::from);
    let Some(_env) = alcc_testenv::needs()
        .program("curl")
        .program("python3")
        .that(
            other.is_some(),
            &format!("needs an allowed congestion control (`{allowed}`) other than the default `{default}`"),
        )
        .check()
    else {
        return;
    };
    let name = other.unwrap_or_default();
    let dir = Scratch::new("listen-cc");
    let data = pattern_file(&dir.0.join("file.bin"), 200_000);
    let log = dir.0.join("alcc.log");
    let port = free_port();
    let server = start_server(
        &dir.0,
        port,
        &[
            ("ALCC_CC", "fixed:window=20"),
            ("ALCC_UNDERLAY", &name),
            ("ALCC_LOG", log.to_str().unwrap()),
            ("ALCC_PORTS", &port.to_string()),
        ],
    );
    let out = dir.0.join("got.bin");
    curl(&format!("http://127.0.0.1:{port}/file.bin"), &out);
    assert!(std::fs::read(&out).unwrap() == data, "not byte-identical");
    thread::sleep(Duration::from_millis(500));
    drop(server);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains(&format!("port={port} congestion={name}")), "host default {default}: {text}");
    let closes: Vec<&str> = text.lines().filter(|l| l.contains(" close fd=")).collect();
    assert!(!closes.is_empty(), "{text}");
    for line in &closes {
        assert!(line.contains(&format!("\"prior_congestion\":\"{name}\"")), "host default {default}: {line}");
    }
}

#[test]
fn a_port_outside_alcc_ports_is_left_alone() {
    let Some(_env) = programs() else { return };
    let dir = Scratch::new("ports");
    let data = pattern_file(&dir.0.join("file.bin"), 3 << 20);
    let log = dir.0.join("alcc.log");
    let port = free_port();
    let other = if port == 65535 { 1 } else { port + 1 };
    let _server = start_server(
        &dir.0,
        port,
        &[
            ("ALCC_CC", "fixed:rate=16"),
            ("ALCC_LOG", log.to_str().unwrap()),
            ("ALCC_PORTS", &other.to_string()),
        ],
    );
    let out = dir.0.join("got.bin");
    let took = curl(&format!("http://127.0.0.1:{port}/file.bin"), &out);
    assert!(std::fs::read(&out).unwrap() == data);
    assert!(took < Duration::from_millis(1300), "an ungoverned download took {took:?}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(" accept fd="), "a connection on port {port} was governed: {text}");
}

#[test]
fn a_bad_configuration_stops_the_program_before_main() {
    let Some(_env) = programs() else { return };
    for (vars, names) in [
        (vec![("ALCC_CC", "nosuch")], ["ALCC_CC", "nosuch"]),
        (vec![("ALCC_CC", "copa"), ("ALCC_PORTS", "80,http")], ["ALCC_PORTS", "`http`"]),
        (vec![("ALCC_CC", "copa"), ("ALCC_MODE", "framed")], ["ALCC_MODE", "kernel"]),
        (vec![("ALCC_CC", "copa"), ("ALCC_UNDERLAY", "nosuchcc")], ["ALCC_UNDERLAY", "nosuchcc"]),
        (vec![], ["ALCC_CC", "not set"]),
    ] {
        let mut cmd = Command::new(python());
        cmd.args(["-c", "print('main ran')"]).env("LD_PRELOAD", library()).env_remove("ALCC_CC");
        for (k, v) in &vars {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{vars:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{vars:?}: main ran");
        for n in names {
            assert!(stderr.contains(n), "{vars:?}: the message names {n}: {stderr}");
        }
    }
}

/// A program that accepts one connection, writes 2 MiB with `sendall`, then (`close`) closes
/// the socket or not, and returns from its main at once: the engine's exit hook hands what is
/// still queued to the kernel before the process is gone (issue 11 item 3's hook).
fn write_and_exit(close: bool) {
    let script = format!(
        "import socket\n\
         l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen(1)\n\
         print(l.getsockname()[1], flush=True)\n\
         c, _ = l.accept()\n\
         c.sendall(bytes(range(256)) * 8192)\n\
         {}\n",
        if close { "c.close()" } else { "pass" }
    );
    let mut child = Command::new(python())
        .args(["-c", &script])
        .env("LD_PRELOAD", library())
        .env("ALCC_CC", "fixed:rate=16")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line)
        .unwrap();
    let server = Server(child);
    let port: u16 = line.trim().parse().unwrap_or_else(|_| panic!("the program printed {line:?}"));
    let t0 = Instant::now();
    let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut got = Vec::new();
    std::io::Read::read_to_end(&mut conn, &mut got).unwrap();
    let took = t0.elapsed();
    let expected: Vec<u8> = (0..8192).flat_map(|_| 0..=255u8).collect();
    assert!(got == expected, "close={close}: {} of {} bytes arrived intact", got.len(), expected.len());
    // 2 MiB at 16 Mbit/s is 1.05 s: the controller paced it, and the exit waited for it.
    assert!(took > Duration::from_millis(800), "close={close}: took {took:?}");
    drop(server);
}

#[test]
fn nothing_queued_is_lost_when_the_program_closes_and_exits() {
    let Some(_env) = programs() else { return };
    write_and_exit(true);
}

#[test]
fn nothing_queued_is_lost_when_the_program_exits_without_closing() {
    let Some(_env) = programs() else { return };
    write_and_exit(false);
}

/// CPU ticks (utime + stime) of `pid`'s children.
fn children_cpu_ticks(pid: u32) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // pid (comm) state ppid ... utime(14) stime(15); comm may hold spaces.
        let Some(rest) = stat.rsplit_once(") ").map(|(_, r)| r) else { continue };
        let f: Vec<&str> = rest.split(' ').collect();
        if f.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(pid) {
            total += f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
                + f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        }
    }
    total
}

#[test]
fn nginx_with_sendfile_and_two_workers_is_governed_without_spinning() {
    let Some(_env) = alcc_testenv::needs().program("curl").that(nginx().is_some(), NGINX_MISSING).check()
    else {
        return;
    };
    let dir = Scratch::new("nginx");
    let www = dir.0.join("www");
    std::fs::create_dir_all(&www).unwrap();
    let data = pattern_file(&www.join("file.bin"), 8 << 20);
    let log = dir.0.join("alcc.log");
    let port = free_port();
    let server =
        start_nginx(&dir.0, port, &[("ALCC_CC", "fixed:rate=64"), ("ALCC_LOG", log.to_str().unwrap())]);
    thread::sleep(Duration::from_millis(300));
    let url = format!("http://127.0.0.1:{port}/file.bin");
    let cpu0 = children_cpu_ticks(server.0.id());
    let out = dir.0.join("got.bin");
    let took = curl(&url, &out);
    let cpu = children_cpu_ticks(server.0.id()) - cpu0;
    assert!(std::fs::read(&out).unwrap() == data, "nginx's sendfile download is not byte-identical");
    // 8 MiB at 64 Mbit/s is 1.05 s.
    assert!(took > Duration::from_millis(850), "the download took {took:?}: not paced");
    // A worker spinning on EPOLLOUT while alcc's queue is full would burn the whole second.
    assert!(cpu < 30, "nginx's workers used {cpu} ticks of CPU in {took:?}");
    eprintln!("nginx: {} bytes in {took:?}, workers' CPU {cpu} ticks", data.len());
    // A range request on a new connection.
    let status = Command::new("curl")
        .args(["-sS", "--max-time", "60", "-r", "1000-1999999", "-o"])
        .arg(dir.0.join("range.bin"))
        .arg(&url)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(std::fs::read(dir.0.join("range.bin")).unwrap() == data[1000..2_000_000], "range request");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.lines().filter(|l| l.contains(" accept fd=")).count() >= 2, "governed accepts: {text}");
}

/// A non-blocking writer that waits for writability with `wait` (a Python statement on the
/// socket `c`; `p` is a select.poll registered for POLLOUT) sleeps while alcc's queue is
/// full instead of spinning on the kernel socket's writability.
fn nonblocking_writer(wait: &str) {
    let script = format!(
        "import socket, select, resource\n\
         l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen(1)\n\
         print(l.getsockname()[1], flush=True)\n\
         c, _ = l.accept(); c.setblocking(False)\n\
         data = bytes(range(256)) * 12288\n\
         p = select.poll(); p.register(c, select.POLLOUT)\n\
         off = 0; waits = 0\n\
         t = resource.getrusage(resource.RUSAGE_SELF)\n\
         cpu0 = t.ru_utime + t.ru_stime\n\
         while off < len(data):\n\
         \x20   try:\n\
         \x20       off += c.send(data[off:off + 65536])\n\
         \x20   except BlockingIOError:\n\
         \x20       {wait}; waits += 1\n\
         t = resource.getrusage(resource.RUSAGE_SELF)\n\
         print(waits, t.ru_utime + t.ru_stime - cpu0, flush=True)\n\
         c.close()\n"
    );
    let mut child = Command::new(python())
        .args(["-c", &script])
        .env("LD_PRELOAD", library())
        .env("ALCC_CC", "fixed:rate=16")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let _server = Server(child);
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    let port: u16 = line.trim().parse().unwrap_or_else(|_| panic!("the program printed {line:?}"));
    let t0 = Instant::now();
    let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut got = Vec::new();
    std::io::Read::read_to_end(&mut conn, &mut got).unwrap();
    let took = t0.elapsed();
    let expected: Vec<u8> = (0..12288).flat_map(|_| 0..=255u8).collect();
    assert!(got == expected, "{} of {} bytes arrived intact", got.len(), expected.len());
    line.clear();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    let mut f = line.split_whitespace();
    let waits: u64 = f.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    let cpu: f64 = f.next().and_then(|v| v.parse().ok()).unwrap_or(f64::MAX);
    eprintln!("{wait}: {} bytes in {took:?}, {waits} waits, {cpu:.3} s of CPU", got.len());
    // 3 MiB at 16 Mbit/s is 1.6 s: the writer waited, and waiting cost it little.
    assert!(took > Duration::from_millis(1300) && waits > 0, "{wait}: took {took:?}, {waits} waits");
    assert!(cpu < 0.3, "{wait}: the loop used {cpu} s of CPU in {took:?}");
}

#[test]
fn a_poll_loop_sleeps_while_the_queue_is_full() {
    let Some(_env) = programs() else { return };
    nonblocking_writer("p.poll(10000)");
}

#[test]
fn a_select_loop_sleeps_while_the_queue_is_full() {
    let Some(_env) = programs() else { return };
    nonblocking_writer("select.select([], [c], [], 10)");
}
