//! What the application side of a flow and the driver both touch, under one lock: the send
//! queue, the close and abort requests, the flow's fate and its latest [`FlowInfo`], the
//! one place where an application call waits for the driver ([`Shared::wait_for`]), and the
//! flow's readiness descriptor for event loops ([`Readiness`]).
//!
//! # Readiness
//!
//! A flow *accepts a write* when a write would not block: its queue has room, or the flow is
//! closed or failed (the write then returns its error at once, as a socket's does). The
//! readiness descriptor ([`sys::WritableFd`]) polls EPOLLOUT exactly while that holds.
//! Every change of the queue or of the flow's fate happens under this module's lock, and
//! [`SharedState::sync_readiness`] runs before the lock is let go, so the descriptor never
//! lags the state: a watcher never sleeps while the queue has room and never sees EPOLLOUT
//! while it is full. Edge-triggered watchers get one edge per transition to writable (after
//! a write that filled the queue, partial or not, the next edge comes when the driver has
//! moved bytes out). Made on first use only: a flow nobody polls has no descriptor.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::flow::control::Control;
use crate::flow::send_queue::SendQueue;
use crate::info::FlowInfo;
use crate::sys;
use crate::underlay::FlowUnderlay;

/// A controller the application asked for ([`AlccStream::set_cc`](crate::AlccStream::set_cc)),
/// waiting for the driver to put it in place.
pub(crate) struct ControlChange {
    /// Its specification.
    pub spec: String,
    /// The controller (or `none`).
    pub control: Control,
    /// Which request this is; the driver reports it back in [`SharedState::control_applied`].
    pub generation: u64,
}

/// How the application has ended its side of the flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Still writing.
    #[default]
    Open,
    /// Closed (or dropped): flush the queue, send the FIN, wait until everything is
    /// acknowledged.
    Finish,
    /// Let go like close(2) on one of several descriptors of a socket: flush the queue into
    /// the kernel, then release the engine's descriptor without a FIN; the kernel sends what
    /// it holds, and its FIN when the socket's last descriptor (in any process) closes.
    Release,
}

impl Ending {
    /// Whether the application has ended its side (writes fail from now on).
    pub fn is_ended(self) -> bool {
        self != Ending::Open
    }
}

/// A flow's readiness descriptor and the state it shows.
pub(crate) struct Readiness {
    fd: sys::WritableFd,
    writable: bool,
}

/// The shared state proper.
#[derive(Default)]
pub(crate) struct SharedState {
    /// Bytes waiting for the driver.
    pub queue: SendQueue,
    /// Whether and how the application ended its side.
    pub ending: Ending,
    /// Everything was handed to the kernel, the FIN sent and all acknowledged (framed mode:
    /// the FIN too, [`Transport::end_delivered`](crate::transport::Transport::end_delivered)).
    pub finished: bool,
    /// Closed, and nothing is left that needs this process: the kernel holds every byte and
    /// the FIN (kernel mode), or the flow finished (framed, UDP). The exit hook waits for it.
    pub handed_over: bool,
    /// The flow failed (reset, timeout, ...); kind and message.
    pub error: Option<(io::ErrorKind, String)>,
    /// The driver has a wake-up for this flow pending.
    pub wake_pending: bool,
    /// The driver no longer holds the flow.
    pub released: bool,
    /// The application asks to abort (reset) the connection.
    pub abort: bool,
    /// A controller replacing the current one.
    pub control_change: Option<ControlChange>,
    /// The last [`ControlChange::generation`] requested.
    pub control_requested: u64,
    /// The last [`ControlChange::generation`] the driver put in place.
    pub control_applied: u64,
    /// An underlay replacing the current one (`set_underlay`), its socket already set up.
    pub new_underlay: Option<FlowUnderlay>,
    /// A priority weight replacing the flow's current one (`set_weight`).
    pub new_weight: Option<f64>,
    /// The driver's latest snapshot.
    pub info: FlowInfo,
    /// The readiness descriptor, once asked for.
    readiness: Option<Readiness>,
}

impl SharedState {
    /// Whether a write would complete now (queue room) or fail now (the flow ended or failed)
    /// rather than block.
    pub fn accepts_write(&self) -> bool {
        !self.queue.is_full() || self.ending.is_ended() || self.released || self.error.is_some()
    }

    /// Brings the readiness descriptor in line with [`accepts_write`](Self::accepts_write);
    /// called under the lock after every change of the queue or the flow's fate.
    pub fn sync_readiness(&mut self) {
        let want = self.accepts_write();
        if let Some(r) = self.readiness.as_mut().filter(|r| r.writable != want) {
            // An eventfd read or write of 8 bytes fails only on a bad descriptor, which an
            // owned one is not; the state is kept as it was if it ever did.
            if r.fd.set_writable(want).is_ok() {
                r.writable = want;
            }
        }
    }

    /// The readiness descriptor, made (in the current state) on first use.
    pub fn readiness_fd(&mut self) -> io::Result<std::os::fd::RawFd> {
        if self.readiness.is_none() {
            self.readiness = Some(Readiness { fd: sys::WritableFd::new()?, writable: true });
            self.sync_readiness();
        }
        Ok(self.readiness.as_ref().map_or(-1, |r| r.fd.raw()))
    }

    /// The flow's failure as an error, if it failed.
    pub fn failure(&self) -> Option<io::Error> {
        self.error.as_ref().map(|(k, m)| io::Error::new(*k, m.clone()))
    }

    /// Records a failure (the first one wins) and lets the driver go.
    pub fn fail(&mut self, kind: io::ErrorKind, message: String) {
        if self.error.is_none() {
            self.error = Some((kind, message));
        }
        self.released = true;
        self.sync_readiness();
    }
}

/// How often a waiting call looks whether the driver thread is still alive.
const LIVENESS_CHECK: Duration = Duration::from_secs(1);

/// How long an application call may wait for the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Not at all: `WouldBlock` if the call cannot complete now.
    Never,
    /// Until the call completes or the flow ends.
    Forever,
    /// Until this instant, then `TimedOut`.
    Until(Instant),
}

impl Wait {
    /// Waits up to `timeout` (`None`: forever), unless `nonblocking`.
    pub fn up_to(timeout: Option<Duration>, nonblocking: bool) -> Wait {
        match (nonblocking, timeout) {
            (true, _) => Wait::Never,
            (false, None) => Wait::Forever,
            (false, Some(t)) => Wait::Until(Instant::now() + t),
        }
    }
}

/// The shared part of a flow.
pub(crate) struct Shared {
    state: Mutex<SharedState>,
    cond: Condvar,
    /// Application calls waiting on `cond` (changed under the lock), so that a notification
    /// nobody waits for costs no system call.
    waiters: AtomicUsize,
}

impl Shared {
    /// A fresh flow's state with a queue of `capacity` bytes.
    pub fn new(capacity: usize, info: FlowInfo) -> Arc<Shared> {
        Arc::new(Shared {
            state: Mutex::new(SharedState {
                queue: SendQueue::new(capacity),
                info,
                ..SharedState::default()
            }),
            cond: Condvar::new(),
            waiters: AtomicUsize::new(0),
        })
    }

    /// Locks the state; a poisoned lock (a panicking application thread) is still usable.
    pub fn lock(&self) -> MutexGuard<'_, SharedState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes every application call waiting on this flow; call it after changing the state
    /// under the lock. A call that found its condition false counted itself a waiter under
    /// that lock before it began to wait, so a change made under the lock after that sees it
    /// here (the lock orders the two), and one made before is seen by the call itself.
    pub fn notify(&self) {
        if self.waiters.load(Ordering::Relaxed) > 0 {
            self.cond.notify_all();
        }
    }

    /// Waits until `done` returns a result, as `wait` allows. The flow's failure ends every
    /// wait with that failure (checked before `done`); `what` names the call in a timeout.
    pub fn wait_for<T>(
        &self,
        wait: Wait,
        what: &str,
        mut done: impl FnMut(&mut SharedState) -> Option<io::Result<T>>,
    ) -> io::Result<T> {
        let mut st = self.lock();
        loop {
            if let Some(e) = st.failure() {
                return Err(e);
            }
            if let Some(result) = done(&mut st) {
                return result;
            }
            if crate::driver::has_died() {
                return Err(crate::driver::died_error());
            }
            // Even a wait without a deadline wakes now and then to see whether the driver is
            // still there (it also notifies every flow when it goes).
            let left = match wait {
                Wait::Never => return Err(io::ErrorKind::WouldBlock.into()),
                Wait::Forever => LIVENESS_CHECK,
                Wait::Until(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!("alcc {what} timed out"),
                        ));
                    }
                    left.min(LIVENESS_CHECK)
                }
            };
            self.waiters.fetch_add(1, Ordering::Relaxed);
            st = self.cond.wait_timeout(st, left).unwrap_or_else(|p| p.into_inner()).0;
            self.waiters.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_end_with_the_result_a_failure_or_the_deadline() {
        let shared = Shared::new(4, FlowInfo::default());
        let r = shared.wait_for(Wait::Never, "test", |_| None::<io::Result<()>>);
        assert_eq!(r.unwrap_err().kind(), io::ErrorKind::WouldBlock);
        let r = shared.wait_for(Wait::up_to(Some(Duration::from_millis(20)), false), "test", |_| {
            None::<io::Result<()>>
        });
        let e = r.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(e.to_string().contains("alcc test timed out"), "{e}");
        // Another thread completes the wait.
        let s2 = shared.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            s2.lock().finished = true;
            s2.notify();
        });
        shared.wait_for(Wait::Forever, "test", |st| st.finished.then_some(Ok(()))).unwrap();
        t.join().unwrap();
        // A failure ends every wait, before the condition is looked at.
        shared.lock().fail(io::ErrorKind::ConnectionReset, "reset".into());
        let e = shared.wait_for(Wait::Forever, "test", |_| Some(Ok(()))).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionReset);
    }

    /// Whether `fd` polls writable now.
    fn writable(fd: std::os::fd::RawFd) -> bool {
        sys::poll_one(fd, libc::POLLOUT, Some(Duration::ZERO)).unwrap()
    }

    /// EPOLLOUT events an epoll instance reports now (without waiting).
    fn edges(ep: &sys::Epoll) -> usize {
        let mut ev = Vec::with_capacity(8);
        ep.wait(&mut ev, Some(Duration::ZERO)).unwrap();
        ev.iter().filter(|e| e.events & libc::EPOLLOUT as u32 != 0).count()
    }

    #[test]
    fn readiness_follows_the_queue_level_triggered() {
        let shared = Shared::new(8, FlowInfo::default());
        let fd = shared.lock().readiness_fd().unwrap();
        assert!(writable(fd), "an empty queue accepts a write");
        let mut st = shared.lock();
        st.queue.push(b"abcd");
        st.sync_readiness();
        assert!(writable(fd), "a queue with room accepts a write");
        st.queue.push(b"efghij");
        st.sync_readiness();
        assert!(!writable(fd), "no POLLOUT while the queue is full");
        assert!(!writable(fd), "and again: the state does not change by being polled");
        st.queue.consume(1);
        st.sync_readiness();
        assert!(writable(fd), "room again after the driver took one byte");
        st.queue.push(b"z");
        st.sync_readiness();
        assert!(!writable(fd));
        // A flow that failed (or ended) is writable: the write returns the error at once.
        st.fail(io::ErrorKind::ConnectionReset, "reset".into());
        assert!(writable(fd));
    }

    #[test]
    fn readiness_gives_one_edge_per_transition_to_writable() {
        let shared = Shared::new(8, FlowInfo::default());
        let fd = shared.lock().readiness_fd().unwrap();
        let ep = sys::Epoll::new().unwrap();
        ep.add(fd, (libc::EPOLLOUT | libc::EPOLLET) as u32, 7).unwrap();
        assert_eq!(edges(&ep), 1, "the first registration reports the current state once");
        assert_eq!(edges(&ep), 0, "edge-triggered: nothing more without a change");
        let mut st = shared.lock();
        // A partial write fills the queue: no edge for becoming full.
        assert_eq!(st.queue.push(b"0123456789"), 8);
        st.sync_readiness();
        assert_eq!(edges(&ep), 0);
        // Syncing again without a change makes no edge either.
        st.sync_readiness();
        assert_eq!(edges(&ep), 0);
        // The driver moves bytes out: exactly one edge, which is not missed.
        st.queue.consume(3);
        st.sync_readiness();
        assert_eq!(edges(&ep), 1);
        // More room is not a new transition.
        st.queue.consume(3);
        st.sync_readiness();
        assert_eq!(edges(&ep), 0);
        // Full again, then room again: a new edge.
        st.queue.push(b"abcdefgh");
        st.sync_readiness();
        assert_eq!(edges(&ep), 0);
        st.queue.consume(8);
        st.sync_readiness();
        assert_eq!(edges(&ep), 1);
        // A failure while full wakes the watcher once.
        st.queue.push(b"abcdefgh");
        st.sync_readiness();
        st.fail(io::ErrorKind::ConnectionReset, "reset".into());
        assert_eq!(edges(&ep), 1);
        assert_eq!(edges(&ep), 0);
    }

    #[test]
    fn readiness_made_late_starts_in_the_current_state() {
        let shared = Shared::new(4, FlowInfo::default());
        shared.lock().queue.push(b"abcd");
        let fd = shared.lock().readiness_fd().unwrap();
        assert!(!writable(fd));
        assert_eq!(shared.lock().readiness_fd().unwrap(), fd, "one descriptor per flow");
    }
}
