//! One simulated flow over one bottleneck, in virtual time.
//!
//! The model (Mahimahi's): the sender is always backlogged; a packet it sends enters the
//! bottleneck queue at once (or is lost at random, or dropped by a full queue), leaves at a
//! delivery opportunity, and reaches the receiver one one-way delay later. The receiver
//! acknowledges as its [`AckPolicy`] says (every packet at once by default; or delayed as a TCP
//! receiver does), each acknowledgement covering every packet received so far. Acknowledgements
//! and receiver reports go back over the [`ReturnPath`]: by default an uncongested path with the
//! same one-way delay; or a trace-driven link with its own queue (Mahimahi's uplink), where
//! acknowledgements wait through the trace's gaps and leave in bursts (ACK compression), and
//! may be lost at random (`return_loss`). Losses are detected by the sender's
//! [`SentPackets`], as a real transport would.

use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use thiserror::Error;

use crate::controller::{Config, Controller, ReceiverModel};
use crate::event::{Arrival, ReceiverReport, SenderHint, SentPacket};
use crate::pacer::Pacer;
use crate::registry;
use crate::sent_packets::SentPackets;
use crate::sim::ack::{AckClock, AckPolicy};
use crate::sim::bottleneck::{QueueLimit, Queued};
use crate::sim::capacity::Capacity;
use crate::sim::clock::{after_fired, Advance};
use crate::sim::events::EventQueue;
use crate::sim::link::ServedQueue;
use crate::sim::record::{AckRecord, DropCause, Outcome, PacketRecord, SimResult};
use crate::spec::SpecError;
use crate::time::Time;

/// How often the controller's window is sampled into [`SimResult::windows`].
const WINDOW_SAMPLE: Duration = Duration::from_millis(10);

/// Bytes of an acknowledgement on the return link: an IPv4 and a TCP header with the
/// timestamps option (20 + 20 + 12), what a pure TCP ACK is on the emulator's uplink.
pub const ACK_BYTES: u64 = 52;

/// Bytes of a receiver report on the return link: an acknowledgement carrying framed mode's
/// Sprout report (a 6-byte frame header and the 58-byte body of 8 counts, docs/wire-format.md),
/// rounded up.
pub const REPORT_BYTES: u64 = 120;

/// The path acknowledgements and receiver reports take back to the sender.
#[derive(Clone, Debug, PartialEq)]
pub enum ReturnPath {
    /// Uncongested: everything arrives one one-way delay after the receiver sent it.
    Free,
    /// A trace-driven link with its own drop-tail queue, then the one-way delay (the
    /// emulator's uplink). Acknowledgements take [`ACK_BYTES`], reports [`REPORT_BYTES`].
    Shaped {
        /// The return link's delivery opportunities.
        capacity: Capacity,
        /// Its queue's limit.
        queue: QueueLimit,
    },
}
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
    /// When the receiver acknowledges ([`AckPolicy::EveryPacket`] by default).
    pub acks: AckPolicy,
    /// The path back to the sender ([`ReturnPath::Free`] by default).
    pub return_path: ReturnPath,
    /// Probability that an acknowledgement or report is lost on the return path, in `[0, 1)`.
    pub return_loss: f64,
}

impl Scenario {
    /// A scenario on `capacity` with the defaults of the project's scenario tests: 20 ms one-way
    /// delay, 1000-packet drop-tail queue, no loss, 60 s, seed 1, 1500-byte packets, every
    /// packet acknowledged at once over an uncongested return path.
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
            acks: AckPolicy::EveryPacket,
            return_path: ReturnPath::Free,
            return_loss: 0.0,
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
        self.validate_settings()?;
        Ok(Run::new(self, controller, receiver).run())
    }

    /// Checks the settings every run needs (rates, sizes, probabilities).
    pub(crate) fn validate_settings(&self) -> Result<(), SimError> {
        let bad = |m: &str| Err(SimError::Invalid(m.to_string()));
        if !(0.0..1.0).contains(&self.loss) {
            return bad("loss must be in [0, 1)");
        }
        if !(0.0..1.0).contains(&self.return_loss) {
            return bad("return loss must be in [0, 1)");
        }
        if let AckPolicy::Delayed(d) = self.acks {
            if d.every == 0 || d.timeout.is_zero() {
                return bad("delayed acknowledgements need every >= 1 and a timer above 0");
            }
        }
        if let ReturnPath::Shaped { capacity, .. } = &self.return_path {
            validate_capacity(capacity).map_err(|m| SimError::Invalid(format!("return path: {m}")))?;
        }
        if !(self.sender_mbps.is_finite() && self.sender_mbps > 0.0) {
            return bad("sender rate must be positive");
        }
        if self.packet_bytes == 0 || self.packet_bytes > 65_535 {
            return bad("packet size must be between 1 and 65535 bytes");
        }
        validate_capacity(&self.capacity).map_err(|m| SimError::Invalid(m.to_string()))
    }
}

fn validate_capacity(capacity: &Capacity) -> Result<(), &'static str> {
    match capacity {
        Capacity::ConstantMbps(r) if !(r.is_finite() && *r > 0.0) => Err("rate must be positive"),
        Capacity::Trace(ms) if ms.last().is_none_or(|&l| l == 0) => {
            Err("trace must be non-empty with a last timestamp above 0")
        }
        Capacity::Trace(ms) if ms.windows(2).any(|w| w[0] > w[1]) => Err("trace must be non-decreasing"),
        _ => Ok(()),
    }
}

/// Something in transit, due at a time.
enum Event {
    /// Packet `id` reaches the receiver.
    Arrive(usize),
    /// Something the receiver sent reaches the sender.
    Back(Back),
}

/// What the receiver sends back.
enum Back {
    /// A cumulative acknowledgement of the first `through` packets the receiver got.
    Ack {
        /// How many arrivals it covers.
        through: usize,
    },
    /// A receiver report.
    Report(ReceiverReport),
}

impl Back {
    fn bytes(&self) -> u64 {
        match self {
            Back::Ack { .. } => ACK_BYTES,
            Back::Report(_) => REPORT_BYTES,
        }
    }
}

/// The return path as the run drives it.
enum ReturnLink {
    Free,
    Shaped {
        queue: ServedQueue,
        /// What waits in the queue, by the id the queue carries.
        waiting: Vec<Option<Back>>,
    },
}

struct Run<'a> {
    scenario: &'a Scenario,
    end: Time,
    now: Time,
    controller: Box<dyn Controller>,
    receiver: Option<Box<dyn ReceiverModel>>,
    sent: SentPackets,
    pacer: Pacer,
    bottleneck: ServedQueue,
    queue: EventQueue<Event>,
    rng: ChaCha8Rng,
    packets: Vec<PacketRecord>,
    hints: Vec<SenderHint>,
    windows: Vec<(Time, u64, Option<u64>)>,
    controller_fired_at: Option<Time>,
    receiver_fired_at: Option<Time>,
    /// When the sender's interface has finished serializing the last packet.
    nic_free_at: Time,
    nic_gap: Duration,
    /// The receiver's acknowledgement state.
    ack_clock: AckClock,
    /// Sequence numbers in the order the receiver got them.
    received: Vec<u64>,
    highest_received: Option<u64>,
    /// How many of `received` the sender has seen acknowledged.
    acked_through: usize,
    return_link: ReturnLink,
    acks: Vec<AckRecord>,
    return_drops: u64,
}

impl<'a> Run<'a> {
    fn new(
        s: &'a Scenario,
        controller: Box<dyn Controller>,
        receiver: Option<Box<dyn ReceiverModel>>,
    ) -> Self {
        let end = Time::ZERO + s.duration;
        let return_link = match &s.return_path {
            ReturnPath::Free => ReturnLink::Free,
            ReturnPath::Shaped { capacity, queue } => {
                ReturnLink::Shaped { queue: ServedQueue::new(capacity, *queue, end), waiting: Vec::new() }
            }
        };
        Run {
            scenario: s,
            end,
            now: Time::ZERO,
            controller,
            receiver,
            sent: SentPackets::new(0),
            pacer: Pacer::new(),
            bottleneck: ServedQueue::new(&s.capacity, s.queue, end),
            queue: EventQueue::new(),
            rng: ChaCha8Rng::seed_from_u64(s.seed),
            packets: Vec::new(),
            hints: Vec::new(),
            windows: Vec::new(),
            controller_fired_at: None,
            receiver_fired_at: None,
            nic_free_at: Time::ZERO,
            nic_gap: Duration::from_secs_f64(s.packet_bytes as f64 * 8.0 / (s.sender_mbps * 1e6)),
            ack_clock: s.acks.receiver(),
            received: Vec::new(),
            highest_received: None,
            acked_through: 0,
            return_link,
            acks: Vec::new(),
            return_drops: 0,
        }
    }

    fn run(mut self) -> SimResult {
        let mut advance = Advance::default();
        loop {
            self.sample_window();
            self.send_allowed();
            let Some(next) = self.next_deadline() else { break };
            if !advance.to(&mut self.now, next, self.end) {
                break;
            }
            self.step();
        }
        let return_opportunities = match &self.return_link {
            ReturnLink::Free => Vec::new(),
            ReturnLink::Shaped { queue, .. } => queue.opportunities().to_vec(),
        };
        SimResult {
            packets: self.packets,
            opportunities: self.bottleneck.opportunities().to_vec(),
            duration: self.scenario.duration,
            windows: self.windows,
            acks: self.acks,
            return_opportunities,
            return_drops: self.return_drops,
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
        consider(self.queue.next_due());
        consider(self.bottleneck.deadline());
        if let ReturnLink::Shaped { queue, .. } = &self.return_link {
            consider(queue.deadline());
        }
        consider(self.ack_clock.deadline());
        consider(after_fired(self.now, self.controller.next_timer(), self.controller_fired_at));
        let receiver_timer = self.receiver.as_ref().and_then(|r| r.next_timer());
        consider(after_fired(self.now, receiver_timer, self.receiver_fired_at));
        consider(self.sent.loss_deadline());
        consider(self.send_deadline());
        next
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
        while let Some(event) = self.queue.pop_due(now) {
            self.handle(event);
        }
        let delay = self.scenario.one_way_delay;
        let mut departed = Vec::new();
        self.bottleneck.serve_due(now, |q| departed.push(q.id));
        for id in departed {
            let arrived = now + delay;
            self.packets[id].outcome = Outcome::Delivered { departed: now, arrived };
            self.schedule(arrived, Event::Arrive(id));
        }
        if let ReturnLink::Shaped { queue, waiting } = &mut self.return_link {
            let mut back = Vec::new();
            queue.serve_due(now, |q| back.extend(waiting[q.id].take()));
            for item in back {
                self.schedule(now + delay, Event::Back(item));
            }
        }
        if self.ack_clock.deadline().is_some_and(|t| t <= now) {
            self.send_ack();
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
                let out_of_order = self.highest_received.is_some_and(|h| record.seq != h + 1);
                self.highest_received = Some(self.highest_received.map_or(record.seq, |h| h.max(record.seq)));
                self.received.push(record.seq);
                if self.ack_clock.on_arrival(now, out_of_order) {
                    self.send_ack();
                }
                self.forward_report();
            }
            Event::Back(Back::Ack { through }) => {
                let first = self.acked_through;
                self.acked_through = self.acked_through.max(through);
                for i in first..self.acked_through {
                    let seq = self.received[i];
                    let acked =
                        self.sent.on_ack(now, seq).and_then(|a| a.deliver_to(now, self.controller.as_mut()));
                    if let Some(sample) = acked {
                        self.acks.push(AckRecord { at: now, seq, bytes: sample.bytes });
                    }
                }
            }
            Event::Back(Back::Report(report)) => self.controller.on_report(now, &report),
        }
    }

    /// The receiver acknowledges everything it has received.
    fn send_ack(&mut self) {
        self.ack_clock.acked();
        self.send_back(Back::Ack { through: self.received.len() });
    }

    fn forward_report(&mut self) {
        let now = self.now;
        if let Some(report) = self.receiver.as_mut().and_then(|r| r.take_report(now)) {
            self.send_back(Back::Report(report));
        }
    }

    /// Puts what the receiver sends back onto the return path.
    fn send_back(&mut self, item: Back) {
        let now = self.now;
        if self.scenario.return_loss > 0.0 && self.rng.random_bool(self.scenario.return_loss) {
            self.return_drops += 1;
            return;
        }
        match &mut self.return_link {
            ReturnLink::Free => self.schedule(now + self.scenario.one_way_delay, Event::Back(item)),
            ReturnLink::Shaped { queue, waiting } => {
                let id = waiting.len();
                let packet = Queued { id, bytes: item.bytes(), enqueued_at: now };
                if queue.enqueue(now, packet) {
                    waiting.push(Some(item));
                } else {
                    waiting.push(None);
                    self.return_drops += 1;
                }
            }
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
        } else if !self.bottleneck.enqueue(now, Queued { id, bytes, enqueued_at: now }) {
            record.outcome = Outcome::Dropped { at: now, cause: DropCause::Queue };
        }
        self.packets.push(record);
        self.hints.push(hint);
    }

    fn schedule(&mut self, at: Time, event: Event) {
        self.queue.schedule(at, event);
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
    fn delayed_acks_come_for_every_second_packet() {
        let mut s = Scenario::new(Capacity::ConstantMbps(12.0));
        s.duration = Duration::from_secs(5);
        s.acks = AckPolicy::Delayed(crate::sim::ack::DelayedAcks::linux());
        let r = s.run_with(fixed(20), None).unwrap();
        let delivered = r.packets.iter().filter(|p| matches!(p.outcome, Outcome::Delivered { .. })).count();
        // Every packet delivered before the last 60 ms (the ACK of the last ones may be in
        // flight) is acknowledged, by cumulative ACKs that come for pairs of packets after the
        // 16 quick ACKs: about half as many distinct ACK arrival times as packets.
        assert!(
            r.acks.len() + 60 >= delivered && r.acks.len() <= delivered,
            "{} of {delivered}",
            r.acks.len()
        );
        let mut times: Vec<Time> = r.acks.iter().map(|a| a.at).collect();
        times.dedup();
        let ratio = times.len() as f64 / r.acks.len() as f64;
        assert!((0.49..0.52).contains(&ratio), "{ratio}");
        // The window still gets window / RTT (20 packets per 40 ms = 6 Mbit/s).
        assert!((delivered_mbps(&r) - 6.0).abs() < 0.15, "{}", delivered_mbps(&r));
    }

    #[test]
    fn a_shaped_return_path_holds_acks_until_its_opportunities() {
        // The return link may send only every 100 ms: ACKs leave in bursts at those times and
        // arrive one delay later.
        let mut s = Scenario::new(Capacity::ConstantMbps(12.0));
        s.duration = Duration::from_secs(2);
        s.return_path =
            ReturnPath::Shaped { capacity: Capacity::Trace(vec![100]), queue: QueueLimit::Infinite };
        let r = s.run_with(fixed(50), None).unwrap();
        assert!(!r.acks.is_empty());
        assert_eq!(r.return_opportunities.len(), 19);
        for a in &r.acks {
            assert_eq!((a.at.as_micros() - 20_000) % 100_000, 0, "ACK at {}", a.at);
        }
        // 1500 bytes per opportunity carry 28 ACKs of 52 bytes: one per packet sent, so the
        // 50-packet window is acknowledged in two opportunities.
        let first: Vec<u64> = r.acks.iter().map(|a| a.at.as_micros()).take(50).collect();
        assert_eq!(first.iter().filter(|&&t| t == first[0]).count(), 28);
        assert_eq!(r.return_drops, 0);
    }

    #[test]
    fn lost_acks_are_repaired_by_the_next_cumulative_ack() {
        let mut s = Scenario::new(Capacity::ConstantMbps(12.0));
        s.duration = Duration::from_secs(5);
        s.return_loss = 0.2;
        let r = s.run_with(fixed(20), None).unwrap();
        assert!(r.return_drops > 100, "{}", r.return_drops);
        let delivered = r.packets.iter().filter(|p| matches!(p.outcome, Outcome::Delivered { .. })).count();
        // Every delivered packet is acknowledged (bar the last few in flight), none is lost.
        assert!(r.acks.len() + 30 >= delivered, "{} of {delivered}", r.acks.len());
        assert!((delivered_mbps(&r) - 6.0).abs() < 0.2, "{}", delivered_mbps(&r));
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
        s.return_loss = 1.0;
        assert!(matches!(s.run("fixed"), Err(SimError::Invalid(_))));
        s.return_loss = 0.0;
        s.return_path =
            ReturnPath::Shaped { capacity: Capacity::Trace(vec![0]), queue: QueueLimit::Infinite };
        assert!(matches!(s.run("fixed"), Err(SimError::Invalid(m)) if m.starts_with("return path")));
    }
}
