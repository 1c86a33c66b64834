//! MDI's 5 ms epochs and the delay it observes in each: the largest RTT acknowledged in the
//! epoch (Verus's `Dmax`, Zaki et al., SIGCOMM 2015, section 4). An epoch without an ACK
//! observes `max(previous Dmax, time since the last ACK)`, Verus's rule 2: silence is delay.
//! An epoch before the first ACK of the flow observes nothing.
//!
//! The controller ([`Mdi`](super::Mdi)) and the trainer ([`train`](super::train)) share this
//! code, so a model learns from exactly what the controller will see.

use std::time::Duration;

use crate::time::Time;

/// The length of one epoch (MDI's, as Verus's).
pub const EPOCH: Duration = Duration::from_millis(5);

/// The delay observed epoch by epoch, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DelayEpochs {
    epoch_max_ms: Option<f64>,
    last_dmax_ms: Option<f64>,
    last_ack: Option<Time>,
}

impl DelayEpochs {
    /// Nothing observed yet.
    pub fn new() -> DelayEpochs {
        DelayEpochs::default()
    }

    /// An RTT sample arrived at `now`.
    pub fn on_rtt(&mut self, now: Time, rtt: Duration) {
        let ms = rtt.as_secs_f64() * 1e3;
        self.epoch_max_ms = Some(self.epoch_max_ms.map_or(ms, |m| m.max(ms)));
        self.last_ack = Some(now);
    }

    /// Closes the epoch ending at `end`: its `Dmax` in ms, or `None` before the first ACK.
    pub fn close(&mut self, end: Time) -> Option<f64> {
        let dmax = match (self.epoch_max_ms.take(), self.last_ack) {
            (Some(max), _) => max,
            (None, Some(last)) => {
                let silence = end.saturating_since(last).as_secs_f64() * 1e3;
                self.last_dmax_ms.unwrap_or(0.0).max(silence)
            }
            (None, None) => return None,
        };
        self.last_dmax_ms = Some(dmax);
        Some(dmax)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_rtt_of_the_epoch_then_silence() {
        let mut e = DelayEpochs::new();
        assert_eq!(e.close(Time::from_millis(5)), None);
        e.on_rtt(Time::from_millis(6), Duration::from_millis(40));
        e.on_rtt(Time::from_millis(7), Duration::from_micros(45_500));
        e.on_rtt(Time::from_millis(8), Duration::from_millis(42));
        assert_eq!(e.close(Time::from_millis(10)), Some(45.5));
        // No ACK in (10, 15]: 7 ms since the last ACK is less than 45.5.
        assert_eq!(e.close(Time::from_millis(15)), Some(45.5));
        // Later, the silence itself is the larger.
        assert_eq!(e.close(Time::from_millis(60)), Some(52.0));
        e.on_rtt(Time::from_millis(61), Duration::from_millis(30));
        assert_eq!(e.close(Time::from_millis(65)), Some(30.0));
    }
}
