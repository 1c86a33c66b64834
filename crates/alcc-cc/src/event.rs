//! The events a transport reports to a [`Controller`](crate::Controller), and what it gets back.
//!
//! Sequence numbers are the transport's own: packet numbers in the simulator and in UDP mode,
//! chunk numbers in the kernel and framed modes. A "packet" is one unit the transport hands to
//! the network at once (at most one MSS in the simulator, an MSS multiple in kernel mode);
//! controllers count in bytes and convert with [`Config::mss`](crate::Config::mss).

use std::time::Duration;

use crate::time::Time;

/// A packet (or chunk) the transport has just handed to the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentPacket {
    /// The transport's sequence number of this packet; strictly increasing per flow.
    pub seq: u64,
    /// Payload bytes in this packet.
    pub bytes: u64,
    /// Bytes in flight (sent, not yet acknowledged or declared lost), this packet included.
    pub bytes_in_flight: u64,
}

/// What the transport learned from one acknowledgement of one packet (or chunk).
///
/// The transport remembers, per packet in flight, its send time and the [`memo`](Self::memo)
/// the controller returned from [`Controller::on_sent`](crate::Controller::on_sent), and
/// hands both back here. This is how Verus learns the window a packet was sent at without
/// putting it on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckSample {
    /// Sequence number of the acknowledged packet.
    pub seq: u64,
    /// Bytes newly acknowledged by this sample.
    pub bytes: u64,
    /// When the acknowledged packet was sent.
    pub sent_at: Time,
    /// Round-trip time sample of this packet.
    pub rtt: Duration,
    /// Bytes still in flight after this acknowledgement.
    pub bytes_in_flight: u64,
    /// Cumulative bytes delivered on this flow, this sample included.
    pub delivered: u64,
    /// The value the controller returned from `on_sent` for this packet.
    pub memo: u64,
}

/// A packet the transport has declared lost (or a retransmission the kernel reported).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LossEvent {
    /// Sequence number of the lost packet.
    pub seq: u64,
    /// Its payload bytes.
    pub bytes: u64,
    /// When it was sent.
    pub sent_at: Time,
    /// Bytes still in flight after removing it.
    pub bytes_in_flight: u64,
    /// The value the controller returned from `on_sent` for this packet.
    pub memo: u64,
}

/// A report from the receiver side of an algorithm whose model lives at the receiver.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ReceiverReport {
    /// Sprout's delivery forecast (Winstein et al., NSDI 2013, section 3.4).
    Forecast(Forecast),
}

/// Sprout's forecast: cumulative packet counts the link will deliver, with 95 % confidence,
/// over the next [`counts.len()`](Self::counts) ticks of [`tick`](Self::tick) each.
#[derive(Clone, Debug, PartialEq)]
pub struct Forecast {
    /// Cumulative bytes the receiver has received (or counted lost) when it made the forecast.
    pub received_or_lost_bytes: u64,
    /// The receiver's clock when it made the forecast.
    pub receiver_time: Time,
    /// Length of one forecast tick.
    pub tick: Duration,
    /// Cumulative packets deliverable by the end of tick 1, 2, ... (non-decreasing).
    pub counts: Vec<u32>,
    /// Packet size in bytes that `counts` are expressed in.
    pub packet_bytes: u32,
}

/// What the receiver side sees of one arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// The packet's sequence number.
    pub seq: u64,
    /// Its payload bytes.
    pub bytes: u64,
    /// The sender's hint for this packet (see [`SenderHint`]).
    pub hint: SenderHint,
}

/// Per-packet information a sender puts in the header for its receiver-side model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderHint {
    /// Sprout's "time to next": how long until the sender expects to send again. `None` means
    /// the sender is backlogged and will keep sending. Lets the receiver tell idleness from an
    /// outage.
    pub time_to_next: Option<Duration>,
}

/// A controller's output: how much may be in flight and how fast to send it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The most bytes that may be in flight. The transport sends a packet only when
    /// `bytes_in_flight + packet <= window`.
    pub window: u64,
    /// Pacing rate in bytes per second; `None` sends as fast as the window allows.
    pub pacing_rate: Option<u64>,
}
