//! [`Options`]: how a flow is set up (its controller, the kernel congestion control under it,
//! buffers, mode), and the checks a controller specification passes before a flow starts.

use std::time::Duration;

use alcc_cc::{registry, Config};

use crate::coupling::Grouping;
use crate::error::{Error, Result};
use crate::mode::Mode;
use crate::receive_window::ReceiveWindow;

/// How a flow is set up: its controller, the kernel congestion control under it, buffers.
#[derive(Clone, Debug)]
pub struct Options {
    /// Controller specification (`copa:delta=0.5`, `fixed:window=20`), or `none` for plain
    /// kernel TCP through the same API (no gating, no timestamps, no socket options but the
    /// underlay).
    pub cc: String,
    /// Kernel congestion control under the controller, always set explicitly on the socket
    /// (`cubic`, `reno`, `bbr`, or alcc's BPF underlay `alcc`). The default, `reno`, is the
    /// one every unprivileged process may choose (Linux allows reno and the system default to
    /// everyone); the paper ran ALCC over `cubic`, which needs root where
    /// net.ipv4.tcp_allowed_congestion_control does not list it.
    pub underlay: String,
    /// Bytes the application may queue before writes block.
    pub queue_capacity: usize,
    /// Largest chunk written into the kernel at once.
    pub max_chunk: u64,
    /// TCP_NOTSENT_LOWAT: how many not-yet-sent bytes the kernel may hold.
    pub notsent_lowat: u32,
    /// Receive buffer size to make room for ACK timestamps in the error queue.
    pub errqueue_rcvbuf: u32,
    /// Packet size the controller counts in ([`Config::mss`]), also when
    /// [`AlccStream::set_cc`](crate::AlccStream::set_cc) replaces it, and the segment size
    /// chunks are cut in until the kernel reports its own.
    pub mss: u64,
    /// TCP_USER_TIMEOUT: how long sent data may stay unacknowledged (or the peer's window
    /// stay closed) before the kernel gives up and the flow fails with `TimedOut`. `None`
    /// keeps the kernel's default (minutes of retries).
    pub user_timeout: Option<Duration>,
    /// TCP_USER_TIMEOUT from the moment the flow is closed (`close`, a dropped stream, the
    /// process exiting), if shorter than [`user_timeout`](Self::user_timeout): a peer that
    /// acknowledges nothing for this long after the close, or keeps its window shut, fails the
    /// flow with `TimedOut`, so that every close ends (crates/alcc/README.md "Close and exit").
    /// Kernel and framed mode; a UDP flow ends by its own loss timers.
    pub close_user_timeout: Duration,
    /// How the flow learns what was delivered. In [`Mode::Framed`] and [`Mode::Udp`] both
    /// ends run alcc: an [`AlccStream`](crate::AlccStream) sends and an
    /// [`AlccReceiver`](crate::AlccReceiver) receives.
    pub mode: Mode,
    /// Which flows of the process share one congestion state (docs/coupled-flows.md): by peer
    /// address (the default), by name, or none. A group of one flow runs exactly as an
    /// uncoupled flow.
    pub grouping: Grouping,
    /// The flow's priority weight in its group (RFC 8699's `P(i)`), finite and above zero;
    /// 1 by default. [`AlccStream::set_weight`](crate::AlccStream::set_weight) changes it.
    pub weight: f64,
    /// The host's manager (`alcc manager --socket PATH`): a named group
    /// ([`Grouping::Named`]) is then shared with the other processes of the host that name it
    /// on the same manager (docs/coupled-flows.md "The host manager"). `None`: groups are the
    /// process's own.
    pub manager: Option<std::path::PathBuf>,
    /// The receiving side of kernel mode ([`AlccReceiver::connect`](crate::AlccReceiver::connect)):
    /// how its advertised window is set (the kernel's autotuning, a static buffer, DRWA).
    pub receive_window: ReceiveWindow,
}

impl Default for Options {
    /// `fixed` (unbounded), over `reno`, grouped by peer with weight 1, 1 MiB queue, chunks of at most 256 KiB, 128 KiB
    /// not-sent low-water mark, a closed flow given up after 60 s without progress.
    fn default() -> Options {
        Options {
            cc: "fixed".into(),
            underlay: "reno".into(),
            queue_capacity: 1 << 20,
            max_chunk: 256 << 10,
            notsent_lowat: 128 << 10,
            errqueue_rcvbuf: 4 << 20,
            mss: Config::default().mss,
            user_timeout: None,
            close_user_timeout: Duration::from_secs(60),
            mode: Mode::Kernel,
            grouping: Grouping::ByPeer,
            weight: 1.0,
            manager: None,
            receive_window: ReceiveWindow::Kernel,
        }
    }
}

impl Options {
    /// Default options with controller `cc`.
    pub fn with_cc(cc: &str) -> Options {
        Options { cc: cc.into(), ..Options::default() }
    }

    /// Sets the mode.
    pub fn mode(mut self, mode: Mode) -> Options {
        self.mode = mode;
        self
    }

    /// Sets the receiving side's window control (kernel mode).
    pub fn receive_window(mut self, window: ReceiveWindow) -> Options {
        self.receive_window = window;
        self
    }

    /// Sets which flows share one congestion state.
    pub fn grouping(mut self, grouping: Grouping) -> Options {
        self.grouping = grouping;
        self
    }

    /// Sets the flow's priority weight in its group.
    pub fn weight(mut self, weight: f64) -> Options {
        self.weight = weight;
        self
    }

    /// Sets the kernel congestion control.
    pub fn underlay(mut self, name: &str) -> Options {
        self.underlay = name.into();
        self
    }

    /// The controller configuration flows with these options get.
    pub(crate) fn config(&self) -> Config {
        Config { mss: self.mss.max(1), seed: 0 }
    }
}

/// Whether `spec` means plain kernel TCP.
pub(crate) fn is_none(spec: &str) -> bool {
    spec.trim().eq_ignore_ascii_case("none")
}

/// Checks that `spec` names a controller kernel mode can run (or is `none`).
pub fn check_spec(spec: &str) -> Result<()> {
    check_spec_for(spec, Mode::Kernel)
}

/// Checks that `spec` names a controller `mode` can run (or is `none`).
pub fn check_spec_for(spec: &str, mode: Mode) -> Result<()> {
    if is_none(spec) {
        return Ok(());
    }
    if mode == Mode::Kernel && registry::entry(spec)?.needs_receiver() {
        return Err(Error::NeedsReceiver(spec.to_string()));
    }
    registry::build(spec, &Config::default()).map(drop).map_err(Error::from)
}
