//! Copa's operating modes (Arun and Balakrishnan, NSDI 2018, section 4).
//!
//! In the default mode `delta` is fixed. Copa watches whether the bottleneck queue empties
//! regularly, which it does when every flow sharing it is a Copa flow: over the last 4 x srtt,
//! the smallest RTT must come within 10 % of the RTT range of the minimum RTT,
//! `min4 <= minRTT + 0.1 x (max4 - minRTT)` (ALGORITHMS.md writes `<`; we take `<=` so that a
//! perfectly flat RTT, an empty queue, does not count as a standing queue). When it does not (a buffer-filling flow shares the
//! queue), Copa switches to the competitive mode, where `1/delta` grows by 1 each RTT without a
//! loss and `delta` doubles on a loss (at most once per RTT), never above the default `delta`.
//! Back in the default mode `delta` returns to its default.
//!
//! The way back is tested on every ACK, as the reference sender tests the mode (genericCC's
//! markovian `update_delta`): one ACK that finds the queue emptied returns Copa to the default
//! mode and its `delta` at once, and the competitive mode then starts again from the default
//! `delta`. Entering the competitive mode and growing `1/delta` stay once per RTT: tested on
//! every ACK, a mode that flips within an RTT would restart the drain check's wait each time
//! ([`super::drain`], our addition), and a coupled group of four Copa flows lost 14 % of its
//! throughput on a 12 Mbit/s link (tests/fse_copa_group.rs).

use std::time::Duration;

use crate::time::Time;

/// Whether Copa may leave the default mode, and how it finds its way back.
///
/// The spec's default is [`ModePolicy::NoCheck`], the authors' sender's behaviour
/// (issue 13: the reference behaviour is the default, a deliberate improvement a named variant);
/// [`ModePolicy::Drain`] is our drain check, measured against it in bench/reference-results.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModePolicy {
    /// Always the default mode, `delta` fixed (`mode=default`).
    Default,
    /// Switch between default and competitive modes as the authors' sender does (`mode=nocheck`,
    /// the spec's default): back to the default mode only when the queue empties by itself.
    /// Alone on a deep buffer without loss it can stay in the competitive mode for good, as the
    /// authors' Copa does (on the City and Verizon-LTE-short traces, bench/reference-results.md;
    /// on the demo's synthetic trace in 2 of 10 runs, bench/copa-competitive-mode.md).
    NoCheck,
    /// Switch as `NoCheck` does, and in the competitive mode check now and then that a
    /// competitor is still there by draining Copa's own queue ([`super::drain`]; our addition,
    /// `mode=drain`, also accepted under its earlier name `mode=auto`). Coupled groups rely on it
    /// (docs/coupled-flows.md).
    Drain,
}

impl ModePolicy {
    /// Whether the competitive mode may be entered.
    pub fn switches(self) -> bool {
        self != ModePolicy::Default
    }

    /// Whether the competitive mode drains Copa's own queue to look for a competitor.
    pub fn checks_by_draining(self) -> bool {
        self == ModePolicy::Drain
    }
}

/// The mode Copa is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `delta` is its default.
    Default,
    /// `delta` adapts to compete with buffer-filling flows.
    Competitive,
}

/// Fraction of the recent RTT range above the minimum RTT within which the queue counts as
/// having emptied.
pub const EMPTY_QUEUE_FRACTION: f64 = 0.1;

/// The mode-detection test: did the queue empty during the last 4 x srtt?
pub fn queue_emptied(recent_min: Duration, recent_max: Duration, min_rtt: Duration) -> bool {
    let min = min_rtt.as_secs_f64();
    let range = recent_max.as_secs_f64() - min;
    // `<=` rather than `<`: with a perfectly flat RTT (range 0) the queue is empty, not full.
    recent_min.as_secs_f64() <= min + EMPTY_QUEUE_FRACTION * range
}

/// The mode and the `delta` that goes with it.
#[derive(Clone, Debug, PartialEq)]
pub struct DeltaControl {
    policy: ModePolicy,
    default_delta: f64,
    mode: Mode,
    delta: f64,
    lost_this_round: bool,
    last_doubling: Option<Time>,
}

impl DeltaControl {
    /// Default mode with `default_delta`.
    pub fn new(policy: ModePolicy, default_delta: f64) -> DeltaControl {
        DeltaControl {
            policy,
            default_delta,
            mode: Mode::Default,
            delta: default_delta,
            lost_this_round: false,
            last_doubling: None,
        }
    }

    /// The current `delta`.
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// On every ACK: back to the default mode if the queue emptied within the last 4 x srtt
    /// (the reference's test, made on every ACK); otherwise nothing changes until the next
    /// [`DeltaControl::on_round`].
    pub fn on_ack(&mut self, recent_min: Duration, recent_max: Duration, min_rtt: Duration) {
        if self.policy.switches() && queue_emptied(recent_min, recent_max, min_rtt) {
            self.on_queue_emptied();
        }
    }

    /// Once per RTT: re-evaluates the mode from the RTT extremes of the last 4 x srtt.
    pub fn on_round(&mut self, recent_min: Duration, recent_max: Duration, min_rtt: Duration) {
        if !self.policy.switches() {
            return;
        }
        if queue_emptied(recent_min, recent_max, min_rtt) {
            self.on_queue_emptied();
        } else if self.mode == Mode::Default {
            self.mode = Mode::Competitive;
        } else if !self.lost_this_round {
            // 1/delta <- 1/delta + 1: additive increase of aggressiveness.
            self.delta = 1.0 / (1.0 / self.delta + 1.0);
        }
        self.lost_this_round = false;
    }

    /// The queue was seen empty (by the round's test, or after a drain check,
    /// [`super::drain`]): the default mode, with the default `delta`.
    pub fn on_queue_emptied(&mut self) {
        self.mode = Mode::Default;
        self.delta = self.default_delta;
    }

    /// A packet was lost; in the competitive mode `delta` doubles, at most once per `rtt`.
    pub fn on_loss(&mut self, now: Time, rtt: Duration) {
        self.lost_this_round = true;
        if self.mode != Mode::Competitive {
            return;
        }
        let may_double = self.last_doubling.is_none_or(|at| now >= at + rtt);
        if may_double {
            self.delta = (self.delta * 2.0).min(self.default_delta);
            self.last_doubling = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn detects_whether_the_queue_emptied() {
        // min 40, range 40..140: threshold 40 + 10 = 50.
        assert!(queue_emptied(ms(49), ms(140), ms(40)));
        assert!(queue_emptied(ms(50), ms(140), ms(40)));
        assert!(!queue_emptied(ms(51), ms(140), ms(40)));
        assert!(queue_emptied(ms(40), ms(40), ms(40)), "a flat RTT is an empty queue");
        assert!(!queue_emptied(ms(90), ms(140), ms(40)));
    }

    #[test]
    fn switches_to_competitive_and_back() {
        let mut d = DeltaControl::new(ModePolicy::Drain, 0.5);
        d.on_round(ms(45), ms(140), ms(40));
        assert_eq!((d.mode(), d.delta()), (Mode::Default, 0.5));
        d.on_round(ms(90), ms(140), ms(40));
        assert_eq!((d.mode(), d.delta()), (Mode::Competitive, 0.5));
        d.on_round(ms(90), ms(140), ms(40)); // 1/delta: 2 -> 3
        assert!((d.delta() - 1.0 / 3.0).abs() < 1e-12);
        d.on_round(ms(90), ms(140), ms(40)); // 3 -> 4
        assert!((d.delta() - 0.25).abs() < 1e-12);
        d.on_loss(Time::from_millis(1000), ms(100));
        assert!((d.delta() - 0.5).abs() < 1e-12);
        d.on_round(ms(90), ms(140), ms(40)); // a round with a loss: no increase
        assert!((d.delta() - 0.5).abs() < 1e-12);
        d.on_round(ms(90), ms(140), ms(40));
        d.on_round(ms(90), ms(140), ms(40));
        assert!((d.delta() - 0.25).abs() < 1e-12);
        d.on_round(ms(41), ms(140), ms(40));
        assert_eq!((d.mode(), d.delta()), (Mode::Default, 0.5));
    }

    #[test]
    fn any_ack_that_finds_the_queue_emptied_ends_the_competitive_mode() {
        let mut d = DeltaControl::new(ModePolicy::Drain, 0.5);
        d.on_round(ms(90), ms(140), ms(40)); // competitive
        d.on_round(ms(90), ms(140), ms(40)); // 1/delta: 2 -> 3
        assert_eq!(d.mode(), Mode::Competitive);
        assert!((d.delta() - 1.0 / 3.0).abs() < 1e-12);
        d.on_ack(ms(90), ms(140), ms(40)); // a standing queue: nothing changes between rounds
        assert_eq!(d.mode(), Mode::Competitive);
        assert!((d.delta() - 1.0 / 3.0).abs() < 1e-12);
        d.on_ack(ms(49), ms(140), ms(40));
        assert_eq!((d.mode(), d.delta()), (Mode::Default, 0.5));
        let mut fixed = DeltaControl::new(ModePolicy::Default, 0.5);
        fixed.on_ack(ms(49), ms(140), ms(40));
        assert_eq!((fixed.mode(), fixed.delta()), (Mode::Default, 0.5));
    }

    #[test]
    fn doubles_at_most_once_per_rtt_and_never_above_default() {
        let mut d = DeltaControl::new(ModePolicy::Drain, 0.5);
        d.on_round(ms(90), ms(140), ms(40));
        for _ in 0..6 {
            d.on_round(ms(90), ms(140), ms(40));
        }
        assert!((d.delta() - 0.125).abs() < 1e-12); // 1/delta = 8
        d.on_loss(Time::from_millis(1000), ms(100));
        d.on_loss(Time::from_millis(1050), ms(100));
        assert!((d.delta() - 0.25).abs() < 1e-12);
        d.on_loss(Time::from_millis(1100), ms(100));
        assert!((d.delta() - 0.5).abs() < 1e-12);
        d.on_loss(Time::from_millis(1300), ms(100));
        assert!((d.delta() - 0.5).abs() < 1e-12);
    }

    #[test]
    fn only_drain_checks_by_draining() {
        assert!(ModePolicy::Drain.switches() && ModePolicy::Drain.checks_by_draining());
        assert!(ModePolicy::NoCheck.switches() && !ModePolicy::NoCheck.checks_by_draining());
        assert!(!ModePolicy::Default.switches() && !ModePolicy::Default.checks_by_draining());
        let mut d = DeltaControl::new(ModePolicy::NoCheck, 0.5);
        d.on_round(ms(90), ms(140), ms(40));
        assert_eq!(d.mode(), Mode::Competitive);
    }

    #[test]
    fn fixed_policy_never_switches() {
        let mut d = DeltaControl::new(ModePolicy::Default, 0.5);
        d.on_round(ms(90), ms(140), ms(40));
        d.on_loss(Time::from_millis(5), ms(100));
        assert_eq!((d.mode(), d.delta()), (Mode::Default, 0.5));
    }
}
