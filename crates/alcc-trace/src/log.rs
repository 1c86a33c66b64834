//! Mahimahi link logs: what `mm-link --uplink-log/--downlink-log` writes, and what alcc's link
//! emulator writes so that Mahimahi's tools and ours read the same files.
//!
//! # Format
//!
//! Header lines start with `#`. Mahimahi writes, in this order, `# mahimahi mm-link (LINK)
//! [TRACE] > LOG`, `# command line: ...`, `# queue: ...`, `# init timestamp: N` (the wall clock
//! in ms when the link started) and `# base timestamp: N` (when the trace's first loop
//! started, in ms after the init timestamp). Then one event per line, times in ms after the
//! init timestamp:
//!
//! | line | meaning |
//! | --- | --- |
//! | `T + BYTES` | a packet of BYTES arrived at the bottleneck queue |
//! | `T - BYTES DELAY` | a packet of BYTES left the link; it had waited DELAY ms (so it arrived at T - DELAY) |
//! | `T # BYTES` | a delivery opportunity of BYTES (1500), used or not |
//! | `T d PACKETS BYTES` | the queue dropped PACKETS packets totalling BYTES |
//!
//! # alcc's additions
//!
//! Mahimahi's DELAY is queueing delay only: the fixed propagation delay of an enclosing
//! `mm-delay` shell appears nowhere in the log. alcc records it in one more header line,
//! `# alcc propagation delay us: N`, the link's one-way propagation delay in microseconds; a
//! packet's one-way delay is then DELAY + N ([`crate::record`]). Logs without the line (those of
//! Mahimahi itself) read as propagation delay unknown ([`LogHeader::propagation_delay_us`] is
//! `None`), and the caller supplies it.
//!
//! Millisecond timestamps make delays of a few ms coarse, so a writer may instead use
//! microseconds everywhere (times and DELAY), announced by the header line `# alcc time unit:
//! us` before the first event. Mahimahi's own tools do not know that line; the default is ms.
//!
//! # Reading
//!
//! Blank lines and unknown `#` lines are skipped; event lines with a symbol other than the four
//! above are counted in [`Log::unknown_lines`] and skipped; extra fields after a known event's
//! own (some Mahimahi forks append flow ports) are ignored. A line that is neither a comment nor
//! starts with a timestamp, or a known event with a missing or non-numeric field, is an error
//! naming the file and line.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use crate::flow::FlowId;
use crate::record::{Opportunity, PacketRecord, Recording};

const PROPAGATION_KEY: &str = "alcc propagation delay us:";
const UNIT_KEY: &str = "alcc time unit:";
const INIT_KEY: &str = "init timestamp:";
const BASE_KEY: &str = "base timestamp:";
const QUEUE_KEY: &str = "queue:";

/// The resolution of the timestamps and delays in a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeUnit {
    /// Milliseconds, as Mahimahi writes.
    #[default]
    Millis,
    /// Microseconds (alcc's extension, announced in the header).
    Micros,
}

impl TimeUnit {
    fn micros_per_tick(self) -> u64 {
        match self {
            TimeUnit::Millis => 1000,
            TimeUnit::Micros => 1,
        }
    }
}

/// The header of a link log.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LogHeader {
    /// The first line after `# `, e.g. `mahimahi mm-link (downlink) [trace] > log`.
    pub title: String,
    /// The queue discipline and its limits, e.g. `droptail [bytes=2000000]`.
    pub queue: Option<String>,
    /// The wall clock, in ms since the Unix epoch, at which the log's time axis starts.
    pub init_timestamp_ms: Option<u64>,
    /// When the trace's first loop started, in ms on the log's time axis.
    pub base_timestamp_ms: Option<u64>,
    /// The link's one-way propagation delay in µs (alcc's extension; `None` in Mahimahi logs).
    pub propagation_delay_us: Option<u64>,
    /// The unit of event times and delays.
    pub unit: TimeUnit,
}

/// One event of a link log, with times converted to µs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogEvent {
    /// `T + BYTES`: a packet arrived at the bottleneck queue.
    Arrival {
        /// When.
        at_us: u64,
        /// Its size.
        bytes: u64,
    },
    /// `T - BYTES DELAY`: a packet left the link after waiting `queued_us` in it.
    Departure {
        /// When it left.
        at_us: u64,
        /// Its size.
        bytes: u64,
        /// How long it had been in the link (its arrival was `at_us - queued_us`).
        queued_us: u64,
    },
    /// `T # BYTES`: a delivery opportunity.
    Opportunity {
        /// When.
        at_us: u64,
        /// How many bytes it could carry.
        bytes: u64,
    },
    /// `T d PACKETS BYTES`: the queue dropped packets.
    Drop {
        /// When.
        at_us: u64,
        /// How many packets.
        packets: u64,
        /// How many bytes in all.
        bytes: u64,
    },
}

/// Why a log could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The file could not be read.
    #[error("{file}: {source}")]
    Io {
        /// The file, as given.
        file: String,
        /// What the operating system said.
        source: io::Error,
    },
    /// A line is malformed.
    #[error("{file}:{line}: {problem}")]
    Line {
        /// The file, as given.
        file: String,
        /// The 1-based line number.
        line: usize,
        /// What is wrong with it.
        problem: String,
    },
}

/// A parsed link log.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Log {
    /// The header fields found.
    pub header: LogHeader,
    /// The events, in file order.
    pub events: Vec<LogEvent>,
    /// How many event lines had a symbol this reader does not know (they were skipped).
    pub unknown_lines: usize,
}

/// Calls `parse` on every line of `input` (1-based, for errors), stopping at the first error,
/// which names `name` and the line; a read error names `name`. Shared by [`Log::parse`] and
/// [`crate::flow::FlowLog::parse`].
pub(crate) fn each_line(
    name: impl Into<String>,
    input: &mut impl BufRead,
    mut parse: impl FnMut(&[u8]) -> Result<(), String>,
) -> Result<(), LogError> {
    let name = name.into();
    let mut buf = Vec::new();
    let mut line_no = 0;
    loop {
        buf.clear();
        let n = input
            .read_until(b'\n', &mut buf)
            .map_err(|source| LogError::Io { file: name.clone(), source })?;
        if n == 0 {
            return Ok(());
        }
        line_no += 1;
        parse(&buf).map_err(|problem| LogError::Line { file: name.clone(), line: line_no, problem })?;
    }
}

impl Log {
    /// Reads a log file; errors name the path as given.
    pub fn read_file(path: impl AsRef<Path>) -> Result<Log, LogError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let file = File::open(path).map_err(|source| LogError::Io { file: name.clone(), source })?;
        Log::parse(name, BufReader::new(file))
    }

    /// Parses a log from any buffered reader; `name` is used in error messages.
    pub fn parse(name: impl Into<String>, mut input: impl BufRead) -> Result<Log, LogError> {
        let mut log = Log::default();
        each_line(name, &mut input, |line| log.parse_line(line))?;
        Ok(log)
    }

    pub(crate) fn parse_line(&mut self, line: &[u8]) -> Result<(), String> {
        let line = line.trim_ascii();
        let Some(&first) = line.first() else { return Ok(()) };
        if first == b'#' {
            return self.parse_header(String::from_utf8_lossy(&line[1..]).trim());
        }
        let scale = self.header.unit.micros_per_tick();
        let mut fields = line.split(u8::is_ascii_whitespace).filter(|f| !f.is_empty());
        let number = |what: &str, field: Option<&[u8]>| -> Result<u64, String> {
            let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
            let field = field.ok_or_else(|| format!("missing {what} in {:?}", text(line)))?;
            parse_decimal(field).ok_or_else(|| format!("{what} {:?} is not an unsigned integer", text(field)))
        };
        let at_us = number("timestamp", fields.next())?.saturating_mul(scale);
        let Some(symbol) = fields.next() else {
            return Err(format!("missing event symbol in {:?}", String::from_utf8_lossy(line)));
        };
        let mut number = |what: &str| number(what, fields.next());
        let event = match symbol {
            b"+" => LogEvent::Arrival { at_us, bytes: number("size")? },
            b"-" => {
                let bytes = number("size")?;
                let queued_us = number("delay")?.saturating_mul(scale);
                LogEvent::Departure { at_us, bytes, queued_us }
            }
            b"#" => LogEvent::Opportunity { at_us, bytes: number("size")? },
            b"d" => {
                let packets = number("packet count")?;
                LogEvent::Drop { at_us, packets, bytes: number("size")? }
            }
            _ => {
                self.unknown_lines += 1;
                return Ok(());
            }
        };
        self.events.push(event);
        Ok(())
    }

    fn parse_header(&mut self, comment: &str) -> Result<(), String> {
        let number = |rest: &str, what: &str| -> Result<u64, String> {
            rest.trim()
                .parse::<u64>()
                .map_err(|_| format!("{what} {:?} is not an unsigned integer", rest.trim()))
        };
        if let Some(rest) = comment.strip_prefix(PROPAGATION_KEY) {
            self.header.propagation_delay_us = Some(number(rest, "propagation delay")?);
        } else if let Some(rest) = comment.strip_prefix(UNIT_KEY) {
            if !self.events.is_empty() {
                return Err("the time unit may not change after the first event".into());
            }
            self.header.unit = match rest.trim() {
                "ms" => TimeUnit::Millis,
                "us" => TimeUnit::Micros,
                other => return Err(format!("unknown time unit {other:?} (expected ms or us)")),
            };
        } else if let Some(rest) = comment.strip_prefix(INIT_KEY) {
            self.header.init_timestamp_ms = Some(number(rest, "init timestamp")?);
        } else if let Some(rest) = comment.strip_prefix(BASE_KEY) {
            self.header.base_timestamp_ms = Some(number(rest, "base timestamp")?);
        } else if let Some(rest) = comment.strip_prefix(QUEUE_KEY) {
            self.header.queue = Some(rest.trim().to_string());
        } else if self.header.title.is_empty() && self.events.is_empty() {
            self.header.title = comment.to_string();
        }
        Ok(())
    }

    /// The per-packet view of this log for [`crate::metrics`].
    ///
    /// Every arrival becomes a packet; each departure is matched to the earliest unmatched
    /// arrival of the same size at `T - DELAY` (exact for any queue discipline, since Mahimahi
    /// computes DELAY from the same clock readings). A departure without such an arrival (a log
    /// that starts mid-flow) becomes a packet of its own, sent at `T - DELAY`. Arrivals never
    /// matched were dropped or still queued when the log ended. Drop lines add nothing: dropped
    /// packets are the unmatched arrivals. The propagation delay is the header's, or 0.
    pub fn to_recording(&self) -> Recording {
        let mut recording = Recording {
            propagation_delay_us: self.header.propagation_delay_us.unwrap_or(0),
            ..Recording::default()
        };
        let mut waiting: HashMap<(u64, u64), VecDeque<usize>> = HashMap::new();
        for event in &self.events {
            match *event {
                LogEvent::Arrival { at_us, bytes } => {
                    waiting.entry((at_us, bytes)).or_default().push_back(recording.packets.len());
                    recording.packets.push(PacketRecord { bytes, sent_us: at_us, departed_us: None });
                }
                LogEvent::Departure { at_us, bytes, queued_us } => {
                    let sent_us = at_us.saturating_sub(queued_us);
                    let matched = waiting.get_mut(&(sent_us, bytes)).and_then(|q| q.pop_front());
                    match matched.and_then(|i| recording.packets.get_mut(i)) {
                        Some(packet) => packet.departed_us = Some(at_us),
                        None => {
                            recording.packets.push(PacketRecord { bytes, sent_us, departed_us: Some(at_us) })
                        }
                    }
                }
                LogEvent::Opportunity { at_us, bytes } => {
                    recording.opportunities.push(Opportunity { at_us, bytes });
                }
                LogEvent::Drop { .. } => {}
            }
        }
        recording
    }
}

/// A buffered writer of link logs, cheap per event (no allocation, no formatting machinery).
///
/// Times are passed in µs on the log's axis and written in the header's [`TimeUnit`]
/// (truncated to whole ms for [`TimeUnit::Millis`]). Call [`LogWriter::flush`] (or
/// [`LogWriter::finish`]) at the end: a buffered writer dropped unflushed may lose its tail.
#[derive(Debug)]
pub struct LogWriter<W: Write> {
    out: BufWriter<W>,
    scale: u64,
}

impl<W: Write> LogWriter<W> {
    /// Starts a log: writes the header lines (title, queue, init and base timestamps, and alcc's
    /// propagation-delay and time-unit lines when set) to `out`. Mahimahi's own plotting tools
    /// expect the init and base timestamps, so a link emulator should set both.
    pub fn new(out: W, header: &LogHeader) -> io::Result<LogWriter<W>> {
        let mut out = BufWriter::with_capacity(64 * 1024, out);
        // A newline inside a header text would start a line of its own: flatten it.
        let one_line = |text: &str| text.replace(['\n', '\r'], " ");
        writeln!(out, "# {}", one_line(&header.title))?;
        if let Some(queue) = &header.queue {
            writeln!(out, "# {QUEUE_KEY} {}", one_line(queue))?;
        }
        if let Some(init) = header.init_timestamp_ms {
            writeln!(out, "# {INIT_KEY} {init}")?;
        }
        if let Some(base) = header.base_timestamp_ms {
            writeln!(out, "# {BASE_KEY} {base}")?;
        }
        if let Some(delay) = header.propagation_delay_us {
            writeln!(out, "# {PROPAGATION_KEY} {delay}")?;
        }
        if header.unit == TimeUnit::Micros {
            writeln!(out, "# {UNIT_KEY} us")?;
        }
        Ok(LogWriter { out, scale: header.unit.micros_per_tick() })
    }

    /// `T + BYTES`: a packet arrived at the bottleneck queue.
    pub fn arrival(&mut self, at_us: u64, bytes: u64) -> io::Result<()> {
        self.event(at_us, b'+', &[bytes])
    }

    /// `T - BYTES DELAY`: a packet that arrived at `arrived_us` left at `at_us`. DELAY is
    /// computed from the two times as written, so a reader matches it to its arrival line.
    pub fn departure(&mut self, at_us: u64, bytes: u64, arrived_us: u64) -> io::Result<()> {
        let delay = (at_us / self.scale).saturating_sub(arrived_us / self.scale);
        self.event(at_us, b'-', &[bytes, delay])
    }

    /// `T # BYTES`: a delivery opportunity.
    pub fn opportunity(&mut self, at_us: u64, bytes: u64) -> io::Result<()> {
        self.event(at_us, b'#', &[bytes])
    }

    /// `T d PACKETS BYTES`: the queue dropped packets.
    pub fn drop_packets(&mut self, at_us: u64, packets: u64, bytes: u64) -> io::Result<()> {
        self.event(at_us, b'd', &[packets, bytes])
    }

    /// `T + BYTES FLOW`: an arrival in a flow log ([`crate::flow`]).
    pub fn arrival_of(&mut self, at_us: u64, bytes: u64, flow: &FlowId) -> io::Result<()> {
        self.line(at_us, b'+', &[bytes], Some(flow))
    }

    /// `T - BYTES DELAY FLOW`: a departure in a flow log.
    pub fn departure_of(&mut self, at_us: u64, bytes: u64, arrived_us: u64, flow: &FlowId) -> io::Result<()> {
        let delay = (at_us / self.scale).saturating_sub(arrived_us / self.scale);
        self.line(at_us, b'-', &[bytes, delay], Some(flow))
    }

    /// `T d 1 BYTES FLOW`: one packet dropped, in a flow log.
    pub fn drop_of(&mut self, at_us: u64, bytes: u64, flow: &FlowId) -> io::Result<()> {
        self.line(at_us, b'd', &[1, bytes], Some(flow))
    }

    /// Flushes buffered lines to the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flushes and returns the underlying writer.
    pub fn finish(self) -> io::Result<W> {
        self.out.into_inner().map_err(|e| e.into_error())
    }

    fn event(&mut self, at_us: u64, symbol: u8, fields: &[u64]) -> io::Result<()> {
        self.line(at_us, symbol, fields, None)
    }

    /// One event line, with the flow field of a flow log when `flow` is given.
    fn line(&mut self, at_us: u64, symbol: u8, fields: &[u64], flow: Option<&FlowId>) -> io::Result<()> {
        // One line is at most 4 numbers of 20 digits, 4 spaces, a symbol and a newline: 86 bytes.
        let mut line = [0u8; 96];
        let mut len = put_decimal(at_us / self.scale, &mut line, 0);
        line[len] = b' ';
        line[len + 1] = symbol;
        len += 2;
        for &field in fields.iter().take(3) {
            line[len] = b' ';
            len = put_decimal(field, &mut line, len + 1);
        }
        match flow {
            None => {
                line[len] = b'\n';
                self.out.write_all(&line[..=len])
            }
            Some(flow) => {
                self.out.write_all(&line[..len])?;
                writeln!(self.out, " {flow}")
            }
        }
    }
}

/// Writes the decimal digits of `value` into `line` from `at`; returns the index after them.
fn put_decimal(value: u64, line: &mut [u8; 96], at: usize) -> usize {
    let mut digits = [0u8; 20];
    let text = decimal(value, &mut digits);
    line[at..at + text.len()].copy_from_slice(text);
    at + text.len()
}

/// An unsigned decimal made of ASCII digits only, or `None` (empty, other bytes, overflow).
fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |value, &b| {
        let digit = b.checked_sub(b'0').filter(|d| *d < 10)?;
        value.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

/// The decimal digits of `value`, written at the end of `buf`.
fn decimal(mut value: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut start = buf.len();
    loop {
        start -= 1;
        buf[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            return &buf[start..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MAHIMAHI_LOG: &str = "\
# mahimahi mm-link (downlink) [/traces/x.down] > /tmp/down.log
# command line: mm-link x.up x.down --downlink-log=/tmp/down.log
# queue: droptail [bytes=150000]
# init timestamp: 1700000000000
# base timestamp: 0
0 # 1500
1 + 1400
1 # 1500
2 + 1400
3 + 100
3 # 1500
3 - 1400 2
4 # 1500
4 - 1400 2
4 - 100 1
5 d 1 1500
6 ? strange future event
";

    #[test]
    fn reads_a_mahimahi_log() {
        let log = Log::parse("down.log", MAHIMAHI_LOG.as_bytes()).unwrap();
        assert_eq!(log.header.title, "mahimahi mm-link (downlink) [/traces/x.down] > /tmp/down.log");
        assert_eq!(log.header.queue.as_deref(), Some("droptail [bytes=150000]"));
        assert_eq!(log.header.init_timestamp_ms, Some(1_700_000_000_000));
        assert_eq!(log.header.base_timestamp_ms, Some(0));
        assert_eq!(log.header.propagation_delay_us, None);
        assert_eq!(log.unknown_lines, 1);
        assert_eq!(log.events.len(), 11);
        assert_eq!(log.events[6], LogEvent::Departure { at_us: 3000, bytes: 1400, queued_us: 2000 });
        assert_eq!(log.events[10], LogEvent::Drop { at_us: 5000, packets: 1, bytes: 1500 });

        let r = log.to_recording();
        assert_eq!(r.propagation_delay_us, 0);
        assert_eq!(r.opportunities.len(), 4);
        assert_eq!(
            r.packets,
            vec![
                PacketRecord { bytes: 1400, sent_us: 1000, departed_us: Some(3000) },
                PacketRecord { bytes: 1400, sent_us: 2000, departed_us: Some(4000) },
                PacketRecord { bytes: 100, sent_us: 3000, departed_us: Some(4000) },
            ]
        );
    }

    #[test]
    fn malformed_lines_name_file_and_line() {
        let cases = [
            ("1 + 1400\n2 - 1400\n", "x.log:2: missing delay in \"2 - 1400\""),
            ("1 + abc\n", "x.log:1: size \"abc\" is not an unsigned integer"),
            ("# x\nhello world\n", "x.log:2: timestamp \"hello\" is not an unsigned integer"),
            ("5\n", "x.log:1: missing event symbol in \"5\""),
            ("1 + 5\n# alcc time unit: us\n", "x.log:2: the time unit may not change after the first event"),
            (
                "# alcc propagation delay us: ten\n",
                "x.log:1: propagation delay \"ten\" is not an unsigned integer",
            ),
        ];
        for (text, message) in cases {
            let e = Log::parse("x.log", text.as_bytes()).unwrap_err();
            assert_eq!(e.to_string(), message);
        }
    }

    #[test]
    fn writer_round_trips_in_ms_and_us() {
        for unit in [TimeUnit::Millis, TimeUnit::Micros] {
            let header = LogHeader {
                title: "alcc-link (downlink) [cell.trace]".into(),
                queue: Some("droptail [bytes=2000000]".into()),
                init_timestamp_ms: Some(42),
                base_timestamp_ms: Some(0),
                propagation_delay_us: Some(10_000),
                unit,
            };
            let mut w = LogWriter::new(Vec::new(), &header).unwrap();
            w.arrival(1_250, 1500).unwrap();
            w.opportunity(3_000, 1500).unwrap();
            w.departure(3_000, 1500, 1_250).unwrap();
            w.drop_packets(3_500, 2, 3000).unwrap();
            let bytes = w.finish().unwrap();
            let log = Log::parse("w", bytes.as_slice()).unwrap();
            assert_eq!(log.header, header);
            let r = log.to_recording();
            assert_eq!(r.propagation_delay_us, 10_000);
            let p = r.packets[0];
            match unit {
                TimeUnit::Millis => {
                    let text = String::from_utf8(bytes).unwrap();
                    assert!(text.ends_with("1 + 1500\n3 # 1500\n3 - 1500 2\n3 d 2 3000\n"), "{text}");
                    assert_eq!((p.sent_us, p.departed_us), (1_000, Some(3_000)));
                }
                TimeUnit::Micros => assert_eq!((p.sent_us, p.departed_us), (1_250, Some(3_000))),
            }
        }
    }

    #[test]
    fn header_texts_stay_on_one_line() {
        let header =
            LogHeader { title: "a\nb".into(), queue: Some("q\r\n1 + 5".into()), ..LogHeader::default() };
        let text = LogWriter::new(Vec::new(), &header).unwrap().finish().unwrap();
        let log = Log::parse("h", text.as_slice()).unwrap();
        assert_eq!(log.header.title, "a b");
        assert!(log.events.is_empty());
    }

    #[test]
    fn decimal_formats_extremes() {
        let mut buf = [0u8; 20];
        assert_eq!(decimal(0, &mut buf), b"0");
        assert_eq!(decimal(1500, &mut buf), b"1500");
        assert_eq!(decimal(u64::MAX, &mut buf), u64::MAX.to_string().as_bytes());
    }

    proptest! {
        #[test]
        fn never_panics_on_random_input(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(log) = Log::parse("fuzz", bytes.as_slice()) {
                let _ = log.to_recording();
            }
        }

        #[test]
        fn written_events_read_back(
            micros in any::<bool>(),
            events in proptest::collection::vec((0u8..4, 0u64..1u64 << 40, 0u64..100_000, 0u64..1u64 << 40), 0..50),
        ) {
            let unit = if micros { TimeUnit::Micros } else { TimeUnit::Millis };
            let header = LogHeader { title: "p".into(), unit, ..LogHeader::default() };
            let mut w = LogWriter::new(Vec::new(), &header).unwrap();
            let mut expected = Vec::new();
            let scale = unit.micros_per_tick();
            for &(kind, at_us, bytes, earlier_us) in &events {
                let at = at_us / scale * scale;
                expected.push(match kind {
                    0 => { w.arrival(at_us, bytes).unwrap(); LogEvent::Arrival { at_us: at, bytes } }
                    1 => { w.opportunity(at_us, bytes).unwrap(); LogEvent::Opportunity { at_us: at, bytes } }
                    2 => { w.drop_packets(at_us, bytes / 1000, bytes).unwrap(); LogEvent::Drop { at_us: at, packets: bytes / 1000, bytes } }
                    _ => {
                        let arrived = at_us.min(earlier_us);
                        w.departure(at_us, bytes, arrived).unwrap();
                        LogEvent::Departure { at_us: at, bytes, queued_us: at - arrived / scale * scale }
                    }
                });
            }
            let log = Log::parse("p", w.finish().unwrap().as_slice()).unwrap();
            prop_assert_eq!(log.events, expected);
            prop_assert_eq!(log.header, header);
        }

        #[test]
        fn never_panics_on_log_like_input(text in "([0-9]{1,3} [-+#d?]( [0-9]{1,4}){0,3}\n){0,20}") {
            if let Ok(log) = Log::parse("fuzz", text.as_bytes()) {
                let r = log.to_recording();
                prop_assert!(r.packets.len() <= log.events.len());
            }
        }
    }
}
