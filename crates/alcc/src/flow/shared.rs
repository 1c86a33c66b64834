//! What the application side of a flow and the driver both touch, under one lock: the send
//! queue, the close and abort requests, the flow's fate and its latest [`FlowInfo`], and the
//! one place where an application call waits for the driver ([`Shared::wait_for`]).

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::flow::control::Control;
use crate::info::FlowInfo;
use crate::underlay::FlowUnderlay;

/// Bytes the application wrote that the driver has not yet handed to the kernel.
#[derive(Debug, Default)]
pub(crate) struct SendQueue {
    bytes: VecDeque<u8>,
    capacity: usize,
}

impl SendQueue {
    /// An empty queue that holds at most `capacity` bytes (at least 1).
    pub fn new(capacity: usize) -> SendQueue {
        SendQueue { bytes: VecDeque::new(), capacity: capacity.max(1) }
    }

    /// Bytes queued.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Queues as much of `buf` as fits; returns how much.
    pub fn push(&mut self, buf: &[u8]) -> usize {
        let n = self.capacity.saturating_sub(self.bytes.len()).min(buf.len());
        self.bytes.extend(&buf[..n]);
        n
    }

    /// Whether the queue is full.
    pub fn is_full(&self) -> bool {
        self.bytes.len() >= self.capacity
    }

    /// The first `len` bytes (at most what is queued) as the ring buffer holds them: at most
    /// two slices, handed to the kernel as they are (no copy in user space).
    pub fn front(&self, len: usize) -> [&[u8]; 2] {
        let (a, b) = self.bytes.as_slices();
        let first = &a[..len.min(a.len())];
        let second = &b[..(len - first.len()).min(b.len())];
        [first, second]
    }

    /// Drops the first `n` bytes (they went to the kernel).
    pub fn consume(&mut self, n: usize) {
        self.bytes.drain(..n.min(self.bytes.len()));
    }
}

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

/// The shared state proper.
#[derive(Default)]
pub(crate) struct SharedState {
    /// Bytes waiting for the driver.
    pub queue: SendQueue,
    /// The application closed (or dropped) its stream: flush, then FIN.
    pub closing: bool,
    /// Everything was handed to the kernel, the FIN sent and all acknowledged.
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
    /// The driver's latest snapshot.
    pub info: FlowInfo,
}

impl SharedState {
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
        })
    }

    /// Locks the state; a poisoned lock (a panicking application thread) is still usable.
    pub fn lock(&self) -> MutexGuard<'_, SharedState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes every application call waiting on this flow.
    pub fn notify(&self) {
        self.cond.notify_all();
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
            st = self.cond.wait_timeout(st, left).unwrap_or_else(|p| p.into_inner()).0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_front_of_a_wrapped_queue_is_two_slices() {
        let mut q = SendQueue::new(8);
        assert_eq!(q.push(b"abcdefghij"), 8);
        assert!(q.is_full());
        q.consume(6);
        assert_eq!(q.push(b"123456"), 6);
        let [a, b] = q.front(5);
        assert_eq!([a, b].concat(), b"gh123");
        let [a, b] = q.front(100);
        assert_eq!([a, b].concat(), b"gh123456");
        q.consume(100);
        assert!(q.is_empty());
    }

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

    proptest! {
        /// The queue behaves as a bounded FIFO of bytes, however it wraps.
        #[test]
        fn queue_is_a_bounded_fifo(ops in proptest::collection::vec((any::<bool>(), 0usize..40), 1..100)) {
            let mut q = SendQueue::new(32);
            let mut model: VecDeque<u8> = VecDeque::new();
            let mut next = 0u8;
            for (push, n) in ops {
                if push {
                    let data: Vec<u8> = (0..n).map(|_| { next = next.wrapping_add(1); next }).collect();
                    let took = q.push(&data);
                    prop_assert_eq!(took, n.min(32 - model.len()));
                    model.extend(&data[..took]);
                    next = next.wrapping_sub((n - took) as u8);
                } else {
                    let [a, b] = q.front(n);
                    let want: Vec<u8> = model.iter().take(n).copied().collect();
                    prop_assert_eq!([a, b].concat(), want);
                    q.consume(n);
                    model.drain(..n.min(model.len()));
                }
                prop_assert_eq!(q.len(), model.len());
            }
        }
    }
}
