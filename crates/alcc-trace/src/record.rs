//! What happened to every packet on one link: the input of [`crate::metrics`].
//!
//! Both producers of measurements make a [`Recording`]: the simulator knows, per packet, its
//! size, when it was sent into the bottleneck, and when it left it (or that it was dropped); a
//! Mahimahi link log gives the same through its arrival (`+`) and departure (`-`) lines
//! ([`crate::log::Log::to_recording`]). Times are microseconds on any common axis.
//!
//! A packet's one-way delay is `departed_us - sent_us + propagation_delay_us`: the time it
//! spent queued and serialised at the bottleneck plus the link's fixed one-way propagation delay,
//! which a Mahimahi log does not record and which the recording therefore carries beside the
//! packets.

/// One packet offered to the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketRecord {
    /// Its size in bytes.
    pub bytes: u64,
    /// When it reached the bottleneck queue (for the simulator: when it was sent).
    pub sent_us: u64,
    /// When it left the bottleneck, or `None` if it was dropped or never left.
    pub departed_us: Option<u64>,
}

impl PacketRecord {
    /// Its one-way delay given the link's propagation delay, if it left the bottleneck.
    pub fn one_way_delay_us(&self, propagation_delay_us: u64) -> Option<u64> {
        self.departed_us.map(|d| d.saturating_sub(self.sent_us).saturating_add(propagation_delay_us))
    }
}

/// One delivery opportunity of the link: a moment at which `bytes` could have left it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opportunity {
    /// When.
    pub at_us: u64,
    /// How many bytes (1500 for a Mahimahi trace).
    pub bytes: u64,
}

/// Everything [`crate::metrics`] needs about one direction of one link.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recording {
    /// Every packet that reached the bottleneck, in any order.
    pub packets: Vec<PacketRecord>,
    /// Every delivery opportunity, in any order, used or not.
    pub opportunities: Vec<Opportunity>,
    /// The link's fixed one-way propagation delay, added to every packet's time at the bottleneck.
    pub propagation_delay_us: u64,
}

impl Recording {
    /// A recording from plain tuples: packets as `(bytes, sent µs, departed µs)` and the times of
    /// opportunities of `opportunity_bytes` each (how the simulator hands over a run).
    pub fn from_parts(
        packets: impl IntoIterator<Item = (u64, u64, Option<u64>)>,
        opportunity_times_us: impl IntoIterator<Item = u64>,
        opportunity_bytes: u64,
        propagation_delay_us: u64,
    ) -> Recording {
        Recording {
            packets: packets
                .into_iter()
                .map(|(bytes, sent_us, departed_us)| PacketRecord { bytes, sent_us, departed_us })
                .collect(),
            opportunities: opportunity_times_us
                .into_iter()
                .map(|at_us| Opportunity { at_us, bytes: opportunity_bytes })
                .collect(),
            propagation_delay_us,
        }
    }

    /// The earliest and latest event time (sends, departures, opportunities), or `None` when
    /// the recording holds no event.
    pub fn span_us(&self) -> Option<(u64, u64)> {
        let times = self
            .packets
            .iter()
            .flat_map(|p| std::iter::once(p.sent_us).chain(p.departed_us))
            .chain(self.opportunities.iter().map(|o| o.at_us));
        times.fold(None, |acc, t| match acc {
            None => Some((t, t)),
            Some((lo, hi)) => Some((lo.min(t), hi.max(t))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_way_delay_adds_propagation() {
        let p = PacketRecord { bytes: 1500, sent_us: 1_000, departed_us: Some(4_500) };
        assert_eq!(p.one_way_delay_us(10_000), Some(13_500));
        let lost = PacketRecord { departed_us: None, ..p };
        assert_eq!(lost.one_way_delay_us(10_000), None);
    }

    #[test]
    fn span_covers_every_event() {
        let mut r = Recording::default();
        assert_eq!(r.span_us(), None);
        r.packets.push(PacketRecord { bytes: 100, sent_us: 50, departed_us: Some(900) });
        r.opportunities.push(Opportunity { at_us: 20, bytes: 1500 });
        assert_eq!(r.span_us(), Some((20, 900)));
    }
}
