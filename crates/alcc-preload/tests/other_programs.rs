//! More unmodified programs under `libalcc_preload.so` (issue 12 item 3): Debian's vsftpd
//! serving a file to curl's FTP client (as in the paper's experiments), wget as the client of
//! `python3 -m http.server`, and what happens to a connection across `fork`.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{free_port, library, pattern_file, python, start_server, Scratch, Server};

/// vsftpd's binary (Debian puts it in /usr/sbin, which a non-root PATH may lack).
fn vsftpd() -> Option<&'static str> {
    ["/usr/sbin/vsftpd", "/usr/bin/vsftpd"].into_iter().find(|p| Path::new(p).exists())
}

/// vsftpd, anonymous download only, from `root`, control connection on `port`, passive data
/// connections on `data_port` only.
fn vsftpd_conf(dir: &Path, root: &Path, port: u16, data_port: u16) -> String {
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    format!(
        "listen=YES\nlisten_ipv6=NO\nlisten_address=127.0.0.1\nlisten_port={port}\nbackground=NO\n\
         anonymous_enable=YES\nno_anon_password=YES\nanon_root={root}\nlocal_enable=NO\nwrite_enable=NO\n\
         ftp_username=ftp\nsecure_chroot_dir={empty}\npasv_enable=YES\npasv_min_port={data_port}\n\
         pasv_max_port={data_port}\npasv_address=127.0.0.1\nconnect_from_port_20=NO\nxferlog_enable=NO\n\
         use_sendfile=YES\nseccomp_sandbox=NO\nisolate=NO\nisolate_network=NO\n",
        root = root.display(),
        empty = empty.display(),
    )
}

/// vsftpd (standalone, `sendfile`) under the shim with `ALCC_PORTS` = its passive data port:
/// curl's FTP client fetches 2 MiB byte-identical, paced by the controller. vsftpd's
/// privileged process accepts the data connection and passes it to the session process over
/// a Unix socket (SCM_RIGHTS), which governs it (`received` in the log) and `sendfile`s the
/// file; that process sets RLIMIT_NPROC to 0, so its engine thread must start at fork
/// (`ALCC_FORK=start`), and vsftpd must use fork(), not its namespace-isolating clone
/// (`isolate=NO`, `isolate_network=NO`). The control connection is left alone: vsftpd
/// accepts it in its listening process and serves it in a forked child, the
/// inherited-across-fork case the shim refuses (see the fork test below).
#[test]
fn vsftpd_serves_curl_ftp_governed_and_byte_identical() {
    let Some(_env) = alcc_testenv::needs()
        .root("vsftpd chroots anonymous sessions and drops to the user ftp (its Debian package makes it)")
        .program("curl")
        .that(vsftpd().is_some(), "vsftpd is not installed (scripts/setup.sh installs it)")
        .check()
    else {
        return;
    };
    let dir = Scratch::new("vsftpd");
    let root = dir.0.join("pub");
    std::fs::create_dir_all(&root).unwrap();
    let data = pattern_file(&root.join("file.bin"), 2 << 20);
    let (port, data_port) = (free_port(), free_port());
    let conf = dir.0.join("vsftpd.conf");
    std::fs::write(&conf, vsftpd_conf(&dir.0, &root, port, data_port)).unwrap();
    let log = dir.0.join("alcc.log");
    let server = Server(
        Command::new(vsftpd().unwrap())
            .arg(&conf)
            .env("LD_PRELOAD", library())
            .env("ALCC_CC", "fixed:rate=16")
            .env("ALCC_PORTS", data_port.to_string())
            .env("ALCC_FORK", "start")
            .env("ALCC_LOG", &log)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("vsftpd starts"),
    );
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(10), "vsftpd did not listen on {port} within 10 s");
        thread::sleep(Duration::from_millis(50));
    }
    let out = dir.0.join("got.bin");
    let t0 = Instant::now();
    let status = Command::new("curl")
        .args(["-sS", "--max-time", "60", "--ftp-pasv", "-o"])
        .arg(&out)
        .arg(format!("ftp://127.0.0.1:{port}/file.bin"))
        .status()
        .expect("curl runs");
    let took = t0.elapsed();
    assert!(status.success(), "curl ftp://: {status}");
    let got = std::fs::read(&out).unwrap();
    assert!(got == data, "{} of {} bytes, not byte-identical", got.len(), data.len());
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        text.contains(" received fd=") && text.contains(&format!("port={data_port} cc=fixed:rate=16")),
        "the session process did not govern the data connection: {text}"
    );
    assert!(!text.contains("could NOT"), "{text}");
    // 2 MiB at 16 Mbit/s is 1.05 s; loopback FTP takes milliseconds.
    assert!(took > Duration::from_millis(900), "the download took {took:?}: not paced");
    drop(server);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(text.contains("close fd=") && text.contains("\"controller\":\"fixed:rate=16\""), "{text}");
    assert!(!text.contains(&format!("port={port} ")), "the control connection was governed: {text}");
    eprintln!("vsftpd: {} bytes in {took:?}", got.len());
}

/// wget (Debian's) as the client of `python3 -m http.server` under the shim: the download is
/// byte-identical and paced.
#[test]
fn wget_downloads_from_a_governed_server() {
    let Some(_env) = alcc_testenv::needs().program("wget").program("python3").check() else { return };
    let dir = Scratch::new("wget");
    let data = pattern_file(&dir.0.join("file.bin"), 2 << 20);
    let port = free_port();
    let _server = start_server(&dir.0, port, &[("ALCC_CC", "fixed:rate=16")]);
    let out = dir.0.join("got.bin");
    let t0 = Instant::now();
    let status = Command::new("wget")
        .args(["-q", "--tries=1", "--timeout=60", "-O"])
        .arg(&out)
        .arg(format!("http://127.0.0.1:{port}/file.bin"))
        .status()
        .expect("wget runs");
    let took = t0.elapsed();
    assert!(status.success(), "wget: {status}");
    assert!(std::fs::read(&out).unwrap() == data, "not byte-identical");
    assert!(took > Duration::from_millis(900), "the download took {took:?}: not paced");
}

/// A connection accepted before `fork()`: its flow belongs to the parent's engine. A write in
/// the child fails with EIO (and one log line), never going around the controller; the parent
/// keeps writing through its flow. A connection the child accepts itself is governed by an
/// engine thread the child starts.
#[test]
fn an_inherited_connection_fails_in_the_child_and_the_childs_own_is_governed() {
    let Some(_env) = alcc_testenv::needs().program("python3").check() else { return };
    let dir = Scratch::new("fork");
    let log = dir.0.join("alcc.log");
    let script = "import os, socket\n\
         l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen(2)\n\
         print(l.getsockname()[1], flush=True)\n\
         c, _ = l.accept()\n\
         pid = os.fork()\n\
         if pid == 0:\n\
         \x20   try:\n\
         \x20       c.sendall(b'from the child')\n\
         \x20       print('child wrote', flush=True)\n\
         \x20   except OSError as e:\n\
         \x20       print('child errno', e.errno, flush=True)\n\
         \x20   d, _ = l.accept()\n\
         \x20   d.sendall(b'C' * 1000000)\n\
         \x20   d.close()\n\
         \x20   os._exit(0)\n\
         os.waitpid(pid, 0)\n\
         c.sendall(b'P' * 1000000)\n\
         c.close()\n";
    let mut child = Command::new(python())
        .args(["-c", script])
        .env("LD_PRELOAD", library())
        .env("ALCC_CC", "fixed:rate=64")
        .env("ALCC_LOG", &log)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let _server = Server(child);
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    let port: u16 = first.trim().parse().unwrap_or_else(|_| panic!("the program printed {first:?}"));
    let mut inherited = TcpStream::connect(("127.0.0.1", port)).unwrap();
    inherited.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let verdict = lines.next().and_then(Result::ok).unwrap_or_default();
    assert_eq!(verdict, "child errno 5", "the child's write to the inherited connection");
    let mut own = TcpStream::connect(("127.0.0.1", port)).unwrap();
    own.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut got = Vec::new();
    own.read_to_end(&mut got).unwrap();
    assert!(got.len() == 1_000_000 && got.iter().all(|&b| b == b'C'), "child's own: {} bytes", got.len());
    let mut got = Vec::new();
    inherited.read_to_end(&mut got).unwrap();
    assert!(got.len() == 1_000_000 && got.iter().all(|&b| b == b'P'), "parent's: {} bytes", got.len());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("writing to it in a forked child is not supported (EIO)"), "{text}");
    let accepts: Vec<&str> = text.lines().filter(|l| l.contains(" accept fd=")).collect();
    assert_eq!(accepts.len(), 2, "{text}");
    let pid = |l: &str| l.split_whitespace().nth(1).map(str::to_string);
    assert_ne!(pid(accepts[0]), pid(accepts[1]), "the second accept is the child's: {text}");
    let closes = text.lines().filter(|l| l.contains(" close fd=")).count();
    assert_eq!(closes, 2, "both governed connections closed under their own process: {text}");
}
