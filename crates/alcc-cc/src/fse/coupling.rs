//! [`Coupling`]: one flow's side of its group. The transport keeps one per coupled flow and,
//! after the flow's controller has taken its feedback:
//!
//! 1. [`observe`](Coupling::observe)s the controller's calculated rate (`CC_R`,
//!    [`calculated_rate`]); what changed since the last look is the controller's own change;
//! 2. hands that change to the group ([`take_change`](Coupling::take_change), then
//!    [`FlowGroup::change`](super::FlowGroup::change) or a message to a host's manager),
//!    which adds it to the aggregate (RFC 8699 section 5.3.1 step 3(a)) and divides anew;
//! 3. [`apply`](Coupling::apply)s the share it got back: the controller adopts it
//!    ([`Controller::adopt_share`]) or, if it does not, the flow's decision is scaled to it.
//!
//! Counting the controller's change from the rate it actually continued from (rather than
//! from the group's latest `FSE_R`) keeps step 3(a) right when shares reach the flow later
//! than they were computed: at its next step, or when the manager's answer arrives.
//!
//! A share is offered to the controller once. At a step with no new share (a host manager
//! answers a report, at most every 20 ms, not every step) the flow [`hold`](Coupling::hold)s:
//! the controller keeps its own moves since it last adopted one, and what the flow sends keeps
//! the proportion to the controller's rate that the last share set. Offering the same share
//! again at every step would set the controller back to it each time, so that it repeated one
//! move from one starting point and the group counted that move once per step.

use std::time::Duration;

use crate::controller::Controller;
use crate::event::Decision;
use crate::time::Time;

use super::share::{calculated_rate, differs, scale, Share};

/// The longest a coupled flow waits between packets, whatever its share: one packet per this
/// interval (or per RTT, if longer) keeps ACKs, and with them the controller's updates, coming.
pub const LIVENESS_INTERVAL: Duration = Duration::from_millis(200);

/// One flow's coupling state (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct Coupling {
    /// The controller's calculated rate at the last look or right after the last adoption.
    continued_from: Option<f64>,
    /// The controller's own change since the group last took it, bytes per second.
    change: f64,
    /// The decision in force when the controller did not adopt its share itself.
    assigned: Option<Decision>,
    /// The last share applied, bytes per second.
    last_share: Option<f64>,
    /// What the flow sends over its controller's rate, as the last share set it.
    proportion: Option<f64>,
    /// Shares that differed from the controller's rate and were applied.
    applied: u64,
    /// The group's drain count ([`FlowGroup::drain`](super::FlowGroup::drain)) this flow has
    /// followed (or started); `None` before its first share.
    drains_seen: Option<u64>,
    /// The RTT of the last look, for reading the rate again after a drain.
    rtt: Duration,
}

impl Coupling {
    /// A flow not yet seen with a rate.
    pub fn new() -> Coupling {
        Coupling::default()
    }

    /// Reads the controller's calculated rate over `rtt` and adds its change since the last
    /// look to the change the group has not taken yet. `None` while the flow has no rate to
    /// share ([`calculated_rate`]).
    pub fn observe(&mut self, controller: &dyn Controller, rtt: Duration) -> Option<f64> {
        let rate = calculated_rate(controller.decision(), rtt)?;
        if let Some(before) = self.continued_from {
            self.change += rate - before;
        }
        self.continued_from = Some(rate);
        self.rtt = rtt;
        Some(rate)
    }

    /// This flow's controller began a drain ([`Controller::take_drain_start`]), the group's
    /// drain number `count` ([`FlowGroup::drain`](super::FlowGroup::drain)): it follows no
    /// drain up to it.
    pub fn drained(&mut self, count: u64) {
        self.drains_seen = Some(self.drains_seen.map_or(count, |seen| seen.max(count)));
    }

    /// Follows the group's drains: when the group's drain count `count` passed the last this
    /// flow saw, another flow of the group began draining its queue, which is this flow's
    /// queue too, and the controller drains with it ([`Controller::drain_with_group`]). The
    /// window it drops to is the controller's own change, reported at the next step. The
    /// first count a flow sees (when it joins) is only noted. Call after
    /// [`observe`](Self::observe), before [`apply`](Self::apply).
    pub fn follow_drains(&mut self, now: Time, count: u64, controller: &mut dyn Controller) {
        let seen = self.drains_seen.replace(count.max(self.drains_seen.unwrap_or(0)));
        if seen.is_none_or(|seen| count <= seen) {
            return;
        }
        controller.drain_with_group(now);
        // The controller's own change: counted now, reported at the next step.
        let rtt = self.rtt;
        self.observe(controller, rtt);
    }

    /// Whether the flow has been seen with a rate (it is, or may join, a group member).
    pub fn has_rate(&self) -> bool {
        self.continued_from.is_some()
    }

    /// The controller's change the group has not taken yet, bytes per second; resets it.
    pub fn take_change(&mut self) -> f64 {
        std::mem::take(&mut self.change)
    }

    /// Applies the share the group assigned (RFC 8699 step 3(d)). The controller is offered
    /// `mean`, the group's aggregate over its number of flows (`S_CR / N`): every controller of
    /// a group continues from the same rate, so that they steer the aggregate together, in
    /// step, whatever the weights (with weights 1:2:3:4 each controller would otherwise judge
    /// its own unequal share against one common target, the heavy flows always pushing down
    /// and the light ones up, and the aggregate would stand still). The flow then sends its
    /// weighted `share`: whatever differs from the controller's decision (the weight, or a
    /// share the controller did not take over) is applied by scaling that decision. A share
    /// and mean equal to the controller's rate (up to rounding, [`differs`]; a group of one)
    /// change nothing. Call after [`observe`](Self::observe).
    pub fn apply(
        &mut self,
        now: Time,
        share: Share,
        mean: f64,
        controller: &mut dyn Controller,
        min_window: u64,
    ) {
        let Some(current) = self.continued_from else { return };
        self.last_share = Some(share.rate);
        if !differs(share.rate, current) && !differs(mean, current) {
            self.assigned = None;
            self.proportion = Some(1.0);
            return;
        }
        self.applied += 1;
        if differs(mean, current) {
            controller.adopt_share(now, &Share { rate: mean, rtt: share.rtt });
        }
        let Some(after) = calculated_rate(controller.decision(), share.rtt) else {
            self.assigned = None;
            self.proportion = None;
            return;
        };
        self.continued_from = Some(after);
        self.proportion = Some(share.rate / after.max(1e-9));
        self.send(share.rate, after, share.rtt, controller.decision(), min_window);
    }

    /// No new share since the last [`apply`](Self::apply) (a host manager answers a report, not
    /// every step): the controller keeps its own moves since then, and the flow sends its
    /// controller's rate in the proportion the last share set (its weight, for a controller
    /// that adopted the group's mean; its share over its own rate, for one that did not). The
    /// same share is not offered again: the controller would start over from it at every step
    /// and the group would count its move once per step. Call after
    /// [`observe`](Self::observe); before any share, the controller's own decision.
    pub fn hold(&mut self, rtt: Duration, controller: &dyn Controller, min_window: u64) {
        let (Some(current), Some(proportion)) = (self.continued_from, self.proportion) else {
            self.assigned = None;
            return;
        };
        self.send(current * proportion, current, rtt, controller.decision(), min_window);
    }

    /// Sends `target` bytes/s where the controller's `decision` amounts to `rate`: its
    /// decision scaled (none when they are equal up to rounding). Liveness: at least one
    /// packet (`min_window`) per RTT or per [`LIVENESS_INTERVAL`], whichever is longer,
    /// whatever the share. A flow held below that gets no ACKs, so its controller never
    /// calculates a new rate and the share never recovers; when the group's aggregate had
    /// fallen to about zero, every flow of the group stopped for good at the 1 B/s floor of
    /// `scale` (bench/soak.sh, --grouping peer).
    fn send(&mut self, target: f64, rate: f64, rtt: Duration, decision: Decision, min_window: u64) {
        let target = target.max(super::rate_of_window(min_window, rtt.max(LIVENESS_INTERVAL)));
        self.assigned = differs(target, rate).then(|| scale(decision, target / rate.max(1e-9), min_window));
    }

    /// The flow has no share now (its group cannot be reached): it runs under its controller's
    /// own decision until the next [`apply`](Self::apply).
    pub fn release(&mut self) {
        self.assigned = None;
        self.proportion = None;
    }

    /// The decision the flow runs under: the share's, or the controller's own.
    pub fn decision(&self, controller: &dyn Controller) -> Decision {
        self.assigned.unwrap_or_else(|| controller.decision())
    }

    /// The last share applied, bytes per second (`None` before the first).
    pub fn last_share(&self) -> Option<f64> {
        self.last_share
    }

    /// How many shares differed from the controller's rate and were applied (offered to the
    /// controller, or applied by scaling): 0 for a flow alone in its group.
    pub fn applied(&self) -> u64 {
        self.applied
    }

    /// Whether the flow runs under a scaled decision rather than its controller's own.
    pub fn overrides(&self) -> bool {
        self.assigned.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::Config;

    /// Found by the soak: a share of about zero scaled the flow's pacing rate to 1 B/s, so it
    /// sent nothing, got no ACKs and never recovered. Now it keeps one packet per 200 ms.
    #[test]
    fn a_share_of_nothing_still_sends_one_packet_per_200_ms() {
        let mut controller = crate::registry::build("fixed:rate=80", &Config::default()).unwrap();
        let rtt = Duration::from_millis(10);
        let mut coupling = Coupling::new();
        let own = coupling.observe(controller.as_ref(), rtt).unwrap();
        coupling.apply(Time::from_micros(0), Share { rate: 0.0, rtt }, own, controller.as_mut(), 1448);
        let decision = coupling.decision(controller.as_ref());
        assert_eq!(decision.pacing_rate, Some(7_240), "one 1448-byte packet per 200 ms");
    }

    /// Counts the group drains it is asked to follow; its window halves at each.
    #[derive(Debug)]
    struct Drains {
        window: u64,
        followed: u32,
    }

    impl Controller for Drains {
        fn name(&self) -> &'static str {
            "drains"
        }
        fn on_sent(&mut self, _now: Time, _p: &crate::event::SentPacket) -> u64 {
            0
        }
        fn on_ack(&mut self, _now: Time, _a: &crate::event::AckSample) {}
        fn on_loss(&mut self, _now: Time, _l: &crate::event::LossEvent) {}
        fn decision(&self) -> Decision {
            Decision { window: self.window, pacing_rate: None }
        }
        fn metrics(&self) -> crate::metrics::Metrics {
            crate::metrics::Metrics::new(self.window, "test")
        }
        fn drain_with_group(&mut self, _now: Time) {
            self.followed += 1;
            self.window /= 2;
        }
    }

    #[test]
    fn a_flow_follows_each_new_drain_of_its_group_once_and_reports_the_cut() {
        let rtt = Duration::from_millis(100);
        let mut c = Drains { window: 100_000, followed: 0 };
        let mut coupling = Coupling::new();
        coupling.observe(&c, rtt);
        let t = Time::from_millis(1);
        coupling.follow_drains(t, 3, &mut c);
        assert_eq!(c.followed, 0, "the count found at the first share is only noted");
        coupling.follow_drains(t, 3, &mut c);
        assert_eq!(c.followed, 0);
        coupling.follow_drains(t, 4, &mut c);
        assert_eq!(c.followed, 1, "another flow drained");
        assert_eq!(coupling.take_change(), -500_000.0, "the cut is the controller's own change");
        coupling.follow_drains(t, 4, &mut c);
        assert_eq!(c.followed, 1, "once");
        coupling.drained(5);
        coupling.follow_drains(t, 5, &mut c);
        assert_eq!(c.followed, 1, "its own drain is not followed again");
    }

    /// Between two answers of a host's manager the flow holds: the controller keeps what it
    /// did since it adopted the mean (it is not set back to it), its move is counted once,
    /// and the flow sends twice its controller's window as the last share (twice the mean)
    /// said.
    #[test]
    fn a_held_share_keeps_the_controllers_moves_and_the_proportion() {
        let mss = 1448;
        let rtt = Duration::from_millis(100);
        let mut controller = crate::registry::build("reno", &Config::default()).unwrap();
        let mut coupling = Coupling::new();
        coupling.observe(controller.as_ref(), rtt).unwrap();
        let mean = crate::fse::rate_of_window(20 * mss, rtt);
        coupling.apply(Time::ZERO, Share { rate: 2.0 * mean, rtt }, mean, controller.as_mut(), mss);
        assert_eq!(controller.decision().window, 20 * mss, "the controller adopted the mean");
        coupling.take_change();
        let ack = crate::event::AckSample {
            seq: 0,
            bytes: mss,
            sent_at: Time::ZERO,
            rtt,
            bytes_in_flight: 0,
            delivered: mss,
            memo: 0,
        };
        for step in 1..=3u64 {
            controller.on_ack(Time::from_millis(100 * step), &ack);
            coupling.observe(controller.as_ref(), rtt).unwrap();
            coupling.hold(rtt, controller.as_ref(), mss);
            let own = (20 + step) * mss;
            assert_eq!(controller.decision().window, own, "slow start from the mean, not back to it");
            assert_eq!(coupling.decision(controller.as_ref()).window, 2 * own);
        }
        let counted = coupling.take_change();
        let moved = crate::fse::rate_of_window(3 * mss, rtt);
        assert!((counted - moved).abs() < 1e-6, "the controller's 3 packets counted once: {counted}");
    }
}
