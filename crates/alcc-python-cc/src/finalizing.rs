//! The interpreter's end: no controller hook may start once Python has begun to exit.
//!
//! Controllers run on threads Python did not create: the engine's driver thread (inline and
//! batched delivery) and each threaded controller's own. A thread that asks for the GIL while
//! the interpreter finalizes is ended by CPython with `pthread_exit`, which cannot unwind
//! through Rust frames, so the whole process aborts (seen: a threaded controller still working
//! through its queued ACKs when the script ended; SIGABRT in 2 of 4 runs of the isolation bench).
//!
//! The gate: every call into a controller passes [`enter`], and the `alcc` package's `atexit`
//! hook calls [`close`], which refuses new calls and waits (without the GIL) for the ones under
//! way. After that, hooks are skipped: a flow keeps its controller's last decision, which is
//! what the engine's exit flush (`alcc::flush_at_exit`) then sends by.

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Calls under way, and whether new ones are refused.
struct Gate {
    state: Mutex<(usize, bool)>,
    idle: Condvar,
}

static GATE: Gate = Gate { state: Mutex::new((0, false)), idle: Condvar::new() };

/// Proof that a controller call may run; the call is counted until this is dropped.
#[must_use = "the call is allowed only while the pass is held"]
pub struct Pass(());

impl Drop for Pass {
    fn drop(&mut self) {
        let mut state = GATE.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.0 -= 1;
        if state.0 == 0 {
            GATE.idle.notify_all();
        }
    }
}

/// A pass for one call into Python, or `None` once the interpreter has begun to exit.
pub fn enter() -> Option<Pass> {
    let mut state = GATE.state.lock().unwrap_or_else(PoisonError::into_inner);
    if state.1 {
        return None;
    }
    state.0 += 1;
    Some(Pass(()))
}

/// Refuses every later call and waits up to `patience` for the calls under way to end. Call it
/// without holding the GIL (they may need it to finish). Returns how many were still running.
pub fn close(patience: Duration) -> usize {
    let deadline = Instant::now() + patience;
    let mut state = GATE.state.lock().unwrap_or_else(PoisonError::into_inner);
    state.1 = true;
    while state.0 > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        state = GATE.idle.wait_timeout(state, left).unwrap_or_else(PoisonError::into_inner).0;
    }
    state.0
}
