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
    /// Shares that differed from the controller's rate and were applied.
    applied: u64,
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
        Some(rate)
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
            return;
        }
        self.applied += 1;
        if differs(mean, current) {
            controller.adopt_share(now, &Share { rate: mean, rtt: share.rtt });
        }
        let Some(after) = calculated_rate(controller.decision(), share.rtt) else {
            self.assigned = None;
            return;
        };
        self.continued_from = Some(after);
        // Liveness: at least one packet (`min_window`) per RTT or per [`LIVENESS_INTERVAL`],
        // whichever is longer, whatever the share. A flow held below that gets no ACKs, so its
        // controller never calculates a new rate and the share never recovers; when the
        // group's aggregate had fallen to about zero, every flow of the group stopped for good
        // at the 1 B/s floor of `scale` (bench/soak.sh, --grouping peer).
        let target = share.rate.max(super::rate_of_window(min_window, share.rtt.max(LIVENESS_INTERVAL)));
        self.assigned = differs(target, after)
            .then(|| scale(controller.decision(), target / after.max(1e-9), min_window));
    }

    /// The flow has no share now (its group cannot be reached): it runs under its controller's
    /// own decision until the next [`apply`](Self::apply).
    pub fn release(&mut self) {
        self.assigned = None;
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
}
