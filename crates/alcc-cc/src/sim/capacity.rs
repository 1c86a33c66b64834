//! The bottleneck's delivery opportunities, as in Mahimahi's link model: at each opportunity up
//! to [`OPPORTUNITY_BYTES`] may leave the queue.

use std::time::Duration;

use crate::time::Time;

/// Bytes one delivery opportunity can carry (Mahimahi's fixed 1500-byte packet).
pub const OPPORTUNITY_BYTES: u64 = 1500;

/// When the link can deliver.
#[derive(Clone, Debug, PartialEq)]
pub enum Capacity {
    /// Evenly spaced opportunities at a constant rate in Mbit/s.
    ConstantMbps(f64),
    /// A Mahimahi packet-delivery trace: millisecond timestamps, non-decreasing, last > 0,
    /// replayed in a loop whose period is the last timestamp.
    Trace(Vec<u64>),
}

impl Capacity {
    /// Mean capacity in Mbit/s.
    pub fn mean_mbps(&self) -> f64 {
        match self {
            Capacity::ConstantMbps(r) => *r,
            Capacity::Trace(ms) => match ms.last() {
                Some(&period) if period > 0 => {
                    ms.len() as f64 * OPPORTUNITY_BYTES as f64 * 8.0 / (period as f64 * 1000.0)
                }
                _ => 0.0,
            },
        }
    }

    /// The opportunities from time zero on, in order, forever (for a valid capacity).
    pub fn opportunities(&self) -> Opportunities<'_> {
        let step_us = match self {
            Capacity::ConstantMbps(r) if *r > 0.0 => OPPORTUNITY_BYTES as f64 * 8.0 / r,
            _ => 0.0,
        };
        Opportunities { capacity: self, index: 0, lap: 0, step_us }
    }
}

/// Iterator over delivery opportunities; see [`Capacity::opportunities`].
#[derive(Clone, Debug)]
pub struct Opportunities<'a> {
    capacity: &'a Capacity,
    index: u64,
    lap: u64,
    step_us: f64,
}

impl Iterator for Opportunities<'_> {
    type Item = Time;

    fn next(&mut self) -> Option<Time> {
        match self.capacity {
            Capacity::ConstantMbps(_) => {
                if self.step_us <= 0.0 {
                    return None;
                }
                let at = (self.index as f64 * self.step_us).round() as u64;
                self.index += 1;
                Some(Time::from_micros(at))
            }
            Capacity::Trace(ms) => {
                let period = *ms.last()?;
                if period == 0 {
                    return None;
                }
                if self.index as usize >= ms.len() {
                    self.index = 0;
                    self.lap += 1;
                }
                let at = ms[self.index as usize] + self.lap * period;
                self.index += 1;
                Some(Time::from_millis(at))
            }
        }
    }
}

/// Counts the opportunities in `[start, start + span)`.
pub fn opportunities_within(capacity: &Capacity, start: Time, span: Duration) -> u64 {
    let end = start + span;
    capacity.opportunities().skip_while(|&t| t < start).take_while(|&t| t < end).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_rate_spacing() {
        let c = Capacity::ConstantMbps(12.0);
        let first: Vec<u64> = c.opportunities().take(3).map(|t| t.as_micros()).collect();
        assert_eq!(first, vec![0, 1000, 2000]);
        assert_eq!(opportunities_within(&c, Time::ZERO, Duration::from_secs(1)), 1000);
    }

    #[test]
    fn trace_loops_with_period_of_last_timestamp() {
        let c = Capacity::Trace(vec![0, 2, 2, 5]);
        let ms: Vec<u64> = c.opportunities().take(9).map(|t| t.as_micros() / 1000).collect();
        assert_eq!(ms, vec![0, 2, 2, 5, 5, 7, 7, 10, 10]);
        assert!((c.mean_mbps() - 4.0 * 12_000.0 / 5_000.0).abs() < 1e-9);
    }

    #[test]
    fn degenerate_capacities_end() {
        assert_eq!(Capacity::Trace(vec![]).opportunities().next(), None);
        assert_eq!(Capacity::Trace(vec![0]).opportunities().next(), None);
        assert_eq!(Capacity::ConstantMbps(0.0).opportunities().next(), None);
    }
}
