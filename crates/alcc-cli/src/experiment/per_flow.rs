//! Per-flow figures of a run with a workload, from the emulator's downlink flow log
//! (`downlink-flows.log`, alcc_trace::flow): each flow's throughput, share and one-way delay,
//! Jain's fairness index over the scheme's flows, and a per-flow throughput series
//! (docs/experiment-format.md, "Several flows and cross traffic").
//!
//! Flows are told apart by their ports ([`super::workload`]): packets from a scheme port are the
//! scheme's (flow `i` by its client port `40000 + i`, or flow 0 when there is one flow), UDP
//! packets from port `40000 + i` flow `i`'s of a scheme with a sender per flow
//! ([`super::scheme::Kind::sender_per_flow`]: `udp-CC`, `ref-copa`), from the cross ports the
//! cross flows'; anything else (iperf3's control connection, ICMP) is left out of every
//! per-flow figure but stays in the run's link figures.
//!
//! Times: the log's axis starts with the emulator; the clients start [`CLIENT_START_DELAY_S`]
//! later, and the offsets and on periods of the spec count from there.

use std::fmt::Write as _;
use std::path::Path;

use alcc_trace::flow::ports_of;
use alcc_trace::{metrics, FlowLog, Recording};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::analysis::BIN_US;
use super::runner::CLIENT_START_DELAY_S;
use super::workload::{
    CrossSpec, Workload, CROSS_TCP_PORT, CROSS_UDP_PORT, FLOW_CLIENT_PORT_BASE, SCHEME_PORTS,
};

/// One flow's figures (a row of `flows.csv`; also in `result.json`'s `flows`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowRow {
    /// `flow-0`, `flow-1`, ... for the scheme's flows, `cross-tcp-cubic`, `cross-udp`.
    pub flow: String,
    /// The flow's priority weight, when the workload gives weights (scheme flows only).
    pub weight: Option<f64>,
    /// When it was scheduled to start and end, s after the clients' start (a cross flow: its
    /// first on period's start and last one's end).
    pub start_s: f64,
    /// See `start_s`.
    pub end_s: f64,
    /// Bytes that left the bottleneck.
    pub bytes: u64,
    /// Its bits that left the bottleneck over the time it was scheduled to run (a cross flow:
    /// the sum of its on periods), Mbit/s: what it got on average while it ran (bytes still
    /// queued at a period's end count, as they were sent in it).
    pub throughput_mbps: Option<f64>,
    /// Its part of the scheme's bytes while every scheme flow runs (scheme flows only).
    pub share: Option<f64>,
    /// Its weight over the sum of the weights (what a weighted share would give), when given.
    pub weight_share: Option<f64>,
    /// One-way delay percentiles of its packets, ms (propagation included).
    pub delay_p50_ms: Option<f64>,
    /// See `delay_p50_ms`.
    pub delay_p95_ms: Option<f64>,
    /// Fraction of its packets that never left the bottleneck.
    pub loss: Option<f64>,
}

/// The header of `flows.csv` (per run, and at the top of the output with the run's columns
/// first).
pub const FLOWS_CSV_HEADER: &str =
    "flow,weight,start_s,end_s,bytes,throughput_mbps,share,weight_share,delay_p50_ms,delay_p95_ms,loss";

impl FlowRow {
    /// The cells in [`FLOWS_CSV_HEADER`] order.
    pub fn cells(&self) -> Vec<String> {
        let f = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
        vec![
            self.flow.clone(),
            f(self.weight),
            self.start_s.to_string(),
            self.end_s.to_string(),
            self.bytes.to_string(),
            f(self.throughput_mbps),
            f(self.share),
            f(self.weight_share),
            f(self.delay_p50_ms),
            f(self.delay_p95_ms),
            f(self.loss),
        ]
    }
}

/// What the run's row takes from the per-flow figures.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FlowTotals {
    /// The scheme's bytes over the run (clients' start to deadline), Mbit/s.
    pub scheme_throughput_mbps: Option<f64>,
    /// 95th percentile one-way delay of the scheme's packets, ms.
    pub scheme_delay_p95_ms: Option<f64>,
    /// Jain's index of the scheme's flows' rates while all of them run (several flows only).
    pub jain_index: Option<f64>,
    /// The same of rate / weight (when weights are given).
    pub jain_weighted_index: Option<f64>,
}

/// Jain's fairness index (Jain, Chiu, Hawe 1984): (sum x)^2 / (n sum x^2), 1 when all are
/// equal, 1/n when one takes everything; `None` for no values or all zero.
pub fn jain(values: &[f64]) -> Option<f64> {
    let sum: f64 = values.iter().sum();
    let squares: f64 = values.iter().map(|x| x * x).sum();
    (!values.is_empty() && squares > 0.0).then(|| sum * sum / (values.len() as f64 * squares))
}

/// Which flow of the workload a flow log's flow (`tcp:9000:40001`) is, by its ports.
pub fn classify(workload: &Workload, flow: &str) -> Option<String> {
    let (proto, src, dst) = ports_of(flow)?;
    if SCHEME_PORTS[..workload.servers.max(1) as usize].contains(&src) {
        if workload.flows == 1 {
            return Some("flow-0".into());
        }
        let i = dst.checked_sub(FLOW_CLIENT_PORT_BASE)?;
        return (u32::from(i) < workload.flows).then(|| format!("flow-{i}"));
    }
    // A sender per flow sends from the flow's own port (downlink packets only come from the
    // server side, whose other ports are the scheme's and the cross flows').
    if proto == "udp" && workload.flows > 1 {
        if let Some(i) = src.checked_sub(FLOW_CLIENT_PORT_BASE).filter(|&i| u32::from(i) < workload.flows) {
            return Some(format!("flow-{i}"));
        }
    }
    let cross = |c: &&CrossSpec| match (proto, src) {
        ("tcp", CROSS_TCP_PORT) => c.kind.starts_with("tcp-"),
        ("udp", CROSS_UDP_PORT) => c.kind == "udp",
        _ => false,
    };
    workload.cross.iter().find(cross).map(CrossSpec::flow_name)
}

/// Bytes of `recording` that left the bottleneck within `[from_us, to_us)`.
fn bytes_within(recording: &Recording, from_us: u64, to_us: u64) -> u64 {
    recording
        .packets
        .iter()
        .filter(|p| p.departed_us.is_some_and(|d| d >= from_us && d < to_us))
        .map(|p| p.bytes)
        .sum()
}

fn us(s: f64) -> u64 {
    ((s + CLIENT_START_DELAY_S) * 1e6).round().max(0.0) as u64
}

fn mbps(bytes: u64, seconds: f64) -> Option<f64> {
    (seconds > 0.0).then(|| bytes as f64 * 8.0 / seconds / 1e6)
}

/// Reads `dir/LOG` (the flow log) and writes `flows.csv` and `flow-series.csv` beside it;
/// returns the flows' rows (scheme flows first, then cross flows) and the run's totals.
pub fn analyze_flows(
    dir: &Path,
    log: &str,
    workload: &Workload,
    duration_s: f64,
) -> Result<(Vec<FlowRow>, FlowTotals)> {
    let flow_log = FlowLog::read_file(dir.join(log))?;
    let mut names: Vec<(String, Option<usize>)> =
        (0..workload.flows as usize).map(|i| (format!("flow-{i}"), Some(i))).collect();
    names.extend(workload.cross.iter().map(|c| (c.flow_name(), None)));
    let recordings: Vec<Recording> = names
        .iter()
        .map(|(name, _)| flow_log.recording(|f| classify(workload, f).as_deref() == Some(name.as_str())))
        .collect();
    // The window in which every scheme flow runs: shares and fairness are taken there.
    let last_start = (0..workload.flows as usize).map(|i| workload.offset_s(i)).fold(0.0, f64::max);
    let (all_from, all_to) = (us(last_start), us(duration_s));
    let scheme_bytes_all: Vec<u64> =
        recordings[..workload.flows as usize].iter().map(|r| bytes_within(r, all_from, all_to)).collect();
    let total_all: u64 = scheme_bytes_all.iter().sum();
    let weight_sum: f64 = workload.weights.iter().sum();
    let mut rows = Vec::new();
    for ((name, index), rec) in names.iter().zip(&recordings) {
        let summary = metrics::summarize(rec);
        let (start_s, end_s, on_s) = match index {
            Some(i) => {
                let start = workload.offset_s(*i);
                (start, duration_s, duration_s - start)
            }
            None => {
                let cross = workload.cross.iter().find(|c| &c.flow_name() == name);
                let periods = cross.map(|c| c.on_s.clone()).unwrap_or_default();
                let on = periods.iter().map(|[a, b]| b - a).sum();
                let first = periods.first().map_or(0.0, |p| p[0]);
                (first, periods.last().map_or(0.0, |p| p[1]), on)
            }
        };
        let weight = index.and_then(|i| workload.weight(i));
        rows.push(FlowRow {
            flow: name.clone(),
            weight,
            start_s,
            end_s,
            bytes: summary.bytes_departed,
            throughput_mbps: mbps(summary.bytes_departed, on_s),
            share: index.filter(|_| total_all > 0).map(|i| scheme_bytes_all[i] as f64 / total_all as f64),
            weight_share: weight.map(|w| w / weight_sum),
            delay_p50_ms: summary.delay_p50_ms,
            delay_p95_ms: summary.delay_p95_ms,
            loss: (summary.packets_sent > 0).then_some(summary.loss),
        });
    }
    let scheme = flow_log.recording(|f| classify(workload, f).is_some_and(|n| n.starts_with("flow-")));
    let window_s = duration_s - last_start;
    let rates: Vec<f64> = scheme_bytes_all.iter().map(|b| *b as f64 * 8.0 / window_s / 1e6).collect();
    let several = workload.flows > 1;
    let totals = FlowTotals {
        scheme_throughput_mbps: mbps(bytes_within(&scheme, us(0.0), us(duration_s)), duration_s),
        scheme_delay_p95_ms: metrics::summarize(&scheme).delay_p95_ms,
        jain_index: jain(&rates).filter(|_| several),
        jain_weighted_index: (several && !workload.weights.is_empty())
            .then(|| {
                let per_weight: Vec<f64> = rates.iter().zip(&workload.weights).map(|(r, w)| r / w).collect();
                jain(&per_weight)
            })
            .flatten(),
    };
    let mut csv = format!("{FLOWS_CSV_HEADER}\n");
    for r in &rows {
        csv.push_str(&r.cells().join(","));
        csv.push('\n');
    }
    std::fs::write(dir.join("flows.csv"), csv).context("writing flows.csv")?;
    std::fs::write(dir.join("flow-series.csv"), flow_series(&names, &recordings)?)
        .context("writing flow-series.csv")?;
    Ok((rows, totals))
}

/// `start_s,flow,throughput_mbps,delay_p95_ms`: each flow's 500 ms bins (the same bins as
/// `series.csv`: every flow's recording carries the link's opportunities, so they start
/// together), one row per flow and bin.
fn flow_series(names: &[(String, Option<usize>)], recordings: &[Recording]) -> Result<String> {
    let mut out = String::from("start_s,flow,throughput_mbps,delay_p95_ms\n");
    for ((name, _), rec) in names.iter().zip(recordings) {
        for bin in metrics::time_series(rec, BIN_US)? {
            let delay = bin.delay_p95_ms.map(|d| format!("{d:.3}")).unwrap_or_default();
            let _ = writeln!(out, "{:.1},{name},{:.4},{delay}", bin.start_s, bin.throughput_mbps);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jains_index() {
        assert_eq!(jain(&[5.0, 5.0, 5.0, 5.0]), Some(1.0));
        assert_eq!(jain(&[4.0, 0.0, 0.0, 0.0]), Some(0.25));
        assert!((jain(&[1.0, 2.0, 3.0, 4.0]).unwrap() - 100.0 / 120.0).abs() < 1e-12);
        assert_eq!(jain(&[]), None);
        assert_eq!(jain(&[0.0, 0.0]), None);
    }

    fn workload() -> Workload {
        Workload {
            name: "w".into(),
            flows: 2,
            offsets_s: vec![0.0, 1.0],
            weights: vec![1.0, 3.0],
            cross: vec![CrossSpec { kind: "tcp-cubic".into(), rate_mbps: None, on_s: vec![[1.0, 2.0]] }],
            ..Workload::implicit()
        }
    }

    #[test]
    fn flows_are_classified_by_their_ports() {
        let w = workload();
        assert_eq!(classify(&w, "tcp:9000:40001").as_deref(), Some("flow-1"));
        assert_eq!(classify(&w, "tcp:9000:40002"), None);
        assert_eq!(classify(&w, "tcp:9001:40000"), None, "one server");
        assert_eq!(classify(&w, "tcp:9100:41003").as_deref(), Some("cross-tcp-cubic"));
        assert_eq!(classify(&w, "udp:9200:42000"), None, "no udp cross flow");
        assert_eq!(classify(&w, "icmp"), None);
        let one = Workload { name: "x".into(), ..Workload::implicit() };
        assert_eq!(classify(&one, "udp:9000:51515").as_deref(), Some("flow-0"));
        // A sender per flow (udp-CC, ref-copa): UDP from the flow's port, to any port.
        assert_eq!(classify(&w, "udp:40001:51515").as_deref(), Some("flow-1"));
        assert_eq!(classify(&w, "udp:40000:40000").as_deref(), Some("flow-0"));
        assert_eq!(classify(&w, "udp:40002:51515"), None, "two flows");
        assert_eq!(classify(&w, "tcp:40001:51515"), None, "TCP from a flow port is no such sender");
        assert_eq!(classify(&one, "udp:40000:51515"), None, "one flow: its sender uses the scheme port");
    }

    #[test]
    fn a_flow_log_gives_rates_shares_and_fairness() {
        use alcc_trace::{FlowId, LogHeader, LogWriter, TimeUnit};
        let dir = std::env::temp_dir().join(format!("alcc-per-flow-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let header =
            LogHeader { propagation_delay_us: Some(20_000), unit: TimeUnit::Micros, ..LogHeader::default() };
        let mut w = LogWriter::new(std::fs::File::create(dir.join("f.log")).unwrap(), &header).unwrap();
        let flow = |dst: u16, src: u16| FlowId::Ports { protocol: 6, src, dst };
        // 4 s of a 12 Mbit/s link: flow 0 from 0.5 s, flow 1 from 1.5 s, each 1000 bytes per
        // ms while both run (1 of 2 ms each); the cross flow 1500 bytes per ms in its on second.
        for ms in 0..4000u64 {
            let t = ms * 1000;
            w.opportunity(t, 1500).unwrap();
            let f = match ms {
                500..=1499 => Some(flow(40000, 9000)),
                1500..=2499 if ms % 2 == 0 => Some(flow(40000, 9000)),
                1500..=2499 => Some(flow(40001, 9000)),
                2500..=3499 => Some(flow(41000, 9100)),
                _ => None,
            };
            if let Some(f) = f {
                let bytes =
                    if matches!(f, FlowId::Ports { src: 9000, .. }) && ms >= 1500 { 1000 } else { 1500 };
                w.arrival_of(t, bytes, &f).unwrap();
                w.departure_of(t + 500, bytes, t, &f).unwrap();
            }
        }
        w.finish().unwrap();
        let wl = Workload {
            cross: vec![CrossSpec { kind: "tcp-cubic".into(), rate_mbps: None, on_s: vec![[2.0, 3.0]] }],
            ..workload()
        };
        let (rows, totals) = analyze_flows(&dir, "f.log", &wl, 2.0).unwrap();
        let series = std::fs::read_to_string(dir.join("flow-series.csv")).unwrap();
        let csv = std::fs::read_to_string(dir.join("flows.csv")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(rows.len(), 3);
        let (f0, f1, cross) = (&rows[0], &rows[1], &rows[2]);
        assert_eq!(
            (f0.flow.as_str(), f1.flow.as_str(), cross.flow.as_str()),
            ("flow-0", "flow-1", "cross-tcp-cubic")
        );
        // Flow 0: 1000 x 1500 + 500 x 1000 bytes over 2 s; flow 1: 500 x 1000 over 1 s.
        assert!((f0.throughput_mbps.unwrap() - 2_000_000.0 * 8.0 / 2.0 / 1e6).abs() < 1e-9);
        assert!((f1.throughput_mbps.unwrap() - 4.0).abs() < 1e-9);
        assert_eq!((f0.share, f1.share), (Some(0.5), Some(0.5)));
        assert_eq!((f0.weight_share, f1.weight_share), (Some(0.25), Some(0.75)));
        assert_eq!(f0.delay_p95_ms, Some(20.5));
        assert!((cross.throughput_mbps.unwrap() - 12.0).abs() < 1e-9);
        assert_eq!(cross.share, None);
        assert_eq!(totals.jain_index, Some(1.0));
        // Rates 4 and 4 over weights 1 and 3: x = 4, 4/3.
        assert!((totals.jain_weighted_index.unwrap() - jain(&[4.0, 4.0 / 3.0]).unwrap()).abs() < 1e-12);
        assert!((totals.scheme_throughput_mbps.unwrap() - 2_500_000.0 * 8.0 / 2.0 / 1e6).abs() < 1e-9);
        assert!(csv.starts_with(FLOWS_CSV_HEADER) && csv.lines().count() == 4, "{csv}");
        assert!(
            series.starts_with("start_s,flow,throughput_mbps,delay_p95_ms\n0.0,flow-0,0.0000,\n"),
            "{series}"
        );
        assert!(series.contains("\n1.0,flow-0,12.0000,20.500\n"), "{series}");
    }
}
