//! The errors that only the engine's ACK timestamps raise, kept from the program.
//!
//! The engine asks the kernel for ACK timestamps on the shared socket (kernel-mode feedback);
//! the kernel queues them on the socket's error queue, and while that queue is not empty,
//! `epoll`, `poll` and `select` report an error on every descriptor of the socket, the
//! program's too, whatever it asked for (`tcp_poll`: EPOLLERR when `sk_err` is set or the error
//! queue is not empty). The engine's thread drains the queue soon after, but a program that
//! woke meanwhile sees an error that is not there, and a program that closes a connection on
//! EPOLLERR would cut governed connections short.
//!
//! What the program should see is an error when the socket has one pending (`sk_err`). That
//! cannot be read without clearing it (`SO_ERROR` and a `recv` both consume it), but for TCP it
//! need not be: the kernel sets a TCP socket's `sk_err` only as the connection dies — a reset
//! (`tcp_reset`), a retransmission or keep-alive timeout (`tcp_write_err`), `SOCK_DESTROY`
//! (`tcp_abort`), `connect(AF_UNSPEC)` (`tcp_disconnect`) all move it to TCP_CLOSE — or for an
//! ICMP error when the program asked for those with IP_RECVERR / IPV6_RECVERR (which the
//! engine never sets). So an error reported on a governed socket whose state is not TCP_CLOSE
//! (read from TCP_INFO, which has no side effect) and whose program has set neither
//! IP_RECVERR, IPV6_RECVERR nor SO_ZEROCOPY (whose notifications share the error queue) comes
//! from the timestamps, and is removed from what the program sees: the bit from an event or a
//! `revents`, the descriptor from `select`'s read set when it has nothing to read. A dying
//! socket's error passes through (with its EPOLLHUP). Should the state be read in the instant
//! between `tcp_reset` setting `sk_err` and `tcp_done` setting TCP_CLOSE, the error is removed
//! that once, but `tcp_done` wakes every waiter again (`sk_state_change`): the program sees it
//! at its next wait.
//!
//! When removing leaves a wait with nothing to report, the wait is repeated for the time left
//! ([`wait_for_genuine`]): returning 0 would tell the program its timeout had passed. A
//! level-triggered waiter may wake again at once while the error queue is not yet drained; the
//! thread yields between rounds so that the engine's thread can drain it.
//!
//! `epoll_wait` reports an event by the program's data only, so the registrations of governed
//! descriptors are kept here: (epoll instance, data) -> descriptor.

// Under `cargo test` the interposed functions that call these are left out (sys.rs).
#![cfg_attr(test, allow(dead_code))]

use std::collections::HashMap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::{lock, marked, sys};

/// Governed descriptors' epoll registrations: (epoll instance, the program's data) -> the
/// descriptor.
static REGISTRATIONS: Mutex<Option<HashMap<(RawFd, u64), RawFd>>> = Mutex::new(None);

/// Whether [`REGISTRATIONS`] may hold anything (read without the lock on every close).
static ANY: AtomicBool = AtomicBool::new(false);

/// After the program's successful EPOLL_CTL_ADD / EPOLL_CTL_MOD of governed `fd` in `ep`.
pub fn registered(ep: RawFd, fd: RawFd, data: u64) {
    let mut r = lock(&REGISTRATIONS);
    let map = r.get_or_insert_with(HashMap::new);
    map.retain(|&(e, _), &mut f| !(e == ep && f == fd));
    map.insert((ep, data), fd);
    ANY.store(true, Ordering::Release);
}

/// After EPOLL_CTL_DEL of `fd` from `ep`.
pub fn unregistered(ep: RawFd, fd: RawFd) {
    if let Some(map) = lock(&REGISTRATIONS).as_mut() {
        map.retain(|&(e, _), &mut f| !(e == ep && f == fd));
    }
}

/// Before `fd` closes: its registrations go, and if it is an epoll instance, all of its.
pub fn closing(fd: RawFd) {
    if !ANY.load(Ordering::Acquire) {
        return;
    }
    if let Some(map) = lock(&REGISTRATIONS).as_mut() {
        map.retain(|&(e, _), &mut f| e != fd && f != fd);
    }
}

/// Whether an error reported on `fd` now comes from the engine's timestamps only: `fd` is
/// governed, its connection is not closed, and the program did not ask for errors on the
/// error queue (module docs).
pub fn only_timestamps(fd: RawFd) -> bool {
    marked(fd) && sys::tcp_state(fd).is_some_and(|s| s != sys::TCP_CLOSE) && !sys::wants_error_queue(fd)
}

/// The events of one `epoll_wait` on `ep`, with the timestamps' EPOLLERR removed; an event left
/// with nothing is dropped and the rest moved up. Returns how many are left.
pub fn filter_events(ep: RawFd, events: &mut [libc::epoll_event]) -> usize {
    let err = libc::EPOLLERR as u32;
    if !events.iter().any(|e| e.events & err != 0) || !ANY.load(Ordering::Acquire) {
        return events.len();
    }
    let fds: Vec<Option<RawFd>> = {
        let r = lock(&REGISTRATIONS);
        let Some(map) = r.as_ref() else { return events.len() };
        events
            .iter()
            .map(|e| (e.events & err != 0).then(|| map.get(&(ep, e.u64)).copied()).flatten())
            .collect()
    };
    let mut kept = 0;
    for i in 0..events.len() {
        let mut ev = events[i];
        if let Some(fd) = fds[i] {
            if only_timestamps(fd) {
                ev.events &= !err;
            }
        }
        if ev.events != 0 {
            events[kept] = ev;
            kept += 1;
        }
    }
    kept
}

/// A `poll` array after the real call, with the timestamps' POLLERR removed from governed
/// entries. Returns the number of entries with something to report.
pub fn filter_revents(fds: &mut [libc::pollfd]) -> usize {
    for p in fds.iter_mut() {
        if p.revents & libc::POLLERR != 0 && only_timestamps(p.fd) {
            p.revents &= !libc::POLLERR;
        }
    }
    fds.iter().filter(|p| p.revents != 0).count()
}

/// Whether `select` reported governed `fd` readable for the timestamps only: the error is
/// theirs and the socket has nothing to read, no hang-up, no urgent data.
pub fn falsely_readable(fd: RawFd) -> bool {
    let ready = libc::POLLIN | libc::POLLPRI | libc::POLLHUP | libc::POLLRDHUP;
    only_timestamps(fd) && sys::poll_now(fd, ready).is_some_and(|revents| revents & ready == 0)
}

/// A timeout as poll(2) takes it: milliseconds, -1 for none, rounded up.
pub fn millis(timeout: Option<Duration>) -> libc::c_int {
    match timeout {
        None => -1,
        Some(d) => d.as_nanos().div_ceil(1_000_000).min(libc::c_int::MAX as u128) as libc::c_int,
    }
}

/// Runs `wait` (a poll, epoll_wait or select given the time it may wait; `None`: no limit),
/// then `keep` on a positive result (what is left once the timestamps' errors are removed),
/// again for the time left while nothing is left; yields between rounds (module docs).
/// Returns the first result that failed, timed out or kept something, or 0 once `timeout`
/// has passed.
pub fn wait_for_genuine(
    timeout: Option<Duration>,
    mut wait: impl FnMut(Option<Duration>) -> libc::c_int,
    mut keep: impl FnMut(libc::c_int) -> libc::c_int,
) -> libc::c_int {
    let deadline = timeout.map(|t| Instant::now() + t);
    let mut left = timeout;
    loop {
        let n = wait(left);
        if n <= 0 {
            return n;
        }
        let kept = keep(n);
        if kept > 0 || timeout == Some(Duration::ZERO) {
            return kept;
        }
        if let Some(d) = deadline {
            let rest = d.saturating_duration_since(Instant::now());
            if rest.is_zero() {
                return 0;
            }
            left = Some(rest);
        }
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_left_with_nothing_is_repeated_for_the_time_left() {
        // Two spurious rounds, then one event.
        let rounds = std::cell::RefCell::new(vec![]);
        let r = wait_for_genuine(
            Some(Duration::from_secs(10)),
            |t| {
                rounds.borrow_mut().push(t);
                1
            },
            |_| (rounds.borrow().len() >= 3) as libc::c_int,
        );
        let rounds = rounds.into_inner();
        assert_eq!((r, rounds.len()), (1, 3));
        let second = rounds[1].unwrap();
        assert!(second <= Duration::from_secs(10) && second > Duration::from_secs(9), "{second:?}");
        // No limit stays no limit; a zero timeout returns what is left at once.
        let n = std::cell::Cell::new(0);
        let r = wait_for_genuine(
            None,
            |t| {
                assert!(t.is_none());
                n.set(n.get() + 1);
                1
            },
            |_| (n.get() > 1) as libc::c_int,
        );
        assert_eq!((r, n.get()), (1, 2));
        assert_eq!(wait_for_genuine(Some(Duration::ZERO), |_| 2, |_| 0), 0);
        // Failures and timeouts of the real call pass through.
        assert_eq!(wait_for_genuine(None, |_| -1, |_| unreachable!()), -1);
        assert_eq!(wait_for_genuine(Some(Duration::from_millis(5)), |_| 0, |_| unreachable!()), 0);
        // The time runs out while only spurious errors come.
        let t0 = Instant::now();
        assert_eq!(wait_for_genuine(Some(Duration::from_millis(20)), |_| 1, |_| 0), 0);
        assert!(t0.elapsed() >= Duration::from_millis(20));
    }

    #[test]
    fn timeouts_round_up_to_milliseconds() {
        assert_eq!(millis(None), -1);
        assert_eq!(millis(Some(Duration::ZERO)), 0);
        assert_eq!(millis(Some(Duration::from_micros(1))), 1);
        assert_eq!(millis(Some(Duration::from_millis(1500))), 1500);
    }

    #[test]
    fn events_of_ungoverned_descriptors_are_left_alone() {
        registered(1000, 1001, 7);
        let err = libc::EPOLLERR as u32;
        let mut evs = [
            libc::epoll_event { events: err, u64: 7 },
            libc::epoll_event { events: err | libc::EPOLLIN as u32, u64: 8 },
        ];
        // fd 1001 is not governed (not marked): its error stands.
        assert_eq!(filter_events(1000, &mut evs), 2);
        closing(1000);
        assert!(lock(&REGISTRATIONS).as_ref().unwrap().is_empty());
    }
}
