//! HyStart++ (RFC 9406): leave slow start when the RTT starts to grow, before the first loss.
//!
//! Rounds are delimited by sequence numbers: a round ends when a packet sent after the round
//! started is acknowledged (section 4.2, `windowEnd`). In each round the minimum of the first
//! [`N_RTT_SAMPLE`] RTT samples is compared with the previous round's; a rise of
//! `clamp(lastRoundMinRTT / 8, 4 ms, 16 ms)` moves slow start into Conservative Slow Start
//! (CSS), which grows `CSS_GROWTH_DIVISOR` times slower and, after [`CSS_ROUNDS`] rounds, ends
//! slow start. An RTT back below the CSS baseline returns to standard slow start.

use std::time::Duration;

/// RFC 9406 section 4.3: lower clamp of the RTT-increase threshold.
pub const MIN_RTT_THRESH: Duration = Duration::from_millis(4);
/// RFC 9406 section 4.3: upper clamp of the RTT-increase threshold.
pub const MAX_RTT_THRESH: Duration = Duration::from_millis(16);
/// RFC 9406 section 4.3: the threshold is lastRoundMinRTT divided by this.
pub const MIN_RTT_DIVISOR: u32 = 8;
/// RFC 9406 section 4.3: RTT samples per round before the test applies.
pub const N_RTT_SAMPLE: u32 = 8;
/// RFC 9406 section 4.3: CSS grows this many times slower than slow start.
pub const CSS_GROWTH_DIVISOR: u64 = 4;
/// RFC 9406 section 4.3: rounds of CSS before slow start ends.
pub const CSS_ROUNDS: u32 = 5;

/// What slow start should do with one ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Growth {
    /// Grow by the bytes acknowledged divided by this (1 in standard slow start, 4 in CSS).
    Divided(u64),
    /// Slow start is over: set `ssthresh` to the current window.
    Exit,
}

/// HyStart++'s per-flow state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HyStart {
    highest_sent: u64,
    window_end: Option<u64>,
    last_round_min: Option<Duration>,
    current_round_min: Option<Duration>,
    samples: u32,
    css_baseline: Option<Duration>,
    css_rounds: u32,
}

impl HyStart {
    /// Standard slow start, no round yet.
    pub fn new() -> HyStart {
        HyStart::default()
    }

    /// Whether HyStart++ is in Conservative Slow Start.
    pub fn in_css(&self) -> bool {
        self.css_baseline.is_some()
    }

    /// A packet `seq` was sent.
    pub fn on_sent(&mut self, seq: u64) {
        self.highest_sent = self.highest_sent.max(seq);
    }

    /// The packet `seq` was acknowledged with RTT sample `rtt`, in slow start.
    pub fn on_ack(&mut self, seq: u64, rtt: Duration) -> Growth {
        if self.window_end.is_none_or(|end| seq >= end) {
            // Section 4.2: a new round.
            self.window_end = Some(self.highest_sent.saturating_add(1));
            self.last_round_min = self.current_round_min.take();
            self.samples = 0;
            if self.css_baseline.is_some() {
                self.css_rounds += 1;
                if self.css_rounds >= CSS_ROUNDS {
                    return Growth::Exit;
                }
            }
        }
        self.current_round_min = Some(self.current_round_min.map_or(rtt, |m| m.min(rtt)));
        self.samples = self.samples.saturating_add(1);
        if self.samples >= N_RTT_SAMPLE {
            if let (Some(current), Some(baseline)) = (self.current_round_min, self.css_baseline) {
                if current < baseline {
                    // Section 4.2: the RTT increase was spurious; back to standard slow start.
                    self.css_baseline = None;
                    self.css_rounds = 0;
                }
            } else if let (Some(current), Some(last)) = (self.current_round_min, self.last_round_min) {
                let thresh = (last / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH);
                if current >= last + thresh {
                    self.css_baseline = Some(current);
                    self.css_rounds = 0;
                }
            }
        }
        Growth::Divided(if self.in_css() { CSS_GROWTH_DIVISOR } else { 1 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// Sends `n` packets from `first` and acknowledges them all with `rtt`; returns the
    /// outcomes.
    fn round(h: &mut HyStart, first: u64, n: u64, rtt: Duration) -> Vec<Growth> {
        for seq in first..first + n {
            h.on_sent(seq);
        }
        (first..first + n).map(|seq| h.on_ack(seq, rtt)).collect()
    }

    #[test]
    fn rtt_rise_enters_css_then_exits_after_five_rounds() {
        let mut h = HyStart::new();
        h.on_sent(0);
        assert_eq!(h.on_ack(0, ms(100)), Growth::Divided(1));
        assert!(round(&mut h, 1, 10, ms(100)).iter().all(|g| *g == Growth::Divided(1)));
        // Threshold: clamp(100 / 8, 4, 16) = 12.5 ms. A rise of 12 ms is not enough.
        assert!(round(&mut h, 11, 10, ms(112)).iter().all(|g| *g == Growth::Divided(1)));
        assert!(!h.in_css());
        // 112 -> 126: rise 14 >= 14 (threshold 112 / 8). The 8th sample switches to CSS.
        let g = round(&mut h, 21, 10, ms(126));
        assert_eq!(g[6], Growth::Divided(1));
        assert_eq!(g[7], Growth::Divided(CSS_GROWTH_DIVISOR));
        assert!(h.in_css());
        let mut first = 31;
        for _ in 0..CSS_ROUNDS - 1 {
            assert!(round(&mut h, first, 10, ms(130))
                .iter()
                .all(|g| *g == Growth::Divided(CSS_GROWTH_DIVISOR)));
            first += 10;
        }
        assert_eq!(round(&mut h, first, 10, ms(130))[0], Growth::Exit);
    }

    #[test]
    fn rtt_back_below_baseline_returns_to_slow_start() {
        let mut h = HyStart::new();
        round(&mut h, 0, 10, ms(40));
        round(&mut h, 10, 10, ms(40));
        round(&mut h, 20, 10, ms(50)); // rise 10 >= clamp(5, 4, 16)
        assert!(h.in_css());
        let g = round(&mut h, 30, 10, ms(45));
        assert_eq!(g[7], Growth::Divided(1));
        assert!(!h.in_css());
    }
}
