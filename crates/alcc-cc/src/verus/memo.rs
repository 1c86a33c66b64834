//! What Verus stores with each packet: the slow-start session, the window W it was sent at
//! and how much of a window the transport was actually letting out then.
//!
//! The reference puts the session and W in the packet header (`ss_id`, `w`); we hand them to
//! the transport as the [`on_sent`](crate::Controller::on_sent) memo and get them back with
//! the ACK or loss. In the reference W always binds (its sender is the transport), so "the
//! window at send time" is also what was in flight; over a transport that may hold the flight
//! below W (kernel mode: the kernel's own cwnd) the memo also carries the peak flight, and
//! [`super::usage`] decides at the ACK which of the two the packet was really sent at.

/// The send-time state of one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendMemo {
    /// The slow-start session the packet was sent in; ACKs of older sessions are dropped.
    pub session: u16,
    /// The window W at send time, in thousandths of a packet (at most [`WINDOW_MILLI_MAX`]).
    pub window_milli: u32,
    /// The flight at send time, this packet included (packets, rounded up, at most
    /// [`FLIGHT_MAX`]).
    pub flight: u32,
}

/// Bits of the window in the encoded memo.
const WINDOW_BITS: u32 = 26;
/// Bits of the flight in the encoded memo.
const FLIGHT_BITS: u32 = 22;
/// The largest window the memo holds: 67 108 packets, above Verus's 40 000.
pub const WINDOW_MILLI_MAX: u32 = (1 << WINDOW_BITS) - 1;
/// The largest flight the memo holds (larger flights saturate).
pub const FLIGHT_MAX: u32 = (1 << FLIGHT_BITS) - 1;

impl SendMemo {
    /// The memo for a packet sent at window `w` (packets) with `flight` packets in flight
    /// (itself included), in `session`.
    pub fn new(session: u16, w: f64, flight: f64) -> SendMemo {
        // `as` saturates: a NaN becomes 0, anything too large saturates.
        SendMemo {
            session,
            window_milli: ((w * 1000.0).round() as u32).min(WINDOW_MILLI_MAX),
            flight: (flight.ceil() as u32).min(FLIGHT_MAX),
        }
    }

    /// Packs into the transport's `u64` memo: session, window, flight from the top.
    pub fn encode(self) -> u64 {
        (u64::from(self.session) << (WINDOW_BITS + FLIGHT_BITS))
            | (u64::from(self.window_milli.min(WINDOW_MILLI_MAX)) << FLIGHT_BITS)
            | u64::from(self.flight.min(FLIGHT_MAX))
    }

    /// Unpacks a memo made by [`encode`](Self::encode).
    pub fn decode(memo: u64) -> SendMemo {
        SendMemo {
            session: (memo >> (WINDOW_BITS + FLIGHT_BITS)) as u16,
            window_milli: ((memo >> FLIGHT_BITS) as u32) & WINDOW_MILLI_MAX,
            flight: (memo as u32) & FLIGHT_MAX,
        }
    }

    /// The window W as the reference's header carries it: whole packets, rounded down.
    pub fn window_packets(self) -> usize {
        (self.window_milli / 1000) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let m = SendMemo::new(7, 123.4567, 99.2);
        assert_eq!((m.window_milli, m.flight), (123_457, 100));
        assert_eq!(SendMemo::decode(m.encode()), m);
        assert_eq!(m.window_packets(), 123);
        let top = SendMemo { session: u16::MAX, window_milli: WINDOW_MILLI_MAX, flight: FLIGHT_MAX };
        assert_eq!(SendMemo::decode(top.encode()), top);
        assert_eq!(top.encode(), u64::MAX);
        assert_eq!(SendMemo::new(0, f64::NAN, f64::NAN), SendMemo { session: 0, window_milli: 0, flight: 0 });
        let big = SendMemo::new(1, 1e12, 1e12);
        assert_eq!((big.window_milli, big.flight), (WINDOW_MILLI_MAX, FLIGHT_MAX));
        assert_eq!(SendMemo::decode(big.encode()).session, 1);
    }
}
