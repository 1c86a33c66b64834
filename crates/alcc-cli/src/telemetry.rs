//! `--telemetry FILE`: one JSON line per flow per sample, enough to draw the application
//! window under the kernel's congestion window (the ALCC paper's Figure 1).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use alcc::{FlowInfo, InfoHandle};
use anyhow::{Context, Result};
use serde_json::json;

/// A JSON-lines telemetry file shared by all flows of a process.
pub struct Telemetry {
    start: Instant,
    out: Mutex<BufWriter<File>>,
}

impl Telemetry {
    /// Creates (truncates) `path`; times are seconds since now.
    pub fn create(path: &Path) -> Result<Arc<Telemetry>> {
        let file =
            File::create(path).with_context(|| format!("creating telemetry file {}", path.display()))?;
        Ok(Arc::new(Telemetry { start: Instant::now(), out: Mutex::new(BufWriter::new(file)) }))
    }

    /// Appends one sample of flow `flow`.
    pub fn record(&self, flow: u64, info: &FlowInfo) {
        let bounded = |v: u64| (v != u64::MAX).then_some(v);
        let m = info.metrics.as_ref();
        // The controller's own named values (Copa's delta and target, Verus's target delay, ...);
        // NaN becomes null.
        let cc_metrics: serde_json::Map<String, serde_json::Value> =
            m.map(|m| m.extra.iter().map(|(k, v)| (k.to_string(), json!(v))).collect()).unwrap_or_default();
        let line = json!({
            "t": self.start.elapsed().as_secs_f64(),
            "flow": flow,
            "cc": info.controller,
            "underlay": info.underlay,
            "prior_congestion": info.prior_congestion,
            "window": bounded(info.window),
            "pacing_rate": info.pacing_rate,
            "state": m.map(|m| m.state),
            "srtt_us": m.and_then(|m| m.srtt).map(|d| d.as_micros() as u64),
            "min_rtt_us": m.and_then(|m| m.min_rtt).map(|d| d.as_micros() as u64),
            "kernel_cwnd": info.kernel_cwnd,
            "kernel_rtt_us": info.kernel_rtt_us,
            "kernel_min_rtt_us": info.kernel_min_rtt_us,
            "in_flight": info.bytes_in_flight,
            "queued": info.queued,
            "kernel_notsent": info.kernel_notsent,
            "delivery_rate": info.kernel_delivery_rate,
            "acked": info.bytes_acked,
            "losses": info.losses,
            "written": info.bytes_written,
            "chunks": info.chunks_sent,
            "ack_stamps": info.ack_stamps,
            "info_acks": info.info_acks,
            "quiet_steps": info.quiet_steps,
            "socket_holds": info.socket_holds,
            "ack_latency_total_us": info.ack_latency_total_us,
            "ack_latency_max_us": info.ack_latency_max_us,
            "kernel_unacked": info.kernel_unacked_segments,
            "kernel_mss": info.kernel_mss,
            "kernel_total_retrans": info.kernel_total_retrans,
            "kernel_pacing_rate": info.kernel_pacing_rate,
            "underlay_cwnd": info.underlay_cwnd_segments,
            "kernel_busy_us": info.kernel_busy_us,
            "kernel_rwnd_limited_us": info.kernel_rwnd_limited_us,
            "kernel_sndbuf_limited_us": info.kernel_sndbuf_limited_us,
            "kernel_snd_wnd": info.kernel_snd_wnd,
            "kernel_total_rto": info.kernel_total_rto,
            "group_share": info.group_share,
            "shares_applied": info.shares_applied,
            "cc_metrics": cc_metrics,
        });
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        // Telemetry is best effort: a full disk must not stop the transfer.
        let _ = writeln!(out, "{line}");
    }

    /// Flushes buffered lines.
    pub fn flush(&self) {
        let _ = self.out.lock().unwrap_or_else(|p| p.into_inner()).flush();
    }
}

/// Samples one flow every `interval` on its own thread until stopped.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Starts sampling flow `flow`.
    pub fn start(telemetry: Arc<Telemetry>, flow: u64, handle: InfoHandle, interval: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = thread::spawn(move || {
            while !s.load(Ordering::Relaxed) && !handle.is_done() {
                telemetry.record(flow, &handle.info());
                thread::sleep(interval);
            }
            telemetry.record(flow, &handle.info());
            telemetry.flush();
        });
        Sampler { stop, thread: Some(thread) }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
