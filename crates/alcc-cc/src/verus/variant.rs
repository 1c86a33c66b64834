//! Which Verus runs: the authors' program's behaviour (the default) or our bounded variant.
//!
//! Two of the reference sender's rules look like accidents of its implementation, and our
//! Verus once replaced both (issue 13 measured what that costs against the authors' program,
//! bench/reference-results.md, "Verus: the slow start's two bounds"). The default now does as
//! the reference does; `verus:variant=bounded` keeps our earlier rules.
//!
//! 1. **The send allowance is unbounded where W binds.** In slow start every ACK allows
//!    `W - Wcrt` more packets. The reference's sending thread sends what one ACK allowed while
//!    its receiving thread reads the next, so its flight follows W ACK by ACK: its
//!    `Receiver.out` shows `Wcrt` within a few packets of W through batches of 44 ACKs at
//!    W = 700-900 on TMobile-LTE-short; it runs ahead by tens of packets, at most a few hundred,
//!    when its sending thread is not scheduled in time (on highwayGold its first rounds were
//!    1, 2, 6, 30 packets). Our transports read every ACK that has arrived and only then send,
//!    so the default counts the allowance not yet sent (what earlier ACKs of the instant
//!    allowed) as in flight: the flight after a batch is W. Counting only sent packets, a batch
//!    of k ACKs allowed about k^2 packets beyond W (bench/reference-results.md,
//!    "udp-verus: slow start's batches of ACKs"). Beyond that,
//!    nothing caps the allowance where W binds. `bounded` counts only sent packets and caps the
//!    unsent allowance at `W + 1` packets (rounds of 1, 2, 5, 10, 20). Both variants cap it
//!    where the transport holds the flight below W (kernel mode's cwnd, an application-limited
//!    flow: see `usage` and the module docs of `verus`: the flight when an instant's ACKs
//!    begin is compared with the W then in force), so that such a flow does not bank allowance
//!    and burst later, and cut what the transport held to the new W + 1 when W falls; the
//!    reference's sender is always backlogged and its W always binds, so it never meets that
//!    case.
//! 2. **A window never sent at has no delay.** Before the first fit, the target delay for a
//!    window (`curve_inv`) is read off the raw profile `wList[w]`; for a window no packet was
//!    sent at, the reference reads the entry's unset value, -1 ms ([`UNSET_DELAY_MS`]). Leaving
//!    slow start at `W = 0.7 x w` where `0.7 x w` was skipped (a burst stamps all its packets
//!    with one window) thus sets `Dest = -1`, below every delay: the next epoch maps it to
//!    `W = 1`, nothing is sent until slow start's flight has drained, and the queue empties, so
//!    `Dmin` is measured on an empty queue. The reference's logs show `Dest = -1` at that exit in
//!    about half the runs on the shared traces (15 of 30 in the sweeps, 9 of 12 on highwayGold
//!    and Corniche). `bounded` reads the nearest window that was seen,
//!    which keeps about slow start's queue in flight: `Dmin` then stays what slow start's first
//!    packets measured, a few ms above the path's, and the ratio rule `DmaxLast / Dmin > R`
//!    holds the queue R times that high.
//!
//! [`UNSET_DELAY_MS`]: super::constants::UNSET_DELAY_MS

use super::constants::UNSET_DELAY_MS;
use super::profile::DelayProfile;

/// The rules on which our Verus may differ from the reference sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Variant {
    /// As the authors' program behaves (`variant=reference`, the default).
    #[default]
    Reference,
    /// Unsent allowance capped at `W + 1` packets and the raw profile read at the nearest seen
    /// window (`variant=bounded`, our rules before issue 13's fidelity work).
    Bounded,
}

impl Variant {
    /// The names `verus:variant=NAME` accepts, the default first.
    pub const NAMES: [&'static str; 2] = ["reference", "bounded"];

    /// The variant named `name` (one of [`Variant::NAMES`]).
    pub fn from_name(name: &str) -> Option<Variant> {
        match name {
            "reference" => Some(Variant::Reference),
            "bounded" => Some(Variant::Bounded),
            _ => None,
        }
    }

    /// The allowance (bytes) after granting `add` more bytes, where `cap` is `W + 1` packets
    /// (or one of the largest chunk the transport sent, if that is more) and `window_limited`
    /// whether W binds the flight (the transport lets out what W allows).
    pub fn grant(self, allowance: u64, add: u64, cap: u64, window_limited: bool) -> u64 {
        match self {
            Variant::Reference if window_limited => allowance.saturating_add(add),
            // The cap bounds what may be added; an allowance already above it (W just fell)
            // is kept, not cut.
            _ => allowance.saturating_add(add.min(cap)).min(cap.max(allowance)),
        }
    }

    /// Packets one ACK of slow start allows: `W - Wcrt`, where under [`Variant::Reference`]
    /// the `unsent` packets earlier ACKs allowed count as in flight (the reference's sending
    /// thread sends what one ACK allowed while the next is handled) and under
    /// [`Variant::Bounded`] they do not (the cap of [`Variant::grant`] bounds them instead).
    pub fn slow_start_grant(self, w: f64, wcrt: f64, unsent: f64) -> f64 {
        match self {
            Variant::Reference => w - wcrt - unsent,
            Variant::Bounded => w - wcrt,
        }
    }

    /// `curve_inv(w)` before the first fit: the delay of window `w` on the raw profile, `None`
    /// only for an empty profile under [`Variant::Bounded`].
    pub fn raw_delay(self, profile: &DelayProfile, w: f64) -> Option<f64> {
        match self {
            Variant::Reference => Some(profile.raw_at(w).unwrap_or(UNSET_DELAY_MS)),
            Variant::Bounded => profile.curve_inv(w),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_caps_the_allowance_only_where_w_does_not_bind() {
        assert_eq!(Variant::Reference.grant(5000, 4000, 5000, true), 9000);
        assert_eq!(Variant::Reference.grant(u64::MAX, 1, 0, true), u64::MAX);
        assert_eq!(Variant::Reference.grant(5000, 4000, 5000, false), 5000);
        for limited in [true, false] {
            assert_eq!(Variant::Bounded.grant(2000, 4000, 5000, limited), 5000);
            assert_eq!(Variant::Bounded.grant(8000, 4000, 5000, limited), 8000); // kept, not cut
            assert_eq!(Variant::Bounded.grant(0, 9000, 5000, limited), 5000);
        }
    }

    #[test]
    fn an_unseen_window_reads_unset_in_the_reference_and_the_nearest_in_bounded() {
        let mut p = DelayProfile::new();
        p.record(3, 40.0);
        p.record(9, 90.0);
        assert_eq!(Variant::Reference.raw_delay(&p, 3.7), Some(40.0));
        assert_eq!(Variant::Reference.raw_delay(&p, 6.0), Some(UNSET_DELAY_MS));
        assert_eq!(Variant::Bounded.raw_delay(&p, 6.0), Some(40.0));
        assert_eq!(Variant::Reference.raw_delay(&DelayProfile::new(), 6.0), Some(UNSET_DELAY_MS));
        assert_eq!(Variant::Bounded.raw_delay(&DelayProfile::new(), 6.0), None);
        assert_eq!(Variant::from_name("bounded"), Some(Variant::Bounded));
        assert_eq!(Variant::from_name("x"), None);
    }
}
