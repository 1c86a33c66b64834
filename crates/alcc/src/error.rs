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
    #[error("kernel congestion control `{name}` refused: {source}{hint}")]
    Underlay {
        /// The name asked for.
        name: String,
        /// What the kernel said.
        source: io::Error,
        /// What is allowed or available here and the way out (see [`Error::underlay`]).
        hint: String,
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
    /// A group name or priority weight that is refused (docs/coupled-flows.md).
    #[error("{0}")]
    BadGrouping(String),
    /// A system call failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        match e {
            Error::Io(e) => e,
            Error::Underlay { ref source, .. } => io::Error::new(source.kind(), e.to_string()),
            Error::Bpf(e) => io::Error::new(e.kind(), e.to_string()),
            other => io::Error::new(io::ErrorKind::InvalidInput, other.to_string()),
        }
    }
}

impl Error {
    /// The kernel refused congestion control `name` with `source`: the error names what the
    /// kernel allows here (net.ipv4.tcp_allowed_congestion_control) or has
    /// (net.ipv4.tcp_available_congestion_control) and the way out.
    pub fn underlay(name: &str, source: io::Error) -> Error {
        let read = |what: &str| {
            std::fs::read_to_string(format!("/proc/sys/net/ipv4/tcp_{what}_congestion_control"))
                .ok()
                .map(|s| s.trim().to_string())
        };
        let hint = underlay_hint(name, source.raw_os_error(), read("allowed"), read("available"));
        Error::Underlay { name: name.to_string(), source, hint }
    }
}

/// The advice for a refused congestion control `name` (errno `errno`), given the kernel's
/// allowed and available lists. Without CAP_NET_ADMIN the kernel takes only names in the
/// allowed list (EPERM); a name it does not have at all is ENOENT.
pub(crate) fn underlay_hint(
    name: &str,
    errno: Option<i32>,
    allowed: Option<String>,
    available: Option<String>,
) -> String {
    let unknown = || "?".to_string();
    match errno {
        Some(libc::EPERM) => {
            let allowed = allowed.unwrap_or_else(unknown);
            format!(
                ": without CAP_NET_ADMIN only the names in net.ipv4.tcp_allowed_congestion_control may be \
                 chosen, here `{allowed}`; choose one of them (--underlay reno, alcc's default, is allowed \
                 unless an administrator removed it), run as root, or allow `{name}`: \
                 sysctl -w net.ipv4.tcp_allowed_congestion_control=\"{allowed} {name}\""
            )
        }
        Some(libc::ENOENT) => format!(
            ": the kernel has no congestion control `{name}` (net.ipv4.tcp_available_congestion_control: \
             `{}`); its module may add it: modprobe tcp_{name}",
            available.unwrap_or_else(unknown)
        ),
        _ => String::new(),
    }
}

/// Short form of results in this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// The errno a C caller sees for an I/O error: its OS code when it has one, else the code that
/// matches its kind (the engine reports timeouts, resets and refusals as kinds, not always with
/// an OS code). Shared by the C ABI (alcc-ffi) and the preload shim (alcc-preload).
pub fn errno_of(e: &io::Error) -> libc::c_int {
    if let Some(code) = e.raw_os_error() {
        return code;
    }
    use io::ErrorKind as K;
    match e.kind() {
        K::WouldBlock => libc::EAGAIN,
        K::TimedOut => libc::ETIMEDOUT,
        K::BrokenPipe => libc::EPIPE,
        K::ConnectionReset => libc::ECONNRESET,
        K::ConnectionAborted => libc::ECONNABORTED,
        K::NotConnected => libc::ENOTCONN,
        K::InvalidInput => libc::EINVAL,
        K::Unsupported => libc::EOPNOTSUPP,
        K::NotFound => libc::ENOENT,
        K::Interrupted => libc::EINTR,
        K::PermissionDenied => libc::EPERM,
        _ => libc::EIO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_underlay_names_what_is_allowed_and_the_way_out() {
        let h = underlay_hint("cubic", Some(libc::EPERM), Some("reno bbr".into()), None);
        assert!(h.contains("net.ipv4.tcp_allowed_congestion_control"), "{h}");
        assert!(h.contains("here `reno bbr`"), "{h}");
        assert!(h.contains("run as root"), "{h}");
        assert!(h.contains("sysctl -w net.ipv4.tcp_allowed_congestion_control=\"reno bbr cubic\""), "{h}");
        let h = underlay_hint("vegas", Some(libc::ENOENT), None, Some("reno cubic".into()));
        assert!(h.contains("`reno cubic`") && h.contains("modprobe tcp_vegas"), "{h}");
        assert_eq!(underlay_hint("x", Some(libc::EINVAL), None, None), "");
        let e = Error::underlay("cubic", io::Error::from_raw_os_error(libc::EPERM)).to_string();
        assert!(e.starts_with("kernel congestion control `cubic` refused: Operation not permitted"), "{e}");
    }
}
