//! Link metrics from a [`Recording`], as Pantheon's analysis (`tunnel_graph.py`) defines them.
//!
//! Over the whole recording ([`summarize`]):
//!
//! - capacity = bits of all delivery opportunities / (last opportunity - first opportunity);
//! - throughput = bits departed / (last departure - first departure), so idle time before the
//!   first packet does not count;
//! - utilization = throughput / capacity (a ratio of the two averages, as Pantheon and
//!   `mm-throughput-graph` print it; it can exceed 1 by a hair because the spans differ);
//! - loss = 1 - bytes departed / bytes sent (packets still queued when the recording ends
//!   count as lost);
//! - one-way delay of each departed packet = time from reaching the bottleneck to leaving it +
//!   propagation delay ([`crate::record`]); percentiles by nearest rank ([`nearest_rank`]).
//!   Pantheon calls numpy's `percentile(..., interpolation='nearest')`, the element at index
//!   `round(p / 100 x (n - 1))`; the two agree on the 95th percentile of 20 values and differ by
//!   at most one rank in general.
//!
//! Over time ([`time_series`]): the same quantities in bins (Pantheon uses 500 ms,
//! [`DEFAULT_BIN_US`]) aligned on the recording's first event; departures and their delays
//! count in the bin of their departure time, opportunities in the bin of their time, sends in
//! the bin of their send time; every bin's rate divides by the full bin width, the last one
//! included. Quantities that are undefined (no departure, a zero span) are `None` or 0, as
//! documented on each field; nothing here divides by zero or panics.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use crate::record::Recording;

/// Pantheon's time-series bin: 500 ms.
pub const DEFAULT_BIN_US: u64 = 500_000;

/// The most bins [`time_series`] makes (protects against a corrupt log spanning centuries).
pub const MAX_BINS: u64 = 10_000_000;

/// The summary of one recording. Rates in Mbit/s (10^6 bit/s), delays in ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// From the first to the last event of any kind, in seconds.
    pub duration_s: f64,
    /// Bits of delivery opportunities / their span; 0 with fewer than two distinct times.
    pub capacity_mbps: f64,
    /// Bits departed / span of departures; 0 with fewer than two distinct departure times.
    pub throughput_mbps: f64,
    /// Throughput / capacity; 0 when the capacity is 0.
    pub utilization: f64,
    /// 1 - bytes departed / bytes sent; 0 when nothing was sent.
    pub loss: f64,
    /// Median one-way delay (nearest rank); `None` when no packet departed.
    pub delay_p50_ms: Option<f64>,
    /// 95th-percentile one-way delay (nearest rank); `None` when no packet departed.
    pub delay_p95_ms: Option<f64>,
    /// 99th-percentile one-way delay (nearest rank); `None` when no packet departed.
    pub delay_p99_ms: Option<f64>,
    /// Mean one-way delay; `None` when no packet departed.
    pub delay_mean_ms: Option<f64>,
    /// The propagation delay included in every one-way delay.
    pub propagation_delay_ms: f64,
    /// Packets that reached the bottleneck.
    pub packets_sent: u64,
    /// Packets that left it.
    pub packets_departed: u64,
    /// Bytes that reached the bottleneck.
    pub bytes_sent: u64,
    /// Bytes that left it.
    pub bytes_departed: u64,
    /// Bytes the delivery opportunities could have carried.
    pub opportunity_bytes: u64,
}

/// One time-series bin. Rates in Mbit/s, delays in ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bin {
    /// Start of the bin, in seconds after the recording's first event.
    pub start_s: f64,
    /// Bits of delivery opportunities in the bin / bin width.
    pub capacity_mbps: f64,
    /// Bits departed in the bin / bin width.
    pub throughput_mbps: f64,
    /// Bits sent into the bottleneck in the bin / bin width.
    pub sent_mbps: f64,
    /// Median one-way delay of the packets departing in the bin, if any.
    pub delay_p50_ms: Option<f64>,
    /// 95th percentile of the same.
    pub delay_p95_ms: Option<f64>,
    /// 99th percentile of the same.
    pub delay_p99_ms: Option<f64>,
}

/// Why a time series could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricsError {
    /// The bin width is zero.
    #[error("the time-series bin width must be greater than 0")]
    ZeroBin,
    /// The recording spans more bins than [`MAX_BINS`].
    #[error("the recording spans {bins} bins of {bin_us} us, more than {MAX_BINS}; is a timestamp corrupt?")]
    TooManyBins {
        /// How many bins it would take.
        bins: u64,
        /// The bin width asked for.
        bin_us: u64,
    },
}

/// The nearest-rank percentile of ascending `sorted` values: the smallest value such that at
/// least `percent`% of the values are at or below it, i.e. the value of rank
/// `ceil(percent / 100 x n)` (1-based, at least 1). `None` for no values; `percent` above 100
/// counts as 100. Integer arithmetic, so p95 of 20 values is exactly rank 19.
pub fn nearest_rank(sorted: &[u64], percent: u32) -> Option<u64> {
    let n = sorted.len() as u128;
    let rank = (u128::from(percent.min(100)) * n).div_ceil(100).max(1);
    sorted.get(usize::try_from(rank - 1).ok()?).copied()
}

/// Mbit/s of `bytes` over `span_us` µs (bits per µs = Mbit/s); 0 when the span is 0.
pub(crate) fn mbps(bytes: u64, span_us: u64) -> f64 {
    if span_us == 0 {
        0.0
    } else {
        bytes as f64 * 8.0 / span_us as f64
    }
}

/// Milliseconds of `us` µs.
pub(crate) fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// The one-way delay figures of a set of packets, ms: nearest-rank percentiles and the mean,
/// all `None` for no packets.
pub(crate) struct DelayFigures {
    /// Median.
    pub p50_ms: Option<f64>,
    /// 95th percentile.
    pub p95_ms: Option<f64>,
    /// 99th percentile.
    pub p99_ms: Option<f64>,
    /// Mean.
    pub mean_ms: Option<f64>,
}

impl DelayFigures {
    /// The figures of ascending `sorted` delays (µs).
    pub(crate) fn of_sorted(sorted: &[u64]) -> DelayFigures {
        let percentile = |p| nearest_rank(sorted, p).map(ms);
        DelayFigures {
            p50_ms: percentile(50),
            p95_ms: percentile(95),
            p99_ms: percentile(99),
            mean_ms: (!sorted.is_empty())
                .then(|| sorted.iter().map(|&d| d as f64).sum::<f64>() / sorted.len() as f64 / 1000.0),
        }
    }
}

/// The sorted one-way delays (µs) of the departed packets.
fn sorted_delays(recording: &Recording) -> Vec<u64> {
    let mut delays: Vec<u64> =
        recording.packets.iter().filter_map(|p| p.one_way_delay_us(recording.propagation_delay_us)).collect();
    delays.sort_unstable();
    delays
}

/// The summary of a recording; see the module docs for the definitions.
pub fn summarize(recording: &Recording) -> Summary {
    let (start, end) = recording.span_us().unwrap_or((0, 0));
    let bytes_sent: u64 = recording.packets.iter().map(|p| p.bytes).fold(0, u64::saturating_add);
    let departed = recording.packets.iter().filter(|p| p.departed_us.is_some());
    let bytes_departed: u64 = departed.clone().map(|p| p.bytes).fold(0, u64::saturating_add);
    let packets_departed = departed.clone().count() as u64;
    let first_departure = departed.clone().filter_map(|p| p.departed_us).min().unwrap_or(0);
    let last_departure = departed.filter_map(|p| p.departed_us).max().unwrap_or(0);
    let opportunity_bytes: u64 = recording.opportunities.iter().map(|o| o.bytes).fold(0, u64::saturating_add);
    let first_opportunity = recording.opportunities.iter().map(|o| o.at_us).min().unwrap_or(0);
    let last_opportunity = recording.opportunities.iter().map(|o| o.at_us).max().unwrap_or(0);
    let capacity_mbps = mbps(opportunity_bytes, last_opportunity - first_opportunity);
    let throughput_mbps = mbps(bytes_departed, last_departure - first_departure);
    let delay = DelayFigures::of_sorted(&sorted_delays(recording));
    Summary {
        duration_s: (end - start) as f64 / 1e6,
        capacity_mbps,
        throughput_mbps,
        utilization: if capacity_mbps > 0.0 { throughput_mbps / capacity_mbps } else { 0.0 },
        loss: if bytes_sent == 0 { 0.0 } else { 1.0 - bytes_departed as f64 / bytes_sent as f64 },
        delay_p50_ms: delay.p50_ms,
        delay_p95_ms: delay.p95_ms,
        delay_p99_ms: delay.p99_ms,
        delay_mean_ms: delay.mean_ms,
        propagation_delay_ms: ms(recording.propagation_delay_us),
        packets_sent: recording.packets.len() as u64,
        packets_departed,
        bytes_sent,
        bytes_departed,
        opportunity_bytes,
    }
}

/// The recording in bins of `bin_us` µs from its first event; empty for an empty recording.
pub fn time_series(recording: &Recording, bin_us: u64) -> Result<Vec<Bin>, MetricsError> {
    if bin_us == 0 {
        return Err(MetricsError::ZeroBin);
    }
    let Some((start, end)) = recording.span_us() else { return Ok(Vec::new()) };
    let bins = ((end - start) / bin_us).saturating_add(1);
    if bins > MAX_BINS {
        return Err(MetricsError::TooManyBins { bins, bin_us });
    }
    let index = |t: u64| ((t - start) / bin_us) as usize;
    let n = bins as usize;
    let (mut capacity, mut departed, mut sent) = (vec![0u64; n], vec![0u64; n], vec![0u64; n]);
    let mut delays: Vec<Vec<u64>> = vec![Vec::new(); n];
    for o in &recording.opportunities {
        let bin = &mut capacity[index(o.at_us)];
        *bin = bin.saturating_add(o.bytes);
    }
    for p in &recording.packets {
        let bin = &mut sent[index(p.sent_us)];
        *bin = bin.saturating_add(p.bytes);
        if let (Some(at), Some(delay)) = (p.departed_us, p.one_way_delay_us(recording.propagation_delay_us)) {
            let bin = &mut departed[index(at)];
            *bin = bin.saturating_add(p.bytes);
            delays[index(at)].push(delay);
        }
    }
    let series = delays
        .into_iter()
        .enumerate()
        .map(|(i, mut d)| {
            d.sort_unstable();
            Bin {
                start_s: (i as u64 * bin_us) as f64 / 1e6,
                capacity_mbps: mbps(capacity[i], bin_us),
                throughput_mbps: mbps(departed[i], bin_us),
                sent_mbps: mbps(sent[i], bin_us),
                delay_p50_ms: nearest_rank(&d, 50).map(ms),
                delay_p95_ms: nearest_rank(&d, 95).map(ms),
                delay_p99_ms: nearest_rank(&d, 99).map(ms),
            }
        })
        .collect();
    Ok(series)
}

/// The CSV header [`write_series_csv`] writes.
pub const SERIES_CSV_HEADER: &str =
    "start_s,capacity_mbps,throughput_mbps,sent_mbps,delay_p50_ms,delay_p95_ms,delay_p99_ms";

/// Writes a time series as CSV: [`SERIES_CSV_HEADER`], then one row per bin; an undefined
/// delay is an empty cell (pandas reads it as NaN).
pub fn write_series_csv(series: &[Bin], mut out: impl Write) -> io::Result<()> {
    let cell = |v: Option<f64>| v.map(|x| format!("{x:.3}")).unwrap_or_default();
    writeln!(out, "{SERIES_CSV_HEADER}")?;
    for b in series {
        writeln!(
            out,
            "{:.3},{:.6},{:.6},{:.6},{},{},{}",
            b.start_s,
            b.capacity_mbps,
            b.throughput_mbps,
            b.sent_mbps,
            cell(b.delay_p50_ms),
            cell(b.delay_p95_ms),
            cell(b.delay_p99_ms)
        )?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Opportunity, PacketRecord};
    use proptest::prelude::*;

    #[test]
    fn nearest_rank_by_hand() {
        let v: Vec<u64> = (1..=20).collect();
        // p95 of 20 values: rank ceil(0.95 x 20) = 19 -> 19; p50: rank 10; p99: rank ceil(19.8) = 20.
        assert_eq!(nearest_rank(&v, 95), Some(19));
        assert_eq!(nearest_rank(&v, 50), Some(10));
        assert_eq!(nearest_rank(&v, 99), Some(20));
        assert_eq!(nearest_rank(&v, 0), Some(1));
        assert_eq!(nearest_rank(&v, 100), Some(20));
        assert_eq!(nearest_rank(&v, 250), Some(20));
        // 7 values: p50 rank ceil(3.5) = 4; p95 rank ceil(6.65) = 7.
        let w = [10, 20, 30, 40, 50, 60, 70];
        assert_eq!(nearest_rank(&w, 50), Some(40));
        assert_eq!(nearest_rank(&w, 95), Some(70));
        assert_eq!(nearest_rank(&[], 50), None);
        assert_eq!(nearest_rank(&[5], 1), Some(5));
    }

    /// 4 opportunities of 1500 B at 0, 1, 2, 3 ms; 3 packets of 1000 B sent at 0, 0, 1 ms;
    /// two depart at 2 and 4 ms, one is lost; propagation 10 ms.
    fn small() -> Recording {
        Recording {
            packets: vec![
                PacketRecord { bytes: 1000, sent_us: 0, departed_us: Some(2_000) },
                PacketRecord { bytes: 1000, sent_us: 0, departed_us: None },
                PacketRecord { bytes: 1000, sent_us: 1_000, departed_us: Some(4_000) },
            ],
            opportunities: (0..4).map(|i| Opportunity { at_us: i * 1000, bytes: 1500 }).collect(),
            propagation_delay_us: 10_000,
        }
    }

    #[test]
    fn summary_by_hand() {
        let s = summarize(&small());
        // Events span 0..4 ms. Capacity: 6000 B x 8 over the opportunities' 3 ms = 16 Mbit/s.
        assert_eq!(s.duration_s, 0.004);
        assert_eq!(s.capacity_mbps, 16.0);
        // Throughput: 2000 B x 8 / (4 - 2) ms = 8 Mbit/s.
        assert_eq!(s.throughput_mbps, 8.0);
        // Utilization 8 / 16; loss 1 - 2000 / 3000.
        assert_eq!(s.utilization, 0.5);
        assert!((s.loss - 1.0 / 3.0).abs() < 1e-12);
        // Delays 12 ms and 13 ms: p50 rank 1 = 12; p95 rank 2 = 13; mean 12.5.
        assert_eq!(s.delay_p50_ms, Some(12.0));
        assert_eq!(s.delay_p95_ms, Some(13.0));
        assert_eq!(s.delay_p99_ms, Some(13.0));
        assert_eq!(s.delay_mean_ms, Some(12.5));
        assert_eq!((s.packets_sent, s.packets_departed, s.bytes_sent, s.bytes_departed), (3, 2, 3000, 2000));
        assert_eq!(s.opportunity_bytes, 6000);
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains("\"delay_p95_ms\":13.0"), "{json}");
        assert_eq!(serde_json::from_str::<Summary>(&json).unwrap(), s);
    }

    #[test]
    fn p95_of_twenty_packets() {
        // Delays 1..=20 ms with no propagation: p95 = 19 ms (rank 19), p99 = 20 ms.
        let packets = (1..=20u64)
            .map(|i| PacketRecord { bytes: 1500, sent_us: 100_000, departed_us: Some(100_000 + i * 1000) })
            .collect();
        let s = summarize(&Recording { packets, ..Recording::default() });
        assert_eq!(s.delay_p95_ms, Some(19.0));
        assert_eq!(s.delay_p99_ms, Some(20.0));
        assert_eq!(s.delay_p50_ms, Some(10.0));
        // 20 x 1500 B over the 19 ms between first and last departure.
        assert!((s.throughput_mbps - 30_000.0 * 8.0 / 19_000.0).abs() < 1e-12);
        assert_eq!(s.capacity_mbps, 0.0);
        assert_eq!(s.utilization, 0.0);
    }

    #[test]
    fn empty_recording_is_all_zero() {
        let s = summarize(&Recording::default());
        assert_eq!((s.capacity_mbps, s.throughput_mbps, s.loss, s.duration_s), (0.0, 0.0, 0.0, 0.0));
        assert_eq!(s.delay_p50_ms, None);
        assert_eq!(time_series(&Recording::default(), DEFAULT_BIN_US), Ok(Vec::new()));
    }

    #[test]
    fn series_by_hand() {
        // Bins of 2 ms from 0: [0,2) and [2,4) and [4,6).
        let bins = time_series(&small(), 2_000).unwrap();
        assert_eq!(bins.len(), 3);
        // Bin 0: opportunities at 0, 1 (3000 B / 2 ms = 12 Mbit/s); sends 3000 B; no departure.
        assert_eq!(bins[0].capacity_mbps, 12.0);
        assert_eq!(bins[0].sent_mbps, 12.0);
        assert_eq!(bins[0].throughput_mbps, 0.0);
        assert_eq!(bins[0].delay_p50_ms, None);
        // Bin 1: opportunities at 2, 3; departure at 2 ms (1000 B = 4 Mbit/s), delay 12 ms.
        assert_eq!(bins[1].capacity_mbps, 12.0);
        assert_eq!(bins[1].throughput_mbps, 4.0);
        assert_eq!(bins[1].delay_p95_ms, Some(12.0));
        // Bin 2: departure at 4 ms, delay 13 ms.
        assert_eq!(bins[2].start_s, 0.004);
        assert_eq!(bins[2].delay_p50_ms, Some(13.0));
        let mut csv = Vec::new();
        write_series_csv(&bins, &mut csv).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], SERIES_CSV_HEADER);
        assert_eq!(lines[1], "0.000,12.000000,0.000000,12.000000,,,");
        assert_eq!(lines[3], "0.004,0.000000,4.000000,0.000000,13.000,13.000,13.000");
        assert_eq!(time_series(&small(), 0), Err(MetricsError::ZeroBin));
    }

    #[test]
    fn refuses_absurd_spans() {
        let mut r = small();
        r.packets[0].departed_us = Some(u64::MAX);
        assert!(matches!(time_series(&r, 1), Err(MetricsError::TooManyBins { .. })));
        let s = summarize(&r);
        assert!(s.throughput_mbps.is_finite());
    }

    #[test]
    fn huge_sizes_saturate_instead_of_overflowing() {
        let huge = PacketRecord { bytes: u64::MAX, sent_us: 0, departed_us: Some(1) };
        let r = Recording {
            packets: vec![huge, huge],
            opportunities: vec![Opportunity { at_us: 0, bytes: u64::MAX }; 2],
            propagation_delay_us: u64::MAX,
        };
        let s = summarize(&r);
        assert_eq!(s.bytes_sent, u64::MAX);
        assert_eq!(s.delay_p50_ms, Some(u64::MAX as f64 / 1000.0));
        let bins = time_series(&r, 1).unwrap();
        assert_eq!(bins.len(), 2);
        assert!(bins[0].sent_mbps.is_finite() && bins[1].throughput_mbps.is_finite());
    }

    proptest! {
        #[test]
        fn metrics_are_finite_and_bounded(
            raw in proptest::collection::vec((1u64..3000, 0u64..2_000_000, proptest::option::of(0u64..500_000)), 0..60),
            opps in proptest::collection::vec(0u64..3_000_000, 0..60),
            prop in 0u64..100_000,
        ) {
            let packets = raw
                .into_iter()
                .map(|(bytes, sent_us, wait)| PacketRecord { bytes, sent_us, departed_us: wait.map(|w| sent_us + w) })
                .collect();
            let opportunities = opps.into_iter().map(|at_us| Opportunity { at_us, bytes: 1500 }).collect();
            let r = Recording { packets, opportunities, propagation_delay_us: prop };
            let s = summarize(&r);
            prop_assert!((0.0..=1.0).contains(&s.loss));
            prop_assert!(s.capacity_mbps.is_finite() && s.throughput_mbps.is_finite() && s.utilization.is_finite());
            if let (Some(p50), Some(p95), Some(p99)) = (s.delay_p50_ms, s.delay_p95_ms, s.delay_p99_ms) {
                prop_assert!(p50 <= p95 && p95 <= p99);
                prop_assert!(p50 >= prop as f64 / 1000.0);
            }
            let bins = time_series(&r, DEFAULT_BIN_US).unwrap();
            let departed: f64 = bins.iter().map(|b| b.throughput_mbps * DEFAULT_BIN_US as f64 / 8.0).sum();
            prop_assert!((departed - s.bytes_departed as f64).abs() < 1e-6 * (1.0 + departed));
        }
    }
}
