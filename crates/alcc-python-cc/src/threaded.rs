//! A Python controller on a thread of its own, so that a slow one does not hold up the engine's
//! driver thread (and with it every other flow of the process).
//!
//! [`Threaded`] is what the driver sees: its hooks queue the event and return at once, and its
//! decision is the last one the controller's thread published. That thread takes the GIL once
//! per batch of queued events, runs them through a [`PyController`] in order and publishes the
//! decision and timer. The decision therefore lags the events by the time Python takes; while
//! events wait, [`Threaded::next_timer`] asks the driver to look again 1 ms later, so a new
//! decision is acted on within a millisecond of being made even when no ACK comes. Memos are not
//! supported (`on_sent`'s return is dropped: the packet has left before Python sees it).
//! An exception fails the flow at the driver's next call into the controller.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use alcc_cc::event::{AckSample, Decision, LossEvent, SentPacket};
use alcc_cc::metrics::Metrics;
use alcc_cc::time::Time;
use alcc_cc::{Controller, RttSamples};
use pyo3::prelude::*;

use crate::controller::{Failure, Hooks, PyController};

/// How soon the driver looks again while the controller's thread has work.
const POLL: Duration = Duration::from_millis(1);

/// One event for the controller's thread.
enum Event {
    Sent(Time, SentPacket),
    Ack(Time, AckSample),
    Loss(Time, LossEvent),
    Timer(Time),
}

/// What the driver and the controller's thread share.
struct State {
    events: Vec<Event>,
    busy: bool,
    decision: Decision,
    next_timer: Option<Time>,
    stop: bool,
}

struct Shared {
    state: Mutex<State>,
    ready: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The driver's side of a Python controller running on its own thread.
pub struct Threaded {
    shared: Arc<Shared>,
    hooks: Hooks,
    rtt_samples: RttSamples,
    failure: Failure,
    last_now: Mutex<Time>,
}

impl Threaded {
    /// Starts `controller`'s thread (named `alcc-py-cc`).
    pub fn start(controller: PyController, hooks: Hooks) -> std::io::Result<Threaded> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                events: Vec::new(),
                busy: false,
                decision: controller.decision(),
                next_timer: controller.next_timer(),
                stop: false,
            }),
            ready: Condvar::new(),
        });
        let failure = controller.failure();
        let rtt_samples = controller.rtt_samples();
        let theirs = Arc::clone(&shared);
        std::thread::Builder::new().name("alcc-py-cc".into()).spawn(move || serve(&theirs, controller))?;
        Ok(Threaded { shared, hooks, rtt_samples, failure, last_now: Mutex::new(Time::ZERO) })
    }

    /// Queues `event` at `now`; unwinds with the traceback if the controller has raised.
    fn push(&self, now: Time, event: Event) {
        self.check();
        *self.last_now.lock().unwrap_or_else(PoisonError::into_inner) = now;
        self.shared.lock().events.push(event);
        self.shared.ready.notify_one();
    }

    /// Fails the flow (by unwinding into the driver) once the controller has raised.
    fn check(&self) {
        if let Some(traceback) = self.failure.get() {
            std::panic::resume_unwind(Box::new(traceback));
        }
    }
}

/// The controller's thread: runs queued events in batches under one GIL hold each.
fn serve(shared: &Shared, mut controller: PyController) {
    loop {
        let events = {
            let mut st = shared.lock();
            while st.events.is_empty() && !st.stop {
                st = shared.ready.wait(st).unwrap_or_else(PoisonError::into_inner);
            }
            if st.stop {
                return;
            }
            st.busy = true;
            std::mem::take(&mut st.events)
        };
        // One GIL hold for the batch (each hook passes the exit gate again); the batch ends
        // early when the flow is dropped or Python begins to exit.
        let Some(pass) = crate::finalizing::enter() else {
            return;
        };
        Python::attach(|_| {
            for event in &events {
                if shared.lock().stop {
                    break;
                }
                match event {
                    Event::Sent(now, packet) => drop(controller.on_sent(*now, packet)),
                    Event::Ack(now, ack) => controller.on_ack(*now, ack),
                    Event::Loss(now, loss) => controller.on_loss(*now, loss),
                    Event::Timer(now) => controller.on_timer(*now),
                }
            }
        });
        drop(pass);
        let mut st = shared.lock();
        st.decision = controller.decision();
        st.next_timer = controller.next_timer();
        st.busy = false;
    }
}

impl Drop for Threaded {
    /// Stops the controller's thread after the event it is running, if any.
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.ready.notify_one();
    }
}

impl Controller for Threaded {
    fn name(&self) -> &'static str {
        "python"
    }

    fn on_sent(&mut self, now: Time, packet: &SentPacket) -> u64 {
        if self.hooks.on_sent {
            self.push(now, Event::Sent(now, *packet));
        }
        0
    }

    fn on_ack(&mut self, now: Time, ack: &AckSample) {
        if self.hooks.on_ack {
            self.push(now, Event::Ack(now, *ack));
        }
    }

    fn on_loss(&mut self, now: Time, loss: &LossEvent) {
        if self.hooks.on_loss {
            self.push(now, Event::Loss(now, *loss));
        }
    }

    fn on_timer(&mut self, now: Time) {
        let due = self.shared.lock().next_timer.is_some_and(|t| t <= now);
        if due {
            self.push(now, Event::Timer(now));
        } else {
            self.check();
        }
    }

    fn next_timer(&self) -> Option<Time> {
        let st = self.shared.lock();
        let poll = (st.busy || !st.events.is_empty())
            .then(|| self.last_now.lock().unwrap_or_else(PoisonError::into_inner).saturating_add(POLL));
        match (poll, st.next_timer) {
            (Some(p), Some(t)) => Some(p.min(t)),
            (p, t) => p.or(t),
        }
    }

    fn rtt_samples(&self) -> RttSamples {
        self.rtt_samples
    }

    fn decision(&self) -> Decision {
        self.shared.lock().decision
    }

    fn metrics(&self) -> Metrics {
        let d = self.decision();
        let mut metrics =
            Metrics::new(d.window, if self.failure.get().is_some() { "failed" } else { "python" });
        metrics.pacing_rate = d.pacing_rate;
        metrics
    }
}
