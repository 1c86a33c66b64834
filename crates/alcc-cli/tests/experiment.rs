//! `alcc experiment run` over the real emulator (root; otherwise a visible skip, a failure in CI):
//!
//! - a tiny sweep with a scheme whose controller does not exist: that run is recorded failed
//!   with its error, the others complete, every run directory holds its files, the tables
//!   agree, and a rerun resumes (complete runs skipped, the failed one rerun);
//! - two shards (`--shard 1/2`, `--shard 2/2`) merged with `alcc experiment merge` hold the
//!   same runs, in the same order, with the same columns as the unsharded sweep of the spec;
//! - a workload (two weighted flows over two server processes, an on/off CUBIC flow and an
//!   on/off UDP flow): every flow is found in the emulator's flow log and measured, the
//!   Mahimahi log beside it is unchanged, and Jain's index is in the row;
//! - a controller written in Python (`alcc-py:examples.python.vegas:Vegas`) runs through the
//!   emulator like any other (docs/python.md), with the project's `.venv` as `VIRTUAL_ENV`;
//! - SIGINT in the middle of a sweep: exit 130, the partial run removed, no namespace or
//!   process of the sweep left, and a rerun completes only what is missing.
//!
//! Scratch directories are removed on drop, also when an assertion fails.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

mod common;
use common::TmpDir;

const ALCC: &str = env!("CARGO_BIN_EXE_alcc");

/// One emulator at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// What a sweep over the emulator needs.
fn sweep_needs() -> alcc_testenv::Needs {
    alcc_testenv::needs().root("the emulator makes network namespaces and TUN devices").program("curl")
}

/// A spec over a generated constant 12 Mbit/s trace.
fn write_spec(dir: &TmpDir, schemes: &[&str], seconds: u32) -> PathBuf {
    let list: Vec<String> = schemes.iter().map(|s| format!("\"{s}\"")).collect();
    let text = format!(
        "name = \"tiny\"\nduration_s = {seconds}\nruns = 1\ndelay_ms = 10\nqueue_bytes = 500000\n\
         schemes = [{}]\n[[traces]]\nname = \"flat\"\n\
         generate = {{ kind = \"constant\", rate_mbps = 12, duration_s = 10 }}\n",
        list.join(", ")
    );
    let path = dir.path("tiny.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn sweep(spec: &Path, out: &Path) -> Output {
    sweep_with(spec, out, &[])
}

/// A sweep whose processes get `env` besides this one's environment.
fn sweep_with(spec: &Path, out: &Path, env: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(ALCC);
    command.args(["experiment", "run"]).arg(spec).arg("--out").arg(out);
    command.envs(env.iter().copied());
    command.output().unwrap()
}

fn results(out: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(out.join("results.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["runs"].as_array().unwrap().clone()
}

fn mtime(p: &Path) -> SystemTime {
    std::fs::metadata(p).unwrap().modified().unwrap()
}

#[test]
fn a_sweep_records_failures_and_resumes() {
    alcc_testenv::require!(sweep_needs());
    let _guard = serial();
    let dir = TmpDir::new("experiment-sweep");
    let spec = write_spec(&dir, &["tcp-cubic", "alcc-nonexistent", "alcc-copa"], 5);
    let out = dir.path("out");
    let first = sweep(&spec, &out);
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert_eq!(first.status.code(), Some(1), "some runs failed: exit 1\n{stderr}");
    assert!(stderr.contains("[3/3] flat alcc-copa run 0"), "{stderr}");

    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("trace,scheme,family,cc,underlay,mode,run,status,error,duration_s,"));
    assert_eq!(lines.len(), 4, "{csv}");
    let rows = results(&out);
    assert_eq!(rows.len(), 3);
    let by = |s: &str| rows.iter().find(|r| r["scheme"] == s).unwrap().clone();
    let bad = by("alcc-nonexistent");
    assert_eq!(bad["status"], "failed");
    assert!(bad["error"].as_str().unwrap().contains("nonexistent"), "{bad}");
    assert!(bad["throughput_mbps"].is_null());
    for s in ["tcp-cubic", "alcc-copa"] {
        let r = by(s);
        assert_eq!(r["status"], "ok", "{r}");
        let tput = r["throughput_mbps"].as_f64().unwrap();
        assert!(tput > 3.0 && tput < 12.5, "{s}: {tput} Mbit/s over a 12 Mbit/s link");
        assert!(r["delay_p95_ms"].as_f64().unwrap() >= 10.0, "{r}");
        assert!(r["cpu_s"].as_f64().unwrap() > 0.0, "{r}");
        // Judged over the clients' 5 s from 0.5 s after the link's start, whatever the log.
        assert_eq!((r["window_from_s"].as_f64(), r["window_to_s"].as_f64()), (Some(0.5), Some(5.5)), "{r}");
        assert!(r["duration_s"].as_f64().unwrap() >= 5.5, "the log covers the window: {r}");
        assert!(r["queued_at_end"].as_u64().is_some() && r["queued_at_log_end"].as_u64().is_some(), "{r}");
        let run = out.join(r["dir"].as_str().unwrap());
        assert_eq!(run, out.join(format!("runs/flat/{s}/run-0")));
        for f in [
            "commands.txt",
            "downlink.log",
            "summary.json",
            "series.csv",
            "delays.csv",
            "rusage.json",
            "stderr.log",
            "result.json",
        ] {
            assert!(run.join(f).is_file(), "{s}: {f} missing");
        }
        // The engine writes telemetry; plain TCP has no alcc code on its path, so none.
        assert_eq!(run.join("telemetry.jsonl").is_file(), s == "alcc-copa", "{s}: telemetry.jsonl");
        let commands = std::fs::read_to_string(run.join("commands.txt")).unwrap();
        assert_eq!(commands.lines().count(), 3, "{commands}");
        let server = if s == "tcp-cubic" { "serve-plain --port 9000" } else { "serve --port 9000" };
        assert!(commands.lines().nth(1).unwrap().contains(server), "{commands}");
        let series = std::fs::read_to_string(run.join("series.csv")).unwrap();
        assert!(series.starts_with("start_s,capacity_mbps,throughput_mbps,sent_mbps,delay_p50_ms"));
        assert!(series.lines().count() >= 10, "5 s in 500 ms bins");
        let delays = std::fs::read_to_string(run.join("delays.csv")).unwrap();
        assert!(delays.starts_with("t_s,delay_ms\n") && delays.lines().count() > 1000);
    }
    assert!(out.join("spec.toml").is_file() && out.join("traces/flat.trace").is_file());

    // Rerun: the two complete runs are skipped (their files untouched), the failed one rerun.
    let copa = out.join("runs/flat/alcc-copa/run-0/result.json");
    let before = mtime(&copa);
    let second = sweep(&spec, &out);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("2 of 3 runs already complete"), "{stderr}");
    assert!(stderr.contains("[2/3] flat alcc-nonexistent") && !stderr.contains("[1/3]"), "{stderr}");
    assert_eq!(mtime(&copa), before);
    assert_eq!(results(&out).len(), 3);

    // Reanalysis gives a fresh sweep's figures again, and replaces figures of an older rule
    // (here: a row made to look as if written before the window, with other figures).
    let fresh = results(&out);
    let mut old: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&copa).unwrap()).unwrap();
    for k in ["window_from_s", "window_to_s", "queued_at_end", "departed_after_window", "queued_at_log_end"] {
        old.as_object_mut().unwrap().remove(k);
    }
    old["throughput_mbps"] = serde_json::json!(99.0);
    let mut table: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    table["runs"][2] = old.clone();
    std::fs::write(out.join("results.json"), table.to_string()).unwrap();
    std::fs::write(&copa, old.to_string()).unwrap();
    let re = Command::new(ALCC).args(["experiment", "reanalyze"]).arg(&out).output().unwrap();
    assert!(re.status.success(), "{}", String::from_utf8_lossy(&re.stderr));
    assert!(String::from_utf8_lossy(&re.stdout).contains("reanalysed 2 runs of 3"));
    assert_eq!(results(&out), fresh, "the same rows again");
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .ends_with(",window_from_s,window_to_s,queued_at_end,departed_after_window,queued_at_log_end"));

    // Another spec into the same directory is refused.
    let other = write_spec(&dir, &["tcp-cubic"], 6);
    let third = sweep(&other, &out);
    assert!(!third.status.success());
    assert!(String::from_utf8_lossy(&third.stderr).contains("different experiment"));
}

#[test]
fn two_shards_merged_are_the_whole_sweep() {
    alcc_testenv::require!(sweep_needs());
    let _guard = serial();
    let dir = TmpDir::new("experiment-shards");
    // Three runs: shard 1/2 gets runs 0 and 2, shard 2/2 run 1 (round robin over plan order).
    let spec = write_spec(&dir, &["tcp-cubic", "alcc-copa", "alcc-reno"], 2);
    let whole = dir.path("whole");
    let out = sweep(&spec, &whole);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut shards = Vec::new();
    for k in ["1/2", "2/2"] {
        let d = dir.path(&format!("shard-{}", &k[..1]));
        let out = Command::new(ALCC)
            .args(["experiment", "run"])
            .arg(&spec)
            .args(["--shard", k, "--out"])
            .arg(&d)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "shard {k}: {stderr}");
        let share = if k == "1/2" { 2 } else { 1 };
        assert!(stderr.contains(&format!("shard {k}: {share} of the sweep's 3 runs")), "{stderr}");
        shards.push(d);
    }
    let merged = dir.path("merged");
    let out = Command::new(ALCC)
        .args(["experiment", "merge", "--out"])
        .arg(&merged)
        .args(shards.iter().rev())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The same columns and, per run, the same identity and status, in plan order.
    let table = |d: &Path| std::fs::read_to_string(d.join("results.csv")).unwrap();
    let (a, b) = (table(&whole), table(&merged));
    assert_eq!(a.lines().next(), b.lines().next(), "same header");
    let keys = |csv: &str| -> Vec<String> {
        csv.lines().skip(1).map(|l| l.split(',').take(8).collect::<Vec<_>>().join(",")).collect()
    };
    assert_eq!(keys(&a), keys(&b), "same runs, same order\n{a}\n{b}");
    assert_eq!(keys(&b).len(), 3);
    assert!(keys(&b).iter().all(|k| k.ends_with(",ok")), "{b}");
    for r in results(&merged) {
        let run = merged.join(r["dir"].as_str().unwrap());
        assert!(run.join("downlink.log").is_file() && run.join("result.json").is_file(), "{run:?}");
    }
    assert_eq!(
        std::fs::read_to_string(whole.join("spec.toml")).unwrap(),
        std::fs::read_to_string(merged.join("spec.toml")).unwrap()
    );
    // A shard beside the whole sweep overlaps it: refused, naming the run.
    let out = Command::new(ALCC)
        .args(["experiment", "merge", "--out"])
        .arg(dir.path("bad"))
        .arg(&whole)
        .arg(&shards[0])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("run flat tcp-cubic 0 is in both"), "{stderr}");
    // The whole sweep's directory refuses to become a shard's.
    let out = Command::new(ALCC)
        .args(["experiment", "run"])
        .arg(&spec)
        .args(["--shard", "1/2", "--out"])
        .arg(&whole)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("holds the whole sweep"), "{stderr}");
}

/// The folder `alcc experiment run` looks in for the authors' programs (`make refs`).
/// The repository's root (the `alcc` Python package is installed in its `.venv` by `make build`).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn a_python_controller_runs_through_the_emulator() {
    let venv = repo_root().join(".venv");
    let installed = Command::new(venv.join("bin/python"))
        .args(["-c", "import alcc"])
        .output()
        .is_ok_and(|o| o.status.success());
    alcc_testenv::require!(sweep_needs().that(
        installed,
        &format!("the alcc Python package is not installed in {} (make build)", venv.display())
    ));
    let _guard = serial();
    let dir = TmpDir::new("experiment-py");
    let spec = write_spec(&dir, &["alcc-py:examples.python.vegas:Vegas"], 4);
    let out = dir.path("out");
    let root = repo_root();
    let run = sweep_with(&spec, &out, &[("VIRTUAL_ENV", &venv), ("PYTHONPATH", &root)]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("not a registered controller"), "{stderr}");
    let rows = results(&out);
    let r = &rows[0];
    assert_eq!(
        (r["status"].as_str(), r["cc"].as_str()),
        (Some("ok"), Some("py:examples.python.vegas:Vegas")),
        "{r}"
    );
    let tput = r["throughput_mbps"].as_f64().unwrap();
    assert!(tput > 2.0 && tput < 12.5, "Python Vegas: {tput} Mbit/s over a 12 Mbit/s link\n{r}");
    // The server ran the Python class: its telemetry names it, in the state `python`.
    let run_dir = out.join(r["dir"].as_str().unwrap());
    let telemetry = std::fs::read_to_string(run_dir.join("telemetry.jsonl")).unwrap();
    assert!(telemetry.contains("\"state\":\"python\""), "{}", &telemetry[..telemetry.len().min(400)]);
}

fn refs_bin() -> PathBuf {
    match std::env::var_os("ALCC_REFS_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d).join("bin"),
        None => Path::new(ALCC).parent().unwrap().parent().unwrap().join("refs/bin"),
    }
}

/// The authors' three programs, 4 s each (CI's check that the ref-X schemes do not rot: it
/// builds them with `make refs` first).
#[test]
fn the_authors_programs_run_through_the_emulator() {
    alcc_testenv::require!(sweep_needs());
    let built =
        ["genericcc_sender", "verus_server", "sproutbt2"].iter().all(|f| refs_bin().join(f).is_file());
    alcc_testenv::require!(sweep_needs().that(
        built,
        &format!("the authors' programs are not built in {} (make refs)", refs_bin().display())
    ));
    let _guard = serial();
    let dir = TmpDir::new("experiment-ref");
    let spec = write_spec(&dir, &["ref-copa", "ref-verus", "ref-sprout"], 4);
    let out = dir.path("out");
    let run = sweep(&spec, &out);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    let rows = results(&out);
    // What each program prints when it has connected and started.
    let started =
        [("copa", "Connection Established"), ("verus", "Connected to server"), ("sprout", "Looping")];
    for (r, (cc, said)) in rows.iter().zip(started) {
        assert_eq!(
            (r["family"].as_str(), r["cc"].as_str(), r["mode"].as_str()),
            (Some("ref"), Some(cc), Some("udp"))
        );
        let tput = r["throughput_mbps"].as_f64().unwrap();
        assert!(tput > 2.0 && tput < 12.5, "{cc}: {tput} Mbit/s over a 12 Mbit/s link\n{r}");
        // The sender's CPU, measured by `alcc rusage` around the authors' program.
        assert!(r["cpu_s"].as_f64().unwrap() > 0.0, "{r}");
        let run_dir = out.join(r["dir"].as_str().unwrap());
        let log = std::fs::read_to_string(run_dir.join("stderr.log")).unwrap();
        assert!(log.contains(said), "{cc}: {log}");
        assert!(
            !run_dir.join("telemetry.jsonl").exists(),
            "the authors' program writes no telemetry of ours"
        );
    }
}

#[test]
fn a_reference_that_is_not_built_is_refused_before_anything_runs() {
    let dir = TmpDir::new("experiment-ref-missing");
    let spec = write_spec(&dir, &["tcp-cubic", "ref-verus:r=3"], 5);
    let out = dir.path("out");
    let run = Command::new(ALCC)
        .args(["experiment", "run"])
        .arg(&spec)
        .arg("--out")
        .arg(&out)
        .env("ALCC_REFS_DIR", dir.path("no-refs-here"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("ref-verus:r=3") && stderr.contains("no-refs-here/bin/verus_server_r3"),
        "{stderr}"
    );
    assert!(stderr.contains("make refs"), "{stderr}");
    assert!(!out.join("runs").exists(), "nothing ran");
}

/// Pids of processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        if pid == std::process::id() {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(needle) {
            pids.push(pid);
        }
    }
    pids
}

fn namespaces() -> String {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Kills the sweep if the test fails before it ends.
struct Reaper(Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = Command::new("kill").args(["-INT", &self.0.id().to_string()]).status();
            let _ = self.0.wait();
        }
    }
}

#[test]
fn sigint_stops_cleanly_and_the_rerun_resumes() {
    alcc_testenv::require!(sweep_needs());
    let _guard = serial();
    let dir = TmpDir::new("experiment-sigint");
    let spec = write_spec(&dir, &["tcp-cubic", "alcc-copa"], 6);
    let out = dir.path("out");
    let child = Command::new(ALCC)
        .args(["experiment", "run"])
        .arg(&spec)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut sweep_proc = Reaper(child);
    // Wait for the first run to complete and the second to be under way.
    let first = out.join("runs/flat/tcp-cubic/run-0/result.json");
    let second_dir = out.join("runs/flat/alcc-copa/run-0");
    let start = Instant::now();
    while !(first.exists() && second_dir.join("commands.txt").exists()) {
        assert!(start.elapsed() < Duration::from_secs(60), "the sweep did not reach its second run");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(2));
    let needle = out.display().to_string();
    let link_pids: Vec<u32> =
        processes_mentioning(&needle).into_iter().filter(|p| *p != sweep_proc.0.id()).collect();
    assert!(!link_pids.is_empty(), "the second run's processes are running");
    let status = Command::new("kill").args(["-INT", &sweep_proc.0.id().to_string()]).status().unwrap();
    assert!(status.success());
    let start = Instant::now();
    let code = loop {
        if let Some(s) = sweep_proc.0.try_wait().unwrap() {
            break s.code();
        }
        assert!(start.elapsed() < Duration::from_secs(30), "the sweep did not stop after SIGINT");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(code, Some(130));
    assert!(processes_mentioning(&needle).is_empty(), "processes left: {:?}", processes_mentioning(&needle));
    let ns = namespaces();
    for pid in &link_pids {
        assert!(!ns.contains(&format!("alcc-{pid}-")), "namespaces left: {ns}");
    }
    assert!(!second_dir.exists(), "the partial run was removed");
    assert!(first.exists());
    assert_eq!(results(&out).len(), 1);

    // The rerun skips the complete run and does the interrupted one.
    let again = sweep(&spec, &out);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("1 of 2 runs already complete") && stderr.contains("[2/2] flat alcc-copa"),
        "{stderr}"
    );
    let rows = results(&out);
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r["status"] == "ok"), "{rows:?}");
}

/// A spec of uploads (`direction = "up"`) over a generated constant 12 Mbit/s trace.
fn write_upload_spec(dir: &TmpDir, schemes: &[&str], seconds: u32) -> PathBuf {
    let list: Vec<String> = schemes.iter().map(|s| format!("\"{s}\"")).collect();
    let text = format!(
        "name = \"tiny-up\"\nduration_s = {seconds}\nruns = 1\ndelay_ms = 10\nqueue_bytes = 500000\n\
         direction = \"up\"\nschemes = [{}]\n[[traces]]\nname = \"flat\"\n\
         generate = {{ kind = \"constant\", rate_mbps = 12, duration_s = 10 }}\n",
        list.join(", ")
    );
    let path = dir.path("tiny-up.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Uploads through the emulator: plain TCP (`curl -T`) and the Rust client (`alcc put` with
/// MDI) send from the client namespace to `alcc serve --receive`; the uplink is measured. The
/// Java client's upload runs in scripts/test-uplink-quick.sh, after `mvn verify` built its jar.
#[test]
fn uploads_are_measured_on_the_uplink() {
    alcc_testenv::require!(sweep_needs());
    let _guard = serial();
    let dir = TmpDir::new("experiment-upload");
    let spec = write_upload_spec(&dir, &["tcp-reno", "alcc-mdi@reno"], 4);
    let out = dir.path("out");
    let run = sweep(&spec, &out);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    let rows = results(&out);
    assert_eq!(rows.len(), 2);
    for (r, (scheme, mode, label)) in rows.iter().zip([
        ("tcp-reno", "kernel", "plain kernel TCP (reno) upload, curl -T"),
        ("alcc-mdi@reno", "framed", "alcc put: alcc's mdi above kernel reno (framed mode)"),
    ]) {
        assert_eq!(
            (r["scheme"].as_str(), r["direction"].as_str(), r["mode"].as_str(), r["label"].as_str()),
            (Some(scheme), Some("up"), Some(mode), Some(label)),
            "{r}"
        );
        let tput = r["throughput_mbps"].as_f64().unwrap();
        assert!(tput > 3.0 && tput < 12.5, "{scheme}: {tput} Mbit/s over a 12 Mbit/s uplink");
        let run_dir = out.join(r["dir"].as_str().unwrap());
        assert!(run_dir.join("uplink.log").is_file() && !run_dir.join("downlink.log").exists(), "{scheme}");
        let summary = std::fs::read_to_string(run_dir.join("summary.json")).unwrap();
        assert!(summary.contains("uplink.log"), "{summary}");
    }
    // The Rust client is the sender: its telemetry and CPU time.
    let mdi = &rows[1];
    assert!(mdi["cpu_s"].as_f64().unwrap() > 0.0, "{mdi}");
    assert!(out.join(mdi["dir"].as_str().unwrap()).join("telemetry.jsonl").is_file());
    let log = std::fs::read_to_string(out.join(mdi["dir"].as_str().unwrap()).join("stderr.log")).unwrap();
    assert!(log.contains("framed, mdi over reno, stopped at --seconds"), "{log}");
}

#[test]
fn an_upload_the_machine_cannot_run_is_refused_before_anything_runs() {
    let dir = TmpDir::new("experiment-upload-refused");
    // A scheme without an upload: a spec error naming it.
    let spec = write_upload_spec(&dir, &["tcp-reno", "udp-copa"], 4);
    let run = sweep(&spec, &dir.path("out"));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(stderr.contains("`udp-copa` cannot upload"), "{stderr}");
    // The Java uploader's jar missing: named with its remedy.
    let spec = write_upload_spec(&dir, &["java-mdi@reno"], 4);
    let run = Command::new(ALCC)
        .args(["experiment", "run"])
        .arg(&spec)
        .arg("--out")
        .arg(dir.path("out2"))
        .env("ALCC_JAVA_JAR", dir.path("no-such.jar"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(
        stderr.contains("no-such.jar is missing (the Java uploader is not built: run `make build`"),
        "{stderr}"
    );
    assert!(!dir.path("out2").join("runs").exists(), "nothing ran");
}

#[test]
fn several_flows_and_cross_traffic_are_measured_per_flow() {
    alcc_testenv::require!(sweep_needs().program("iperf3"));
    let _guard = serial();
    let dir = TmpDir::new("experiment-flows");
    let spec = dir.path("flows.toml");
    std::fs::write(
        &spec,
        "name = \"flows\"\nduration_s = 6\ndelay_ms = 10\nqueue_bytes = 500000\nschemes = [\"alcc-copa\"]\n\
         [[traces]]\nname = \"flat\"\ngenerate = { kind = \"constant\", rate_mbps = 12, duration_s = 10 }\n\
         [[workloads]]\nname = \"mix\"\nflows = 2\noffsets_s = [0, 1]\nweights = [1, 2]\nservers = 2\n\
         [[workloads.cross]]\nkind = \"tcp-cubic\"\non_s = [[1, 2.5], [3, 4.5]]\n\
         [[workloads.cross]]\nkind = \"udp\"\nrate_mbps = 4\non_s = [[2, 4]]\n",
    )
    .unwrap();
    let out = dir.path("out");
    let run = sweep(&spec, &out);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("[1/1] flat mix alcc-copa run 0"), "{stderr}");
    let rows = results(&out);
    assert_eq!((rows[0]["workload"].as_str(), rows[0]["flows"].as_u64()), (Some("mix"), Some(2)));
    let jain = rows[0]["jain_index"].as_f64().unwrap();
    assert!(jain > 0.5 && jain <= 1.0, "{jain}");
    assert!(rows[0]["jain_weighted_index"].as_f64().is_some());
    let run_dir = out.join("runs/flat/mix/alcc-copa/run-0");
    for f in
        ["downlink.log", "downlink-flows.log", "flows.csv", "flow-series.csv", "rusage.json", "rusage-1.json"]
    {
        assert!(run_dir.join(f).is_file(), "{f} missing");
    }
    // The Mahimahi log has no flow field: a departure is `T - BYTES DELAY`.
    let log = std::fs::read_to_string(run_dir.join("downlink.log")).unwrap();
    let departure = log.lines().find(|l| l.split(' ').nth(1) == Some("-")).unwrap();
    assert_eq!(departure.split(' ').count(), 4, "{departure}");
    // Each flow (two of the scheme, both cross flows) moved data and has its delay.
    let flows = std::fs::read_to_string(out.join("flows.csv")).unwrap();
    let lines: Vec<&str> = flows.lines().collect();
    assert!(lines[0].starts_with("trace,workload,scheme,run,flow,weight,start_s,end_s,bytes,throughput_mbps"));
    let names: Vec<&str> = lines[1..].iter().map(|l| l.split(',').nth(4).unwrap()).collect();
    assert_eq!(names, ["flow-0", "flow-1", "cross-tcp-cubic", "cross-udp"], "{flows}");
    let per_flow = rows[0]["per_flow"].as_array().unwrap();
    // Each flow's bytes are over the whole flow log: compare with the whole link log's (the run's
    // summary.json is over the run's window).
    let whole =
        Command::new(ALCC).args(["analyze", "--json"]).arg(run_dir.join("downlink.log")).output().unwrap();
    let link_bytes = serde_json::from_slice::<serde_json::Value>(&whole.stdout).unwrap()["bytes_departed"]
        .as_u64()
        .unwrap();
    let window_bytes = std::fs::read_to_string(run_dir.join("summary.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["bytes_departed"].as_u64())
        .unwrap();
    assert!(window_bytes <= link_bytes, "window {window_bytes} > whole log {link_bytes}");
    let mut sum = 0;
    for f in per_flow {
        let bytes = f["bytes"].as_u64().unwrap();
        assert!(bytes > 50_000 && f["delay_p95_ms"].as_f64().unwrap() >= 20.0, "{f}");
        sum += bytes;
    }
    assert!(sum <= link_bytes, "flows {sum} > link {link_bytes}");
    // The UDP flow sends at its rate, whatever the others do (the link is 12 Mbit/s).
    let udp = per_flow[3]["throughput_mbps"].as_f64().unwrap();
    assert!(udp > 2.0 && udp < 5.0, "{udp}");
    assert_eq!(
        (per_flow[0]["weight"].as_f64(), per_flow[1]["weight_share"].as_f64()),
        (Some(1.0), Some(2.0 / 3.0))
    );
}
