//! Holding a kernel-mode socket's events until the controller's timer (issue 18).
//!
//! In kernel mode every segment the kernel sends brings a SCHED timestamp to the error queue,
//! and each stamp wakes the driver (EPOLLERR, which epoll reports whatever the mask): with
//! the kernel sending from its queue of unsent bytes, one wake-up per segment, most of which
//! find nothing to act on. A controller that acts on feedback only in its timer (Verus after
//! slow start: [`Controller::feedback_can_wait_until`](alcc_cc::Controller::feedback_can_wait_until))
//! loses nothing if what arrives before the timer is read at the timer's step, which reads
//! the feedback before it fires the timer; so does one whose per-ACK decisions cannot take
//! effect before then (Verus in slow start behind a full socket). So after a step that leaves nothing for the
//! socket's events to start, the driver stops watching the socket (EPOLL_CTL_DEL) until the
//! flow's next step, which its own deadline (at or before the controller's timer) brings;
//! that step reads every stamp queued meanwhile (each sample as the kernel measured it), and
//! the driver watches the socket again (EPOLL_CTL_ADD, which reports at once what is pending)
//! unless the step holds it again.
//!
//! What a socket event could start, and so what a hold must not delay:
//! - a write on room (EPOLLOUT): only when the step stopped because the socket was full. The
//!   kernel then holds at least TCP_NOTSENT_LOWAT unsent and reports room below half of it;
//!   the hold is taken only if that half takes the kernel at least until the flow's next
//!   step to send, at the larger of its pacing and delivery rates ([`Stop::SocketFull`]).
//!   Stopped by the window, the pacer or an empty queue (the application's writes wake the
//!   flow by the driver's inbox, not the socket), room starts nothing.
//! - a write of what an acknowledgement allows: the controller says whether it can wait,
//!   told whether the flow would send at once (stopped by the window or the pacer) or not
//!   (a full socket, an empty queue): Verus in slow start grants per ACK and waits only in
//!   the latter case; after slow start it grants only in its timer.
//! - an error or a hang-up: heard at the flow's next step, at most the hold later.

use std::time::Duration;

use alcc_cc::Time;

/// Why a step stopped writing chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The application's queue has nothing (more) to send now.
    QueueEmpty,
    /// The window is full: the flow looks again at this time (a stall poll) or on feedback.
    WindowFull(Time),
    /// The pacer holds the next chunk until this time.
    Paced(Time),
    /// The socket took no more (it will report room, EPOLLOUT).
    SocketFull,
}

impl Stop {
    /// When the flow wants its next step for writing, besides socket events.
    pub fn wake_at(self) -> Option<Time> {
        match self {
            Stop::WindowFull(t) | Stop::Paced(t) => Some(t),
            Stop::QueueEmpty | Stop::SocketFull => None,
        }
    }

    /// Whether the flow would send at once what feedback allows: stopped by the window or
    /// the pacer, not by a full socket or an empty queue.
    pub fn sends_on_feedback(self) -> bool {
        matches!(self, Stop::WindowFull(_) | Stop::Paced(_))
    }
}

/// Whether the flow may leave its socket's events unheard until its next step at `wake`,
/// at `now`: the controller's feedback can wait until `can_wait_until`, the next step comes
/// no later, and nothing a socket event could start before it is lost (see the module docs).
/// `drain` is how long the kernel takes to send the half of TCP_NOTSENT_LOWAT that it holds
/// before it reports room (`None`: unknown).
pub(crate) fn holds(
    now: Time,
    can_wait_until: Option<Time>,
    wake: Option<Time>,
    stop: Stop,
    drain: Option<Duration>,
) -> bool {
    let (Some(until), Some(wake)) = (can_wait_until, wake) else { return false };
    if wake <= now || wake > until {
        return false;
    }
    match stop {
        Stop::QueueEmpty | Stop::WindowFull(_) | Stop::Paced(_) => true,
        Stop::SocketFull => drain.is_some_and(|d| now + d >= wake),
    }
}

/// How long a kernel sending at `rate` bytes/s takes to send `bytes`; `None` at rate 0.
pub(crate) fn drain_time(bytes: u64, rate: u64) -> Option<Duration> {
    (rate > 0).then(|| Duration::from_secs_f64(bytes as f64 / rate as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: u64) -> Time {
        Time::from_millis(t)
    }

    #[test]
    fn holds_only_until_a_step_the_controller_can_wait_for() {
        let now = ms(100);
        let full = Stop::WindowFull(ms(300));
        // Verus after slow start: its epoch at 104 ms, the flow's next step then.
        assert!(holds(now, Some(ms(104)), Some(ms(104)), full, None));
        assert!(holds(now, Some(ms(104)), Some(ms(102)), Stop::Paced(ms(102)), None));
        assert!(holds(now, Some(ms(104)), Some(ms(104)), Stop::QueueEmpty, None));
        // A controller that hears each ACK at once, or a step after its wait ends: no hold.
        assert!(!holds(now, None, Some(ms(104)), full, None));
        assert!(!holds(now, Some(ms(104)), Some(ms(105)), full, None));
        // No step scheduled, or one due now: nothing would end the hold.
        assert!(!holds(now, Some(ms(104)), None, full, None));
        assert!(!holds(now, Some(ms(100)), Some(ms(100)), full, None));
    }

    #[test]
    fn a_full_socket_is_held_only_while_the_kernel_has_enough_unsent() {
        let now = ms(100);
        let wake = Some(ms(104));
        // 64 KiB at 12 Mbit/s: 44 ms, past the step 4 ms away.
        let slow = drain_time(64 << 10, 1_500_000);
        assert!(slow.is_some_and(|d| d > Duration::from_millis(43)));
        assert!(holds(now, wake, wake, Stop::SocketFull, slow));
        // 64 KiB at 1 GB/s (loopback): room within 66 us, so the socket is watched.
        assert!(!holds(now, wake, wake, Stop::SocketFull, drain_time(64 << 10, 1_000_000_000)));
        assert!(!holds(now, wake, wake, Stop::SocketFull, drain_time(64 << 10, 0)));
        assert!(!holds(now, wake, wake, Stop::SocketFull, None));
    }
}
