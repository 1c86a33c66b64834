//! Named network namespaces (`ip netns add`), each removed by its guard on drop, and by
//! [`cleanup_all`] when the process is told to terminate (see [`install_signal_cleanup`]).
//!
//! Names are `alcc-<pid>-<n>-<role>`: unique per process, and a name left over by a crashed run
//! that had the same pid is skipped (`ip netns add` refuses existing names). Removing a
//! namespace first kills every process still inside it (`ip netns pids`), so nothing leaks.
//! A process killed with SIGKILL cannot remove its namespaces: the first [`Netns::create`] of
//! every later process removes those whose creator no longer runs ([`remove_orphans`]).

use std::collections::BTreeSet;
use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use crate::error::LinkError;
use crate::sys;

/// Names of the namespaces this process created and has not removed yet.
static LIVE: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
static COUNTER: AtomicU64 = AtomicU64::new(0);
/// Orphans are looked for once per process.
static ORPHANS_REMOVED: Once = Once::new();

/// Runs `ip ARGS`, returning its output or an error with its standard error.
pub(crate) fn ip(args: &[&str]) -> Result<Output, LinkError> {
    let command = format!("ip {}", args.join(" "));
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| LinkError::Command { command: command.clone(), detail: e.to_string() })?;
    if !out.status.success() {
        let detail = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(LinkError::Command { command, detail });
    }
    Ok(out)
}

/// A network namespace that exists while this guard lives.
#[derive(Debug)]
pub struct Netns {
    name: String,
    handle: File,
}

impl Netns {
    /// Creates a fresh namespace whose name ends with `role` (e.g. `server`).
    pub fn create(role: &str) -> Result<Netns, LinkError> {
        if !sys::is_root() {
            return Err(LinkError::NotRoot);
        }
        ORPHANS_REMOVED.call_once(|| {
            remove_orphans();
        });
        let pid = std::process::id();
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let name = format!("alcc-{pid}-{n}-{role}");
            // Register first, so that a signal arriving during `ip netns add` still removes it.
            lock_live().insert(name.clone());
            match ip(&["netns", "add", &name]) {
                Ok(_) => {}
                Err(LinkError::Command { detail, .. }) if detail.contains("exists") => {
                    lock_live().remove(&name);
                    continue;
                }
                Err(e) => {
                    lock_live().remove(&name);
                    return Err(e);
                }
            }
            let path = format!("/run/netns/{name}");
            return match File::open(&path) {
                Ok(handle) => Ok(Netns { name, handle }),
                Err(e) => {
                    remove(&name);
                    Err(LinkError::io(format!("opening {path}"), e))
                }
            };
        }
    }

    /// The namespace's name, as `ip netns` knows it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `f` on a new thread inside this namespace and returns its result. Sockets and
    /// devices `f` creates belong to the namespace and stay usable from any thread.
    pub fn run_in<T: Send>(&self, f: impl FnOnce() -> T + Send) -> io::Result<T> {
        std::thread::scope(|s| {
            let worker = s.spawn(|| {
                sys::enter_netns(self.handle.as_fd())?;
                Ok(f())
            });
            match worker.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    }

    /// A command that runs `program` inside this namespace (`ip netns exec NAME program`).
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }

    /// Kills every process inside the namespace (SIGTERM, then SIGKILL after `grace`).
    pub fn kill_processes(&self, grace: Duration) {
        kill_processes(&self.name, grace);
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        remove(&self.name);
    }
}

fn lock_live() -> std::sync::MutexGuard<'static, BTreeSet<String>> {
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn pids_in(name: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    match ip(&["netns", "pids", name]) {
        Ok(out) => String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .filter(|&p| p != me)
            .collect(),
        Err(_) => Vec::new(),
    }
}

fn kill_processes(name: &str, grace: Duration) {
    let pids = pids_in(name);
    if pids.is_empty() {
        return;
    }
    for &p in &pids {
        let _ = sys::kill(p, libc::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline && !pids_in(name).is_empty() {
        std::thread::sleep(Duration::from_millis(20));
    }
    for p in pids_in(name) {
        let _ = sys::kill(p, libc::SIGKILL);
    }
}

/// Kills what runs in namespace `name`, deletes it and forgets it.
fn remove(name: &str) {
    kill_processes(name, Duration::from_millis(300));
    let _ = ip(&["netns", "del", name]);
    lock_live().remove(name);
}

/// The pid in a name this module gives (`alcc-<pid>-<n>-<role>`), if `name` is one.
fn creator_of(name: &str) -> Option<u32> {
    let mut parts = name.strip_prefix("alcc-")?.splitn(3, '-');
    let pid = parts.next()?.parse().ok()?;
    parts.next()?.parse::<u64>().ok()?;
    parts.next()?;
    Some(pid)
}

/// Removes the namespaces of this module's naming whose creating process no longer exists
/// (it was killed with SIGKILL, or died before its cleanup), killing what still runs inside.
/// A creator's pid that was reused by another process keeps its namespaces (they are left,
/// never those of a live process). Returns the names removed.
pub fn remove_orphans() -> Vec<String> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/run/netns") else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        match creator_of(&name) {
            Some(pid) if pid != me && !std::path::Path::new(&format!("/proc/{pid}")).exists() => {
                remove(&name);
                removed.push(name);
            }
            _ => {}
        }
    }
    removed
}

/// Removes every namespace this process created and still holds.
pub fn cleanup_all() {
    let names: Vec<String> = lock_live().iter().cloned().collect();
    for name in names {
        remove(&name);
    }
}

/// The termination signal received, if any (0 = none).
static INTERRUPTED: AtomicI32 = AtomicI32::new(0);

/// How long the main thread has, after a termination signal, to stop its testbeds itself
/// (flushing their logs) before the signal thread removes everything and exits.
const SIGNAL_GRACE: Duration = Duration::from_secs(5);

/// The termination signal this process received, once [`install_signal_cleanup`] is active.
pub fn interrupted() -> Option<i32> {
    match INTERRUPTED.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

/// Makes SIGINT, SIGTERM and SIGHUP end the experiment cleanly: every process inside this
/// process's namespaces is killed (so the command the caller waits for returns, and the caller
/// stops its testbed, flushing the logs, and can ask [`interrupted`]); if the caller has not
/// exited within 5 s, every namespace is removed and the process exits with status 128 +
/// signal. Call it first thing in `main`, before any thread is started: it blocks those
/// signals in the calling thread, which threads created later inherit, and waits for them on a
/// dedicated thread.
pub fn install_signal_cleanup() -> Result<(), LinkError> {
    sys::block_termination_signals().map_err(|e| LinkError::io("blocking termination signals", e))?;
    std::thread::Builder::new()
        .name("alcc-link-signals".into())
        .spawn(|| {
            if let Ok(sig) = sys::wait_termination_signal() {
                INTERRUPTED.store(sig, Ordering::SeqCst);
                let names: Vec<String> = lock_live().iter().cloned().collect();
                for name in &names {
                    kill_processes(name, Duration::from_millis(300));
                }
                std::thread::sleep(SIGNAL_GRACE);
                cleanup_all();
                std::process::exit(128 + sig);
            }
        })
        .map_err(|e| LinkError::io("starting the signal thread", e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::creator_of;

    #[test]
    fn only_this_modules_names_have_a_creator() {
        assert_eq!(creator_of("alcc-1234-0-server"), Some(1234));
        assert_eq!(creator_of("alcc-99-17-client"), Some(99));
        assert_eq!(creator_of("alcc-1234-server"), None);
        assert_eq!(creator_of("alcc-x-0-server"), None);
        assert_eq!(creator_of("other-1234-0-server"), None);
        assert_eq!(creator_of("alcc-1234-0"), None);
    }
}
