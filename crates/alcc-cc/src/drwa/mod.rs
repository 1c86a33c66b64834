//! DRWA, dynamic receive-window adjustment (Jiang, Wang, Lee and Rhee, "Tackling Bufferbloat in
//! 3G/4G Networks", IMC 2012; `../shared/papers/drwa-dynamic-receive-window.txt`): the receiver
//! alone keeps a bloated bottleneck queue short by advertising a window derived from its own
//! RTT and delivery measurements, whatever congestion control the sender runs.
//!
//! Sans-IO: the transport passes in [`Sample`]s (the time, the bytes received so far, the
//! receiver's current RTT estimate) and applies the [`Drwa::window`] it gets back (the engine
//! does so with `TCP_WINDOW_CLAMP`). The model is the paper's Algorithm 3 (section 4.1):
//!
//! - `RTT_min` is the smallest RTT estimate seen on the connection (section 4.1, "records the
//!   minimum RTT ever seen in this connection").
//! - Once per RTT (`elapsed >= RTT_est` since the last update, as in DRS, Algorithm 1), the
//!   bytes received in that round are one estimate of the sender's window; it is smoothed with
//!   a low-pass filter, `cwnd_est <- alpha x cwnd_est + (1 - alpha) x data_rcvd`, `alpha = 7/8`
//!   (section 4.1), the first round's bytes taken as they are (Algorithm 3's initialization).
//! - `rwnd = lambda x (RTT_min / RTT_est) x cwnd_est`, `lambda = 3` (sections 4.1 and 4.3): at
//!   `RTT_est = lambda x RTT_min` the window holds still, so lambda sets the target RTT.
//!
//! # Choices the paper leaves open (and ours)
//!
//! 1. **Rounds longer than one RTT.** The paper updates when data is copied to user space and
//!    at least one `RTT_est` has passed, and counts "the amount of data received within one
//!    RTT". A sampler (or a slow reader) may come back later than one RTT; we scale the round's
//!    bytes to one `RTT_est`: `data_rcvd = bytes x RTT_est / elapsed`, so the estimate does not
//!    grow with the sampling period.
//! 2. **Rounds with no data.** The paper would smooth a zero into `cwnd_est` and shrink the
//!    window of a sender that was merely idle (application-limited); an idle round tells
//!    nothing about the sender's window, so we skip it (the round restarts, nothing changes).
//! 3. **Which RTT estimate.** The paper averages timestamp samples over the last RTT (or uses
//!    DRS's one sample per window without timestamps). We take the transport's current
//!    receiver-side estimate as given (Linux's `tcpi_rcv_rtt`, which uses timestamps when the
//!    connection has them); `RTT_est` in the formula and the round length are that value at the
//!    update.
//! 4. **Bounds.** The paper gives none. The window is kept within `[floor, ceiling]`: `floor`
//!    (default 4 segments of 1448 bytes) so that a burst of queueing cannot close the window to
//!    a segment or two, `ceiling` the largest window the socket's buffer allows (the engine
//!    sets it; default unbounded).
//! 5. **Before the first update** there is no window: the transport leaves the kernel's own
//!    until one full round has been measured.
//! 6. **RTT_min never expires** (the paper's "ever seen"); a route change to a longer path
//!    therefore makes DRWA more conservative for the rest of the connection.
//!
//! The window never has to be checked against what is in flight here: the engine relies on
//! TCP's rule that a receiver does not shrink an offered window (RFC 9293 section 3.8.6; Linux
//! keeps the right edge unless `net.ipv4.tcp_shrink_window` is set), so a smaller window only
//! stops the right edge from advancing.

mod params;
#[cfg(test)]
mod tests;

use std::time::Duration;

use crate::time::Time;

pub use self::params::DrwaParams;

/// What the receiver measured at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// When it was measured.
    pub now: Time,
    /// Bytes received on the connection so far (cumulative; Linux's `tcpi_bytes_received`).
    pub bytes_received: u64,
    /// The receiver's current RTT estimate, `None` (or zero) while it has none
    /// (Linux's `tcpi_rcv_rtt`).
    pub rtt: Option<Duration>,
}

/// Where the current round began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Round {
    start: Time,
    bytes: u64,
}

/// The DRWA receive-window model (module docs: the paper's Algorithm 3 and our choices).
#[derive(Clone, Debug)]
pub struct Drwa {
    params: DrwaParams,
    rtt_min: Option<Duration>,
    cwnd_est: Option<f64>,
    round: Option<Round>,
    window: Option<u64>,
    updates: u64,
}

impl Drwa {
    /// A model with no measurements yet.
    pub fn new(params: DrwaParams) -> Drwa {
        Drwa { params, rtt_min: None, cwnd_est: None, round: None, window: None, updates: 0 }
    }

    /// The parameters.
    pub fn params(&self) -> &DrwaParams {
        &self.params
    }

    /// Sets the largest window (bytes) the transport can advertise, e.g. from the socket's
    /// receive buffer; the current window is lowered to it at once.
    pub fn set_ceiling(&mut self, ceiling: u64) {
        self.params.ceiling = ceiling.max(self.params.floor);
        self.window = self.window.map(|w| w.min(self.params.ceiling));
    }

    /// Takes one measurement; returns the new window when this sample ended a round
    /// (section 4.1: at most one update per `RTT_est`), `None` otherwise.
    pub fn on_sample(&mut self, sample: Sample) -> Option<u64> {
        let rtt = sample.rtt.filter(|r| !r.is_zero());
        if let Some(rtt) = rtt {
            self.rtt_min = Some(self.rtt_min.map_or(rtt, |m| m.min(rtt)));
        }
        let Some(round) = self.round else {
            self.round = Some(Round { start: sample.now, bytes: sample.bytes_received });
            return None;
        };
        let rtt = rtt?;
        let elapsed = sample.now.saturating_since(round.start);
        if elapsed < rtt {
            return None;
        }
        self.round = Some(Round { start: sample.now, bytes: sample.bytes_received });
        let bytes = sample.bytes_received.saturating_sub(round.bytes);
        if bytes == 0 {
            return None; // choice 2: an idle round says nothing about the sender's window
        }
        // Choice 1: the round's bytes per one RTT_est.
        let data_rcvd = bytes as f64 * rtt.as_secs_f64() / elapsed.as_secs_f64();
        let alpha = self.params.alpha;
        let cwnd_est = match self.cwnd_est {
            None => data_rcvd,
            Some(prev) => alpha * prev + (1.0 - alpha) * data_rcvd,
        };
        self.cwnd_est = Some(cwnd_est);
        let rtt_min = self.rtt_min.unwrap_or(rtt);
        let target = self.params.lambda * (rtt_min.as_secs_f64() / rtt.as_secs_f64()) * cwnd_est;
        let window = (target.round() as u64).clamp(self.params.floor, self.params.ceiling);
        self.window = Some(window);
        self.updates += 1;
        Some(window)
    }

    /// The window to advertise (bytes), `None` until the first round was measured.
    pub fn window(&self) -> Option<u64> {
        self.window
    }

    /// The smallest RTT estimate seen.
    pub fn rtt_min(&self) -> Option<Duration> {
        self.rtt_min
    }

    /// The smoothed estimate of the sender's window (bytes per RTT).
    pub fn cwnd_estimate(&self) -> Option<f64> {
        self.cwnd_est
    }

    /// How many times the window was computed.
    pub fn updates(&self) -> u64 {
        self.updates
    }

    /// When the current round can end at the earliest (its start plus `rtt`), for a transport
    /// that samples on a timer.
    pub fn round_end(&self, rtt: Duration) -> Option<Time> {
        self.round.map(|r| r.start + rtt)
    }
}
