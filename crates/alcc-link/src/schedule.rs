//! Random access to the delivery opportunities of a trace replayed in a loop whose period is
//! its last timestamp (Mahimahi's `LinkQueue`). Parsing and validation are
//! [`alcc_trace::Trace`]'s; this only indexes it.

use alcc_trace::Trace;

use crate::error::LinkError;

/// Bytes one delivery opportunity may carry (Mahimahi's packet size).
pub const OPPORTUNITY_BYTES: u64 = alcc_trace::PACKET_BYTES;

/// The opportunities of a validated trace, indexed across loops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    trace: Trace,
}

impl Schedule {
    /// A schedule from opportunity timestamps in ms, validated like a trace file.
    pub fn new(ms: Vec<u64>) -> Result<Schedule, LinkError> {
        Ok(Schedule { trace: Trace::new("schedule", ms)? })
    }

    /// A constant-rate schedule of `per_ms` opportunities every millisecond (period 1 ms);
    /// `per_ms` = 1 is 12 Mbit/s.
    pub fn constant(per_ms: u64) -> Result<Schedule, LinkError> {
        Schedule::new(vec![1; per_ms as usize])
    }

    /// The trace.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// The loop period, ms.
    pub fn period_ms(&self) -> u64 {
        self.trace.period_ms()
    }

    /// Mean capacity, bits per second: opportunities x 1500 x 8 / period.
    pub fn capacity_bps(&self) -> f64 {
        self.trace.bytes_per_period() as f64 * 8.0 * 1000.0 / self.period_ms() as f64
    }

    /// The millisecond of the `k`-th opportunity counted from the start, loops included.
    pub fn opportunity_ms(&self, k: u64) -> u64 {
        let ms = self.trace.opportunities_ms();
        let n = ms.len() as u64;
        (k / n).saturating_mul(self.period_ms()).saturating_add(ms[(k % n) as usize])
    }
}

impl From<Trace> for Schedule {
    fn from(trace: Trace) -> Self {
        Schedule { trace }
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
        assert!(Schedule::new(vec![]).unwrap_err().to_string().contains("no timestamp"));
        let e = Schedule::new(vec![1, 3, 2]).unwrap_err().to_string();
        assert!(e.contains(":3:"), "{e}");
        assert!(Schedule::new(vec![0, 0]).unwrap_err().to_string().contains("more than 0 ms"));
        assert!(Schedule::constant(0).is_err());
    }
}
