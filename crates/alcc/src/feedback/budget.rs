//! What one peer can make the driver do: a per-step budget, one report event per step, and a
//! limit on frames that move nothing forward.
//!
//! The driver serves every flow of the process on one thread, so a framed or UDP peer that
//! writes as fast as it can must not keep that thread on its socket (issue 11 item 2: a client
//! streaming valid-looking Report frames slowed another flow's 100 MB download from 2.0 s to
//! 9.7 s). Three rules, each a bound a hostile peer cannot move:
//! - a step reads at most [`READ_BUDGET`] bytes and takes at most [`FRAME_BUDGET`] frames or
//!   datagrams from one socket; what is left waits in the socket (or the decoder) for the
//!   flow's next step, which the driver schedules at once, after the other due flows;
//! - reports (Sprout's forecasts) replace each other: a step hands the controller only the
//!   newest ([`keep_newest_report`]), so a burst of them is one event, not one heap entry each;
//! - frames that move nothing forward (reports; in UDP mode also repeated ACKs and Hellos) are
//!   counted per second by a [`FloodLimit`]; beyond [`FLOOD_PER_SECOND`] (plus one per datagram
//!   sent, in UDP mode) the peer is cut with an error that says so.
//!
//! ACK frames need no limit of their own: each must end a chunk in flight, with strictly
//! increasing numbers (docs/wire-format.md), so a peer cannot send more of them than chunks
//! were sent.

use std::io;
use std::time::Duration;

use alcc_cc::{ReceiverReport, Time};

use crate::feedback::Feedback;

/// Most bytes a feedback source reads from its socket in one step (one `recv` of framed
/// mode's 64 KiB scratch buffer).
pub const READ_BUDGET: usize = 64 << 10;

/// Most frames (framed mode) or datagrams (UDP mode) a source takes in one step.
pub const FRAME_BUDGET: u32 = 256;

/// Frames per second a peer may send that move nothing forward before it is cut. Sprout's
/// receiver sends 50 reports a second (one per 20 ms tick), so this leaves a factor of 20.
pub const FLOOD_PER_SECOND: u64 = 1000;

/// Counts a peer's frames that move nothing forward, per second of the flow's clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct FloodLimit {
    since: Option<Time>,
    count: u64,
    /// Extra allowance this second ([`FloodLimit::allow_one`]).
    extra: u64,
}

impl FloodLimit {
    /// One more such frame (`what`, plural, for the error) at `now`: an `InvalidData` error
    /// once one second holds more than [`FLOOD_PER_SECOND`] plus the allowance.
    pub fn note(&mut self, now: Time, what: &str) -> io::Result<()> {
        self.roll(now);
        self.count += 1;
        let limit = FLOOD_PER_SECOND + self.extra;
        if self.count > limit {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "alcc: the peer sent more than {limit} {what} in one second (a flood); connection cut"
                ),
            ));
        }
        Ok(())
    }

    /// Raises this second's limit by one (UDP mode: each datagram sent may draw one late or
    /// duplicated ACK that acknowledges nothing new).
    pub fn allow_one(&mut self, now: Time) {
        self.roll(now);
        self.extra += 1;
    }

    fn roll(&mut self, now: Time) {
        let since = *self.since.get_or_insert(now);
        if now.saturating_since(since) >= Duration::from_secs(1) {
            *self = FloodLimit { since: Some(now), count: 0, extra: 0 };
        }
    }
}

/// Appends `report` to `out`, or, if this step's events (from `first` on) already hold a
/// report, puts it in that one's place: the controller hears the newest forecast once.
pub fn keep_newest_report(out: &mut Vec<Feedback>, first: usize, report: ReceiverReport) {
    let older = out[first..].iter_mut().find(|f| matches!(f, Feedback::Report(_)));
    match older {
        Some(slot) => *slot = Feedback::Report(report),
        None => out.push(Feedback::Report(report)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alcc_cc::AckSample;

    #[test]
    fn a_flood_is_cut_and_the_count_starts_again_each_second() {
        let mut l = FloodLimit::default();
        let t0 = Time::from_millis(5);
        for _ in 0..FLOOD_PER_SECOND {
            l.note(t0, "reports").unwrap();
        }
        let e = l.note(t0, "reports").unwrap_err();
        assert!(e.to_string().contains("more than 1000 reports"), "{e}");
        let mut l = FloodLimit::default();
        for _ in 0..FLOOD_PER_SECOND {
            l.note(t0, "reports").unwrap();
        }
        l.note(t0 + Duration::from_secs(1), "reports").unwrap();
    }

    #[test]
    fn each_datagram_sent_allows_one_more() {
        let mut l = FloodLimit::default();
        let t0 = Time::from_millis(5);
        for _ in 0..10 {
            l.allow_one(t0);
        }
        for _ in 0..FLOOD_PER_SECOND + 10 {
            l.note(t0, "ACKs").unwrap();
        }
        assert!(l.note(t0, "ACKs").is_err());
    }

    #[test]
    fn reports_of_one_step_are_one_event_the_newest() {
        let report = |bytes| {
            ReceiverReport::Forecast(alcc_cc::Forecast {
                received_or_lost_bytes: bytes,
                receiver_time: Time::ZERO,
                tick: Duration::from_millis(20),
                packet_bytes: 1440,
                counts: vec![1],
            })
        };
        let ack = Feedback::Ack(AckSample {
            seq: 0,
            bytes: 1,
            sent_at: Time::ZERO,
            rtt: Duration::ZERO,
            bytes_in_flight: 0,
            delivered: 1,
            memo: 0,
        });
        // An older step's report stays; this step's (from index 1) are merged.
        let mut out = vec![Feedback::Report(report(1))];
        for b in 2..100 {
            keep_newest_report(&mut out, 1, report(b));
            out.push(ack.clone());
        }
        let reports: Vec<_> = out.iter().filter(|f| matches!(f, Feedback::Report(_))).collect();
        assert_eq!(reports, [&Feedback::Report(report(1)), &Feedback::Report(report(99))]);
    }
}
