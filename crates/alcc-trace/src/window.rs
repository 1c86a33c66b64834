//! A link log's figures over a fixed window of the link's clock, so that runs whose logs end at
//! different times are judged over the same time (docs/experiment-format.md, "The common
//! window").
//!
//! [`crate::metrics::summarize`] takes each recording as a whole: its throughput divides by the
//! span of its own departures and its percentiles take every packet that left the link before
//! the log ended. Two runs whose emulators stop at different moments are then judged over
//! different times, and on a trace that ends in an outage the one whose log runs longer counts
//! more of the backlog that drains after it. [`summarize_window`] judges a log over a window
//! `[from, to)` of its own time axis (0 = the link's start):
//!
//! - throughput = bits of the packets that *left* the link in the window / the window's width
//!   (not the log's or the departures' span), as `mm-throughput-graph` and Pantheon count
//!   delivered bits by departure;
//! - capacity = bits of the delivery opportunities in the window / the window's width;
//! - one-way delay percentiles over the packets that left the link in the window (queueing
//!   delay from their departure line plus the propagation delay), as Mahimahi's delay graphs
//!   and Pantheon's analysis take a packet's delay when it is delivered; nearest rank
//!   ([`crate::metrics::nearest_rank`]);
//! - loss = bytes dropped in the window / bytes that reached the link in the window (a packet
//!   still queued at the window's end is not lost);
//! - what the percentiles leave out is counted, never dropped silently: the packets still in
//!   the queue at the window's end ([`WindowSummary::packets_queued_at_end`]), how many of them
//!   the log shows leaving later ([`WindowSummary::packets_departed_after`]) and how many were
//!   still queued when the log ended ([`WindowSummary::packets_queued_at_log_end`]).
//!
//! Why departures and not arrivals: a rule that took the packets which *entered* the window and
//! counted their delay whenever the log shows them leaving would make the result depend on how
//! long each log runs past the window again (the defect this module removes): the longer log
//! sees more of a late backlog leave. Judging by departure uses the same interval of the link's
//! clock for every run, and what is still queued at its end is reported beside the figures.
//!
//! A log that ends before the window does (its link stopped early: the run's client ended) is
//! judged over the whole window all the same, since nothing left the link after it stopped;
//! [`WindowSummary::covers_window`] says so.
//!
//! The queue at the window's end is counted from the log's own lines: arrivals minus drops
//! minus departures before the window's end. That needs the log to start with the link (an
//! empty queue), as the logs of `alcc link` and `mm-link` do, and drops to happen when a packet
//! arrives (drop-tail and infinite queues, the only ones either emulator offers).

use serde::{Deserialize, Serialize};

use crate::log::{Log, LogEvent};
use crate::metrics::{mbps, ms, DelayFigures};

/// A half-open interval `[from_us, to_us)` of a log's time axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    from_us: u64,
    to_us: u64,
}

/// Why a window could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WindowError {
    /// The end is not after the start, or a bound is negative or not a number.
    #[error("a window must be FROM:TO seconds with 0 <= FROM < TO, got {from_s}:{to_s}")]
    Bounds {
        /// The start asked for, seconds.
        from_s: f64,
        /// The end asked for, seconds.
        to_s: f64,
    },
    /// The text is not `FROM:TO`.
    #[error("a window is written FROM:TO in seconds (e.g. 0.5:30.5), got {0:?}")]
    Syntax(String),
}

impl Window {
    /// The window `[from_s, to_s)` in seconds on the log's time axis.
    pub fn from_secs(from_s: f64, to_s: f64) -> Result<Window, WindowError> {
        if !(from_s.is_finite() && to_s.is_finite() && from_s >= 0.0 && to_s > from_s) {
            return Err(WindowError::Bounds { from_s, to_s });
        }
        let us = |s: f64| (s * 1e6).round() as u64;
        let (from_us, to_us) = (us(from_s), us(to_s));
        if to_us <= from_us {
            return Err(WindowError::Bounds { from_s, to_s });
        }
        Ok(Window { from_us, to_us })
    }

    /// Parses `FROM:TO` (seconds), as `alcc analyze --window` takes it.
    pub fn parse(text: &str) -> Result<Window, WindowError> {
        let syntax = || WindowError::Syntax(text.to_string());
        let (from, to) = text.split_once(':').ok_or_else(syntax)?;
        let from_s = from.trim().parse::<f64>().map_err(|_| syntax())?;
        let to_s = to.trim().parse::<f64>().map_err(|_| syntax())?;
        Window::from_secs(from_s, to_s)
    }

    /// The start, µs.
    pub fn from_us(&self) -> u64 {
        self.from_us
    }

    /// The end (excluded), µs.
    pub fn to_us(&self) -> u64 {
        self.to_us
    }

    /// Whether `t_us` is in the window.
    pub fn contains(&self, t_us: u64) -> bool {
        (self.from_us..self.to_us).contains(&t_us)
    }
}

/// A log's figures over a [`Window`]; rates in Mbit/s, delays in ms, times in seconds on the
/// log's axis. See the module docs for the rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowSummary {
    /// The window's start.
    pub window_from_s: f64,
    /// The window's end (excluded).
    pub window_to_s: f64,
    /// The log's last event of any kind (when its link stopped); 0 for an empty log.
    pub log_end_s: f64,
    /// Whether the log reaches the window's end; when not, the figures still divide by the
    /// whole window (nothing left the link after it stopped).
    pub covers_window: bool,
    /// Bits of the delivery opportunities in the window / its width.
    pub capacity_mbps: f64,
    /// Bits that left the link in the window / its width.
    pub throughput_mbps: f64,
    /// Throughput / capacity; 0 when the capacity is 0.
    pub utilization: f64,
    /// Bytes dropped in the window / bytes that reached the link in it; 0 when none did.
    pub loss: f64,
    /// Median one-way delay of the packets that left the link in the window.
    pub delay_p50_ms: Option<f64>,
    /// 95th percentile of the same.
    pub delay_p95_ms: Option<f64>,
    /// 99th percentile of the same.
    pub delay_p99_ms: Option<f64>,
    /// Mean of the same.
    pub delay_mean_ms: Option<f64>,
    /// The propagation delay included in every one-way delay.
    pub propagation_delay_ms: f64,
    /// Packets that reached the link in the window.
    pub packets_arrived: u64,
    /// Bytes of the same.
    pub bytes_arrived: u64,
    /// Packets that left the link in the window.
    pub packets_departed: u64,
    /// Bytes of the same.
    pub bytes_departed: u64,
    /// Packets the queue dropped in the window.
    pub packets_dropped: u64,
    /// Bytes of the same.
    pub bytes_dropped: u64,
    /// Bytes the delivery opportunities in the window could have carried.
    pub opportunity_bytes: u64,
    /// Packets in the link at the window's end (arrived before it, neither left nor dropped):
    /// their delay is not in the percentiles.
    pub packets_queued_at_end: u64,
    /// Bytes of the same.
    pub bytes_queued_at_end: u64,
    /// Of those, the packets the log shows leaving after the window.
    pub packets_departed_after: u64,
    /// Largest one-way delay among those, ms.
    pub delay_departed_after_max_ms: Option<f64>,
    /// Of those, the packets still queued when the log ended.
    pub packets_queued_at_log_end: u64,
}

/// The figures of `log` over `window`; every one-way delay adds `propagation_delay_us` (the
/// header's, or what the caller knows for a log without it).
pub fn summarize_window(log: &Log, window: Window, propagation_delay_us: u64) -> WindowSummary {
    let (mut arrived, mut arrived_bytes) = (0u64, 0u64);
    let (mut dropped, mut dropped_bytes) = (0u64, 0u64);
    let mut departed_bytes = 0u64;
    let mut opportunity_bytes = 0u64;
    let mut delays: Vec<u64> = Vec::new();
    // Before the window's end, from the log's start: the queue's balance.
    let (mut in_packets, mut in_bytes) = (0u64, 0u64);
    let (mut out_packets, mut out_bytes) = (0u64, 0u64);
    let mut after: Vec<u64> = Vec::new();
    let mut end_us = 0u64;
    for event in &log.events {
        match *event {
            LogEvent::Arrival { at_us, bytes } => {
                end_us = end_us.max(at_us);
                if window.contains(at_us) {
                    arrived += 1;
                    arrived_bytes = arrived_bytes.saturating_add(bytes);
                }
                if at_us < window.to_us {
                    in_packets += 1;
                    in_bytes = in_bytes.saturating_add(bytes);
                }
            }
            LogEvent::Drop { at_us, packets, bytes } => {
                end_us = end_us.max(at_us);
                if window.contains(at_us) {
                    dropped = dropped.saturating_add(packets);
                    dropped_bytes = dropped_bytes.saturating_add(bytes);
                }
                if at_us < window.to_us {
                    out_packets = out_packets.saturating_add(packets);
                    out_bytes = out_bytes.saturating_add(bytes);
                }
            }
            LogEvent::Departure { at_us, bytes, queued_us } => {
                end_us = end_us.max(at_us);
                let delay = queued_us.saturating_add(propagation_delay_us);
                if window.contains(at_us) {
                    departed_bytes = departed_bytes.saturating_add(bytes);
                    delays.push(delay);
                }
                if at_us < window.to_us {
                    out_packets += 1;
                    out_bytes = out_bytes.saturating_add(bytes);
                } else if at_us.saturating_sub(queued_us) < window.to_us {
                    after.push(delay);
                }
            }
            LogEvent::Opportunity { at_us, bytes } => {
                end_us = end_us.max(at_us);
                if window.contains(at_us) {
                    opportunity_bytes = opportunity_bytes.saturating_add(bytes);
                }
            }
        }
    }
    delays.sort_unstable();
    let width = window.to_us - window.from_us;
    let capacity_mbps = mbps(opportunity_bytes, width);
    let throughput_mbps = mbps(departed_bytes, width);
    let queued = in_packets.saturating_sub(out_packets);
    let delay = DelayFigures::of_sorted(&delays);
    WindowSummary {
        window_from_s: window.from_us as f64 / 1e6,
        window_to_s: window.to_us as f64 / 1e6,
        log_end_s: end_us as f64 / 1e6,
        covers_window: end_us >= window.to_us,
        capacity_mbps,
        throughput_mbps,
        utilization: if capacity_mbps > 0.0 { throughput_mbps / capacity_mbps } else { 0.0 },
        loss: if arrived_bytes == 0 { 0.0 } else { dropped_bytes as f64 / arrived_bytes as f64 },
        delay_p50_ms: delay.p50_ms,
        delay_p95_ms: delay.p95_ms,
        delay_p99_ms: delay.p99_ms,
        delay_mean_ms: delay.mean_ms,
        propagation_delay_ms: ms(propagation_delay_us),
        packets_arrived: arrived,
        bytes_arrived: arrived_bytes,
        packets_departed: delays.len() as u64,
        bytes_departed: departed_bytes,
        packets_dropped: dropped,
        bytes_dropped: dropped_bytes,
        opportunity_bytes,
        packets_queued_at_end: queued,
        bytes_queued_at_end: in_bytes.saturating_sub(out_bytes),
        packets_departed_after: after.len() as u64,
        delay_departed_after_max_ms: after.iter().max().map(|&d| ms(d)),
        packets_queued_at_log_end: queued.saturating_sub(after.len() as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{LogHeader, LogWriter, TimeUnit};
    use crate::metrics::summarize;

    /// A µs log from `(t, line)` events: `+ B`, `- B DELAY`, `# B`, `d N B`, 10 ms propagation.
    fn log(events: &[(u64, &str)]) -> Log {
        let header =
            LogHeader { propagation_delay_us: Some(10_000), unit: TimeUnit::Micros, ..LogHeader::default() };
        let mut text =
            String::from_utf8(LogWriter::new(Vec::new(), &header).unwrap().finish().unwrap()).unwrap();
        for (t, line) in events {
            text.push_str(&format!("{t} {line}\n"));
        }
        Log::parse("test.log", text.as_bytes()).unwrap()
    }

    const S: u64 = 1_000_000;

    #[test]
    fn windows_are_checked_and_parsed() {
        let w = Window::parse("0.5:30.5").unwrap();
        assert_eq!((w.from_us(), w.to_us()), (500_000, 30_500_000));
        assert!(w.contains(500_000) && !w.contains(30_500_000));
        assert!(matches!(Window::parse("3:1"), Err(WindowError::Bounds { .. })));
        assert!(matches!(Window::parse("-1:1"), Err(WindowError::Bounds { .. })));
        assert!(matches!(Window::parse("1"), Err(WindowError::Syntax(_))));
        assert!(matches!(Window::parse("a:2"), Err(WindowError::Syntax(_))));
        assert!(matches!(Window::from_secs(0.0, f64::NAN), Err(WindowError::Bounds { .. })));
    }

    /// One packet per second from 0 s to 9 s, each leaving 0.1 s after it arrived, except the
    /// one of 8 s, which leaves at 12 s (an outage), and the one of 9 s, never (still queued
    /// when the log ends at 12.5 s). Opportunities of 1500 bytes every second from 0 to 12 s.
    fn late_backlog() -> Log {
        let mut events: Vec<(u64, String)> = Vec::new();
        for i in 0..=12u64 {
            events.push((i * S, "# 1500".into()));
        }
        for i in 0..=9u64 {
            events.push((i * S + 1, "+ 1000".into()));
            match i {
                8 => events.push((12 * S, format!("- 1000 {}", 12 * S - (8 * S + 1)))),
                9 => {}
                _ => events.push((i * S + 100_001, "- 1000 100000".into())),
            }
        }
        events.push((12 * S + 500_000, "# 1500".into()));
        events.sort_by_key(|(t, _)| *t);
        let refs: Vec<(u64, &str)> = events.iter().map(|(t, l)| (*t, l.as_str())).collect();
        log(&refs)
    }

    #[test]
    fn a_packet_leaving_after_the_window_is_counted_but_not_in_the_figures() {
        let log = late_backlog();
        let s = summarize_window(&log, Window::from_secs(0.0, 10.0).unwrap(), 10_000);
        // Departures in [0, 10 s): the 8 packets of 0-7 s, 8000 bytes over 10 s.
        assert_eq!((s.packets_departed, s.bytes_departed), (8, 8000));
        assert_eq!(s.throughput_mbps, 8000.0 * 8.0 / 10e6);
        // Every delay in the window is 100 ms + 10 ms; the 4-s one of 8 s left after it.
        assert_eq!(s.delay_p95_ms, Some(110.0));
        assert_eq!(s.delay_p99_ms, Some(110.0));
        assert_eq!((s.packets_arrived, s.packets_dropped, s.loss), (10, 0, 0.0));
        assert_eq!((s.packets_queued_at_end, s.bytes_queued_at_end), (2, 2000));
        assert_eq!(s.packets_departed_after, 1);
        assert_eq!(s.delay_departed_after_max_ms, Some(4009.999));
        assert_eq!(s.packets_queued_at_log_end, 1);
        assert!(s.covers_window);
        assert_eq!(s.log_end_s, 12.5);
        // Capacity: 10 opportunities (0..9 s) of 1500 bytes in 10 s.
        assert_eq!(s.capacity_mbps, 15_000.0 * 8.0 / 10e6);
        // The whole-log rule counts the late packet in its p95 (4 s) and divides by the
        // departures' span (0.1 to 12 s): a longer log changes both.
        let whole = summarize(&log.to_recording());
        assert_eq!(whole.delay_p95_ms, Some(4009.999));
        assert_ne!(whole.throughput_mbps, s.throughput_mbps);
    }

    #[test]
    fn the_same_run_with_a_longer_log_has_the_same_window_figures() {
        let short = late_backlog();
        let mut long = late_backlog();
        // The log runs on: the packet of 9 s leaves at 13 s.
        long.events.push(LogEvent::Departure { at_us: 13 * S, bytes: 1000, queued_us: 4 * S - 1 });
        let w = Window::from_secs(0.0, 10.0).unwrap();
        let (a, b) = (summarize_window(&short, w, 10_000), summarize_window(&long, w, 10_000));
        assert_eq!((a.throughput_mbps, a.delay_p95_ms), (b.throughput_mbps, b.delay_p95_ms));
        assert_eq!((b.packets_departed_after, b.packets_queued_at_log_end), (2, 0));
        assert_ne!(
            summarize(&short.to_recording()).throughput_mbps,
            summarize(&long.to_recording()).throughput_mbps
        );
    }

    #[test]
    fn a_log_shorter_than_the_window_divides_by_the_whole_window() {
        let log = late_backlog();
        let s = summarize_window(&log, Window::from_secs(0.0, 20.0).unwrap(), 10_000);
        assert!(!s.covers_window);
        // All 9 departures (9000 bytes) over the 20-s window, not over the log.
        assert_eq!(s.throughput_mbps, 9000.0 * 8.0 / 20e6);
        assert_eq!(
            (s.packets_queued_at_end, s.packets_departed_after, s.packets_queued_at_log_end),
            (1, 0, 1)
        );
        let whole = summarize(&log.to_recording());
        assert!(
            whole.throughput_mbps > 1.5 * s.throughput_mbps,
            "{} {}",
            whole.throughput_mbps,
            s.throughput_mbps
        );
    }

    #[test]
    fn drops_and_a_late_start_count_in_their_own_window() {
        // A packet before the window leaves inside it; one dropped inside; one queued across
        // the end leaves after it.
        let log = log(&[
            (0, "+ 1000"),
            (1_000, "# 1500"),
            (1_500_000, "- 1000 1500000"),
            (2 * S, "+ 500"),
            (2 * S, "d 1 500"),
            (2 * S + 10, "+ 700"),
            (3 * S + 5, "- 700 999995"),
        ]);
        let s = summarize_window(&log, Window::from_secs(1.0, 3.0).unwrap(), 0);
        assert_eq!((s.packets_departed, s.delay_p50_ms), (1, Some(1500.0)));
        assert_eq!((s.packets_arrived, s.bytes_arrived, s.packets_dropped), (2, 1200, 1));
        assert!((s.loss - 500.0 / 1200.0).abs() < 1e-12);
        assert_eq!((s.packets_queued_at_end, s.bytes_queued_at_end, s.packets_departed_after), (1, 700, 1));
        assert_eq!((s.packets_queued_at_log_end, s.capacity_mbps, s.opportunity_bytes), (0, 0.0, 0));
        assert_eq!(s.propagation_delay_ms, 0.0);
    }

    #[test]
    fn an_empty_log_is_all_zero() {
        let s = summarize_window(&Log::default(), Window::from_secs(0.0, 1.0).unwrap(), 5_000);
        assert_eq!((s.throughput_mbps, s.loss, s.delay_p95_ms, s.covers_window), (0.0, 0.0, None, false));
        assert_eq!(s.propagation_delay_ms, 5.0);
    }
}
