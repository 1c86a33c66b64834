//! Helpers of the end-to-end tests: the root need, leak check, serialisation, traffic.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use alcc_link::{probe, Testbed};

/// The tests share the machine's network setup: run them one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// What the end-to-end tests need (alcc-testenv: a skip is visible, and a failure in CI).
pub fn emulator_needs() -> alcc_testenv::Needs {
    alcc_testenv::needs().root("the emulator makes network namespaces and TUN devices")
}

pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn our_namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().expect("ip netns list");
    let prefix = format!("alcc-{}-", std::process::id());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with(&prefix))
        .map(|l| l.to_string())
        .collect()
}

fn links() -> String {
    let out = Command::new("ip").args(["-o", "link"]).output().expect("ip link");
    // Names of our devices (others may create theirs on a shared machine meanwhile).
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split(':').nth(1).map(|s| s.trim().to_string()))
        .filter(|name| name.starts_with("alcc"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Runs `body`, then checks (even when it panicked) that no namespace of this process and no
/// new link in the root namespace remain, then re-raises the body's panic.
pub fn leak_checked(body: impl FnOnce() + std::panic::UnwindSafe) {
    let before_ns = our_namespaces();
    let before_links = links();
    let result = std::panic::catch_unwind(body);
    assert_eq!(our_namespaces(), Vec::<String>::new(), "namespaces leaked (before: {before_ns:?})");
    assert_eq!(links(), before_links, "alcc links appeared in the root namespace");
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

pub fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("alcc-link-test-{}-{name}", std::process::id()))
}

pub fn bulk_download(tb: &Testbed, cc: &str, warmup: Duration, total: Duration) -> probe::Window {
    probe::bulk_download(tb, cc, warmup, total).unwrap()
}

pub fn udp_blast(tb: &Testbed, count: u64, size: usize, burst: u64) -> u64 {
    probe::udp_blast(tb, count, size, burst).unwrap()
}

/// The `p`-quantile (nearest rank) of `values`.
pub fn quantile(values: &mut [u64], p: f64) -> u64 {
    values.sort_unstable();
    let rank = ((p * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}
