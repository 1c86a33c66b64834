//! The link itself, sans-IO: a queue drained by the delivery opportunities of a [`Schedule`].
//!
//! The model is Mahimahi's `LinkQueue`: each opportunity carries up to 1500 bytes; a packet
//! may need several opportunities (the bytes left of the packet "in transit" carry over) and
//! one opportunity may carry several small packets; bytes an opportunity cannot use are
//! wasted; the trace loops.
//!
//! One deliberate refinement: time here is in microseconds, and an opportunity at trace
//! millisecond `t` stays usable during the whole millisecond `[t, t+1)`. Mahimahi reads its
//! clock in whole milliseconds, so it spends an opportunity the moment millisecond `t` begins
//! and a packet arriving at `t + 0.3 ms` waits for the next one (on average half an
//! opportunity gap more per direction). Here that packet leaves at `t + 0.3 ms`, so an idle
//! 12 Mbit/s link adds no delay and a ping sees exactly twice the propagation delay.
//!
//! The driver calls [`Link::advance`] when its clock reaches [`Link::next_wakeup`], and
//! [`Link::enqueue`] for each arriving packet; both report what happened through a sink, in
//! time order.

use crate::queue::{PacketQueue, QueueSpec, Queued};
use crate::schedule::{Schedule, OPPORTUNITY_BYTES};

/// Something that happened on the link, in time order.
#[derive(Debug, PartialEq, Eq)]
pub enum LinkEvent<P> {
    /// A delivery opportunity began (Mahimahi's `#` line).
    Opportunity {
        /// Its start, µs.
        at_us: u64,
    },
    /// A packet arrived at the queue (`+`).
    Arrival {
        /// When, µs.
        at_us: u64,
        /// Its size.
        bytes: u64,
    },
    /// The queue refused an arriving packet (`d`).
    Drop {
        /// When, µs.
        at_us: u64,
        /// The packet.
        packet: Queued<P>,
    },
    /// A packet's last byte left the link (`-`); the queueing delay is `at_us - arrival_us`.
    Departure {
        /// When, µs.
        at_us: u64,
        /// The packet.
        packet: Queued<P>,
    },
}

/// Running totals of a link, for throughput and capacity figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Packets that arrived.
    pub arrivals: u64,
    /// Bytes that arrived.
    pub arrival_bytes: u64,
    /// Packets that departed.
    pub departures: u64,
    /// Bytes that departed.
    pub departure_bytes: u64,
    /// Packets refused by the queue.
    pub drops: u64,
    /// Bytes refused by the queue.
    pub drop_bytes: u64,
    /// Delivery opportunities that began.
    pub opportunities: u64,
    /// Opportunity bytes that carried nothing.
    pub wasted_bytes: u64,
}

/// The unused part of the opportunities of the current millisecond.
#[derive(Clone, Copy, Debug)]
struct Window {
    end_us: u64,
    bytes_left: u64,
}

/// A queue released by trace-driven delivery opportunities.
#[derive(Debug)]
pub struct Link<P> {
    schedule: Schedule,
    next_opportunity: u64,
    queue: PacketQueue<P>,
    in_transit: Option<(Queued<P>, u64)>,
    window: Option<Window>,
    counters: LinkCounters,
}

impl<P> Link<P> {
    /// A link whose time 0 is the start of the schedule.
    pub fn new(schedule: Schedule, queue: QueueSpec) -> Self {
        Link {
            schedule,
            next_opportunity: 0,
            queue: PacketQueue::new(queue),
            in_transit: None,
            window: None,
            counters: LinkCounters::default(),
        }
    }

    /// Start of the next opportunity not yet begun, µs.
    fn next_start_us(&self) -> u64 {
        self.schedule.opportunity_ms(self.next_opportunity).saturating_mul(1000)
    }

    /// Begins every opportunity that starts at or before `now_us` and serves the queue with it.
    pub fn advance(&mut self, now_us: u64, sink: &mut impl FnMut(LinkEvent<P>)) {
        loop {
            let start = self.next_start_us();
            if start > now_us {
                break;
            }
            self.next_opportunity += 1;
            self.counters.opportunities += 1;
            sink(LinkEvent::Opportunity { at_us: start });
            let end_us = start - start % 1000 + 1000;
            match &mut self.window {
                Some(w) if w.end_us == end_us => w.bytes_left += OPPORTUNITY_BYTES,
                slot => {
                    if let Some(old) = slot.take() {
                        self.counters.wasted_bytes += old.bytes_left;
                    }
                    *slot = Some(Window { end_us, bytes_left: OPPORTUNITY_BYTES });
                }
            }
            self.serve(start, sink);
        }
        if let Some(w) = self.window {
            if w.end_us <= now_us {
                self.counters.wasted_bytes += w.bytes_left;
                self.window = None;
            }
        }
    }

    /// A packet of `bytes` bytes arrives at `now_us` (not earlier than any previous call).
    /// Returns whether the queue admitted it.
    pub fn enqueue(
        &mut self,
        now_us: u64,
        payload: P,
        bytes: u64,
        sink: &mut impl FnMut(LinkEvent<P>),
    ) -> bool {
        self.advance(now_us, sink);
        self.counters.arrivals += 1;
        self.counters.arrival_bytes += bytes;
        sink(LinkEvent::Arrival { at_us: now_us, bytes });
        let packet = Queued { payload, bytes, arrival_us: now_us };
        match self.queue.enqueue(packet) {
            Ok(()) => {
                self.serve(now_us, sink);
                true
            }
            Err(packet) => {
                self.counters.drops += 1;
                self.counters.drop_bytes += bytes;
                sink(LinkEvent::Drop { at_us: now_us, packet });
                false
            }
        }
    }

    /// Spends what is left of the current window on the queue, at time `now_us`.
    fn serve(&mut self, now_us: u64, sink: &mut impl FnMut(LinkEvent<P>)) {
        let Some(window) = self.window.as_mut() else { return };
        while window.bytes_left > 0 {
            let (packet, left) = match self.in_transit.take() {
                Some(t) => t,
                None => match self.queue.dequeue() {
                    Some(p) => {
                        let b = p.bytes;
                        (p, b)
                    }
                    None => break,
                },
            };
            let sent = left.min(window.bytes_left);
            window.bytes_left -= sent;
            if left == sent {
                self.counters.departures += 1;
                self.counters.departure_bytes += packet.bytes;
                let at_us = now_us.max(packet.arrival_us);
                sink(LinkEvent::Departure { at_us, packet });
            } else {
                self.in_transit = Some((packet, left - sent));
            }
        }
    }

    /// When the driver must call [`Link::advance`] next: the next opportunity while packets
    /// wait, `None` when the link is idle (opportunities of an idle link are accounted
    /// lazily at the next call).
    pub fn next_wakeup(&self) -> Option<u64> {
        (self.in_transit.is_some() || !self.queue.is_empty()).then(|| self.next_start_us())
    }

    /// Packets waiting (the one in transit included).
    pub fn backlog_packets(&self) -> usize {
        self.queue.len() + usize::from(self.in_transit.is_some())
    }

    /// Running totals.
    pub fn counters(&self) -> LinkCounters {
        self.counters
    }

    /// The queue's limits.
    pub fn queue_spec(&self) -> QueueSpec {
        self.queue.spec()
    }

    /// The schedule.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Departures as (payload, time) from a run of arrivals (time µs, payload, bytes).
    fn run(
        schedule: Vec<u64>,
        queue: QueueSpec,
        arrivals: &[(u64, u32, u64)],
        until: u64,
    ) -> Vec<(u32, u64)> {
        let mut link = Link::new(Schedule::new(schedule).unwrap(), queue);
        let mut out = Vec::new();
        let mut sink = |e: LinkEvent<u32>| {
            if let LinkEvent::Departure { at_us, packet } = e {
                out.push((packet.payload, at_us));
            }
        };
        for &(t, id, b) in arrivals {
            link.enqueue(t, id, b, &mut sink);
        }
        link.advance(until, &mut sink);
        out
    }

    #[test]
    fn a_packet_waits_for_the_first_opportunity_and_uses_the_current_one_at_once() {
        // Constant 12 Mbit/s: one opportunity at the start of every millisecond from 1 ms.
        let d = run(vec![1], QueueSpec::Infinite, &[(300, 1, 1500), (5_300, 2, 1500)], 10_000);
        assert_eq!(d, vec![(1, 1_000), (2, 5_300)]);
    }

    #[test]
    fn one_opportunity_carries_several_small_packets() {
        let arrivals = [(0, 1, 500), (0, 2, 500), (0, 3, 500), (0, 4, 500)];
        let d = run(vec![1], QueueSpec::Infinite, &arrivals, 10_000);
        assert_eq!(d, vec![(1, 1_000), (2, 1_000), (3, 1_000), (4, 2_000)]);
    }

    #[test]
    fn a_packet_in_transit_carries_its_remaining_bytes_over() {
        // 1000 bytes used at 1 ms leave 500; the 1500-byte packet takes them and 1000 of 2 ms,
        // then a 600-byte packet fits in neither the 500 left at 2 ms: it leaves at 3 ms.
        let arrivals = [(0, 1, 1000), (0, 2, 1500), (0, 3, 600)];
        let d = run(vec![1], QueueSpec::Infinite, &arrivals, 10_000);
        assert_eq!(d, vec![(1, 1_000), (2, 2_000), (3, 3_000)]);
    }

    #[test]
    fn unused_opportunities_are_wasted() {
        let mut link: Link<u32> = Link::new(Schedule::new(vec![1, 1, 1, 2]).unwrap(), QueueSpec::Infinite);
        let mut deps = Vec::new();
        let mut sink = |e: LinkEvent<u32>| {
            if let LinkEvent::Departure { at_us, packet } = e {
                deps.push((packet.payload, at_us));
            }
        };
        // Idle through ms 1 (three opportunities, 4500 bytes): all wasted.
        link.enqueue(2_000, 1, 1500, &mut sink);
        link.enqueue(2_001, 2, 1500, &mut sink);
        link.advance(4_500, &mut sink);
        // Opportunities: 1, 1, 1, 2 | 3, 3, 3, 4 (period 2). Packet 1 takes the one at 2 ms,
        // packet 2 (arrived after it) the first at 3 ms.
        assert_eq!(deps, vec![(1, 2_000), (2, 3_000)]);
        let c = link.counters();
        assert_eq!(c.opportunities, 8);
        // All of ms 1, and 3000 of the 4500 bytes of ms 3; ms 4 is still open at 4.5 ms.
        assert_eq!(c.wasted_bytes, 4500 + 3000);
        link.advance(5_000, &mut |_| {});
        assert_eq!(link.counters().wasted_bytes, 4500 + 3000 + 1500);
    }

    #[test]
    fn trace_loops_with_period_equal_to_last_timestamp() {
        // Opportunities at 0, 2, 2, 5 | 5, 7, 7, 10 | ...
        let arrivals: Vec<(u64, u32, u64)> = (0..8).map(|i| (0, i, 1500)).collect();
        let d = run(vec![0, 2, 2, 5], QueueSpec::Infinite, &arrivals, 20_000);
        let times: Vec<u64> = d.iter().map(|x| x.1).collect();
        assert_eq!(times, vec![0, 2_000, 2_000, 5_000, 5_000, 7_000, 7_000, 10_000]);
    }

    #[test]
    fn droptail_drops_and_the_link_reports_it() {
        let mut link: Link<u32> =
            Link::new(Schedule::constant(1).unwrap(), QueueSpec::DropTail { packets: Some(2), bytes: None });
        let mut events = Vec::new();
        let mut sink = |e: LinkEvent<u32>| events.push(e);
        assert!(link.enqueue(100, 1, 1500, &mut sink));
        assert!(link.enqueue(100, 2, 1500, &mut sink));
        assert!(!link.enqueue(100, 3, 1500, &mut sink));
        assert_eq!(link.counters().drops, 1);
        assert_eq!(link.next_wakeup(), Some(1_000));
        link.advance(1_000, &mut sink);
        // At 1 ms packet 1 leaves; packet 2 waits, so a third fits again.
        assert!(link.enqueue(1_500, 4, 1500, &mut sink));
        assert!(matches!(events[4], LinkEvent::Opportunity { at_us: 1_000 }));
        assert!(matches!(&events[5], LinkEvent::Departure { at_us: 1_000, packet } if packet.payload == 1));
    }

    proptest! {
        #[test]
        fn departures_are_fifo_causal_and_within_capacity(
            gaps in proptest::collection::vec(0u64..3_000, 1..300),
            sizes in proptest::collection::vec(1u64..=1500, 300),
            trace in proptest::collection::vec(0u64..20, 1..40),
            limit in proptest::option::of(1u64..20),
            byte_limit in proptest::option::of(1500u64..30_000),
        ) {
            let mut trace = trace;
            trace.sort_unstable();
            if *trace.last().unwrap() == 0 { trace.push(1); }
            let spec = match (limit, byte_limit) {
                (None, None) => QueueSpec::Infinite,
                (packets, bytes) => QueueSpec::DropTail { packets, bytes },
            };
            let schedule = Schedule::new(trace).unwrap();
            let mut link: Link<usize> = Link::new(schedule.clone(), spec);
            let mut events = Vec::new();
            let mut t = 0u64;
            for (i, g) in gaps.iter().enumerate() {
                t += g;
                let mut sink = |e: LinkEvent<usize>| events.push(e);
                link.enqueue(t, i, sizes[i], &mut sink);
                if let Some(w) = link.next_wakeup() { prop_assert!(w > t || link.backlog_packets() == 0); }
            }
            let end = t + 10_000_000;
            link.advance(end, &mut |e| events.push(e));
            let mut last_time = 0;
            let mut next_id = 0usize;
            let (mut opp, mut departed, mut dropped) = (0u64, 0u64, 0u64);
            for e in &events {
                let at = match e {
                    LinkEvent::Opportunity { at_us } => { opp += 1; *at_us }
                    LinkEvent::Arrival { at_us, .. } => *at_us,
                    LinkEvent::Drop { at_us, packet } => { dropped += 1; prop_assert!(packet.payload >= next_id); *at_us }
                    LinkEvent::Departure { at_us, packet } => {
                        prop_assert!(packet.payload >= next_id, "FIFO");
                        next_id = packet.payload + 1;
                        prop_assert!(*at_us >= packet.arrival_us);
                        departed += packet.bytes;
                        // Never more bytes out than the opportunities begun so far carry.
                        prop_assert!(departed <= opp * OPPORTUNITY_BYTES);
                        *at_us
                    }
                };
                prop_assert!(at >= last_time, "events in time order");
                last_time = at;
            }
            let c = link.counters();
            prop_assert_eq!(c.arrivals, gaps.len() as u64);
            prop_assert_eq!(c.arrivals, c.departures + c.drops + link.backlog_packets() as u64);
            prop_assert_eq!(c.drops, dropped);
            // Ten seconds drain 300 packets through any schedule here (at least one opportunity per 20 ms).
            prop_assert_eq!(link.backlog_packets(), 0);
            prop_assert!(c.departure_bytes + c.wasted_bytes <= c.opportunities * OPPORTUNITY_BYTES);
        }
    }
}
