//! Training an MDI model from any controller's behaviour in the simulator.
//!
//! [`Recorder`] wraps a controller: it forwards every event unchanged and, on the same 5 ms
//! epochs and with the same delay observation as the MDI controller ([`DelayEpochs`]), logs
//! each epoch's `Dmax` and the imitated controller's window at the epoch's end. [`Trainer`]
//! counts, over any number of such logs, how often each (previous state, new delay bucket)
//! was followed by each window bucket, and normalises the counts into a model.
//!
//! The window an algorithm "has" is its own notion ([`WindowSource`]): Verus's target window
//! `W` (its decision is an allowance, in flight plus what it may still send), Copa's `cwnd`,
//! and the decision's window for window-based algorithms.

use std::sync::{Arc, Mutex};

use crate::controller::Controller;
use crate::event::{AckSample, Decision, LossEvent, ReceiverReport, SenderHint, SentPacket};
use crate::metrics::Metrics;
use crate::time::Time;

use super::buckets::relative_change;
use super::epoch::{DelayEpochs, EPOCH};
use super::model::{Layout, MdiModel, ModelError};

/// One epoch of an imitated flow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EpochSample {
    /// The epoch's `Dmax`, ms.
    pub dmax_ms: f64,
    /// The imitated controller's window at the epoch's end, packets.
    pub window: f64,
}

/// Where the imitated controller's window is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowSource {
    /// The decision's window, in packets of the flow's MSS.
    Decision,
    /// A named value of [`Metrics::extra`], already in packets.
    Metric(&'static str),
}

impl WindowSource {
    /// The window of the algorithm `name`: Verus's `w`, Copa's `cwnd_packets`, otherwise the
    /// decision.
    pub fn for_algorithm(name: &str) -> WindowSource {
        match name {
            "verus" => WindowSource::Metric("w"),
            "copa" => WindowSource::Metric("cwnd_packets"),
            _ => WindowSource::Decision,
        }
    }

    fn read(self, controller: &dyn Controller, mss: u64) -> f64 {
        let from_decision = || controller.decision().window as f64 / mss.max(1) as f64;
        match self {
            WindowSource::Decision => from_decision(),
            WindowSource::Metric(name) => controller
                .metrics()
                .extra
                .iter()
                .find(|(n, _)| *n == name)
                .map_or_else(from_decision, |&(_, v)| v),
        }
    }
}

/// The epochs a [`Recorder`] logged, readable after the controller was moved into a run.
pub type EpochLog = Arc<Mutex<Vec<EpochSample>>>;

/// A controller wrapper that logs epochs (see the module docs).
pub struct Recorder {
    inner: Box<dyn Controller>,
    source: WindowSource,
    mss: u64,
    epochs: DelayEpochs,
    next_end: Option<Time>,
    window: f64,
    log: EpochLog,
}

impl Recorder {
    /// Wraps `inner` (whose packets are `mss` bytes); the epochs go to the returned log.
    pub fn new(inner: Box<dyn Controller>, source: WindowSource, mss: u64) -> (Recorder, EpochLog) {
        let log: EpochLog = Arc::default();
        let window = source.read(inner.as_ref(), mss);
        let recorder = Recorder {
            inner,
            source,
            mss,
            epochs: DelayEpochs::new(),
            next_end: None,
            window,
            log: Arc::clone(&log),
        };
        (recorder, log)
    }

    /// Closes every epoch that ended at or before `now`, with the window in effect then.
    fn catch_up(&mut self, now: Time) {
        let mut end = *self.next_end.get_or_insert(now + EPOCH);
        let mut closed = Vec::new();
        while end <= now {
            if let Some(dmax_ms) = self.epochs.close(end) {
                closed.push(EpochSample { dmax_ms, window: self.window });
            }
            end += EPOCH;
        }
        self.next_end = Some(end);
        if !closed.is_empty() {
            // A panic elsewhere cannot leave the Vec half-pushed.
            self.log.lock().unwrap_or_else(|e| e.into_inner()).extend(closed);
        }
    }

    fn after(&mut self) {
        self.window = self.source.read(self.inner.as_ref(), self.mss);
    }
}

impl Controller for Recorder {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn on_sent(&mut self, now: Time, packet: &SentPacket) -> u64 {
        self.catch_up(now);
        let memo = self.inner.on_sent(now, packet);
        self.after();
        memo
    }

    fn on_ack(&mut self, now: Time, ack: &AckSample) {
        self.catch_up(now);
        self.epochs.on_rtt(now, ack.rtt);
        self.inner.on_ack(now, ack);
        self.after();
    }

    fn on_loss(&mut self, now: Time, loss: &LossEvent) {
        self.catch_up(now);
        self.inner.on_loss(now, loss);
        self.after();
    }

    /// Forwarded; its RTT is not an epoch's sample (the trained states stay those of the
    /// packets the transport counted in flight).
    fn on_late_ack(&mut self, now: Time, ack: &AckSample) {
        self.catch_up(now);
        self.inner.on_late_ack(now, ack);
        self.after();
    }

    fn on_report(&mut self, now: Time, report: &ReceiverReport) {
        self.catch_up(now);
        self.inner.on_report(now, report);
        self.after();
    }

    fn on_timer(&mut self, now: Time) {
        self.catch_up(now);
        self.inner.on_timer(now);
        self.after();
    }

    fn next_timer(&self) -> Option<Time> {
        self.inner.next_timer()
    }

    fn decision(&self) -> Decision {
        self.inner.decision()
    }

    fn sender_hint(&self, now: Time) -> SenderHint {
        self.inner.sender_hint(now)
    }

    fn metrics(&self) -> Metrics {
        self.inner.metrics()
    }
}

/// Transition counts over any number of epoch logs.
#[derive(Clone, Debug)]
pub struct Trainer {
    layout: Layout,
    counts: Vec<u64>,
    transitions: u64,
}

impl Trainer {
    /// No transitions counted yet, for a model of `layout`.
    pub fn new(layout: Layout) -> Trainer {
        let n = layout.states();
        Trainer { layout, counts: vec![0; n * n], transitions: 0 }
    }

    /// Counts the transitions of one flow's consecutive epochs: epoch `k` gives the new delay
    /// bucket (`Dmax` of `k - 1` to `k`) and the window bucket that followed (window of `k - 1`
    /// to `k`), in the state that epoch `k - 1` left (its delay and window changes).
    pub fn add(&mut self, epochs: &[EpochSample]) {
        let (wb, db) = (self.layout.window, self.layout.delay);
        let n = self.layout.states();
        let nw = wb.count();
        for e in epochs.windows(3) {
            let d_prev = db.bucket_of(relative_change(e[0].dmax_ms, e[1].dmax_ms));
            let w_prev = wb.bucket_of(relative_change(e[0].window, e[1].window));
            let c = db.bucket_of(relative_change(e[1].dmax_ms, e[2].dmax_ms));
            let w_next = wb.bucket_of(relative_change(e[1].window, e[2].window));
            let row = self.layout.state(d_prev, w_prev);
            self.counts[row * n + c * nw + w_next] += 1;
            self.transitions += 1;
        }
    }

    /// Transitions counted so far.
    pub fn transitions(&self) -> u64 {
        self.transitions
    }

    /// The model: each (row, delay bucket) block divided by its total; unseen blocks stay 0.
    pub fn model(&self) -> Result<MdiModel, ModelError> {
        let nw = self.layout.window.count();
        let mut probs = Vec::with_capacity(self.counts.len());
        for block in self.counts.chunks(nw) {
            let total: u64 = block.iter().sum();
            probs.extend(block.iter().map(|&k| if total == 0 { 0.0 } else { k as f64 / total as f64 }));
        }
        MdiModel::new(self.layout, probs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixed::Fixed;
    use crate::mdi::buckets::Buckets;
    use std::time::Duration;

    fn layout() -> Layout {
        Layout { window: Buckets::new(2, -10, 0, 10).unwrap(), delay: Buckets::new(2, -10, 0, 10).unwrap() }
    }

    fn e(dmax_ms: f64, window: f64) -> EpochSample {
        EpochSample { dmax_ms, window }
    }

    #[test]
    fn counts_transitions_into_normalised_blocks() {
        let mut t = Trainer::new(layout());
        // Delay: 100 -> 110 (rose) -> 90 (fell) -> 95 (rose) -> 80 (fell).
        // Window: 10 -> 9 (shrink) -> 12 (grow) -> 11 (shrink) -> 13 (grow).
        t.add(&[e(100.0, 10.0), e(110.0, 9.0), e(90.0, 12.0), e(95.0, 11.0), e(80.0, 13.0)]);
        assert_eq!(t.transitions(), 3);
        let m = t.model().unwrap();
        // State (rose, shrink) = row 2; then "fell" -> grow, twice.
        assert_eq!(m.probability(2, 0, 1), 1.0);
        // State (fell, grow) = row 1; then "rose" -> shrink.
        assert_eq!(m.probability(1, 1, 0), 1.0);
        assert!(!m.seen(0, 0));
        // A second flow where (rose, shrink) then "fell" is followed by a shrink.
        t.add(&[e(100.0, 10.0), e(110.0, 9.0), e(90.0, 8.0)]);
        let m = t.model().unwrap();
        assert_eq!(m.probability(2, 0, 1), 2.0 / 3.0);
        assert_eq!(m.probability(2, 0, 0), 1.0 / 3.0);
    }

    #[test]
    fn an_empty_trainer_makes_no_model() {
        let t = Trainer::new(layout());
        assert!(t.model().is_err());
        let mut t = Trainer::new(layout());
        t.add(&[e(1.0, 1.0), e(2.0, 2.0)]);
        assert_eq!(t.transitions(), 0);
    }

    #[test]
    fn recorder_logs_dmax_and_the_window_at_each_epoch_end() {
        let inner = Box::new(Fixed::new(20_000, None));
        let (mut r, log) = Recorder::new(inner, WindowSource::Decision, 1000);
        let ack = |rtt_ms: u64| AckSample {
            seq: 0,
            bytes: 1000,
            sent_at: Time::ZERO,
            rtt: Duration::from_millis(rtt_ms),
            bytes_in_flight: 0,
            delivered: 1000,
            memo: 0,
        };
        r.on_timer(Time::from_millis(0)); // epochs end at 5, 10, ...
        r.on_ack(Time::from_millis(1), &ack(40));
        r.on_ack(Time::from_millis(4), &ack(45));
        r.on_ack(Time::from_millis(5), &ack(50)); // belongs to the epoch ending at 10
        r.on_timer(Time::from_millis(17)); // closes 10 and 15
        let epochs = log.lock().unwrap().clone();
        assert_eq!(epochs, vec![e(45.0, 20.0), e(50.0, 20.0), e(50.0, 20.0)]);
        assert_eq!(r.name(), "fixed");
        assert_eq!(r.decision().window, 20_000);
    }

    #[test]
    fn window_sources() {
        assert_eq!(WindowSource::for_algorithm("verus"), WindowSource::Metric("w"));
        assert_eq!(WindowSource::for_algorithm("reno"), WindowSource::Decision);
        let c = crate::registry::by_name("copa").unwrap();
        assert_eq!(WindowSource::Metric("cwnd_packets").read(c.as_ref(), 1448), 10.0);
        // A missing metric falls back to the decision.
        assert_eq!(WindowSource::Metric("nope").read(c.as_ref(), 1448), c.decision().window as f64 / 1448.0);
    }
}
