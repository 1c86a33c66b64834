//! End-to-end tests of the emulator: real namespaces, TUN devices and kernel TCP. They need
//! root (CI runs as root); otherwise each skips visibly (alcc-testenv; a failure in CI). Each checks that it leaves no namespace
//! or link behind, even when it fails.

mod common;

use std::time::Duration;

use alcc_link::{Dir, DirectionConfig, QueueSpec, Schedule, Side, Testbed, TestbedConfig};
use alcc_trace::Log;
use common::*;

fn twelve_mbps(delay_ms: u64) -> TestbedConfig {
    TestbedConfig::symmetric(DirectionConfig::new(Schedule::constant(1).unwrap()), delay_ms * 1000)
}

#[test]
fn ping_rtt_is_twice_the_one_way_delay() {
    alcc_testenv::require!(emulator_needs());
    let _g = serial();
    leak_checked(|| {
        let tb = Testbed::start(twelve_mbps(20)).unwrap();
        // ping itself runs with real-time priority when chrt exists: on a loaded machine an
        // ordinary ping is sometimes descheduled between reading the clock and sending.
        let chrt = std::path::Path::new("/usr/bin/chrt").exists();
        let mut cmd = tb.command(Side::Client, if chrt { "chrt" } else { "ping" });
        if chrt {
            cmd.args(["-f", "5", "ping"]);
        }
        let out = cmd.args(["-n", "-c", "30", "-i", "0.05", &tb.server_addr().to_string()]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "ping failed: {text} {}", String::from_utf8_lossy(&out.stderr));
        // 64 bytes from 10.64.0.1: icmp_seq=1 ttl=64 time=40.2 ms
        let mut rtts: Vec<f64> = text
            .lines()
            .filter_map(|l| l.split("time=").nth(1))
            .map(|t| t.trim_end_matches(" ms").parse().unwrap())
            .collect();
        assert_eq!(rtts.len(), 30, "{text}");
        rtts.sort_by(f64::total_cmp);
        let mean = rtts.iter().sum::<f64>() / rtts.len() as f64;
        let median = rtts[rtts.len() / 2];
        let report = tb.stop();
        for (name, d) in [("uplink", &report.uplink), ("downlink", &report.downlink)] {
            eprintln!(
                "{name} lateness: mean {:.1} us, max {} us, >100us {} of {}",
                d.lateness.mean_us(),
                d.lateness.max_us,
                d.lateness.over_100us,
                d.lateness.packets
            );
        }
        eprintln!(
            "ping over 12 Mbit/s, 20 ms each way: min {:.3} median {median:.3} mean {mean:.3} max {:.3} ms",
            rtts[0],
            rtts[rtts.len() - 1]
        );
        // The fastest ping shows what the emulator adds: nothing beyond the two 20 ms delays
        // but its scheduling precision. The rest of the distribution also holds the host's timer
        // latency, which on this VM moved the median from 40.3 ms (quiet, `bench/link.sh`) to
        // 43.6 ms from one run to the next; so the median is only checked against gross errors
        // (a delay applied twice or not at all). The 40 +- 0.5 ms figure is a benchmark figure.
        assert!((40.0..=40.5).contains(&rtts[0]), "fastest RTT {} ms, expected 40-40.5", rtts[0]);
        assert!(median < 50.0, "median RTT {median} ms");
        assert_eq!(report.downlink.counters.departures, 30);
        assert_eq!(report.uplink.counters.departures, 30);
    });
}

#[test]
fn kernel_cubic_fills_a_constant_12_mbps_link_and_the_log_shows_its_capacity() {
    alcc_testenv::require!(emulator_needs());
    let _g = serial();
    leak_checked(|| {
        let log = temp_path("cubic12.log");
        let mut config = twelve_mbps(20);
        config.downlink.log = Some(log.clone());
        let tb = Testbed::start(config).unwrap();
        let w = bulk_download(&tb, "cubic", Duration::from_secs(2), Duration::from_secs(8));
        let report = tb.stop();
        eprintln!(
            "cubic over 12 Mbit/s: utilization {:.4}; downlink lateness mean {:.1} us, max {} us, >500us {} of {}",
            w.utilization(),
            report.downlink.lateness.mean_us(),
            report.downlink.lateness.max_us,
            report.downlink.lateness.over_500us,
            report.downlink.lateness.packets
        );
        assert!(w.utilization() >= 0.97, "utilization {}", w.utilization());

        let parsed = Log::read_file(&log).unwrap();
        std::fs::remove_file(&log).unwrap();
        assert_eq!(parsed.header.propagation_delay_us, Some(20_000));
        let opportunities: Vec<u64> = parsed
            .events
            .iter()
            .filter_map(|e| match e {
                alcc_trace::LogEvent::Opportunity { at_us, .. } => Some(*at_us),
                _ => None,
            })
            .collect();
        let (first, last) = (opportunities[0], *opportunities.last().unwrap());
        let capacity = (opportunities.len() - 1) as f64 * 1500.0 * 8.0 / ((last - first) as f64 / 1e6);
        eprintln!("capacity from the log: {:.3} Mbit/s", capacity / 1e6);
        assert!((capacity / 12e6 - 1.0).abs() < 0.01, "capacity {capacity}");
        let rec = parsed.to_recording();
        let departed = rec.packets.iter().filter(|p| p.departed_us.is_some()).count() as u64;
        assert_eq!(departed, report.downlink.counters.departures);
        let mut delays: Vec<u64> = rec.packets.iter().filter_map(|p| p.one_way_delay_us(20_000)).collect();
        assert!(quantile(&mut delays, 0.0) >= 20_000);
    });
}

#[test]
fn bernoulli_loss_of_one_percent_over_100k_packets() {
    alcc_testenv::require!(emulator_needs());
    let _g = serial();
    leak_checked(|| {
        // 100 opportunities per ms (1.2 Gbit/s): the queue never limits.
        let mut config =
            TestbedConfig::symmetric(DirectionConfig::new(Schedule::constant(100).unwrap()), 1_000);
        config.uplink.loss = 0.01;
        config.seed = 42;
        let tb = Testbed::start(config).unwrap();
        let received = udp_blast(&tb, 102_000, 100, 50);
        let report = tb.stop();
        let up = report.uplink;
        let offered = up.counters.arrivals + up.lost;
        let rate = up.lost as f64 / offered as f64;
        eprintln!(
            "loss 1%: {} of {} packets lost ({:.4} %), {} received",
            up.lost,
            offered,
            rate * 100.0,
            received
        );
        assert!(offered >= 100_000, "only {offered} packets reached the link");
        assert!((rate - 0.01).abs() <= 0.001, "loss rate {rate}");
        assert_eq!(up.counters.drops, 0);
        assert_eq!(up.delivered, up.counters.departures);
        // The receiving socket's buffer may overflow on a loaded machine: not the link's loss.
        assert!(received > 0);
        assert_eq!(report.downlink.lost, 0);
    });
}

#[test]
fn processes_in_both_namespaces_are_killed_when_the_testbed_goes() {
    alcc_testenv::require!(emulator_needs());
    let _g = serial();
    leak_checked(|| {
        let tb = Testbed::start(twelve_mbps(5)).unwrap();
        let mut server = tb.command(Side::Server, "sleep").arg("600").spawn().unwrap();
        let mut client = tb.command(Side::Client, "sh").args(["-c", "sleep 600 & exit 3"]).spawn().unwrap();
        // A failing client command: its background child stays in the namespace.
        assert_eq!(client.wait().unwrap().code(), Some(3));
        let env =
            tb.command(Side::Client, "sh").args(["-c", "echo $ALCC_SERVER $MAHIMAHI_BASE"]).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&env.stdout).trim(), "10.64.0.1 10.64.0.1");
        drop(tb);
        // Killed by the guard (it is our child, so reap it).
        let status = server.wait().unwrap();
        assert!(!status.success());
    });
}

#[test]
fn queue_limit_and_trace_errors_are_reported_before_anything_is_created() {
    // Needs no root: these fail while parsing.
    let e = QueueSpec::parse("droptail", Some("packets=ten")).unwrap_err().to_string();
    assert!(e.contains("`ten`"), "{e}");
    let e = Schedule::new(vec![5, 3]).unwrap_err().to_string();
    assert!(e.contains("before the previous one"), "{e}");
    alcc_testenv::require!(emulator_needs());
    let _g = serial();
    leak_checked(|| {
        let mut config = twelve_mbps(1);
        config.downlink.loss = 2.0;
        let e = Testbed::start(config).unwrap_err().to_string();
        assert!(e.contains("between 0 and 1"), "{e}");
    });
}

#[test]
fn drop_tail_bounds_the_queue_of_a_bulk_transfer() {
    alcc_testenv::require!(emulator_needs());
    let _g = serial();
    leak_checked(|| {
        let mut config = twelve_mbps(10);
        config.downlink.queue = QueueSpec::DropTail { packets: Some(20), bytes: None };
        let log = temp_path("droptail.log");
        config.downlink.log = Some(log.clone());
        let tb = Testbed::start(config).unwrap();
        let w = bulk_download(&tb, "cubic", Duration::from_secs(1), Duration::from_secs(4));
        let report = tb.stop();
        let parsed = Log::read_file(&log).unwrap();
        std::fs::remove_file(&log).unwrap();
        let rec = parsed.to_recording();
        let max_queueing =
            rec.packets.iter().filter_map(|p| p.departed_us.map(|d| d - p.sent_us)).max().unwrap();
        eprintln!(
            "droptail 20 packets: utilization {:.3}, drops {}, max queueing {} us",
            w.utilization(),
            report.downlink.counters.drops,
            max_queueing
        );
        assert!(report.downlink.counters.drops > 0);
        // 20 queued packets plus the one in transit drain in 21 ms at one per ms.
        assert!(max_queueing <= 21_000, "{max_queueing}");
        assert_eq!(w.end.drops, report.downlink.counters.drops);
        let _ = Dir::Uplink;
    });
}

/// A namespace left by a process that was killed with SIGKILL (no cleanup ran) is removed by
/// the next process; one whose creator still runs is left alone.
#[test]
fn namespaces_of_a_killed_run_are_removed_and_a_live_ones_kept() {
    alcc_testenv::require!(emulator_needs());
    let _g = serial();
    let ip = |args: &[&str]| {
        let st = std::process::Command::new("ip").args(args).status().unwrap();
        assert!(st.success(), "ip {args:?}");
    };
    let listed = |name: &str| {
        let out = std::process::Command::new("ip").args(["netns", "list"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).lines().any(|l| l.split_whitespace().next() == Some(name))
    };
    // A pid that no longer runs: a child that has exited and been reaped.
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    // A pid that runs: a child that sleeps until the test ends.
    let mut live = std::process::Command::new("sleep").arg("30").spawn().unwrap();
    let orphan = format!("alcc-{dead_pid}-0-server");
    let kept = format!("alcc-{}-0-server", live.id());
    ip(&["netns", "add", &orphan]);
    ip(&["netns", "add", &kept]);
    let removed = alcc_link::netns::remove_orphans();
    let orphan_listed = listed(&orphan);
    let kept_listed = listed(&kept);
    // Clean up before asserting, so that a failure leaves nothing behind.
    let _ = std::process::Command::new("ip").args(["netns", "del", &orphan]).status();
    let _ = std::process::Command::new("ip").args(["netns", "del", &kept]).status();
    let _ = live.kill();
    let _ = live.wait();
    assert!(removed.contains(&orphan), "removed {removed:?}");
    assert!(!orphan_listed, "the killed run's namespace is still there");
    assert!(kept_listed, "a live process's namespace was removed");
}
