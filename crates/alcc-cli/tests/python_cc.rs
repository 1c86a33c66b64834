//! `alcc serve --cc py:module:Class` and `alcc sim --cc py:...`: controllers written in Python
//! in the command (the `python` feature, on by default), over real loopback TCP.
//!
//! They need the `alcc` Python package in the repository's venv (`make python-ext`, which
//! `make test` runs first); the server gets `VIRTUAL_ENV` pointing there and runs from the
//! repository root, so `examples.python.vegas` imports as in docs/python.md.

mod common;

use std::io::Read;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{served, spawn_listening, wait_ok, TmpDir, ALCC};

/// The repository root (examples/ and .venv/ are there).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The venv with the `alcc` package, or `None` after recording the skip.
fn venv() -> Option<PathBuf> {
    let venv = repo().join(".venv");
    let has_package = venv.join("bin/python").exists()
        && Command::new(venv.join("bin/python"))
            .args(["-c", "import alcc._alcc"])
            .status()
            .is_ok_and(|s| s.success());
    alcc_testenv::needs()
        .that(has_package, "the alcc Python package in .venv (make python-ext)")
        .check()
        .map(|_| venv)
}

/// `alcc serve` with `args`, from `cwd`, under `venv`; returns the child and its port.
fn serve(venv: &Path, cwd: &Path, args: &[&str]) -> (std::process::Child, String) {
    spawn_listening(
        Command::new(ALCC)
            .current_dir(cwd)
            .env("VIRTUAL_ENV", venv)
            .arg("serve")
            .args(args)
            .args(["--port", "0"]),
        "alcc serve: listening on ",
    )
}

/// Reads the whole download from `port` as a plain TCP client.
fn download(port: &str) -> std::io::Result<Vec<u8>> {
    let mut tcp = TcpStream::connect(format!("127.0.0.1:{port}"))?;
    let mut data = Vec::new();
    tcp.read_to_end(&mut data)?;
    Ok(data)
}

#[test]
fn a_python_vegas_serves_a_download_intact() {
    let Some(venv) = venv() else { return };
    let n = 30_000_000;
    let (server, port) = serve(
        &venv,
        &repo(),
        &["--cc", "py:examples.python.vegas:Vegas", "--bytes", &n.to_string(), "--count", "1"],
    );
    let data = download(&port).unwrap();
    let log = wait_ok(server);
    assert_eq!(data.len(), n, "server said: {log}");
    assert!(data == served(n), "the bytes differ from what alcc serve sends");
    assert!(log.contains(&format!("{n} bytes in")), "{log}");
}

/// A controller that raises in on_ack on the first flow only: that flow fails with the
/// traceback, the next connection is served whole.
const RAISER: &str = "
import alcc
from examples.python.vegas import Vegas

class FirstFails(Vegas):
    flows = 0

    def __init__(self, **kw):
        super().__init__(**kw)
        FirstFails.flows += 1
        self.doomed = FirstFails.flows == 1

    def on_ack(self, now, ack):
        if self.doomed and ack.delivered > 1_000_000:
            raise ZeroDivisionError('the first flow gives up here')
        super().on_ack(now, ack)
";

#[test]
fn a_raising_controller_fails_its_flow_only_with_the_traceback() {
    let Some(venv) = venv() else { return };
    let dir = TmpDir::new("py-raise");
    std::fs::write(dir.path("raiser.py"), RAISER).unwrap();
    // The module imports examples.python.vegas: the repository is on PYTHONPATH, the
    // scratch directory (the server's cwd) first on sys.path.
    let n = 20_000_000;
    let mut cmd = Command::new(ALCC);
    cmd.current_dir(dir.path(".")).env("VIRTUAL_ENV", &venv).env("PYTHONPATH", repo()).args([
        "serve",
        "--cc",
        "py:raiser:FirstFails",
        "--bytes",
        &n.to_string(),
        "--count",
        "2",
        "--port",
        "0",
    ]);
    let (server, port) = spawn_listening(&mut cmd, "alcc serve: listening on ");
    let first = download(&port).map(|d| d.len()).unwrap_or(0);
    let second = download(&port).unwrap();
    let log = wait_ok(server);
    assert!(first < n, "the failing flow delivered everything: {log}");
    assert!(log.contains("ZeroDivisionError: the first flow gives up here"), "{log}");
    assert!(log.contains("Traceback"), "{log}");
    assert_eq!(second.len(), n, "{log}");
    assert!(second == served(n), "the second download's bytes differ");
}

#[test]
fn bad_python_specs_are_refused_before_listening() {
    let Some(venv) = venv() else { return };
    let cases = [
        ("py:examples.python.nosuch:Vegas", "ModuleNotFoundError"),
        ("py:examples.python.vegas:Nope", "has no Nope"),
        ("py:examples.python.vegas", "py:module:Class"),
    ];
    for (spec, why) in cases {
        let out = Command::new(ALCC)
            .current_dir(repo())
            .env("VIRTUAL_ENV", &venv)
            .args(["serve", "--cc", spec, "--bytes", "10", "--port", "0"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(why), "{spec}: {err}");
    }
    let out = Command::new(ALCC)
        .current_dir(repo())
        .env("VIRTUAL_ENV", &venv)
        .args(["serve", "--cc", "py:examples.python.vegas:Vegas", "--mode", "framed", "--bytes", "10"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("kernel mode only"), "{err}");
}

#[test]
fn alcc_sim_runs_a_python_controller() {
    let Some(venv) = venv() else { return };
    let run = |cc: &str| {
        let out = Command::new(ALCC)
            .current_dir(repo())
            .env("VIRTUAL_ENV", &venv)
            .args(["sim", "--rate", "12", "--duration", "10", "--cc", cc])
            .output()
            .unwrap();
        assert!(out.status.success(), "{cc}: {}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["throughput_mbps"].as_f64().unwrap()
    };
    let vegas = run("py:examples.python.vegas:Vegas");
    assert!(vegas > 10.0, "Python Vegas at 12 Mbit/s got {vegas} Mbit/s");
}
