//! How many packets Copa's window lets be in flight.
//!
//! A byte window of `cwnd` packets, filled in whole segments (`in_flight + segment <= window`),
//! holds `floor(cwnd)` packets. The reference genericCC sender counts in packets instead: a
//! packet may go while fewer than `cwnd` are in flight (its sequence number below
//! `largest_acked + 1 + cwnd`, `largest_acked` being one past the newest echoed packet, and its
//! pacing clock restarted while `cwnd` or more are in flight), so `ceil(cwnd)` packets fly, one
//! more than `floor(cwnd)` at a fractional window. Its loop lets one packet beyond that go only
//! when no ACK has come for one inter-send time (its pacing clock is restarted at every ACK
//! while the window is full); that timing rule of its loop is not modelled here.
//!
//! At the windows Copa keeps on the ALCC paper's highwayGold trace (5-15 packets, 18 % of the
//! link used) the one packet is about 12 % of the flight, and the throughput follows the
//! flight: with `floor(cwnd)` ours delivered 7-15 % less than the authors' Copa at the same
//! delay, with `ceil(cwnd) + 1` (both rules) 7-8 % more (bench/reference-results.md, "Copa's
//! flight gate"). [`FlightGate::Reference`] is the
//! default, [`FlightGate::Cwnd`] the byte window's `floor(cwnd)` (`copa:gate=cwnd`, the
//! behaviour before).

/// Which rule turns Copa's window into the packets it may have in flight.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FlightGate {
    /// The reference sender's: a packet may go while fewer than `cwnd` are in flight, so
    /// `ceil(cwnd)` packets (`gate=reference`, the default).
    #[default]
    Reference,
    /// The byte window's: `cwnd` packets of bytes, `floor(cwnd)` whole segments (`gate=cwnd`).
    Cwnd,
}

impl FlightGate {
    /// The packets that may be in flight under a window of `cwnd` packets.
    pub fn flight(self, cwnd: f64) -> f64 {
        match self {
            FlightGate::Reference => cwnd.ceil(),
            FlightGate::Cwnd => cwnd,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_gate_rounds_the_window_up_to_whole_packets() {
        // cwnd 5.5: a packet may go while 5 or fewer are in flight, six after it.
        assert_eq!(FlightGate::Reference.flight(5.5), 6.0);
        assert_eq!(FlightGate::Reference.flight(5.01), 6.0);
        assert_eq!(FlightGate::Reference.flight(5.0), 5.0);
        assert_eq!(FlightGate::Cwnd.flight(5.5), 5.5);
        assert_eq!(FlightGate::Cwnd.flight(5.0), 5.0);
    }
}
