//! Properties of the flow group's allocation (RFC 8699 section 5.3.1): for any weights, desired
//! rates and sequence of joins, leaves and updates, shares are never negative, never above a
//! flow's desired rate, sum to the aggregate (or to the sum of desired rates when that is
//! smaller), and flows that are not capped get rates in proportion to their weights.

use alcc_cc::fse::{allocate, Claim, Demand, FlowGroup, FlowId};
use proptest::prelude::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn check(aggregate: f64, claims: &[Claim], shares: &[f64]) -> Result<(), TestCaseError> {
    prop_assert_eq!(shares.len(), claims.len());
    for (c, &s) in claims.iter().zip(shares) {
        prop_assert!(s >= 0.0, "negative share {s}");
        prop_assert!(s <= c.desired * (1.0 + 1e-12), "share {s} above desired {}", c.desired);
    }
    let sum: f64 = shares.iter().sum();
    let wanted: f64 = claims.iter().map(|c| c.desired).sum();
    prop_assert!(close(sum, aggregate.min(wanted)), "sum {sum}, aggregate {aggregate}, wanted {wanted}");
    // Weighted max-min: every uncapped flow is at one level; a capped flow's level is not above it.
    let level = claims
        .iter()
        .zip(shares)
        .filter(|(c, &s)| s < c.desired * (1.0 - 1e-12))
        .map(|(c, &s)| s / c.priority)
        .collect::<Vec<_>>();
    if let Some(&first) = level.first() {
        for l in &level {
            prop_assert!(close(*l, first), "uncapped flows at levels {level:?}");
        }
        for (c, &s) in claims.iter().zip(shares) {
            prop_assert!(s / c.priority <= first * (1.0 + 1e-9) + 1e-12, "capped above the level");
        }
    }
    Ok(())
}

fn claim() -> impl Strategy<Value = Claim> {
    (0.01f64..100.0, prop_oneof![Just(f64::INFINITY), 0.0f64..1e7])
        .prop_map(|(priority, desired)| Claim { priority, desired })
}

#[derive(Debug, Clone)]
enum Op {
    Join(f64, f64),
    Leave(usize),
    Update(usize, f64),
    Demand(usize, Option<f64>),
    Priority(usize, f64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0.01f64..10.0, 0.0f64..1e7).prop_map(|(p, r)| Op::Join(p, r)),
        any::<usize>().prop_map(Op::Leave),
        (any::<usize>(), 0.0f64..2e7).prop_map(|(i, r)| Op::Update(i, r)),
        (any::<usize>(), prop::option::of(0.0f64..1e7)).prop_map(|(i, d)| Op::Demand(i, d)),
        (any::<usize>(), 0.01f64..10.0).prop_map(|(i, p)| Op::Priority(i, p)),
    ]
}

proptest! {
    #[test]
    fn allocation_is_weighted_max_min(aggregate in 0.0f64..1e8, claims in prop::collection::vec(claim(), 0..12)) {
        let shares = allocate(aggregate, &claims);
        check(aggregate, &claims, &shares)?;
    }

    #[test]
    fn any_sequence_of_calls_keeps_the_group_consistent(ops in prop::collection::vec(op(), 1..60)) {
        let mut g = FlowGroup::new();
        // The model: each flow's weight and desired rate, to check the group against.
        let mut flows: Vec<(FlowId, f64, f64)> = Vec::new();
        for op in ops {
            let pick = |i: usize| (!flows.is_empty()).then(|| i % flows.len());
            match op {
                Op::Join(p, r) => flows.push((g.join(p, r).unwrap(), p, f64::INFINITY)),
                Op::Leave(i) => if let Some(k) = pick(i) { g.leave(flows.remove(k).0).unwrap() },
                Op::Update(i, r) => if let Some(k) = pick(i) {
                    let before = g.aggregate() - g.rate(flows[k].0).unwrap();
                    let got = g.update(flows[k].0, r).unwrap();
                    prop_assert!(close(g.aggregate(), (before + r).max(0.0)), "S_CR += CC_R - FSE_R");
                    prop_assert_eq!(got, g.rate(flows[k].0).unwrap());
                },
                Op::Demand(i, d) => if let Some(k) = pick(i) {
                    g.set_demand(flows[k].0, d.map_or(Demand::Unlimited, Demand::UpTo)).unwrap();
                    flows[k].2 = d.unwrap_or(f64::INFINITY);
                },
                Op::Priority(i, p) => if let Some(k) = pick(i) {
                    g.set_priority(flows[k].0, p).unwrap();
                    flows[k].1 = p;
                },
            }
            prop_assert_eq!(g.len(), flows.len());
            prop_assert!(g.aggregate() >= 0.0);
            let claims: Vec<Claim> = flows.iter().map(|f| Claim { priority: f.1, desired: f.2 }).collect();
            let shares: Vec<f64> = flows.iter().map(|f| g.rate(f.0).unwrap()).collect();
            check(g.aggregate(), &claims, &shares)?;
        }
    }
}
