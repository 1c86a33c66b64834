//! `alcc link` end to end (root; otherwise a visible skip, a failure in CI): exit status of a failing command, clean-up
//! on SIGINT, the error when not root. Each test checks that no namespace of the child process
//! remains.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// What `alcc link` needs.
fn link_needs() -> alcc_testenv::Needs {
    alcc_testenv::needs().root("alcc link makes network namespaces and TUN devices")
}

fn trace() -> PathBuf {
    let path = std::env::temp_dir().join(format!("alcc-link-cli-{}.trace", std::process::id()));
    std::fs::write(&path, "1\n").unwrap();
    path
}

fn namespaces_of(pid: u32) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let prefix = format!("alcc-{pid}-");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with(&prefix))
        .map(String::from)
        .collect()
}

/// Whether process `pid` is gone or a zombie (killed, waiting for its new parent to reap it)
/// within two seconds.
fn dies_soon(pid: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat) if stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')) => {
                return true
            }
            Ok(_) if Instant::now() > deadline => return false,
            Ok(_) => sleep(Duration::from_millis(50)),
        }
    }
}

fn alcc_link(t: &PathBuf) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_alcc"));
    c.arg("link").arg("--uplink").arg(t).arg("--downlink").arg(t).args(["--delay", "5"]);
    c
}

#[test]
fn the_command_runs_in_the_client_namespace_and_its_status_is_returned() {
    alcc_testenv::require!(link_needs());
    let t = trace();
    let out = alcc_link(&t)
        .args([
            "--",
            "sh",
            "-c",
            "ping -c 2 -i 0.2 -q $ALCC_SERVER >/dev/null && ip -o addr show alcc0; exit 3",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout} {}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("10.64.0.2"), "{stdout}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("downlink: 2 packets in, 2 out"));
}

#[test]
fn sigint_removes_namespaces_and_processes() {
    alcc_testenv::require!(link_needs());
    let t = trace();
    let log = std::env::temp_dir().join(format!("alcc-link-cli-{}-sigint.log", std::process::id()));
    let mut child = alcc_link(&t)
        .arg("--downlink-log")
        .arg(&log)
        .args(["--server", "sleep 120", "--", "sleep", "120"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while namespaces_of(child.id()).len() < 2 {
        assert!(Instant::now() < deadline, "namespaces never appeared");
        sleep(Duration::from_millis(50));
    }
    let ns = namespaces_of(child.id());
    // Let the commands start, then interrupt.
    sleep(Duration::from_millis(500));
    let pids = Command::new("ip").args(["netns", "pids", &ns[0]]).output().unwrap();
    let in_ns = String::from_utf8_lossy(&pids.stdout).to_string();
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(namespaces_of(child.id()).is_empty(), "namespaces left: {:?}", namespaces_of(child.id()));
    for pid in in_ns.split_whitespace() {
        assert!(dies_soon(pid), "process {pid} survived");
    }
    // The log was flushed: complete lines up to the interruption (about 500 opportunities).
    let parsed = alcc_trace::Log::read_file(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    assert!(parsed.events.len() >= 400, "{} events", parsed.events.len());
}

#[test]
fn not_root_is_a_clear_error() {
    alcc_testenv::require!(alcc_testenv::needs().root("to drop privileges with setpriv").program("setpriv"));
    let t = trace();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--"])
        .arg(env!("CARGO_BIN_EXE_alcc"))
        .arg("link")
        .arg("--uplink")
        .arg(&t)
        .arg("--downlink")
        .arg(&t)
        .args(["--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("must run as root"), "{stderr}");
}

#[test]
fn the_downlink_log_analyzes_with_alcc_analyze() {
    alcc_testenv::require!(link_needs());
    let t = trace();
    let log = std::env::temp_dir().join(format!("alcc-link-cli-{}.log", std::process::id()));
    let status = alcc_link(&t)
        .arg("--downlink-log")
        .arg(&log)
        .args(["--", "sh", "-c", "ping -c 20 -i 0.05 -q $ALCC_SERVER >/dev/null"])
        .status()
        .unwrap();
    assert!(status.success());
    let out =
        Command::new(env!("CARGO_BIN_EXE_alcc")).arg("analyze").arg(&log).arg("--json").output().unwrap();
    let _ = std::fs::remove_file(&log);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["packets_departed"], 20);
    assert_eq!(v["loss"], 0.0);
    let capacity = v["capacity_mbps"].as_f64().unwrap();
    assert!((capacity / 12.0 - 1.0).abs() < 0.01, "{capacity}");
    // Idle link: each ping waits for no opportunity, so one-way delay = propagation (5 ms).
    assert_eq!(v["propagation_delay_ms"], 5.0);
    assert!(v["delay_p95_ms"].as_f64().unwrap() <= 6.0, "{v}");
}
