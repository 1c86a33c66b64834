//! The sans-IO link over a real cellular trace: a saturating sender gets exactly the trace's
//! capacity, and the trace loops. No root needed; skipped visibly without the shared traces (a
//! failure in CI).

use alcc_link::{Link, LinkEvent, QueueSpec, Schedule, OPPORTUNITY_BYTES};
use alcc_trace::Trace;

#[test]
fn a_saturated_link_delivers_exactly_the_trace_capacity_across_loops() {
    let rel = "alcc-paper/highwayGold.trace";
    let env = alcc_testenv::require!(alcc_testenv::needs().trace(rel));
    let trace = Trace::parse_file(env.trace(rel)).unwrap();
    let period_us = trace.period_ms() * 1000;
    let per_period = trace.opportunities_ms().len() as u64;
    let mut link: Link<()> = Link::new(Schedule::from(trace), QueueSpec::Infinite);
    let mut departed = 0u64;
    let mut sink = |e: LinkEvent<()>| {
        if let LinkEvent::Departure { packet, .. } = e {
            departed += packet.bytes;
        }
    };
    // Keep 2000 full-size packets queued (more than any millisecond of the trace carries)
    // for two and a half loops.
    let end = period_us * 5 / 2;
    let mut t = 0;
    while t < end {
        while link.backlog_packets() < 2000 {
            link.enqueue(t, (), OPPORTUNITY_BYTES, &mut sink);
        }
        t += 1000;
        link.advance(t - 1, &mut sink);
    }
    let c = link.counters();
    assert_eq!(c.wasted_bytes, 0, "a saturated link wastes nothing");
    assert_eq!(departed, c.opportunities * OPPORTUNITY_BYTES);
    // Two full loops and part of the third.
    assert!(c.opportunities > 2 * per_period && c.opportunities < 3 * per_period);
}
