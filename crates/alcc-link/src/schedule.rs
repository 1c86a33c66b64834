//! A validated delivery-opportunity schedule: the millisecond timestamps of a Mahimahi trace,
//! replayed in a loop whose period is the last timestamp (Mahimahi's `LinkQueue`).

use crate::error::LinkError;

/// Bytes one delivery opportunity may carry (Mahimahi's packet size).
pub const OPPORTUNITY_BYTES: u64 = 1500;

/// Opportunity times of a trace, validated: non-empty, non-decreasing, last timestamp > 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    ms: Vec<u64>,
    period_ms: u64,
}

impl Schedule {
    /// Validates a list of opportunity timestamps in milliseconds.
    pub fn new(ms: Vec<u64>) -> Result<Schedule, LinkError> {
        let Some(&last) = ms.last() else {
            return Err(LinkError::Trace("the trace has no delivery opportunity".to_string()));
        };
        if let Some(i) = ms.windows(2).position(|w| w[1] < w[0]) {
            return Err(LinkError::Trace(format!(
                "timestamps must not decrease: line {} ({}) comes after {}",
                i + 2,
                ms[i + 1],
                ms[i]
            )));
        }
        if last == 0 {
            return Err(LinkError::Trace(
                "the last timestamp is 0, so the trace has no duration".to_string(),
            ));
        }
        if last > u64::MAX / 1_000_000 {
            return Err(LinkError::Trace(format!("timestamp {last} ms is too large")));
        }
        Ok(Schedule { ms, period_ms: last })
    }

    /// A constant-rate schedule of `per_ms` opportunities every millisecond (period 1 ms);
    /// `per_ms` = 1 is 12 Mbit/s.
    pub fn constant(per_ms: u64) -> Result<Schedule, LinkError> {
        if per_ms == 0 {
            return Err(LinkError::Trace(
                "a constant link needs at least one opportunity per ms".to_string(),
            ));
        }
        Schedule::new(vec![1; per_ms as usize])
    }

    /// The loop period, ms.
    pub fn period_ms(&self) -> u64 {
        self.period_ms
    }

    /// Opportunities per period.
    pub fn len(&self) -> usize {
        self.ms.len()
    }

    /// Always false: a schedule has at least one opportunity.
    pub fn is_empty(&self) -> bool {
        self.ms.is_empty()
    }

    /// Mean capacity, bits per second: opportunities x 1500 x 8 / period.
    pub fn capacity_bps(&self) -> f64 {
        self.ms.len() as f64 * OPPORTUNITY_BYTES as f64 * 8.0 * 1000.0 / self.period_ms as f64
    }

    /// The millisecond of the `k`-th opportunity counted from the start, loops included.
    pub fn opportunity_ms(&self, k: u64) -> u64 {
        let n = self.ms.len() as u64;
        (k / n) * self.period_ms + self.ms[(k % n) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_with_the_last_timestamp_as_period() {
        let s = Schedule::new(vec![0, 2, 2, 5]).unwrap();
        let got: Vec<u64> = (0..9).map(|k| s.opportunity_ms(k)).collect();
        assert_eq!(got, vec![0, 2, 2, 5, 5, 7, 7, 10, 10]);
        assert_eq!(s.period_ms(), 5);
    }

    #[test]
    fn constant_rate_capacity() {
        assert_eq!(Schedule::constant(1).unwrap().capacity_bps(), 12e6);
        assert_eq!(Schedule::new(vec![1, 1, 2, 3]).unwrap().capacity_bps(), 16e6);
    }

    #[test]
    fn malformed_traces_are_named() {
        assert!(Schedule::new(vec![]).unwrap_err().to_string().contains("no delivery opportunity"));
        let e = Schedule::new(vec![1, 3, 2]).unwrap_err().to_string();
        assert!(e.contains("line 3 (2) comes after 3"), "{e}");
        assert!(Schedule::new(vec![0, 0]).unwrap_err().to_string().contains("no duration"));
        assert!(Schedule::constant(0).is_err());
    }
}
