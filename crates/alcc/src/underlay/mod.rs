//! The kernel congestion control under alcc's controller: a kernel one chosen by name
//! (`cubic`, `reno`, `bbr`), or alcc's own BPF underlay (`alcc`, `alcc:hold`,
//! `alcc:follow`; issue 10), whose window and rate come from the controller.
//!
//! Over a kernel congestion control the kernel's window is a second controller: kernel
//! CUBIC halves it on every random loss and alcc cannot send beyond it (the paper's
//! section 5.8, Figure 20). The `alcc` underlay is a BPF struct_ops congestion control
//! (bpf/alcc_underlay.bpf.c) that copies a per-socket target, written here from user space
//! into socket-local storage, into the kernel's window on every ACK; [`Policy`] says how the
//! target follows the controller. [`loader`] registers it once per process.
//!
//! A flow touches this module in three places: [`Underlay::attach`] when its socket is set
//! up, [`FlowUnderlay::sync`] once per driver step (a map write only when the target
//! changed), and [`FlowUnderlay::gate`] where it compares bytes in flight with the window.
//! A socket that alcc creates (a listener, a connection) gets its congestion control before
//! its handshake ([`initial`]): one started under the host's default `bbr` would keep the
//! kernel's pacing after the switch to the underlay.

pub mod initial;
pub mod loader;
pub mod policy;
pub mod target;

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::str::FromStr;
use std::sync::Arc;

use alcc_cc::{Decision, Time};

pub use initial::{bind_listener, connect, set_initial_congestion};
pub use loader::{Registration, UnderlayError};
pub use policy::{Peak, Policy};
pub use target::Target;

use crate::error::Error;
use crate::sys;

/// What runs under the controller in the kernel.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Underlay {
    /// A kernel congestion control by name; the kernel checks the name.
    Kernel(String),
    /// alcc's BPF underlay with a policy.
    Alcc(Policy),
}

impl Underlay {
    /// The name of the BPF underlay on the command line and in the C ABI.
    pub const ALCC: &'static str = "alcc";

    /// Its name as given on the command line (`cubic`, `alcc:follow`; `alcc` is
    /// `alcc:hold`).
    pub fn name(&self) -> String {
        match self {
            Underlay::Kernel(n) => n.clone(),
            Underlay::Alcc(p) => format!("{}:{p}", Self::ALCC),
        }
    }

    /// Sets the socket `fd` up: chooses the kernel congestion control, and for `alcc`
    /// registers it in this process if needed and writes the first target from `decision`
    /// (the controller's initial one; `None`: no controller, unbounded) before choosing it,
    /// so the very first flight already has it. Reads first the congestion control the
    /// socket had ([`Attached::prior_congestion`]): one that turned the kernel's pacing on
    /// (`bbr`) leaves it on under the underlay ([`initial`]).
    pub fn attach(&self, fd: RawFd, decision: Option<Decision>, mss: u64) -> Result<Attached, Error> {
        let prior_congestion = sys::get_congestion(fd)?;
        let flow = match self {
            Underlay::Kernel(name) => {
                sys::set_congestion(fd, name).map_err(|source| Error::underlay(name, source))?;
                FlowUnderlay::Kernel
            }
            Underlay::Alcc(policy) => {
                let registration = loader::acquire()?;
                let mut socket =
                    AlccSocket { policy: *policy, registration, written: None, peak: Peak::default() };
                socket.sync(fd, decision, mss, sys::now()).map_err(UnderlayError::Socket)?;
                let name = socket.registration.name().to_string();
                sys::set_congestion(fd, &name).map_err(|source| Error::underlay(&name, source))?;
                FlowUnderlay::Alcc(socket)
            }
        };
        Ok(Attached { flow, prior_congestion })
    }
}

/// Checks that the kernel accepts the underlay `name` for this process, on a socket of its
/// own, so that a refusal (a missing privilege names the allowed list) is the caller's error
/// at start-up rather than each connection's. For the BPF underlay: see [`preload`].
pub fn check(name: &str) -> Result<(), Error> {
    match name.parse::<Underlay>()? {
        Underlay::Kernel(name) => {
            let probe = sys::tcp_socket()?;
            sys::set_congestion(probe.as_raw_fd(), &name).map_err(|source| Error::underlay(&name, source))
        }
        Underlay::Alcc(_) => preload(name).map(drop),
    }
}

/// Checks the underlay `name` and, for the BPF underlay, registers it now and returns the
/// registration: a program holding it keeps it loaded between flows, and a missing
/// privilege, BTF or build is its error at start-up rather than each connection's.
pub fn preload(name: &str) -> Result<Option<Arc<Registration>>, Error> {
    match name.parse::<Underlay>()? {
        Underlay::Kernel(_) => Ok(None),
        Underlay::Alcc(_) => Ok(Some(loader::acquire()?)),
    }
}

impl fmt::Display for Underlay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// An `alcc:` underlay with a policy that is not one of [`Policy::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown alcc underlay policy `{0}` (hold, follow)")]
pub struct UnknownPolicy(pub String);

impl FromStr for Underlay {
    type Err = UnknownPolicy;

    /// `alcc` and `alcc:hold` are the BPF underlay holding the window open, `alcc:follow`
    /// the one following the controller; any other name is a kernel congestion control.
    fn from_str(s: &str) -> Result<Underlay, UnknownPolicy> {
        let s = s.trim();
        let (head, policy) = match s.split_once(':') {
            Some((h, p)) => (h, Some(p.trim())),
            None => (s, None),
        };
        if !head.trim().eq_ignore_ascii_case(Self::ALCC) {
            return Ok(Underlay::Kernel(s.to_string()));
        }
        match policy {
            None => Ok(Underlay::Alcc(Policy::default())),
            Some(p) => Policy::ALL
                .into_iter()
                .find(|x| x.name().eq_ignore_ascii_case(p))
                .map(Underlay::Alcc)
                .ok_or_else(|| UnknownPolicy(p.to_string())),
        }
    }
}

/// What [`Underlay::attach`] did to a socket.
#[derive(Debug)]
pub struct Attached {
    /// The flow's underlay, its socket set up.
    pub flow: FlowUnderlay,
    /// The kernel congestion control the socket had before: its listener's, or the host's
    /// default (net.ipv4.tcp_congestion_control) when nobody chose one for the listener.
    pub prior_congestion: String,
}

/// A flow's underlay once its socket is set up.
#[derive(Debug)]
pub enum FlowUnderlay {
    /// A kernel congestion control decides its own window: nothing to do per step.
    Kernel,
    /// The BPF underlay: the target follows the controller.
    Alcc(AlccSocket),
}

impl FlowUnderlay {
    /// Writes the target for the controller's current `decision` at `now` when it changed
    /// (once per driver step; a map update is one system call, made only on a change).
    pub fn sync(&mut self, fd: RawFd, decision: Option<Decision>, mss: u64, now: Time) -> io::Result<()> {
        match self {
            FlowUnderlay::Kernel => Ok(()),
            FlowUnderlay::Alcc(s) => s.sync(fd, decision, mss, now),
        }
    }

    /// The kernel window last written, segments (0 over a kernel congestion control).
    pub fn written_cwnd(&self) -> u32 {
        match self {
            FlowUnderlay::Kernel => 0,
            FlowUnderlay::Alcc(s) => s.written.map_or(0, |t| t.cwnd),
        }
    }

    /// The decision alcc's own gate and pacer enforce for the controller's `d`.
    pub fn gate(&self, d: Decision, mss: u64) -> Decision {
        match self {
            FlowUnderlay::Kernel => d,
            FlowUnderlay::Alcc(s) => s.policy.gate(d, mss),
        }
    }
}

/// One socket under the BPF underlay.
#[derive(Debug)]
pub struct AlccSocket {
    policy: Policy,
    /// Keeps the process's registration alive while this socket's flow runs.
    registration: Arc<Registration>,
    /// The target last written.
    written: Option<Target>,
    /// `hold`: the highest window written over the last second.
    peak: Peak,
}

impl AlccSocket {
    fn sync(&mut self, fd: RawFd, decision: Option<Decision>, mss: u64, now: Time) -> io::Result<()> {
        let d = decision.unwrap_or(Decision { window: u64::MAX, pacing_rate: None });
        let mut target = self.policy.target(d, mss);
        if self.policy == Policy::Hold {
            target.cwnd = self.peak.update(now, target.cwnd);
        }
        if self.written.is_some_and(|w| !changed(w, target)) {
            return Ok(());
        }
        self.registration.write(fd, target)?;
        self.written = Some(target);
        Ok(())
    }
}

/// Whether `new` differs from `old` enough to write: any window change, a pacing-rate
/// change above 1/64 (rates move every ACK for Copa; a 1.6 % step is below what the
/// kernel's own pacing granularity resolves at these rates).
fn changed(old: Target, new: Target) -> bool {
    old.policy != new.policy
        || old.cwnd != new.cwnd
        || (old.pacing_rate == 0) != (new.pacing_rate == 0)
        || old.pacing_rate.abs_diff(new.pacing_rate) > old.pacing_rate / 64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse() {
        assert_eq!("alcc".parse(), Ok(Underlay::Alcc(Policy::Hold)));
        assert_eq!("ALCC:follow".parse(), Ok(Underlay::Alcc(Policy::Follow)));
        assert_eq!(" alcc:hold ".parse(), Ok(Underlay::Alcc(Policy::Hold)));
        assert_eq!("cubic".parse(), Ok(Underlay::Kernel("cubic".into())));
        assert_eq!("alcc:loose".parse::<Underlay>(), Err(UnknownPolicy("loose".into())));
        assert_eq!(Underlay::Alcc(Policy::Follow).to_string(), "alcc:follow");
        assert_eq!(Underlay::Kernel("reno".into()).to_string(), "reno");
    }

    #[test]
    fn small_rate_moves_are_not_written() {
        let t = |cwnd, pacing_rate| Target { policy: 2, cwnd, pacing_rate };
        assert!(!changed(t(10, 6400), t(10, 6450)));
        assert!(changed(t(10, 6400), t(10, 6600)));
        assert!(changed(t(10, 6400), t(11, 6400)));
        assert!(changed(t(10, 0), t(10, 1)));
        assert!(changed(t(10, 5), t(10, 0)));
    }
}
