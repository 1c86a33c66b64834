//! Runs the `alcc` binary: `trace gen`, `trace info` and `analyze` on generated data, and on
//! malformed files (the error names file and line, the exit code is non-zero, nothing panics).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use alcc_trace::{LogHeader, LogWriter, TimeUnit, Trace};

/// A fresh scratch directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("alcc-cli-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn alcc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_alcc")).args(args).env("RUST_BACKTRACE", "0").output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn gen_constant_then_info() {
    let dir = scratch("constant");
    let file = dir.join("c.trace");
    let out = alcc(&[
        "trace",
        "gen",
        "--kind",
        "constant",
        "--rate",
        "24",
        "--duration",
        "2",
        "--out",
        path(&file),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let trace = Trace::parse_file(&file).unwrap();
    assert_eq!(trace.opportunities_ms().len(), 4000);
    assert_eq!(trace.period_ms(), 2000);
    let info = alcc(&["trace", "info", path(&file)]);
    assert!(info.status.success());
    let stdout = text(&info.stdout);
    assert!(stdout.contains("lines:       4000"), "{stdout}");
    assert!(stdout.contains("mean rate:   24.00 Mbit/s"), "{stdout}");
    // Second [0, 1000) ms holds the opportunities of ms 1..=999 (1998 packets = 23.976 Mbit/s),
    // second [1000, 2000) those of ms 1000..=1999 (2000 packets).
    assert!(stdout.contains("1 s rates:   p5 23.98 / p50 23.98 / p95 24.00 Mbit/s"), "{stdout}");
    let json = alcc(&["trace", "info", "--json", path(&file)]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(value["period_ms"], 2000);
    assert_eq!(value["mean_rate_mbps"], 24.0);
}

#[test]
fn gen_cellular_is_deterministic_per_seed() {
    let dir = scratch("cellular");
    let gen = |seed: &str, name: &str| {
        let file = dir.join(name);
        let args =
            ["trace", "gen", "--kind", "cellular", "--duration", "20", "--seed", seed, "--out", path(&file)];
        let out = alcc(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        std::fs::read(file).unwrap()
    };
    let (a, b, c) = (gen("5", "a"), gen("5", "b"), gen("6", "c"));
    assert_eq!(a, b);
    assert_ne!(a, c);
    let trace = Trace::parse_bytes("a", &a).unwrap();
    assert_eq!(trace.period_ms(), 20_000);
}

#[test]
fn gen_rejects_bad_parameters() {
    let dir = scratch("badgen");
    let file = dir.join("x.trace");
    let out = alcc(&["trace", "gen", "--kind", "constant", "--out", path(&file)]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("--rate"), "{}", text(&out.stderr));
    let out = alcc(&["trace", "gen", "--kind", "cellular", "--log-sd=-1", "--out", path(&file)]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("log_sd"), "{}", text(&out.stderr));
}

#[test]
fn malformed_trace_names_file_and_line() {
    let dir = scratch("badtrace");
    let file = dir.join("bad.trace");
    std::fs::write(&file, "1\n2\n41\n40\n").unwrap();
    let out = alcc(&["trace", "info", path(&file)]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let expected = format!("{}:4: timestamp 40 is before the previous one (41)", file.display());
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let missing = alcc(&["trace", "info", path(&dir.join("missing.trace"))]);
    assert_eq!(missing.status.code(), Some(1));
}

/// Replays `trace` as a FIFO link fed with one 1500-byte packet every `gap_us`, writing a
/// µs-resolution log with a 10 ms propagation delay.
fn write_log(trace: &Trace, gap_us: u64, until_ms: u64, file: &Path) {
    let header = LogHeader {
        title: "test link (downlink)".into(),
        queue: Some("infinite".into()),
        init_timestamp_ms: Some(0),
        base_timestamp_ms: Some(0),
        propagation_delay_us: Some(10_000),
        unit: TimeUnit::Micros,
    };
    let mut log = LogWriter::new(std::fs::File::create(file).unwrap(), &header).unwrap();
    let mut queue = std::collections::VecDeque::new();
    let mut next_arrival = 500;
    for at_ms in trace.opportunities_from(0).take_while(|&t| t < until_ms) {
        let at_us = at_ms * 1000;
        while next_arrival <= at_us {
            log.arrival(next_arrival, 1500).unwrap();
            queue.push_back(next_arrival);
            next_arrival += gap_us;
        }
        log.opportunity(at_us, 1500).unwrap();
        if let Some(arrived) = queue.pop_front() {
            log.departure(at_us, 1500, arrived).unwrap();
        }
    }
    log.finish().unwrap();
}

#[test]
fn analyze_a_half_loaded_constant_link() {
    let dir = scratch("analyze");
    let trace_file = dir.join("12.trace");
    let out = alcc(&[
        "trace",
        "gen",
        "--kind",
        "constant",
        "--rate",
        "12",
        "--duration",
        "1",
        "--out",
        path(&trace_file),
    ]);
    assert!(out.status.success());
    let trace = Trace::parse_file(&trace_file).unwrap();
    let log_file = dir.join("down.log");
    // One packet every 2 ms, arriving 0.5 ms before each even-ms opportunity... at 0.5, 2.5, ...
    // ms: each waits 0.5 ms for the next opportunity (1, 3, ...).
    write_log(&trace, 2000, 4000, &log_file);
    let series = dir.join("series.csv");
    let out = alcc(&["analyze", "--json", "--series", path(&series), path(&log_file)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Opportunities at 1..=3999 ms: 3999 x 12 kbit over 3998 ms.
    let capacity = s["capacity_mbps"].as_f64().unwrap();
    assert!((capacity - 3999.0 * 12.0 / 3998.0).abs() < 1e-9, "{capacity}");
    // Events from the first arrival (0.5 ms) to the last opportunity (3999 ms).
    assert_eq!(s["duration_s"], 3.9985);
    // Departures at 1, 3, ..., 3999 ms: 2000 packets over 3998 ms.
    let throughput = s["throughput_mbps"].as_f64().unwrap();
    assert!((throughput - 2000.0 * 12.0 / 3998.0).abs() < 1e-9, "{throughput}");
    assert!((s["utilization"].as_f64().unwrap() - 2000.0 / 3999.0).abs() < 1e-12);
    assert_eq!(s["loss"], 0.0);
    assert_eq!(s["delay_p50_ms"], 10.5);
    assert_eq!(s["delay_p99_ms"], 10.5);
    let csv = std::fs::read_to_string(&series).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows[0], alcc_trace::metrics::SERIES_CSV_HEADER);
    assert_eq!(rows.len(), 1 + 8, "{csv}");
    assert!(rows[1].ends_with(",10.500,10.500,10.500"), "{}", rows[1]);

    let out = alcc(&["analyze", path(&log_file)]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("utilization: 50.0 %"), "{stdout}");
    assert!(stdout.contains("p50 10.5 / p95 10.5 / p99 10.5 ms"), "{stdout}");
}

#[test]
fn analyze_over_a_window_counts_what_is_still_queued() {
    let dir = scratch("window");
    let file = dir.join("down.log");
    // 10 ms propagation (µs log). Packets at 0.1 s and 0.2 s leave 5 ms later; the one of 0.3 s
    // waits for an outage and leaves at 1.5 s; the one of 0.4 s is still queued when the log
    // ends at 1.6 s.
    let log = "# test (downlink)\n# alcc propagation delay us: 10000\n# alcc time unit: us\n\
               0 # 1500\n100000 + 1500\n105000 # 1500\n105000 - 1500 5000\n200000 + 1500\n\
               205000 # 1500\n205000 - 1500 5000\n300000 + 1500\n400000 + 1500\n\
               1500000 # 1500\n1500000 - 1500 1200000\n1600000 # 1500\n";
    std::fs::write(&file, log).unwrap();
    let out = alcc(&["analyze", "--json", "--window", "0:1", path(&file)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Two packets left in the 1-s window: 3000 bytes over 1 s, both at 15 ms.
    assert_eq!(s["throughput_mbps"], 0.024);
    assert_eq!(s["delay_p95_ms"], 15.0);
    assert_eq!(s["window_to_s"], 1.0);
    assert_eq!(s["log_end_s"], 1.6);
    assert_eq!(s["covers_window"], true);
    assert_eq!(s["packets_queued_at_end"], 2);
    assert_eq!(s["packets_departed_after"], 1);
    assert_eq!(s["delay_departed_after_max_ms"], 1210.0);
    assert_eq!(s["packets_queued_at_log_end"], 1);
    // Over the whole log the late packet is in the p95 and the rate divides by 1.395 s.
    let out = alcc(&["analyze", "--json", path(&file)]);
    let whole: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(whole["delay_p95_ms"], 1210.0);
    assert!(whole["throughput_mbps"].as_f64().unwrap() > 0.025, "{whole}");
    let out = alcc(&["analyze", "--window", "0:2", path(&file)]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("window:      0.000-2.000 s of the link's clock (the log ends at 1.600 s, before the window does)"), "{stdout}");
    assert!(stdout.contains("1 packets at the window's end: 0 left later"), "{stdout}");
    let out = alcc(&["analyze", "--window", "2:1", path(&file)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("0 <= FROM < TO"), "{}", text(&out.stderr));
}

#[test]
fn malformed_log_names_file_and_line() {
    let dir = scratch("badlog");
    let file = dir.join("bad.log");
    std::fs::write(&file, "# mahimahi mm-link\n1 + 1500\n2 - 1500 x\n").unwrap();
    let out = alcc(&["analyze", path(&file)]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:3: delay \"x\" is not an unsigned integer", file.display())),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn analyze_a_mahimahi_log_with_a_given_propagation_delay() {
    let dir = scratch("mahimahi");
    let file = dir.join("down.log");
    let log = "# mahimahi mm-link (downlink) [x.down] > down.log\n# init timestamp: 5\n# base timestamp: 0\n\
               0 # 1500\n0 + 1500\n1 + 1500\n2 # 1500\n2 - 1500 2\n4 # 1500\n4 - 1500 3\n";
    std::fs::write(&file, log).unwrap();
    let out = alcc(&["analyze", "--json", "--propagation-delay-ms", "20", path(&file)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Queueing delays 2 and 3 ms plus 20 ms; 3000 B over the 2 ms between departures.
    assert_eq!(s["delay_p50_ms"], 22.0);
    assert_eq!(s["delay_p95_ms"], 23.0);
    assert_eq!(s["throughput_mbps"], 12.0);
    assert_eq!(s["capacity_mbps"], 4500.0 * 8.0 / 4000.0);
    assert_eq!(s["propagation_delay_ms"], 20.0);
    // Without the flag the log's missing propagation delay is announced and taken as 0.
    let out = alcc(&["analyze", "--json", path(&file)]);
    assert!(text(&out.stderr).contains("does not record the propagation delay"), "{}", text(&out.stderr));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["delay_p50_ms"], 2.0);
}
