//! The soak (issue 18 item 4): thousands of transfers of random sizes (0 B to 10 MB, seeded,
//! log-uniform) from one server process, over loopback and through the link emulator with
//! random loss, with random client resets and aborts, a mix of controllers and of the three
//! modes (kernel, framed, udp). It checks that every completed transfer arrives
//! byte-identical, that every transfer the client ends early is an error at the server
//! (never a panic, never a silent success), and that the server's descriptors and RSS stay
//! flat, sampled while it is idle after every block of transfers.
//!
//! `bench/soak.sh [--quick]` runs it (`cargo bench -p alcc-cli --bench soak -- ARGS`); the
//! emulator needs root (`--emulated 0` runs loopback alone, unprivileged). Arguments:
//! `--quick` (the CI form: 300 transfers, 200 over loopback; else 10 000, 3 000 emulated), `--loopback N`, `--emulated N`,
//! `--loopback-lanes N`, `--emulated-lanes N` (concurrent transfers), `--max-size BYTES`,
//! `--block N` (transfers between samples), `--seed N`, `--rate-mbps R`, `--delay-ms D`,
//! `--loss P` (the emulated link, both directions), `--series FILE` (the samples as CSV),
//! `--grouping peer|none` (default peer: the server couples its flows to one peer, alcc's
//! default; none runs each flow alone),
//! `--modes kernel,framed,udp|kernel,framed` (default all three).
//! `SOAK_TRACE=1` prints every transfer as the client and the server see it;
//! `SOAK_SERVER_WRAP="heaptrack -o FILE"` starts the server under that program (loopback
//! alone), for a heap profile.

mod client;
mod content;
mod plan;
mod server;

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use alcc::Mode;
use alcc_link::{DirectionConfig, QueueSpec, Schedule, Side, Testbed, TestbedConfig, SERVER_ADDR};

use crate::client::Seen;
use crate::plan::{Fate, Path, PlanSpec, Transfer};

/// How much the server's RSS may grow from the sample after the warm-up to the last (KiB):
/// allocator noise, not a per-transfer leak (a KiB per transfer would show as 10 MB).
const RSS_SLACK_KIB: u64 = 8 << 10;
/// How long the coordinator waits for the server to report a block's transfers.
const BLOCK_TIMEOUT: Duration = Duration::from_secs(600);

struct Args {
    spec: PlanSpec,
    quick: bool,
    serve: bool,
    block: usize,
    rate_mbps: u64,
    delay_ms: u64,
    loss: f64,
    series: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let quick = argv.iter().any(|a| a == "--quick");
    let mut a = Args {
        spec: PlanSpec {
            seed: 1,
            loopback: if quick { 200 } else { 7000 },
            emulated: if quick { 100 } else { 3000 },
            loopback_lanes: 4,
            emulated_lanes: if quick { 4 } else { 8 },
            max_size: 10_000_000,
            coupled: true,
            udp: true,
        },
        quick,
        serve: false,
        block: if quick { 50 } else { 250 },
        rate_mbps: 96,
        delay_ms: 5,
        loss: 0.01,
        series: None,
    };
    let mut it = argv.iter();
    while let Some(k) = it.next() {
        let mut value = |name: &str| -> Result<String, String> {
            it.next().cloned().ok_or_else(|| format!("soak: {name} needs a value"))
        };
        let num = |name: &str, v: String| -> Result<u64, String> {
            v.parse().map_err(|_| format!("soak: {name} {v:?} is not a whole number"))
        };
        match k.as_str() {
            "--quick" | "--bench" => {}
            "--serve" => a.serve = true,
            "--seed" => a.spec.seed = num(k, value(k)?)?,
            "--loopback" => a.spec.loopback = num(k, value(k)?)? as usize,
            "--emulated" => a.spec.emulated = num(k, value(k)?)? as usize,
            "--loopback-lanes" => a.spec.loopback_lanes = num(k, value(k)?)?.max(1) as usize,
            "--emulated-lanes" => a.spec.emulated_lanes = num(k, value(k)?)?.max(1) as usize,
            "--max-size" => a.spec.max_size = num(k, value(k)?)?.max(1),
            "--block" => a.block = num(k, value(k)?)?.max(1) as usize,
            "--rate-mbps" => a.rate_mbps = num(k, value(k)?)?.max(12),
            "--delay-ms" => a.delay_ms = num(k, value(k)?)?,
            "--loss" => {
                let v = value(k)?;
                a.loss = v
                    .parse()
                    .ok()
                    .filter(|p| (0.0..1.0).contains(p))
                    .ok_or(format!("soak: --loss {v:?} is not in [0, 1)"))?;
            }
            "--series" => a.series = Some(value(k)?),
            "--modes" => {
                a.spec.udp = match value(k)?.as_str() {
                    "kernel,framed,udp" => true,
                    "kernel,framed" => false,
                    v => return Err(format!("soak: --modes {v:?}: kernel,framed,udp or kernel,framed")),
                }
            }
            "--grouping" => {
                a.spec.coupled = match value(k)?.as_str() {
                    "peer" => true,
                    "none" => false,
                    v => return Err(format!("soak: --grouping {v:?}: peer or none")),
                }
            }
            other => return Err(format!("soak: unknown argument {other:?}")),
        }
    }
    Ok(a)
}

/// The server's descriptors and resident memory (KiB), from /proc.
fn sample_process(pid: u32) -> (usize, u64) {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:")?.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    (fds, rss)
}

/// What the server reported, by transfer index.
#[derive(Default)]
struct Reports {
    outcomes: HashMap<usize, String>,
    ended: bool,
}

/// The server process and its reports.
struct ServerProcess {
    child: Child,
    ports: Vec<u16>,
    reports: Arc<(Mutex<Reports>, Condvar)>,
}

impl ServerProcess {
    fn start(mut command: Command, spec: &PlanSpec) -> io::Result<ServerProcess> {
        let mut child = command
            .arg("--serve")
            .args(spec.to_args())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let stdout = child.stdout.take().ok_or_else(|| io::Error::other("no server stdout"))?;
        let mut lines = BufReader::new(stdout).lines();
        // The first line that names the ports (a wrapping profiler may print before it).
        let mut first = String::new();
        for line in lines.by_ref() {
            first = line?;
            if first.starts_with("ports ") || std::env::var_os("SOAK_SERVER_WRAP").is_none() {
                break;
            }
        }
        let ports: Vec<u16> = first
            .strip_prefix("ports ")
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if ports.len() != spec.lanes() {
            let _ = child.kill();
            return Err(io::Error::other(format!(
                "the server said {first:?}, not its {} ports",
                spec.lanes()
            )));
        }
        let reports = Arc::new((Mutex::new(Reports::default()), Condvar::new()));
        let shared = reports.clone();
        thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let (lock, cv) = &*shared;
                if std::env::var_os("SOAK_TRACE").is_some() {
                    eprintln!("server: {line}");
                }
                let mut r = lock.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(rest) = line.strip_prefix("done ") {
                    if let Some((i, outcome)) = rest.split_once(' ') {
                        if let Ok(i) = i.parse() {
                            r.outcomes.insert(i, outcome.to_string());
                        }
                    }
                }
                cv.notify_all();
            }
            let (lock, cv) = &*shared;
            lock.lock().unwrap_or_else(|p| p.into_inner()).ended = true;
            cv.notify_all();
        });
        Ok(ServerProcess { child, ports, reports })
    }

    /// Waits until the server has reported every transfer in `indices`; returns their outcomes.
    fn outcomes(&self, indices: &[usize]) -> Result<Vec<String>, String> {
        let (lock, cv) = &*self.reports;
        let deadline = Instant::now() + BLOCK_TIMEOUT;
        let mut r = lock.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if indices.iter().all(|i| r.outcomes.contains_key(i)) {
                return Ok(indices.iter().map(|i| r.outcomes.remove(i).unwrap_or_default()).collect());
            }
            if r.ended || Instant::now() >= deadline {
                let missing: Vec<_> =
                    indices.iter().filter(|i| !r.outcomes.contains_key(i)).take(10).collect();
                return Err(format!("the server never reported transfers {missing:?} (exited: {})", r.ended));
            }
            r = cv
                .wait_timeout(r, Duration::from_secs(1))
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }
}

/// Tallies of the run.
#[derive(Default)]
struct Tally {
    intact: usize,
    intact_bytes: u64,
    ended_reported: usize,
    udp_loss_reported: usize,
    server_error_after_intact: Vec<String>,
    violations: Vec<String>,
    by_label: HashMap<String, usize>,
}

impl Tally {
    fn judge(&mut self, t: &Transfer, seen: &Seen, server: &str) {
        let label = format!("{}/{}/{}", t.path.name(), mode_name(t.mode), t.cc);
        *self.by_label.entry(label.clone()).or_default() += 1;
        let what =
            format!("#{} {label} {} B {:?}: client {seen:?}, server {server}", t.index, t.size, t.fate);
        let server_ok = server.starts_with("ok ");
        if server.starts_with("panic") {
            self.violations.push(format!("server panicked: {what}"));
            return;
        }
        match (t.fate, seen) {
            (Fate::Complete, Seen::Intact) if server_ok => {
                self.intact += 1;
                self.intact_bytes += t.size;
            }
            (Fate::Complete, Seen::Intact) => {
                self.intact += 1;
                self.intact_bytes += t.size;
                self.server_error_after_intact.push(what);
            }
            // UDP mode retransmits nothing: a lost datagram is reported at the end.
            (_, Seen::Failed(_)) if t.mode == Mode::Udp => self.udp_loss_reported += 1,
            (_, Seen::Wrong(_)) => self.violations.push(format!("corrupt or short without an error: {what}")),
            (Fate::Complete, _) => self.violations.push(format!("a complete transfer failed: {what}")),
            (_, Seen::Ended(_)) if !server_ok => self.ended_reported += 1,
            (_, Seen::Ended(_)) => self.violations.push(format!("silent success at the server: {what}")),
            (_, _) => self.violations.push(format!("the client failed before its planned end: {what}")),
        }
    }
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Kernel => "kernel",
        Mode::Framed => "framed",
        Mode::Udp => "udp",
    }
}

/// Runs one lane's transfers of a block, in order; returns what the client saw of each.
fn run_lane(tb: Option<&Testbed>, transfers: &[&Transfer], port: u16) -> Result<Vec<(usize, Seen)>, String> {
    let mut out = Vec::new();
    for t in transfers {
        let (side, ip) = match t.path {
            Path::Loopback => (Side::Server, Ipv4Addr::LOCALHOST),
            Path::Emulated => (Side::Client, SERVER_ADDR),
        };
        let addr = SocketAddr::from((ip, port));
        let receiver = match tb {
            Some(tb) => tb.run_in(side, || client::connect(t, addr)).map_err(|e| e.to_string())?,
            None => client::connect(t, addr),
        };
        let trace = std::env::var_os("SOAK_TRACE").is_some();
        if trace {
            eprintln!("client: #{} {:?} {} {} B {:?} connected", t.index, t.mode, t.cc, t.size, t.fate);
        }
        let seen = match receiver {
            Ok(r) => client::fetch(t, r),
            // The server's lane would wait for this connection forever: the plan is lost.
            Err(e) if t.mode != Mode::Udp => return Err(format!("#{} connect {addr}: {e}", t.index)),
            Err(e) => Seen::Failed(format!("connect: {e}")),
        };
        if trace {
            eprintln!("client: #{} {seen:?}", t.index);
        }
        out.push((t.index, seen));
    }
    Ok(out)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if args.serve {
        if let Err(e) = server::run(&args.spec) {
            eprintln!("soak server: {e}");
            std::process::exit(1);
        }
        return;
    }
    match run(&args) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("soak: {e}");
            std::process::exit(1);
        }
    }
}

/// One sample of the server process, taken while it is idle.
struct Sample {
    transfers: usize,
    secs: f64,
    fds: usize,
    rss_kib: u64,
}

fn run(args: &Args) -> Result<bool, String> {
    let spec = &args.spec;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let tb = if spec.emulated > 0 {
        let n = (args.rate_mbps as f64 / 12.0).round() as u64;
        let schedule = Schedule::constant(n).map_err(|e| e.to_string())?;
        let mut dir = DirectionConfig::new(schedule);
        dir.queue = QueueSpec::DropTail { packets: Some(1000), bytes: None };
        dir.loss = args.loss;
        let mut config = TestbedConfig::symmetric(dir, args.delay_ms * 1000);
        config.seed = spec.seed;
        Some(Testbed::start(config).map_err(|e| {
            format!("the emulator (the emulated part needs root; --emulated 0 runs loopback alone): {e}")
        })?)
    } else {
        None
    };
    let mut command = match &tb {
        Some(tb) => tb.command(Side::Server, &exe.to_string_lossy()),
        None => Command::new(&exe),
    };
    // A profiler in front of the server (loopback alone): `SOAK_SERVER_WRAP="heaptrack -o F"`.
    if let (Ok(wrap), None) = (std::env::var("SOAK_SERVER_WRAP"), &tb) {
        let mut words = wrap.split_whitespace();
        if let Some(program) = words.next() {
            command = Command::new(program);
            command.args(words).arg(&exe);
        }
    }
    let mut server = ServerProcess::start(command, spec).map_err(|e| format!("starting the server: {e}"))?;
    let pid = server.child.id();
    let transfers = plan::plan(spec);
    println!(
"soak: {} transfers (grouping {}, modes {}; {} loopback over {} lanes, {} through the emulator over {} lanes at {} Mbit/s, {} ms each way, {:.1} % loss each way), sizes 0-{} B log-uniform, seed {}",
        transfers.len(),
        if spec.coupled { "by peer" } else { "none" },
        if spec.udp { "kernel, framed, udp" } else { "kernel, framed" },
        spec.loopback,
        spec.loopback_lanes,
        spec.emulated,
        spec.emulated_lanes,
        args.rate_mbps,
        args.delay_ms,
        args.loss * 100.0,
        spec.max_size,
        spec.seed
    );
    let start = Instant::now();
    let mut tally = Tally::default();
    let mut samples = Vec::new();
    let mut failure = None;
    for block in transfers.chunks(args.block) {
        let results: Vec<Result<Vec<(usize, Seen)>, String>> = thread::scope(|s| {
            let handles: Vec<_> = (0..spec.lanes())
                .map(|lane| {
                    let mine: Vec<&Transfer> = block.iter().filter(|t| t.lane == lane).collect();
                    let (tb, port) = (tb.as_ref(), server.ports[lane]);
                    s.spawn(move || run_lane(tb, &mine, port))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err("a client lane panicked".into())))
                .collect()
        });
        let mut seen: HashMap<usize, Seen> = HashMap::new();
        for r in results {
            match r {
                Ok(v) => seen.extend(v),
                Err(e) => failure = Some(e),
            }
        }
        if let Some(e) = &failure {
            tally.violations.push(e.clone());
            break;
        }
        let indices: Vec<usize> = block.iter().map(|t| t.index).collect();
        let outcomes = match server.outcomes(&indices) {
            Ok(o) => o,
            Err(e) => {
                tally.violations.push(e);
                break;
            }
        };
        for (t, outcome) in block.iter().zip(&outcomes) {
            tally.judge(t, &seen[&t.index], outcome);
        }
        // The flows' sockets close on the engine's thread after the close returned.
        thread::sleep(Duration::from_millis(200));
        let (fds, rss_kib) = sample_process(pid);
        let done = block.last().map_or(0, |t| t.index + 1);
        samples.push(Sample { transfers: done, secs: start.elapsed().as_secs_f64(), fds, rss_kib });
        println!(
            "{done:>6} transfers {:>7.1} s: server {fds} descriptors, RSS {rss_kib} KiB; {} intact, {} ended early and reported, {} UDP losses reported, {} violations",
            start.elapsed().as_secs_f64(),
            tally.intact,
            tally.ended_reported,
            tally.udp_loss_reported,
            tally.violations.len()
        );
    }
    // Closing its stdin ends the server; killed if it does not end by itself.
    drop(server.child.stdin.take());
    let ended = (0..50).any(|_| {
        thread::sleep(Duration::from_millis(100));
        matches!(server.child.try_wait(), Ok(Some(_)))
    });
    if !ended {
        let _ = server.child.kill();
    }
    let _ = server.child.wait();
    let report = tb.map(|t| t.stop());
    report_and_judge(args, &tally, &samples, report, start.elapsed())
}

fn report_and_judge(
    args: &Args,
    tally: &Tally,
    samples: &[Sample],
    report: Option<alcc_link::TestbedReport>,
    took: Duration,
) -> Result<bool, String> {
    if let Some(path) = &args.series {
        let mut csv = String::from("transfers,seconds,descriptors,rss_kib\n");
        for s in samples {
            csv.push_str(&format!("{},{:.1},{},{}\n", s.transfers, s.secs, s.fds, s.rss_kib));
        }
        std::fs::write(path, csv).map_err(|e| format!("writing {path}: {e}"))?;
    }
    let mut labels: Vec<_> = tally.by_label.iter().collect();
    labels.sort();
    println!("transfers per path/mode/controller:");
    for (l, n) in labels {
        println!("  {l}: {n}");
    }
    if let Some(r) = report {
        let d = &r.downlink;
        println!(
            "emulator downlink: {} packets in, {} lost at random, {} dropped by the queue; uplink {} lost at random",
            d.counters.arrivals + d.lost,
            d.lost,
            d.counters.drops,
            r.uplink.lost
        );
    }
    println!(
        "done in {:.1} s: {} intact ({:.1} MB), {} ended early by the client and reported by the server, {} UDP transfers with losses reported to the client",
        took.as_secs_f64(),
        tally.intact,
        tally.intact_bytes as f64 / 1e6,
        tally.ended_reported,
        tally.udp_loss_reported
    );
    for s in &tally.server_error_after_intact {
        println!("note: the client got every byte but the server reported an error: {s}");
    }
    for v in &tally.violations {
        println!("VIOLATION: {v}");
    }
    let mut ok = tally.violations.is_empty();
    // Flat: the last idle sample against the one after the first thousand transfers (the
    // first third of a shorter run), when the engine's thread, the allocator's arenas and
    // the lanes' buffers exist.
    let warm = (samples.last().map_or(0, |s| s.transfers) / 3).min(1000);
    if let (Some(first), Some(last)) = (samples.iter().find(|s| s.transfers >= warm), samples.last()) {
        let rss_bound = first.rss_kib + RSS_SLACK_KIB;
        println!(
            "server after {} transfers: {} descriptors, RSS {} KiB; after {}: {} descriptors, RSS {} KiB (bound: {} descriptors, {rss_bound} KiB)",
            first.transfers, first.fds, first.rss_kib, last.transfers, last.fds, last.rss_kib, first.fds
        );
        if last.fds > first.fds {
            println!("VIOLATION: the server's descriptors grew from {} to {}", first.fds, last.fds);
            ok = false;
        }
        if last.rss_kib > rss_bound {
            println!("VIOLATION: the server's RSS grew from {} to {} KiB", first.rss_kib, last.rss_kib);
            ok = false;
        }
    }
    if args.quick && samples.len() < 2 {
        ok = false;
    }
    Ok(ok)
}
