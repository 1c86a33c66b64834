//! Sprout's model of the link, one tick at a time: the part both halves of Sprout that run a
//! model share (the receiver, [`super::SproutReceiver`], and the sender that infers deliveries
//! from acknowledgements, [`super::SproutAck`]).
//!
//! Each tick (Winstein et al., NSDI 2013, sections 3.1 to 3.4) the rate belief evolves by one
//! Brownian step, observes the tick's delivered packets (unless the tick says nothing about
//! the link, see [`TickObservation`]), and the forecast of cumulative deliveries over the next
//! ticks is recomputed. [`Ticker`] keeps the 20 ms tick boundaries, with a bounded catch-up
//! after a long silence.

use std::time::Duration;

use super::belief::RateBelief;
use super::bins::{HORIZON_TICKS, TICK};
use super::forecaster::ForecastTables;
use super::params::SproutParams;
use crate::time::Time;

/// After a silence longer than this many ticks, the model catches up this many ticks and then
/// jumps to the present (a sleeping flow must not spin through hours of ticks). 250 ticks (5 s)
/// take an uninformed belief to its long-run shape anyway.
pub const MAX_CATCH_UP_TICKS: u64 = 250;

/// What one tick showed of the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TickObservation {
    /// The link delivered this many packets during the tick.
    Delivered(u32),
    /// The tick says nothing about the link (the sender was idle): the belief only evolves.
    Unobserved,
}

impl TickObservation {
    /// The observation of `bytes` delivered in a tick: `bytes / packet_bytes` rounded, and at
    /// least 1 when anything arrived (section 3.3; the reference counts whole packets).
    pub fn of_bytes(bytes: u64, packet_bytes: u64) -> TickObservation {
        if bytes == 0 {
            return TickObservation::Delivered(0);
        }
        let packet_bytes = packet_bytes.max(1);
        let rounded = (bytes + packet_bytes / 2) / packet_bytes;
        TickObservation::Delivered(u32::try_from(rounded.max(1)).unwrap_or(u32::MAX))
    }
}

/// The rate belief and its forecast, advanced one tick at a time.
#[derive(Debug)]
pub struct LinkModel {
    quantile: f64,
    tables: &'static ForecastTables,
    belief: RateBelief,
    counts: [u32; HORIZON_TICKS],
    ticks: u64,
}

impl LinkModel {
    /// An uninformed model forecasting the `params.quantile` of deliveries.
    pub fn new(params: &SproutParams) -> LinkModel {
        LinkModel {
            quantile: params.quantile,
            tables: ForecastTables::get(),
            belief: RateBelief::uniform(),
            counts: [0; HORIZON_TICKS],
            ticks: 0,
        }
    }

    /// Runs one tick and returns the new forecast: cumulative packets deliverable by the end of
    /// each of the next [`HORIZON_TICKS`] ticks.
    pub fn tick(&mut self, observation: TickObservation) -> [u32; HORIZON_TICKS] {
        self.belief.evolve();
        if let TickObservation::Delivered(count) = observation {
            self.belief.observe(count);
        }
        self.counts = self.tables.forecast(&self.belief, self.quantile);
        self.ticks += 1;
        self.counts
    }

    /// The current belief about the link rate.
    pub fn belief(&self) -> &RateBelief {
        &self.belief
    }

    /// The latest forecast.
    pub fn counts(&self) -> [u32; HORIZON_TICKS] {
        self.counts
    }

    /// Ticks run so far.
    pub fn ticks(&self) -> u64 {
        self.ticks
    }
}

/// The boundaries of the model's ticks: they start at a first event and follow every
/// [`TICK`] after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ticker {
    end: Option<Time>,
}

impl Ticker {
    /// Starts the first tick at `now`, unless ticks already run.
    pub fn start(&mut self, now: Time) {
        self.end.get_or_insert(now + TICK);
    }

    /// The end of the current tick; `None` before [`start`](Self::start).
    pub fn end(&self) -> Option<Time> {
        self.end
    }

    /// Closes every tick that ended at or before `now`, calling `close` with each tick's end
    /// in order. After [`MAX_CATCH_UP_TICKS`] closed in one call, the rest are skipped (the
    /// tick phase is kept).
    pub fn advance(&mut self, now: Time, mut close: impl FnMut(Time)) {
        let Some(mut end) = self.end else { return };
        let mut run = 0;
        while end <= now {
            if run == MAX_CATCH_UP_TICKS {
                let tick_us = TICK.as_micros() as u64;
                let behind = (now.as_micros() - end.as_micros()) / tick_us;
                end += Duration::from_micros(behind * tick_us);
                if end <= now {
                    end += TICK;
                }
                break;
            }
            close(end);
            end += TICK;
            run += 1;
        }
        self.end = Some(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_of_bytes_round_and_count_any_arrival() {
        assert_eq!(TickObservation::of_bytes(0, 1500), TickObservation::Delivered(0));
        assert_eq!(TickObservation::of_bytes(1, 1500), TickObservation::Delivered(1));
        assert_eq!(TickObservation::of_bytes(2249, 1500), TickObservation::Delivered(1));
        assert_eq!(TickObservation::of_bytes(2250, 1500), TickObservation::Delivered(2));
    }

    #[test]
    fn unobserved_ticks_only_spread_the_belief() {
        let params = SproutParams::default();
        let mut seen = LinkModel::new(&params);
        let mut blind = LinkModel::new(&params);
        for _ in 0..100 {
            seen.tick(TickObservation::Delivered(10));
            blind.tick(TickObservation::Delivered(10));
        }
        for _ in 0..5 {
            seen.tick(TickObservation::Delivered(0));
            blind.tick(TickObservation::Unobserved);
        }
        assert!(seen.belief().mean() < blind.belief().mean() - 50.0);
        assert!((blind.belief().mean() - 500.0).abs() < 20.0, "{}", blind.belief().mean());
        assert_eq!(blind.ticks(), 105);
    }

    #[test]
    fn ticker_closes_due_ticks_and_bounds_catch_up() {
        let mut t = Ticker::default();
        let mut closed: Vec<u64> = Vec::new();
        t.advance(Time::from_millis(100), |e| closed.push(e.as_micros()));
        assert!(closed.is_empty(), "not started");
        t.start(Time::from_millis(5));
        t.start(Time::from_millis(6));
        assert_eq!(t.end(), Some(Time::from_millis(25)));
        t.advance(Time::from_millis(65), |e| closed.push(e.as_micros() / 1000));
        assert_eq!(closed, vec![25, 45, 65]);
        assert_eq!(t.end(), Some(Time::from_millis(85)));
        let mut n = 0;
        t.advance(Time::from_millis(3_600_000), |_| n += 1);
        assert_eq!(n, MAX_CATCH_UP_TICKS);
        let next = t.end().unwrap();
        assert!(next > Time::from_millis(3_600_000) && next <= Time::from_millis(3_600_020), "{next}");
        assert_eq!(next.as_micros() % 20_000, 5_000, "tick phase kept");
    }
}
