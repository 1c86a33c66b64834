//! [`Groups`]: the flow groups of one process, owned by the driver thread, and
//! [`Membership`], a flow's place in one of them.

use std::collections::HashMap;

use alcc_cc::fse::{FlowGroup, FlowId};
use alcc_cc::Time;

use super::grouping::GroupKey;
use super::remote::RemoteGroup;

/// Every flow group of the process, by key (the driver's; no lock, one thread): its own, and
/// its view of groups on the host's manager.
#[derive(Debug, Default)]
pub(crate) struct Groups {
    groups: HashMap<GroupKey, FlowGroup>,
    remote: HashMap<GroupKey, RemoteGroup>,
}

/// What a flow gets from its group: its weighted share, and the group's mean rate (the
/// aggregate over its number of flows), which its controller continues from
/// ([`alcc_cc::fse::Coupling::apply`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Portion {
    /// `FSE_R(f)`, bytes/s.
    pub share: f64,
    /// `S_CR / N`, bytes/s.
    pub mean: f64,
}

impl Portion {
    fn of(group: &FlowGroup, id: FlowId) -> Option<Portion> {
        let share = group.rate(id).ok()?;
        // A lone flow's mean is its share, exactly.
        let mean = if group.len() == 1 { share } else { group.aggregate() / group.len() as f64 };
        Some(Portion { share, mean })
    }

    /// This portion with the flow's own change since it was computed, `moved` bytes/s, added to
    /// the mean (the share in proportion): what the controller continues from when the portion
    /// comes from a host's manager, whose answer counts only the changes reported before it.
    /// Without, the controller would be set back to where it was at that report and repeat
    /// its moves since, which the group counts again at the next report.
    pub fn moved_by(self, moved: f64) -> Portion {
        let mean = (self.mean + moved).max(0.0);
        let share = if self.mean > 0.0 { self.share * (mean / self.mean) } else { self.share };
        Portion { share, mean }
    }
}

/// What a flow's step gets from its group.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Answer {
    /// A portion computed since the flow's last step (in a process's own group, at every
    /// step): the controller is offered its mean ([`alcc_cc::fse::Coupling::apply`]).
    New(Portion),
    /// No new answer from the host's manager since the one the flow last applied: the
    /// controller keeps its own moves since ([`alcc_cc::fse::Coupling::hold`]).
    Held,
}

/// A flow's id in its group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemberId {
    /// In a group of this process.
    Local(FlowId),
    /// In a group on the host's manager.
    Remote(u32),
}

impl Groups {
    /// Adds a flow with `weight` whose controller calculates `rate` to group `key` (made on
    /// first use); returns its id and its [`Portion`].
    pub fn join(&mut self, key: &GroupKey, weight: f64, rate: f64) -> Option<(FlowId, Portion)> {
        let group = self.groups.entry(key.clone()).or_default();
        let id = group.join(weight, rate).ok()?;
        Some((id, Portion::of(group, id)?))
    }

    /// The flow's controller changed its rate by `change` since it last reported: its new
    /// [`Portion`] (RFC 8699 section 5.3.1 step 3).
    pub fn change(&mut self, key: &GroupKey, id: FlowId, change: f64) -> Option<Portion> {
        let group = self.groups.get_mut(key)?;
        group.change(id, change).ok()?;
        Portion::of(group, id)
    }

    /// A flow of group `key` began draining its queue: the group's count of drains
    /// ([`FlowGroup::drain`]).
    pub fn drain(&mut self, key: &GroupKey) -> Option<u64> {
        Some(self.groups.get_mut(key)?.drain())
    }

    /// How many drains the flows of group `key` began ([`FlowGroup::drains`]).
    pub fn drains(&self, key: &GroupKey) -> Option<u64> {
        Some(self.groups.get(key)?.drains())
    }

    /// The flow's share now (others' changes since its last step included).
    #[cfg(test)]
    pub fn rate(&self, key: &GroupKey, id: FlowId) -> Option<f64> {
        self.groups.get(key)?.rate(id).ok()
    }

    /// Sets the flow's weight.
    pub fn set_weight(&mut self, key: &GroupKey, id: MemberId, weight: f64, now: Time) {
        match id {
            MemberId::Local(id) => {
                if let Some(g) = self.groups.get_mut(key) {
                    let _ = g.set_priority(id, weight);
                }
            }
            MemberId::Remote(id) => {
                if let Some(g) = self.remote.get_mut(key) {
                    g.set_weight(id, weight, now);
                }
            }
        }
    }

    /// Removes the flow; a group left empty is forgotten (a remote one's connection closed).
    pub fn leave(&mut self, key: &GroupKey, id: MemberId, now: Time) {
        match id {
            MemberId::Local(id) => {
                if let Some(g) = self.groups.get_mut(key) {
                    let _ = g.leave(id);
                    if g.is_empty() {
                        self.groups.remove(key);
                    }
                }
            }
            MemberId::Remote(id) => {
                if let Some(g) = self.remote.get_mut(key) {
                    g.remove(id, now);
                    if g.is_empty() {
                        self.remote.remove(key);
                    }
                }
            }
        }
    }

    /// The host manager's group `key` (a [`GroupKey::Managed`]), made on first use.
    fn remote(&mut self, key: &GroupKey) -> Option<&mut RemoteGroup> {
        let GroupKey::Managed { socket, name } = key else { return None };
        Some(self.remote.entry(key.clone()).or_insert_with(|| RemoteGroup::new(socket.clone(), name.clone())))
    }

    /// Whether a flow of group `key` is alone in it, so that no other flow moves its share: a
    /// local group of at most one flow (one on the host's manager may hold flows of other
    /// processes).
    pub fn holds_at_most_one(&self, key: &GroupKey) -> bool {
        match key {
            GroupKey::Managed { .. } => false,
            _ => self.groups.get(key).map_or(0, FlowGroup::len) <= 1,
        }
    }

    /// How many flows group `key` holds.
    #[cfg(test)]
    pub fn len_of(&self, key: &GroupKey) -> usize {
        self.groups.get(key).map_or(0, FlowGroup::len)
    }

    /// How many groups exist (local and remote), and how many flows they hold in all.
    #[cfg(test)]
    pub fn census(&self) -> (usize, usize) {
        let flows = self.groups.values().map(FlowGroup::len).sum();
        (self.groups.len() + self.remote.len(), flows)
    }
}

/// A flow's place in its group.
#[derive(Clone, Debug)]
pub(crate) struct Membership {
    /// Its group; `None` for an uncoupled flow.
    pub key: Option<GroupKey>,
    /// Its priority weight.
    pub weight: f64,
    /// Its id in the group, once it joined (at its first step with a rate to share).
    pub id: Option<MemberId>,
}

impl Membership {
    /// A flow in group `key` (or none) with `weight`, not joined yet.
    pub fn new(key: Option<GroupKey>, weight: f64) -> Membership {
        Membership { key, weight, id: None }
    }

    /// Reports the controller's `rate` or its `change` and returns the flow's share; joins
    /// at the first call. `None` for an uncoupled flow, and in a manager's group until the
    /// manager answered (or while it cannot be reached).
    pub fn share(&mut self, groups: &mut Groups, rate: f64, change: f64, now: Time) -> Option<Answer> {
        let key = self.key.as_ref()?;
        if matches!(key, GroupKey::Managed { .. }) {
            let weight = self.weight;
            let group = groups.remote(key)?;
            let id = match self.id {
                Some(MemberId::Remote(id)) => id,
                _ => {
                    let id = group.add(weight);
                    self.id = Some(MemberId::Remote(id));
                    id
                }
            };
            return group.report(id, rate, change, now);
        }
        let portion = match self.id {
            Some(MemberId::Local(id)) => groups.change(key, id, change),
            _ => {
                let (id, share) = groups.join(key, self.weight, rate)?;
                self.id = Some(MemberId::Local(id));
                Some(share)
            }
        };
        portion.map(Answer::New)
    }

    /// The flow's controller began draining its queue (Copa's drain check): counted in its
    /// group, whose count is returned; `None` before the flow joined, and in a manager's group
    /// (the manager does not relay drains yet: there each flow drains alone).
    pub fn drain(&self, groups: &mut Groups) -> Option<u64> {
        match (&self.key, self.id) {
            (Some(key), Some(MemberId::Local(_))) => groups.drain(key),
            _ => None,
        }
    }

    /// The count of drains the flow's group began (see [`drain`](Self::drain)); `None` as there.
    pub fn drains(&self, groups: &Groups) -> Option<u64> {
        match (&self.key, self.id) {
            (Some(key), Some(MemberId::Local(_))) => groups.drains(key),
            _ => None,
        }
    }

    /// Sets the weight (in the group too, if joined).
    pub fn set_weight(&mut self, groups: &mut Groups, weight: f64, now: Time) {
        self.weight = weight;
        if let (Some(key), Some(id)) = (&self.key, self.id) {
            groups.set_weight(key, id, weight, now);
        }
    }

    /// Leaves the group (the flow ended); its share goes to the others.
    pub fn leave(&mut self, groups: &mut Groups, now: Time) {
        if let (Some(key), Some(id)) = (&self.key, self.id.take()) {
            groups.leave(key, id, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_join_share_and_leave() {
        let key = GroupKey::Named("g".into());
        let mut groups = Groups::default();
        let mut a = Membership::new(Some(key.clone()), 1.0);
        let mut b = Membership::new(Some(key.clone()), 3.0);
        let t = Time::ZERO;
        let share = |p: Option<Answer>| match p {
            Some(Answer::New(p)) => Some(p.share),
            _ => None,
        };
        assert_eq!(
            a.share(&mut groups, 1000.0, 0.0, t),
            Some(Answer::New(Portion { share: 1000.0, mean: 1000.0 })),
            "alone"
        );
        assert_eq!(share(b.share(&mut groups, 1000.0, 0.0, t)), Some(1500.0));
        assert_eq!(
            a.share(&mut groups, 0.0, 400.0, t),
            Some(Answer::New(Portion { share: 600.0, mean: 1200.0 })),
            "the aggregate grew to 2400"
        );
        a.leave(&mut groups, t);
        let Some(MemberId::Local(bid)) = b.id else { panic!("b joined locally") };
        assert_eq!(groups.rate(&key, bid), Some(2400.0), "the leaver's share is the other's");
        assert_eq!(b.drains(&groups), Some(0));
        assert_eq!(b.drain(&mut groups), Some(1), "a drain of b's group");
        assert_eq!(b.drains(&groups), Some(1));
        b.leave(&mut groups, t);
        assert_eq!(groups.len_of(&key), 0);
        let mut none = Membership::new(None, 1.0);
        assert_eq!(none.share(&mut groups, 1000.0, 0.0, t), None);
        assert_eq!(none.drain(&mut groups), None);
    }

    /// Issue 18 (the soak's RSS with coupling on): the groups' state must not outlive their
    /// flows. 10 000 flows to 500 peers, up to 64 at a time, joining, reporting and leaving
    /// in an interleaved order (some never joined: no rate yet): once all have left, no group
    /// and no member is left.
    #[test]
    fn groups_are_forgotten_when_their_last_flow_leaves() {
        let mut groups = Groups::default();
        let t = Time::ZERO;
        let mut live: std::collections::VecDeque<Membership> = std::collections::VecDeque::new();
        let mut most = 0;
        for i in 0u32..10_000 {
            let peer = std::net::IpAddr::from([10, 0, (i % 500 / 250) as u8, (i % 250) as u8]);
            let mut m = Membership::new(Some(GroupKey::Peer(peer)), 1.0 + f64::from(i % 3));
            if i % 7 != 0 {
                m.share(&mut groups, 1000.0, 0.0, t);
                m.share(&mut groups, 0.0, f64::from(i % 50) - 25.0, t);
            }
            live.push_back(m);
            most = most.max(groups.census().0);
            if live.len() >= 64 {
                // Leave out of order: the oldest or the newest.
                let mut gone = if i % 2 == 0 { live.pop_front() } else { live.pop_back() }.unwrap();
                gone.leave(&mut groups, t);
            }
        }
        assert!(most >= 50, "the flows were spread over peers ({most} groups at most)");
        for mut m in live.drain(..) {
            m.leave(&mut groups, t);
        }
        assert_eq!(groups.census(), (0, 0));
    }
}
