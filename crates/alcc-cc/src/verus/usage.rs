//! How much of the window W the transport actually lets out.
//!
//! In the reference (and in our simulator) Verus is the transport: what is in flight is what
//! W allows. Over kernel TCP the kernel's own cwnd may hold the flight far below W, and then
//! two things the reference takes for granted break: slow start grows W by one packet per
//! ACK without bound, and the delay profile records RTTs against windows that were never in
//! flight. We apply the idea of RFC 7661 (cwnd validation): W counts as *used* only when the
//! flight came close to it.
//!
//! The flight that counts is the largest seen at a send over the current and the previous
//! period of one smoothed RTT (at least an epoch), as RFC 7661 measures the used window
//! over an RTT: the peak, not the momentary value, because an epoch sends its packets in a
//! burst and several ACKs may be handled before the sends they allow, so the flight dips;
//! and two periods so that it covers everything sent since a packet now acknowledged. A packet
//! was sent *window-limited* when the larger of the flight at its send and the peak at its
//! ACK is within [`WINDOW_USE_SLACK`] packets of the W it was sent at; its window is then W,
//! as in the reference, and otherwise that peak flight.

use std::time::Duration;

use super::constants::WINDOW_USE_SLACK;
use super::memo::SendMemo;
use crate::time::Time;

/// The peak flight (packets) of the current and previous period.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WindowUsage {
    peak_now: f64,
    peak_prev: f64,
    /// When the current period began.
    since: Time,
}

/// The window a packet was really sent at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowInUse {
    /// Whole packets: W if W was the binding limit, else the peak flight (never above W).
    pub packets: usize,
    /// Whether W was the binding limit.
    pub window_limited: bool,
}

impl WindowUsage {
    /// No packet sent yet.
    pub fn new() -> WindowUsage {
        WindowUsage::default()
    }

    /// A packet was sent with `flight` packets in flight, itself included.
    pub fn sent(&mut self, flight: f64) {
        if flight.is_finite() {
            self.peak_now = self.peak_now.max(flight);
        }
    }

    /// Time passed: if the current period has lasted `period`, its peak becomes the previous
    /// period's and a new one begins.
    pub fn roll(&mut self, now: Time, period: Duration) {
        if now.saturating_since(self.since) >= period {
            self.peak_prev = self.peak_now;
            self.peak_now = 0.0;
            self.since = now;
        }
    }

    /// The peak flight (packets) over the current and previous period.
    pub fn used(&self) -> f64 {
        self.peak_now.max(self.peak_prev)
    }

    /// The window the packet with `memo` was sent at, judged now (at its ACK or loss).
    pub fn window_in_use(&self, memo: SendMemo) -> WindowInUse {
        let w = memo.window_packets();
        let used = self.used().max(f64::from(memo.flight));
        if used + WINDOW_USE_SLACK >= memo.window_milli as f64 / 1000.0 {
            WindowInUse { packets: w, window_limited: true }
        } else {
            WindowInUse { packets: (used.floor() as usize).min(w), window_limited: false }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_spans_two_periods() {
        let ms = Time::from_millis;
        let p = Duration::from_millis(40);
        let mut u = WindowUsage::new();
        assert_eq!(u.used(), 0.0);
        u.sent(5.0);
        u.sent(3.0);
        assert_eq!(u.used(), 5.0);
        u.roll(ms(39), p); // the period has not lasted 40 ms yet
        u.roll(ms(40), p);
        u.sent(2.0);
        assert_eq!(u.used(), 5.0); // the previous period's peak still counts
        u.roll(ms(79), p);
        assert_eq!(u.used(), 5.0);
        u.roll(ms(80), p);
        assert_eq!(u.used(), 2.0);
        u.sent(f64::NAN);
        assert_eq!(u.used(), 2.0);
    }

    #[test]
    fn limited_within_one_packet_of_w_at_send_or_at_ack() {
        let mut u = WindowUsage::new();
        u.sent(9.0);
        let at = |w: f64, flight: f64| SendMemo::new(0, w, flight);
        // Peak now 9: a packet sent at W = 10 with 2 in flight was window-limited after all
        // (the flight caught up with W after it left).
        assert_eq!(u.window_in_use(at(10.0, 2.0)), WindowInUse { packets: 10, window_limited: true });
        // A flight above W: W binds (it was just lowered).
        assert_eq!(u.window_in_use(at(4.0, 6.0)), WindowInUse { packets: 4, window_limited: true });
        // Held at 9 below W = 10.5 (more than a packet): the flight is the window.
        assert_eq!(u.window_in_use(at(10.5, 3.0)), WindowInUse { packets: 9, window_limited: false });
        // The flight at send counts too.
        assert_eq!(u.window_in_use(at(300.0, 40.0)), WindowInUse { packets: 40, window_limited: false });
        assert_eq!(u.window_in_use(at(41.0, 40.0)), WindowInUse { packets: 41, window_limited: true });
    }
}
