//! Several flows over one bottleneck, in virtual time: the model of [`super::scenario`] (a
//! backlogged sender per flow, Mahimahi's drop-tail queue and delivery opportunities, the
//! one-way delay each way) with every packet acknowledged at once over an uncongested return
//! path. The flows meet only in the bottleneck queue, as flows of one host to one client do in
//! the emulator; what couples their controllers (a [`crate::fse::FlowGroup`]) is the caller's,
//! wrapped around each controller. Deterministic for a seed, like the one-flow run.
//!
//! [`Scenario::run_flows`] runs them; each flow gets its own [`SimResult`] (its packets,
//! acknowledgements and window samples; the bottleneck's opportunities are the link's).

use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::controller::Controller;
use crate::event::SentPacket;
use crate::pacer::Pacer;
use crate::sent_packets::SentPackets;
use crate::sim::ack::AckPolicy;
use crate::sim::bottleneck::Queued;
use crate::sim::clock::{after_fired, Advance};
use crate::sim::events::EventQueue;
use crate::sim::link::ServedQueue;
use crate::sim::record::{AckRecord, DropCause, Outcome, PacketRecord, SimResult};
use crate::sim::scenario::{ReturnPath, Scenario, SimError};
use crate::time::Time;

/// How often each flow's window is sampled into its [`SimResult::windows`].
const WINDOW_SAMPLE: Duration = Duration::from_millis(10);

/// One flow of a several-flow run: its controller, when it starts sending and when it stops.
pub struct FlowSpec {
    /// The flow's controller (wrapped by the caller if it is coupled).
    pub controller: Box<dyn Controller>,
    /// When the flow starts, from the start of the run.
    pub start: Duration,
    /// When it stops sending new packets (what it sent is still delivered and acknowledged);
    /// `None`: at the end of the run.
    pub stop: Option<Duration>,
}

impl FlowSpec {
    /// A flow with `controller` from `start` to the end of the run.
    pub fn new(start: Duration, controller: Box<dyn Controller>) -> FlowSpec {
        FlowSpec { controller, start, stop: None }
    }
}

impl Scenario {
    /// Runs `flows` together over this scenario's bottleneck (section docs of
    /// [`crate::sim::flows`]). Needs the defaults of the acknowledgement model: every packet
    /// acknowledged at once ([`AckPolicy::EveryPacket`]) over a [`ReturnPath::Free`] without
    /// loss; receiver-side models are not run.
    pub fn run_flows(&self, flows: Vec<FlowSpec>) -> Result<Vec<SimResult>, SimError> {
        let bad = |m: &str| Err(SimError::Invalid(format!("several flows: {m}")));
        if self.acks != AckPolicy::EveryPacket
            || self.return_path != ReturnPath::Free
            || self.return_loss > 0.0
        {
            return bad("only every packet acknowledged over a free return path without loss");
        }
        if flows.is_empty() {
            return bad("at least one flow");
        }
        // The one-flow checks (rates, sizes, loss) apply as they are.
        self.validate_settings()?;
        Ok(Shared::new(self, flows).run())
    }
}

/// A packet in the bottleneck or on its way: which flow, which of its records.
#[derive(Clone, Copy)]
struct Tag {
    flow: usize,
    record: usize,
}

enum Event {
    /// The packet reaches its receiver.
    Arrive(Tag),
    /// The flow's receiver acknowledged its first `through` arrivals; the ACK reaches the sender.
    Ack { flow: usize, through: usize },
}

struct Flow {
    controller: Box<dyn Controller>,
    start: Time,
    stop: Time,
    sent: SentPackets,
    pacer: Pacer,
    nic_free_at: Time,
    fired_at: Option<Time>,
    received: Vec<u64>,
    acked_through: usize,
    packets: Vec<PacketRecord>,
    windows: Vec<(Time, u64, Option<u64>)>,
    acks: Vec<AckRecord>,
}

impl Flow {
    fn window_allows(&self, bytes: u64) -> bool {
        self.sent.bytes_in_flight().saturating_add(bytes) <= self.controller.decision().window
    }
}

struct Shared<'a> {
    scenario: &'a Scenario,
    end: Time,
    now: Time,
    flows: Vec<Flow>,
    bottleneck: ServedQueue,
    /// What each queued packet is (the queue carries an index into this).
    queued: Vec<Tag>,
    queue: EventQueue<Event>,
    rng: ChaCha8Rng,
    nic_gap: Duration,
}

impl<'a> Shared<'a> {
    fn new(s: &'a Scenario, specs: Vec<FlowSpec>) -> Shared<'a> {
        let end = Time::ZERO + s.duration;
        let flows = specs
            .into_iter()
            .map(|f| Flow {
                controller: f.controller,
                start: Time::ZERO + f.start,
                stop: f.stop.map_or(end, |d| Time::ZERO + d),
                sent: SentPackets::new(0),
                pacer: Pacer::new(),
                nic_free_at: Time::ZERO,
                fired_at: None,
                received: Vec::new(),
                acked_through: 0,
                packets: Vec::new(),
                windows: Vec::new(),
                acks: Vec::new(),
            })
            .collect();
        Shared {
            scenario: s,
            end,
            now: Time::ZERO,
            flows,
            bottleneck: ServedQueue::new(&s.capacity, s.queue, end),
            queued: Vec::new(),
            queue: EventQueue::new(),
            rng: ChaCha8Rng::seed_from_u64(s.seed),
            nic_gap: Duration::from_secs_f64(s.packet_bytes as f64 * 8.0 / (s.sender_mbps * 1e6)),
        }
    }

    fn run(mut self) -> Vec<SimResult> {
        let mut advance = Advance::default();
        loop {
            for f in 0..self.flows.len() {
                self.sample_window(f);
                self.send_allowed(f);
            }
            let Some(next) = self.next_deadline() else { break };
            if !advance.to(&mut self.now, next, self.end) {
                break;
            }
            self.step();
        }
        let opportunities = self.bottleneck.opportunities().to_vec();
        let duration = self.scenario.duration;
        self.flows
            .into_iter()
            .map(|f| SimResult {
                packets: f.packets,
                opportunities: opportunities.clone(),
                duration,
                windows: f.windows,
                acks: f.acks,
                return_opportunities: Vec::new(),
                return_drops: 0,
            })
            .collect()
    }

    fn next_deadline(&self) -> Option<Time> {
        let mut next = self.queue.next_due();
        let mut consider = |t: Option<Time>| {
            if let Some(t) = t {
                next = Some(next.map_or(t, |n: Time| n.min(t)));
            }
        };
        consider(self.bottleneck.deadline());
        for f in &self.flows {
            consider(after_fired(self.now, f.controller.next_timer(), f.fired_at));
            consider(f.sent.loss_deadline());
            consider(self.send_deadline(f));
        }
        next
    }

    /// When the flow could next send, if only its start, its pacer or its interface holds it.
    fn send_deadline(&self, f: &Flow) -> Option<Time> {
        if self.now < f.start {
            return Some(f.start);
        }
        if self.now >= f.stop {
            return None;
        }
        if !f.window_allows(self.scenario.packet_bytes) {
            return None;
        }
        let ready = f.pacer.earliest().max(f.nic_free_at);
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
            let tag = self.queued[id];
            let arrived = now + delay;
            self.flows[tag.flow].packets[tag.record].outcome = Outcome::Delivered { departed: now, arrived };
            self.schedule(arrived, Event::Arrive(tag));
        }
        for f in &mut self.flows {
            if f.controller.next_timer().is_some_and(|t| t <= now) && f.fired_at != Some(now) {
                f.controller.on_timer(now);
                f.fired_at = Some(now);
            }
            for loss in f.sent.detect_losses(now) {
                f.controller.on_loss(now, &loss);
            }
        }
    }

    fn handle(&mut self, event: Event) {
        let now = self.now;
        match event {
            Event::Arrive(tag) => {
                let f = &mut self.flows[tag.flow];
                f.received.push(f.packets[tag.record].seq);
                let through = f.received.len();
                let back = now + self.scenario.one_way_delay;
                self.schedule(back, Event::Ack { flow: tag.flow, through });
            }
            Event::Ack { flow, through } => {
                let f = &mut self.flows[flow];
                let first = f.acked_through;
                f.acked_through = f.acked_through.max(through);
                for i in first..f.acked_through {
                    let seq = f.received[i];
                    let acked =
                        f.sent.on_ack(now, seq).and_then(|a| a.deliver_to(now, f.controller.as_mut()));
                    if let Some(sample) = acked {
                        f.acks.push(AckRecord { at: now, seq, bytes: sample.bytes });
                    }
                }
            }
        }
    }

    /// Sends the flow's next packet if its start, window, pacer and interface allow it now
    /// (the one-flow run's rule, per flow).
    fn send_allowed(&mut self, index: usize) {
        let now = self.now;
        let bytes = self.scenario.packet_bytes;
        let f = &mut self.flows[index];
        if now < f.start || now >= f.stop {
            return;
        }
        if !f.window_allows(bytes) {
            f.pacer.on_idle();
            return;
        }
        if !f.pacer.ready(now) {
            return;
        }
        if f.nic_free_at > now {
            f.pacer.on_idle();
            return;
        }
        let seq = f.sent.next_seq();
        let packet = SentPacket { seq, bytes, bytes_in_flight: f.sent.bytes_in_flight() + bytes };
        let memo = f.controller.on_sent(now, &packet);
        f.sent.on_sent(seq, bytes, now, memo);
        f.pacer.on_send(now, bytes, f.controller.decision().pacing_rate);
        f.nic_free_at = now + self.nic_gap;
        let record = f.packets.len();
        let mut p = PacketRecord { seq, bytes, sent: now, outcome: Outcome::InFlight };
        let lost = self.scenario.loss > 0.0 && self.rng.random_bool(self.scenario.loss);
        let id = self.queued.len();
        if lost {
            p.outcome = Outcome::Dropped { at: now, cause: DropCause::Random };
        } else if self.bottleneck.enqueue(now, Queued { id, bytes, enqueued_at: now }) {
            self.queued.push(Tag { flow: index, record });
        } else {
            p.outcome = Outcome::Dropped { at: now, cause: DropCause::Queue };
        }
        let f = &mut self.flows[index];
        f.packets.push(p);
        if !f.window_allows(bytes) {
            f.pacer.on_idle();
        }
    }

    fn schedule(&mut self, at: Time, event: Event) {
        self.queue.schedule(at, event);
    }

    fn sample_window(&mut self, index: usize) {
        let now = self.now;
        let f = &mut self.flows[index];
        if f.windows.last().is_none_or(|&(t, _, _)| now >= t + WINDOW_SAMPLE) {
            let d = f.controller.decision();
            f.windows.push((now, d.window, d.pacing_rate));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixed::Fixed;
    use crate::sim::Capacity;

    fn fixed(packets: u64) -> Box<dyn Controller> {
        Box::new(Fixed::new(packets * 1500, None))
    }

    fn delivered_mbps(r: &SimResult, from: Time) -> f64 {
        let bytes: u64 = r
            .packets
            .iter()
            .filter(|p| matches!(p.outcome, Outcome::Delivered { departed, .. } if departed >= from))
            .map(|p| p.bytes)
            .sum();
        bytes as f64 * 8.0 / (r.duration.as_secs_f64() - from.as_secs_f64()) / 1e6
    }

    #[test]
    fn window_limited_flows_share_the_link_by_window() {
        // 10 and 30 packets per 40 ms round trip: 3 and 9 Mbit/s, together the 12 Mbit/s
        // link without a standing queue.
        let mut s = Scenario::new(Capacity::ConstantMbps(12.0));
        s.duration = Duration::from_secs(10);
        let flows = vec![FlowSpec::new(Duration::ZERO, fixed(10)), FlowSpec::new(Duration::ZERO, fixed(30))];
        let r = s.run_flows(flows).unwrap();
        let from = Time::from_millis(1000);
        let (a, b) = (delivered_mbps(&r[0], from), delivered_mbps(&r[1], from));
        assert!((a - 3.0).abs() < 0.1 && (b - 9.0).abs() < 0.1, "{a} {b}");
    }

    #[test]
    fn excess_windows_queue_together_and_a_late_flow_waits_for_its_start() {
        // 60 + 60 packets in flight, 40 in the pipe: 80 queued, 80 ms at 1 packet/ms, for both
        // flows alike (one queue); the second flow sends nothing before 2 s.
        let mut s = Scenario::new(Capacity::ConstantMbps(12.0));
        s.duration = Duration::from_secs(6);
        let flows = vec![
            FlowSpec::new(Duration::ZERO, fixed(60)),
            FlowSpec::new(Duration::from_secs(2), fixed(60)),
            FlowSpec { stop: Some(Duration::from_secs(1)), ..FlowSpec::new(Duration::ZERO, fixed(5)) },
        ];
        let r = s.run_flows(flows).unwrap();
        assert!(r[1].packets.iter().all(|p| p.sent >= Time::from_millis(2000)));
        assert!(r[2].packets.iter().all(|p| p.sent < Time::from_millis(1000)), "stopped at 1 s");
        assert!(r[2].packets.iter().all(|p| p.one_way_delay().is_some()), "what it sent arrived");
        for flow in &r[..2] {
            let last = flow.packets.iter().rev().find_map(|p| p.one_way_delay()).unwrap();
            assert!(last.abs_diff(Duration::from_millis(100)) <= Duration::from_millis(3), "{last:?}");
        }
        let total =
            delivered_mbps(&r[0], Time::from_millis(3000)) + delivered_mbps(&r[1], Time::from_millis(3000));
        assert!(total > 11.8, "{total}");
    }

    #[test]
    fn one_flow_runs_as_the_one_flow_simulator() {
        let mut s = Scenario::new(Capacity::ConstantMbps(12.0));
        s.duration = Duration::from_secs(10);
        let alone = s.run("copa").unwrap();
        let flows = vec![FlowSpec::new(Duration::ZERO, crate::registry::build("copa", &s.config()).unwrap())];
        let r = s.run_flows(flows).unwrap();
        assert_eq!(alone.packets, r[0].packets);
    }

    #[test]
    fn other_acknowledgement_models_are_refused() {
        let mut s = Scenario::new(Capacity::ConstantMbps(12.0));
        s.return_loss = 0.1;
        let flows = vec![FlowSpec::new(Duration::ZERO, fixed(10))];
        assert!(matches!(s.run_flows(flows), Err(SimError::Invalid(m)) if m.starts_with("several flows")));
        assert!(matches!(
            Scenario::new(Capacity::ConstantMbps(1.0)).run_flows(Vec::new()),
            Err(SimError::Invalid(_))
        ));
    }
}
