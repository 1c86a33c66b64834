//! `--rusage FILE`: the process's CPU time and peak memory as JSON, for the experiment
//! harness's per-run CPU column; and `alcc rusage`, which writes the same file for another
//! program (the authors' reference senders, which cannot write it themselves).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::sys;

/// What the rusage file holds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RusageReport {
    /// User CPU time, seconds.
    pub user_s: f64,
    /// System CPU time, seconds.
    pub system_s: f64,
    /// `user_s + system_s`.
    pub cpu_s: f64,
    /// Peak resident set size, KiB.
    pub max_rss_kb: u64,
    /// Voluntary context switches (getrusage's ru_nvcsw): how often the process slept and was
    /// woken, e.g. a driver's wake-ups. Absent from files written before it was added.
    #[serde(default)]
    pub voluntary_switches: u64,
    /// Times the alcc driver thread woke up (`alcc serve` only; its `epoll_wait` returns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_wakeups: Option<u64>,
    /// Flow steps the alcc driver thread ran (`alcc serve` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_steps: Option<u64>,
}

impl From<sys::Usage> for RusageReport {
    fn from(u: sys::Usage) -> Self {
        RusageReport {
            user_s: u.user_s,
            system_s: u.system_s,
            cpu_s: u.user_s + u.system_s,
            max_rss_kb: u.max_rss_kb,
            voluntary_switches: u.voluntary_switches,
            driver_wakeups: None,
            driver_steps: None,
        }
    }
}

/// Writes getrusage(RUSAGE_SELF) of this process to `path`.
pub fn write_self(path: &Path) -> Result<()> {
    write(path, RusageReport::from(sys::usage_self().context("getrusage")?))
}

/// Writes getrusage(RUSAGE_SELF) of this process and its alcc driver's wake-ups and steps to
/// `path`.
pub fn write_self_and_driver(path: &Path) -> Result<()> {
    let mut report = RusageReport::from(sys::usage_self().context("getrusage")?);
    let driver = alcc::driver_stats().context("the alcc driver's counters")?;
    report.driver_wakeups = Some(driver.wakeups);
    report.driver_steps = Some(driver.step_latency.step.count);
    write(path, report)
}

fn write(path: &Path, report: RusageReport) -> Result<()> {
    let text = serde_json::to_string_pretty(&report)?;
    std::fs::write(path, text + "\n").with_context(|| format!("{}: cannot write", path.display()))
}

/// Options of `alcc rusage`.
#[derive(Args, Debug)]
pub struct RusageArgs {
    /// Write the program's CPU time and peak memory here (JSON, as `alcc serve --rusage`).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Stop the program with SIGKILL after this many seconds if it is still running.
    #[arg(long, value_name = "S")]
    seconds: Option<f64>,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    command: Vec<String>,
}

/// How often the child is polled for having exited.
const POLL: Duration = Duration::from_millis(20);

/// Runs the program (until it exits, or until the deadline, then SIGKILL), writes its resource
/// usage and returns the exit status to exit with: the program's own, or 0 when the deadline
/// stopped it.
pub fn run(args: RusageArgs) -> Result<i32> {
    let limit = match args.seconds {
        Some(s) if !(s.is_finite() && s > 0.0 && s <= 1e6) => {
            bail!("--seconds {s}: must be a number of seconds between 0 and 1000000")
        }
        Some(s) => Some(Duration::from_secs_f64(s)),
        None => None,
    };
    let (program, rest) = args.command.split_first().context("no program given")?;
    let mut child =
        Command::new(program).args(rest).spawn().with_context(|| format!("cannot start `{program}`"))?;
    let start = Instant::now();
    let status: Option<ExitStatus> = loop {
        if let Some(status) = child.try_wait().context("waiting for the program")? {
            break Some(status);
        }
        if limit.is_some_and(|l| start.elapsed() >= l) {
            // Reaped below, so that its usage counts among the children's.
            let _ = child.kill();
            child.wait().context("waiting for the stopped program")?;
            break None;
        }
        std::thread::sleep(POLL);
    };
    write(&args.out, RusageReport::from(sys::usage_children().context("getrusage")?))?;
    Ok(match status {
        None => 0,
        Some(s) => {
            s.code().unwrap_or_else(|| 128 + std::os::unix::process::ExitStatusExt::signal(&s).unwrap_or(0))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_the_sum_and_grows_with_work() {
        let before = RusageReport::from(sys::usage_self().unwrap());
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        std::hint::black_box(x);
        let after = RusageReport::from(sys::usage_self().unwrap());
        assert!((after.cpu_s - after.user_s - after.system_s).abs() < 1e-12);
        assert!(after.cpu_s > before.cpu_s, "{before:?} -> {after:?}");
        assert!(after.max_rss_kb > 0);
    }

    fn args(out: &Path, seconds: Option<f64>, command: &[&str]) -> RusageArgs {
        RusageArgs {
            out: out.to_path_buf(),
            seconds,
            command: command.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn a_program_is_measured_and_stopped_at_its_deadline() {
        let dir = std::env::temp_dir().join(format!("alcc-rusage-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("r.json");
        // Busy for a while, then sleeping past the deadline: stopped, status 0, CPU counted.
        let start = Instant::now();
        let code = run(args(
            &out,
            Some(1.0),
            &["sh", "-c", "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; sleep 30"],
        ))
        .unwrap();
        let took = start.elapsed();
        let report: RusageReport = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        // Its own status when it ends by itself.
        let own = run(args(&out, Some(30.0), &["sh", "-c", "exit 3"])).unwrap();
        let missing = run(args(&out, None, &["/nonexistent/program"])).unwrap_err();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(code, 0);
        assert!(took >= Duration::from_secs(1) && took < Duration::from_secs(10), "{took:?}");
        assert!(report.cpu_s > 0.0 && report.max_rss_kb > 0, "{report:?}");
        assert_eq!(own, 3);
        assert!(format!("{missing:#}").contains("/nonexistent/program"), "{missing:#}");
    }
}
