//! One congestion event per round trip, for the loss-based controllers (Reno, CUBIC).
//!
//! RFC 5681 section 3.2 reduces the window once per loss episode; RFC 6582 and RFC 9002
//! section 7.3.2 make the episode precise: it starts when a loss is detected and ends when a
//! packet sent after that moment is acknowledged. A loss of a packet sent before the episode
//! started belongs to the same congestion event and reduces nothing. The contract has no RTO,
//! so a burst of losses, however long, is one event.

/// The current recovery episode, if any.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    highest_sent: Option<u64>,
    /// The highest sequence sent when the last episode started.
    boundary: Option<u64>,
    active: bool,
}

impl Recovery {
    /// No episode yet.
    pub fn new() -> Recovery {
        Recovery::default()
    }

    /// A packet with sequence `seq` was sent.
    pub fn on_sent(&mut self, seq: u64) {
        self.highest_sent = Some(self.highest_sent.map_or(seq, |h| h.max(seq)));
    }

    /// The packet `seq` was lost. Returns whether this starts a new congestion event (the
    /// caller then reduces its window).
    pub fn on_loss(&mut self, seq: u64) -> bool {
        if self.boundary.is_some_and(|b| seq <= b) {
            return false;
        }
        self.boundary = Some(self.highest_sent.map_or(seq, |h| h.max(seq)));
        self.active = true;
        true
    }

    /// The packet `seq` was acknowledged; a packet sent after the episode started ends it.
    pub fn on_ack(&mut self, seq: u64) {
        if self.active && self.boundary.is_some_and(|b| seq > b) {
            self.active = false;
        }
    }

    /// Whether an episode is under way (the window does not grow meanwhile).
    pub fn active(&self) -> bool {
        self.active
    }
}

/// Slow-start growth for one ACK with RFC 3465 appropriate byte counting (section 2.2): the
/// window grows by the bytes acknowledged, at most `L` x SMSS with `L` = 2.
pub fn slow_start_increase(bytes_acked: u64, mss: u64) -> u64 {
    bytes_acked.min(ABC_LIMIT * mss)
}

/// RFC 3465's `L`: at most this many SMSS of growth per ACK in slow start.
pub const ABC_LIMIT: u64 = 2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_event_per_round_trip() {
        let mut r = Recovery::new();
        for seq in 0..10 {
            r.on_sent(seq);
        }
        assert!(r.on_loss(3));
        assert!(r.active());
        assert!(!r.on_loss(5), "sent before the episode started: same event");
        r.on_sent(10);
        r.on_ack(9);
        assert!(r.active(), "9 was sent before the loss was detected");
        assert!(!r.on_loss(8));
        r.on_ack(10);
        assert!(!r.active());
        assert!(!r.on_loss(7), "still sent before the last reduction");
        assert!(r.on_loss(10), "sent after the last reduction: a new event");
    }

    #[test]
    fn byte_counting_limit() {
        assert_eq!(slow_start_increase(1000, 1448), 1000);
        assert_eq!(slow_start_increase(10_000, 1448), 2896);
    }
}
