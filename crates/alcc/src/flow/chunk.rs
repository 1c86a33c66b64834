//! How many bytes the next chunk carries: within the window, a whole number of segments, about
//! a millisecond of sending.

use std::time::Duration;

use alcc_cc::pacer::Pacer;

/// How many bytes the next chunk carries, or `None` to wait for acknowledgements.
///
/// The chunk fits the window (`in_flight + chunk <= window`, the controller contract), is at
/// most `max_chunk`, about a millisecond of sending and a quarter of the window (so that ACK
/// timestamps come several times per window), and is a whole number of segments whenever at
/// least one segment fits (DESIGN.md: write MSS multiples). A millisecond is read at the
/// pacing rate, or, for an unpaced controller, at the lower of two rates ([`SendClock`]): the
/// rate its window implies over the kernel's smoothed RTT, `window / srtt` (an unpaced window
/// is spent over about one RTT), and the kernel's measured delivery rate (a window far above
/// what the path carries, as Verus's is in slow start or after a jump, would otherwise claim
/// a rate the link never delivers). Without this an unpaced controller with a large window
/// (Verus) gets its allowance in a few big writes and one ACK sample per write, a handful per
/// RTT where it expects one per packet. With data in flight it waits for a whole segment of
/// room rather than writing slivers; with nothing in flight it sends what the window allows,
/// however small.
pub(crate) fn chunk_size(
    queued: u64,
    window: u64,
    in_flight: u64,
    mss: u64,
    clock: SendClock,
    max_chunk: u64,
) -> Option<u64> {
    let mss = mss.max(1);
    let room = window.saturating_sub(in_flight);
    if room == 0 || queued == 0 || (room < mss && in_flight > 0 && queued >= mss) {
        return None;
    }
    let budget = clock.millisecond(window).unwrap_or(u64::MAX).min(window / 4).max(mss);
    let want = queued.min(room).min(max_chunk.max(mss)).min(budget);
    Some(if want >= mss { want / mss * mss } else { want })
}

/// What "a millisecond of sending" is measured against when sizing a chunk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SendClock {
    /// The controller's pacing rate, bytes/s; when set it alone decides.
    pub pacing_rate: Option<u64>,
    /// The kernel's smoothed RTT.
    pub srtt: Option<Duration>,
    /// The kernel's delivery rate (TCP_INFO `tcpi_delivery_rate`), bytes/s; `None` or 0 when
    /// not measured yet.
    pub delivery_rate: Option<u64>,
}

impl SendClock {
    /// The bytes of one millisecond of sending, `None` when nothing bounds it.
    fn millisecond(&self, window: u64) -> Option<u64> {
        if self.pacing_rate.is_some() {
            return Pacer::chunk_budget(self.pacing_rate);
        }
        let by_window = self.srtt.and_then(|rtt| window_per_millisecond(window, rtt));
        let by_delivery = self.delivery_rate.filter(|&r| r > 0).map(|r| (r / 1000).max(1));
        match (by_window, by_delivery) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// The bytes of `window` sent in one millisecond if the window is spread over `srtt`;
/// `None` (no limit) for an RTT below a millisecond.
fn window_per_millisecond(window: u64, srtt: Duration) -> Option<u64> {
    let rtt_us = u64::try_from(srtt.as_micros()).unwrap_or(u64::MAX);
    if rtt_us <= 1000 {
        return None;
    }
    let bytes = u128::from(window) * 1000 / u128::from(rtt_us);
    Some(u64::try_from(bytes).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A clock of a pacing rate and an RTT, no delivery rate measured.
    fn clk(pacing_rate: Option<u64>, srtt: Option<Duration>) -> SendClock {
        SendClock { pacing_rate, srtt, delivery_rate: None }
    }

    #[test]
    fn chunks_fit_the_window_in_whole_segments() {
        // 10 segments of window, 3 in flight: room 7, capped at a quarter window (2.5 -> 2).
        assert_eq!(chunk_size(1 << 20, 10_000, 3_000, 1_000, clk(None, None), 64_000), Some(2_000));
        // Less than a segment of room with data in flight: wait.
        assert_eq!(chunk_size(1 << 20, 10_000, 9_500, 1_000, clk(None, None), 64_000), None);
        // A window below one segment still moves when nothing is in flight.
        assert_eq!(chunk_size(1 << 20, 700, 0, 1_000, clk(None, None), 64_000), Some(700));
        // The tail of the queue goes as it is.
        assert_eq!(chunk_size(300, 10_000, 5_000, 1_000, clk(None, None), 64_000), Some(300));
        // 1 MB/s pacing: a millisecond is 1000 bytes, one segment.
        assert_eq!(chunk_size(1 << 20, u64::MAX, 0, 1_000, clk(Some(1_000_000), None), 64_000), Some(1_000));
        // Unbounded window: max_chunk, rounded down to segments.
        assert_eq!(chunk_size(1 << 20, u64::MAX, 0, 1_448, clk(None, None), 65_536), Some(65_160));
        assert_eq!(chunk_size(0, u64::MAX, 0, 1_448, clk(None, None), 65_536), None);
        assert_eq!(chunk_size(10, 100, 100, 1_448, clk(None, None), 65_536), None);
    }

    #[test]
    fn unpaced_chunks_are_a_millisecond_of_the_window_over_the_rtt() {
        let rtt = |ms| Some(Duration::from_millis(ms));
        // 1 MB window over a 500 ms RTT: 2 000 bytes a millisecond, one 1 448-byte segment
        // (without the RTT: a quarter window, capped at 256 KiB).
        assert_eq!(chunk_size(1 << 30, 1_000_000, 0, 1_448, clk(None, rtt(500)), 262_144), Some(1_448));
        assert_eq!(chunk_size(1 << 30, 1_000_000, 0, 1_448, clk(None, None), 262_144), Some(249_056));
        // 40 ms: 25 000 bytes a millisecond, 17 segments.
        assert_eq!(chunk_size(1 << 30, 1_000_000, 0, 1_448, clk(None, rtt(40)), 262_144), Some(24_616));
        // Never below a segment.
        assert_eq!(chunk_size(1 << 30, 100_000, 0, 1_448, clk(None, rtt(900)), 262_144), Some(1_448));
        // A sub-millisecond RTT (loopback) sets no limit: a quarter window.
        let lo = Some(Duration::from_micros(40));
        assert_eq!(chunk_size(1 << 30, 4_000_000, 0, 1_000, clk(None, lo), 262_144), Some(262_000));
        // A pacing rate, when there is one, decides instead of the RTT.
        assert_eq!(
            chunk_size(1 << 30, 1_000_000, 0, 1_000, clk(Some(5_000_000), rtt(500)), 262_144),
            Some(5_000)
        );
        assert_eq!(window_per_millisecond(u64::MAX, Duration::from_millis(2)), Some(u64::MAX / 2));
    }

    #[test]
    fn unpaced_chunks_follow_the_delivery_rate_when_the_window_claims_more() {
        let at = |delivery_rate| SendClock {
            pacing_rate: None,
            srtt: Some(Duration::from_millis(40)),
            delivery_rate,
        };
        // 1 MB over 40 ms claims 25 000 bytes a millisecond; the path delivers 1.5 MB/s
        // (12 Mbit/s), 1 500 bytes a millisecond: one segment per chunk.
        assert_eq!(chunk_size(1 << 30, 1_000_000, 0, 1_448, at(Some(1_500_000)), 262_144), Some(1_448));
        // A faster delivery rate than the window's leaves the window's figure.
        assert_eq!(chunk_size(1 << 30, 1_000_000, 0, 1_448, at(Some(100_000_000)), 262_144), Some(24_616));
        // Not measured yet (0): the window's figure.
        assert_eq!(chunk_size(1 << 30, 1_000_000, 0, 1_448, at(Some(0)), 262_144), Some(24_616));
        // Without an RTT the delivery rate alone: 10 MB/s, 10 000 bytes, 6 segments.
        let no_rtt = SendClock { pacing_rate: None, srtt: None, delivery_rate: Some(10_000_000) };
        assert_eq!(chunk_size(1 << 30, 1_000_000, 0, 1_448, no_rtt, 262_144), Some(8_688));
        // A pacing rate still decides alone.
        let paced = SendClock { pacing_rate: Some(5_000_000), ..at(Some(1_000)) };
        assert_eq!(chunk_size(1 << 30, 1_000_000, 0, 1_000, paced, 262_144), Some(5_000));
    }

    proptest! {
        #[test]
        fn chunk_never_overfills_the_window(
            queued in 0u64..10_000_000,
            window in 0u64..10_000_000,
            in_flight in 0u64..10_000_000,
            mss in 1u64..70_000,
            rate in proptest::option::of(1u64..10_000_000_000),
            srtt_us in proptest::option::of(0u64..10_000_000),
            delivery_rate in proptest::option::of(0u64..10_000_000_000),
            max_chunk in 1u64..1_000_000,
        ) {
            let srtt = srtt_us.map(Duration::from_micros);
            let clock = SendClock { pacing_rate: rate, srtt, delivery_rate };
            if let Some(c) = chunk_size(queued, window, in_flight, mss, clock, max_chunk) {
                prop_assert!(c > 0);
                if let (None, Some(d)) = (rate, delivery_rate.filter(|&d| d > 0)) {
                    // Unpaced: never more than a millisecond of the delivery rate.
                    prop_assert!(c <= (d / 1000).max(1).max(mss));
                }
                if let (None, Some(us)) = (rate, srtt_us) {
                    if us > 1000 {
                        // Unpaced: about a millisecond of the window spread over the RTT.
                        let ms = (u128::from(window) * 1000 / u128::from(us)) as u64;
                        prop_assert!(c <= ms.max(mss));
                    }
                }
                prop_assert!(c <= queued);
                prop_assert!(in_flight + c <= window);
                prop_assert!(c <= max_chunk.max(mss));
                prop_assert!(c < mss || c % mss == 0);
            }
        }
    }
}
