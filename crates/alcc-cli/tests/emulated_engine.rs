//! The engine's acceptance criteria, short versions, over the trace-driven emulator (root and the
//! shared CampusWalk trace; otherwise a visible skip, a failure in CI). `bench/engine-emulated.sh` runs the long versions.
//!
//! - `curl` downloads from `alcc serve --cc copa` over kernel CUBIC behind a cellular trace
//!   (10 ms one-way, 2 MB drop-tail queue): its p95 one-way delay is at most a quarter of plain
//!   CUBIC's (`alcc serve-plain`), its throughput above a floor, its window below the kernel's cwnd, and the
//!   driver reads ACK stamps promptly.
//! - The same with `--cc verus`: its window binds and its p95 is well below CUBIC's.
//! - 50 MiB cross a fast link with 1 % random loss byte-identical, and the controller hears
//!   the losses.
//!
//! Every run is one `alcc link` child that removes its namespaces when its client command
//! exits; scratch files live in a directory removed on drop, so a failing assertion leaves
//! nothing behind.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

mod common;
use common::TmpDir;

const ALCC: &str = env!("CARGO_BIN_EXE_alcc");

/// The tests run one at a time: two emulators sharing the CPU would distort the measurements.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// What every test here needs.
fn emulator_needs() -> alcc_testenv::Needs {
    alcc_testenv::needs().root("the emulator makes network namespaces and TUN devices").program("curl")
}

/// The cellular trace the delay tests use (their bounds were measured on it).
const CELLULAR: &str = "alcc-paper/CampusWalk.trace";

/// Runs `alcc link` over `trace` (both directions) with `server` on the server side and
/// `client` (a shell command) in the client namespace.
fn link(trace: &Path, extra: &[&str], server: &str, client: &str) -> Output {
    let out = Command::new(ALCC)
        .arg("link")
        .arg("--uplink")
        .arg(trace)
        .arg("--downlink")
        .arg(trace)
        .args(extra)
        .args(["--server", server, "--", "sh", "-c", client])
        .output()
        .unwrap();
    assert!(out.status.success(), "alcc link failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Throughput (Mbit/s) and p95 one-way delay (ms) of a downlink log.
fn analyze(log: &Path) -> (f64, f64) {
    let out = Command::new(ALCC).args(["analyze", "--json"]).arg(log).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    (v["throughput_mbps"].as_f64().unwrap(), v["delay_p95_ms"].as_f64().unwrap())
}

/// Telemetry samples (a line cut short when the server was stopped is skipped).
fn telemetry(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// One curl download of `secs` seconds from `alcc serve --cc CC` behind the cellular link
/// (`none`: from the plain writer `alcc serve-plain`, kernel CUBIC with no alcc code); returns
/// (Mbit/s, p95 ms, telemetry).
fn download(dir: &TmpDir, trace: &Path, cc: &str, secs: u32) -> (f64, f64, Vec<serde_json::Value>) {
    let log = dir.path(&format!("{cc}.log"));
    let tel = dir.path(&format!("{cc}.tel"));
    let server = if cc == "none" {
        format!("{ALCC} serve-plain --port 9000 --underlay cubic --bytes 100000000000 --http")
    } else {
        format!(
            "{ALCC} serve --port 9000 --cc {cc} --underlay cubic --bytes 100000000000 --http --telemetry {}",
            tel.display()
        )
    };
    let client =
        format!("sleep 0.5; curl -s -o /dev/null --max-time {secs} http://$ALCC_SERVER:9000/; exit 0");
    let log_arg = log.to_string_lossy().into_owned();
    let extra = [
        "--delay",
        "10",
        "--downlink-queue",
        "droptail",
        "--downlink-queue-args",
        "bytes=2000000",
        "--downlink-log",
        &log_arg,
    ];
    link(trace, &extra, &server, &client);
    let (tput, p95) = analyze(&log);
    eprintln!("{cc}: {tput:.2} Mbit/s, p95 {p95:.1} ms");
    (tput, p95, telemetry(&tel))
}

/// Plain CUBIC's (Mbit/s, p95 ms) on `trace` over 15 s, measured once for the tests that
/// compare with it (the tests run one at a time).
fn cubic_baseline(trace: &Path) -> (f64, f64) {
    static BASELINE: std::sync::OnceLock<(f64, f64)> = std::sync::OnceLock::new();
    *BASELINE.get_or_init(|| {
        let dir = TmpDir::new("cubic");
        let (tput, p95, _) = download(&dir, trace, "none", 15);
        (tput, p95)
    })
}

/// The throughput floor, as a fraction of plain CUBIC's. A faithful Copa cannot exceed what it
/// reaches in the simulator on the same trace (0.74 of CUBIC on CampusWalk over 30 s), and on
/// this emulator it varies from run to run between 0.47 and 0.67 (eleven 30 s runs; 0.52 in a
/// 15 s run): Copa's standing-RTT target reacts to millisecond jitter of the ACK path, which
/// the simulator does not have. A third of CUBIC stays clear of that spread on a loaded
/// 2-core machine and still fails an engine that starves the pipe: a flow that waits for the
/// 200 ms stall poll instead of its ACK stamps, or a kernel pacing cap far below the
/// controller's rate, falls well under it.
const COPA_THROUGHPUT_FLOOR: f64 = 0.35;

#[test]
fn copa_over_cubic_cuts_p95_delay_to_a_quarter_and_keeps_its_window_under_cwnd() {
    let env = alcc_testenv::require!(emulator_needs().trace(CELLULAR));
    let _one_at_a_time = serial();
    let dir = TmpDir::new("delay");
    let trace = env.trace(CELLULAR);
    let (cubic_tput, cubic_p95) = cubic_baseline(&trace);
    let (copa_tput, copa_p95, tel) = download(&dir, &trace, "copa", 15);
    assert!(copa_p95 <= cubic_p95 / 4.0, "p95 copa {copa_p95} ms vs cubic {cubic_p95} ms");
    assert!(
        copa_tput >= COPA_THROUGHPUT_FLOOR * cubic_tput,
        "copa {copa_tput:.2} Mbit/s vs cubic {cubic_tput:.2} Mbit/s"
    );
    let both: Vec<(u64, u64)> =
        tel.iter().filter_map(|s| Some((s["window"].as_u64()?, s["kernel_cwnd"].as_u64()?))).collect();
    assert!(both.len() > 100, "only {} telemetry samples", both.len());
    let below = both.iter().filter(|(w, k)| w < k).count() as f64 / both.len() as f64;
    eprintln!("window below the kernel cwnd in {:.1} % of {} samples", below * 100.0, both.len());
    assert!(below >= 0.9, "window below cwnd in only {:.1} % of samples", below * 100.0);
    // The user-space part of the feedback loop (kernel ACK stamp to the driver reading it)
    // measured 0.2-0.4 ms on average here; 5 ms would add a sixth to this path's 30 ms RTT.
    let last = tel.last().unwrap();
    let stamps = last["ack_stamps"].as_u64().unwrap();
    let mean_us = last["ack_latency_total_us"].as_u64().unwrap() as f64 / stamps.max(1) as f64;
    eprintln!("{stamps} ACK stamps, read {mean_us:.0} us after the kernel stamped them on average");
    assert!(stamps > 1000 && mean_us < 5_000.0, "{stamps} stamps, mean latency {mean_us:.0} us");
}

/// Verus's bounds over 15 s, fractions of plain CUBIC's. Verus's slow start (the reference's:
/// it ends on an RTT above 500 ms) follows kernel CUBIC's cwnd here, since it grows only a
/// window the kernel lets out, and kernel CUBIC takes about 9 s to build that queue on
/// CampusWalk; in a 15 s run those seconds weigh heavily on the p95. Measured with the
/// reference's rules as the default (e2e3e53, 3 runs, 2026-11-26): p95 0.37-0.39 x CUBIC and
/// throughput 0.83-0.84; with the held allowance also cut when W falls (4dff16e, 2 runs, the
/// same day): p95 0.30 x CUBIC and throughput 0.94; with the earlier rules p95 0.32 x CUBIC and throughput 0.92 over 15 s
/// (0.20 and 0.94 over 20 s, the criterion of
/// 0.25 at 0.85 met); before the window validation and the engine's unpaced chunk sizing,
/// 1.00 and 1.00 (Verus's window never bound, kernel CUBIC did). Half of CUBIC's p95 and 0.75
/// of its throughput stay clear of run-to-run spread and fail that regression.
const VERUS_DELAY_CEILING: f64 = 0.5;
/// See [`VERUS_DELAY_CEILING`].
const VERUS_THROUGHPUT_FLOOR: f64 = 0.75;

#[test]
fn verus_over_cubic_halves_p95_delay_and_its_window_binds() {
    let env = alcc_testenv::require!(emulator_needs().trace(CELLULAR));
    let _one_at_a_time = serial();
    let dir = TmpDir::new("verus");
    let trace = env.trace(CELLULAR);
    let (cubic_tput, cubic_p95) = cubic_baseline(&trace);
    let (tput, p95, tel) = download(&dir, &trace, "verus", 15);
    assert!(p95 <= VERUS_DELAY_CEILING * cubic_p95, "p95 verus {p95} ms vs cubic {cubic_p95} ms");
    assert!(
        tput >= VERUS_THROUGHPUT_FLOOR * cubic_tput,
        "verus {tput:.2} Mbit/s vs cubic {cubic_tput:.2} Mbit/s"
    );
    // After slow start Verus's window is what limits the flight (0.40-0.55 of the samples of
    // a 15-20 s run; 0.008 when kernel CUBIC governed).
    let both: Vec<(u64, u64)> =
        tel.iter().filter_map(|s| Some((s["window"].as_u64()?, s["kernel_cwnd"].as_u64()?))).collect();
    let below = both.iter().filter(|(w, k)| w < k).count() as f64 / both.len().max(1) as f64;
    eprintln!("verus: window below the kernel cwnd in {:.1} % of {} samples", below * 100.0, both.len());
    assert!(below >= 0.2, "window below cwnd in only {:.1} % of samples", below * 100.0);
}

/// Deterministic content that is not periodic on any small scale (xorshift64*).
fn content(len: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    out.truncate(len);
    out
}

#[test]
fn fifty_mib_arrive_intact_through_one_percent_loss_and_the_controller_hears_it() {
    alcc_testenv::require!(emulator_needs());
    let _one_at_a_time = serial();
    let dir = TmpDir::new("loss");
    let trace = dir.path("constant.trace");
    let status = Command::new(ALCC)
        .args(["trace", "gen", "--kind", "constant", "--rate", "200", "--duration", "1", "--out"])
        .arg(&trace)
        .status()
        .unwrap();
    assert!(status.success());
    let data = content(50 << 20);
    let file = dir.path("data.bin");
    std::fs::write(&file, &data).unwrap();
    let got = dir.path("got.bin");
    let tel = dir.path("tel.jsonl");
    let server = format!(
        "{ALCC} serve --port 9000 --cc copa --underlay cubic --http --file {} --telemetry {}",
        file.display(),
        tel.display()
    );
    let client = format!("sleep 0.5; curl -sS --max-time 90 -o {} http://$ALCC_SERVER:9000/", got.display());
    let start = std::time::Instant::now();
    let extra = [
        "--delay",
        "1",
        "--downlink-loss",
        "0.01",
        "--downlink-queue",
        "droptail",
        "--downlink-queue-args",
        "packets=1000",
    ];
    link(&trace, &extra, &server, &client);
    let secs = start.elapsed().as_secs_f64();
    let received = std::fs::read(&got).unwrap();
    assert_eq!(received.len(), data.len(), "length");
    assert!(received == data, "content differs");
    let losses = telemetry(&tel).iter().filter_map(|s| s["losses"].as_u64()).max().unwrap_or(0);
    eprintln!("50 MiB with 1 % loss: {secs:.1} s, {losses} loss events at the controller");
    // About 36 000 segments at 1 % loss: hundreds of retransmissions.
    assert!(losses >= 50, "the controller heard only {losses} losses");
}
