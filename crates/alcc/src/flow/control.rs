//! [`Control`]: what decides when a flow's bytes may go. Either nothing (`none`, plain kernel
//! TCP through the API) or a controller from `alcc-cc` with its pacer; each behaviour that
//! differs between the two is one method here.

use std::time::Duration;

use alcc_cc::fse::{Coupling, Share};
use alcc_cc::pacer::Pacer;
use alcc_cc::{registry, Controller, Decision, RttSamples, SenderHint, SentPacket, Time};

use crate::coupling::groups::{Answer, Groups, Membership};

use crate::error::{Error, Result};
use crate::feedback::Feedback;
use crate::flow::chunk::{chunk_size, SendClock};
use crate::info::FlowInfo;
use crate::mode::Mode;
use crate::options::{is_none, Options};
use crate::underlay::FlowUnderlay;

/// What decides when a flow's bytes may go.
pub(crate) enum Control {
    /// `none`: plain kernel TCP. No window, no pacing, no ACK timestamps: bytes go as fast as
    /// the kernel takes them.
    Plain,
    /// A controller and the pacer that spaces its sends.
    Controlled {
        /// The algorithm.
        controller: Box<dyn Controller>,
        /// When its next chunk may go.
        pacer: Pacer,
        /// Its side of the flow's group (src/coupling): the share it runs under, if any.
        coupling: Coupling,
    },
}

/// What the control allows now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Allowance {
    /// A chunk of `len` bytes may go; `record`: as its own record for the kernel, with its own
    /// timestamps ([`writes_records`]).
    Send { len: u64, record: bool },
    /// Nothing until the pacer allows, at this time.
    PacedUntil(Time),
    /// Nothing until feedback opens the window.
    WindowFull,
}

/// How the next chunk is sized (see [`chunk_size`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sizing {
    /// The kernel's segment size.
    pub mss: u64,
    /// The controller's packet: the size its window counts in ([`crate::Options::mss`]).
    pub packet: u64,
    /// What "a millisecond of sending" is measured against.
    pub clock: SendClock,
    /// Largest chunk.
    pub max_chunk: u64,
}

impl Sizing {
    /// The unit chunks under `window` are whole multiples of: the kernel's segment, or the
    /// controller's packet where that is smaller and the window holds fewer than two segments.
    /// Where the kernel's segment is far larger than a packet (loopback, MSS 65 483) a window of
    /// a few packets would otherwise leave as one write, one segment, which the receiver
    /// acknowledges only when its delayed-ACK timer fires (40 ms on Linux; RFC 1122 4.2.3.2
    /// asks for an immediate ACK only every second full-sized segment); with nothing else in
    /// flight the window waited that long. In packets the window leaves a quarter at a time
    /// (see [`chunk_size`]), and the second segment draws the ACK. A window of two segments or
    /// more keeps the kernel's unit (fewer, larger writes).
    pub fn unit(&self, window: u64) -> u64 {
        let (mss, packet) = (self.mss.max(1), self.packet.max(1));
        if window < mss.saturating_mul(2) {
            mss.min(packet)
        } else {
            mss
        }
    }
}

impl Control {
    /// The control `spec` asks for under `options` in `mode`: [`Control::Plain`] for `none`;
    /// receiver-side algorithms are refused in kernel mode.
    pub fn build(spec: &str, options: &Options, mode: Mode) -> Result<Control> {
        if is_none(spec) {
            return Ok(Control::Plain);
        }
        if mode == Mode::Kernel && registry::entry(spec)?.needs_receiver() {
            return Err(Error::NeedsReceiver(spec.to_string()));
        }
        let controller = registry::build(spec, &options.config())?;
        Ok(Control::controlled(controller))
    }

    /// `controller` with a fresh pacer, not coupled yet.
    pub fn controlled(controller: Box<dyn Controller>) -> Control {
        Control::Controlled { controller, pacer: Pacer::new(), coupling: Coupling::new() }
    }

    /// The decision in force: the controller's, or its group's share of it; `None` for plain
    /// TCP.
    pub fn decision(&self) -> Option<Decision> {
        match self {
            Control::Plain => None,
            Control::Controlled { controller, coupling, .. } => Some(coupling.decision(controller.as_ref())),
        }
    }

    /// Couples the controller with its group (src/coupling, RFC 8699 section 5.3.1 step 3):
    /// reports its change since the last step and runs it under the share it gets back.
    /// `rtt` is the flow's smoothed RTT (`None`: the controller's own), `min_window` one
    /// segment. Nothing for plain TCP or an uncoupled flow.
    pub fn couple(
        &mut self,
        now: Time,
        rtt: Option<Duration>,
        min_window: u64,
        membership: &mut Membership,
        groups: &mut Groups,
    ) {
        let Control::Controlled { controller, coupling, .. } = self else { return };
        if membership.key.is_none() {
            return;
        }
        let Some(rtt) = rtt.or_else(|| controller.metrics().srtt) else { return };
        let Some(rate) = coupling.observe(controller.as_ref(), rtt) else { return };
        // A drain of the controller's own queue is a drain of the group's (Copa's drain check).
        if controller.take_drain_start() {
            if let Some(count) = membership.drain(groups) {
                coupling.drained(count);
            }
        }
        match membership.share(groups, rate, coupling.take_change(), now) {
            Some(Answer::New(p)) => {
                if let Some(count) = membership.drains(groups) {
                    coupling.follow_drains(now, count, controller.as_mut());
                }
                coupling.apply(now, Share { rate: p.share, rtt }, p.mean, controller.as_mut(), min_window)
            }
            // The manager's answer was applied at an earlier step: not offered again.
            Some(Answer::Held) => coupling.hold(rtt, controller.as_ref(), min_window),
            // No share (the manager has not answered, or is gone): the controller's own.
            None => coupling.release(),
        }
    }

    /// Whether this is a controller (the socket needs preparing for one).
    pub fn is_controlled(&self) -> bool {
        matches!(self, Control::Controlled { .. })
    }

    /// Hands what the feedback source learned to the controller at `now`; returns the losses
    /// among it. Feedback that waited to be heard (the flow held its socket's events,
    /// src/flow/socket_hold.rs) comes with `arrivals`: each event is heard at the time it
    /// arrived, as the source knows it
    /// ([`FeedbackSource::arrivals`](crate::feedback::FeedbackSource::arrivals)), kept within
    /// `since` (the flow's previous step) and `now`; with no arrival known, at `now`.
    pub fn on_feedback_arrived(
        &mut self,
        now: Time,
        events: &[Feedback],
        arrivals: &[(usize, Time)],
        since: Time,
    ) -> u64 {
        let Control::Controlled { controller, .. } = self else { return 0 };
        let mut losses = 0;
        let mut next = arrivals.iter().peekable();
        let mut at = now;
        for (i, ev) in events.iter().enumerate() {
            while let Some(&&(from, t)) = next.peek() {
                if from > i {
                    break;
                }
                at = t.clamp(since.min(now), now);
                next.next();
            }
            let now = at;
            match ev {
                Feedback::Ack(a) => controller.on_ack(now, a),
                Feedback::LateAck(a) => controller.on_late_ack(now, a),
                Feedback::Loss(l) => {
                    losses += 1;
                    controller.on_loss(now, l);
                }
                Feedback::Report(r) => controller.on_report(now, r),
            }
        }
        losses
    }

    /// Fires the controller's timer if it is due.
    pub fn fire_timer(&mut self, now: Time) {
        if let Control::Controlled { controller, .. } = self {
            if controller.next_timer().is_some_and(|t| t <= now) {
                controller.on_timer(now);
            }
        }
    }

    /// Until when the controller's feedback can wait ([`Controller::feedback_can_wait_until`]).
    pub fn feedback_can_wait_until(&self, sends_on_feedback: bool) -> Option<Time> {
        match self {
            Control::Plain => None,
            Control::Controlled { controller, .. } => controller.feedback_can_wait_until(sends_on_feedback),
        }
    }

    /// When the controller wants its timer.
    pub fn next_timer(&self) -> Option<Time> {
        match self {
            Control::Plain => None,
            Control::Controlled { controller, .. } => controller.next_timer(),
        }
    }

    /// What may go now of `queued` bytes with `in_flight` bytes unacknowledged, under the
    /// gate `underlay` puts on the controller's decision.
    pub fn next_chunk(
        &self,
        now: Time,
        queued: u64,
        in_flight: u64,
        sizing: Sizing,
        underlay: &FlowUnderlay,
    ) -> Allowance {
        let Control::Controlled { controller, pacer, coupling } = self else {
            return Allowance::Send { len: queued.min(sizing.max_chunk), record: false };
        };
        let d = underlay.gate(coupling.decision(controller.as_ref()), sizing.mss);
        let record = writes_records(controller.as_ref(), d);
        if in_flight < d.window && !pacer.ready(now) {
            return Allowance::PacedUntil(pacer.earliest());
        }
        let clock = SendClock { pacing_rate: d.pacing_rate, ..sizing.clock };
        match chunk_size(queued, d.window, in_flight, sizing.unit(d.window), clock, sizing.max_chunk) {
            Some(len) => Allowance::Send { len, record },
            None => Allowance::WindowFull,
        }
    }

    /// The flow stopped for a reason other than the pacer (see [`Pacer::on_idle`]).
    pub fn on_idle(&mut self) {
        if let Control::Controlled { pacer, .. } = self {
            pacer.on_idle();
        }
    }

    /// A chunk `seq` of `bytes` left at `now`, `in_flight` bytes unacknowledged with it.
    /// Returns the controller's memo and how far the chunk overshot the window alcc's own
    /// gate enforced (the controller's, or under the `follow` underlay the wider gate of
    /// [`Policy::gate`](crate::underlay::Policy::gate)).
    pub fn on_sent(
        &mut self,
        now: Time,
        seq: u64,
        bytes: u64,
        in_flight: u64,
        (underlay, mss): (&FlowUnderlay, u64),
    ) -> (u64, u64) {
        let Control::Controlled { controller, pacer, coupling } = self else { return (0, 0) };
        let gate = underlay.gate(coupling.decision(controller.as_ref()), mss);
        let overshoot = in_flight.saturating_sub(gate.window);
        let memo = controller.on_sent(now, &SentPacket { seq, bytes, bytes_in_flight: in_flight });
        pacer.on_send(now, bytes, gate.pacing_rate);
        (memo, overshoot)
    }

    /// What the sender puts in the next chunk's header for the receiver-side model.
    pub fn sender_hint(&self, now: Time) -> SenderHint {
        match self {
            Control::Plain => SenderHint::default(),
            Control::Controlled { controller, .. } => controller.sender_hint(now),
        }
    }

    /// The controller's pacing rate, bytes/s.
    pub fn pacing_rate(&self) -> Option<u64> {
        match self {
            Control::Plain => None,
            Control::Controlled { controller, coupling, .. } => {
                coupling.decision(controller.as_ref()).pacing_rate
            }
        }
    }

    /// Whether the flow must re-read TCP_INFO now and then while bytes are in flight:
    /// plain TCP has no ACK timestamps to wake it.
    pub fn polls_for_acks(&self) -> bool {
        !self.is_controlled()
    }

    /// Writes the controller's window, rate and metrics into `info`.
    pub fn publish(&self, info: &mut FlowInfo) {
        match self {
            Control::Plain => {
                info.window = u64::MAX;
                info.pacing_rate = None;
                info.metrics = None;
            }
            Control::Controlled { controller, coupling, .. } => {
                let d = coupling.decision(controller.as_ref());
                info.group_share = coupling.last_share();
                info.shares_applied = coupling.applied();
                info.window = d.window;
                info.pacing_rate = d.pacing_rate;
                info.metrics = Some(controller.metrics());
            }
        }
    }
}

/// Whether a chunk is its own record for the kernel (MSG_EOR) with its own SCHED and ACK
/// timestamps, under `gated`, the decision with the underlay's gate on it: a chunk is an RTT
/// sample and a wake-up at its acknowledgement. Plain TCP lets the kernel merge writes and
/// takes no timestamps. A controller takes them when it needs its RTT samples
/// ([`RttSamples::PerPacket`]), or when a window bounds it, which only acknowledgements reopen
/// (the flow must wake when they come); an unbounded controller that needs no samples
/// (`fixed`) sends without them, and TCP_INFO acknowledges its chunks.
fn writes_records(controller: &dyn Controller, gated: Decision) -> bool {
    controller.rtt_samples() == RttSamples::PerPacket || gated.window != u64::MAX
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coupling::{Access, GroupKey, Manager};
    use alcc_cc::{AckSample, Config};

    /// Found in the emulator (bench/coupled-results.md, the host manager's sweeps): a flow in
    /// a manager's group got the manager's answer (at most one per 20 ms) at every step in
    /// between too, and its controller started over from that same share at each of them, so
    /// that the group counted one move of the controller once per step; and an answer counts
    /// only the changes reported before it. Copa stepping down towards its queueing target
    /// took the group's aggregate to 0 (the clamp of step 3(a)) while its own window never
    /// goes below 2 packets. A lone flow in a manager's group must run exactly as it runs
    /// alone, as in a process's own group.
    #[test]
    fn a_lone_flow_in_a_managers_group_runs_as_alone() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("m.sock");
        let manager = Manager::bind(&socket, Access::User).unwrap();
        std::thread::spawn(move || manager.serve());
        let key = GroupKey::Managed { socket, name: "g".into() };
        let mut membership = Membership::new(Some(key), 1.0);
        let mut alone = Membership::new(None, 1.0);
        let mut groups = Groups::default();
        let build = || Control::controlled(registry::build("copa:mode=default", &Config::default()).unwrap());
        let (mut managed, mut uncoupled) = (build(), build());
        let (mss, base, queued) = (1448, Duration::from_millis(20), Duration::from_millis(100));
        let (mut lowest, mut floor) = (f64::INFINITY, f64::INFINITY);
        // An ACK every millisecond: 40 without a queue (past Copa's warm-up), then 1.5 s of a
        // 80 ms standing queue (Copa's target 2.5 packets: it steps down to its 2-packet floor).
        for i in 0..1540u64 {
            let now = Time::from_millis(100 + i);
            let rtt = if i < 40 { base } else { queued };
            let ack = AckSample {
                seq: i,
                bytes: mss,
                sent_at: Time::from_micros(now.as_micros() - rtt.as_micros() as u64),
                rtt,
                bytes_in_flight: 10 * mss,
                delivered: (i + 1) * mss,
                memo: 0,
            };
            for (control, membership) in [(&mut managed, &mut membership), (&mut uncoupled, &mut alone)] {
                control.on_feedback_arrived(now, &[Feedback::Ack(ack)], &[], now);
                control.couple(now, None, mss, membership, &mut groups);
            }
            assert_eq!(managed.decision(), uncoupled.decision(), "step {i}");
            if i % 20 == 0 {
                // A report went out: give the manager time to answer before the next step.
                std::thread::sleep(Duration::from_millis(2));
            }
            let Control::Controlled { controller, coupling, .. } = &managed else { unreachable!() };
            if let (true, Some(share), Some(srtt)) =
                (i >= 400, coupling.last_share(), controller.metrics().srtt)
            {
                lowest = lowest.min(share);
                floor = floor.min(alcc_cc::fse::rate_of_window(2 * mss, srtt));
            }
        }
        assert!(floor.is_finite() && lowest.is_finite(), "the flow got the manager's shares");
        assert!(
            lowest >= 0.99 * floor,
            "a lone flow's share (the group's aggregate) fell to {lowest:.0} B/s, below its \
             controller's floor of 2 packets per RTT ({floor:.0} B/s)"
        );
        let mut info = FlowInfo::default();
        managed.publish(&mut info);
        assert_eq!(info.shares_applied, 0, "its own rate, never a share that differed");
    }

    #[test]
    fn chunks_are_packets_only_where_the_window_holds_less_than_two_segments() {
        let sizing = Sizing { mss: 65_483, packet: 1_448, clock: SendClock::default(), max_chunk: 1 << 16 };
        // Loopback: three packets of window are less than two segments.
        assert_eq!(sizing.unit(4_344), 1_448);
        assert_eq!(sizing.unit(2 * 65_483 - 1), 1_448);
        assert_eq!(sizing.unit(2 * 65_483), 65_483);
        assert_eq!(sizing.unit(u64::MAX), 65_483);
        // A path whose segment is the packet, or smaller (a tunnel): the kernel's segment.
        let path = Sizing { mss: 1_448, ..sizing };
        assert_eq!(path.unit(4_344), 1_448);
        let tunnel = Sizing { mss: 1_380, ..sizing };
        assert_eq!(tunnel.unit(2_000), 1_380);
    }
}
