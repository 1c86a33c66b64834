//! One simulated flow over one bottleneck, in virtual time.
//!
//! The model (Mahimahi's, one direction congested): the sender is always backlogged; a packet it
//! sends enters the bottleneck queue at once (or is lost at random, or dropped by a full queue),
//! leaves at a delivery opportunity, and reaches the receiver one one-way delay later. The
//! receiver acknowledges every packet at once; acknowledgements (and receiver reports) cross an
//! uncongested return path with the same one-way delay. Losses are detected by the sender's
//! [`SentPackets`], as a real transport would.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use thiserror::Error;

use crate::controller::{Config, Controller, ReceiverModel};
use crate::event::{Arrival, ReceiverReport, SenderHint, SentPacket};
use crate::pacer::Pacer;
use crate::registry;
use crate::sent_packets::SentPackets;
use crate::sim::bottleneck::{Bottleneck, QueueLimit, Queued};
use crate::sim::capacity::Capacity;
use crate::sim::record::{DropCause, Outcome, PacketRecord, SimResult};
use crate::spec::SpecError;
use crate::time::Time;

/// Steps at one instant after which the simulator assumes a stuck deadline (see `Run::run`).
const STALL_LIMIT: u32 = 100_000;
/// How often the controller's window is sampled into [`SimResult::windows`].
const WINDOW_SAMPLE: Duration = Duration::from_millis(10);

/// Why a scenario could not run.
#[derive(Debug, Error)]
pub enum SimError {
    /// The controller specification was refused.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// A setting is out of range.
    #[error("invalid scenario: {0}")]
    Invalid(String),
}

/// A simulated link and the controller to drive over it.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The bottleneck's delivery opportunities.
    pub capacity: Capacity,
    /// One-way propagation delay, each way.
    pub one_way_delay: Duration,
    /// The bottleneck queue's limit.
    pub queue: QueueLimit,
    /// Probability that a packet is lost on the link (Bernoulli), in `[0, 1)`.
    pub loss: f64,
    /// Virtual time to simulate.
    pub duration: Duration,
    /// Seed for random loss and for the controller.
    pub seed: u64,
    /// Size of every data packet on the link, bytes (also the controller's MSS).
    pub packet_bytes: u64,
    /// Rate of the sender's own interface, Mbit/s: back-to-back packets leave it spaced by their
    /// serialization time, as from a real NIC (1000 by default).
    pub sender_mbps: f64,
}

impl Scenario {
    /// A scenario on `capacity` with the defaults of the project's scenario tests: 20 ms one-way
    /// delay, 1000-packet drop-tail queue, no loss, 60 s, seed 1, 1500-byte packets.
    pub fn new(capacity: Capacity) -> Scenario {
        Scenario {
            capacity,
            one_way_delay: Duration::from_millis(20),
            queue: QueueLimit::Packets(1000),
            loss: 0.0,
            duration: Duration::from_secs(60),
            seed: 1,
            packet_bytes: 1500,
            sender_mbps: 1000.0,
        }
    }

    /// The controller configuration this scenario builds controllers with.
    pub fn config(&self) -> Config {
        Config { mss: self.packet_bytes, seed: self.seed }
    }

    /// Runs the controller named by `spec` (and its receiver model, if it has one).
    pub fn run(&self, spec: &str) -> Result<SimResult, SimError> {
        let config = self.config();
        let controller = registry::build(spec, &config)?;
        let receiver = registry::build_receiver(spec, &config)?;
        self.run_with(controller, receiver)
    }

    /// Runs a given controller (and receiver model).
    pub fn run_with(
        &self,
        controller: Box<dyn Controller>,
        receiver: Option<Box<dyn ReceiverModel>>,
    ) -> Result<SimResult, SimError> {
        self.validate()?;
        Ok(Run::new(self, controller, receiver).run())
    }

    fn validate(&self) -> Result<(), SimError> {
        let bad = |m: &str| Err(SimError::Invalid(m.to_string()));
        if !(0.0..1.0).contains(&self.loss) {
            return bad("loss must be in [0, 1)");
        }
        if !(self.sender_mbps.is_finite() && self.sender_mbps > 0.0) {
            return bad("sender rate must be positive");
        }
        if self.packet_bytes == 0 || self.packet_bytes > 65_535 {
            return bad("packet size must be between 1 and 65535 bytes");
        }
        match &self.capacity {
            Capacity::ConstantMbps(r) if !(r.is_finite() && *r > 0.0) => bad("rate must be positive"),
            Capacity::Trace(ms) if ms.last().is_none_or(|&l| l == 0) => {
                bad("trace must be non-empty with a last timestamp above 0")
            }
            Capacity::Trace(ms) if ms.windows(2).any(|w| w[0] > w[1]) => bad("trace must be non-decreasing"),
            _ => Ok(()),
        }
    }
}

/// Something in transit, due at a time.
enum Event {
    /// Packet `id` reaches the receiver.
    Arrive(usize),
    /// The acknowledgement of packet `seq` reaches the sender.
    Ack(u64),
    /// A receiver report reaches the sender.
    Report(ReceiverReport),
}

/// Heap key: due time, then insertion order (FIFO among equal times).
type Key = Reverse<(Time, u64)>;

struct Run<'a> {
    scenario: &'a Scenario,
    end: Time,
    now: Time,
    controller: Box<dyn Controller>,
    receiver: Option<Box<dyn ReceiverModel>>,
    sent: SentPackets,
    pacer: Pacer,
    bottleneck: Bottleneck,
    opportunities: Vec<Time>,
    next_opportunity: usize,
    heap: BinaryHeap<(Key, usize)>,
    events: Vec<Option<Event>>,
    order: u64,
    rng: ChaCha8Rng,
    packets: Vec<PacketRecord>,
    hints: Vec<SenderHint>,
    windows: Vec<(Time, u64, Option<u64>)>,
    controller_fired_at: Option<Time>,
    receiver_fired_at: Option<Time>,
    /// When the sender's interface has finished serializing the last packet.
    nic_free_at: Time,
    nic_gap: Duration,
}

impl<'a> Run<'a> {
    fn new(
        s: &'a Scenario,
        controller: Box<dyn Controller>,
        receiver: Option<Box<dyn ReceiverModel>>,
    ) -> Self {
        let end = Time::ZERO + s.duration;
        let opportunities = s.capacity.opportunities().take_while(|&t| t < end).collect();
        Run {
            scenario: s,
            end,
            now: Time::ZERO,
            controller,
            receiver,
            sent: SentPackets::new(0),
            pacer: Pacer::new(),
            bottleneck: Bottleneck::new(s.queue),
            opportunities,
            next_opportunity: 0,
            heap: BinaryHeap::new(),
            events: Vec::new(),
            order: 0,
            rng: ChaCha8Rng::seed_from_u64(s.seed),
            packets: Vec::new(),
            hints: Vec::new(),
            windows: Vec::new(),
            controller_fired_at: None,
            receiver_fired_at: None,
            nic_free_at: Time::ZERO,
            nic_gap: Duration::from_secs_f64(s.packet_bytes as f64 * 8.0 / (s.sender_mbps * 1e6)),
        }
    }

    fn run(mut self) -> SimResult {
        let mut steps_at_this_instant = 0u32;
        loop {
            self.sample_window();
            self.send_allowed();
            let Some(mut next) = self.next_deadline() else { break };
            if next <= self.now {
                // A component that keeps asking for a deadline it does not act on would stall
                // virtual time; after many steps at one instant, time moves on by 1 µs.
                steps_at_this_instant += 1;
                if steps_at_this_instant > STALL_LIMIT {
                    next = self.now + Duration::from_micros(1);
                }
            }
            if next >= self.end {
                break;
            }
            if next > self.now {
                steps_at_this_instant = 0;
                self.now = next;
            }
            self.step();
        }
        SimResult {
            packets: self.packets,
            opportunities: self.opportunities,
            duration: self.scenario.duration,
            windows: self.windows,
        }
    }

    /// The earliest time anything can happen.
    fn next_deadline(&self) -> Option<Time> {
        let mut next: Option<Time> = None;
        let mut consider = |t: Option<Time>| {
            if let Some(t) = t {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        };
        consider(self.heap.peek().map(|(Reverse((t, _)), _)| *t));
        if !self.bottleneck.is_empty() {
            consider(self.opportunities.get(self.next_opportunity).copied());
        }
        consider(self.after_fired(self.controller.next_timer(), self.controller_fired_at));
        let receiver_timer = self.receiver.as_ref().and_then(|r| r.next_timer());
        consider(self.after_fired(receiver_timer, self.receiver_fired_at));
        consider(self.sent.loss_deadline());
        consider(self.send_deadline());
        next
    }

    /// A timer that already fired at `now` is not fired again until time moves on.
    fn after_fired(&self, timer: Option<Time>, fired_at: Option<Time>) -> Option<Time> {
        let t = timer?;
        if fired_at == Some(self.now) && t <= self.now {
            Some(self.now + Duration::from_micros(1))
        } else {
            Some(t)
        }
    }

    /// When the sender could next send, if only the pacer or its interface holds it back.
    fn send_deadline(&self) -> Option<Time> {
        let d = self.controller.decision();
        if self.sent.bytes_in_flight().saturating_add(self.scenario.packet_bytes) > d.window {
            return None; // window-limited: an acknowledgement or loss will change that
        }
        let ready = self.pacer.earliest().max(self.nic_free_at);
        (ready > self.now).then_some(ready)
    }

    fn step(&mut self) {
        let now = self.now;
        while let Some((Reverse((t, _)), index)) = self.heap.peek().copied() {
            if t > now {
                break;
            }
            self.heap.pop();
            if let Some(event) = self.events[index].take() {
                self.handle(event);
            }
        }
        while !self.bottleneck.is_empty()
            && self.opportunities.get(self.next_opportunity).is_some_and(|&t| t <= now)
        {
            self.next_opportunity += 1;
            self.serve_opportunity();
        }
        if let Some(receiver) = self.receiver.as_mut() {
            if receiver.next_timer().is_some_and(|t| t <= now) && self.receiver_fired_at != Some(now) {
                receiver.on_timer(now);
                self.receiver_fired_at = Some(now);
                self.forward_report();
            }
        }
        if self.controller.next_timer().is_some_and(|t| t <= now) && self.controller_fired_at != Some(now) {
            self.controller.on_timer(now);
            self.controller_fired_at = Some(now);
        }
        for loss in self.sent.detect_losses(now) {
            self.controller.on_loss(now, &loss);
        }
    }

    fn handle(&mut self, event: Event) {
        let now = self.now;
        match event {
            Event::Arrive(id) => {
                let record = self.packets[id];
                if let Some(receiver) = self.receiver.as_mut() {
                    let arrival = Arrival { seq: record.seq, bytes: record.bytes, hint: self.hints[id] };
                    receiver.on_arrival(now, &arrival);
                }
                self.schedule(now + self.scenario.one_way_delay, Event::Ack(record.seq));
                self.forward_report();
            }
            Event::Ack(seq) => {
                if let Some(sample) = self.sent.on_ack(now, seq) {
                    self.controller.on_ack(now, &sample);
                }
            }
            Event::Report(report) => self.controller.on_report(now, &report),
        }
    }

    fn forward_report(&mut self) {
        let now = self.now;
        if let Some(report) = self.receiver.as_mut().and_then(|r| r.take_report(now)) {
            self.schedule(now + self.scenario.one_way_delay, Event::Report(report));
        }
    }

    fn serve_opportunity(&mut self) {
        let now = self.now;
        let delay = self.scenario.one_way_delay;
        let mut departed = Vec::new();
        self.bottleneck.serve(|q| departed.push(q.id));
        for id in departed {
            let arrived = now + delay;
            self.packets[id].outcome = Outcome::Delivered { departed: now, arrived };
            self.schedule(arrived, Event::Arrive(id));
        }
    }

    /// Sends the packet the window, the pacer and the interface allow now, if any. As in the
    /// engine, a flow held by its window or by its interface (the engine's full socket) is
    /// idle to the pacer: it gets no catch-up credit for that time.
    fn send_allowed(&mut self) {
        let bytes = self.scenario.packet_bytes;
        if !self.window_allows(bytes) {
            self.pacer.on_idle();
            return;
        }
        if !self.pacer.ready(self.now) {
            return;
        }
        if self.nic_free_at > self.now {
            self.pacer.on_idle();
            return;
        }
        self.send_one(bytes, self.controller.decision().pacing_rate);
        self.nic_free_at = self.now + self.nic_gap;
        // The engine's write loop looks at the window again at once; so does the simulator: a
        // flow whose window this packet filled waits for its window, not for the pacer.
        if !self.window_allows(bytes) {
            self.pacer.on_idle();
        }
    }

    /// Whether the controller's window has room for another packet of `bytes`.
    fn window_allows(&self, bytes: u64) -> bool {
        self.sent.bytes_in_flight().saturating_add(bytes) <= self.controller.decision().window
    }

    fn send_one(&mut self, bytes: u64, rate: Option<u64>) {
        let now = self.now;
        let seq = self.sent.next_seq();
        let hint = self.controller.sender_hint(now);
        let sent = SentPacket { seq, bytes, bytes_in_flight: self.sent.bytes_in_flight() + bytes };
        let memo = self.controller.on_sent(now, &sent);
        self.sent.on_sent(seq, bytes, now, memo);
        self.pacer.on_send(now, bytes, rate);
        let id = self.packets.len();
        let mut record = PacketRecord { seq, bytes, sent: now, outcome: Outcome::InFlight };
        if self.scenario.loss > 0.0 && self.rng.random_bool(self.scenario.loss) {
            record.outcome = Outcome::Dropped { at: now, cause: DropCause::Random };
        } else {
            let was_empty = self.bottleneck.is_empty();
            if self.bottleneck.enqueue(Queued { id, bytes, enqueued_at: now }) {
                if was_empty {
                    // Opportunities that passed while the queue was empty were wasted.
                    while self.opportunities.get(self.next_opportunity).is_some_and(|&t| t < now) {
                        self.next_opportunity += 1;
                    }
                }
            } else {
                record.outcome = Outcome::Dropped { at: now, cause: DropCause::Queue };
            }
        }
        self.packets.push(record);
        self.hints.push(hint);
    }

    fn schedule(&mut self, at: Time, event: Event) {
        let index = self.events.len();
        self.events.push(Some(event));
        self.heap.push((Reverse((at, self.order)), index));
        self.order += 1;
    }

    fn sample_window(&mut self) {
        let due = self.windows.last().is_none_or(|&(t, _, _)| self.now >= t + WINDOW_SAMPLE);
        if due {
            let d = self.controller.decision();
            self.windows.push((self.now, d.window, d.pacing_rate));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixed::Fixed;

    fn fixed(packets: u64) -> Box<dyn Controller> {
        Box::new(Fixed::new(packets * 1500, None))
    }

    fn delivered_mbps(r: &SimResult) -> f64 {
        let bytes: u64 = r
            .packets
            .iter()
            .filter(|p| matches!(p.outcome, Outcome::Delivered { .. }))
            .map(|p| p.bytes)
            .sum();
        bytes as f64 * 8.0 / r.duration.as_secs_f64() / 1e6
    }

    #[test]
    fn window_limited_flow_gets_window_over_rtt() {
        // 20 packets per 40 ms round trip = 6 Mbit/s on a 12 Mbit/s link, no queueing.
        let mut s = Scenario::new(Capacity::ConstantMbps(12.0));
        s.duration = Duration::from_secs(10);
        let r = s.run_with(fixed(20), None).unwrap();
        let mbps = delivered_mbps(&r);
        assert!((mbps - 6.0).abs() < 0.1, "{mbps}");
        // After the initial burst of 20 (queued at 1 packet/ms) has drained, nothing queues.
        let steady = r.packets.iter().filter(|p| p.sent >= Time::from_millis(100));
        let max_delay = steady.filter_map(|p| p.one_way_delay()).max().unwrap();
        assert!(max_delay <= Duration::from_millis(21), "{max_delay:?}");
        assert_eq!(r.opportunities.len(), 10_000);
    }

    #[test]
    fn excess_window_becomes_standing_queue() {
        // 100 packets in flight, 40 fit in the pipe (BDP), 60 queue: 60 ms of queueing at 1 pkt/ms.
        let mut s = Scenario::new(Capacity::ConstantMbps(12.0));
        s.duration = Duration::from_secs(10);
        let r = s.run_with(fixed(100), None).unwrap();
        let mbps = delivered_mbps(&r);
        assert!(mbps > 11.8, "{mbps}");
        let last = r.packets.iter().rev().find_map(|p| p.one_way_delay()).unwrap();
        let expected = Duration::from_millis(20 + 60);
        assert!(last.abs_diff(expected) <= Duration::from_millis(2), "{last:?}");
    }

    #[test]
    fn drop_tail_and_random_loss_are_recorded() {
        let mut s = Scenario::new(Capacity::ConstantMbps(12.0));
        s.duration = Duration::from_secs(5);
        s.queue = QueueLimit::Packets(10);
        let r = s.run_with(fixed(200), None).unwrap();
        assert!(r
            .packets
            .iter()
            .any(|p| matches!(p.outcome, Outcome::Dropped { cause: DropCause::Queue, .. })));

        let mut s = Scenario::new(Capacity::ConstantMbps(12.0));
        s.duration = Duration::from_secs(20);
        s.loss = 0.05;
        let r = s.run_with(fixed(30), None).unwrap();
        let random = r
            .packets
            .iter()
            .filter(|p| matches!(p.outcome, Outcome::Dropped { cause: DropCause::Random, .. }))
            .count() as f64;
        let rate = random / r.packets.len() as f64;
        assert!((rate - 0.05).abs() < 0.01, "{rate}");
    }

    #[test]
    fn same_seed_same_run() {
        let mut s = Scenario::new(Capacity::Trace(vec![1, 3, 3, 7, 10]));
        s.duration = Duration::from_secs(3);
        s.loss = 0.01;
        let a = s.run_with(fixed(8), None).unwrap();
        let b = s.run_with(fixed(8), None).unwrap();
        assert_eq!(a.packets, b.packets);
    }

    #[test]
    fn unbounded_window_does_not_stall() {
        let mut s = Scenario::new(Capacity::ConstantMbps(12.0));
        s.duration = Duration::from_millis(60);
        let r = s.run("fixed").unwrap();
        // The 1 Gbit/s interface spaces packets by 12 µs: 5000 in 60 ms.
        assert!((r.packets.len() as i64 - 5000).abs() <= 1, "{}", r.packets.len());
    }

    #[test]
    fn invalid_settings_are_errors() {
        let mut s = Scenario::new(Capacity::Trace(vec![]));
        assert!(matches!(s.run("fixed"), Err(SimError::Invalid(_))));
        s.capacity = Capacity::ConstantMbps(12.0);
        s.loss = 1.0;
        assert!(matches!(s.run("fixed"), Err(SimError::Invalid(_))));
        s.loss = 0.0;
        assert!(matches!(s.run("nope"), Err(SimError::Spec(_))));
    }
}
