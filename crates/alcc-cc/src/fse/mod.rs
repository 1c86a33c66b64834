//! A flow group: coupled congestion control by the Flow State Exchange (FSE) of RFC 8699,
//! "Coupled Congestion Control for RTP Media", its active variant (section 5.3.1, "Example
//! Algorithm 1 - Active FSE"). Flows that share a bottleneck (here: that the transport put in
//! one group) each keep their own congestion controller; the group adds up what the controllers
//! calculate and hands every flow its share of that aggregate by priority weight.
//!
//! Sans-IO like every algorithm here: the transport calls [`FlowGroup::join`],
//! [`FlowGroup::leave`] and [`FlowGroup::update`] and applies the rates it reads back with
//! [`FlowGroup::rate`]. The group holds no clock and no socket.
//!
//! The state (RFC 8699 sections 5.2 and 5.3.1):
//!
//! - per flow `i`: its priority weight `P(i)`, its desired rate `DR(i)` (the most the
//!   application can send; unlimited by default) and `FSE_R(i)`, the rate the group assigned;
//! - for the group: `S_CR`, the sum of the calculated rates.
//!
//! The algorithm (RFC 8699 section 5.3.1):
//!
//! 1. A flow that joins brings its controller's initial rate: `FSE_R(f) = CC_R(f)`,
//!    `S_CR += FSE_R(f)`.
//! 2. A flow that stops is removed from the group. `S_CR` is kept, so that the other flows take
//!    over its share at once; their controllers correct the aggregate at their next updates.
//!    (An empty group starts again from zero.)
//! 3. Whenever a flow's controller calculates a new rate `CC_R(f)`:
//!    (a) `S_CR = S_CR + CC_R(f) - FSE_R(f)`: the controller's change, relative to the rate
//!    the group gave the flow, is the group's change;
//!    (b) `S_P` = the sum of all priorities;
//!    (c) `S_CR` is divided by priority, `FSE_R(i) = min(DR(i), P(i) x S_CR / S_P)`, and what a
//!    capped flow leaves is divided among the others the same way ([`allocate`]);
//!    (d) every flow applies its new `FSE_R(i)`.
//!
//! Step 3(a) presumes that the flow's controller continues from `FSE_R(f)`: its next `CC_R(f)`
//! is a change from the rate it was given. That is the coupling: N controllers steer one
//! aggregate instead of N rates.
//!
//! RFC 8699 is written for rate-based controllers. Window-based ones take part through
//! `rate = cwnd / RTT` ([`rate_of_window`]) and apply their share as `cwnd = FSE_R x RTT`
//! ([`window_of_rate`]), with the flow's own smoothed RTT.
//!
//! Cost: while no flow has a desired rate ([`Demand::UpTo`]) a share is computed when it is
//! read, `P(f) x S_CR / S_P`, so an update costs a map look-up, not a pass over the group
//! (a group of 10 000 flows to one peer stays cheap); with desired rates the water-filling of
//! [`allocate`] runs on every change.
//!
//! Not here: RFC 8699's conservative variant (section 5.3.2, which also damps the aggregate
//! after a congestion event so that the group reacts like one flow), the passive FSE, and shared
//! bottleneck detection (the transport decides who is in a group).

mod allocate;
mod coupling;
mod share;

use std::collections::BTreeMap;
use std::time::Duration;

pub use self::allocate::{allocate, Claim};
pub use self::coupling::Coupling;
pub use self::share::{calculated_rate, differs, scale, Share};

/// A flow's handle in its [`FlowGroup`], given by [`FlowGroup::join`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlowId(u64);

impl FlowId {
    /// The number of this flow in its group (joins are numbered from 0).
    pub fn number(self) -> u64 {
        self.0
    }
}

/// What the application wants to send on one flow (RFC 8699's desired rate, `DR`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Demand {
    /// Any rate: the flow always has data (the default).
    Unlimited,
    /// At most this many bytes per second (an application-limited flow).
    UpTo(f64),
}

impl Demand {
    /// The desired rate as a cap, bytes per second (`f64::INFINITY` when unlimited).
    pub fn cap(self) -> f64 {
        match self {
            Demand::Unlimited => f64::INFINITY,
            Demand::UpTo(rate) => rate,
        }
    }

    fn check(self) -> Result<Demand, FseError> {
        match self {
            Demand::UpTo(rate) if !(rate.is_finite() && rate >= 0.0) => Err(FseError::BadRate(rate)),
            d => Ok(d),
        }
    }
}

/// A call the group refuses.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FseError {
    /// The flow is not (or no longer) in this group.
    #[error("flow {0:?} is not in this flow group")]
    UnknownFlow(FlowId),
    /// A priority weight that is not finite and above zero.
    #[error("priority weight {0} must be finite and above zero")]
    BadPriority(f64),
    /// A rate that is not finite and at least zero.
    #[error("rate {0} bytes/s must be finite and not negative")]
    BadRate(f64),
}

#[derive(Clone, Copy, Debug)]
struct Member {
    priority: f64,
    demand: Demand,
    /// `FSE_R(i)`, bytes per second.
    assigned: f64,
}

/// A group of flows that share one congestion state (RFC 8699's flow group, `FG`, with its
/// active FSE).
#[derive(Clone, Debug, Default)]
pub struct FlowGroup {
    members: BTreeMap<FlowId, Member>,
    /// `S_CR`, bytes per second.
    sum_calculated: f64,
    /// `S_P`, summed in member order (as [`allocate`] sums it).
    sum_priority: f64,
    /// Members with a desired rate ([`Demand::UpTo`]): while none, shares are computed lazily.
    limited: usize,
    next_id: u64,
    /// How many drains of the group's queue its flows began ([`FlowGroup::drain`]).
    drains: u64,
}

fn check_priority(p: f64) -> Result<f64, FseError> {
    if p.is_finite() && p > 0.0 {
        Ok(p)
    } else {
        Err(FseError::BadPriority(p))
    }
}

fn check_rate(r: f64) -> Result<f64, FseError> {
    if r.is_finite() && r >= 0.0 {
        Ok(r)
    } else {
        Err(FseError::BadRate(r))
    }
}

impl FlowGroup {
    /// An empty group.
    pub fn new() -> FlowGroup {
        FlowGroup::default()
    }

    /// Adds a flow with priority weight `priority` whose controller starts at `initial_rate`
    /// bytes per second (RFC 8699 section 5.3.1 step 1), and divides the grown aggregate anew.
    pub fn join(&mut self, priority: f64, initial_rate: f64) -> Result<FlowId, FseError> {
        let priority = check_priority(priority)?;
        let initial_rate = check_rate(initial_rate)?;
        let id = FlowId(self.next_id);
        self.next_id += 1;
        self.members.insert(id, Member { priority, demand: Demand::Unlimited, assigned: initial_rate });
        self.sum_calculated += initial_rate;
        self.members_changed();
        Ok(id)
    }

    /// Removes a flow (RFC 8699 section 5.3.1 step 2); the aggregate stays and the others share
    /// it. Leaving twice is an error.
    pub fn leave(&mut self, id: FlowId) -> Result<(), FseError> {
        self.members.remove(&id).ok_or(FseError::UnknownFlow(id))?;
        if self.members.is_empty() {
            self.sum_calculated = 0.0;
        }
        self.members_changed();
        Ok(())
    }

    /// The flow's controller calculated `calculated_rate` (`CC_R(f)`, bytes per second): the
    /// aggregate changes by `CC_R(f) - FSE_R(f)` and every flow's share is computed anew (RFC
    /// 8699 section 5.3.1 step 3). Returns the flow's new rate `FSE_R(f)`.
    pub fn update(&mut self, id: FlowId, calculated_rate: f64) -> Result<f64, FseError> {
        let cc_r = check_rate(calculated_rate)?;
        let assigned = self.rate(id)?;
        // Step 3(a). Never below zero: a controller cannot take back more than the group has.
        self.sum_calculated = (self.sum_calculated + cc_r - assigned).max(0.0);
        self.distribute();
        self.rate(id)
    }

    /// The flow's controller changed its calculated rate by `change` bytes per second since
    /// the rate it continued from (step 3(a) written as a change: `S_CR += change`, never
    /// below zero), and every share is computed anew. Returns the flow's new rate. This is
    /// [`update`](Self::update) for a transport that applies shares later than they are
    /// computed ([`Coupling`]).
    pub fn change(&mut self, id: FlowId, change: f64) -> Result<f64, FseError> {
        if !change.is_finite() {
            return Err(FseError::BadRate(change));
        }
        self.member(id)?;
        self.sum_calculated = (self.sum_calculated + change).max(0.0);
        self.distribute();
        self.rate(id)
    }

    /// Sets the flow's priority weight and divides the aggregate anew.
    pub fn set_priority(&mut self, id: FlowId, priority: f64) -> Result<(), FseError> {
        let priority = check_priority(priority)?;
        self.member_mut(id)?.priority = priority;
        self.members_changed();
        Ok(())
    }

    /// Sets what the flow's application wants to send (`DR(f)`) and divides the aggregate anew.
    pub fn set_demand(&mut self, id: FlowId, demand: Demand) -> Result<(), FseError> {
        let demand = demand.check()?;
        self.member_mut(id)?.demand = demand;
        self.members_changed();
        Ok(())
    }

    /// A flow's controller began draining its queue (Copa's drain check: the window held at
    /// the pipe until the queue is seen empty). The queue is the group's: the other flows
    /// drain with it when they see the count grown ([`Coupling::follow_drains`]). Not in RFC
    /// 8699: its controllers have no such check. Returns the group's count of drains.
    pub fn drain(&mut self) -> u64 {
        self.drains += 1;
        self.drains
    }

    /// How many drains the group's flows began ([`drain`](Self::drain)).
    pub fn drains(&self) -> u64 {
        self.drains
    }

    /// The rate the group assigned to the flow (`FSE_R(f)`), bytes per second.
    pub fn rate(&self, id: FlowId) -> Result<f64, FseError> {
        Ok(self.share_of(self.member(id)?))
    }

    /// The sum of the calculated rates (`S_CR`), bytes per second.
    pub fn aggregate(&self) -> f64 {
        self.sum_calculated
    }

    /// How many flows are in the group.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether the group has no flow.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Every flow with its assigned rate, in the order they joined.
    pub fn rates(&self) -> impl Iterator<Item = (FlowId, f64)> + '_ {
        self.members.iter().map(|(id, m)| (*id, self.share_of(m)))
    }

    fn member(&self, id: FlowId) -> Result<&Member, FseError> {
        self.members.get(&id).ok_or(FseError::UnknownFlow(id))
    }

    fn member_mut(&mut self, id: FlowId) -> Result<&mut Member, FseError> {
        self.members.get_mut(&id).ok_or(FseError::UnknownFlow(id))
    }

    /// A member's `FSE_R`: stored while some flow has a desired rate, else `P(i) x S_CR / S_P`
    /// computed here (step 3(c) without caps; a lone flow gets `S_CR` itself, exactly).
    fn share_of(&self, m: &Member) -> f64 {
        if self.limited > 0 {
            m.assigned
        } else if self.members.len() == 1 {
            self.sum_calculated
        } else {
            m.priority * (self.sum_calculated / self.sum_priority)
        }
    }

    /// Members, priorities or demands changed: `S_P` and the count of limited flows anew.
    fn members_changed(&mut self) {
        self.sum_priority = self.members.values().map(|m| m.priority).sum();
        self.limited = self.members.values().filter(|m| matches!(m.demand, Demand::UpTo(_))).count();
        self.distribute();
    }

    /// Steps 3(b) to 3(d): every flow's `FSE_R` from `S_CR` (only while some flow has a
    /// desired rate; otherwise [`share_of`](Self::share_of) computes shares when read).
    fn distribute(&mut self) {
        if self.limited == 0 {
            return;
        }
        let claims: Vec<Claim> =
            self.members.values().map(|m| Claim { priority: m.priority, desired: m.demand.cap() }).collect();
        let shares = allocate(self.sum_calculated, &claims);
        for (m, share) in self.members.values_mut().zip(shares) {
            m.assigned = share;
        }
    }
}

/// A window-based controller's rate: `cwnd / RTT`, bytes per second.
/// Zero when the RTT is zero (no estimate yet).
pub fn rate_of_window(window_bytes: u64, rtt: Duration) -> f64 {
    let secs = rtt.as_secs_f64();
    if secs > 0.0 {
        window_bytes as f64 / secs
    } else {
        0.0
    }
}

/// The window that carries `rate` bytes per second over `rtt`: `FSE_R x RTT`, bytes, rounded
/// down.
pub fn window_of_rate(rate: f64, rtt: Duration) -> u64 {
    (rate.max(0.0) * rtt.as_secs_f64()) as u64
}

#[cfg(test)]
mod tests;
