//! The controller contract: what every congestion-control algorithm implements.

use crate::event::{AckSample, Arrival, Decision, LossEvent, ReceiverReport, SenderHint, SentPacket};
use crate::fse::Share;
use crate::metrics::Metrics;
use crate::time::Time;

/// Settings every controller is built with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Bytes in one packet: the unit in which algorithms like Verus and Copa count windows.
    pub mss: u64,
    /// Seed for any randomness the algorithm uses; the same seed gives the same behaviour.
    pub seed: u64,
}

/// How many RTT samples a controller needs from the transport: the transport measures no
/// more than this, since measuring costs the sender. In kernel mode a sample is a write of
/// its own (MSG_EOR) that the kernel timestamps twice (SCHED and ACK), each stamp an skb
/// queued on the socket's error queue, a wake-up of the driver and a message read back:
/// bench/cpu-per-byte-results.md measured the stamps and their wake-ups at about a quarter of
/// the sender's CPU on loopback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RttSamples {
    /// One per packet (the transport's chunk), the default: delay-based algorithms are built
    /// on them. Verus learns its delay profile from the RTT of every acknowledged packet and
    /// moves its target by each epoch's largest RTT (Zaki et al., SIGCOMM 2015;
    /// [`crate::verus`]), Copa takes its standing RTT as the smallest RTT of the last half
    /// RTT (Arun and Balakrishnan, NSDI 2018, section 2.1), and loss-based windows (Reno,
    /// CUBIC) grow per acknowledged packet (RFC 5681 section 3.1, RFC 9438 section 4).
    PerPacket,
    /// None: nothing the controller decides depends on an acknowledgement's timing (a
    /// constant window and rate, [`crate::fixed`]). The transport still learns what was
    /// acknowledged and still hands it to [`Controller::on_ack`], from whatever it reads
    /// anyway (kernel mode: TCP_INFO), with an RTT measured by the engine's clock.
    NotNeeded,
}

impl Default for Config {
    /// 1448-byte packets (a TCP MSS on a 1500-byte MTU with timestamps), seed 0.
    fn default() -> Config {
        Config { mss: 1448, seed: 0 }
    }
}

/// A sender-side congestion controller, sans-IO: time comes in as `now`, nothing is read
/// from a clock or a socket, and the decision is read back with [`decision`](Self::decision).
///
/// The transport calls, for one flow, in non-decreasing `now` order:
/// [`on_sent`](Self::on_sent) for every packet it sends, [`on_ack`](Self::on_ack) for every
/// acknowledged packet, [`on_loss`](Self::on_loss) for every packet it gives up on,
/// [`on_late_ack`](Self::on_late_ack) for the first ACK of a packet it gave up on (transports
/// that can tell: the simulator and UDP mode), [`on_report`](Self::on_report) for every
/// receiver report, and [`on_timer`](Self::on_timer) once [`next_timer`](Self::next_timer) has
/// passed. After any call it reads [`decision`](Self::decision).
pub trait Controller: Send {
    /// The algorithm's registry name (`"copa"`, `"verus"`, ...).
    fn name(&self) -> &'static str;

    /// A packet was sent. The returned memo is stored with the packet and handed back in its
    /// [`AckSample`] or [`LossEvent`] (Verus keeps the window the packet was sent at there).
    fn on_sent(&mut self, now: Time, packet: &SentPacket) -> u64;

    /// A packet was acknowledged.
    fn on_ack(&mut self, now: Time, ack: &AckSample);

    /// A packet was declared lost by the transport.
    fn on_loss(&mut self, now: Time, loss: &LossEvent);

    /// A packet the transport declared lost (the controller heard [`on_loss`](Self::on_loss)
    /// for it) was acknowledged after all: a spurious loss (RFC 9002 section 6), typically a
    /// timeout during an outage of the path that condemned packets which were only queued.
    ///
    /// The contract:
    /// - It comes at most once per packet, after that packet's [`LossEvent`], and never
    ///   together with an [`on_ack`](Self::on_ack) of the same packet.
    /// - The [`AckSample`] is that of an ACK: the packet's `seq`, `bytes`, `sent_at` and
    ///   `memo`, and `rtt` from its send to now (an RTT sample of a packet that waited through
    ///   the outage). `bytes_in_flight` is the flight now, which this ACK does not change (the
    ///   packet left the flight when it was declared lost); `delivered` counts its bytes.
    /// - Only transports that number packets and keep the declared-lost ones' records tell it:
    ///   the simulator and UDP mode ([`crate::sent_packets::SentPackets`]), for 3 RTOs after the
    ///   packet was sent (RFC 9002 section 7.6's span). Kernel and framed modes never do (the
    ///   kernel retransmits; framed mode has no losses of its own).
    /// - The transport's own loss detection is unchanged by it (no RTO sample, no end of the
    ///   back-off).
    ///
    /// The default does nothing, as before this event existed: a controller that counted the
    /// loss keeps it counted, and its RTT estimates are not moved by the outage's samples.
    /// Verus treats it as any ACK (its reference has no transport that declares losses and
    /// re-arms its loss timer on every ACK).
    fn on_late_ack(&mut self, _now: Time, _ack: &AckSample) {}

    /// A report arrived from the receiver-side model; ignored by algorithms without one.
    fn on_report(&mut self, _now: Time, _report: &ReceiverReport) {}

    /// The deadline [`next_timer`](Self::next_timer) asked for has passed.
    fn on_timer(&mut self, _now: Time) {}

    /// When the controller next wants [`on_timer`](Self::on_timer); `None` for no timer.
    fn next_timer(&self) -> Option<Time> {
        None
    }

    /// Until when feedback that arrives now may wait before the controller hears it, with
    /// no decision of its changing: `Some(t)` lets a transport hand it what arrived
    /// meanwhile at `t` (its timer's due time at the latest), before
    /// [`on_timer`](Self::on_timer), each sample as it was measured (the kernel's RTT, in
    /// order) but heard later, with a later `now`. `sends_on_feedback`: whether the
    /// transport would send at once what an ACK allows (its writes stopped at the window or
    /// the pacer; not at a full socket, which sends nothing before it reports room, nor an
    /// empty queue). `None` (the default): each at once.
    fn feedback_can_wait_until(&self, _sends_on_feedback: bool) -> Option<Time> {
        None
    }

    /// The current window and pacing rate.
    fn decision(&self) -> Decision;

    /// The RTT samples it needs ([`RttSamples`]); one per packet unless it says otherwise.
    /// A transport may then measure fewer, so this must only say `NotNeeded` of a controller
    /// whose decisions never depend on an [`AckSample`]'s `rtt` or on when it came.
    fn rtt_samples(&self) -> RttSamples {
        RttSamples::PerPacket
    }

    /// What the sender puts in each packet's header for the receiver-side model.
    fn sender_hint(&self, _now: Time) -> SenderHint {
        SenderHint::default()
    }

    /// A snapshot for telemetry and for applications (a video server picks a bitrate here).
    fn metrics(&self) -> Metrics;

    /// Coupled congestion control ([`crate::fse`], RFC 8699 section 5.3.1): the flow's group
    /// gives the controller a rate to continue from (the group's mean rate,
    /// [`crate::fse::Coupling::apply`]), so that its next calculated rate is a change from the
    /// rate it was given (step 3(a)'s premise).
    ///
    /// The default does nothing: the controller keeps its own state, the transport applies
    /// the flow's share by scaling the controller's decision ([`crate::fse::scale`]), and the group's
    /// aggregate becomes the sum of the flows' independent rates, divided by weight. Copa
    /// sets its window to `rate x RTT` (in packets, at least its minimum) and Reno its
    /// congestion window (at least two segments). CUBIC keeps the default (its window is a
    /// function of the time since its last loss, which a share would displace for one ACK
    /// only), and so do Verus, Sprout, MDI, `fixed` and Python controllers.
    fn adopt_share(&mut self, _now: Time, _share: &Share) {}

    /// Coupled congestion control: whether the controller began draining its own queue since
    /// it was last asked (Copa's drain check, [`crate::copa::drain`]). In a group the queue
    /// the flows see is the group's, so the transport has the other flows of the group drain
    /// with it ([`drain_with_group`](Self::drain_with_group), [`crate::fse::Coupling`]).
    /// The default: never.
    fn take_drain_start(&mut self) -> bool {
        false
    }

    /// Coupled congestion control: another flow of the group began draining (see
    /// [`take_drain_start`](Self::take_drain_start)); drain now too. Copa in its competitive
    /// mode starts its drain check at once; the default does nothing.
    fn drain_with_group(&mut self, _now: Time) {}
}

/// The receiver-side half of an algorithm whose model lives at the receiver (Sprout).
///
/// The transport calls [`on_arrival`](Self::on_arrival) for every data packet,
/// [`on_timer`](Self::on_timer) once [`next_timer`](Self::next_timer) has passed, and after
/// either sends whatever [`take_report`](Self::take_report) returns back to the sender.
pub trait ReceiverModel: Send {
    /// The algorithm's registry name.
    fn name(&self) -> &'static str;

    /// A data packet arrived.
    fn on_arrival(&mut self, now: Time, arrival: &Arrival);

    /// The deadline [`next_timer`](Self::next_timer) asked for has passed.
    fn on_timer(&mut self, now: Time);

    /// When the model next wants [`on_timer`](Self::on_timer).
    fn next_timer(&self) -> Option<Time>;

    /// A report to send to the sender now, if there is a new one.
    fn take_report(&mut self, now: Time) -> Option<ReceiverReport>;
}
