//! The error type of the emulator.

use std::io;

/// Everything that can go wrong while configuring or running an emulated link.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The delivery-opportunity schedule (trace) is unusable.
    #[error("invalid trace: {0}")]
    Trace(#[from] alcc_trace::TraceError),
    /// A queue type or queue argument is not understood or impossible.
    #[error("invalid queue: {0}")]
    Queue(String),
    /// A loss probability is outside [0, 1].
    #[error("invalid loss probability {0}: it must be a number between 0 and 1")]
    Loss(f64),
    /// Namespaces and TUN devices need CAP_NET_ADMIN.
    #[error("alcc link must run as root (it creates network namespaces and TUN devices)")]
    NotRoot,
    /// An external command (`ip`) failed.
    #[error("`{command}` failed: {detail}")]
    Command {
        /// The command line that failed.
        command: String,
        /// Its standard error, or the reason it could not run.
        detail: String,
    },
    /// A system call failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        source: io::Error,
    },
}

impl LinkError {
    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        LinkError::Io { context: context.into(), source }
    }
}
