//! Batched delivery: a Python controller hears of acknowledgements once per N of them, or once
//! per round trip, instead of once per acknowledgement (issue 16: per-ACK calls cost ~1-2 us
//! each, which a fast flow may not afford).
//!
//! [`Batched`] runs on the driver thread like inline delivery, but collects ACK samples in an
//! [`AckBatch`] and calls `on_ack` once per batch with their sum: `ack.bytes` is the batch's
//! bytes, `ack.count` the number of ACKs in it, `ack.rtt` the latest sample and `ack.min_rtt`
//! the smallest; `seq`, `sent_at`, `bytes_in_flight`, `delivered` and `memo` are the latest
//! ACK's. So totals (bytes, `delivered`, counts) are the same as per-ACK delivery. `on_sent` is
//! not batched; a loss or a timer of the controller's delivers the pending batch first, so the
//! controller sees events in order. A batch that stops growing is delivered one RTT (its latest
//! sample) after its first ACK at the latest, through the driver's timer.

use std::time::Duration;

use alcc_cc::event::{AckSample, Decision, LossEvent, SentPacket};
use alcc_cc::metrics::Metrics;
use alcc_cc::time::Time;
use alcc_cc::{Controller, RttSamples};
use thiserror::Error;

use crate::controller::PyController;

/// When a batch is delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchRule {
    /// Once this many ACKs are collected (or one RTT after the first, whichever comes first).
    Acks(u32),
    /// One RTT (the latest sample) after the batch's first ACK.
    Rtt,
}

/// A batch spec that is neither `acks=N` (N >= 1) nor `rtt`.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("a batch is acks=N (N >= 1) or rtt, not `{0}`")]
pub struct BadBatchRule(pub String);

impl std::str::FromStr for BatchRule {
    type Err = BadBatchRule;

    /// `acks=N` or `rtt`.
    fn from_str(text: &str) -> Result<BatchRule, BadBatchRule> {
        match text {
            "rtt" => Ok(BatchRule::Rtt),
            _ => text
                .strip_prefix("acks=")
                .and_then(|n| n.parse().ok())
                .filter(|n| *n >= 1)
                .map(BatchRule::Acks)
                .ok_or_else(|| BadBatchRule(text.into())),
        }
    }
}

impl BatchRule {
    /// Whether `batch` is due at `now`.
    fn due(self, batch: &AckBatch, now: Time) -> bool {
        match self {
            BatchRule::Acks(n) => batch.count >= u64::from(n) || now >= batch.deadline(),
            BatchRule::Rtt => now >= batch.deadline(),
        }
    }
}

/// ACK samples summed for one `on_ack` call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckBatch {
    /// The latest sample, with `bytes` replaced by the batch's sum.
    pub last: AckSample,
    /// ACKs in the batch.
    pub count: u64,
    /// The smallest RTT sample in the batch.
    pub min_rtt: Duration,
    /// When the batch's first ACK arrived.
    pub first_at: Time,
}

impl AckBatch {
    /// A batch of one ACK that arrived at `now`.
    pub fn new(now: Time, ack: &AckSample) -> AckBatch {
        AckBatch { last: *ack, count: 1, min_rtt: ack.rtt, first_at: now }
    }

    /// Adds the next ACK.
    pub fn add(&mut self, ack: &AckSample) {
        let bytes = self.last.bytes + ack.bytes;
        self.last = AckSample { bytes, ..*ack };
        self.count += 1;
        self.min_rtt = self.min_rtt.min(ack.rtt);
    }

    /// When the batch is delivered at the latest: one RTT after its first ACK.
    pub fn deadline(&self) -> Time {
        self.first_at.saturating_add(self.last.rtt)
    }
}

/// A Python controller whose ACKs are delivered in batches (see the module documentation).
pub struct Batched {
    inner: PyController,
    rule: BatchRule,
    pending: Option<AckBatch>,
}

impl Batched {
    /// `inner` under `rule`.
    pub fn new(inner: PyController, rule: BatchRule) -> Batched {
        Batched { inner, rule, pending: None }
    }

    /// Delivers the pending batch, if any.
    fn flush(&mut self, now: Time) {
        if let Some(batch) = self.pending.take() {
            self.inner.on_ack_batch(now, &batch);
        }
    }
}

impl Controller for Batched {
    fn name(&self) -> &'static str {
        "python"
    }

    fn on_sent(&mut self, now: Time, packet: &SentPacket) -> u64 {
        self.inner.on_sent(now, packet)
    }

    fn on_ack(&mut self, now: Time, ack: &AckSample) {
        match &mut self.pending {
            Some(batch) => batch.add(ack),
            None => self.pending = Some(AckBatch::new(now, ack)),
        }
        if self.pending.is_some_and(|b| self.rule.due(&b, now)) {
            self.flush(now);
        }
    }

    fn on_loss(&mut self, now: Time, loss: &LossEvent) {
        self.flush(now);
        self.inner.on_loss(now, loss);
    }

    fn on_timer(&mut self, now: Time) {
        if self.pending.is_some_and(|b| now >= b.deadline()) {
            self.flush(now);
        }
        if self.inner.next_timer().is_some_and(|t| t <= now) {
            self.flush(now);
            self.inner.on_timer(now);
        }
    }

    fn next_timer(&self) -> Option<Time> {
        let batch = self.pending.map(|b| b.deadline());
        match (batch, self.inner.next_timer()) {
            (Some(b), Some(t)) => Some(b.min(t)),
            (b, t) => b.or(t),
        }
    }

    fn rtt_samples(&self) -> RttSamples {
        self.inner.rtt_samples()
    }

    fn decision(&self) -> Decision {
        self.inner.decision()
    }

    fn metrics(&self) -> Metrics {
        self.inner.metrics()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(seq: u64, rtt_ms: u64) -> AckSample {
        AckSample {
            seq,
            bytes: 1000,
            sent_at: Time::from_millis(seq),
            rtt: Duration::from_millis(rtt_ms),
            bytes_in_flight: 5000,
            delivered: 1000 * (seq + 1),
            memo: seq,
        }
    }

    #[test]
    fn a_batch_sums_bytes_counts_acks_and_keeps_the_latest_sample() {
        let mut b = AckBatch::new(Time::from_millis(10), &ack(0, 30));
        b.add(&ack(1, 20));
        b.add(&ack(2, 25));
        assert_eq!((b.last.bytes, b.count, b.last.delivered, b.last.seq), (3000, 3, 3000, 2));
        assert_eq!((b.min_rtt, b.last.rtt), (Duration::from_millis(20), Duration::from_millis(25)));
        assert_eq!(b.deadline(), Time::from_millis(35));
    }

    #[test]
    fn rules_parse_and_say_when_a_batch_is_due() {
        assert_eq!("acks=8".parse(), Ok(BatchRule::Acks(8)));
        assert_eq!("rtt".parse(), Ok(BatchRule::Rtt));
        for bad in ["acks=0", "acks=x", "every", ""] {
            assert_eq!(bad.parse::<BatchRule>(), Err(BadBatchRule(bad.into())));
        }
        let mut b = AckBatch::new(Time::from_millis(0), &ack(0, 10));
        b.add(&ack(1, 10));
        assert!(BatchRule::Acks(2).due(&b, Time::from_millis(1)));
        assert!(!BatchRule::Acks(3).due(&b, Time::from_millis(1)));
        assert!(BatchRule::Acks(3).due(&b, Time::from_millis(10)));
        assert!(!BatchRule::Rtt.due(&b, Time::from_millis(9)));
        assert!(BatchRule::Rtt.due(&b, Time::from_millis(10)));
    }
}
