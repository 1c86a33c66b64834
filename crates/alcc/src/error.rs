//! Errors of the engine.

use std::io;

use thiserror::Error;

/// Why an alcc operation failed.
#[derive(Debug, Error)]
pub enum Error {
    /// The controller specification was refused.
    #[error(transparent)]
    Spec(#[from] alcc_cc::SpecError),
    /// The kernel congestion control name is not one the kernel accepts here.
    #[error("kernel congestion control `{name}` refused: {source}")]
    Underlay {
        /// The name asked for.
        name: String,
        /// What the kernel said.
        source: io::Error,
    },
    /// The algorithm keeps a model at the receiver and cannot run in kernel mode.
    #[error("`{0}` needs a receiver-side model (framed or UDP mode); kernel mode cannot run it")]
    NeedsReceiver(String),
    /// The `alcc` underlay cannot be used here (not built, no BTF, no privilege, refused).
    #[error(transparent)]
    Bpf(#[from] crate::underlay::UnderlayError),
    /// An `alcc:` underlay with an unknown policy.
    #[error(transparent)]
    Policy(#[from] crate::underlay::UnknownPolicy),
    /// A system call failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        match e {
            Error::Io(e) => e,
            Error::Underlay { source, .. } => io::Error::new(source.kind(), source.to_string()),
            Error::Bpf(e) => io::Error::new(e.kind(), e.to_string()),
            other => io::Error::new(io::ErrorKind::InvalidInput, other.to_string()),
        }
    }
}

/// Short form of results in this crate.
pub type Result<T> = std::result::Result<T, Error>;
