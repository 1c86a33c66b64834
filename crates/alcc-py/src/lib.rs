//! The native half of the `alcc` Python package (`alcc._alcc`), built by maturin.
//!
//! The Python half (`python/alcc/`) wraps it: `alcc.sim` calls [`sim::simulate`] and turns its
//! columns into NumPy arrays without copying them element by element. Walk: [`sim`] runs the
//! simulator, [`columns`] packs its records into typed byte columns, controllers written in Python run through crates/alcc-python-cc (the adapter the `alcc` command shares), [`stream`] sends through the engine, [`json`] converts serde values, [`errors`] maps the Rust
//! errors onto Python exceptions.

#![deny(unsafe_code)]

pub mod columns;
pub mod delivery;
pub mod errors;
pub mod json;
pub mod sim;
pub mod stream;

use alcc_python_cc::controller;
use pyo3::prelude::*;

/// How long the exit hook waits for controller hooks under way (a hook that sleeps longer
/// than this may still be running when the interpreter finalizes).
const EXIT_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// Keeps every thread out of Python from now on and waits (GIL released) for the controller
/// hooks under way: the `alcc` package's `atexit` hook. Returns how many were still running.
#[pyfunction]
fn _close_controllers(py: Python<'_>) -> usize {
    py.detach(|| alcc_python_cc::finalizing::close(EXIT_PATIENCE))
}

/// The module `alcc._alcc`.
#[pymodule]
#[pyo3(name = "_alcc")]
fn alcc_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sim::simulate, m)?)?;
    m.add_function(wrap_pyfunction!(stream::connect, m)?)?;
    m.add_function(wrap_pyfunction!(_close_controllers, m)?)?;
    m.add_class::<stream::Listener>()?;
    m.add_class::<stream::Stream>()?;
    m.add_class::<controller::Decision>()?;
    m.add_class::<controller::Ack>()?;
    m.add_class::<controller::Sent>()?;
    m.add_class::<controller::Loss>()?;
    m.add("ControllerError", m.py().get_type::<controller::ControllerError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
