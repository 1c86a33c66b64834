//! Streams from Python: `alcc.connect`, `alcc.Listener` and the `alcc.Stream` they give.
//!
//! A stream sends through the engine (kernel, framed mode) under a Rust controller's spec or a
//! Python controller ([`PyController`], kernel mode). Every call into the engine releases the GIL
//! first (`Python::detach`): the engine's driver thread takes the GIL for a Python controller's
//! hooks, and may hold a flow's lock meanwhile, so a thread that waited for that lock with the GIL
//! held would deadlock with it. The same holds for dropping a stream.
//!
//! A Python controller that raises fails its own flow only: the traceback unwinds out of its
//! hook ([`OnError::Unwind`]), the driver fails that flow, and the stream's next call raises
//! `alcc.ControllerError` with it.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use alcc::{AlccStream, Grouping, Mode, Options};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::delivery::Delivery;
use crate::{errors, json};
use alcc_python_cc::controller::{ControllerError, Failure, Hooks, OnError};

/// The controller of a new stream: a spec, or a Python controller instance and its hooks.
#[derive(FromPyObject)]
pub enum Cc {
    /// A Rust controller's spec (`copa`, `fixed:window=20`, `none`).
    Spec(String),
    /// A Python `alcc.Controller` instance.
    Python(Py<PyAny>),
}

/// The engine options from the Python arguments; `spec` (a Rust controller's, `None` for a
/// Python controller), the group (`auto`, `none` or a name, as `alcc serve --group`) and the
/// weight are checked now, before any connection.
fn options(
    name: &str,
    spec: Option<&str>,
    underlay: &str,
    mode: &str,
    group: &str,
    weight: f64,
) -> PyResult<Options> {
    let mode: Mode =
        mode.parse().map_err(|e: alcc::mode::UnknownMode| PyValueError::new_err(e.to_string()))?;
    if let Some(spec) = spec {
        alcc::check_spec_for(spec, mode).map_err(errors::engine)?;
    }
    let grouping: Grouping = group.parse().map_err(errors::engine)?;
    let weight = alcc::coupling::check_weight(weight).map_err(errors::engine)?;
    Ok(Options::with_cc(name).underlay(underlay).mode(mode).grouping(grouping).weight(weight))
}

/// An [`AlccStream`] on `tcp` under `cc`.
fn start(
    py: Python<'_>,
    tcp: TcpStream,
    opts: &Options,
    cc: Cc,
    hooks: &[String],
    delivery: Delivery,
) -> PyResult<Stream> {
    match cc {
        Cc::Spec(_) => {
            let stream = py.detach(|| AlccStream::from_tcp(tcp, opts)).map_err(errors::engine)?;
            Ok(Stream::new(stream, None))
        }
        Cc::Python(object) => {
            if opts.mode != Mode::Kernel {
                return Err(PyValueError::new_err(format!(
                    "a Python controller runs in kernel mode only, not {}",
                    opts.mode
                )));
            }
            let (controller, failure) =
                delivery.controller(py, object, Hooks::from_names(hooks), OnError::Unwind)?;
            let stream = py
                .detach(|| AlccStream::from_tcp_with_controller(tcp, opts, controller))
                .map_err(errors::engine)?;
            Ok(Stream::new(stream, Some(failure)))
        }
    }
}

/// Connects to `(host, port)` and returns a sending stream (`alcc.connect`).
#[pyfunction]
#[pyo3(signature = (host, port, *, cc, name, underlay="reno", mode="kernel", hooks=Vec::new(), delivery="inline", group="auto", weight=1.0))]
#[allow(clippy::too_many_arguments)]
pub fn connect(
    py: Python<'_>,
    host: String,
    port: u16,
    cc: Cc,
    name: String,
    underlay: &str,
    mode: &str,
    hooks: Vec<String>,
    delivery: &str,
    group: &str,
    weight: f64,
) -> PyResult<Stream> {
    let delivery = Delivery::parse(delivery)?;
    let spec = match &cc {
        Cc::Spec(spec) => Some(spec.as_str()),
        Cc::Python(_) => None,
    };
    let opts = options(&name, spec, underlay, mode, group, weight)?;
    // The socket starts under the underlay (reno under the BPF one), not the host's default:
    // bbr would leave the kernel's pacing on after the switch (alcc::underlay::initial).
    let tcp = py
        .detach(|| alcc::underlay::connect((host.as_str(), port), &opts.underlay))
        .map_err(errors::engine)?;
    start(py, tcp, &opts, cc, &hooks, delivery)
}

/// A TCP listener whose accepted connections send through alcc (`alcc.Listener`).
#[pyclass(module = "alcc", name = "_Listener")]
pub struct Listener {
    inner: Mutex<Option<Arc<TcpListener>>>,
    options: Options,
}

impl Listener {
    fn get(&self) -> PyResult<Arc<TcpListener>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).clone().ok_or_else(closed)
    }
}

#[pymethods]
impl Listener {
    /// Binds `(host, port)` (port 0: any free port).
    /// `python`: the connections run a Python controller (else `name` is a spec, checked now).
    #[new]
    #[pyo3(signature = (host, port, *, name, python, underlay="reno", mode="kernel", group="auto", weight=1.0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        host: String,
        port: u16,
        name: String,
        python: bool,
        underlay: &str,
        mode: &str,
        group: &str,
        weight: f64,
    ) -> PyResult<Listener> {
        let spec = (!python).then_some(name.as_str());
        let options = options(&name, spec, underlay, mode, group, weight)?;
        let addrs: Vec<SocketAddr> = (host.as_str(), port).to_socket_addrs().map_err(errors::io)?.collect();
        // Its congestion control is set for the underlay before listen(2), so that no
        // connection starts under the host's default (alcc::underlay::initial).
        let inner = py
            .detach(|| alcc::underlay::bind_listener(&addrs[..], &options.underlay))
            .map_err(errors::engine)?;
        Ok(Listener { inner: Mutex::new(Some(Arc::new(inner))), options })
    }

    /// Waits for a connection; returns the stream and the peer's `(host, port)`.
    #[pyo3(signature = (cc, hooks=Vec::new(), delivery="inline"))]
    fn accept(
        &self,
        py: Python<'_>,
        cc: Cc,
        hooks: Vec<String>,
        delivery: &str,
    ) -> PyResult<(Stream, (String, u16))> {
        let delivery = Delivery::parse(delivery)?;
        let listener = self.get()?;
        let (tcp, peer) = py.detach(|| listener.accept()).map_err(errors::io)?;
        let stream = start(py, tcp, &self.options, cc, &hooks, delivery)?;
        Ok((stream, (peer.ip().to_string(), peer.port())))
    }

    /// The bound `(host, port)`.
    fn getsockname(&self) -> PyResult<(String, u16)> {
        let addr = self.get()?.local_addr().map_err(errors::io)?;
        Ok((addr.ip().to_string(), addr.port()))
    }

    /// Stops listening (idempotent).
    fn close(&self) {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).take();
    }
}

/// `OSError(EBADF)` for a closed stream or listener.
fn closed() -> PyErr {
    PyOSError::new_err((libc_ebadf(), "alcc stream is closed"))
}

/// EBADF's number (9 on Linux), without a libc dependency.
fn libc_ebadf() -> i32 {
    io::Error::from_raw_os_error(9).raw_os_error().unwrap_or(9)
}

/// A stream that sends through the engine (`alcc.Stream`, wrapped by the Python class).
#[pyclass(module = "alcc", name = "_Stream")]
pub struct Stream {
    inner: Mutex<Option<Arc<AlccStream>>>,
    failure: Option<Failure>,
    nonblocking: AtomicBool,
    timeout: Mutex<Option<Duration>>,
}

impl Stream {
    fn new(stream: AlccStream, failure: Option<Failure>) -> Stream {
        Stream {
            inner: Mutex::new(Some(Arc::new(stream))),
            failure,
            nonblocking: AtomicBool::new(false),
            timeout: Mutex::new(None),
        }
    }

    fn get(&self) -> PyResult<Arc<AlccStream>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).clone().ok_or_else(closed)
    }

    /// An I/O error, or `ControllerError` with the traceback if this flow's Python controller
    /// raised.
    fn error(&self, error: io::Error) -> PyErr {
        match self.failure.as_ref().and_then(Failure::get) {
            Some(traceback) => {
                ControllerError::new_err(format!("the flow's controller raised:\n{traceback}"))
            }
            None => errors::io(error),
        }
    }

    fn nonblocking(&self) -> bool {
        self.nonblocking.load(Ordering::Relaxed)
    }
}

#[pymethods]
impl Stream {
    /// Queues as much of `data` as fits; returns how many bytes it took.
    fn send(&self, py: Python<'_>, data: &[u8]) -> PyResult<usize> {
        let stream = self.get()?;
        let nb = self.nonblocking();
        py.detach(|| stream.write_with(data, nb)).map_err(|e| self.error(e))
    }

    /// Queues all of `data`, waiting for room (blocking streams only).
    fn sendall(&self, py: Python<'_>, data: &[u8]) -> PyResult<()> {
        let stream = self.get()?;
        let nb = self.nonblocking();
        py.detach(|| {
            let mut rest = data;
            while !rest.is_empty() {
                let n = stream.write_with(rest, nb)?;
                rest = &rest[n..];
            }
            Ok(())
        })
        .map_err(|e| self.error(e))
    }

    /// Reads up to `bufsize` bytes the peer sent (kernel mode); `b""` at the end.
    fn recv<'py>(&self, py: Python<'py>, bufsize: usize) -> PyResult<Bound<'py, PyBytes>> {
        let stream = self.get()?;
        let nb = self.nonblocking();
        let mut buf = vec![0u8; bufsize];
        let n = py.detach(|| stream.read_with(&mut buf, nb)).map_err(|e| self.error(e))?;
        Ok(PyBytes::new(py, &buf[..n]))
    }

    /// Waits until everything queued is in the kernel.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let stream = self.get()?;
        let nb = self.nonblocking();
        py.detach(|| stream.flush_with(nb)).map_err(|e| self.error(e))
    }

    /// Flushes, sends the FIN and waits until everything is acknowledged (`timeout` seconds at
    /// most, else `TimeoutError`); later calls raise `OSError(EBADF)`. Closing twice is fine.
    #[pyo3(signature = (timeout=None))]
    fn close(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<()> {
        let Some(stream) = self.inner.lock().unwrap_or_else(PoisonError::into_inner).take() else {
            return Ok(());
        };
        let timeout = seconds(timeout)?.or(*self.timeout.lock().unwrap_or_else(PoisonError::into_inner));
        py.detach(|| {
            let result = stream.close_ref(timeout);
            drop(stream);
            result
        })
        .map_err(|e| self.error(e))
    }

    /// Resets the connection at once, discarding what is queued.
    fn abort(&self, py: Python<'_>) {
        if let Some(stream) = self.inner.lock().unwrap_or_else(PoisonError::into_inner).take() {
            py.detach(|| {
                if let Ok(stream) = Arc::try_unwrap(stream) {
                    stream.abort();
                }
            });
        }
    }

    /// The flow's state (`alcc::FlowInfo`) as a dict.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let stream = self.get()?;
        let info = py.detach(|| stream.info());
        json::to_py(py, &info)
    }

    /// Non-blocking (`False`): calls raise `BlockingIOError` instead of waiting.
    fn setblocking(&self, blocking: bool) {
        self.nonblocking.store(!blocking, Ordering::Relaxed);
    }

    /// The socket's descriptor.
    fn fileno(&self) -> PyResult<i32> {
        Ok(self.get()?.as_raw_fd())
    }

    /// The flow's readiness descriptor for event loops: it polls writable exactly while a send
    /// would not block (the engine's `AlccStream::writable_fd`). Watch it for writability only;
    /// never read, write or close it; valid until the stream is closed.
    fn writable_fd(&self, py: Python<'_>) -> PyResult<i32> {
        let stream = self.get()?;
        py.detach(|| stream.writable_fd()).map_err(errors::io)
    }

    /// The peer's `(host, port)`.
    fn getpeername(&self) -> PyResult<(String, u16)> {
        let addr = self.get()?.peer_addr().map_err(errors::io)?;
        Ok((addr.ip().to_string(), addr.port()))
    }

    /// The default timeout of `close()`, seconds (`None`: wait as long as it takes).
    #[pyo3(signature = (timeout=None))]
    fn set_close_timeout(&self, timeout: Option<f64>) -> PyResult<()> {
        *self.timeout.lock().unwrap_or_else(PoisonError::into_inner) = seconds(timeout)?;
        Ok(())
    }

    /// Whether `close()` or `abort()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).is_none()
    }
}

impl Drop for Stream {
    /// An unclosed stream finishes in the background (the engine flushes it); the drop itself
    /// happens with the GIL released.
    fn drop(&mut self) {
        if let Some(stream) = self.inner.get_mut().unwrap_or_else(PoisonError::into_inner).take() {
            Python::attach(|py| py.detach(move || drop(stream)));
        }
    }
}

/// Seconds as a `Duration`; refuses negative or not-a-number values.
fn seconds(value: Option<f64>) -> PyResult<Option<Duration>> {
    value
        .map(|s| {
            Duration::try_from_secs_f64(s).map_err(|_| PyValueError::new_err(format!("bad timeout {s}")))
        })
        .transpose()
}
