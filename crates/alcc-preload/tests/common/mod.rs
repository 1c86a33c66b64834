//! Helpers of the shim's tests: the library built with the test's profile, scratch
//! directories and server processes that clean up after themselves, free ports, test files.

#![allow(dead_code)] // each test file uses its own subset

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

/// The library, built now with the test's own profile (`cargo test` builds a cdylib-only
/// crate's test harness, not the library itself): target/<profile>/libalcc_preload.so.
pub fn library() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT.get_or_init(build_library).clone().unwrap_or_else(|e| panic!("{e}"))
}

fn build_library() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("the test's own path: {e}"))?;
    let dir = exe.parent().and_then(Path::parent).ok_or("the test is not in target/<profile>/deps")?;
    let release = dir.file_name().is_some_and(|n| n == "release");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.args(["build", "-p", "alcc-preload", "--manifest-path"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"));
    if release {
        cmd.arg("--release");
    }
    let status = cmd.status().map_err(|e| format!("{cargo}: {e}"))?;
    let lib = dir.join("libalcc_preload.so");
    if !status.success() || !lib.exists() {
        return Err(format!(
            "building libalcc_preload.so failed ({status}); expected it at {}",
            lib.display()
        ));
    }
    Ok(lib)
}

/// Debian's interpreter (a pyenv shim would exec several programs under the library).
pub fn python() -> &'static str {
    if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

/// A scratch directory removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("alcc-preload-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A server process killed when dropped (also when the test fails).
pub struct Server(pub Child);

impl Drop for Server {
    /// SIGTERM first, so that a master process (nginx) takes its workers down with it;
    /// SIGKILL if it is still there after 5 s.
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.0.id().to_string()).status();
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `python3 -m http.server` on `port` serving `dir` under the library with `env`.
pub fn start_server(dir: &Path, port: u16, env: &[(&str, &str)]) -> Server {
    let mut cmd = Command::new(python());
    cmd.args(["-m", "http.server", &port.to_string(), "--bind", "127.0.0.1", "--directory"])
        .arg(dir)
        .env("LD_PRELOAD", library())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let server = Server(cmd.spawn().expect("python3 runs (scripts/setup.sh installs it)"));
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(20), "http.server did not listen on {port} within 20 s");
        thread::sleep(Duration::from_millis(50));
    }
    server
}

/// Downloads `url` into `out` with curl; returns how long it took.
pub fn curl(url: &str, out: &Path) -> Duration {
    let t0 = Instant::now();
    let status = Command::new("curl")
        .args(["-sS", "--max-time", "60", "-o"])
        .arg(out)
        .arg(url)
        .status()
        .expect("curl runs (scripts/setup.sh installs it)");
    assert!(status.success(), "curl {url}: {status}");
    t0.elapsed()
}

pub fn pattern_file(path: &Path, len: usize) -> Vec<u8> {
    let data: Vec<u8> = (0..len).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    std::fs::write(path, &data).unwrap();
    data
}

pub fn open_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

/// nginx's binary (Debian puts it in /usr/sbin, which a non-root PATH may lack).
pub fn nginx() -> Option<&'static str> {
    ["/usr/sbin/nginx", "/usr/bin/nginx"].into_iter().find(|p| Path::new(p).exists())
}

/// The skip reason when [`nginx`] finds none.
pub const NGINX_MISSING: &str = "nginx is not installed (scripts/setup.sh installs nginx-light)";

/// Debian's nginx (2 worker processes, `sendfile on`, keep-alive, epoll) serving `dir/www` on
/// 127.0.0.1:`port` under the library with `env`; its configuration, pid file and logs in
/// `dir`. Returns once it listens.
pub fn start_nginx(dir: &Path, port: u16, env: &[(&str, &str)]) -> Server {
    let d = dir.display();
    let conf = format!(
        "worker_processes 2;\ndaemon off;\nmaster_process on;\npid {d}/nginx.pid;\nerror_log {d}/error.log info;\n\
         events {{ worker_connections 256; }}\n\
         http {{\n access_log off;\n sendfile on;\n keepalive_timeout 30;\n\
         types {{ application/vnd.apple.mpegurl m3u8; video/mp2t ts; video/mp4 mp4; }}\n\
         client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};\n\
         server {{ listen 127.0.0.1:{port}; root {d}/www; }}\n}}\n"
    );
    let conf_path = dir.join("nginx.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let mut cmd = Command::new(nginx().expect(NGINX_MISSING));
    cmd.arg("-c")
        .arg(&conf_path)
        .arg("-p")
        .arg(dir)
        .arg("-e")
        .arg(dir.join("error.log"))
        .env("LD_PRELOAD", library())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let server = Server(cmd.spawn().expect("nginx starts"));
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(20), "nginx did not listen on {port} within 20 s");
        thread::sleep(Duration::from_millis(50));
    }
    server
}
