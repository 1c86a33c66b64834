//! Copa's reaction to heavy loss (genericCC "markovian" sender; the paper leaves loss to
//! the competitive mode). Every 2 RTT, if more than 20 packets were acknowledged or lost
//! in that period and more than 30 % of them were lost, the window is multiplied by 0.7.

use std::time::Duration;

use crate::time::Time;

/// Length of one counting period, in smoothed RTTs.
pub const PERIOD_RTTS: u32 = 2;
/// A period must count more than this many packets for the rule to apply.
pub const MIN_PACKETS: u64 = 20;
/// The rule applies when more than this fraction of the counted packets was lost.
pub const LOSS_FRACTION: f64 = 0.3;
/// The window is multiplied by this when the rule applies.
pub const DECREASE: f64 = 0.7;

/// Packet counts of the current period.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LossRule {
    acked: u64,
    lost: u64,
    period_start: Option<Time>,
}

impl Default for LossRule {
    fn default() -> LossRule {
        LossRule::new()
    }
}

impl LossRule {
    /// Nothing counted; the first period starts at the first event.
    pub fn new() -> LossRule {
        LossRule { acked: 0, lost: 0, period_start: None }
    }

    /// Counts `packets` acknowledged packets.
    pub fn on_ack(&mut self, now: Time, packets: u64) {
        self.period_start.get_or_insert(now);
        self.acked = self.acked.saturating_add(packets);
    }

    /// Counts `packets` lost packets.
    pub fn on_loss(&mut self, now: Time, packets: u64) {
        self.period_start.get_or_insert(now);
        self.lost = self.lost.saturating_add(packets);
    }

    /// Closes the period if it has lasted 2 x `srtt`; returns whether the window must shrink.
    pub fn end_of_period(&mut self, now: Time, srtt: Duration) -> bool {
        let Some(start) = self.period_start else {
            return false;
        };
        if now < start + srtt.saturating_mul(PERIOD_RTTS) {
            return false;
        }
        let total = self.acked.saturating_add(self.lost);
        let heavy = total > MIN_PACKETS && self.lost as f64 > LOSS_FRACTION * total as f64;
        *self = LossRule { acked: 0, lost: 0, period_start: Some(now) };
        heavy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRTT: Duration = Duration::from_millis(50);

    fn at(ms: u64) -> Time {
        Time::from_millis(ms)
    }

    #[test]
    fn fires_on_heavy_loss_once_per_period() {
        let mut r = LossRule::new();
        r.on_ack(at(0), 14);
        r.on_loss(at(10), 7); // 7 of 21 = 33 %
        assert!(!r.end_of_period(at(99), SRTT), "period not over yet");
        assert!(r.end_of_period(at(100), SRTT));
        // A new period starts empty.
        assert!(!r.end_of_period(at(200), SRTT));
    }

    #[test]
    fn needs_more_than_twenty_packets_and_thirty_percent() {
        let mut r = LossRule::new();
        r.on_ack(at(0), 13);
        r.on_loss(at(0), 7); // 20 packets: not more than 20
        assert!(!r.end_of_period(at(100), SRTT));
        r.on_ack(at(100), 70);
        r.on_loss(at(100), 30); // exactly 30 %: not more
        assert!(!r.end_of_period(at(200), SRTT));
        r.on_ack(at(200), 69);
        r.on_loss(at(200), 31);
        assert!(r.end_of_period(at(300), SRTT));
    }
}
