//! `verus`: Verus (Zaki et al., "Adaptive Congestion Control for Unpredictable Cellular
//! Networks", SIGCOMM 2015), as its reference implementation behaves (see
//! `ALGORITHMS.md`). Parameters: `r`, the ratio threshold R of `DmaxLast / Dmin` (default 6;
//! the paper's figure 10 uses 2, 4 and 6 as a throughput/delay knob), e.g. `verus:r=2`; and
//! `variant`, `reference` (the default: as the authors' program) or `bounded` (our earlier
//! rules for the send allowance and the raw profile, [`variant`]), e.g. `verus:variant=bounded`.
//!
//! Verus learns a *delay profile*, the RTT as a function of the window a packet was sent at
//! ([`profile`]), and every 5 ms epoch moves a target delay `Dest` up or down by the trend
//! of the largest RTT of the epoch, reads the window for that delay off the profile and
//! allows a number of packets ([`epoch`]). Losses cut the window multiplicatively
//! ([`outstanding`] finds them).
//!
//! # Mapping to the controller contract
//!
//! - Verus is allowance-based: each epoch adds S packets to a send allowance, and each ACK
//!   in slow start adds `max(0, W - Wcrt)`, `Wcrt` counting the allowance not yet sent (what
//!   earlier ACKs of the same instant granted) as if already sent: the reference's sending
//!   thread sends it while the next ACK is read ([`variant`]). [`Controller::decision`]
//!   exposes it as `window = bytes_in_flight + allowance`, so the transport sends exactly the
//!   allowance;
//!   [`Controller::on_sent`] consumes it.
//! - No pacing: like the reference, each epoch's packets leave back to back (at most one
//!   epoch's worth, a 5 ms burst at the target rate).
//! - The window at send time and the slow-start session travel in the `on_sent` memo
//!   ([`memo`]), where the reference carries them in the packet header.
//! - Epochs and the loss timeout run on [`Controller::next_timer`]. After a jump in time only
//!   one epoch runs; the jump itself shows up as a long wait for an ACK (rule 2).
//! - A late ACK of a packet the transport declared lost ([`Controller::on_late_ack`]: UDP
//!   mode, the simulator) is an ACK as any other: the reference has no transport declaring
//!   losses and re-arms its loss timer on every ACK with that ACK's RTT. During an outage the
//!   queued packets' ACKs come late, so the timeouts come 1 s apart, as the reference's.
//!
//! Rules 4 and 6 read `Wcrt` as the authors' program keeps it, an integer count of packets
//! ([`outstanding::OutstandingPackets::whole_packets`]: UDP mode's 1412-byte packets count one
//! each, not 1412 / 1448), and rule 6 divides as it does, in integers truncated before `W` is
//! added ([`epoch::packets_to_send`]). In real arithmetic S was usually one packet less; at
//! W 1 that packet is the reference's second packet in flight, which makes rule 4 hold until
//! an ACK comes instead of raising `Dmin` again the next epoch; and two small packets in
//! flight counted 1.95, so rule 4 raised `Dmin` where the reference holds
//! (bench/reference-results.md, sections "udp-verus on the six cells last measured before the
//! slow-start change" and "udp-verus: rules 4 and 6 in whole packets": on the 12 shared
//! traces within the bar on 11 of 12 against 12 of 12 with real arithmetic in the same holds,
//! the one cell, Verizon-LTE-short, decided by slow start's overshoot, which this does not
//! touch).
//!
//! The profile is fitted as the reference fits it: a penalized regression spline (ALGLIB's
//! `spline1dfitpenalized` with `rho = 2`, written by us: [`penalized`]), `max_w / N` basis
//! functions with `N` only ever lowered from 15 ([`profile`]); see [`fit`] for the tabulation.
//!
//! # Deliberate differences from the reference
//!
//! - A fitted curve that cannot map the target delay (no window below 40000 reaches it)
//!   restarts slow start, as in the reference; so does a profile narrower than 5 windows.
//! - `dTbar` starts at the first RTT sample (the reference starts its EWMA from 0).
//! - Unused allowance is capped at `W + 1` packets (of `mss` bytes, or one of the largest chunk
//!   the transport sent if that is more) where the transport holds the flight below W (kernel
//!   mode's cwnd, an application-limited flow), so that such a flow does not bank allowance and
//!   burst later (the reference's sender is always backlogged and W always binds); where W binds
//!   it is capped only with `variant=bounded` ([`variant`]). W binds at an ACK when the packet
//!   was sent window-limited ([`usage`]) *and* the flight the transport reported when this
//!   instant's ACKs began was within a packet of the W then in force: judged by the packet's
//!   own (older, smaller) W alone, kernel mode's slow start counted as window-limited while
//!   the kernel held the flight far below the current W, and banked tens of thousands of
//!   packets. Where the flight was held below W there, allowance beyond the cap is also cut,
//!   and what the transport held stays within the *current* W + 1 when W falls (slow start's
//!   exit, a loss, an epoch), also once the flight is above the new W: the reference's sender
//!   hands every allowed packet to the network at once and has nothing left when its W falls.
//!   Kept, it left at the new, small W over the queue the old W built (kernel mode over CUBIC
//!   on highwayGold: about 1.5 MB sent at W = 1 after slow start's exit, whose 500-800 ms RTTs
//!   the profile recorded at window 1, so that W stayed 1 for a second or more at a time until
//!   `Dest` climbed past them, the link idle meanwhile).
//!   With `variant=bounded` also `curve_inv` of a window that was never seen on the raw
//!   profile reads the nearest seen window (the reference reads the unset entry, -1 ms, which
//!   after slow start drains the queue empty).
//! - The window is *validated* (RFC 7661's idea, [`usage`]): the reference is its own transport
//!   and W always binds; over kernel TCP the kernel's cwnd may hold the flight below W. So a
//!   packet's window in the memo (the profile key, `w_lost`, the slow-start exit window) is
//!   the peak flight of the last two epochs (at send or at the ACK, whichever is larger)
//!   unless that is within a packet of W, and in slow start only ACKs of such window-limited
//!   packets grow W; others cap W at twice the used flight. Where W binds (the simulator) this
//!   is the reference's rule.
//! - Like the reference we keep two rules `ALGORITHMS.md` does not list: while the loss
//!   phase opened by leaving slow start on a high RTT lasts, rule 4's ratio branch does
//!   nothing; and when `Dest` is at `Dmin` with 2 or more packets in flight, the epoch sends
//!   nothing.

pub mod constants;
pub mod epoch;
pub mod fit;
pub mod memo;
pub mod outstanding;
pub mod penalized;
pub mod profile;
pub mod usage;
pub mod variant;

#[cfg(test)]
mod tests;

use crate::controller::{Config, Controller};
use crate::event::{AckSample, Decision, LossEvent, SentPacket};
use crate::metrics::Metrics;
use crate::rtt::RttEstimator;
use crate::spec::{Params, SpecError};
use crate::time::Time;
use std::time::Duration;

use constants::*;
use epoch::EpochInput;
use memo::SendMemo;
use outstanding::{Outstanding, OutstandingPackets};
use profile::{DelayProfile, Refit};
use usage::WindowUsage;
use variant::Variant;

/// Counters of what Verus did, for tests and telemetry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerusStats {
    /// Epochs run after slow start.
    pub epochs: u64,
    /// Packets counted lost (expired or declared by the transport).
    pub losses: u64,
    /// Loss phases entered.
    pub loss_phases: u64,
    /// Timeouts.
    pub timeouts: u64,
    /// Slow-start restarts.
    pub restarts: u64,
    /// Successful profile fits.
    pub fits: u64,
    /// Profile fits that failed (the previous curve stayed).
    pub failed_fits: u64,
    /// Basis functions (`M`) summed over the successful fits.
    pub fit_nodes: u64,
    /// Entries of the factorized normal equations summed over the successful fits: the work
    /// of the solver, at most 7 per basis function.
    pub fit_nonzeros: u64,
}

/// The Verus sender.
#[derive(Clone, Debug)]
pub struct Verus {
    r: f64,
    variant: Variant,
    mss: u64,
    /// Set by the first event: timers are armed from then on.
    started: bool,
    next_epoch: Time,
    timeout_at: Time,
    /// When to refit the profile next; `None` in slow start.
    next_fit: Option<Time>,
    /// The last ACK that advanced the highest acknowledged sequence.
    last_ack_at: Time,
    session: u16,
    slow_start: bool,
    loss_phase: bool,
    leaving_slow_start: bool,
    /// W, the target window in packets.
    w: f64,
    /// Dest, the target delay (ms).
    dest: f64,
    /// Dmin (ms), `None` before the first RTT sample of the session.
    dmin: Option<f64>,
    dmax_last: Option<f64>,
    /// The session's RTT samples: dTbar is their smoothed RTT (EWMA, gain 1/8).
    rtt: RttEstimator,
    epoch_max_rtt: Option<f64>,
    last_rtt_ms: f64,
    last_send: u64,
    /// Bytes the transport may still send.
    allowance: u64,
    /// The part of `allowance` the transport left unsent when an instant's ACKs began while it
    /// held the flight below W, less what it has sent since: allowance granted under a W that
    /// may have fallen since, kept within the current W + 1 packets ([`Verus::cut_held_allowance`]).
    held_allowance: u64,
    /// Bytes in flight as the transport last reported them.
    bytes_in_flight: u64,
    largest_packet: u64,
    /// How much of W the transport let out lately.
    usage: WindowUsage,
    /// When the ACKs handled last arrived.
    acks_at: Option<Time>,
    /// Whether, before the first of them, the transport held the flight more than
    /// [`WINDOW_USE_SLACK`] packets below the W then in force (after it had its chance to send
    /// what W allowed): several ACKs handled at one instant (before the transport could send)
    /// are all judged by it.
    flight_held_below_w: bool,
    profile: DelayProfile,
    outstanding: OutstandingPackets,
    stats: VerusStats,
}

impl Verus {
    /// A Verus sender with ratio threshold `r` and packets of `config.mss` bytes, behaving as
    /// the reference ([`Variant::Reference`]).
    pub fn new(r: f64, config: &Config) -> Verus {
        Verus::with_variant(r, Variant::Reference, config)
    }

    /// A Verus sender with ratio threshold `r` and the given [`Variant`].
    pub fn with_variant(r: f64, variant: Variant, config: &Config) -> Verus {
        let mss = config.mss.max(1);
        Verus {
            r,
            variant,
            mss,
            started: false,
            next_epoch: Time::ZERO,
            timeout_at: Time::MAX,
            next_fit: None,
            last_ack_at: Time::ZERO,
            session: 0,
            slow_start: true,
            loss_phase: false,
            leaving_slow_start: false,
            w: 1.0,
            dest: 0.0,
            dmin: None,
            dmax_last: None,
            rtt: RttEstimator::new(),
            epoch_max_rtt: None,
            last_rtt_ms: 0.0,
            last_send: 0,
            allowance: mss,
            held_allowance: 0,
            bytes_in_flight: 0,
            largest_packet: mss,
            usage: WindowUsage::new(),
            acks_at: None,
            flight_held_below_w: false,
            profile: DelayProfile::new(),
            outstanding: OutstandingPackets::new(mss),
            stats: VerusStats::default(),
        }
    }

    /// Builds from `r=RATIO` (default 6, between 1 and 1000) and `variant=reference|bounded`
    /// (default `reference`).
    pub fn from_params(params: &mut Params, config: &Config) -> Result<Verus, SpecError> {
        let r = params.take_f64("r", DEFAULT_R, 1.0, 1000.0)?;
        let name = params.take_choice("variant", Variant::NAMES[0], &Variant::NAMES)?;
        let variant = Variant::from_name(name).unwrap_or_default();
        Ok(Verus::with_variant(r, variant, config))
    }

    /// The ratio threshold R.
    pub fn r(&self) -> f64 {
        self.r
    }

    /// Which rules this sender follows.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// The target window W in packets.
    pub fn target_window(&self) -> f64 {
        self.w
    }

    /// The target delay Dest in milliseconds.
    pub fn target_delay_ms(&self) -> f64 {
        self.dest
    }

    /// Whether Verus is in slow start.
    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    /// Whether Verus is in a loss phase.
    pub fn in_loss_phase(&self) -> bool {
        self.loss_phase
    }

    /// Bytes Verus counts in flight, in packets of `mss` bytes (slow start's `Wcrt`; rules 4
    /// and 6 count whole packets, [`Verus::whole_packets_in_flight`]).
    pub fn packets_in_flight(&self) -> f64 {
        self.outstanding.outstanding_bytes() as f64 / self.mss as f64
    }

    /// `Wcrt` as rules 4 and 6 read it: whole packets in flight, as the reference counts them
    /// ([`OutstandingPackets::whole_packets`]).
    pub fn whole_packets_in_flight(&self) -> u64 {
        self.outstanding.whole_packets()
    }

    /// Bytes the transport may still send.
    pub fn allowance_bytes(&self) -> u64 {
        self.allowance
    }

    /// The delay profile.
    pub fn profile(&self) -> &DelayProfile {
        &self.profile
    }

    /// What Verus has done so far.
    pub fn stats(&self) -> VerusStats {
        self.stats
    }

    /// dTbar, the smoothed RTT (ms).
    fn dtbar_ms(&self) -> Option<f64> {
        self.rtt.srtt().map(|d| d.as_secs_f64() * 1000.0)
    }

    fn dmin_ms(&self) -> f64 {
        self.dmin.unwrap_or(INITIAL_DMIN_MS)
    }

    fn start(&mut self, now: Time) {
        if !self.started {
            self.started = true;
            self.next_epoch = now + EPOCH;
            self.timeout_at = now + INITIAL_TIMEOUT;
            self.last_ack_at = now;
        }
    }

    /// Adds `packets` whole packets to the allowance, as the [`Variant`] bounds it;
    /// `window_limited` says whether W binds the flight now (see [`Variant::grant`]).
    fn grant(&mut self, packets: f64, window_limited: bool) {
        // `as` saturates: the product is finite and non-negative.
        let add = (packets.max(0.0).floor() * self.mss as f64) as u64;
        self.allowance = self.variant.grant(self.allowance, add, self.allowance_cap(), window_limited);
    }

    /// The cap on unsent allowance (bytes): W + 1 packets of `mss` bytes, but at least one of
    /// the largest the transport sends (a transport writing multi-packet chunks, the engine,
    /// must not multiply the cap).
    fn allowance_cap(&self) -> u64 {
        // `as` saturates: the product is finite and non-negative.
        ((self.w.max(1.0).ceil() + 1.0) * self.mss as f64).max(self.largest_packet as f64) as u64
    }

    /// Cuts the allowance the transport held ([`Verus::held_allowance`]) to the cap of the
    /// current W: after W falls (slow start's exit, a loss, an epoch) nothing granted under the
    /// old, larger W is left to send beyond W + 1 packets. The reference's sender hands every
    /// allowed packet to the network at once, so when its W falls it has nothing left over;
    /// over a transport that held the flight (kernel mode's cwnd, the socket's buffer) the
    /// leftover would leave at the new W, on top of the queue the old W built, and record that
    /// queue's delay at the new, small window in the profile.
    fn cut_held_allowance(&mut self) {
        let excess = self.held_allowance.saturating_sub(self.allowance_cap());
        self.allowance -= excess.min(self.allowance);
        self.held_allowance -= excess;
    }

    /// `curve_inv(w)`: the fitted curve's delay at `w`, or before the first fit the raw
    /// profile's as the [`Variant`] reads it (`Dmin` for an empty profile in the bounded one).
    fn curve_inv_or_dmin(&self, w: f64) -> f64 {
        let delay = match self.profile.fitted() {
            Some(fit) => Some(fit.delay_at(w)),
            None => self.variant.raw_delay(&self.profile, w),
        };
        delay.unwrap_or_else(|| self.dmin_ms())
    }

    /// Leaves slow start: from now on epochs run and the profile is refitted.
    fn end_slow_start(&mut self, now: Time) {
        self.slow_start = false;
        self.next_fit = Some(now);
    }

    /// A new slow-start session: everything learnt is dropped, one packet is allowed.
    fn restart(&mut self, now: Time) {
        *self = Verus {
            session: self.session.wrapping_add(1),
            started: true,
            next_epoch: self.next_epoch,
            timeout_at: now + INITIAL_TIMEOUT,
            last_ack_at: now,
            bytes_in_flight: self.bytes_in_flight,
            largest_packet: self.largest_packet,
            stats: VerusStats { restarts: self.stats.restarts + 1, ..self.stats },
            ..Verus::with_variant(self.r, self.variant, &Config { mss: self.mss, seed: 0 })
        };
        self.allowance = self.mss;
    }

    /// A packet counted lost (paper section 4.4): the first loss of a loss phase cuts W to
    /// `max(1, min(W, 0.7 x w_lost))` and sets `Dest = curve_inv(W)`; in slow start with
    /// `W > 20` it also ends slow start, forgetting what is in flight.
    fn packet_lost(&mut self, now: Time, packet: Outstanding) {
        self.stats.losses += 1;
        let w_lost = self.usage.window_in_use(SendMemo::decode(packet.memo)).packets;
        if !self.loss_phase {
            self.loss_phase = true;
            self.stats.loss_phases += 1;
            self.w = (MULTIPLICATIVE_DECREASE * w_lost as f64).min(self.w).max(1.0);
            self.dest = self.curve_inv_or_dmin(self.w);
            self.cut_held_allowance();
        }
        if self.slow_start && self.w.floor() > SLOW_START_LOSS_EXIT_WINDOW {
            self.profile.limit_to(w_lost.max(100));
            self.outstanding.forget_all();
            self.end_slow_start(now);
        }
    }

    /// The loss timer fired: no ACK for `clamp(5 x RTT, 150, 1000)` ms.
    fn timeout(&mut self, now: Time) {
        self.stats.timeouts += 1;
        if !self.outstanding.anything_acked() {
            self.restart(now);
            return;
        }
        if self.slow_start {
            self.end_slow_start(now);
        } else {
            self.loss_phase = true;
            self.dest = self.dmin_ms();
            self.outstanding.forget_all();
        }
        self.timeout_at = now + loss_timeout(self.last_rtt_ms);
    }

    /// Per-ACK bookkeeping of an acknowledged packet Verus still counted.
    fn record_ack(&mut self, now: Time, rtt: Duration, w_sent: usize) {
        let rtt_ms = rtt.as_secs_f64() * 1000.0;
        self.epoch_max_rtt = Some(self.epoch_max_rtt.map_or(rtt_ms, |m| m.max(rtt_ms)));
        self.rtt.on_sample(now, rtt);
        self.dmin = Some(self.dmin.map_or(rtt_ms, |d| d.min(rtt_ms)));
        if !self.loss_phase {
            self.profile.record(w_sent, rtt_ms);
        } else {
            // In the loss phase W grows as in congestion avoidance.
            self.w += 1.0 / self.w;
            if self.profile.has_fit() {
                self.dest = self.dest.min(self.curve_inv_or_dmin(self.w));
            }
        }
    }

    /// One 5 ms epoch: rule 1 always, rules 2 to 7 after slow start.
    fn epoch(&mut self, now: Time) {
        for lost in self.outstanding.expire(now, MISSING_EXPIRY) {
            self.packet_lost(now, lost);
        }
        if self.slow_start {
            return;
        }
        if self.next_fit.is_some_and(|t| now >= t) {
            self.next_fit = Some(now + REFIT_INTERVAL);
            match self.profile.refit() {
                Refit::Fitted => {
                    self.stats.fits += 1;
                    if let Some(work) = self.profile.fitted().map(|f| f.work()) {
                        self.stats.fit_nodes += work.nodes as u64;
                        self.stats.fit_nonzeros += work.system_nonzeros as u64;
                    }
                }
                Refit::KeptPrevious(_) => self.stats.failed_fits += 1,
                Refit::TooNarrow => {
                    self.restart(now);
                    return;
                }
            }
        }
        self.stats.epochs += 1;
        let input = EpochInput {
            epoch_max_rtt: self.epoch_max_rtt.take(),
            since_last_ack: now.saturating_since(self.last_ack_at).as_secs_f64() * 1000.0,
            dmax_last: self.dmax_last,
            dmin: self.dmin_ms(),
            dest: self.dest,
            wcrt: self.whole_packets_in_flight(),
            dtbar: self.dtbar_ms().unwrap_or(0.0),
            leaving_slow_start: self.leaving_slow_start,
            r: self.r,
        };
        let Some(out) = epoch::update(&input, |d| self.profile.curve(d)) else {
            self.restart(now);
            return;
        };
        self.dmax_last = Some(out.dmax_last);
        self.dest = out.dest;
        self.dmin = Some(out.dmin);
        self.w = out.w.min((MAX_WINDOW - 1) as f64);
        self.cut_held_allowance();
        self.last_send = out.send;
        let window_limited = self.usage.used() + WINDOW_USE_SLACK >= self.w;
        self.grant(out.send as f64, window_limited);
    }
}

impl Controller for Verus {
    fn name(&self) -> &'static str {
        "verus"
    }

    fn on_sent(&mut self, now: Time, packet: &SentPacket) -> u64 {
        self.start(now);
        self.bytes_in_flight = packet.bytes_in_flight;
        self.largest_packet = self.largest_packet.max(packet.bytes);
        self.allowance = self.allowance.saturating_sub(packet.bytes);
        self.held_allowance = self.held_allowance.min(self.allowance);
        let flight = packet.bytes_in_flight as f64 / self.mss as f64;
        self.usage.sent(flight);
        let memo = SendMemo::new(self.session, self.w, flight).encode();
        self.outstanding.sent(packet.seq, packet.bytes, memo);
        memo
    }

    fn on_ack(&mut self, now: Time, ack: &AckSample) {
        self.start(now);
        if self.acks_at != Some(now) {
            // The first ACK of an instant: the transport has had its chance to send what was
            // allowed. If it held the flight more than a packet below W, whatever is still
            // allowed beyond W + 1 packets is banked, not about to leave: cut it.
            self.acks_at = Some(now);
            let flight = self.bytes_in_flight as f64 / self.mss as f64;
            self.flight_held_below_w = flight + WINDOW_USE_SLACK < self.w;
            if self.flight_held_below_w {
                self.allowance = self.allowance.min(self.allowance_cap());
                self.held_allowance = self.allowance;
            }
        }
        self.bytes_in_flight = ack.bytes_in_flight;
        let memo = SendMemo::decode(ack.memo);
        if memo.session != self.session {
            return; // an ACK of an older slow-start session
        }
        let in_use = self.usage.window_in_use(memo);
        let w_sent = in_use.packets;
        let rtt_ms = ack.rtt.as_secs_f64() * 1000.0;
        if self.slow_start && rtt_ms > SLOW_START_EXIT_RTT_MS {
            self.w = (MULTIPLICATIVE_DECREASE * w_sent as f64).max(1.0);
            self.dest = self.curve_inv_or_dmin(self.w);
            if !self.loss_phase {
                self.stats.loss_phases += 1;
            }
            self.loss_phase = true;
            self.leaving_slow_start = true;
            self.end_slow_start(now);
        }
        self.timeout_at = now + loss_timeout(rtt_ms);
        self.last_rtt_ms = rtt_ms;
        if self.loss_phase && w_sent as f64 <= self.w {
            self.loss_phase = false;
            self.leaving_slow_start = false;
            self.epoch_max_rtt = None;
        }
        let acked = self.outstanding.acked(now, ack.seq);
        if acked.packet.is_some() {
            self.record_ack(now, ack.rtt, w_sent);
        }
        if acked.advanced {
            self.last_ack_at = now;
        }
        if self.slow_start {
            if in_use.window_limited {
                let packets = (ack.bytes as f64 / self.mss as f64).max(1.0);
                self.w = (self.w + packets).min((MAX_WINDOW - 1) as f64);
            } else {
                // W did not bind: keep it within twice the flight that was let out (the
                // packet's window here is that flight).
                let used = self.usage.used().max(w_sent as f64);
                self.w = self.w.min((UNUSED_WINDOW_CAP * used).max(1.0));
            }
            // W binds now only if the packet was sent window-limited and the transport has
            // since let the flight reach the W in force before this instant's ACKs; a flight
            // held below that (kernel mode's cwnd, an application limit) would only bank the
            // allowance.
            let binds = in_use.window_limited && !self.flight_held_below_w;
            let wcrt = self.packets_in_flight();
            // Whole packets only: the transport's packets may be smaller than `mss` (UDP's carry
            // 1412 bytes of a 1448-byte grant), and the bytes left over send nothing.
            let unsent = (self.allowance as f64 / self.mss as f64).floor();
            self.grant(self.variant.slow_start_grant(self.w, wcrt, unsent), binds);
        }
        self.cut_held_allowance();
    }

    /// An ACK to Verus, as every ACK is to its reference (which has no transport of its own
    /// that declares losses, and on every ACK re-arms its loss timer with 5 x that ACK's RTT,
    /// `ALGORITHMS.md`): the timer, the loss phase and slow start hear it as in
    /// [`on_ack`](Controller::on_ack). The packet itself left `Wcrt` at its loss, so its RTT is
    /// not recorded in the profile, `Dmin` or `dTbar`. Without it, an outage's timeouts were
    /// re-armed with the last RTT before the outage (every ~220 ms instead of every 1-2 s), and
    /// each let W out again.
    fn on_late_ack(&mut self, now: Time, ack: &AckSample) {
        self.on_ack(now, ack);
    }

    fn on_loss(&mut self, now: Time, loss: &LossEvent) {
        self.start(now);
        self.bytes_in_flight = loss.bytes_in_flight;
        if SendMemo::decode(loss.memo).session != self.session {
            return;
        }
        if let Some(packet) = self.outstanding.lost(loss.seq) {
            self.packet_lost(now, packet);
        }
    }

    fn on_timer(&mut self, now: Time) {
        self.start(now);
        if now >= self.timeout_at {
            self.timeout(now);
        }
        if now >= self.next_epoch {
            self.epoch(now);
            let srtt = self.rtt.srtt().unwrap_or_default();
            let rtt = Duration::from_micros(u64::try_from(srtt.as_micros()).unwrap_or(u64::MAX));
            self.usage.roll(now, rtt.max(EPOCH));
            let next = self.next_epoch + EPOCH;
            self.next_epoch = if next > now { next } else { now + EPOCH };
        }
    }

    fn next_timer(&self) -> Option<Time> {
        self.started.then(|| self.next_epoch.min(self.timeout_at))
    }

    /// After slow start ACKs grant nothing: the allowance grows only in the epoch, and what
    /// an ACK or a loss changes (the profile, `Dmax` of the epoch, W in the loss phase, the
    /// loss timer) is read only there. In slow start each ACK grants, which matters at once
    /// only if the transport would send it at once. Otherwise feedback that arrives before
    /// the next epoch or loss timeout, heard at it before the timer runs, counts in the same
    /// epoch; what moves is the `now` it is heard at (the last ACK's time, the loss timer's
    /// re-arm, the expiry of skipped packets), by at most the wait, and ACKs heard in one
    /// step are one instant (the check of a flight held below W runs once for them).
    fn feedback_can_wait_until(&self, sends_on_feedback: bool) -> Option<Time> {
        if self.slow_start && sends_on_feedback {
            None
        } else {
            self.next_timer()
        }
    }

    fn decision(&self) -> Decision {
        Decision { window: self.bytes_in_flight.saturating_add(self.allowance), pacing_rate: None }
    }

    fn metrics(&self) -> Metrics {
        let state = if self.slow_start {
            "slow_start"
        } else if self.loss_phase {
            "loss"
        } else {
            "normal"
        };
        let ms = |v: f64| std::time::Duration::from_micros((v.max(0.0) * 1000.0) as u64);
        Metrics {
            srtt: self.rtt.srtt(),
            min_rtt: self.dmin.map(ms),
            extra: vec![
                ("w", self.w),
                ("dest_ms", self.dest),
                ("wcrt", self.packets_in_flight()),
                ("send", self.last_send as f64),
                ("allowance_bytes", self.allowance as f64),
                ("dmax_last_ms", self.dmax_last.unwrap_or(0.0)),
            ],
            ..Metrics::new(self.decision().window, state)
        }
    }
}
