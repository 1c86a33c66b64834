//! What a test needs from the machine, checked in one place.
//!
//! Some of alcc's tests need root (network namespaces, TUN devices, BPF), a program (`curl`,
//! `ss`, a C compiler), the shared research traces, or more open descriptors than the default.
//! Where a need is not met the test cannot run. Such a test must not pass silently: this crate
//! makes every skip
//!
//! - visible: a `SKIPPED <binary>::<test>: <reason>` line on the test's stderr, written past
//!   libtest's output capture, and a line in the file `$ALCC_SKIP_LOG` when it is set (`make
//!   test` sets it and ends with one line listing every skip and why, or saying there was none);
//! - a failure in CI: when `CI` is set (to anything but empty, `0` or `false`; `.ci/run` sets
//!   `CI=true`), the test panics with the reason instead of skipping.
//!
//! ```no_run
//! use alcc_testenv::{needs, require};
//!
//! #[test]
//! fn emulated_download() {
//!     let env = require!(needs().root("the emulator makes network namespaces").program("curl")
//!         .trace("alcc-paper/CampusWalk.trace"));
//!     let trace = env.trace("alcc-paper/CampusWalk.trace");
//!     // ...
//! }
//! ```
//!
//! The trace directory has one default for every crate, the README's: `$ALCC_TRACE_DIR`, else
//! `shared/traces` beside the repository (`../shared/traces` from its root).

mod sys;

pub use sys::{detach_filter, drop_incoming_fins};

use std::ffi::OsStr;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The variable whose value (`1`, `true`, ...) makes a skip a test failure.
pub const STRICT_VAR: &str = "CI";

/// The variable naming the file every skip is appended to (one `test<TAB>reason` line each).
pub const LOG_VAR: &str = "ALCC_SKIP_LOG";

/// The shared traces: `$ALCC_TRACE_DIR`, else `../shared/traces` from the repository's root.
pub fn trace_dir() -> PathBuf {
    match std::env::var_os("ALCC_TRACE_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => {
            let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
            let repo = manifest.join("../..").canonicalize().unwrap_or_else(|_| manifest.join("../.."));
            repo.parent().map_or_else(|| repo.join("../shared/traces"), |p| p.join("shared/traces"))
        }
    }
}

/// Whether a skip is a failure here (the variable [`STRICT_VAR`] is set and not false).
pub fn strict() -> bool {
    strict_value(std::env::var_os(STRICT_VAR).as_deref())
}

fn strict_value(v: Option<&OsStr>) -> bool {
    v.is_some_and(|v| !matches!(v.to_str(), Some("" | "0" | "false" | "FALSE" | "False")))
}

/// The running test as `binary::test` (libtest names each test's thread after the test).
pub fn test_name() -> String {
    let binary = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .map(|stem| strip_hash(&stem).to_string())
        .unwrap_or_default();
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    if binary.is_empty() {
        test.to_string()
    } else {
        format!("{binary}::{test}")
    }
}

/// `loopback-0123456789abcdef` -> `loopback` (cargo's hash suffix of test binaries).
fn strip_hash(stem: &str) -> &str {
    match stem.rsplit_once('-') {
        Some((name, hash)) if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) => name,
        _ => stem,
    }
}

/// Records that the running test cannot run, and why: a `SKIPPED` line on stderr and in
/// `$ALCC_SKIP_LOG`. In CI ([`strict`]) it panics instead, failing the test. The caller returns
/// right after (or use [`require!`]).
pub fn skip(reason: &str) {
    let log = std::env::var_os(LOG_VAR).filter(|p| !p.is_empty()).map(PathBuf::from);
    // Straight to the descriptor: libtest captures `eprintln!`, not writes to stderr itself.
    record(&test_name(), reason, strict(), log.as_deref(), &mut std::io::stderr().lock());
}

fn record(test: &str, reason: &str, strict: bool, log: Option<&Path>, stderr: &mut dyn Write) {
    let reason = reason.replace(['\n', '\t'], " ");
    if strict {
        panic!("{test} cannot run here: {reason} (a skip is a failure when {STRICT_VAR} is set)");
    }
    let _ = writeln!(stderr, "SKIPPED {test}: {reason}");
    if let Some(path) = log {
        // One short write with O_APPEND: lines of parallel tests do not interleave.
        if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(path) {
            let _ = f.write_all(format!("{test}\t{reason}\n").as_bytes());
        }
    }
}

/// What a test needs; see [`needs`].
#[derive(Debug, Default)]
#[must_use = "call .check() or pass it to require!"]
pub struct Needs {
    missing: Vec<String>,
}

/// Starts a list of needs.
pub fn needs() -> Needs {
    Needs::default()
}

impl Needs {
    /// Root, for `why` (`"the emulator makes network namespaces"`).
    pub fn root(mut self, why: &str) -> Needs {
        if !sys::is_root() {
            self.missing.push(format!("needs root ({why})"));
        }
        self
    }

    /// A program in `PATH` (scripts/setup.sh installs every one the tests use).
    pub fn program(mut self, name: &str) -> Needs {
        let path = std::env::var_os("PATH").unwrap_or_default();
        if !std::env::split_paths(&path).any(|d| is_executable(&d.join(name))) {
            self.missing.push(format!("`{name}` is not installed (scripts/setup.sh installs it)"));
        }
        self
    }

    /// A file of the trace directory ([`trace_dir`]), `rel` relative to it.
    pub fn trace(mut self, rel: &str) -> Needs {
        let path = trace_dir().join(rel);
        if !path.is_file() {
            self.missing
                .push(format!("{} not found (set ALCC_TRACE_DIR to the shared traces)", path.display()));
        }
        self
    }

    /// At least `n` open descriptors allowed (`ulimit -n`; `make test` raises it to the hard
    /// limit).
    pub fn open_files(mut self, n: u64) -> Needs {
        match sys::open_files_limit() {
            Some(limit) if limit >= n => {}
            Some(limit) => self.missing.push(format!("`ulimit -n` is {limit}, below the {n} it needs")),
            None => self.missing.push("cannot read the descriptor limit (getrlimit)".to_string()),
        }
        self
    }

    /// A kernel congestion control the kernel has loaded (tcp_available_congestion_control).
    pub fn kernel_cc(mut self, name: &str) -> Needs {
        let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
            .unwrap_or_default();
        if !available.split_whitespace().any(|n| n == name) {
            self.missing.push(format!(
                "kernel congestion control `{name}` is not loaded (have: {})",
                available.trim()
            ));
        }
        self
    }

    /// Any other condition: `met`, or `reason` says what is missing and how to get it.
    pub fn that(mut self, met: bool, reason: &str) -> Needs {
        if !met {
            self.missing.push(reason.to_string());
        }
        self
    }

    /// What is missing, joined; `None` when every need is met.
    pub fn missing(&self) -> Option<String> {
        (!self.missing.is_empty()).then(|| self.missing.join("; "))
    }

    /// `Some` when every need is met; otherwise records the skip ([`skip`]: a failure in CI)
    /// and returns `None`.
    pub fn check(self) -> Option<Env> {
        match self.missing() {
            None => Some(Env { trace_dir: trace_dir() }),
            Some(reason) => {
                skip(&reason);
                None
            }
        }
    }
}

/// What a test whose needs are met gets.
#[derive(Debug, Clone)]
pub struct Env {
    trace_dir: PathBuf,
}

impl Env {
    /// A file of the trace directory.
    pub fn trace(&self, rel: &str) -> PathBuf {
        self.trace_dir.join(rel)
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `require!(needs)`: the [`Env`] when every need is met, else records the skip (a failure in
/// CI) and returns from the test.
#[macro_export]
macro_rules! require {
    ($needs:expr) => {
        match $crate::Needs::check($needs) {
            Some(env) => env,
            None => return,
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_strict_variable_is_false_only_when_unset_empty_or_false() {
        assert!(!strict_value(None));
        for off in ["", "0", "false", "FALSE"] {
            assert!(!strict_value(Some(OsStr::new(off))), "{off}");
        }
        for on in ["1", "true", "yes"] {
            assert!(strict_value(Some(OsStr::new(on))), "{on}");
        }
    }

    #[test]
    fn cargo_hashes_are_stripped_from_binary_names() {
        assert_eq!(strip_hash("loopback-0123456789abcdef"), "loopback");
        assert_eq!(strip_hash("link_cli-0123456789abcdeF"), "link_cli");
        assert_eq!(strip_hash("paper-traces"), "paper-traces");
        assert_eq!(strip_hash("x-0123"), "x-0123");
    }

    #[test]
    fn unmet_needs_say_what_and_how() {
        let n = needs()
            .program("alcc-no-such-program")
            .trace("no/such/trace.file")
            .open_files(u64::MAX)
            .that(false, "a reason of its own")
            .that(true, "never shown");
        let m = n.missing().unwrap();
        assert!(m.contains("`alcc-no-such-program` is not installed (scripts/setup.sh installs it)"), "{m}");
        assert!(m.contains("no/such/trace.file not found (set ALCC_TRACE_DIR"), "{m}");
        assert!(m.contains("below the 18446744073709551615 it needs"), "{m}");
        assert!(m.ends_with("; a reason of its own"), "{m}");
        assert_eq!(needs().program("sh").open_files(1).missing(), None);
    }

    #[test]
    fn a_skip_is_logged_or_in_ci_fails() {
        let dir = std::env::temp_dir().join(format!("alcc-testenv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("skipped.log");
        let mut stderr = Vec::new();
        record("bin::one", "needs root (x)", false, Some(&log), &mut stderr);
        record("bin::two", "line\nbreak", false, Some(&log), &mut stderr);
        assert_eq!(
            String::from_utf8(stderr).unwrap(),
            "SKIPPED bin::one: needs root (x)\nSKIPPED bin::two: line break\n"
        );
        let failed =
            std::panic::catch_unwind(|| record("bin::three", "no curl", true, Some(&log), &mut Vec::new()))
                .unwrap_err();
        let text = std::fs::read_to_string(&log).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        // The failing one is a failure, not a skip: it is not in the log.
        assert_eq!(text, "bin::one\tneeds root (x)\nbin::two\tline break\n");
        let msg = failed.downcast_ref::<String>().unwrap();
        assert!(msg.contains("bin::three cannot run here: no curl") && msg.contains("CI"), "{msg}");
    }

    #[test]
    fn the_default_trace_dir_is_beside_the_repository() {
        if std::env::var_os("ALCC_TRACE_DIR").is_some_and(|v| !v.is_empty()) {
            assert_eq!(trace_dir(), PathBuf::from(std::env::var_os("ALCC_TRACE_DIR").unwrap()));
        } else {
            let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap();
            assert!(trace_dir().ends_with("shared/traces"), "{}", trace_dir().display());
            assert_eq!(trace_dir().parent().unwrap().parent().unwrap(), repo.parent().unwrap());
        }
    }
}
