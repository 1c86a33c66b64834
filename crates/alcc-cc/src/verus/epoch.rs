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
    /// `Wcrt`, packets in flight, whole packets as the reference counts them
    /// ([`OutstandingPackets::whole_packets`](super::outstanding::OutstandingPackets::whole_packets)).
    pub wcrt: u64,
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

/// Rule 6: packets to send this epoch (paper equation 3). With `n = ceil(dTbar / epoch)`
/// epochs per RTT, `S = max(0, W + Wcrt (2 - n) / (n - 1))` when `n > 1`, else
/// `max(0, W - Wcrt)`, rounded down.
///
/// The arithmetic is the authors' program's, where `Wcrt` and `n` are integers and `W` is
/// not: `Wcrt (2 - n) / (n - 1)` is an integer division, truncated toward zero before `W` is
/// added, and only the sum is rounded down. So `S = W - floor(Wcrt (n - 2) / (n - 1))`,
/// rounded down: at most one packet more than the equation in real numbers, and at W 1 with
/// one packet in flight it lets a second one out where real numbers give 0.
pub fn packets_to_send(w: f64, wcrt: u64, dtbar: f64) -> u64 {
    // `as` saturates; a NaN `dTbar` gives n = 0, the `n <= 1` branch.
    let n = (dtbar / EPOCH_MS).ceil() as i64;
    let wcrt = i64::try_from(wcrt).unwrap_or(i64::MAX);
    let s = if n > 1 {
        // Non-negative operands: the division truncates as the reference's does.
        let held = wcrt.saturating_mul(n - 2) / (n - 1);
        w - held as f64
    } else {
        w - wcrt as f64
    };
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
                if input.wcrt < 2 {
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
            wcrt: 30,
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
        // n = 20: S = 62 - trunc(30 * 18 / 19 = 28.42) = 62 - 28 = 34
        assert_eq!(out.send, 34);
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
        let out = update(&EpochInput { wcrt: 1, ..input }, linear).unwrap();
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
        assert_eq!(packets_to_send(10.0, 4, 5.0), 6);
        assert_eq!(packets_to_send(10.0, 14, 3.0), 0);
        assert_eq!(packets_to_send(10.0, 4, 0.0), 6);
        assert_eq!(packets_to_send(10.5, 4, 0.0), 6);
        // n = 2: S = W exactly.
        assert_eq!(packets_to_send(10.0, 4, 7.0), 10);
        // n = 8 (dTbar 40 ms): S = 50 - trunc(30 * 6 / 7 = 25.71) = 25
        assert_eq!(packets_to_send(50.0, 30, 40.0), 25);
        // n = 9 (dTbar 40.1 ms): S = 50 - trunc(30 * 7 / 8 = 26.25) = 24
        assert_eq!(packets_to_send(50.0, 30, 40.1), 24);
        // An exact quotient: n = 3, 30 * 1 / 2 = 15, S = 35; a fractional W still rounds down.
        assert_eq!(packets_to_send(50.0, 30, 15.0), 35);
        assert_eq!(packets_to_send(50.7, 30, 15.0), 35);
        assert_eq!(packets_to_send(1.0, 100, 40.0), 0);
        assert_eq!(packets_to_send(f64::NAN, 1, 40.0), 0);
        assert_eq!(packets_to_send(5.0, 1, f64::NAN), 4);
    }

    #[test]
    fn rule6_at_w1_with_one_packet_in_flight_sends_one_more() {
        // The reference's integer division: 1 * (n - 2) / (n - 1) truncates to 0 for every
        // n > 1, so a second packet leaves; real arithmetic gives 1 - 0.95 = 0.05 -> 0.
        for dtbar in [7.0, 40.0, 100.0, 1000.0] {
            assert_eq!(packets_to_send(1.0, 1, dtbar), 1, "dTbar {dtbar}");
        }
        // Two in flight: for n >= 3, 2 (n - 2) / (n - 1) truncates to 1 and S = 0; n = 2
        // gives S = W = 1.
        assert_eq!(packets_to_send(1.0, 2, 100.0), 0);
        assert_eq!(packets_to_send(1.0, 2, 7.0), 1);
    }
}
