//! Sprout (Winstein, Sivaraman and Balakrishnan, "Stochastic Forecasts Achieve High Throughput
//! and Low Delay over Cellular Networks", NSDI 2013).
//!
//! Sprout's model lives at the receiver. Every 20 ms tick the receiver updates a Bayesian
//! belief about the link's delivery rate λ (section 3.1 to 3.3 of the paper) and forecasts, with
//! 95 % confidence, how many packets the link will deliver over each of the next 8 ticks
//! (section 3.4). The forecast travels back to the sender, which keeps the packets it believes
//! are queued in the network within what the link will deliver in the next 100 ms (section 3.5).
//!
//! | module | what it is |
//! | --- | --- |
//! | [`bins`] | the 256 rate bins on [0, 1000] packets/s and the model's constants |
//! | [`kernel`] | the one-tick Brownian-motion transition of the rate, with the outage bin |
//! | [`belief`] | the receiver's posterior over the rate: evolve and observe |
//! | [`forecaster`] | per-rate delivery tables and the 5th-percentile cumulative forecast |
//! | [`params`] | the run-time parameters (`target`, `confidence`, `clock`, `report`) |
//! | [`model`] | [`LinkModel`]: one tick of the belief and the forecast, shared by both models; the tick clock |
//! | [`receiver_model`] | [`SproutReceiver`], the receiver-side model: counts arrivals per tick, runs the model, emits reports |
//! | [`sender`] | [`SproutSender`]: the queue estimate and the window from a forecast |
//! | [`ack_inference`] | [`DeliveryInference`]: the sender's per-tick delivery counts from its acknowledgements |
//! | [`ack_sender`] | [`SproutAck`] (`sprout-ack`): the model run at the sender from acknowledgements, no receiver change |
//!
//! Differences from the reference implementation are decisions, documented where they are
//! made; the main ones: one packet size ([`Config::mss`](crate::Config::mss)) is used for every
//! byte/packet conversion (the reference mixes 1400- and 1440-byte units), and the sender's
//! queue estimate subtracts the forecast's delivery for each elapsed tick once (the reference
//! subtracts a cumulative count per tick). The sender looks ahead and counts a forecast's ticks
//! from its arrival as the reference does; counting them from its estimated creation is our
//! variant `sprout:clock=half_rtt` ([`ForecastClock`]). The receiver closes a tick, and reports
//! it, at the first packet that arrives after the tick's end, as the reference's receiver does;
//! closing it at its end by a timer is our variant `sprout:report=tick` ([`ReportClock`]).
//!
//! How fast forecasts come back decides how much the sender sends (see [`sender`]): compare
//! Sprouts only over the same feedback path. The authors' `sproutbt2` loads its uplink with a
//! reverse bulk flow that delays its own forecasts; with an idle uplink under both, ours and
//! theirs deliver the same (bench/reference-results.md). On links faster than the model's
//! highest rate (1000 packets/s, about 11.5 Mbit/s on the wire) the sender keeps about 5 ticks
//! of that rate in the network, the link drains it between refills, and how often refills come
//! sets the throughput. `sproutbt2`'s forecasts leave on its reverse flow's packets (the first
//! packet of a reverse flight, which starts when a forward forecast arrives), and its main
//! refills come 21-23 ms apart (at 10 ms one way, one round trip after the previous burst's
//! first packet), ours every 20 ms tick: with an idle uplink ours delivered 5-11 % more on
//! Verizon-LTE-driving-60s and TMobile-LTE-short at 10 ms one way, 1-3 % at 5 and 20 ms
//! (bench/reference-results.md, "Sprout on links faster than its model").

pub mod ack_inference;
pub mod ack_sender;
pub mod belief;
pub mod bins;
pub mod forecaster;
pub mod kernel;
pub mod model;
pub mod params;
pub mod receiver_model;
pub mod sender;

pub use ack_inference::DeliveryInference;
pub use ack_sender::SproutAck;
pub use belief::RateBelief;
pub use forecaster::ForecastTables;
pub use model::{LinkModel, TickObservation};
pub use params::{ForecastClock, ReportClock, SproutParams};
pub use receiver_model::SproutReceiver;
pub use sender::SproutSender;
