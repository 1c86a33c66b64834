//! The division of a flow group's aggregate among its flows: by priority weight, each flow's
//! desired rate capped and what it leaves redistributed among the others (RFC 8699 section
//! 5.3.1, step 3(c)).
//!
//! RFC 8699 writes step 3(c) as a loop that hands every flow `TLO x P(i) / S_P` of the total
//! leftover rate `TLO`, fixes a flow at its desired rate `DR(i)` when that share reaches it
//! (taking `DR(i)` off `TLO` and `P(i)` off the priority sum `S_P`), and repeats while rate is
//! left over. What the loop converges to is weighted water-filling: one level `L` such that
//!
//! ```text
//! FSE_R(i) = min(DR(i), P(i) x L)   and   sum_i FSE_R(i) = min(S_CR, sum_i DR(i))
//! ```
//!
//! This module computes that point directly, in one pass over the flows sorted by `DR(i) / P(i)`
//! (the level at which each would be capped), so the result does not depend on the order in
//! which the flows are visited and needs no convergence tolerance.

/// One flow's claim: its priority weight and the most it wants.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Claim {
    /// Priority weight `P(i)`, finite and above zero.
    pub priority: f64,
    /// Desired rate `DR(i)` in bytes per second; `f64::INFINITY` when the flow takes any rate.
    pub desired: f64,
}

/// Each claim's share of `aggregate` (bytes per second), in the order of `claims`.
///
/// `aggregate` must be finite and not negative, every priority finite and above zero, every
/// desired rate not negative (the caller, [`super::FlowGroup`], checks them). Shares are never
/// negative, never above their claim's desired rate, and sum to
/// `min(aggregate, sum of desired rates)` up to rounding.
pub fn allocate(aggregate: f64, claims: &[Claim]) -> Vec<f64> {
    let mut shares = vec![0.0; claims.len()];
    // Visit flows by the level at which their desired rate caps them, lowest first.
    let mut order: Vec<usize> = (0..claims.len()).collect();
    order.sort_by(|&a, &b| {
        let (ca, cb) = (&claims[a], &claims[b]);
        (ca.desired / ca.priority).total_cmp(&(cb.desired / cb.priority))
    });
    let mut left = aggregate.max(0.0);
    let mut weight: f64 = claims.iter().map(|c| c.priority).sum();
    for (k, &i) in order.iter().enumerate() {
        let c = claims[i];
        let level = if weight > 0.0 { left / weight } else { 0.0 };
        if c.desired <= c.priority * level {
            // Capped: this flow takes its desired rate, the rest is shared by the others.
            shares[i] = c.desired;
            left = (left - c.desired).max(0.0);
            weight -= c.priority;
        } else {
            // No flow from here on is capped: all share the level (RFC 8699 5.3.1, 3(c)).
            for &j in &order[k..] {
                shares[j] = claims[j].priority * level;
            }
            break;
        }
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(weights: &[f64]) -> Vec<Claim> {
        weights.iter().map(|&p| Claim { priority: p, desired: f64::INFINITY }).collect()
    }

    #[test]
    fn equal_weights_split_evenly() {
        assert_eq!(allocate(12.0, &claims(&[1.0, 1.0])), vec![6.0, 6.0]);
    }

    #[test]
    fn weights_one_to_four_get_a_tenth_each_per_unit() {
        assert_eq!(allocate(10_000.0, &claims(&[1.0, 2.0, 3.0, 4.0])), vec![1000.0, 2000.0, 3000.0, 4000.0]);
    }

    #[test]
    fn a_small_desired_rate_is_capped_and_its_rest_redistributed() {
        let mut c = claims(&[1.0, 1.0, 1.0]);
        c[1].desired = 1.0;
        assert_eq!(allocate(12.0, &c), vec![5.5, 1.0, 5.5]);
        // Level 12/4 = 3 caps the first flow (2); the level of the rest, 10/3, is below the
        // second's 3.5: it is not capped.
        let mut c = claims(&[1.0, 1.0, 2.0]);
        c[0].desired = 2.0;
        c[1].desired = 3.5;
        assert_eq!(allocate(12.0, &c), vec![2.0, 10.0 / 3.0, 20.0 / 3.0]);
        // Cascade: at 3.25 the second is capped by the raised level 10/3, the third takes the rest.
        c[1].desired = 3.25;
        assert_eq!(allocate(12.0, &c), vec![2.0, 3.25, 6.75]);
    }

    #[test]
    fn when_every_flow_is_capped_the_rest_stays_unused() {
        let c = [Claim { priority: 1.0, desired: 2.0 }, Claim { priority: 3.0, desired: 1.0 }];
        assert_eq!(allocate(100.0, &c), vec![2.0, 1.0]);
        assert_eq!(allocate(0.0, &c), vec![0.0, 0.0]);
        assert!(allocate(5.0, &[]).is_empty());
    }
}
