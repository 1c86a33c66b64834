//! Python controllers in a Rust program: the interpreter, and classes loaded by spec.
//!
//! [`PythonClass::load`] starts CPython once per process (PyO3; the GIL is released again after
//! start-up, each hook takes it), puts the current directory first on `sys.path` (so `module`
//! imports from where the program runs, as `python -m` would) and adds the site-packages of the
//! virtual environment `$VIRTUAL_ENV` names (where `make python-ext` installs the `alcc`
//! package, whose `alcc.Controller` the class subclasses). It then resolves the spec with the
//! package's own resolver (`alcc._controller.resolve`), so `py:module:Class` means the same in
//! the command as in `alcc.sim` and `alcc.Listener`. Each flow gets an instance of its own,
//! constructed as `Class(mss=..., seed=...)`.

use std::sync::OnceLock;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use thiserror::Error;

use crate::controller::{format_exception, Hooks, OnError, PyController};

/// Why a Python controller could not be loaded or constructed; the message carries Python's
/// traceback.
#[derive(Clone, Debug, Error)]
pub enum EmbedError {
    /// The interpreter could not be set up (a bad `$VIRTUAL_ENV`, for one).
    #[error("starting Python: {0}")]
    Start(String),
    /// Resolving the spec raised (no such module or class, not an `alcc.Controller`, ...).
    #[error("--cc {spec}: {traceback}")]
    Load {
        /// The spec as given.
        spec: String,
        /// What Python said.
        traceback: String,
    },
    /// The `alcc` package (whose `alcc.Controller` every Python controller subclasses) does
    /// not import: no venv with it is active.
    #[error(
        "--cc {spec}: the alcc Python package does not import; run from a venv it is installed in \
         (make python-ext installs it into .venv; set VIRTUAL_ENV=.venv): {traceback}"
    )]
    NoPackage {
        /// The spec as given.
        spec: String,
        /// What Python said.
        traceback: String,
    },
    /// The spec names no Python controller.
    #[error("--cc {0}: not a Python controller (give py:module:Class)")]
    NotPython(String),
    /// The class's constructor or its first `decision()` raised.
    #[error("constructing the controller {spec}: {traceback}")]
    Construct {
        /// The spec as given.
        spec: String,
        /// What Python said.
        traceback: String,
    },
}

/// The interpreter's set-up, run once: the current directory and the venv on `sys.path`.
const SETUP: &std::ffi::CStr = c"
import os, site, sys
sys.path.insert(0, os.getcwd())
_venv = os.environ.get('VIRTUAL_ENV')
if _venv:
    _site = os.path.join(_venv, 'lib', 'python%d.%d' % sys.version_info[:2], 'site-packages')
    if not os.path.isdir(_site):
        raise RuntimeError(
            'VIRTUAL_ENV=%s has no %s: a venv of another Python than the %d.%d this program embeds?'
            % (_venv, _site, *sys.version_info[:2]))
    site.addsitedir(_site)
";

/// Starts the interpreter and sets up `sys.path`, once per process.
fn interpreter() -> Result<(), EmbedError> {
    static STARTED: OnceLock<Result<(), EmbedError>> = OnceLock::new();
    STARTED
        .get_or_init(|| {
            Python::initialize();
            Python::attach(|py| {
                py.run(SETUP, None, None).map_err(|e| EmbedError::Start(format_exception(py, &e)))
            })
        })
        .clone()
}

/// A Python controller class, loaded from a `py:module:Class` spec (or `py:NAME` registered with
/// `alcc.register`), ready to make one controller per flow.
pub struct PythonClass {
    spec: String,
    class: Py<PyAny>,
    hooks: Hooks,
}

impl PythonClass {
    /// Starts Python if needed and resolves `spec`: an error names the spec and carries the
    /// traceback (a missing module, a class that is no `alcc.Controller` subclass, the `alcc`
    /// package missing because no venv with it is active).
    pub fn load(spec: &str) -> Result<PythonClass, EmbedError> {
        interpreter()?;
        Python::attach(|py| {
            let load = |e: PyErr| EmbedError::Load { spec: spec.into(), traceback: format_exception(py, &e) };
            let resolver = py.import("alcc._controller").map_err(|e| EmbedError::NoPackage {
                spec: spec.into(),
                traceback: format_exception(py, &e),
            })?;
            let (_, class): (String, Option<Bound<'_, PyAny>>) =
                resolver.call_method1("resolve", (spec,)).and_then(|r| r.extract()).map_err(load)?;
            let class = class.ok_or_else(|| EmbedError::NotPython(spec.into()))?;
            if !class.is_instance_of::<pyo3::types::PyType>() {
                return Err(EmbedError::NotPython(format!(
                    "{spec} (names an instance; a flow needs a class to make a controller of its own)"
                )));
            }
            let names: Vec<String> = class.call_method0("_hooks").and_then(|h| h.extract()).map_err(load)?;
            Ok(PythonClass { spec: spec.into(), class: class.unbind(), hooks: Hooks::from_names(&names) })
        })
    }

    /// The spec it was loaded from.
    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// The hooks the class overrides.
    pub fn hooks(&self) -> Hooks {
        self.hooks
    }

    /// A new controller, `Class(mss=mss, seed=seed)`, whose exceptions do what `on_error` says.
    pub fn controller(&self, mss: u64, seed: u64, on_error: OnError) -> Result<PyController, EmbedError> {
        Python::attach(|py| {
            let construct = |e: PyErr| EmbedError::Construct {
                spec: self.spec.clone(),
                traceback: format_exception(py, &e),
            };
            let kwargs = PyDict::new(py);
            kwargs.set_item("mss", mss).map_err(construct)?;
            kwargs.set_item("seed", seed).map_err(construct)?;
            let object = self.class.bind(py).call((), Some(&kwargs)).map_err(construct)?;
            PyController::new(py, object.unbind(), self.hooks, on_error).map_err(construct)
        })
    }
}
