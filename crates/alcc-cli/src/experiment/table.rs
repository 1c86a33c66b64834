//! The results table: one [`Row`] per run, written as `results.csv` and `results.json`, and
//! the scheme x trace medians printed at the end of a sweep.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::per_flow::{FlowRow, FLOWS_CSV_HEADER};

/// The columns of `results.csv`, in order (docs/experiment-format.md; never rename, only add
/// at the end).
pub const CSV_HEADER: &[&str] = &[
    "trace",
    "scheme",
    "family",
    "cc",
    "underlay",
    "mode",
    "run",
    "status",
    "error",
    "duration_s",
    "capacity_mbps",
    "throughput_mbps",
    "utilization",
    "loss",
    "delay_p50_ms",
    "delay_p95_ms",
    "delay_p99_ms",
    "delay_mean_ms",
    "cpu_s",
    "dir",
    "wall_s",
    "max_rss_kb",
    "label",
    "load_avg",
    "direction",
    "workload",
    "flows",
    "flows_throughput_mbps",
    "flows_delay_p95_ms",
    "jain_index",
    "jain_weighted_index",
    "window_from_s",
    "window_to_s",
    "queued_at_end",
    "departed_after_window",
    "queued_at_log_end",
];

/// `ok` or `failed`.
pub const OK: &str = "ok";
/// See [`OK`].
pub const FAILED: &str = "failed";

/// One run's result (also the run directory's `result.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Trace name.
    pub trace: String,
    /// Scheme as written in the spec.
    pub scheme: String,
    /// tcp, alcc or udp ([`super::scheme::Family`]).
    pub family: String,
    /// Controller spec, `none` for plain TCP.
    pub cc: String,
    /// Kernel CC under it, empty for udp.
    pub underlay: String,
    /// kernel, framed or udp.
    pub mode: String,
    /// Run index from 0.
    pub run: u32,
    /// `ok` or `failed`.
    pub status: String,
    /// Why the run failed (empty when ok).
    pub error: String,
    /// How long the measured link's log runs from the link's start, seconds (in results
    /// written before `window_to_s` existed: the log's span).
    pub duration_s: Option<f64>,
    /// Mean capacity of the link over the window (older results: over the log), Mbit/s.
    pub capacity_mbps: Option<f64>,
    /// Bytes that left the link in the window / its width, Mbit/s (older results, without
    /// `window_to_s`: bytes departed over the span of the log's departures).
    pub throughput_mbps: Option<f64>,
    /// Throughput over capacity.
    pub utilization: Option<f64>,
    /// Bytes dropped in the window over bytes that arrived in it (older results: the fraction
    /// of bytes that never departed, queued ones included).
    pub loss: Option<f64>,
    /// One-way delay percentiles and mean, ms (propagation included), of the packets that left
    /// the link in the window (older results: of every packet the log shows leaving).
    pub delay_p50_ms: Option<f64>,
    /// See `delay_p50_ms`.
    pub delay_p95_ms: Option<f64>,
    /// See `delay_p50_ms`.
    pub delay_p99_ms: Option<f64>,
    /// See `delay_p50_ms`.
    pub delay_mean_ms: Option<f64>,
    /// CPU time (user + system) of the sender process, seconds.
    pub cpu_s: Option<f64>,
    /// The run directory relative to the output directory.
    pub dir: String,
    /// Wall time of the whole run (emulator start to end), seconds.
    pub wall_s: Option<f64>,
    /// Peak resident memory of the sender, KiB.
    pub max_rss_kb: Option<u64>,
    /// What the scheme is, in a few words ([`super::scheme::Kind::label`]; empty in results
    /// written before the column existed).
    #[serde(default)]
    pub label: String,
    /// The machine's 1-minute load average when the run ended (/proc/loadavg): emulated runs,
    /// the authors' busy-waiting programs most, are perturbed on a busy machine. Empty when
    /// unknown.
    #[serde(default)]
    pub load_avg: Option<f64>,
    /// `down` (the server sent) or `up` (the client uploaded); `down` in results written
    /// before the column existed.
    #[serde(default = "down")]
    pub direction: String,
    /// The workload's name (empty without `[[workloads]]`, and in older results).
    #[serde(default)]
    pub workload: String,
    /// Flows of the scheme in the run (1 without a workload, and in older results).
    #[serde(default = "one")]
    pub flows: u32,
    /// The scheme's flows' bits over the run, Mbit/s (runs with a workload: cross traffic
    /// left out, unlike `throughput_mbps`).
    #[serde(default)]
    pub flows_throughput_mbps: Option<f64>,
    /// 95th percentile one-way delay of the scheme's flows' packets, ms (runs with a workload).
    #[serde(default)]
    pub flows_delay_p95_ms: Option<f64>,
    /// Jain's fairness index of the scheme's flows' rates while all of them run (several flows).
    #[serde(default)]
    pub jain_index: Option<f64>,
    /// The same of rate / weight (several flows with weights).
    #[serde(default)]
    pub jain_weighted_index: Option<f64>,
    /// The start of the window the run's link figures are over, seconds on the link's clock
    /// (docs/experiment-format.md, "The common window"); empty in results written before the
    /// window existed, whose figures are over each run's own log.
    #[serde(default)]
    pub window_from_s: Option<f64>,
    /// Its end (excluded).
    #[serde(default)]
    pub window_to_s: Option<f64>,
    /// Packets still in the link at the window's end: their delay is not in the percentiles.
    #[serde(default)]
    pub queued_at_end: Option<u64>,
    /// Of those, the packets the log shows leaving after the window.
    #[serde(default)]
    pub departed_after_window: Option<u64>,
    /// Of those, the packets still queued when the log ended.
    #[serde(default)]
    pub queued_at_log_end: Option<u64>,
    /// Each flow's figures (runs with a workload; `flows.csv`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_flow: Vec<FlowRow>,
}

fn one() -> u32 {
    1
}

fn down() -> String {
    "down".to_string()
}

impl Row {
    /// Whether the run completed.
    pub fn is_ok(&self) -> bool {
        self.status == OK
    }

    /// The row's cells in [`CSV_HEADER`] order, unquoted.
    pub fn cells(&self) -> Vec<String> {
        let f = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
        let n = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
        vec![
            self.trace.clone(),
            self.scheme.clone(),
            self.family.clone(),
            self.cc.clone(),
            self.underlay.clone(),
            self.mode.clone(),
            self.run.to_string(),
            self.status.clone(),
            self.error.clone(),
            f(self.duration_s),
            f(self.capacity_mbps),
            f(self.throughput_mbps),
            f(self.utilization),
            f(self.loss),
            f(self.delay_p50_ms),
            f(self.delay_p95_ms),
            f(self.delay_p99_ms),
            f(self.delay_mean_ms),
            f(self.cpu_s),
            self.dir.clone(),
            f(self.wall_s),
            self.max_rss_kb.map(|v| v.to_string()).unwrap_or_default(),
            self.label.clone(),
            f(self.load_avg),
            self.direction.clone(),
            self.workload.clone(),
            self.flows.to_string(),
            f(self.flows_throughput_mbps),
            f(self.flows_delay_p95_ms),
            f(self.jain_index),
            f(self.jain_weighted_index),
            f(self.window_from_s),
            f(self.window_to_s),
            n(self.queued_at_end),
            n(self.departed_after_window),
            n(self.queued_at_log_end),
        ]
    }
}

/// One CSV cell (RFC 4180): quoted when it holds a comma, quote, CR or LF; quotes doubled.
pub fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The whole CSV text: header, then one line per row.
pub fn to_csv(rows: &[Row]) -> String {
    let mut out = CSV_HEADER.join(",");
    out.push('\n');
    for r in rows {
        let cells: Vec<String> = r.cells().iter().map(|c| csv_cell(c)).collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// The per-flow table of every run with a workload: the run's keys, then `flows.csv`'s columns.
pub fn flows_csv(rows: &[Row]) -> String {
    let mut out = format!("trace,workload,scheme,run,{FLOWS_CSV_HEADER}\n");
    for r in rows {
        for f in &r.per_flow {
            let mut cells = vec![r.trace.clone(), r.workload.clone(), r.scheme.clone(), r.run.to_string()];
            cells.extend(f.cells());
            let cells: Vec<String> = cells.iter().map(|c| csv_cell(c)).collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
    }
    out
}

/// Writes `results.csv` and `results.json` into `out`, and `flows.csv` when a run has
/// per-flow figures.
pub fn write_tables(
    out: &Path,
    name: &str,
    quick: bool,
    spec: &serde_json::Value,
    rows: &[Row],
) -> Result<()> {
    let csv = out.join("results.csv");
    write_atomic(&csv, to_csv(rows).as_bytes())?;
    if rows.iter().any(|r| !r.per_flow.is_empty()) {
        write_atomic(&out.join("flows.csv"), flows_csv(rows).as_bytes())?;
    }
    let json = serde_json::json!({ "name": name, "quick": quick, "spec": spec, "runs": rows });
    let text = serde_json::to_string_pretty(&json)? + "\n";
    write_atomic(&out.join("results.json"), text.as_bytes())
}

/// Writes `path` through a temporary file and a rename, so that a reader never sees half.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).with_context(|| format!("{}: cannot write", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("{}: cannot rename to {}", tmp.display(), path.display()))
}

/// The median of some values (mean of the middle two for an even count).
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

/// The end-of-sweep table: per trace (`TRACE/WORKLOAD` with workloads) and scheme (in
/// first-seen order), the runs ok of all, and the medians over ok runs of throughput, p95 delay
/// and sender CPU.
pub fn medians_table(rows: &[Row]) -> String {
    let mut order: Vec<(String, String)> = Vec::new();
    let mut groups: BTreeMap<(String, String), Vec<&Row>> = BTreeMap::new();
    for r in rows {
        let trace =
            if r.workload.is_empty() { r.trace.clone() } else { format!("{}/{}", r.trace, r.workload) };
        let key = (trace, r.scheme.clone());
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push(r);
    }
    let cell = |v: Option<f64>, p: usize| v.map(|x| format!("{x:.p$}")).unwrap_or_else(|| "-".into());
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<24} {:<22} {:>5} {:>10} {:>10} {:>10} {:>8}",
        "trace", "scheme", "ok", "Mbit/s", "util", "p95 ms", "CPU s"
    );
    for key in order {
        let g = &groups[&key];
        let ok: Vec<&&Row> = g.iter().filter(|r| r.is_ok()).collect();
        let med = |f: fn(&Row) -> Option<f64>| median(ok.iter().filter_map(|r| f(r)).collect());
        let _ = writeln!(
            out,
            "{:<24} {:<22} {:>5} {:>10} {:>10} {:>10} {:>8}",
            key.0,
            key.1,
            format!("{}/{}", ok.len(), g.len()),
            cell(med(|r| r.throughput_mbps), 2),
            cell(med(|r| r.utilization), 3),
            cell(med(|r| r.delay_p95_ms), 1),
            cell(med(|r| r.cpu_s), 2),
        );
    }
    let _ = writeln!(out, "{}", window_line(rows));
    out
}

/// The line under the medians that says which window the figures are over: the common window's
/// length from each sender's start (docs/experiment-format.md), or each run's own link log for
/// results written before it, or both when the rows are mixed.
pub fn window_line(rows: &[Row]) -> String {
    let mut lengths: Vec<String> = Vec::new();
    let mut own_log = false;
    for r in rows.iter().filter(|r| r.is_ok()) {
        match (r.window_from_s, r.window_to_s) {
            (Some(from), Some(to)) => {
                let length = format!("{:.1} s", to - from);
                if !lengths.contains(&length) {
                    lengths.push(length);
                }
            }
            _ => own_log = true,
        }
    }
    let mut parts = Vec::new();
    if !lengths.is_empty() {
        parts.push(format!("over each run's window of {} from its sender's start", lengths.join(" / ")));
    }
    if own_log {
        parts.push("over each run's own link log (results written before the common window)".to_string());
    }
    if parts.is_empty() {
        return "no completed run".to_string();
    }
    format!("figures {}", parts.join("; some "))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn row(scheme: &str, run: u32, status: &str, tput: Option<f64>) -> Row {
        Row {
            trace: "t".into(),
            scheme: scheme.into(),
            family: "alcc".into(),
            cc: "copa".into(),
            underlay: "cubic".into(),
            mode: "kernel".into(),
            run,
            status: status.into(),
            error: String::new(),
            duration_s: tput.map(|_| 20.0),
            capacity_mbps: tput.map(|_| 10.0),
            throughput_mbps: tput,
            utilization: tput.map(|t| t / 10.0),
            loss: tput.map(|_| 0.0),
            delay_p50_ms: tput.map(|_| 20.0),
            delay_p95_ms: tput.map(|t| 10.0 * t),
            delay_p99_ms: tput.map(|_| 90.0),
            delay_mean_ms: tput.map(|_| 25.0),
            cpu_s: tput.map(|_| 0.5),
            dir: format!("runs/t/{scheme}/run-{run}"),
            wall_s: Some(21.0),
            max_rss_kb: None,
            label: "alcc's copa above kernel cubic (kernel mode)".into(),
            load_avg: Some(0.5),
            direction: "down".into(),
            workload: String::new(),
            flows: 1,
            flows_throughput_mbps: None,
            flows_delay_p95_ms: None,
            jain_index: None,
            jain_weighted_index: None,
            window_from_s: None,
            window_to_s: None,
            queued_at_end: None,
            departed_after_window: None,
            queued_at_log_end: None,
            per_flow: Vec::new(),
        }
    }

    #[test]
    fn cells_are_quoted_only_when_needed() {
        assert_eq!(csv_cell("plain"), "plain");
        assert_eq!(csv_cell("a,b"), "\"a,b\"");
        assert_eq!(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_cell("line1\nline2"), "\"line1\nline2\"");
        assert_eq!(csv_cell(""), "");
    }

    #[test]
    fn csv_has_the_contract_header_and_empty_cells_for_failed_runs() {
        let mut failed = row("alcc-x", 0, FAILED, None);
        failed.error = "exit status 1: \"bad\", really".into();
        let csv = to_csv(&[row("alcc-copa", 1, OK, Some(8.5)), failed]);
        let lines: Vec<&str> = csv.lines().collect();
        assert!(lines[0].starts_with(
            "trace,scheme,family,cc,underlay,mode,run,status,error,duration_s,capacity_mbps,throughput_mbps,\
             utilization,loss,delay_p50_ms,delay_p95_ms,delay_p99_ms,delay_mean_ms,cpu_s,dir"
        ));
        assert_eq!(lines[1], "t,alcc-copa,alcc,copa,cubic,kernel,1,ok,,20,10,8.5,0.85,0,20,85,90,25,0.5,runs/t/alcc-copa/run-1,21,,alcc's copa above kernel cubic (kernel mode),0.5,down,,1,,,,,,,,,");
        assert_eq!(
            lines[2],
            "t,alcc-x,alcc,copa,cubic,kernel,0,failed,\"exit status 1: \"\"bad\"\", really\",,,,,,,,,,,runs/t/alcc-x/run-0,21,,alcc's copa above kernel cubic (kernel mode),0.5,down,,1,,,,,,,,,"
        );
        assert_eq!(lines[1].split(',').count(), CSV_HEADER.len());
    }

    #[test]
    fn result_json_round_trips() {
        let r = row("alcc-copa", 2, OK, Some(3.25));
        let back: Row = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(r, back);
        // A result written before the direction column was a download.
        let mut old = serde_json::to_value(&r).unwrap();
        old.as_object_mut().unwrap().remove("direction");
        let back: Row = serde_json::from_value(old).unwrap();
        assert_eq!(back.direction, "down");
        // Nor a window: no window columns (its figures are over its own log).
        let mut old = serde_json::to_value(&r).unwrap();
        for k in
            ["window_from_s", "window_to_s", "queued_at_end", "departed_after_window", "queued_at_log_end"]
        {
            old.as_object_mut().unwrap().remove(k);
        }
        let back: Row = serde_json::from_value(old).unwrap();
        assert_eq!((back.window_to_s, back.queued_at_end), (None, None));
        // Nor a workload: one flow.
        let mut old = serde_json::to_value(&r).unwrap();
        for k in ["workload", "flows", "jain_index"] {
            old.as_object_mut().unwrap().remove(k);
        }
        let back: Row = serde_json::from_value(old).unwrap();
        assert_eq!((back.workload.as_str(), back.flows, back.jain_index), ("", 1, None));
    }

    #[test]
    fn medians_over_ok_runs() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
        let rows = [
            row("a", 0, OK, Some(1.0)),
            row("a", 1, OK, Some(3.0)),
            row("a", 2, FAILED, None),
            row("b", 0, FAILED, None),
        ];
        let t = medians_table(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4, "{t}");
        assert_eq!(
            lines[3],
            "figures over each run's own link log (results written before the common window)"
        );
        assert!(lines[1].contains("2/3") && lines[1].contains("2.00") && lines[1].contains("20.0"), "{t}");
        assert!(lines[2].contains("0/1") && lines[2].contains(" -"), "{t}");
        let windowed =
            Row { window_from_s: Some(0.5), window_to_s: Some(30.5), ..row("a", 0, OK, Some(1.0)) };
        assert_eq!(
            window_line(std::slice::from_ref(&windowed)),
            "figures over each run's window of 30.0 s from its sender's start"
        );
        assert!(window_line(&[windowed, row("a", 1, OK, Some(1.0))])
            .contains("; some over each run's own link log"));
        assert_eq!(window_line(&[row("b", 0, FAILED, None)]), "no completed run");
        // Workloads are told apart.
        let mut w = row("a", 0, OK, Some(5.0));
        w.workload = "four".into();
        let t = medians_table(&[row("a", 1, OK, Some(1.0)), w]);
        assert!(
            t.lines().nth(1).unwrap().starts_with("t ") && t.lines().nth(2).unwrap().starts_with("t/four "),
            "{t}"
        );
    }
}
