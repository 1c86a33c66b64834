//! What happens to a process's flows when it exits: [`flush_at_exit`], run by an `atexit`
//! hook the engine installs with its first flow.
//!
//! A TCP socket's bytes survive the process: once `write` returned, the kernel holds them
//! and keeps sending after `close` and after `exit`. An alcc stream's bytes sit in the
//! engine's user-space queue (up to [`Options::queue_capacity`](crate::Options), 1 MiB by
//! default) until the controller lets them into the kernel, and the driver thread that does
//! so ends with the process. So at exit every flow of the process is closed (as if
//! dropped) and the hook waits, at most a bounded linger, until each is *handed over*:
//! kernel mode, every byte and the FIN are in the kernel, which delivers them as it would
//! a plain socket's; framed and UDP mode, the flow finished (the peer's ACK frames must find
//! the socket open, or the kernel would answer them with a reset). Bytes still queued when
//! the linger ends are lost, and the hook says so on stderr: never silently.
//!
//! The linger is `ALCC_EXIT_LINGER` seconds (default [`DEFAULT_EXIT_LINGER`]; `0` turns the
//! hook off). The LD_PRELOAD shim and C programs may call [`flush_at_exit`] themselves
//! (`alcc_exit_flush` in alcc.h); a second call finds the flows handed over and returns
//! at once. A forked child does not wait for its parent's flows, nor does the driver thread
//! (should a controller ever call `exit`).

use std::io;
use std::sync::{Arc, Mutex, Once, Weak};
use std::time::{Duration, Instant};

use crate::driver::{self, FlowId};
use crate::flow::shared::{Ending, Shared, Wait};
use crate::sys;

/// The exit hook's linger when `ALCC_EXIT_LINGER` is not set.
pub const DEFAULT_EXIT_LINGER: Duration = Duration::from_secs(10);

/// A flow of this process the exit hook must wait for.
struct Tracked {
    /// The process that started it (a forked child's copy of the list is not its own).
    pid: u32,
    id: FlowId,
    shared: Weak<Shared>,
}

/// Every flow started, weakly: a flow the driver and the application both let go of drops
/// out by itself.
static FLOWS: Mutex<Vec<Tracked>> = Mutex::new(Vec::new());

static HOOK: Once = Once::new();

/// Remembers a new flow for the exit hook (and installs the hook with the first one).
pub(crate) fn track(id: FlowId, shared: &Arc<Shared>) {
    HOOK.call_once(|| {
        // Without the hook, queued bytes could be lost at exit: say so once, go on.
        if let Err(e) = sys::at_exit(run_at_exit) {
            eprintln!("alcc: cannot install the exit hook ({e}); bytes still queued at exit will be lost");
        }
    });
    let mut flows = FLOWS.lock().unwrap_or_else(|p| p.into_inner());
    // Forget flows that are gone, now and then (amortised: when the list doubled).
    if flows.len() >= 64 && flows.len().is_power_of_two() {
        flows.retain(|t| t.shared.strong_count() > 0);
    }
    flows.push(Tracked { pid: std::process::id(), id, shared: Arc::downgrade(shared) });
}

/// Closes every flow of this process that is still open (as dropping its stream would) and
/// waits until each is handed over (module docs), at most `linger`. Returns how many were
/// not: their queued bytes are lost when the process ends.
pub fn flush_at_exit(linger: Duration) -> usize {
    if std::thread::current().name() == Some("alcc-driver") {
        return 0;
    }
    let pid = std::process::id();
    let flows: Vec<(FlowId, Arc<Shared>)> = FLOWS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter(|t| t.pid == pid)
        .filter_map(|t| t.shared.upgrade().map(|s| (t.id, s)))
        .collect();
    if flows.is_empty() {
        return 0;
    }
    let Ok(driver) = driver::get() else { return flows.len() };
    for (id, shared) in &flows {
        let mut st = shared.lock();
        if st.released {
            continue;
        }
        if !st.ending.is_ended() {
            st.ending = Ending::Finish;
        }
        st.sync_readiness();
        if !st.wake_pending {
            st.wake_pending = true;
            drop(st);
            driver.wake(*id);
        }
    }
    let deadline = Instant::now() + linger;
    let mut left = 0;
    for (_, shared) in &flows {
        let r = shared.wait_for(Wait::Until(deadline), "exit flush", |st| {
            (st.handed_over || st.released).then_some(Ok(()))
        });
        // A flow that failed has told its application (or had nobody to tell); only one
        // still holding bytes when the linger ran out is counted.
        if r.is_err_and(|e| e.kind() == io::ErrorKind::TimedOut) {
            left += 1;
        }
    }
    left
}

/// The linger `ALCC_EXIT_LINGER` asks for (seconds), [`DEFAULT_EXIT_LINGER`] if unset; an
/// unusable value is reported and the default used. For a caller of [`flush_at_exit`] that
/// ends the process another way than exit(3) (the preload shim's `_exit`).
pub fn exit_linger() -> Duration {
    let Ok(v) = std::env::var("ALCC_EXIT_LINGER") else { return DEFAULT_EXIT_LINGER };
    match v.trim().parse::<f64>().ok().and_then(|s| Duration::try_from_secs_f64(s).ok()) {
        Some(d) => d,
        None => {
            eprintln!(
                "alcc: ALCC_EXIT_LINGER={v:?} is not a number of seconds; using {}s",
                DEFAULT_EXIT_LINGER.as_secs()
            );
            DEFAULT_EXIT_LINGER
        }
    }
}

/// The `atexit` hook: [`flush_at_exit`] with the configured linger. No panic leaves it.
extern "C" fn run_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        let linger = exit_linger();
        if linger.is_zero() {
            return;
        }
        let left = flush_at_exit(linger);
        if left > 0 {
            eprintln!(
                "alcc: exiting with {left} flow(s) still holding queued bytes after the {:.1}s exit linger \
                 (ALCC_EXIT_LINGER); those bytes are lost",
                linger.as_secs_f64()
            );
        }
    });
}
