//! `reno`: TCP Reno congestion control (RFC 5681) with appropriate byte counting (RFC 3465,
//! `L` = 2 SMSS), for fidelity checks against the kernel's own.
//!
//! The contract has no retransmission timeout and the transport's bytes in flight already
//! exclude packets declared lost, so there is no fast-recovery window inflation: on the first
//! loss of an episode ([`Recovery`]) the window drops to `ssthresh` at once and stays there
//! until a packet sent after the loss is acknowledged.

use crate::controller::{Config, Controller};
use crate::event::{AckSample, Decision, LossEvent, SentPacket};
use crate::fse::Share;
use crate::metrics::Metrics;
use crate::recovery::{slow_start_increase, Recovery};
use crate::spec::{Params, SpecError};
use crate::time::Time;

/// The window never goes below this many SMSS (RFC 5681 equation (4)).
pub const MIN_WINDOW_SEGMENTS: u64 = 2;

/// RFC 5681 section 3.1 initial window: 2, 3 or 4 SMSS depending on the SMSS.
pub fn initial_window(mss: u64) -> u64 {
    if mss > 2190 {
        2 * mss
    } else if mss > 1095 {
        3 * mss
    } else {
        4 * mss
    }
}

/// One Reno flow; windows in bytes.
#[derive(Clone, Debug)]
pub struct Reno {
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
    /// RFC 3465 section 2.1: bytes acknowledged in congestion avoidance not yet turned into
    /// window growth.
    bytes_acked: u64,
    recovery: Recovery,
}

impl Reno {
    /// A fresh flow with the RFC 5681 initial window and an unbounded `ssthresh`.
    pub fn new(config: &Config) -> Reno {
        let mss = config.mss.max(1);
        Reno { mss, cwnd: initial_window(mss), ssthresh: u64::MAX, bytes_acked: 0, recovery: Recovery::new() }
    }

    /// Reno takes no parameter.
    pub fn from_params(_params: &mut Params, config: &Config) -> Result<Reno, SpecError> {
        Ok(Reno::new(config))
    }

    /// The window in bytes.
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// The slow-start threshold in bytes (`u64::MAX` before the first loss).
    pub fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    /// Whether a recovery episode is under way.
    pub fn in_recovery(&self) -> bool {
        self.recovery.active()
    }
}

impl Controller for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn on_sent(&mut self, _now: Time, packet: &SentPacket) -> u64 {
        self.recovery.on_sent(packet.seq);
        0
    }

    fn on_ack(&mut self, _now: Time, ack: &AckSample) {
        self.recovery.on_ack(ack.seq);
        if self.recovery.active() {
            return;
        }
        if self.cwnd < self.ssthresh {
            // RFC 5681 section 3.1 slow start, RFC 3465 section 2.2 byte counting.
            self.cwnd = self.cwnd.saturating_add(slow_start_increase(ack.bytes, self.mss));
        } else {
            // RFC 3465 section 2.1: one SMSS per window of acknowledged bytes.
            self.bytes_acked = self.bytes_acked.saturating_add(ack.bytes);
            if self.bytes_acked >= self.cwnd {
                self.bytes_acked -= self.cwnd;
                self.cwnd = self.cwnd.saturating_add(self.mss);
            }
        }
    }

    fn on_loss(&mut self, _now: Time, loss: &LossEvent) {
        if !self.recovery.on_loss(loss.seq) {
            return;
        }
        // RFC 5681 equation (4): ssthresh = max(FlightSize / 2, 2 x SMSS), FlightSize counted
        // before the lost packet left the flight.
        let flight = loss.bytes_in_flight.saturating_add(loss.bytes);
        self.ssthresh = (flight / 2).max(MIN_WINDOW_SEGMENTS * self.mss);
        self.cwnd = self.ssthresh;
        self.bytes_acked = 0;
    }

    fn decision(&self) -> Decision {
        Decision { window: self.cwnd, pacing_rate: None }
    }

    /// Continues from the rate the group gave it: `cwnd = rate x RTT` (RFC 8699 section 5.3.1), at
    /// least two segments; ssthresh and recovery are kept.
    fn adopt_share(&mut self, _now: Time, share: &Share) {
        self.cwnd = share.window().max(MIN_WINDOW_SEGMENTS * self.mss);
    }

    fn metrics(&self) -> Metrics {
        let state = if self.recovery.active() {
            "recovery"
        } else if self.cwnd < self.ssthresh {
            "slow_start"
        } else {
            "congestion_avoidance"
        };
        let ssthresh = if self.ssthresh == u64::MAX { f64::INFINITY } else { self.ssthresh as f64 };
        Metrics { extra: vec![("ssthresh_bytes", ssthresh)], ..Metrics::new(self.cwnd, state) }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use proptest::prelude::*;

    use super::*;
    use crate::testing::{drive, ops};

    const MSS: u64 = 1448;

    fn ack(seq: u64, bytes: u64) -> AckSample {
        AckSample {
            seq,
            bytes,
            sent_at: Time::ZERO,
            rtt: Duration::from_millis(40),
            bytes_in_flight: 0,
            delivered: 0,
            memo: 0,
        }
    }

    fn loss(seq: u64, bytes_in_flight: u64) -> LossEvent {
        LossEvent { seq, bytes: MSS, sent_at: Time::ZERO, bytes_in_flight, memo: 0 }
    }

    fn send(r: &mut Reno, seqs: std::ops::Range<u64>) {
        for seq in seqs {
            r.on_sent(Time::ZERO, &SentPacket { seq, bytes: MSS, bytes_in_flight: 0 });
        }
    }

    #[test]
    fn initial_window_per_rfc_5681() {
        assert_eq!(initial_window(536), 4 * 536);
        assert_eq!(initial_window(1448), 3 * 1448);
        assert_eq!(initial_window(9000), 2 * 9000);
        assert_eq!(Reno::new(&Config { mss: MSS, seed: 0 }).decision().window, 3 * MSS);
    }

    #[test]
    fn slow_start_grows_by_bytes_acked_up_to_two_smss() {
        let mut r = Reno::new(&Config { mss: MSS, seed: 0 });
        send(&mut r, 0..3);
        r.on_ack(Time::ZERO, &ack(0, MSS));
        assert_eq!(r.cwnd(), 4 * MSS);
        r.on_ack(Time::ZERO, &ack(1, 500));
        assert_eq!(r.cwnd(), 4 * MSS + 500);
        r.on_ack(Time::ZERO, &ack(2, 10 * MSS)); // a stretch ACK: at most L = 2 SMSS
        assert_eq!(r.cwnd(), 6 * MSS + 500);
    }

    #[test]
    fn halves_once_per_episode_then_grows_one_smss_per_window() {
        let mut r = Reno::new(&Config { mss: MSS, seed: 0 });
        send(&mut r, 0..40);
        for seq in 0..17 {
            r.on_ack(Time::ZERO, &ack(seq, MSS));
        }
        assert_eq!(r.cwnd(), 20 * MSS);
        // Loss with 20 packets in flight (19 after removing it): ssthresh = 10 SMSS.
        r.on_loss(Time::ZERO, &loss(17, 19 * MSS));
        assert_eq!((r.cwnd(), r.ssthresh()), (10 * MSS, 10 * MSS));
        assert!(r.in_recovery());
        r.on_loss(Time::ZERO, &loss(18, 18 * MSS));
        assert_eq!(r.cwnd(), 10 * MSS, "second loss of the same episode");
        r.on_ack(Time::ZERO, &ack(39, MSS)); // sent before the loss: still in recovery
        assert!(r.in_recovery());
        assert_eq!(r.cwnd(), 10 * MSS);
        send(&mut r, 40..80);
        r.on_ack(Time::ZERO, &ack(40, MSS)); // sent after: recovery over, counts 1 SMSS
        assert!(!r.in_recovery());
        for seq in 41..49 {
            r.on_ack(Time::ZERO, &ack(seq, MSS));
        }
        assert_eq!(r.cwnd(), 10 * MSS, "9 SMSS acknowledged of a 10 SMSS window");
        r.on_ack(Time::ZERO, &ack(49, MSS));
        assert_eq!(r.cwnd(), 11 * MSS);
        // A later loss is a new event; the floor is 2 SMSS.
        r.on_loss(Time::ZERO, &loss(50, 0));
        assert_eq!(r.cwnd(), 2 * MSS);
        assert_eq!(r.metrics().state, "recovery");
    }

    proptest! {
        #[test]
        fn random_events_keep_the_invariants(ops in ops()) {
            let mut r = Reno::new(&Config { mss: MSS, seed: 0 });
            drive(&mut r, &ops, 2 * MSS)?;
        }
    }
}
