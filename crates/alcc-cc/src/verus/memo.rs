//! What Verus stores with each packet: the slow-start session and the window it was sent at.
//!
//! The reference puts both in the packet header (`ss_id`, `w`); we hand them to the transport
//! as the [`on_sent`](crate::Controller::on_sent) memo and get them back with the ACK or loss.

/// The send-time state of one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendMemo {
    /// The slow-start session the packet was sent in; ACKs of older sessions are dropped.
    pub session: u32,
    /// The window W at send time, in thousandths of a packet.
    pub window_milli: u32,
}

impl SendMemo {
    /// The memo for a packet sent at window `w` (packets) in `session`.
    pub fn new(session: u32, w: f64) -> SendMemo {
        // `as` saturates: a NaN becomes 0, anything above u32::MAX milli-packets saturates.
        SendMemo { session, window_milli: (w * 1000.0).round() as u32 }
    }

    /// Packs into the transport's `u64` memo: session in the high half, window in the low.
    pub fn encode(self) -> u64 {
        (u64::from(self.session) << 32) | u64::from(self.window_milli)
    }

    /// Unpacks a memo made by [`encode`](Self::encode).
    pub fn decode(memo: u64) -> SendMemo {
        SendMemo { session: (memo >> 32) as u32, window_milli: memo as u32 }
    }

    /// The window as the reference's header carries it: whole packets, rounded down.
    pub fn window_packets(self) -> usize {
        (self.window_milli / 1000) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let m = SendMemo::new(7, 123.4567);
        assert_eq!(m.window_milli, 123_457);
        assert_eq!(SendMemo::decode(m.encode()), m);
        assert_eq!(m.window_packets(), 123);
        let top = SendMemo { session: u32::MAX, window_milli: u32::MAX };
        assert_eq!(SendMemo::decode(top.encode()), top);
        assert_eq!(SendMemo::new(0, f64::NAN).window_milli, 0);
    }
}
