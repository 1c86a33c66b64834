//! Sprout's run-time parameters: `sprout:target=100,confidence=5,clock=arrival,report=arrival`.

use std::time::Duration;

use crate::time::Time;

use super::bins::{HORIZON_TICKS, TICK};
use crate::spec::{Params, SpecError};

/// Parameters shared by the sender and the receiver of one Sprout flow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SproutParams {
    /// The delay target in ticks: the sender keeps what it believes is queued within the
    /// forecast delivery of this many ticks (5 ticks = 100 ms in the paper, section 3.5).
    pub target_ticks: usize,
    /// The forecast quantile: the receiver forecasts counts the link exceeds with probability
    /// `1 - quantile` (0.05 in the paper: "95 % confidence", section 3.4).
    pub quantile: f64,
    /// Where the sender starts counting a forecast's elapsed ticks.
    pub forecast_clock: ForecastClock,
    /// When the receiver closes a tick and reports its forecast.
    pub report_clock: ReportClock,
}

/// When the receiver closes a tick (observes it, forecasts) and so when a new forecast can
/// leave for the sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportClock {
    /// At the first packet that arrives after the tick's end, as the reference's receiver does
    /// (the default): it runs its model only when a packet arrives, so a tick that ends while
    /// the link is idle is reported when the next packet arrives, not at its end. Over a
    /// link faster than the model's highest rate the sender's burst drains before the tick
    /// ends, and the next forecast then waits for the next burst's first packet.
    Arrival,
    /// At the tick's end, by a timer, whether or not a packet arrived since (our variant
    /// `sprout:report=tick`): the sender hears of every tick one feedback delay after it ends.
    Tick,
}

impl ReportClock {
    /// The timer the receiver asks for, given the end of its current tick: none when ticks
    /// close only at arrivals.
    pub fn timer(self, tick_end: Option<Time>) -> Option<Time> {
        match self {
            ReportClock::Arrival => None,
            ReportClock::Tick => tick_end,
        }
    }

    /// Whether a closed tick's forecast waits until the packet whose arrival closed the tick is
    /// counted among the bytes received (the reference makes its forecast when it sends it,
    /// after that packet was counted), rather than being made at the close.
    pub fn counts_closing_arrival(self) -> bool {
        match self {
            ReportClock::Arrival => true,
            ReportClock::Tick => false,
        }
    }
}

/// Where the sender starts counting the ticks elapsed since a forecast.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForecastClock {
    /// At the forecast's arrival, as the reference implementation does (the default: `sprout`
    /// is the authors' Sprout). The tick the forecast spent travelling back is then not
    /// credited as delivered, so the queue estimate is one feedback delay too high.
    Arrival,
    /// At the forecast's estimated creation: its arrival minus half the minimum RTT the sender
    /// has measured (the feedback path's delay on a symmetric path). The reference marks this
    /// correction as an open question in a comment; our variant, `sprout:clock=half_rtt`; see
    /// [`super::sender`] for what it changes.
    HalfRtt,
}

impl Default for SproutParams {
    fn default() -> SproutParams {
        SproutParams {
            target_ticks: 5,
            quantile: 0.05,
            forecast_clock: ForecastClock::Arrival,
            report_clock: ReportClock::Arrival,
        }
    }
}

impl SproutParams {
    /// Reads `target=MS` (default 100, a multiple of the 20 ms tick from 20 to 140, so that
    /// the target ahead of the first tick lies within the 8-tick forecast) and
    /// `confidence=PERCENTILE` (default 5, from 0.1 to 50), `clock=arrival|half_rtt`
    /// (default `arrival`, the reference's; see [`ForecastClock`]) and `report=arrival|tick`
    /// (default `arrival`, the reference's; see [`ReportClock`]).
    ///
    /// Both halves of a flow read both parameters, so one spec string configures both.
    pub fn from_params(params: &mut Params) -> Result<SproutParams, SpecError> {
        let tick_ms = TICK.as_millis() as u64;
        let max_ms = tick_ms * (HORIZON_TICKS as u64 - 1);
        let target_ms = params.take_u64("target", 100, tick_ms, max_ms)?;
        if target_ms % tick_ms != 0 {
            return Err(SpecError::BadValue {
                name: params.name().to_string(),
                key: "target".into(),
                value: target_ms.to_string(),
                why: format!("must be a multiple of the {tick_ms} ms tick"),
            });
        }
        let percentile = params.take_f64("confidence", 5.0, 0.1, 50.0)?;
        let forecast_clock = match params.take_choice("clock", "arrival", &["arrival", "half_rtt"])? {
            "half_rtt" => ForecastClock::HalfRtt,
            _ => ForecastClock::Arrival,
        };
        let report_clock = match params.take_choice("report", "arrival", &["arrival", "tick"])? {
            "tick" => ReportClock::Tick,
            _ => ReportClock::Arrival,
        };
        Ok(SproutParams {
            target_ticks: (target_ms / tick_ms) as usize,
            quantile: percentile / 100.0,
            forecast_clock,
            report_clock,
        })
    }

    /// The delay target as a duration.
    pub fn target(&self) -> Duration {
        TICK * self.target_ticks as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_defaults_and_values() {
        let mut p = Params::parse("sprout").unwrap();
        assert_eq!(SproutParams::from_params(&mut p).unwrap(), SproutParams::default());
        let mut p = Params::parse("sprout:target=60,confidence=25,clock=half_rtt,report=tick").unwrap();
        let s = SproutParams::from_params(&mut p).unwrap();
        assert_eq!(s.target_ticks, 3);
        assert_eq!(s.target(), Duration::from_millis(60));
        assert!((s.quantile - 0.25).abs() < 1e-12);
        assert_eq!(s.forecast_clock, ForecastClock::HalfRtt);
        assert_eq!(s.report_clock, ReportClock::Tick);
        assert_eq!(SproutParams::default().report_clock, ReportClock::Arrival, "the reference's");
        assert_eq!(SproutParams::default().forecast_clock, ForecastClock::Arrival, "the reference's");
        p.finish().unwrap();
        for bad in [
            "sprout:target=50",
            "sprout:target=0",
            "sprout:target=160",
            "sprout:confidence=60",
            "sprout:clock=utc",
            "sprout:report=never",
        ] {
            let mut p = Params::parse(bad).unwrap();
            assert!(matches!(SproutParams::from_params(&mut p), Err(SpecError::BadValue { .. })), "{bad}");
        }
    }
}
