//! Where and how often a Python controller's hooks run: `delivery="inline"`, `"thread"`,
//! `"batch:acks=N"` or `"batch:rtt"` (docs/python.md, 'Streams').

use alcc_cc::Controller;
use alcc_python_cc::batch::{BatchRule, Batched};
use alcc_python_cc::controller::{Failure, Hooks, OnError, PyController};
use alcc_python_cc::threaded::Threaded;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors;

/// How a Python controller's events reach it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// On the engine's driver thread, each event as it happens (exact; a slow hook delays every
    /// flow of the process).
    Inline,
    /// On a thread of the controller's own, in batches ([`Threaded`]; one slow controller
    /// delays only its own flow; decisions lag by the hooks' time). Streams only.
    Thread,
    /// On the driver thread, ACKs summed into one `on_ack` per N ACKs or per RTT ([`Batched`]).
    Batch(BatchRule),
}

impl Delivery {
    /// `inline`, `thread`, `batch:acks=N` or `batch:rtt`.
    pub fn parse(text: &str) -> PyResult<Delivery> {
        match text {
            "inline" => Ok(Delivery::Inline),
            "thread" => Ok(Delivery::Thread),
            _ => match text.strip_prefix("batch:") {
                Some(rule) => rule.parse().map(Delivery::Batch).map_err(|e| errors::invalid(e.to_string())),
                None => Err(PyValueError::new_err(format!(
                    "delivery must be inline, thread, batch:acks=N or batch:rtt, not `{text}`"
                ))),
            },
        }
    }

    /// The controller the transport runs for `object` (a Python `alcc.Controller` instance
    /// overriding `hooks`), and the handle on its first exception. `on_error` is what an
    /// exception does on the calling thread (thread delivery records it and fails the flow at
    /// the driver's next call).
    pub fn controller(
        self,
        py: Python<'_>,
        object: Py<PyAny>,
        hooks: Hooks,
        on_error: OnError,
    ) -> PyResult<(Box<dyn Controller>, Failure)> {
        Ok(match self {
            Delivery::Inline => {
                let controller = PyController::new(py, object, hooks, on_error)?;
                let failure = controller.failure();
                (Box::new(controller), failure)
            }
            Delivery::Thread => {
                let controller = PyController::new(py, object, hooks, OnError::Record)?;
                let failure = controller.failure();
                (Box::new(Threaded::start(controller, hooks).map_err(errors::io)?), failure)
            }
            Delivery::Batch(rule) => {
                let controller = PyController::new(py, object, hooks, on_error)?;
                let failure = controller.failure();
                (Box::new(Batched::new(controller, rule)), failure)
            }
        })
    }
}
