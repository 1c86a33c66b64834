//! Controllers written in Python, run wherever a Rust [`Controller`] runs.
//!
//! A [`PyController`] holds an instance of a subclass of `alcc.Controller` and calls it under
//! the GIL, which it takes per callback (`Python::attach`): a thread that runs a Python
//! controller holds the GIL only inside the controller's own code. After every hook it reads the
//! controller's `decision()` (and `next_timer()` if the class defines it) once and keeps them,
//! since the transport reads the decision after every event. Hooks the class does not override
//! are not called at all (an `on_sent` left to the base class costs nothing per packet).
//!
//! A hook that raises fails the flow: the first exception's traceback is kept in a
//! [`Failure`], the window becomes 0 and no hook is called again. The simulator raises
//! `alcc.ControllerError` with that traceback after the run ([`OnError::Record`]); on a stream
//! the traceback unwinds into the engine's driver, which fails that flow ([`OnError::Unwind`]).

use std::sync::{Arc, Mutex, PoisonError};

use alcc_cc::event::{AckSample, Decision as RustDecision, LossEvent, SentPacket};
use alcc_cc::metrics::Metrics;
use alcc_cc::time::{duration_micros, Time};
use alcc_cc::{Controller, RttSamples};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::batch::AckBatch;

pyo3::create_exception!(
    alcc,
    ControllerError,
    PyRuntimeError,
    "A Python controller raised: the message is its traceback."
);

/// What a controller decides: `window` bytes in flight at most, paced at `pacing_rate`
/// bytes per second (`None`: as fast as the window allows). `alcc.Decision`.
#[pyclass(frozen, get_all, module = "alcc", name = "Decision")]
#[derive(Clone, Copy, Debug)]
pub struct Decision {
    /// The most bytes in flight.
    pub window: u64,
    /// Bytes per second, or `None`.
    pub pacing_rate: Option<u64>,
}

/// A non-negative finite number of bytes (or bytes/s) as a whole number.
fn whole(name: &str, value: f64) -> PyResult<u64> {
    if value.is_finite() && value >= 0.0 {
        Ok(value.round() as u64)
    } else {
        Err(PyValueError::new_err(format!("Decision {name} must be a finite number >= 0, got {value}")))
    }
}

#[pymethods]
impl Decision {
    /// `Decision(window, pacing_rate=None)`; numbers are rounded to whole bytes.
    #[new]
    #[pyo3(signature = (window, pacing_rate=None))]
    fn new(window: f64, pacing_rate: Option<f64>) -> PyResult<Decision> {
        let pacing_rate = pacing_rate.map(|r| whole("pacing_rate", r)).transpose()?;
        Ok(Decision { window: whole("window", window)?, pacing_rate })
    }

    fn __repr__(&self) -> String {
        match self.pacing_rate {
            Some(r) => format!("Decision(window={}, pacing_rate={r})", self.window),
            None => format!("Decision(window={}, pacing_rate=None)", self.window),
        }
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Decision>()
            .is_ok_and(|o| o.get().window == self.window && o.get().pacing_rate == self.pacing_rate)
    }
}

/// One acknowledged packet, as `on_ack(now, ack)` sees it (times and RTT in seconds).
#[pyclass(frozen, get_all, module = "alcc", name = "Ack")]
pub struct Ack {
    /// The packet's sequence number.
    pub seq: u64,
    /// Bytes newly acknowledged.
    pub bytes: u64,
    /// When the packet was sent, seconds.
    pub sent_at: f64,
    /// Its round-trip time, seconds.
    pub rtt: f64,
    /// Bytes still in flight after this acknowledgement.
    pub bytes_in_flight: u64,
    /// Bytes delivered on the flow so far, this one included.
    pub delivered: u64,
    /// What `on_sent` returned for the packet.
    pub memo: u64,
    /// ACKs this sample stands for: 1, or the batch's size under batched delivery (then
    /// `bytes` is the batch's sum and the other fields are its latest ACK's).
    pub count: u64,
    /// The smallest RTT among them, seconds (`rtt` when `count` is 1).
    pub min_rtt: f64,
}

/// A packet just sent, as `on_sent(now, packet)` sees it.
#[pyclass(frozen, get_all, module = "alcc", name = "Sent")]
pub struct Sent {
    /// Its sequence number.
    pub seq: u64,
    /// Its payload bytes.
    pub bytes: u64,
    /// Bytes in flight, this packet included.
    pub bytes_in_flight: u64,
}

/// A packet declared lost, as `on_loss(now, loss)` sees it (times in seconds).
#[pyclass(frozen, get_all, module = "alcc", name = "Loss")]
pub struct Loss {
    /// Its sequence number.
    pub seq: u64,
    /// Its payload bytes.
    pub bytes: u64,
    /// When it was sent, seconds.
    pub sent_at: f64,
    /// Bytes still in flight without it.
    pub bytes_in_flight: u64,
    /// What `on_sent` returned for it.
    pub memo: u64,
}

/// The first exception a Python controller raised, shared with whoever reports the flow's end.
#[derive(Clone, Default)]
pub struct Failure(Arc<Mutex<Option<String>>>);

impl Failure {
    /// The traceback, if the controller has raised.
    pub fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn set(&self, text: String) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(text);
    }
}

/// The hooks a Python controller class overrides; the others are not called.
#[derive(Clone, Copy, Debug, Default)]
pub struct Hooks {
    /// `on_sent(now, packet)`.
    pub on_sent: bool,
    /// `on_ack(now, ack)`.
    pub on_ack: bool,
    /// `on_loss(now, loss)`.
    pub on_loss: bool,
    /// `on_timer(now)`.
    pub on_timer: bool,
    /// `next_timer()`.
    pub next_timer: bool,
}

impl Hooks {
    /// From the names of the overridden hooks (`alcc.Controller._hooks()`).
    pub fn from_names(names: &[String]) -> Hooks {
        let has = |n: &str| names.iter().any(|m| m == n);
        Hooks {
            on_sent: has("on_sent"),
            on_ack: has("on_ack"),
            on_loss: has("on_loss"),
            on_timer: has("on_timer"),
            next_timer: has("next_timer"),
        }
    }
}

/// What a hook's exception does besides being kept in the [`Failure`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnError {
    /// Nothing more: the window becomes 0 and the hooks are not called again; whoever runs the
    /// controller reads the failure when it is done (the simulator).
    Record,
    /// The traceback unwinds out of the hook (`resume_unwind`, so no panic message is printed):
    /// the engine's driver catches it around the flow's step and fails that flow only.
    Unwind,
}

impl OnError {
    /// Acts on a hook's failure, `traceback` already recorded.
    fn act(self, traceback: String) {
        match self {
            OnError::Record => {}
            OnError::Unwind => std::panic::resume_unwind(Box::new(traceback)),
        }
    }
}

/// A Python `alcc.Controller` instance behind the Rust [`Controller`] trait.
pub struct PyController {
    object: Py<PyAny>,
    hooks: Hooks,
    on_error: OnError,
    decision: RustDecision,
    next_timer: Option<Time>,
    rtt_samples: RttSamples,
    failure: Failure,
}

impl PyController {
    /// Wraps `object`, reading its `rtt_samples` and its first decision (an error if either
    /// raises or is not what the contract allows).
    pub fn new(py: Python<'_>, object: Py<PyAny>, hooks: Hooks, on_error: OnError) -> PyResult<PyController> {
        let bound = object.bind(py).clone();
        let mut controller = PyController {
            rtt_samples: read_rtt_samples(&bound)?,
            object,
            hooks,
            on_error,
            decision: RustDecision { window: 0, pacing_rate: None },
            next_timer: None,
            failure: Failure::default(),
        };
        controller.refresh(&bound)?;
        Ok(controller)
    }

    /// The handle on this controller's first exception.
    pub fn failure(&self) -> Failure {
        self.failure.clone()
    }

    /// Reads `decision()` and, if defined, `next_timer()`.
    fn refresh(&mut self, object: &Bound<'_, PyAny>) -> PyResult<()> {
        let value = object.call_method0(pyo3::intern!(object.py(), "decision"))?;
        self.decision = read_decision(&value)?;
        if self.hooks.next_timer {
            let at: Option<f64> = object.call_method0(pyo3::intern!(object.py(), "next_timer"))?.extract()?;
            self.next_timer = match at {
                Some(s) if s.is_finite() && s >= 0.0 => Some(Time::from_micros((s * 1e6).round() as u64)),
                Some(s) => return Err(PyValueError::new_err(format!("next_timer() returned {s}"))),
                None => None,
            };
        }
        Ok(())
    }

    /// Runs one hook and refreshes the decision, under the GIL; an exception fails the flow.
    fn call<T: Default>(&mut self, hook: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<T>) -> T {
        if self.failure.get().is_some() {
            return T::default();
        }
        // Once Python has begun to exit, the hook is skipped and the last decision stands.
        let Some(_pass) = crate::finalizing::enter() else {
            return T::default();
        };
        let outcome = Python::attach(|py| {
            let object = self.object.bind(py).clone();
            hook(&object)
                .and_then(|out| self.refresh(&object).map(|()| out))
                .map_err(|e| format_exception(py, &e))
        });
        match outcome {
            Ok(out) => out,
            Err(traceback) => {
                self.failure.set(traceback.clone());
                self.decision = RustDecision { window: 0, pacing_rate: None };
                self.next_timer = None;
                // Outside the GIL: nothing unwinds through Python's frames.
                self.on_error.act(traceback);
                T::default()
            }
        }
    }
}

/// The controller's `rtt_samples` attribute (`alcc.Controller.rtt_samples`): `"per-packet"`
/// ([`RttSamples::PerPacket`], the base class's) or `"not-needed"` ([`RttSamples::NotNeeded`]).
/// It is read once, when the controller is built, since the transport asks per chunk.
fn read_rtt_samples(object: &Bound<'_, PyAny>) -> PyResult<RttSamples> {
    let value: String =
        object.getattr(pyo3::intern!(object.py(), "rtt_samples"))?.extract().map_err(|_| {
            PyTypeError::new_err("rtt_samples must be the string \"per-packet\" or \"not-needed\"")
        })?;
    match value.as_str() {
        "per-packet" => Ok(RttSamples::PerPacket),
        "not-needed" => Ok(RttSamples::NotNeeded),
        other => Err(PyValueError::new_err(format!(
            "rtt_samples must be \"per-packet\" or \"not-needed\", got {other:?}"
        ))),
    }
}

/// The window and pacing rate of what `decision()` returned. An `alcc.Decision` of this build
/// is read directly; any other object by its `window` and `pacing_rate` attributes, because a
/// program that embeds Python (the `alcc` command) has its own `Decision` type beside the one of
/// the `alcc` package that the controller's module imports.
fn read_decision(value: &Bound<'_, PyAny>) -> PyResult<RustDecision> {
    if let Ok(d) = value.cast::<Decision>() {
        let d = d.get();
        return Ok(RustDecision { window: d.window, pacing_rate: d.pacing_rate });
    }
    let refuse = || {
        let kind = value.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
        PyTypeError::new_err(format!("decision() must return alcc.Decision, not {kind}"))
    };
    let py = value.py();
    let window: f64 =
        value.getattr(pyo3::intern!(py, "window")).and_then(|w| w.extract()).map_err(|_| refuse())?;
    let pacing_rate: Option<f64> =
        value.getattr(pyo3::intern!(py, "pacing_rate")).and_then(|r| r.extract()).map_err(|_| refuse())?;
    Ok(RustDecision {
        window: whole("window", window)?,
        pacing_rate: pacing_rate.map(|r| whole("pacing_rate", r)).transpose()?,
    })
}

impl PyController {
    /// One `on_ack` call for a batch of ACKs ([`crate::batch`]).
    pub fn on_ack_batch(&mut self, now: Time, batch: &AckBatch) {
        self.deliver_ack(now, &batch.last, batch.count, batch.min_rtt);
    }

    /// Calls `on_ack` with `ack` standing for `count` ACKs whose smallest RTT is `min_rtt`.
    fn deliver_ack(&mut self, now: Time, ack: &AckSample, count: u64, min_rtt: std::time::Duration) {
        if !self.hooks.on_ack {
            return;
        }
        let sample = Ack {
            seq: ack.seq,
            bytes: ack.bytes,
            sent_at: secs(ack.sent_at),
            rtt: duration_micros(ack.rtt) as f64 / 1e6,
            bytes_in_flight: ack.bytes_in_flight,
            delivered: ack.delivered,
            memo: ack.memo,
            count,
            min_rtt: duration_micros(min_rtt) as f64 / 1e6,
        };
        self.call(|o| o.call_method1(pyo3::intern!(o.py(), "on_ack"), (secs(now), sample)).map(drop));
    }
}

/// `traceback.format_exception` of `error`, joined; the plain message if that fails.
pub fn format_exception(py: Python<'_>, error: &PyErr) -> String {
    let formatted = py
        .import("traceback")
        .and_then(|tb| {
            tb.call_method1("format_exception", (error.get_type(py), error.value(py), error.traceback(py)))
        })
        .and_then(|lines| lines.extract::<Vec<String>>());
    match formatted {
        Ok(lines) => lines.concat(),
        Err(_) => error.to_string(),
    }
}

fn secs(t: Time) -> f64 {
    t.as_secs_f64()
}

impl Controller for PyController {
    fn name(&self) -> &'static str {
        "python"
    }

    fn on_sent(&mut self, now: Time, packet: &SentPacket) -> u64 {
        if !self.hooks.on_sent {
            return 0;
        }
        let sent = Sent { seq: packet.seq, bytes: packet.bytes, bytes_in_flight: packet.bytes_in_flight };
        self.call(|o| {
            let memo = o.call_method1(pyo3::intern!(o.py(), "on_sent"), (secs(now), sent))?;
            Ok(if memo.is_none() { 0 } else { memo.extract::<u64>()? })
        })
    }

    fn on_ack(&mut self, now: Time, ack: &AckSample) {
        self.deliver_ack(now, ack, 1, ack.rtt);
    }

    fn on_loss(&mut self, now: Time, loss: &LossEvent) {
        if !self.hooks.on_loss {
            return;
        }
        let event = Loss {
            seq: loss.seq,
            bytes: loss.bytes,
            sent_at: secs(loss.sent_at),
            bytes_in_flight: loss.bytes_in_flight,
            memo: loss.memo,
        };
        self.call(|o| o.call_method1(pyo3::intern!(o.py(), "on_loss"), (secs(now), event)).map(drop));
    }

    fn on_timer(&mut self, now: Time) {
        if !self.hooks.on_timer {
            return;
        }
        self.call(|o| o.call_method1(pyo3::intern!(o.py(), "on_timer"), (secs(now),)).map(drop));
    }

    fn next_timer(&self) -> Option<Time> {
        self.next_timer
    }

    fn rtt_samples(&self) -> RttSamples {
        self.rtt_samples
    }

    fn decision(&self) -> RustDecision {
        self.decision
    }

    fn metrics(&self) -> Metrics {
        let state = if self.failure.get().is_some() { "failed" } else { "python" };
        let mut metrics = Metrics::new(self.decision.window, state);
        metrics.pacing_rate = self.decision.pacing_rate;
        metrics
    }
}
