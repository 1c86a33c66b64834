//! What the simulator records: every packet's fate, and every delivery opportunity.

use serde::Serialize;

use crate::time::Time;

/// Why a packet never arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DropCause {
    /// The drop-tail queue was full.
    Queue,
    /// Random (Bernoulli) loss on the link.
    Random,
}

/// What became of one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum Outcome {
    /// Still queued or propagating when the simulation ended.
    InFlight,
    /// Left the bottleneck at `departed` and reached the receiver at `arrived`.
    Delivered {
        /// When it left the bottleneck queue.
        departed: Time,
        /// When it reached the receiver (departure plus the one-way delay).
        arrived: Time,
    },
    /// Dropped at `at`.
    Dropped {
        /// When it was dropped.
        at: Time,
        /// Why.
        cause: DropCause,
    },
}

/// One data packet the sender sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PacketRecord {
    /// The sender's sequence number.
    pub seq: u64,
    /// Size on the link, bytes.
    pub bytes: u64,
    /// When the sender sent it (it reaches the bottleneck queue at once).
    pub sent: Time,
    /// Its fate.
    pub outcome: Outcome,
}

impl PacketRecord {
    /// One-way delay (send to arrival at the receiver), if it was delivered.
    pub fn one_way_delay(&self) -> Option<std::time::Duration> {
        match self.outcome {
            Outcome::Delivered { arrived, .. } => Some(arrived.saturating_since(self.sent)),
            _ => None,
        }
    }
}

/// One acknowledgement of one packet, as the sender got it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct AckRecord {
    /// When the acknowledgement reached the sender.
    pub at: Time,
    /// The packet it acknowledged.
    pub seq: u64,
    /// The packet's bytes.
    pub bytes: u64,
}

/// Everything one simulation run observed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SimResult {
    /// Every data packet, in send order.
    pub packets: Vec<PacketRecord>,
    /// Every delivery opportunity of the bottleneck within the run, used or not.
    pub opportunities: Vec<Time>,
    /// How long the run lasted.
    pub duration: std::time::Duration,
    /// Controller snapshots, one per `metrics_every` interval (time, window bytes, pacing rate).
    pub windows: Vec<(Time, u64, Option<u64>)>,
    /// Every acknowledgement of a packet in flight the sender got, in order (a cumulative
    /// acknowledgement of several packets gives one record per packet, all at the same time).
    /// A late ACK of a packet already declared lost goes to the controller
    /// ([`Controller::on_late_ack`](crate::Controller::on_late_ack)) and is not recorded here.
    pub acks: Vec<AckRecord>,
    /// The return link's delivery opportunities within the run (empty for a free return path).
    pub return_opportunities: Vec<Time>,
    /// Acknowledgements and reports lost on the return path (at random or by its full queue).
    pub return_drops: u64,
}

impl SimResult {
    /// Every packet whose fate is known, as seen at the bottleneck: `(bytes, sent µs, departed
    /// µs)`, the departure `None` for a packet dropped (at random or by the full queue). Packets
    /// still queued when the run ended are left out rather than counted as lost. With the
    /// propagation delay this is everything a per-packet metrics tool needs.
    pub fn bottleneck_packets(&self) -> impl Iterator<Item = (u64, u64, Option<u64>)> + '_ {
        self.packets.iter().filter_map(|p| {
            let departed = match p.outcome {
                Outcome::InFlight => return None,
                Outcome::Delivered { departed, .. } => Some(departed.as_micros()),
                Outcome::Dropped { .. } => None,
            };
            Some((p.bytes, p.sent.as_micros(), departed))
        })
    }
}
