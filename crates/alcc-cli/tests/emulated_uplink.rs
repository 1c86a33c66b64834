//! The uplink through the trace-driven emulator (root only; a skip goes through alcc-testenv:
//! visible, and a failure in CI): 1 GiB uploaded by `alcc put` in framed mode to `alcc serve --receive`
//! across a fast link that loses 1 % of the uplink's packets at random arrives byte-identical
//! (and the loss was real: the sender's kernel retransmitted thousands of segments). The controller is a fixed window of 2000 segments over
//! kernel BBR, so that the test takes seconds (under CUBIC the random loss holds a delay-based
//! controller near 30 Mbit/s: minutes). `bench/uplink-integrity.sh` uploads 1 GiB clean and with
//! 1 % loss by both the Rust and the Java uploader under Copa (bench/uplink-results.md).

use std::process::Command;
use std::time::Instant;

mod common;
use common::{write_content, TmpDir};

const ALCC: &str = env!("CARGO_BIN_EXE_alcc");

#[test]
fn one_gib_upload_arrives_intact_through_one_percent_uplink_loss() {
    alcc_testenv::require!(alcc_testenv::needs()
        .root("the emulator makes network namespaces and TUN devices")
        .program("cmp"));
    let dir = TmpDir::new("uplink-gib");
    let trace = dir.path("fast.trace");
    let status = Command::new(ALCC)
        .args(["trace", "gen", "--kind", "constant", "--rate", "720", "--duration", "1", "--out"])
        .arg(&trace)
        .status()
        .unwrap();
    assert!(status.success());
    let size: u64 = 1 << 30;
    let file = dir.path("data.bin");
    write_content(&file, size);
    let out = dir.path("out");
    std::fs::create_dir_all(&out).unwrap();
    let server = format!("{ALCC} serve --receive --port 9000 --count 1 --out {}", out.display());
    let tel = dir.path("tel.jsonl");
    let client = format!(
        "sleep 0.5; {ALCC} put $ALCC_SERVER:9000 --cc fixed:window=2000 --underlay bbr --file {} \
         --telemetry {} --close-timeout 120",
        file.display(),
        tel.display()
    );
    let start = Instant::now();
    let run = Command::new(ALCC)
        .arg("link")
        .arg("--uplink")
        .arg(&trace)
        .arg("--downlink")
        .arg(&trace)
        .args(["--delay", "1", "--uplink-loss", "0.01", "--seed", "7"])
        .args(["--server", &server, "--", "sh", "-c", &client])
        .output()
        .unwrap();
    let secs = start.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "alcc link failed: {err}");
    let copy = out.join("upload-0");
    let same = Command::new("cmp").arg(&file).arg(&copy).status().unwrap();
    assert!(same.success(), "the upload differs from the file: {err}");
    // The loss was real: the sender's kernel retransmitted (its last telemetry sample).
    let last = std::fs::read_to_string(&tel).unwrap();
    let last: serde_json::Value = serde_json::from_str(last.lines().last().unwrap()).unwrap();
    let retrans = last["kernel_total_retrans"].as_u64().unwrap_or(0);
    assert!(retrans > 1000, "1 % of ~750 000 packets lost, yet {retrans} retransmissions: {last}");
    eprintln!("1 GiB uploaded through 1 % uplink loss in {secs:.1} s, {retrans} retransmissions");
}
