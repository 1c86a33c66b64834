//! Rust errors as Python exceptions, each with the Rust message.
//!
//! Bad settings and specs are `ValueError`; a file that cannot be read is `OSError` with its
//! errno and file name (so `FileNotFoundError` for a missing trace).

use alcc_cc::sim::SimError;
use alcc_trace::trace::TraceError;
use std::io;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::PyErr;

/// A refused setting, named in the message.
pub fn invalid(message: impl Into<String>) -> PyErr {
    PyValueError::new_err(message.into())
}

/// A simulator refusal (a bad controller spec or scenario) as `ValueError`.
pub fn sim(error: SimError) -> PyErr {
    PyValueError::new_err(error.to_string())
}

/// A trace that cannot be read (`OSError`, errno and file name set) or parsed (`ValueError`
/// naming the file and line).
pub fn trace(error: TraceError) -> PyErr {
    match &error {
        TraceError::Io { file, source } => match source.raw_os_error() {
            Some(errno) => PyOSError::new_err((errno, source.to_string(), file.clone())),
            None => PyOSError::new_err(error.to_string()),
        },
        _ => PyValueError::new_err(error.to_string()),
    }
}

/// A system call's error as the matching `OSError` subclass (`ConnectionRefusedError`,
/// `BlockingIOError`, `TimeoutError`, ...), with the Rust message.
pub fn io(error: io::Error) -> PyErr {
    PyErr::from(error)
}

/// An engine error: `OSError` for I/O and a refused kernel congestion control (with its errno),
/// `ValueError` for a bad spec or setting.
pub fn engine(error: alcc::Error) -> PyErr {
    match error {
        alcc::Error::Io(e) => io(e),
        alcc::Error::Underlay { ref source, .. } => match source.raw_os_error() {
            Some(errno) => PyOSError::new_err((errno, error.to_string())),
            None => PyOSError::new_err(error.to_string()),
        },
        other => PyValueError::new_err(other.to_string()),
    }
}
