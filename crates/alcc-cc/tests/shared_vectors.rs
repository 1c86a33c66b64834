//! Test vectors shared with the Java library (`java/`): the same event sequences drive our
//! Rust controllers here and their Java ports there, and both must make the decisions written
//! in `testdata/vectors/*.csv` after every event.
//!
//! Each file is one flow: a header line naming the controller spec and MSS, then one line per
//! event with the decision that follows it (format in `testdata/README.md`). The sequences come
//! from the simulator (a cellular trace with 1 % loss) and from a seeded random script (chunks
//! of several packets, losses, long silences). When a Rust controller changes on purpose,
//! regenerate with `ALCC_WRITE_VECTORS=1 cargo test -p alcc-cc --test shared_vectors` and say
//! so in the commit: the Java port must then change the same way.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alcc_cc::event::{AckSample, Decision, LossEvent, SentPacket};
use alcc_cc::sim::{Capacity, Scenario};
use alcc_cc::{Config, Controller, Metrics, Time};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// The flows: (file name, controller spec, source of events).
fn flows() -> Vec<(&'static str, String, Source)> {
    let root = repo_root();
    let crafted = format!("{root}/testdata/mdi/crafted.csv");
    let builtin = format!("{root}/crates/alcc-cc/models/mdi-verus.csv");
    vec![
        ("copa-sim.csv", "copa".into(), Source::Sim),
        ("copa-default-mode-sim.csv", "copa:delta=0.1,mode=default".into(), Source::Sim),
        ("copa-random.csv", "copa".into(), Source::Random(11)),
        // The drain check's variant: the random script drains (the 4 s simulator run does not).
        ("copa-drain-random.csv", "copa:mode=drain".into(), Source::Random(11)),
        ("mdi-verus-sim.csv", format!("mdi:model={builtin},seed=7"), Source::Sim),
        ("mdi-crafted-random.csv", format!("mdi:model={crafted},seed=3"), Source::Random(12)),
    ]
}

#[derive(Clone, Copy)]
enum Source {
    /// 4 s of the simulator on a synthetic cellular trace with 1 % random loss.
    Sim,
    /// A seeded random script.
    Random(u64),
}

const MSS: u64 = 1500;

/// A controller wrapper that writes every call and the decision after it.
struct Script {
    inner: Box<dyn Controller>,
    lines: Arc<Mutex<String>>,
}

impl Script {
    fn log(&self, line: std::fmt::Arguments<'_>) {
        let d = self.inner.decision();
        let timer = self.inner.next_timer().map_or(-1, |t| t.as_micros() as i64);
        let pacing = d.pacing_rate.map_or(-1, |r| r as i64);
        let mut out = self.lines.lock().unwrap();
        writeln!(out, "{line},{},{pacing},{timer}", d.window).unwrap();
    }
}

impl Controller for Script {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn on_sent(&mut self, now: Time, p: &SentPacket) -> u64 {
        let memo = self.inner.on_sent(now, p);
        self.log(format_args!("sent,{},{},{},{},{memo}", now.as_micros(), p.seq, p.bytes, p.bytes_in_flight));
        memo
    }
    fn on_ack(&mut self, now: Time, a: &AckSample) {
        self.inner.on_ack(now, a);
        self.log(format_args!(
            "ack,{},{},{},{},{},{},{},{}",
            now.as_micros(),
            a.seq,
            a.bytes,
            a.sent_at.as_micros(),
            a.rtt.as_nanos(),
            a.bytes_in_flight,
            a.delivered,
            a.memo
        ));
    }
    fn on_loss(&mut self, now: Time, l: &LossEvent) {
        self.inner.on_loss(now, l);
        self.log(format_args!(
            "loss,{},{},{},{},{},{}",
            now.as_micros(),
            l.seq,
            l.bytes,
            l.sent_at.as_micros(),
            l.bytes_in_flight,
            l.memo
        ));
    }
    fn on_timer(&mut self, now: Time) {
        self.inner.on_timer(now);
        self.log(format_args!("timer,{}", now.as_micros()));
    }
    fn next_timer(&self) -> Option<Time> {
        self.inner.next_timer()
    }
    fn decision(&self) -> Decision {
        self.inner.decision()
    }
    fn metrics(&self) -> Metrics {
        self.inner.metrics()
    }
}

fn record(spec: &str, source: Source) -> String {
    let config = Config { mss: MSS, seed: 1 };
    let inner = alcc_cc::registry::build(spec, &config).unwrap();
    let lines = Arc::new(Mutex::new(String::new()));
    let mut script = Script { inner, lines: Arc::clone(&lines) };
    match source {
        Source::Sim => {
            let model = alcc_trace::synth::CellularModel { duration_ms: 4000, ..Default::default() };
            let trace = alcc_trace::synth::cellular(&model, 5).unwrap();
            let mut s = Scenario::new(Capacity::Trace(trace.opportunities_ms().to_vec()));
            s.duration = Duration::from_secs(4);
            s.loss = 0.01;
            s.packet_bytes = MSS;
            s.run_with(Box::new(script), None).unwrap();
        }
        Source::Random(seed) => random_script(&mut script, seed),
    }
    let body = lines.lock().unwrap().clone();
    format!("# spec={spec} mss={MSS}\n{body}")
}

/// Sends of 1-4 packets, ACKs and losses of outstanding chunks in random order, waits from
/// 0 to 60 ms and sometimes 3 s, and timers served when due.
fn random_script(c: &mut Script, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut now = Time::from_millis(1);
    let mut outstanding: Vec<(u64, u64, Time, u64)> = Vec::new();
    let (mut seq, mut in_flight, mut delivered) = (0u64, 0u64, 0u64);
    for _ in 0..3000 {
        match rng.random_range(0..20u32) {
            0..=6 => {
                let bytes = MSS * rng.random_range(1..=4u64);
                in_flight += bytes;
                let memo = c.on_sent(now, &SentPacket { seq, bytes, bytes_in_flight: in_flight });
                outstanding.push((seq, bytes, now, memo));
                seq += 1;
            }
            7..=12 if !outstanding.is_empty() => {
                let i = rng.random_range(0..outstanding.len().min(3));
                let (s, bytes, sent_at, memo) = outstanding.remove(i);
                in_flight -= bytes;
                delivered += bytes;
                let rtt = now - sent_at;
                let ack =
                    AckSample { seq: s, bytes, sent_at, rtt, bytes_in_flight: in_flight, delivered, memo };
                c.on_ack(now, &ack);
            }
            13 if !outstanding.is_empty() => {
                let (s, bytes, sent_at, memo) = outstanding.remove(0);
                in_flight -= bytes;
                c.on_loss(now, &LossEvent { seq: s, bytes, sent_at, bytes_in_flight: in_flight, memo });
            }
            14 => now += Duration::from_secs(3),
            _ => now += Duration::from_micros(rng.random_range(0..60_000)),
        }
        if c.next_timer().is_some_and(|t| t <= now) {
            c.on_timer(now);
        }
    }
}

#[test]
fn rust_controllers_reproduce_the_shared_vectors() {
    let write = std::env::var_os("ALCC_WRITE_VECTORS").is_some();
    for (file, spec, source) in flows() {
        let path = testdata().join("vectors").join(file);
        // The spec in the file names models relative to the repository root.
        let got = record(&spec, source).replace(&format!("{}/", repo_root()), "");
        if write {
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if got != want {
            let line = got.lines().zip(want.lines()).position(|(a, b)| a != b).map_or(0, |i| i + 1);
            panic!(
                "{}: the Rust controller no longer makes these decisions (first difference at line {line}; \
                 lines {} vs {}). If the change is intended, regenerate with ALCC_WRITE_VECTORS=1 and \
                 change the Java port (java/) the same way.",
                path.display(),
                got.lines().count(),
                want.lines().count()
            );
        }
    }
}

fn repo_root() -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap().display().to_string()
}
