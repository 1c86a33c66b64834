//! When the simulated receiver acknowledges: at once, or delayed as a TCP receiver does.
//!
//! What a delayed-ACK receiver does, and what we model of it:
//! - RFC 1122 section 4.2.3.2 and RFC 5681 section 4.2: an ACK SHOULD be sent for at least
//!   every second full-sized segment and MUST be sent within 500 ms of the arrival of the
//!   first unacknowledged segment; an out-of-order segment SHOULD be acknowledged at once.
//! - Linux (`net/ipv4/tcp_input.c`, `__tcp_ack_snd_check` and `tcp_event_data_recv`): it
//!   acknowledges as soon as more than one full segment is unacknowledged (every second
//!   segment); otherwise it arms the delayed-ACK timer with `ato`, which starts at and adapts
//!   down to `TCP_ATO_MIN` = 40 ms for a steady stream; a new connection, and a connection
//!   whose data resumes after a silence longer than its RTO, enter quick-ack mode and acknowledge
//!   each of the next (at most 16, `TCP_MAX_QUICKACKS`) segments at once.
//!
//! We model exactly these rules, with a fixed timer (`ato`'s adaptation between 40 and 200 ms
//! is left out: a backlogged flow keeps it at 40 ms), and an `every` parameter that stands for
//! stretch ACKs too: a receiver whose NIC coalesces segments (GRO/LRO) or a middlebox that thins
//! ACKs acknowledges only every `every`-th segment. Every acknowledgement is cumulative: it
//! covers every packet received so far, so a lost ACK is repaired by the next one.

use std::time::Duration;

use crate::time::Time;

/// How the receiver acknowledges arriving packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckPolicy {
    /// Every packet is acknowledged the moment it arrives (a UDP echo; the simulator's default).
    EveryPacket,
    /// A TCP receiver's delayed acknowledgements.
    Delayed(DelayedAcks),
}

/// The parameters of delayed acknowledgements (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DelayedAcks {
    /// Acknowledge once this many packets are unacknowledged (2 in RFC 1122; more for stretch
    /// ACKs).
    pub every: u32,
    /// The delayed-ACK timer: a lone packet is acknowledged this long after it arrived.
    pub timeout: Duration,
    /// Packets acknowledged at once at the start of the flow and after an idle period.
    pub quickacks: u32,
    /// A silence longer than this puts the receiver back into quick-ack mode (Linux: the RTO,
    /// at least 200 ms).
    pub idle_restart: Duration,
}

impl DelayedAcks {
    /// Linux's defaults: every second segment, a 40 ms timer, 16 quick ACKs, quick-ack again
    /// after 200 ms of silence.
    pub fn linux() -> DelayedAcks {
        DelayedAcks {
            every: 2,
            timeout: Duration::from_millis(40),
            quickacks: 16,
            idle_restart: Duration::from_millis(200),
        }
    }

    /// Linux's rules with acknowledgements thinned to every `every`-th packet (stretch ACKs).
    pub fn stretched(every: u32) -> DelayedAcks {
        DelayedAcks { every: every.max(1), ..DelayedAcks::linux() }
    }
}

impl AckPolicy {
    /// The receiver-side state that applies this policy.
    pub fn receiver(self) -> AckClock {
        AckClock { policy: self, pending: 0, oldest_pending: None, quick_left: None, last_arrival: None }
    }
}

/// The receiver's acknowledgement state under an [`AckPolicy`].
#[derive(Clone, Debug)]
pub struct AckClock {
    policy: AckPolicy,
    pending: u32,
    oldest_pending: Option<Time>,
    /// Quick ACKs left; `None` before the first packet.
    quick_left: Option<u32>,
    last_arrival: Option<Time>,
}

impl AckClock {
    /// A packet arrived at `now`; `out_of_order` when it skips a sequence number. Returns
    /// whether to acknowledge at once (the caller then calls [`acked`](Self::acked)).
    pub fn on_arrival(&mut self, now: Time, out_of_order: bool) -> bool {
        let DelayedAcks { every, quickacks, idle_restart, .. } = match self.policy {
            AckPolicy::EveryPacket => return true,
            AckPolicy::Delayed(d) => d,
        };
        let idle = self.last_arrival.is_none_or(|t| now.saturating_since(t) > idle_restart);
        if idle {
            self.quick_left = Some(quickacks);
        }
        self.last_arrival = Some(now);
        self.pending += 1;
        self.oldest_pending.get_or_insert(now);
        let quick = match self.quick_left.as_mut() {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        };
        quick || out_of_order || self.pending >= every
    }

    /// When the delayed-ACK timer fires, if a packet waits for its acknowledgement.
    pub fn deadline(&self) -> Option<Time> {
        match self.policy {
            AckPolicy::EveryPacket => None,
            AckPolicy::Delayed(d) => self.oldest_pending.map(|t| t + d.timeout),
        }
    }

    /// An acknowledgement covering everything received was just sent.
    pub fn acked(&mut self) {
        self.pending = 0;
        self.oldest_pending = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Time {
        Time::from_millis(v)
    }

    #[test]
    fn every_packet_acks_at_once_and_never_sets_a_timer() {
        let mut c = AckPolicy::EveryPacket.receiver();
        assert!(c.on_arrival(ms(1), false));
        assert_eq!(c.deadline(), None);
    }

    #[test]
    fn linux_quick_acks_then_every_second_packet_then_the_timer() {
        let mut c = AckPolicy::Delayed(DelayedAcks::linux()).receiver();
        let mut now = 0;
        for _ in 0..16 {
            now += 1;
            assert!(c.on_arrival(ms(now), false), "quick ack at {now}");
            c.acked();
        }
        now += 1;
        assert!(!c.on_arrival(ms(now), false), "first of a pair waits");
        assert_eq!(c.deadline(), Some(ms(now + 40)));
        assert!(c.on_arrival(ms(now + 1), false), "second of a pair");
        c.acked();
        assert_eq!(c.deadline(), None);
        // A lone packet waits for the timer; an out-of-order one does not wait.
        assert!(!c.on_arrival(ms(100), false));
        assert_eq!(c.deadline(), Some(ms(140)));
        c.acked();
        assert!(c.on_arrival(ms(101), true));
        c.acked();
        // After more than 200 ms of silence: quick-ack mode again.
        assert!(c.on_arrival(ms(302), false));
    }

    #[test]
    fn stretch_acks_wait_for_more_packets() {
        let d = DelayedAcks { quickacks: 0, ..DelayedAcks::stretched(4) };
        let mut c = AckPolicy::Delayed(d).receiver();
        assert!(!c.on_arrival(ms(1), false));
        assert!(!c.on_arrival(ms(2), false));
        assert!(!c.on_arrival(ms(3), false));
        assert_eq!(c.deadline(), Some(ms(41)));
        assert!(c.on_arrival(ms(4), false));
    }
}
