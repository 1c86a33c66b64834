//! `alcc.sim`: one controller over the simulated bottleneck, as `alcc sim` runs it.
//!
//! The summary is `alcc sim`'s JSON summary (alcc_trace::metrics::Summary) field for field; the
//! per-packet records, the controller's windows, the acknowledgements and the 500 ms series come
//! back as [`Table`]s. The simulation runs with the GIL released.

use std::path::PathBuf;
use std::time::Duration;

use alcc_cc::sim::capacity::OPPORTUNITY_BYTES;
use alcc_cc::sim::{AckPolicy, Capacity, Outcome, QueueLimit, Scenario, SimResult};
use alcc_trace::metrics::{self, Bin};
use alcc_trace::record::Recording;
use alcc_trace::trace::Trace;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::columns::{or_nan, Column, Table};
use crate::delivery::Delivery;
use crate::{errors, json};
use alcc_python_cc::controller::{ControllerError, Hooks, OnError};

/// The bottleneck and how to name it: a Mahimahi trace file or a constant rate.
fn capacity(trace: Option<PathBuf>, rate_mbps: Option<f64>) -> PyResult<(Capacity, String)> {
    match (trace, rate_mbps) {
        (Some(_), Some(_)) => Err(errors::invalid("give trace or rate_mbps, not both")),
        (Some(path), None) => {
            let trace = Trace::parse_file(&path).map_err(errors::trace)?;
            Ok((Capacity::Trace(trace.opportunities_ms().to_vec()), path.display().to_string()))
        }
        (None, Some(rate)) if rate.is_finite() && rate > 0.0 => {
            Ok((Capacity::ConstantMbps(rate), format!("constant {rate} Mbit/s")))
        }
        (None, Some(rate)) => {
            Err(errors::invalid(format!("rate_mbps must be a positive number, got {rate}")))
        }
        (None, None) => Err(errors::invalid("give trace (a Mahimahi trace file) or rate_mbps")),
    }
}

/// Runs one controller over the simulated bottleneck (`alcc sim`). Returns a dict with
/// `summary` (alcc sim's JSON fields plus `cc` and `link`) and the tables `packets`, `windows`,
/// `acks` and `series` as `{column: (dtype, bytes)}`. With `controller` (an `alcc.Controller`
/// instance, `hooks` the names of the hooks its class overrides) that controller runs and `cc`
/// only names it; an exception it raised is `alcc.ControllerError` with its traceback.
/// `delivery` is `inline` or `batch:acks=N` / `batch:rtt` ([`Delivery`]).
#[pyfunction]
#[pyo3(signature = (*, cc, trace=None, rate_mbps=None, delay_ms=20.0, queue="packets=1000", loss=0.0,
                    duration_s=60.0, seed=1, acks="every", controller=None, hooks=Vec::new(),
                    delivery="inline"))]
#[allow(clippy::too_many_arguments)]
pub fn simulate<'py>(
    py: Python<'py>,
    cc: String,
    trace: Option<PathBuf>,
    rate_mbps: Option<f64>,
    delay_ms: f64,
    queue: &str,
    loss: f64,
    duration_s: f64,
    seed: u64,
    acks: &str,
    controller: Option<Py<PyAny>>,
    hooks: Vec<String>,
    delivery: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let delivery = Delivery::parse(delivery)?;
    if delivery == Delivery::Thread {
        return Err(errors::invalid(
            "delivery=\"thread\" is for streams; the simulator runs inline or batch:...",
        ));
    }
    let (capacity, link) = capacity(trace, rate_mbps)?;
    if !(delay_ms.is_finite() && delay_ms >= 0.0) {
        return Err(errors::invalid(format!("delay_ms must be a non-negative number, got {delay_ms}")));
    }
    if !(duration_s.is_finite() && duration_s > 0.0 && duration_s <= 86_400.0) {
        return Err(errors::invalid(format!("duration_s must be in (0, 86400], got {duration_s}")));
    }
    let mut scenario = Scenario::new(capacity);
    scenario.one_way_delay = Duration::from_secs_f64(delay_ms / 1000.0);
    scenario.queue = queue.parse::<QueueLimit>().map_err(|e| errors::invalid(e.to_string()))?;
    scenario.loss = loss;
    scenario.duration = Duration::from_secs_f64(duration_s);
    scenario.seed = seed;
    scenario.acks = acks.parse::<AckPolicy>().map_err(|e| errors::invalid(e.to_string()))?;

    let run = match controller {
        // A Python controller takes the GIL at every hook: keep it for the run.
        Some(object) => {
            let (controller, failure) =
                delivery.controller(py, object, Hooks::from_names(&hooks), OnError::Record)?;
            let run = scenario.run_with(controller, None).map_err(errors::sim)?;
            if let Some(traceback) = failure.get() {
                return Err(ControllerError::new_err(format!("the controller {cc} raised:\n{traceback}")));
            }
            run
        }
        None => py.detach(|| scenario.run(&cc)).map_err(errors::sim)?,
    };
    let recording = Recording::from_parts(
        run.bottleneck_packets(),
        run.opportunities.iter().map(|t| t.as_micros()),
        OPPORTUNITY_BYTES,
        scenario.one_way_delay.as_micros() as u64,
    );
    let series = metrics::time_series(&recording, metrics::DEFAULT_BIN_US)
        .map_err(|e| errors::invalid(e.to_string()))?;
    let summary = json::to_py(py, &metrics::summarize(&recording))?;

    let out = PyDict::new(py);
    let summary_dict = PyDict::new(py);
    summary_dict.set_item("cc", &cc)?;
    summary_dict.set_item("link", link)?;
    summary_dict.update(summary.cast::<PyDict>()?.as_mapping())?;
    out.set_item("summary", summary_dict)?;
    out.set_item("packets", packets(&run).into_py(py)?)?;
    out.set_item("windows", windows(&run).into_py(py)?)?;
    out.set_item("acks", acks_table(&run).into_py(py)?)?;
    out.set_item("series", series_table(&series).into_py(py)?)?;
    Ok(out)
}

/// Every data packet: `seq`, `bytes`, `sent_s`, `departed_s`, `arrived_s`, `delay_ms` (NaN
/// unless delivered) and `outcome` (0 in flight at the end, 1 delivered, 2 dropped by the
/// queue, 3 lost at random).
fn packets(run: &SimResult) -> Table {
    let p = &run.packets;
    let departed = |o: &Outcome| match o {
        Outcome::Delivered { departed, .. } => Some(departed.as_secs_f64()),
        _ => None,
    };
    let arrived = |o: &Outcome| match o {
        Outcome::Delivered { arrived, .. } => Some(arrived.as_secs_f64()),
        _ => None,
    };
    let outcome = |o: &Outcome| match o {
        Outcome::InFlight => 0,
        Outcome::Delivered { .. } => 1,
        Outcome::Dropped { cause: alcc_cc::sim::DropCause::Queue, .. } => 2,
        Outcome::Dropped { cause: alcc_cc::sim::DropCause::Random, .. } => 3,
    };
    Table(vec![
        ("seq", Column::U64(p.iter().map(|r| r.seq).collect())),
        ("bytes", Column::U64(p.iter().map(|r| r.bytes).collect())),
        ("sent_s", Column::F64(p.iter().map(|r| r.sent.as_secs_f64()).collect())),
        ("departed_s", Column::F64(p.iter().map(|r| or_nan(departed(&r.outcome))).collect())),
        ("arrived_s", Column::F64(p.iter().map(|r| or_nan(arrived(&r.outcome))).collect())),
        (
            "delay_ms",
            Column::F64(p.iter().map(|r| or_nan(r.one_way_delay().map(|d| d.as_secs_f64() * 1e3))).collect()),
        ),
        ("outcome", Column::U64(p.iter().map(|r| outcome(&r.outcome)).collect())),
    ])
}

/// The controller's decisions as the simulator recorded them: `t_s`, `window_bytes` and
/// `pacing_rate` (bytes per second, NaN when unpaced).
fn windows(run: &SimResult) -> Table {
    let w = &run.windows;
    Table(vec![
        ("t_s", Column::F64(w.iter().map(|(t, _, _)| t.as_secs_f64()).collect())),
        ("window_bytes", Column::U64(w.iter().map(|(_, window, _)| *window).collect())),
        ("pacing_rate", Column::F64(w.iter().map(|(_, _, rate)| or_nan(rate.map(|r| r as f64))).collect())),
    ])
}

/// Every acknowledgement the sender received: `t_s`, `seq`, `bytes`.
fn acks_table(run: &SimResult) -> Table {
    let a = &run.acks;
    Table(vec![
        ("t_s", Column::F64(a.iter().map(|r| r.at.as_secs_f64()).collect())),
        ("seq", Column::U64(a.iter().map(|r| r.seq).collect())),
        ("bytes", Column::U64(a.iter().map(|r| r.bytes).collect())),
    ])
}

/// The 500 ms series of `alcc sim --series`, column for column.
fn series_table(series: &[Bin]) -> Table {
    let f = |get: fn(&Bin) -> f64| Column::F64(series.iter().map(get).collect());
    Table(vec![
        ("start_s", f(|b| b.start_s)),
        ("capacity_mbps", f(|b| b.capacity_mbps)),
        ("throughput_mbps", f(|b| b.throughput_mbps)),
        ("sent_mbps", f(|b| b.sent_mbps)),
        ("delay_p50_ms", f(|b| or_nan(b.delay_p50_ms))),
        ("delay_p95_ms", f(|b| or_nan(b.delay_p95_ms))),
        ("delay_p99_ms", f(|b| or_nan(b.delay_p99_ms))),
    ])
}
