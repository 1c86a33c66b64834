//! Coupled flows in the simulator: [`Grouped`], a controller in a flow group coupled after
//! every event the way the engine's driver couples it (crates/alcc/src/flow/control.rs), and
//! [`Probe`], which samples a controller's state for a test to read.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use alcc_cc::fse::{Coupling, FlowGroup, FlowId, Share};
use alcc_cc::{AckSample, Controller, Decision, LossEvent, Metrics, SentPacket, Time};

/// A controller in a flow group, coupled after every event the way the engine's driver does.
pub struct Grouped {
    pub inner: Box<dyn Controller>,
    pub group: Arc<Mutex<FlowGroup>>,
    pub id: Option<FlowId>,
    pub weight: f64,
    pub coupling: Coupling,
    pub mss: u64,
    /// The last RTT sample, for controllers that keep no smoothed RTT (the engine reads the
    /// kernel's instead).
    pub sample: Duration,
}

impl Grouped {
    pub fn new(inner: Box<dyn Controller>, group: Arc<Mutex<FlowGroup>>, weight: f64) -> Grouped {
        Grouped {
            inner,
            group,
            id: None,
            weight,
            coupling: Coupling::new(),
            mss: 1500,
            sample: Duration::ZERO,
        }
    }

    pub fn couple(&mut self, now: Time) {
        let rtt = self.inner.metrics().srtt.unwrap_or(self.sample);
        couple_with(self, now, rtt);
    }
}

/// One coupling step of `g` at `now` with `rtt`, as the engine's `Control::couple`.
pub fn couple_with(g: &mut Grouped, now: Time, rtt: Duration) {
    let Some(rate) = g.coupling.observe(g.inner.as_ref(), rtt) else { return };
    let mut grp = g.group.lock().unwrap();
    if g.inner.take_drain_start() && g.id.is_some() {
        g.coupling.drained(grp.drain());
    }
    let share = match g.id {
        None => {
            let id = grp.join(g.weight, rate).unwrap();
            g.coupling.take_change();
            g.id = Some(id);
            grp.rate(id).unwrap()
        }
        Some(id) => grp.change(id, g.coupling.take_change()).unwrap(),
    };
    let mean = if grp.len() == 1 { share } else { grp.aggregate() / grp.len() as f64 };
    let drains = grp.drains();
    drop(grp);
    g.coupling.follow_drains(now, drains, g.inner.as_mut());
    g.coupling.apply(now, Share { rate: share, rtt }, mean, g.inner.as_mut(), g.mss);
}

impl Controller for Grouped {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn on_sent(&mut self, now: Time, packet: &SentPacket) -> u64 {
        self.inner.on_sent(now, packet)
    }
    fn on_ack(&mut self, now: Time, ack: &AckSample) {
        self.inner.on_ack(now, ack);
        self.sample = ack.rtt;
        self.couple(now);
    }
    fn on_loss(&mut self, now: Time, loss: &LossEvent) {
        self.inner.on_loss(now, loss);
        self.couple(now);
    }
    fn on_timer(&mut self, now: Time) {
        self.inner.on_timer(now);
        self.couple(now);
    }
    fn next_timer(&self) -> Option<Time> {
        self.inner.next_timer()
    }
    fn decision(&self) -> Decision {
        self.coupling.decision(self.inner.as_ref())
    }
    fn metrics(&self) -> Metrics {
        self.inner.metrics()
    }
}

/// One sample of a controller's state.
#[derive(Clone, Debug)]
pub struct Sample {
    pub at: Time,
    pub state: &'static str,
    pub metrics: Metrics,
}

/// Samples the wrapped controller's metrics after an ACK, at most once per `every`.
pub struct Probe {
    pub inner: Box<dyn Controller>,
    pub every: Duration,
    pub samples: Arc<Mutex<Vec<Sample>>>,
}

impl Probe {
    pub fn new(inner: Box<dyn Controller>, every: Duration) -> (Probe, Arc<Mutex<Vec<Sample>>>) {
        let samples = Arc::new(Mutex::new(Vec::new()));
        (Probe { inner, every, samples: samples.clone() }, samples)
    }
}

impl Controller for Probe {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn on_sent(&mut self, now: Time, packet: &SentPacket) -> u64 {
        self.inner.on_sent(now, packet)
    }
    fn on_ack(&mut self, now: Time, ack: &AckSample) {
        self.inner.on_ack(now, ack);
        let mut s = self.samples.lock().unwrap();
        if s.last().is_none_or(|l| now >= l.at + self.every) {
            let metrics = self.inner.metrics();
            s.push(Sample { at: now, state: metrics.state, metrics });
        }
    }
    fn on_loss(&mut self, now: Time, loss: &LossEvent) {
        self.inner.on_loss(now, loss);
    }
    fn on_timer(&mut self, now: Time) {
        self.inner.on_timer(now);
    }
    fn next_timer(&self) -> Option<Time> {
        self.inner.next_timer()
    }
    fn decision(&self) -> Decision {
        self.inner.decision()
    }
    fn metrics(&self) -> Metrics {
        self.inner.metrics()
    }
    fn adopt_share(&mut self, now: Time, share: &Share) {
        self.inner.adopt_share(now, share);
    }
    fn take_drain_start(&mut self) -> bool {
        self.inner.take_drain_start()
    }
    fn drain_with_group(&mut self, now: Time) {
        self.inner.drain_with_group(now);
    }
}
