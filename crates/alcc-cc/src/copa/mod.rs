//! `copa`: Copa (Arun and Balakrishnan, "Copa: Practical Delay-Based Congestion Control for
//! the Internet", NSDI 2018), as the reference genericCC "markovian" sender behaves
//! (see ALGORITHMS.md).
//!
//! Copa steers the sending rate towards `1 / (delta x dq)` packets per unit of time, where `dq`
//! is the queueing delay: the standing RTT minus the minimum RTT (section 2.1). As a window,
//! the target is `RTTstanding / (delta x dq)` packets. On every ACK the window moves by
//! `v / (delta x cwnd)` packets towards the target ([`velocity`]), packets are paced at
//! `2 x cwnd / RTTstanding`, `delta` adapts in the competitive mode ([`mode`]), with
//! `mode=drain` the competitive mode checks now and then that a competitor is still there by
//! draining Copa's own queue ([`drain`]), and heavy loss shrinks the window ([`loss`]).
//!
//! The window lets `ceil(cwnd)` packets be in flight, as the reference sender's gate does
//! ([`gate`]); `gate=cwnd` lets `cwnd` packets of bytes, `floor(cwnd)` whole segments.
//!
//! Choices where the reference leaves room, all deliberate:
//! - An ACK for a chunk of `n` packets counts as `n` ACKs (the window moves `n` steps, slow
//!   start adds `n`): kernel mode acknowledges MSS multiples.
//! - The loss rule firing also ends slow start; otherwise the next ACK would undo it.
//! - "No ACK for 2 s" is checked with a timer at last ACK + 2 s and again on the next ACK; the
//!   reset forgets everything, RTT history included, as the reference's re-initialisation does.
//! - Losses are the transport's ([`Controller::on_loss`]); the reference infers them from gaps.
//!   A late ACK of a packet the transport declared lost ([`Controller::on_late_ack`]) is an ACK
//!   as any other (an RTT sample, a window step, the 2-s clock restarted), as every ACK is to
//!   the reference's `onACK`; the loss stays counted.
//! - The mode switch is the reference's by default (`mode=nocheck`): alone on a deep buffer
//!   without loss, the competitive mode cannot end once Copa's own queue no longer empties, as
//!   in the authors' sender (City and Verizon-LTE-short in bench/reference-results.md). The
//!   named variant `mode=drain` (earlier name `mode=auto`, still accepted) is our improvement:
//!   the competitive mode drains Copa's own queue now and then to see whether a competitor is
//!   still there ([`drain`]); coupled groups drain together with it (docs/coupled-flows.md).
//!   Several flows to one client show why: four `nocheck` flows on 12 Mbit/s in the simulator
//!   keep a p95 of 889 ms (the drain check 71 ms), and four uncoupled flows of the authors'
//!   Copa built such a standing queue too in the emulator, in 1 of 3 runs
//!   (experiments/copa-flows.toml), so that queue is Copa's own behaviour, not ours. On
//!   rapidGold at a whole 10-ms delay both of our modes are competitive more often than the
//!   authors' sender (p95 +56 % `nocheck`, +12 % drain): the emulated link's 1-ms delivery grid,
//!   where our packets land just after each opportunity; at 10.5 ms both are within 5 % of
//!   theirs ("Copa's default" in bench/reference-results.md). One ACK that finds the queue
//!   emptied ends
//!   the competitive mode, as in the reference ([`mode`]); two smaller differences of the
//!   switch remain in every mode: the competitive mode is entered and `1/delta` grows at the
//!   once-per-RTT tick (the reference: on the first ACK that finds a standing queue, and after
//!   an RTT of such ACKs), and `1/delta` does not grow in a round with a loss (the reference
//!   grows it once per RTT either way and doubles `delta` on the loss).

pub mod drain;
pub mod gate;
pub mod loss;
pub mod mode;
pub mod rtt;
pub mod velocity;

use std::time::Duration;

use crate::controller::{Config, Controller};
use crate::event::{AckSample, Decision, LossEvent, SentPacket};
use crate::fse::Share;
use crate::metrics::Metrics;
use crate::spec::{Params, SpecError};
use crate::time::Time;

use self::drain::{pipe_window, DrainCheck};
use self::gate::FlightGate;
use self::loss::LossRule;
use self::mode::{DeltaControl, Mode, ModePolicy};
use self::rtt::RttHistory;
use self::velocity::{RoundClock, Velocity};

/// The window Copa starts with (and returns to on a reset), in packets.
pub const INITIAL_CWND: f64 = 10.0;
/// The window never goes below this many packets.
pub const MIN_CWND: f64 = 2.0;
/// ACKed packets before the window starts to move (the reference's warm-up).
pub const WARMUP_PACKETS: u64 = 20;
/// With no ACK for this long, Copa starts over.
pub const RESET_AFTER: Duration = Duration::from_secs(2);
/// The default `delta` (the paper and the ALCC experiments).
pub const DEFAULT_DELTA: f64 = 0.5;
/// Pacing sends this many windows per standing RTT (section 2.1: "pace packets at
/// 2 x cwnd / RTTstanding" so that bursts do not inflate the standing RTT).
pub const PACING_GAIN: f64 = 2.0;

/// Per-packet window steps taken one by one for one ACK; the rest of a larger chunk moves
/// the window in one scaled step.
const MAX_EXACT_STEPS: u64 = 1024;

/// Copa's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CopaParams {
    /// `delta`: the weight of delay against throughput; smaller is more aggressive.
    pub delta: f64,
    /// Whether the competitive mode may be used, and whether it drains to check for a
    /// competitor (default [`ModePolicy::NoCheck`], the authors' sender's).
    pub policy: ModePolicy,
    /// How many packets the window lets be in flight.
    pub gate: FlightGate,
}

impl Default for CopaParams {
    fn default() -> CopaParams {
        CopaParams { delta: DEFAULT_DELTA, policy: ModePolicy::NoCheck, gate: FlightGate::Reference }
    }
}

/// The window target Copa moves towards, in packets: `RTTstanding / (delta x dq)` with
/// `dq = RTTstanding - minRTT` (section 2.1); infinite when there is no queueing delay.
pub fn target_window(standing_rtt: Duration, min_rtt: Duration, delta: f64) -> f64 {
    let standing = standing_rtt.as_secs_f64();
    let dq = standing - min_rtt.as_secs_f64();
    if dq <= 0.0 {
        f64::INFINITY
    } else {
        standing / (delta * dq)
    }
}

/// One Copa flow.
#[derive(Clone, Debug)]
pub struct Copa {
    mss: u64,
    params: CopaParams,
    cwnd: f64,
    slow_start: bool,
    acked_packets: u64,
    last_ack: Option<Time>,
    rtt: RttHistory,
    round: RoundClock,
    velocity: Velocity,
    delta: DeltaControl,
    drain: DrainCheck,
    loss: LossRule,
    /// Standing RTT and target as of the last ACK, for pacing and metrics.
    standing_rtt: Option<Duration>,
    target: f64,
    /// A drain check began on its own schedule since [`Controller::take_drain_start`] last
    /// asked.
    drain_started: bool,
}

impl Copa {
    /// A fresh flow.
    pub fn new(params: CopaParams, config: &Config) -> Copa {
        Copa {
            mss: config.mss.max(1),
            params,
            cwnd: INITIAL_CWND,
            slow_start: true,
            acked_packets: 0,
            last_ack: None,
            rtt: RttHistory::new(),
            round: RoundClock::new(),
            velocity: Velocity::new(INITIAL_CWND),
            delta: DeltaControl::new(params.policy, params.delta),
            drain: DrainCheck::Idle,
            loss: LossRule::new(),
            standing_rtt: None,
            target: f64::INFINITY,
            drain_started: false,
        }
    }

    /// Builds from `delta=D` (default 0.5), `mode=nocheck|drain|default` (default `nocheck`,
    /// the authors' mode switch; `auto` is `drain`'s earlier name, [`ModePolicy`]) and
    /// `gate=reference|cwnd` (default `reference`, [`gate`]).
    pub fn from_params(params: &mut Params, config: &Config) -> Result<Copa, SpecError> {
        let delta = params.take_f64("delta", DEFAULT_DELTA, 0.001, 10.0)?;
        let policy = match params.take_choice("mode", "nocheck", &["nocheck", "drain", "auto", "default"])? {
            "default" => ModePolicy::Default,
            "drain" | "auto" => ModePolicy::Drain,
            _ => ModePolicy::NoCheck,
        };
        let gate = match params.take_choice("gate", "reference", &["reference", "cwnd"])? {
            "cwnd" => FlightGate::Cwnd,
            _ => FlightGate::Reference,
        };
        Ok(Copa::new(CopaParams { delta, policy, gate }, config))
    }

    /// The window in packets.
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// Whether Copa is in slow start.
    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    /// The current velocity.
    pub fn velocity(&self) -> f64 {
        self.velocity.value()
    }

    /// The current `delta`.
    pub fn delta(&self) -> f64 {
        self.delta.delta()
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        self.delta.mode()
    }

    /// The window target as of the last ACK, in packets.
    pub fn target(&self) -> f64 {
        self.target
    }

    fn reset(&mut self) {
        *self = Copa::new(self.params, &Config { mss: self.mss, seed: 0 });
    }

    fn packets(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.mss).max(1)
    }

    /// Moves the window for `packets` ACKed packets (section 2.1 and 2.2).
    fn update_window(&mut self, packets: u64) {
        let delta = self.delta.delta();
        if self.slow_start {
            if self.cwnd < self.target {
                // Slow start: one packet per ACKed packet, doubling per RTT.
                self.cwnd += packets as f64;
            } else {
                self.slow_start = false;
                self.velocity = Velocity::new(self.cwnd);
            }
            return;
        }
        // One step per ACKed packet; a huge chunk takes its last steps as one scaled step.
        let exact_steps = packets.min(MAX_EXACT_STEPS);
        for _ in 0..exact_steps {
            self.step(delta, 1.0);
        }
        if packets > exact_steps {
            self.step(delta, (packets - exact_steps) as f64);
        }
    }

    /// `cwnd +-= n x v / (delta x cwnd)` towards the target, never below [`MIN_CWND`].
    fn step(&mut self, delta: f64, n: f64) {
        let step = n * self.velocity.value() / (delta * self.cwnd);
        if self.cwnd < self.target {
            self.cwnd += step;
        } else {
            self.cwnd -= step;
        }
        self.cwnd = self.cwnd.max(MIN_CWND);
    }

    fn end_of_loss_period(&mut self, now: Time) {
        let srtt = self.rtt.srtt().unwrap_or(RESET_AFTER);
        if self.loss.end_of_period(now, srtt) {
            self.cwnd = (self.cwnd * loss::DECREASE).max(MIN_CWND);
            if self.slow_start {
                self.slow_start = false;
                self.velocity = Velocity::new(self.cwnd);
            }
        }
    }
}

impl Controller for Copa {
    fn name(&self) -> &'static str {
        "copa"
    }

    fn on_sent(&mut self, _now: Time, _packet: &SentPacket) -> u64 {
        0
    }

    fn on_ack(&mut self, now: Time, ack: &AckSample) {
        if self.last_ack.is_some_and(|last| now >= last + RESET_AFTER) {
            self.reset();
        }
        self.last_ack = Some(now);
        let packets = self.packets(ack.bytes);
        self.rtt.on_sample(now, ack.rtt);
        self.loss.on_ack(now, packets);
        self.acked_packets = self.acked_packets.saturating_add(packets);
        let (Some(srtt), Some(min_rtt), Some(standing)) =
            (self.rtt.srtt(), self.rtt.min_rtt(), self.rtt.standing_rtt(now))
        else {
            return;
        };
        self.standing_rtt = Some(standing);
        let recent = self.rtt.recent_min(now).zip(self.rtt.recent_max(now));
        if self.drain.ends_with(ack.sent_at) {
            // This packet left after Copa's own queue had drained (section 4's test, applied
            // when only other flows can be holding the queue).
            match recent {
                Some((lo, hi)) if mode::queue_emptied(lo, hi, min_rtt) => self.delta.on_queue_emptied(),
                _ => self.drain.on_competitor(now, self.rtt.min_rtt_window()),
            }
        }
        if let Some((lo, hi)) = recent {
            self.delta.on_ack(lo, hi, min_rtt);
        }
        self.target = target_window(standing, min_rtt, self.delta.delta());
        if self.acked_packets > WARMUP_PACKETS && !self.drain.holds() {
            self.update_window(packets);
        }
        if self.round.tick(now, srtt) {
            if !self.slow_start {
                self.velocity.on_round(self.cwnd, self.delta.delta());
            }
            if let Some((lo, hi)) = recent {
                self.delta.on_round(lo, hi, min_rtt);
            }
        }
        match self.delta.mode() {
            Mode::Default => self.drain.on_default(),
            Mode::Competitive if self.params.policy.checks_by_draining() => {
                self.drain.on_competitive(now, self.rtt.mode_span())
            }
            Mode::Competitive => {}
        }
        if self.drain.start_if_due(now) {
            self.cwnd = pipe_window(self.cwnd, min_rtt, standing).max(MIN_CWND);
            self.drain_started = true;
        }
        self.end_of_loss_period(now);
    }

    /// An ACK to Copa, as every ACK is to its reference (genericCC's `onACK` takes an RTT
    /// sample, updates the window and counts a packet acknowledged for every ACK, also of a
    /// packet it had counted lost; its "no ACK for 2 s" clock restarts on every ACK): handled as
    /// [`on_ack`](Controller::on_ack). The loss it followed stays counted.
    fn on_late_ack(&mut self, now: Time, ack: &AckSample) {
        self.on_ack(now, ack);
    }

    fn on_loss(&mut self, now: Time, loss: &LossEvent) {
        let packets = self.packets(loss.bytes);
        self.loss.on_loss(now, packets);
        let srtt = self.rtt.srtt().unwrap_or_default();
        self.delta.on_loss(now, srtt);
        self.end_of_loss_period(now);
    }

    fn on_timer(&mut self, now: Time) {
        if self.last_ack.is_some_and(|last| now >= last + RESET_AFTER) {
            self.reset();
        }
    }

    fn next_timer(&self) -> Option<Time> {
        self.last_ack.map(|last| last + RESET_AFTER)
    }

    fn decision(&self) -> Decision {
        Decision { window: self.window_bytes(), pacing_rate: self.pacing_rate() }
    }

    /// Continues from the rate the group gave it: `cwnd = rate x RTT` in packets (RFC 8699 section
    /// 5.3.1 for window-based controllers), never below [`MIN_CWND`]. Slow start, velocity,
    /// `delta` and the RTT history are kept: the window moves on from the share. While a drain
    /// check holds the window at the pipe ([`drain`]), a share may lower it but not raise it:
    /// the hold is what lets the queue empty.
    fn adopt_share(&mut self, _now: Time, share: &Share) {
        let cwnd = (share.window() as f64 / self.mss as f64).max(MIN_CWND);
        self.cwnd = if self.drain.holds() { cwnd.min(self.cwnd) } else { cwnd };
    }

    fn take_drain_start(&mut self) -> bool {
        std::mem::take(&mut self.drain_started)
    }

    /// In competitive mode, starts the drain check now (the window held at the pipe, [`drain`]),
    /// because another flow of the group began one: the group's queue empties only when every
    /// flow of the group holds. Nothing in the default mode or while draining.
    fn drain_with_group(&mut self, now: Time) {
        let (Some(min_rtt), Some(standing)) = (self.rtt.min_rtt(), self.standing_rtt) else { return };
        if self.drain.start_now(now) {
            self.cwnd = pipe_window(self.cwnd, min_rtt, standing).max(MIN_CWND);
        }
    }

    fn metrics(&self) -> Metrics {
        let state = if self.slow_start {
            "slow_start"
        } else {
            match self.delta.mode() {
                Mode::Default => "default",
                Mode::Competitive => "competitive",
            }
        };
        Metrics {
            pacing_rate: self.pacing_rate(),
            srtt: self.rtt.srtt(),
            min_rtt: self.rtt.min_rtt(),
            extra: vec![
                ("cwnd_packets", self.cwnd),
                ("target_packets", self.target),
                ("velocity", self.velocity.value()),
                ("delta", self.delta.delta()),
                ("standing_rtt_ms", self.standing_rtt.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)),
                ("draining", if self.drain.holds() { 1.0 } else { 0.0 }),
            ],
            ..Metrics::new(self.window_bytes(), state)
        }
    }
}

impl Copa {
    /// The bytes that may be in flight: the gate's flight for the window ([`gate`]); while a
    /// drain check holds the window at the pipe, the window itself, so that the queue can
    /// empty (the reference has no drain check).
    fn window_bytes(&self) -> u64 {
        let packets = if self.drain.holds() { self.cwnd } else { self.params.gate.flight(self.cwnd) };
        // `as` saturates; cwnd is finite and at least MIN_CWND.
        (packets * self.mss as f64) as u64
    }

    /// Pacing rate in bytes per second: 2 x cwnd / RTTstanding (section 2.1).
    fn pacing_rate(&self) -> Option<u64> {
        let standing = self.standing_rtt?.as_secs_f64();
        if standing <= 0.0 {
            return None;
        }
        let rate = PACING_GAIN * self.cwnd * self.mss as f64 / standing;
        Some((rate as u64).max(1))
    }
}

#[cfg(test)]
mod tests;
