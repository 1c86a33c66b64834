//! Flow logs: a link log whose packet lines name the packet's flow, so that one link's
//! measurement can be split per flow (issue 14, several flows over one bottleneck).
//!
//! # Format
//!
//! A flow log is a link log ([`crate::log`]) in microseconds (`# alcc time unit: us`) whose
//! arrival (`+`), departure (`-`) and drop (`d`) lines carry one more field, the packet's flow
//! ([`FlowId`]'s text: `tcp:9000:40001` is TCP from port 9000 to port 40001, `udp:...`,
//! `icmp`, `ip:N` for another IP protocol N, `frag` for a non-first IPv4 fragment, `other`
//! for what is not IPv4); opportunity lines (`#`) carry none. The Mahimahi-format log beside it
//! is unchanged (Mahimahi's tools read it as before), and a flow log reads as an ordinary log
//! too: [`crate::Log`] ignores the extra field.
//!
//! [`FlowLog`] reads one back: the opportunities once, and each flow's events apart, from which
//! [`FlowLog::recording`] makes the [`Recording`] of one flow or of several together.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::log::{each_line, Log, LogError, LogEvent, LogHeader};
use crate::record::{Opportunity, Recording};

/// IP protocol numbers of TCP and UDP.
const TCP: u8 = 6;
const UDP: u8 = 17;
const ICMP: u8 = 1;

/// The flow of one packet, from its IPv4 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FlowId {
    /// TCP or UDP (by protocol number) with its source and destination ports.
    Ports {
        /// 6 (TCP) or 17 (UDP).
        protocol: u8,
        /// Source port.
        src: u16,
        /// Destination port.
        dst: u16,
    },
    /// ICMP.
    Icmp,
    /// Another IP protocol.
    Ip(u8),
    /// A fragment after the first (no transport header).
    Fragment,
    /// Not an IPv4 packet.
    Other,
}

impl FlowId {
    /// The flow of an IPv4 packet (RFC 791's header: version, IHL, fragment offset, protocol;
    /// then the transport header's two ports, RFC 793 / RFC 768).
    pub fn of_ipv4(packet: &[u8]) -> FlowId {
        if packet.len() < 20 || packet[0] >> 4 != 4 {
            return FlowId::Other;
        }
        let ihl = usize::from(packet[0] & 0x0f) * 4;
        let fragment_offset = (u16::from(packet[6] & 0x1f) << 8) | u16::from(packet[7]);
        let protocol = packet[9];
        if fragment_offset != 0 {
            return FlowId::Fragment;
        }
        match protocol {
            TCP | UDP if packet.len() >= ihl + 4 && ihl >= 20 => FlowId::Ports {
                protocol,
                src: u16::from_be_bytes([packet[ihl], packet[ihl + 1]]),
                dst: u16::from_be_bytes([packet[ihl + 2], packet[ihl + 3]]),
            },
            ICMP => FlowId::Icmp,
            p => FlowId::Ip(p),
        }
    }
}

impl fmt::Display for FlowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlowId::Ports { protocol: TCP, src, dst } => write!(f, "tcp:{src}:{dst}"),
            FlowId::Ports { protocol: UDP, src, dst } => write!(f, "udp:{src}:{dst}"),
            FlowId::Ports { protocol, src, dst } => write!(f, "ip{protocol}:{src}:{dst}"),
            FlowId::Icmp => f.write_str("icmp"),
            FlowId::Ip(p) => write!(f, "ip:{p}"),
            FlowId::Fragment => f.write_str("frag"),
            FlowId::Other => f.write_str("other"),
        }
    }
}

/// A flow's text split into protocol and ports: `tcp:9000:40001` is `("tcp", 9000, 40001)`;
/// `None` for flows without ports.
pub fn ports_of(flow: &str) -> Option<(&str, u16, u16)> {
    let mut parts = flow.split(':');
    let (proto, src, dst) = (parts.next()?, parts.next()?, parts.next()?);
    Some((proto, src.parse().ok()?, dst.parse().ok()?))
}

/// A flow log read back: header, every opportunity, and each flow's packet events.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlowLog {
    /// The header fields found.
    pub header: LogHeader,
    /// Every delivery opportunity.
    pub opportunities: Vec<Opportunity>,
    /// Each flow's arrivals, departures and drops, in file order, by the flow's text.
    pub flows: BTreeMap<String, Vec<LogEvent>>,
}

impl FlowLog {
    /// Reads a flow log file; errors name the path as given.
    pub fn read_file(path: impl AsRef<Path>) -> Result<FlowLog, LogError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let file = File::open(path).map_err(|source| LogError::Io { file: name.clone(), source })?;
        FlowLog::parse(name, BufReader::new(file))
    }

    /// Parses a flow log; a packet line without its flow field is an error naming the line.
    pub fn parse(name: impl Into<String>, mut input: impl BufRead) -> Result<FlowLog, LogError> {
        let mut log = Log::default();
        let mut out = FlowLog::default();
        each_line(name, &mut input, |buf| {
            let line = buf.trim_ascii();
            let is_packet = line.first().is_some_and(|c| *c != b'#')
                && line
                    .split(u8::is_ascii_whitespace)
                    .filter(|f| !f.is_empty())
                    .nth(1)
                    .is_some_and(|s| s != b"#");
            let (body, flow) = if is_packet {
                let at = line.iter().rposition(u8::is_ascii_whitespace).unwrap_or(0);
                let flow = String::from_utf8_lossy(&line[at..]).trim().to_string();
                if flow.is_empty() || flow.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(format!("no flow field in {:?}", String::from_utf8_lossy(line)));
                }
                (&line[..at], Some(flow))
            } else {
                (line, None)
            };
            log.parse_line(body)?;
            match (log.events.pop(), flow) {
                (Some(LogEvent::Opportunity { at_us, bytes }), _) => {
                    out.opportunities.push(Opportunity { at_us, bytes })
                }
                (Some(event), Some(flow)) => out.flows.entry(flow).or_default().push(event),
                _ => {}
            }
            Ok(())
        })?;
        out.header = log.header;
        Ok(out)
    }

    /// The recording of the flows `select` accepts (by their text), together, with every
    /// opportunity of the link (its capacity) and the header's propagation delay.
    pub fn recording(&self, select: impl Fn(&str) -> bool) -> Recording {
        let events: Vec<LogEvent> = self
            .flows
            .iter()
            .filter(|(flow, _)| select(flow))
            .flat_map(|(_, events)| events.iter().copied())
            .collect();
        let log = Log { header: self.header.clone(), events, unknown_lines: 0 };
        let mut recording = log.to_recording();
        recording.opportunities = self.opportunities.clone();
        recording
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{LogWriter, TimeUnit};

    fn packet(protocol: u8, src: u16, dst: u16) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[9] = protocol;
        p[20..22].copy_from_slice(&src.to_be_bytes());
        p[22..24].copy_from_slice(&dst.to_be_bytes());
        p
    }

    #[test]
    fn flows_of_packets() {
        assert_eq!(FlowId::of_ipv4(&packet(6, 9000, 40001)).to_string(), "tcp:9000:40001");
        assert_eq!(FlowId::of_ipv4(&packet(17, 9200, 42000)).to_string(), "udp:9200:42000");
        assert_eq!(FlowId::of_ipv4(&packet(1, 0, 0)), FlowId::Icmp);
        assert_eq!(FlowId::of_ipv4(&packet(47, 0, 0)).to_string(), "ip:47");
        let mut frag = packet(17, 1, 2);
        frag[7] = 185;
        assert_eq!(FlowId::of_ipv4(&frag), FlowId::Fragment);
        let mut v6 = packet(6, 1, 2);
        v6[0] = 0x60;
        assert_eq!(FlowId::of_ipv4(&v6), FlowId::Other);
        assert_eq!(FlowId::of_ipv4(&[0x45; 10]), FlowId::Other);
        // Options in the IP header move the ports.
        let mut opts = vec![0u8; 48];
        opts[0] = 0x46;
        opts[9] = 6;
        opts[24..26].copy_from_slice(&443u16.to_be_bytes());
        opts[26..28].copy_from_slice(&5u16.to_be_bytes());
        assert_eq!(FlowId::of_ipv4(&opts).to_string(), "tcp:443:5");
        assert_eq!(ports_of("tcp:9000:40001"), Some(("tcp", 9000, 40001)));
        assert_eq!(ports_of("icmp"), None);
    }

    #[test]
    fn a_written_flow_log_splits_per_flow_and_reads_as_a_plain_log() {
        let header = LogHeader {
            title: "t".into(),
            propagation_delay_us: Some(10_000),
            unit: TimeUnit::Micros,
            ..LogHeader::default()
        };
        let mut w = LogWriter::new(Vec::new(), &header).unwrap();
        let (a, b) = (FlowId::of_ipv4(&packet(6, 9000, 40000)), FlowId::of_ipv4(&packet(6, 9000, 40001)));
        w.arrival_of(100, 1500, &a).unwrap();
        w.arrival_of(150, 1500, &b).unwrap();
        w.opportunity(1000, 1500).unwrap();
        w.departure_of(1000, 1500, 100, &a).unwrap();
        w.drop_of(1200, 1500, &b).unwrap();
        w.opportunity(2000, 1500).unwrap();
        let text = w.finish().unwrap();
        let body = String::from_utf8(text.clone()).unwrap();
        assert!(body.contains("\n100 + 1500 tcp:9000:40000\n150 + 1500 tcp:9000:40001\n"), "{body}");
        assert!(body.contains("\n1000 - 1500 900 tcp:9000:40000\n1200 d 1 1500 tcp:9000:40001\n"), "{body}");
        let plain = Log::parse("plain", text.as_slice()).unwrap();
        assert_eq!((plain.events.len(), plain.unknown_lines), (6, 0));
        let flows = FlowLog::parse("f", text.as_slice()).unwrap();
        assert_eq!(flows.header, header);
        assert_eq!(flows.opportunities.len(), 2);
        assert_eq!(flows.flows.keys().collect::<Vec<_>>(), ["tcp:9000:40000", "tcp:9000:40001"]);
        let ra = flows.recording(|f| f == "tcp:9000:40000");
        assert_eq!(ra.packets.len(), 1);
        assert_eq!(ra.packets[0].one_way_delay_us(ra.propagation_delay_us), Some(10_900));
        assert_eq!(ra.opportunities.len(), 2);
        let rb = flows.recording(|f| f.ends_with(":40001"));
        assert_eq!((rb.packets.len(), rb.packets[0].departed_us), (1, None));
        assert_eq!(flows.recording(|_| true).packets.len(), 2);
        let e = FlowLog::parse("f", "# x\n5 + 1500\n".as_bytes()).unwrap_err().to_string();
        assert_eq!(e, "f:2: no flow field in \"5 + 1500\"");
    }
}
