//! One Verus epoch after slow start: rules 2 to 7 of the update (paper section 4.1, the
//! reference's main loop), as a pure function of the state it reads.
//!
//! Rule 1 (expiring missing packets) changes the outstanding packets and is done by the controller
//! before calling [`update`].

use super::constants::{DELTA1_MS, DELTA2_MS, DMAX_LAST_KEEP, DMIN_BUMP_MS, EPOCH_MS};

/// What one epoch reads. Delays in milliseconds, windows in packets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EpochInput {
    /// The largest RTT acknowledged during this epoch, if any ACK arrived.
    pub epoch_max_rtt: Option<f64>,
    /// Time since the ACK that last advanced the highest acknowledged sequence.
    pub since_last_ack: f64,
    /// `DmaxLast`, `None` before the first epoch.
    pub dmax_last: Option<f64>,
    /// `Dmin`, the smallest RTT seen.
    pub dmin: f64,
    /// `Dest`, the target delay.
    pub dest: f64,
    /// `Wcrt`, packets in flight.
    pub wcrt: f64,
    /// `dTbar`, the smoothed RTT.
    pub dtbar: f64,
    /// Slow start ended on a high RTT and the loss phase it opened has not ended yet; the
    /// reference then skips rule 4's ratio branch (its `exitSlowStart`).
    pub leaving_slow_start: bool,
    /// The ratio threshold R.
    pub r: f64,
}

/// What one epoch decides.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EpochOutput {
    /// `Dmax` of this epoch (rule 2).
    pub dmax: f64,
    /// The new `DmaxLast` (rule 7).
    pub dmax_last: f64,
    /// The new `Dest` (rule 4).
    pub dest: f64,
    /// The new `Dmin` (rule 4 may raise it).
    pub dmin: f64,
    /// The new window W (rule 5).
    pub w: f64,
    /// Packets to add to the send allowance (rule 6); zero when `hold` is set.
    pub send: u64,
    /// `Dest` sits at `Dmin` with 2 or more packets in flight: the reference sends nothing
    /// this epoch (its `dMinStop`).
    pub hold: bool,
}

/// Rule 6: packets to send this epoch. With `n = ceil(dTbar / epoch)` epochs per RTT,
/// `S = max(0, W + Wcrt (2 - n) / (n - 1))` when `n > 1`, else `max(0, W - Wcrt)`, rounded
/// down (paper equation 3; the reference truncates S to an integer).
pub fn packets_to_send(w: f64, wcrt: f64, dtbar: f64) -> u64 {
    let n = (dtbar / EPOCH_MS).ceil();
    let s = if n > 1.0 { w + wcrt * (2.0 - n) / (n - 1.0) } else { w - wcrt };
    if s.is_nan() {
        0
    } else {
        s.max(0.0).floor() as u64
    }
}

/// Rules 2 to 7. `curve` maps a target delay to a window (`None` when it cannot: the
/// reference then restarts slow start, and so does the caller on `None` here).
pub fn update(input: &EpochInput, curve: impl Fn(f64) -> Option<f64>) -> Option<EpochOutput> {
    // Rule 2: the epoch's largest RTT, or, with no ACK, how long the sender has waited.
    let dmax = match input.epoch_max_rtt {
        Some(d) => d,
        None => input.dmax_last.unwrap_or(f64::NEG_INFINITY).max(input.since_last_ack),
    };
    // Rule 3.
    let dmax_last = input.dmax_last.unwrap_or(dmax);
    let delta_d = dmax - dmax_last;
    // Rule 4.
    let mut dest = input.dest;
    let mut dmin = input.dmin;
    let mut hold = false;
    if dmax_last / input.dmin > input.r {
        if !input.leaving_slow_start {
            dest = input.dmin.max(dest - DELTA2_MS);
            if dest == input.dmin {
                if input.wcrt < 2.0 {
                    dmin += DMIN_BUMP_MS;
                } else {
                    hold = true;
                }
            }
        }
    } else if delta_d > 0.0001 {
        dest = input.dmin.max(dest - DELTA1_MS);
    } else {
        dest += DELTA2_MS;
    }
    // Rule 5.
    let w = curve(dest)?.max(1.0);
    // Rule 6.
    let send = if hold { 0 } else { packets_to_send(w, input.wcrt, input.dtbar) };
    // Rule 7.
    let dmax_last = DMAX_LAST_KEEP * dmax_last + (1.0 - DMAX_LAST_KEEP) * dmax;
    Some(EpochOutput { dmax, dmax_last, dest, dmin, w, send, hold })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A linear profile: window = delay - 40 (so delay 41 maps to window 1).
    fn linear(d: f64) -> Option<f64> {
        Some((d - 40.0).floor())
    }

    fn base() -> EpochInput {
        EpochInput {
            epoch_max_rtt: Some(100.0),
            since_last_ack: 1.0,
            dmax_last: Some(100.0),
            dmin: 40.0,
            dest: 100.0,
            wcrt: 30.0,
            dtbar: 100.0,
            leaving_slow_start: false,
            r: 6.0,
        }
    }

    #[test]
    fn rule4_steady_delay_raises_the_target() {
        let out = update(&base(), linear).unwrap();
        assert_eq!(out.dest, 102.0);
        assert_eq!(out.w, 62.0);
        assert_eq!(out.dmax, 100.0);
        assert_eq!(out.dmax_last, 100.0);
        // n = 20: S = 62 + 30 * (-18) / 19 = 33.57 -> 33
        assert_eq!(out.send, 33);
        assert!(!out.hold);
    }

    #[test]
    fn rule4_rising_delay_lowers_the_target_by_delta1() {
        let out = update(&EpochInput { epoch_max_rtt: Some(120.0), ..base() }, linear).unwrap();
        assert_eq!(out.dest, 99.0);
        assert_eq!(out.w, 59.0);
        assert_eq!(out.dmax_last, 0.2 * 100.0 + 0.8 * 120.0);
        // A rise within the 0.0001 ms tolerance counts as steady.
        let out = update(&EpochInput { epoch_max_rtt: Some(100.00005), ..base() }, linear).unwrap();
        assert_eq!(out.dest, 102.0);
    }

    #[test]
    fn rule4_ratio_above_r_lowers_by_delta2() {
        // DmaxLast / Dmin = 250 / 40 = 6.25 > 6
        let input = EpochInput { dmax_last: Some(250.0), epoch_max_rtt: Some(200.0), ..base() };
        let out = update(&input, linear).unwrap();
        assert_eq!(out.dest, 98.0);
        assert_eq!(out.dmin, 40.0);
        // The same with R = 7 takes the "delay fell" branch instead.
        let out = update(&EpochInput { r: 7.0, ..input }, linear).unwrap();
        assert_eq!(out.dest, 102.0);
        // Leaving slow start: the ratio branch does nothing at all.
        let out = update(&EpochInput { leaving_slow_start: true, ..input }, linear).unwrap();
        assert_eq!(out.dest, 100.0);
    }

    #[test]
    fn rule4_at_dmin_bumps_dmin_or_holds() {
        let input = EpochInput { dmax_last: Some(250.0), dest: 41.0, ..base() };
        let out = update(&input, linear).unwrap();
        assert_eq!(out.dest, 40.0);
        assert!(out.hold);
        assert_eq!(out.send, 0);
        assert_eq!(out.dmin, 40.0);
        let out = update(&EpochInput { wcrt: 1.0, ..input }, linear).unwrap();
        assert!(!out.hold);
        assert_eq!(out.dmin, 50.0);
        assert_eq!(out.dest, 40.0);
        assert_eq!(out.w, 1.0); // max(1, curve(40) = 0)
    }

    #[test]
    fn rule2_without_acks_uses_the_waiting_time() {
        let input = EpochInput { epoch_max_rtt: None, since_last_ack: 300.0, ..base() };
        let out = update(&input, linear).unwrap();
        assert_eq!(out.dmax, 300.0);
        assert_eq!(out.dest, 99.0); // the delay "rose"
        let out = update(&EpochInput { since_last_ack: 3.0, ..input }, linear).unwrap();
        assert_eq!(out.dmax, 100.0); // DmaxLast is larger
    }

    #[test]
    fn rule3_first_epoch_starts_dmax_last_at_dmax() {
        let input = EpochInput { dmax_last: None, epoch_max_rtt: Some(90.0), ..base() };
        let out = update(&input, linear).unwrap();
        assert_eq!(out.dmax_last, 90.0);
        assert_eq!(out.dest, 102.0); // dD = 0
        let out = update(&EpochInput { epoch_max_rtt: None, since_last_ack: 7.0, ..input }, linear).unwrap();
        assert_eq!(out.dmax, 7.0);
    }

    #[test]
    fn rule5_unmappable_target_is_reported() {
        assert_eq!(update(&base(), |_| None), None);
    }

    #[test]
    fn rule6_send_formula() {
        // n = 1 (dTbar <= 5 ms): S = W - Wcrt, never negative.
        assert_eq!(packets_to_send(10.0, 4.0, 5.0), 6);
        assert_eq!(packets_to_send(10.0, 14.0, 3.0), 0);
        assert_eq!(packets_to_send(10.0, 4.0, 0.0), 6);
        // n = 2: S = W exactly.
        assert_eq!(packets_to_send(10.0, 4.0, 7.0), 10);
        // n = 8 (dTbar 40 ms): S = 50 - 30 * 6 / 7 = 24.29 -> 24
        assert_eq!(packets_to_send(50.0, 30.0, 40.0), 24);
        // n = 9 (dTbar 40.1 ms): S = 50 - 30 * 7 / 8 = 23.75 -> 23
        assert_eq!(packets_to_send(50.0, 30.0, 40.1), 23);
        assert_eq!(packets_to_send(1.0, 100.0, 40.0), 0);
        assert_eq!(packets_to_send(f64::NAN, 1.0, 40.0), 0);
    }
}
