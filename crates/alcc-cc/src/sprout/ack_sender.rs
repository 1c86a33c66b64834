//! [`SproutAck`]: Sprout run entirely at the sender, from the timing of its acknowledgements.
//!
//! Sprout's model lives at the receiver (Winstein et al., NSDI 2013, section 3), which is why
//! it needs a client change. Here the sender runs the same model itself:
//! [`DeliveryInference`] turns the acknowledgements of each 20 ms tick of the sender's clock
//! into the tick's delivered-packet count; [`LinkModel`] (the one Sprout's receiver runs)
//! evolves and conditions the rate belief and forecasts; and each tick's forecast goes, as a
//! [`Forecast`] exactly like the one a receiver sends, to [`SproutSender`], which sets the
//! window as Sprout's sender does (section 3.5). Nothing is added on the wire and the client
//! is any TCP receiver, so this runs in the engine's kernel mode.
//!
//! The forecast of the tick closed at `t` is handed over at `t`; it describes the link as the
//! receiver saw it one return delay earlier, which is what a receiver's forecast arriving at
//! `t` describes too. So the sender's forecast clock (`clock=`) means the same thing for both.
//!
//! Differences from receiver-side Sprout, all consequences of seeing the link through the
//! return path (see [`super::ack_inference`] for the assumptions):
//! - Delayed and stretched acknowledgements shift counts between neighbouring ticks.
//! - A return path that holds acknowledgements (a cellular uplink's gaps) looks like an outage
//!   of the forward link followed by a burst. The sender then closes its window during the
//!   gap, as receiver-side Sprout does when its forecasts are held in the same gap, and after
//!   the gap the burst of counts raises the belief above the truth for a few ticks.
//! - Packets given up by a retransmission timeout are no news when their acknowledgements
//!   come after all (the transport forgets them); a receiver counts them when they arrive.
//!
//! In the simulator (`crates/alcc-cc/tests/sprout_ack.rs`: 10 ms, 2 MB, 30 s; every packet
//! acknowledged, delayed ACKs, stretch ACKs of 8, the trace's own uplink, 1 % ACK loss) its
//! throughput is 0.96 to 1.01 of receiver-side Sprout's and its p95 delay 0.95 to 1.03 on
//! the synthetic trace, CampusWalk and ATT's LTE link, where the inferred per-tick counts
//! are off by up to 6 packets of 7 (ATT's uplink; the 0.96 is that case).
//! - There is no "time to next" hint; the sender knows when it was idle.
//!
//! When not to use it: when the return path is itself a congested or bursty link (an uplink
//! shared with an upload, ATT's LTE uplink), the inferred process is the return path's as much
//! as the forward one's; on links faster than 12 Mbit/s with longer round trips (Sprout's model
//! tops out at 1000 packets/s and the window is its forecast minus what the sender believes is
//! still in the network: the 21 Mbit/s Verizon LTE downlink in the simulator is 0.93 used at
//! 10 ms one-way, 0.72 at 20 ms, 0.39 at 40 ms, as with receiver-side Sprout); and whenever
//! receiver-side Sprout is possible (framed or UDP mode), which sees the true arrivals.

use super::ack_inference::{DeliveryInference, InferredTick};
use super::bins::TICK;
use super::model::{LinkModel, Ticker};
use super::params::SproutParams;
use super::sender::SproutSender;
use crate::controller::{Config, Controller};
use crate::event::{AckSample, Decision, Forecast, LossEvent, ReceiverReport, SenderHint, SentPacket};
use crate::metrics::Metrics;
use crate::time::Time;

/// Sender-only Sprout: a [`Controller`] that forecasts from its own acknowledgements.
#[derive(Debug)]
pub struct SproutAck {
    packet_bytes: u64,
    inference: DeliveryInference,
    model: LinkModel,
    ticker: Ticker,
    sender: SproutSender,
    last_tick: Option<InferredTick>,
}

impl SproutAck {
    /// A sender with packets of `config.mss` bytes.
    pub fn new(params: SproutParams, config: &Config) -> SproutAck {
        SproutAck {
            packet_bytes: config.mss.max(1),
            inference: DeliveryInference::new(config.mss),
            model: LinkModel::new(&params),
            ticker: Ticker::default(),
            sender: SproutSender::new(params, config),
            last_tick: None,
        }
    }

    /// The model's belief and forecast.
    pub fn model(&self) -> &LinkModel {
        &self.model
    }

    /// The last tick the model ran on, as the inference saw it.
    pub fn last_tick(&self) -> Option<InferredTick> {
        self.last_tick
    }

    /// The window rule's state (queue estimate, allowance).
    pub fn window_rule(&self) -> &SproutSender {
        &self.sender
    }

    /// Runs every tick that ended by `upto`, handing each forecast to the window rule at `now`
    /// (`upto` <= `now`; the window rule sees time only move forward).
    fn advance(&mut self, upto: Time, now: Time) {
        let mut ticker = self.ticker;
        ticker.advance(upto, |end| {
            let min_rtt = self.sender.min_rtt();
            let tick = self.inference.close_tick(end, min_rtt);
            let counts = self.model.tick(tick.observation);
            let forecast = Forecast {
                received_or_lost_bytes: self.inference.credited(end, min_rtt),
                receiver_time: end,
                tick: TICK,
                counts: counts.to_vec(),
                packet_bytes: u32::try_from(self.packet_bytes).unwrap_or(u32::MAX),
            };
            self.sender.on_report(now, &ReceiverReport::Forecast(forecast));
            self.last_tick = Some(tick);
        });
        self.ticker = ticker;
    }
}

impl Controller for SproutAck {
    fn name(&self) -> &'static str {
        "sprout-ack"
    }

    fn on_sent(&mut self, now: Time, packet: &SentPacket) -> u64 {
        self.advance(now, now);
        self.inference.on_sent(now, packet);
        self.sender.on_sent(now, packet)
    }

    fn on_ack(&mut self, now: Time, ack: &AckSample) {
        // The ACK counts in the tick in which it reached the sender (its send time plus its RTT:
        // in kernel mode the kernel's ACK timestamp), not the tick in which the transport got
        // round to it: a sender whose thread was descheduled for 50 ms would otherwise see its
        // ACKs bunched into silence and a burst, which Sprout's model takes for an outage.
        let acked_at = (ack.sent_at + ack.rtt).min(now);
        self.advance(acked_at, now);
        // Ticks begin with the first acknowledgement: before it there is nothing to count.
        self.ticker.start(acked_at);
        self.inference.on_ack(ack);
        self.sender.on_ack(now, ack);
    }

    fn on_loss(&mut self, now: Time, loss: &LossEvent) {
        self.advance(now, now);
        self.inference.on_loss(loss);
        self.sender.on_loss(now, loss);
    }

    fn on_timer(&mut self, now: Time) {
        self.advance(now, now);
        self.sender.on_timer(now);
    }

    fn next_timer(&self) -> Option<Time> {
        match (self.ticker.end(), self.sender.next_timer()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn decision(&self) -> Decision {
        self.sender.decision()
    }

    fn sender_hint(&self, now: Time) -> SenderHint {
        self.sender.sender_hint(now)
    }

    fn metrics(&self) -> Metrics {
        let mut m = self.sender.metrics();
        let observed = match self.last_tick.map(|t| t.observation) {
            Some(super::model::TickObservation::Delivered(k)) => f64::from(k),
            _ => f64::NAN,
        };
        m.extra.push(("observed_packets", observed));
        m.extra.push(("rate_mean_pps", self.model.belief().mean()));
        m
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::sprout::model::TickObservation;

    const MSS: u64 = 1500;

    /// A sender called every `batch_ms` (its thread busy in between) on a link that delivers a
    /// packet every 2 ms (500 packets/s, 10 per tick) with 20 ms of propagation each way: at
    /// each call it takes the ACKs that came back since, fires its timer, and sends the packets
    /// of the interval at once (the link's queue spaces them out again). 2 s.
    fn paced_link(batch_ms: u64) -> SproutAck {
        let config = Config { mss: MSS, seed: 0 };
        let mut s = SproutAck::new(SproutParams::default(), &config);
        let mut sent: std::collections::VecDeque<(u64, Time, Time)> = Default::default();
        let (mut seq, mut in_flight, mut delivered) = (0, 0, 0);
        let mut link_free = Time::ZERO;
        for ms in (0..2_000u64).step_by(batch_ms as usize) {
            let now = Time::from_millis(ms);
            while sent.front().is_some_and(|&(_, _, acked_at)| acked_at <= now) {
                let (seq, sent_at, acked_at) = sent.pop_front().unwrap();
                in_flight -= MSS;
                delivered += MSS;
                let rtt = acked_at.saturating_since(sent_at);
                let ack = AckSample {
                    seq,
                    bytes: MSS,
                    sent_at,
                    rtt,
                    bytes_in_flight: in_flight,
                    delivered,
                    memo: 0,
                };
                s.on_ack(now, &ack);
            }
            if s.next_timer().is_some_and(|t| t <= now) {
                s.on_timer(now);
            }
            for _ in 0..batch_ms / 2 {
                in_flight += MSS;
                s.on_sent(now, &SentPacket { seq, bytes: MSS, bytes_in_flight: in_flight });
                let departs = (link_free + Duration::from_millis(2)).max(now + Duration::from_millis(20));
                link_free = departs;
                sent.push_back((seq, now, departs + Duration::from_millis(20)));
                seq += 1;
            }
        }
        s
    }

    #[test]
    fn steady_acknowledgements_give_the_receivers_forecast() {
        // Called every millisecond: the model sees what a receiver would and forecasts the
        // same counts as Sprout's receiver at 500 packets/s.
        let s = paced_link(2);
        assert_eq!(s.last_tick().unwrap().observation, TickObservation::Delivered(10));
        assert!((s.model().belief().mean() - 500.0).abs() < 15.0, "{}", s.model().belief().mean());
        assert!((30..=38).contains(&s.model().counts()[4]), "{:?}", s.model().counts());
        assert_eq!(s.name(), "sprout-ack");
    }

    #[test]
    fn late_processing_does_not_bunch_the_ticks() {
        // Called every 60 ms: each ACK still counts in the tick in which it came back (not three
        // ticks' worth in one and none in two), so the forecast is the same as above.
        let s = paced_link(60);
        assert!((s.model().belief().mean() - 500.0).abs() < 15.0, "{}", s.model().belief().mean());
        assert!(s.model().belief().outage_probability() < 1e-6);
        assert!((30..=38).contains(&s.model().counts()[4]), "{:?}", s.model().counts());
    }
}
