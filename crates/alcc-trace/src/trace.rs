//! Mahimahi packet-delivery traces.
//!
//! A trace is a text file with one unsigned integer per line: the millisecond, counted from the
//! start of the trace, at which one [`PACKET_BYTES`]-byte packet may leave the link. A number
//! repeated `k` times means `k` packets in that millisecond. The link replays the trace in a
//! loop whose period is the last timestamp: the opportunities of loop `k` are the trace's
//! timestamps plus `k x period` (so a trace whose first line is `0` and last line is `P` has
//! two opportunities at `P`, one from each loop, exactly as Mahimahi's `LinkQueue` does).
//!
//! # What is accepted
//!
//! The same files Mahimahi's `mm-link` accepts, and nothing more: every line is a decimal
//! number made of ASCII digits only (no sign, no spaces, no carriage return), the numbers are
//! non-decreasing, there is at least one, and the last is greater than zero. A blank line is an
//! error, as in Mahimahi; a missing newline after the last line is fine. Any trace this module
//! accepts therefore also runs unchanged in Mahimahi. Errors name the file and the 1-based line:
//! `trace.txt:17: timestamp 40 is before the previous one (41)`.

use std::fmt;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Bytes one delivery opportunity may carry (Mahimahi's `PACKET_SIZE`).
pub const PACKET_BYTES: u64 = 1500;

/// Why a trace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be read or written.
    #[error("{file}: {source}")]
    Io {
        /// The file, as given.
        file: String,
        /// What the operating system said.
        source: io::Error,
    },
    /// One line is not acceptable.
    #[error("{file}:{line}: {problem}")]
    Line {
        /// The file, as given.
        file: String,
        /// The 1-based line number.
        line: usize,
        /// What is wrong with it.
        problem: LineProblem,
    },
    /// The trace has no timestamp at all.
    #[error("{file}: the trace holds no timestamp")]
    Empty {
        /// The file, as given.
        file: String,
    },
    /// The last timestamp is 0, so the loop would have no length.
    #[error("{file}: the trace must last more than 0 ms (its last timestamp is 0)")]
    ZeroPeriod {
        /// The file, as given.
        file: String,
    },
}

/// What is wrong with one line of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineProblem {
    /// The line is empty (Mahimahi rejects empty lines too).
    Blank,
    /// The line is not a decimal number of ASCII digits, or too large for 64 bits.
    NotATimestamp(String),
    /// The timestamp is smaller than the one on the line before.
    Decreasing {
        /// This line's timestamp.
        value: u64,
        /// The previous line's timestamp.
        previous: u64,
    },
}

impl fmt::Display for LineProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineProblem::Blank => write!(f, "empty line (expected a timestamp in ms)"),
            LineProblem::NotATimestamp(text) => {
                write!(f, "{text:?} is not a timestamp (expected an unsigned integer of ms)")
            }
            LineProblem::Decreasing { value, previous } => {
                write!(f, "timestamp {value} is before the previous one ({previous})")
            }
        }
    }
}

/// A validated packet-delivery trace: non-empty, non-decreasing, lasting more than 0 ms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    name: String,
    opportunities: Vec<u64>,
}

impl Trace {
    /// A trace from delivery-opportunity times in ms, validated like a file; `name` is used in
    /// error messages (line numbers are the 1-based positions in `opportunities_ms`).
    pub fn new(name: impl Into<String>, opportunities_ms: Vec<u64>) -> Result<Trace, TraceError> {
        let name = name.into();
        for (i, pair) in opportunities_ms.windows(2).enumerate() {
            if pair[1] < pair[0] {
                return Err(TraceError::Line {
                    file: name,
                    line: i + 2,
                    problem: LineProblem::Decreasing { value: pair[1], previous: pair[0] },
                });
            }
        }
        match opportunities_ms.last() {
            None => Err(TraceError::Empty { file: name }),
            Some(0) => Err(TraceError::ZeroPeriod { file: name }),
            Some(_) => Ok(Trace { name, opportunities: opportunities_ms }),
        }
    }

    /// A trace whose validity the caller guarantees (generators); checked in debug builds.
    pub(crate) fn from_valid(name: String, opportunities_ms: Vec<u64>) -> Trace {
        debug_assert!(opportunities_ms.windows(2).all(|w| w[0] <= w[1]));
        debug_assert!(opportunities_ms.last().is_some_and(|&t| t > 0));
        Trace { name, opportunities: opportunities_ms }
    }

    /// Reads and validates a trace file; the trace's name is the path as given.
    pub fn parse_file(path: impl AsRef<Path>) -> Result<Trace, TraceError> {
        let path = path.as_ref();
        let file = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| TraceError::Io { file: file.clone(), source })?;
        Trace::parse_bytes(file, &bytes)
    }

    /// Parses and validates trace text; `name` is used in error messages.
    pub fn parse_str(name: impl Into<String>, text: &str) -> Result<Trace, TraceError> {
        Trace::parse_bytes(name, text.as_bytes())
    }

    /// Parses and validates trace bytes (which need not be UTF-8 to be rejected cleanly).
    pub fn parse_bytes(name: impl Into<String>, bytes: &[u8]) -> Result<Trace, TraceError> {
        let name = name.into();
        // A final newline ends the last line; it does not start an empty one.
        let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        if body.is_empty() {
            return Err(match bytes.is_empty() {
                true => TraceError::Empty { file: name },
                false => TraceError::Line { file: name, line: 1, problem: LineProblem::Blank },
            });
        }
        let mut opportunities: Vec<u64> = Vec::with_capacity(body.len() / 6 + 1);
        for (i, line) in body.split(|&b| b == b'\n').enumerate() {
            let fail = |problem| TraceError::Line { file: name.clone(), line: i + 1, problem };
            let value = parse_timestamp(line).map_err(fail)?;
            if let Some(&previous) = opportunities.last() {
                if value < previous {
                    return Err(fail(LineProblem::Decreasing { value, previous }));
                }
            }
            opportunities.push(value);
        }
        Trace::new(name, opportunities)
    }

    /// Writes the trace in Mahimahi's format (one timestamp per line, each ending in a newline).
    pub fn write<W: Write>(&self, out: W) -> io::Result<()> {
        let mut out = BufWriter::new(out);
        for t in &self.opportunities {
            writeln!(out, "{t}")?;
        }
        out.flush()
    }

    /// Writes the trace to a file, creating or truncating it.
    pub fn write_file(&self, path: impl AsRef<Path>) -> Result<(), TraceError> {
        let path = path.as_ref();
        let io_err = |source| TraceError::Io { file: path.display().to_string(), source };
        let file = std::fs::File::create(path).map_err(io_err)?;
        self.write(file).map_err(io_err)
    }

    /// The name given when the trace was made (a file's path as given).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The delivery opportunities of one loop, in ms from the start of the loop.
    pub fn opportunities_ms(&self) -> &[u64] {
        &self.opportunities
    }

    /// The loop period in ms: the last timestamp (always > 0).
    pub fn period_ms(&self) -> u64 {
        self.opportunities.last().copied().unwrap_or(1)
    }

    /// Bytes one loop can deliver: opportunities x [`PACKET_BYTES`].
    pub fn bytes_per_period(&self) -> u64 {
        self.opportunities.len() as u64 * PACKET_BYTES
    }

    /// Mean capacity in Mbit/s: opportunities x 1500 x 8 bits / period.
    pub fn mean_rate_mbps(&self) -> f64 {
        // bits per ms = kbit/s; / 1000 = Mbit/s.
        self.bytes_per_period() as f64 * 8.0 / self.period_ms() as f64 / 1000.0
    }

    /// How many opportunities of the looped trace fall strictly before `t_ms`.
    pub fn opportunities_before(&self, t_ms: u64) -> u64 {
        let period = self.period_ms();
        let n = self.opportunities.len() as u64;
        let (q, r) = (t_ms / period, t_ms % period);
        // Loops 0..q-1 lie entirely before t except, for loop q-1, timestamps >= period + r; loops
        // before q-1 end at most at (q-1) x period < t. Loop q contributes timestamps below r.
        let lower = |x: u64| self.opportunities.partition_point(|&s| s < x) as u64;
        let full_loops = q.saturating_sub(1).saturating_mul(n);
        let loop_before = if q >= 1 { lower(period.saturating_add(r)) } else { 0 };
        full_loops.saturating_add(loop_before).saturating_add(lower(r))
    }

    /// Bytes the looped link can deliver in the span `[from_ms, to_ms)` (0 if `to_ms <= from_ms`).
    pub fn capacity_bytes(&self, from_ms: u64, to_ms: u64) -> u64 {
        if to_ms <= from_ms {
            return 0;
        }
        let count = self.opportunities_before(to_ms) - self.opportunities_before(from_ms);
        count.saturating_mul(PACKET_BYTES)
    }

    /// The looped trace's opportunity times in ms, from `start_ms` (inclusive) on, forever
    /// (until the times would exceed `u64::MAX`).
    pub fn opportunities_from(&self, start_ms: u64) -> LoopedOpportunities<'_> {
        let period = self.period_ms();
        // An opportunity at `start` may come from the loop before (a timestamp equal to the period).
        let first_loop = (start_ms / period).saturating_sub(1);
        let mut it = LoopedOpportunities { trace: self, base: first_loop * period, index: 0 };
        it.index = self.opportunities.partition_point(|&s| s < start_ms - it.base);
        if it.index == self.opportunities.len() {
            // Everything left in that loop is before `start`: begin in the next one.
            it.base += period;
            it.index = self.opportunities.partition_point(|&s| s < start_ms - it.base);
        }
        it
    }
}

fn parse_timestamp(line: &[u8]) -> Result<u64, LineProblem> {
    if line.is_empty() {
        return Err(LineProblem::Blank);
    }
    let not_a_timestamp = || LineProblem::NotATimestamp(String::from_utf8_lossy(line).into_owned());
    let mut value: u64 = 0;
    for &b in line {
        if !b.is_ascii_digit() {
            return Err(not_a_timestamp());
        }
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or_else(not_a_timestamp)?;
    }
    Ok(value)
}

/// The looped opportunity times of a [`Trace`], in ms, in order; see [`Trace::opportunities_from`].
#[derive(Debug, Clone)]
pub struct LoopedOpportunities<'a> {
    trace: &'a Trace,
    base: u64,
    index: usize,
}

impl Iterator for LoopedOpportunities<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let opportunities = &self.trace.opportunities;
        if self.index >= opportunities.len() {
            self.base = self.base.checked_add(self.trace.period_ms())?;
            self.index = 0;
        }
        let t = self.base.checked_add(opportunities[self.index])?;
        self.index += 1;
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn trace(ms: &[u64]) -> Trace {
        Trace::new("t", ms.to_vec()).unwrap()
    }

    #[test]
    fn parses_repeats_and_missing_final_newline() {
        let t = Trace::parse_str("a.trace", "1\n1\n3\n4").unwrap();
        assert_eq!(t.opportunities_ms(), &[1, 1, 3, 4]);
        assert_eq!(t.period_ms(), 4);
        assert_eq!(t.name(), "a.trace");
        assert_eq!(Trace::parse_str("a", "0\n7\n").unwrap().opportunities_ms(), &[0, 7]);
    }

    #[test]
    fn errors_name_file_and_line() {
        let text = "1\n2\n41\n40\n";
        let e = Trace::parse_str("trace.txt", text).unwrap_err();
        assert_eq!(e.to_string(), "trace.txt:4: timestamp 40 is before the previous one (41)");
        let e = Trace::parse_str("x", "1\n\n2\n").unwrap_err();
        assert_eq!(e.to_string(), "x:2: empty line (expected a timestamp in ms)");
        let e = Trace::parse_str("x", "1\n2\r\n").unwrap_err();
        assert!(e.to_string().starts_with("x:2: \"2\\r\" is not a timestamp"), "{e}");
        let e = Trace::parse_str("x", "-1\n").unwrap_err();
        assert!(e.to_string().starts_with("x:1: "), "{e}");
        let e = Trace::parse_str("x", "99999999999999999999\n").unwrap_err();
        assert!(matches!(e, TraceError::Line { line: 1, problem: LineProblem::NotATimestamp(_), .. }));
        assert!(matches!(Trace::parse_str("x", ""), Err(TraceError::Empty { .. })));
        assert!(matches!(Trace::parse_str("x", "\n"), Err(TraceError::Line { line: 1, .. })));
        assert!(matches!(Trace::parse_str("x", "0\n0\n"), Err(TraceError::ZeroPeriod { .. })));
        let e = Trace::parse_file("/nonexistent/dir/t.trace").unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/dir/t.trace: "), "{e}");
    }

    #[test]
    fn mean_rate_is_packets_times_12_kbit_per_ms() {
        // One packet per ms = 1500 x 8 bits / 1 ms = 12 Mbit/s.
        assert_eq!(trace(&[1]).mean_rate_mbps(), 12.0);
        // 4 packets in 4 ms = 12 Mbit/s; 3 packets in 4 ms = 9 Mbit/s.
        assert!((trace(&[1, 1, 3, 4]).mean_rate_mbps() - 12.0).abs() < 1e-12);
        assert!((trace(&[1, 3, 4]).mean_rate_mbps() - 9.0).abs() < 1e-12);
    }

    #[test]
    fn looped_iteration_and_capacity() {
        let t = trace(&[0, 2, 2, 5]);
        let from0: Vec<u64> = t.opportunities_from(0).take(9).collect();
        // Loop 0: 0 2 2 5; loop 1: 5 7 7 10; loop 2: 10 ...
        assert_eq!(from0, vec![0, 2, 2, 5, 5, 7, 7, 10, 10]);
        let from5: Vec<u64> = t.opportunities_from(5).take(4).collect();
        assert_eq!(from5, vec![5, 5, 7, 7]);
        let from6: Vec<u64> = t.opportunities_from(6).take(3).collect();
        assert_eq!(from6, vec![7, 7, 10]);
        assert_eq!(t.opportunities_before(0), 0);
        assert_eq!(t.opportunities_before(1), 1);
        assert_eq!(t.opportunities_before(5), 3);
        assert_eq!(t.opportunities_before(6), 5);
        assert_eq!(t.opportunities_before(11), 9);
        assert_eq!(t.capacity_bytes(5, 8), 4 * PACKET_BYTES);
        assert_eq!(t.capacity_bytes(8, 5), 0);
    }

    #[test]
    fn write_then_parse_round_trips() {
        let t = trace(&[3, 3, 9, 12]);
        let mut out = Vec::new();
        t.write(&mut out).unwrap();
        assert_eq!(out, b"3\n3\n9\n12\n");
        let back = Trace::parse_bytes("t", &out).unwrap();
        assert_eq!(back, t);
    }

    proptest! {
        #[test]
        fn never_panics_on_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = Trace::parse_bytes("fuzz", &bytes);
        }

        #[test]
        fn never_panics_on_digit_soup(text in "[0-9\n]{0,40}") {
            if let Ok(t) = Trace::parse_str("fuzz", &text) {
                prop_assert!(t.period_ms() > 0);
                prop_assert!(t.opportunities_ms().windows(2).all(|w| w[0] <= w[1]));
            }
        }

        #[test]
        fn counting_matches_iteration(
            mut ms in proptest::collection::vec(0u64..50, 1..20),
            from in 0u64..400,
            len in 0u64..400,
        ) {
            ms.sort_unstable();
            if *ms.last().unwrap() == 0 { ms.push(1); }
            let t = Trace::new("p", ms).unwrap();
            let to = from + len;
            let counted = t.opportunities_from(from).take_while(|&x| x < to).count() as u64;
            prop_assert_eq!(t.capacity_bytes(from, to), counted * PACKET_BYTES);
            let looped: Vec<u64> = t.opportunities_from(from).take(50).collect();
            prop_assert!(looped.windows(2).all(|w| w[0] <= w[1]), "time never goes backwards");
            prop_assert!(looped.iter().all(|&x| x >= from));
            let before = t.opportunities_from(0).take_while(|&x| x < from).count() as u64;
            prop_assert_eq!(t.opportunities_before(from), before);
        }
    }
}
