//! The bottleneck queue in front of a link: infinite, or drop-tail limited in packets and/or
//! bytes, with Mahimahi's semantics (`--uplink-queue=droptail --uplink-queue-args=packets=100`):
//! an arriving packet is dropped when, counting it, the queue would exceed a limit. The packet
//! currently being serialised by the link is not in the queue.

use std::collections::VecDeque;
use std::fmt;

use crate::error::LinkError;

/// How a queue bounds its contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueSpec {
    /// No limit (Mahimahi's default).
    Infinite,
    /// Tail drop when the queue, counting the arriving packet, would exceed a limit.
    DropTail {
        /// At most this many packets, if set.
        packets: Option<u64>,
        /// At most this many bytes, if set.
        bytes: Option<u64>,
    },
}

impl QueueSpec {
    /// Parses Mahimahi's queue options: `kind` is `infinite` or `droptail`; `args` is
    /// `NAME=NUMBER[,NAME=NUMBER]` with NAME `packets` or `bytes` (droptail needs at least one).
    pub fn parse(kind: &str, args: Option<&str>) -> Result<QueueSpec, LinkError> {
        match kind {
            "infinite" => match args {
                Some(a) if !a.trim().is_empty() => {
                    Err(LinkError::Queue(format!("the infinite queue takes no arguments (got `{a}`)")))
                }
                _ => Ok(QueueSpec::Infinite),
            },
            "droptail" => {
                let args = args.ok_or_else(|| {
                    LinkError::Queue("droptail needs a limit: packets=N or bytes=N".to_string())
                })?;
                let (mut packets, mut bytes) = (None, None);
                for item in args.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    let (name, value) = item.split_once('=').ok_or_else(|| {
                        LinkError::Queue(format!("`{item}` is not NAME=NUMBER (packets=N or bytes=N)"))
                    })?;
                    let n: u64 = value.trim().parse().map_err(|_| {
                        LinkError::Queue(format!("`{value}` in `{item}` is not a non-negative integer"))
                    })?;
                    if n == 0 {
                        return Err(LinkError::Queue(format!("`{item}`: a zero limit drops every packet")));
                    }
                    let slot = match name.trim() {
                        "packets" => &mut packets,
                        "bytes" => &mut bytes,
                        other => {
                            return Err(LinkError::Queue(format!(
                                "unknown droptail argument `{other}` (expected packets or bytes)"
                            )))
                        }
                    };
                    if slot.replace(n).is_some() {
                        return Err(LinkError::Queue(format!("`{}` given twice", name.trim())));
                    }
                }
                if packets.is_none() && bytes.is_none() {
                    return Err(LinkError::Queue("droptail needs a limit: packets=N or bytes=N".to_string()));
                }
                Ok(QueueSpec::DropTail { packets, bytes })
            }
            other => {
                Err(LinkError::Queue(format!("unknown queue type `{other}` (expected droptail or infinite)")))
            }
        }
    }

    /// Whether a queue holding `packets` packets and `bytes` bytes (the arriving packet
    /// included) is within the limits.
    pub fn admits(&self, packets: u64, bytes: u64) -> bool {
        match *self {
            QueueSpec::Infinite => true,
            QueueSpec::DropTail { packets: pl, bytes: bl } => {
                pl.is_none_or(|l| packets <= l) && bl.is_none_or(|l| bytes <= l)
            }
        }
    }
}

/// Mahimahi's spelling, as written in the `# queue:` line of a log.
impl fmt::Display for QueueSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            QueueSpec::Infinite => write!(f, "infinite"),
            QueueSpec::DropTail { packets, bytes } => {
                write!(f, "droptail [")?;
                let mut sep = "";
                if let Some(b) = bytes {
                    write!(f, "bytes={b}")?;
                    sep = ", ";
                }
                if let Some(p) = packets {
                    write!(f, "{sep}packets={p}")?;
                }
                write!(f, "]")
            }
        }
    }
}

/// A packet waiting in a queue, with the time it arrived (µs on the link's clock).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Queued<P> {
    /// What is carried (the IP packet in the emulator, anything in tests).
    pub payload: P,
    /// Its size in bytes, as counted by the queue and the link.
    pub bytes: u64,
    /// When it arrived at the link, µs.
    pub arrival_us: u64,
}

/// A FIFO bounded by a [`QueueSpec`].
#[derive(Debug)]
pub struct PacketQueue<P> {
    spec: QueueSpec,
    items: VecDeque<Queued<P>>,
    bytes: u64,
}

impl<P> PacketQueue<P> {
    /// An empty queue with the given limits.
    pub fn new(spec: QueueSpec) -> Self {
        PacketQueue { spec, items: VecDeque::new(), bytes: 0 }
    }

    /// Appends a packet, or hands it back when a limit would be exceeded (tail drop).
    pub fn enqueue(&mut self, packet: Queued<P>) -> Result<(), Queued<P>> {
        let bytes = self.bytes.saturating_add(packet.bytes);
        if !self.spec.admits(self.items.len() as u64 + 1, bytes) {
            return Err(packet);
        }
        self.bytes = bytes;
        self.items.push_back(packet);
        Ok(())
    }

    /// Removes the oldest packet.
    pub fn dequeue(&mut self) -> Option<Queued<P>> {
        let p = self.items.pop_front()?;
        self.bytes -= p.bytes;
        Some(p)
    }

    /// Number of packets queued.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Bytes queued.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The limits of this queue.
    pub fn spec(&self) -> QueueSpec {
        self.spec
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(bytes: u64) -> Queued<()> {
        Queued { payload: (), bytes, arrival_us: 0 }
    }

    #[test]
    fn parses_mahimahi_arguments() {
        assert_eq!(QueueSpec::parse("infinite", None).unwrap(), QueueSpec::Infinite);
        assert_eq!(
            QueueSpec::parse("droptail", Some("packets=100")).unwrap(),
            QueueSpec::DropTail { packets: Some(100), bytes: None }
        );
        assert_eq!(
            QueueSpec::parse("droptail", Some("bytes=30000, packets=20")).unwrap(),
            QueueSpec::DropTail { packets: Some(20), bytes: Some(30000) }
        );
        assert_eq!(
            QueueSpec::parse("droptail", Some("bytes=30000")).unwrap().to_string(),
            "droptail [bytes=30000]"
        );
    }

    #[test]
    fn rejects_impossible_queues_with_a_reason() {
        for (kind, args, needle) in [
            ("codel", None, "unknown queue type `codel`"),
            ("droptail", None, "needs a limit"),
            ("droptail", Some("packets=-3"), "not a non-negative integer"),
            ("droptail", Some("packets=0"), "zero limit"),
            ("droptail", Some("frames=3"), "unknown droptail argument `frames`"),
            ("droptail", Some("packets"), "not NAME=NUMBER"),
            ("droptail", Some("packets=1,packets=2"), "given twice"),
            ("infinite", Some("packets=3"), "takes no arguments"),
        ] {
            let e = QueueSpec::parse(kind, args).unwrap_err().to_string();
            assert!(e.contains(needle), "{kind} {args:?}: {e}");
        }
    }

    #[test]
    fn droptail_in_packets_drops_the_arrival_that_would_exceed() {
        let mut q = PacketQueue::new(QueueSpec::DropTail { packets: Some(2), bytes: None });
        assert!(q.enqueue(pkt(1500)).is_ok());
        assert!(q.enqueue(pkt(40)).is_ok());
        assert!(q.enqueue(pkt(40)).is_err());
        assert_eq!((q.len(), q.bytes()), (2, 1540));
        q.dequeue();
        assert!(q.enqueue(pkt(40)).is_ok());
        assert_eq!((q.len(), q.bytes()), (2, 80));
    }

    #[test]
    fn droptail_in_bytes_admits_small_packets_after_refusing_a_big_one() {
        let mut q = PacketQueue::new(QueueSpec::DropTail { packets: None, bytes: Some(3000) });
        assert!(q.enqueue(pkt(1500)).is_ok());
        assert!(q.enqueue(pkt(1400)).is_ok());
        assert!(q.enqueue(pkt(1500)).is_err());
        assert!(q.enqueue(pkt(100)).is_ok());
        assert_eq!(q.bytes(), 3000);
    }

    #[test]
    fn infinite_queue_keeps_order() {
        let mut q = PacketQueue::new(QueueSpec::Infinite);
        for i in 0..10_000u64 {
            q.enqueue(Queued { payload: i, bytes: 1, arrival_us: i }).unwrap();
        }
        for i in 0..10_000u64 {
            assert_eq!(q.dequeue().unwrap().payload, i);
        }
        assert!(q.is_empty());
        assert_eq!(q.bytes(), 0);
    }
}
