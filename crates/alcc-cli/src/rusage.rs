//! `--rusage FILE`: the process's CPU time and peak memory as JSON, for the experiment
//! harness's per-run CPU column.

use std::path::Path;

use anyhow::{Context, Result};
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
}

impl From<sys::Usage> for RusageReport {
    fn from(u: sys::Usage) -> Self {
        RusageReport {
            user_s: u.user_s,
            system_s: u.system_s,
            cpu_s: u.user_s + u.system_s,
            max_rss_kb: u.max_rss_kb,
        }
    }
}

/// Writes getrusage(RUSAGE_SELF) of this process to `path`.
pub fn write_self(path: &Path) -> Result<()> {
    let report = RusageReport::from(sys::usage_self().context("getrusage")?);
    let text = serde_json::to_string_pretty(&report)?;
    std::fs::write(path, text + "\n").with_context(|| format!("{}: cannot write", path.display()))
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
}
