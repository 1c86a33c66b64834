//! [`Policy`]: how the `alcc` underlay sets the kernel's window from the controller's
//! decision (issue 10, "What to build" 1).

use std::fmt;
use std::time::Duration;

use alcc_cc::{Decision, Time};

use super::target::Target;

/// The most segments ever written as a kernel window: 100 000 segments is 145 MB in flight
/// at a 1448-byte MSS, beyond any window alcc's controllers reach, and keeps the kernel's
/// send-buffer sizing (tcp_sndbuf_expand multiplies the window by about 2.3 KB in an `int`)
/// far from overflowing when a controller's window is unbounded.
pub const MAX_SEGMENTS: u32 = 100_000;

/// Segments `hold` adds beyond twice the controller's window (the kernel's initial window).
pub const HOLD_EXTRA_SEGMENTS: u32 = 10;

/// How long `hold` keeps the highest window it wrote ([`Peak`]).
pub const HOLD_PEAK_SPAN: Duration = Duration::from_secs(1);

/// How the kernel's window relates to the controller's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Policy {
    /// The kernel's window never limits alcc: it is held at twice the controller's window
    /// plus [`HOLD_EXTRA_SEGMENTS`], never reduced on loss; alcc's own gate and pacer
    /// enforce the controller exactly as over a kernel congestion control.
    ///
    /// Why twice: the kernel counts in flight `packets_out - (sacked + lost) + retrans`,
    /// which is at most `packets_out`, the segments alcc has written and not yet seen
    /// acknowledged, itself at most the controller's window in segments plus a partial
    /// segment at the queue's tail. The target reaches the kernel only on its next ACK (or
    /// when it starts sending after idle), so a window that grows between two ACKs (Verus
    /// doubles per RTT in slow start; a timer can raise it) must already fit: a factor of two
    /// covers a doubling, the extra ten segments a window of a few segments and the tail.
    /// Verus jumps further: leaving its loss state its window was measured going from 15 kB
    /// to 94 kB between two 10 ms samples (Verizon LTE, 5 % loss), and a kernel window of
    /// twice the old one then limited it until the next ACK (2 % of samples). So the target
    /// is the highest of these figures over the last [`HOLD_PEAK_SPAN`] ([`Peak`]): a window
    /// returning to where it was within a second is already covered. A kernel window above
    /// what alcc has in flight costs nothing: the kernel can only send what alcc wrote.
    #[default]
    Hold,
    /// The kernel's window and pacing rate are the controller's window and rate: the kernel
    /// enforces the user-space decision per ACK. alcc's own gate is opened to twice the
    /// window (so the kernel, not the driver's wake-ups, is what limits) and its pacer to a
    /// quarter above the rate (as the kernel's cap over `hold`).
    Follow,
}

impl Policy {
    /// Every policy.
    pub const ALL: [Policy; 2] = [Policy::Hold, Policy::Follow];

    /// Its name after `alcc:` (`alcc:hold`, `alcc:follow`).
    pub fn name(self) -> &'static str {
        match self {
            Policy::Hold => "hold",
            Policy::Follow => "follow",
        }
    }

    /// The value the BPF program reads (`ALCC_HOLD`, `ALCC_FOLLOW` in alcc_underlay.bpf.c).
    pub fn code(self) -> u32 {
        match self {
            Policy::Hold => 1,
            Policy::Follow => 2,
        }
    }

    /// What to write into the socket for the controller's decision `d`, `mss` bytes a
    /// segment.
    pub fn target(self, d: Decision, mss: u64) -> Target {
        let segments = segments(d.window, mss);
        match self {
            Policy::Hold => Target {
                policy: self.code(),
                cwnd: segments.saturating_mul(2).saturating_add(HOLD_EXTRA_SEGMENTS).min(MAX_SEGMENTS),
                pacing_rate: 0,
            },
            Policy::Follow => {
                Target { policy: self.code(), cwnd: segments, pacing_rate: d.pacing_rate.unwrap_or(0) }
            }
        }
    }

    /// The decision alcc's own gate and pacer enforce for the controller's `d`.
    pub fn gate(self, d: Decision, mss: u64) -> Decision {
        match self {
            Policy::Hold => d,
            Policy::Follow => Decision {
                window: d.window.saturating_mul(2).saturating_add(u64::from(HOLD_EXTRA_SEGMENTS) * mss),
                pacing_rate: d.pacing_rate.map(|r| r.saturating_add(r / 4)),
            },
        }
    }
}

/// The highest kernel window written over about the last [`HOLD_PEAK_SPAN`]: the peak is
/// replaced by the current figure when that is higher or when the peak is older than the
/// span.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Peak {
    cwnd: u32,
    since: Option<Time>,
}

impl Peak {
    /// Takes in `cwnd` at `now`; returns the figure to write.
    pub fn update(&mut self, now: Time, cwnd: u32) -> u32 {
        let stale = self.since.is_none_or(|t| now.saturating_since(t) > HOLD_PEAK_SPAN);
        if cwnd >= self.cwnd || stale {
            self.cwnd = cwnd;
            self.since = Some(now);
        }
        self.cwnd
    }
}

/// `window` in whole segments, rounded up, between 2 and [`MAX_SEGMENTS`].
fn segments(window: u64, mss: u64) -> u32 {
    let n = window.div_ceil(mss.max(1));
    u32::try_from(n).unwrap_or(u32::MAX).clamp(2, MAX_SEGMENTS)
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(window: u64, pacing_rate: Option<u64>) -> Decision {
        Decision { window, pacing_rate }
    }

    #[test]
    fn hold_is_twice_the_window_plus_ten_and_never_paces() {
        let t = Policy::Hold.target(d(100 * 1448, Some(1_000_000)), 1448);
        assert_eq!((t.policy, t.cwnd, t.pacing_rate), (1, 210, 0));
        // A partial segment counts as one.
        assert_eq!(Policy::Hold.target(d(1449, None), 1448).cwnd, 2 * 2 + 10);
        // Unbounded windows stop at the cap.
        assert_eq!(Policy::Hold.target(d(u64::MAX, None), 1448).cwnd, MAX_SEGMENTS);
        assert_eq!(Policy::Hold.gate(d(5000, Some(7)), 1448), d(5000, Some(7)));
    }

    #[test]
    fn follow_is_the_window_and_rate() {
        let t = Policy::Follow.target(d(100 * 1448, Some(1_000_000)), 1448);
        assert_eq!((t.policy, t.cwnd, t.pacing_rate), (2, 100, 1_000_000));
        // Never below two segments; no rate leaves the kernel's.
        let t = Policy::Follow.target(d(10, None), 1448);
        assert_eq!((t.cwnd, t.pacing_rate), (2, 0));
        // alcc's own gate opens so that the kernel is what limits.
        assert_eq!(Policy::Follow.gate(d(10_000, Some(800)), 1000), d(30_000, Some(1000)));
        assert_eq!(Policy::Follow.gate(d(u64::MAX, None), 1000), d(u64::MAX, None));
    }

    #[test]
    fn the_peak_is_kept_for_a_second() {
        let mut p = Peak::default();
        let t = Time::from_millis;
        assert_eq!(p.update(t(0), 50), 50);
        assert_eq!(p.update(t(10), 200), 200);
        // A smaller window within the span: the peak stays.
        assert_eq!(p.update(t(500), 40), 200);
        assert_eq!(p.update(t(1010), 40), 200);
        // Older than the span: the current figure replaces it.
        assert_eq!(p.update(t(1011), 40), 40);
        assert_eq!(p.update(t(1020), 60), 60);
    }

    #[test]
    fn codes_are_distinct_and_nonzero() {
        assert_ne!(Policy::Hold.code(), Policy::Follow.code());
        assert!(Policy::ALL.iter().all(|p| p.code() != 0));
    }
}
