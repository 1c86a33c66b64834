//! Exact allocations of the flow group (RFC 8699 section 5.3.1).

use std::time::Duration;

use super::*;

fn rates(g: &FlowGroup) -> Vec<f64> {
    g.rates().map(|(_, r)| r).collect()
}

#[test]
fn two_equal_flows_share_the_sum_of_their_rates() {
    let mut g = FlowGroup::new();
    let a = g.join(1.0, 4000.0).unwrap();
    assert_eq!(g.rate(a).unwrap(), 4000.0, "alone, a flow keeps its own rate");
    let b = g.join(1.0, 2000.0).unwrap();
    assert_eq!(g.aggregate(), 6000.0);
    assert_eq!(rates(&g), vec![3000.0, 3000.0]);
    // a's controller, given 3000, calculates 3600: the aggregate grows by 600.
    assert_eq!(g.update(a, 3600.0).unwrap(), 3300.0);
    assert_eq!(g.rate(b).unwrap(), 3300.0);
    assert_eq!(g.aggregate(), 6600.0);
    // b's controller halves its given rate: the aggregate loses 1650.
    assert_eq!(g.update(b, 1650.0).unwrap(), 2475.0);
    assert_eq!(rates(&g), vec![2475.0, 2475.0]);
}

#[test]
fn weights_one_two_three_four() {
    let mut g = FlowGroup::new();
    let ids: Vec<FlowId> = [1.0, 2.0, 3.0, 4.0].iter().map(|&p| g.join(p, 2500.0).unwrap()).collect();
    assert_eq!(rates(&g), vec![1000.0, 2000.0, 3000.0, 4000.0]);
    // The weight-4 flow's controller adds 2000 to its 4000: everyone gains in proportion.
    assert_eq!(g.update(ids[3], 6000.0).unwrap(), 4800.0);
    assert_eq!(rates(&g), vec![1200.0, 2400.0, 3600.0, 4800.0]);
    // Weights 3:2:3:4 share 12000 in twelfths.
    g.set_priority(ids[0], 3.0).unwrap();
    assert_eq!(rates(&g), vec![3000.0, 2000.0, 3000.0, 4000.0]);
}

#[test]
fn a_flow_with_a_small_desired_rate_leaves_the_rest_to_the_others() {
    let mut g = FlowGroup::new();
    let ids: Vec<FlowId> = (0..3).map(|_| g.join(1.0, 4000.0).unwrap()).collect();
    g.set_demand(ids[1], Demand::UpTo(1000.0)).unwrap();
    assert_eq!(rates(&g), vec![5500.0, 1000.0, 5500.0]);
    // A high-priority flow that wants little does not take more than it wants.
    g.set_priority(ids[1], 10.0).unwrap();
    assert_eq!(rates(&g), vec![5500.0, 1000.0, 5500.0]);
    g.set_demand(ids[1], Demand::UpTo(9000.0)).unwrap();
    // Weight 10 of 12 would give it 10000: capped at 9000, the other two share 3000.
    assert_eq!(rates(&g), vec![1500.0, 9000.0, 1500.0]);
    g.set_demand(ids[1], Demand::Unlimited).unwrap();
    assert_eq!(rates(&g), vec![1000.0, 10_000.0, 1000.0]);
}

#[test]
fn joins_add_their_initial_rate_and_leavers_leave_their_share() {
    let mut g = FlowGroup::new();
    let a = g.join(1.0, 3000.0).unwrap();
    let b = g.join(2.0, 3000.0).unwrap();
    assert_eq!(rates(&g), vec![2000.0, 4000.0]);
    let c = g.join(3.0, 6000.0).unwrap();
    assert_eq!(rates(&g), vec![2000.0, 4000.0, 6000.0]);
    g.leave(b).unwrap();
    // The aggregate stays: a and c take b's share at once, 1:3.
    assert_eq!(g.aggregate(), 12_000.0);
    assert_eq!(rates(&g), vec![3000.0, 9000.0]);
    assert_eq!(g.leave(b), Err(FseError::UnknownFlow(b)));
    assert_eq!(g.update(b, 1.0), Err(FseError::UnknownFlow(b)));
    g.leave(a).unwrap();
    assert_eq!(g.rate(c).unwrap(), 12_000.0);
    g.leave(c).unwrap();
    assert!(g.is_empty());
    assert_eq!(g.aggregate(), 0.0, "an empty group starts from zero");
    let d = g.join(1.0, 500.0).unwrap();
    assert_eq!(d.number(), 3, "ids are not reused");
    assert_eq!(g.rate(d).unwrap(), 500.0);
}

#[test]
fn bad_values_are_refused_and_change_nothing() {
    let mut g = FlowGroup::new();
    let a = g.join(1.0, 1000.0).unwrap();
    for p in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(g.join(p, 1.0), Err(FseError::BadPriority(_))), "{p}");
        assert!(matches!(g.set_priority(a, p), Err(FseError::BadPriority(_))), "{p}");
    }
    for r in [-1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(g.join(1.0, r), Err(FseError::BadRate(_))), "{r}");
        assert!(matches!(g.update(a, r), Err(FseError::BadRate(_))), "{r}");
        assert!(matches!(g.set_demand(a, Demand::UpTo(r)), Err(FseError::BadRate(_))), "{r}");
    }
    assert_eq!(g.len(), 1);
    assert_eq!(g.rate(a).unwrap(), 1000.0);
    assert!(FseError::BadPriority(0.0).to_string().contains("above zero"));
}

#[test]
fn a_controller_that_stops_takes_its_share_out_of_the_aggregate() {
    let mut g = FlowGroup::new();
    let a = g.join(1.0, 1000.0).unwrap();
    let b = g.join(1.0, 0.0).unwrap();
    assert_eq!(rates(&g), vec![500.0, 500.0]);
    // b was given 500 and its controller answers 0: the aggregate loses 500.
    g.update(b, 0.0).unwrap();
    assert_eq!(g.aggregate(), 500.0);
    assert_eq!(rates(&g), vec![250.0, 250.0]);
    g.update(a, 0.0).unwrap();
    assert_eq!(g.aggregate(), 250.0);
    assert_eq!(rates(&g), vec![125.0, 125.0]);
}

#[test]
fn windows_and_rates() {
    let rtt = Duration::from_millis(40);
    assert_eq!(rate_of_window(60_000, rtt), 1_500_000.0);
    assert_eq!(window_of_rate(1_500_000.0, rtt), 60_000);
    assert_eq!(rate_of_window(60_000, Duration::ZERO), 0.0);
    assert_eq!(window_of_rate(-5.0, rtt), 0);
}
