//! Where a flow's controller comes from for `alcc serve --cc` and `alcc sim --cc`: alcc's
//! registry by spec (`copa`, `verus:r=4`, `none`), or a class written in Python
//! (`py:module:Class`, `py:NAME` registered with `alcc.register`). Python controllers need the
//! cargo feature `python` (on by default), which embeds CPython (crates/alcc-python-cc); see
//! docs/python.md.

use std::net::TcpStream;

use alcc::{AlccStream, Mode, Options};
use alcc_cc::sim::{Scenario, SimResult};
use anyhow::{bail, Result};

/// The prefix of a Python controller's spec.
const PYTHON_PREFIX: &str = "py:";

/// A flow's controller: from the registry, or a Python class (one instance per flow).
pub enum ControllerSource {
    /// A spec of alcc's registry; `Options::cc` names it.
    Registry,
    /// A class written in Python.
    #[cfg(feature = "python")]
    Python(alcc_python_cc::embed::PythonClass),
}

impl ControllerSource {
    /// The source of streams in `mode` that `cc` names, checked now (a bad spec, a module that
    /// does not import, a mode a Python controller cannot run in) rather than per connection.
    pub fn for_streams(cc: &str, mode: Mode) -> Result<ControllerSource> {
        if cc.starts_with(PYTHON_PREFIX) {
            if mode != Mode::Kernel {
                bail!("--cc {cc}: a Python controller runs in kernel mode only, not {mode}");
            }
            return python(cc);
        }
        alcc::check_spec_for(cc, mode)?;
        Ok(ControllerSource::Registry)
    }

    /// The source of a simulator run that `cc` names; a registry spec is checked by the
    /// simulator itself (with its receiver model, which streams in kernel mode lack).
    pub fn for_sim(cc: &str) -> Result<ControllerSource> {
        if cc.starts_with(PYTHON_PREFIX) {
            return python(cc);
        }
        Ok(ControllerSource::Registry)
    }

    /// An alcc stream on the accepted connection `tcp` under a controller of this source. A
    /// Python controller's exception fails this flow only, with the traceback in its error.
    pub fn stream(&self, tcp: TcpStream, options: &Options) -> Result<AlccStream> {
        match self {
            ControllerSource::Registry => Ok(AlccStream::from_tcp(tcp, options)?),
            #[cfg(feature = "python")]
            ControllerSource::Python(class) => {
                let controller =
                    class.controller(options.mss, 0, alcc_python_cc::controller::OnError::Unwind)?;
                Ok(AlccStream::from_tcp_with_controller(tcp, options, Box::new(controller))?)
            }
        }
    }

    /// Runs the simulator with this source's controller; `cc` is the spec it was parsed from.
    /// A Python controller that raised is this run's error, with the traceback.
    pub fn simulate(&self, scenario: &Scenario, cc: &str) -> Result<SimResult> {
        match self {
            ControllerSource::Registry => Ok(scenario.run(cc)?),
            #[cfg(feature = "python")]
            ControllerSource::Python(class) => {
                let config = scenario.config();
                let controller =
                    class.controller(config.mss, config.seed, alcc_python_cc::controller::OnError::Record)?;
                let failure = controller.failure();
                let result = scenario.run_with(Box::new(controller), None)?;
                match failure.get() {
                    Some(traceback) => bail!("the controller {cc} raised:\n{traceback}"),
                    None => Ok(result),
                }
            }
        }
    }
}

/// A Python controller class, loaded now.
#[cfg(feature = "python")]
fn python(cc: &str) -> Result<ControllerSource> {
    Ok(ControllerSource::Python(alcc_python_cc::embed::PythonClass::load(cc)?))
}

/// Without the `python` feature: the error that says so.
#[cfg(not(feature = "python"))]
fn python(cc: &str) -> Result<ControllerSource> {
    bail!(
        "--cc {cc}: controllers written in Python need alcc built with the cargo feature `python` \
         (on by default; this build was made with --no-default-features)"
    )
}
