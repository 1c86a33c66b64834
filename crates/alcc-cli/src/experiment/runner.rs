//! One run: one `alcc link` child (the scheme's server and client, see [`super::scheme`]), its
//! files in the run directory, and its row of the results table.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use alcc_trace::WindowSummary;
use anyhow::{Context, Result};

use super::analysis::{self, RunFigures};
use super::direction::Direction;
use super::flows;
use super::per_flow;
use super::scheme::{RunContext, Scheme};
use super::spec::Spec;
use super::table::{Row, FAILED, OK};
use super::workload::Workload;
use crate::rusage::RusageReport;
use crate::sys;

/// The server's port inside the emulated link.
const PORT: u16 = 9000;

/// Bytes the server offers: more than any run can move, so the deadline ends the download.
const OFFER_BYTES: u64 = 100_000_000_000;

/// The emulator's downlink flow log in a run with a workload (`alcc link --downlink-flow-log`).
pub const FLOW_LOG: &str = "downlink-flows.log";

/// How long the client waits before connecting (the server starts at the same time).
pub const CLIENT_START_DELAY_S: f64 = 0.5;

/// The server stops a download this long after the client's deadline if it has not noticed
/// that the client left.
const SERVER_GRACE_S: f64 = 2.0;

/// A run is failed (and its emulator stopped) this long after the expected duration.
const TIMEOUT_MARGIN_S: f64 = 60.0;

/// How long an interrupted or timed-out emulator has to clean up before SIGKILL (it removes its
/// namespaces within about 5 s of a signal).
const STOP_GRACE: Duration = Duration::from_secs(15);

/// One link of a sweep: its name and trace files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkTraces {
    /// Trace name (directory name).
    pub name: String,
    /// Downlink trace file.
    pub downlink: PathBuf,
    /// Uplink trace file.
    pub uplink: PathBuf,
}

/// One cell of the matrix.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// The link.
    pub trace: LinkTraces,
    /// The scheme.
    pub scheme: Scheme,
    /// Run index from 0.
    pub run: u32,
    /// The flows and cross traffic ([`Workload::implicit`]: one flow, nothing else).
    pub workload: Workload,
}

impl RunPlan {
    /// `runs/TRACE/SCHEME/run-K`, or `runs/TRACE/WORKLOAD/SCHEME/run-K` in a spec with
    /// `[[workloads]]`, relative to the output directory.
    pub fn rel_dir(&self) -> PathBuf {
        let mut dir = Path::new("runs").join(&self.trace.name);
        if !self.workload.is_implicit() {
            dir.push(&self.workload.name);
        }
        dir.join(&self.scheme.name).join(format!("run-{}", self.run))
    }

    /// A row of this run in `direction` with no metrics.
    fn empty_row(&self, direction: Direction, status: &str, error: String) -> Row {
        let kind = self.scheme.kind();
        // The spec's check refused schemes without this direction.
        let (mode, label) = match direction.transfer(kind) {
            Ok(t) => (t.mode().as_str().to_string(), t.label()),
            Err(why) => (kind.mode().as_str().to_string(), why),
        };
        Row {
            trace: self.trace.name.clone(),
            scheme: self.scheme.name.clone(),
            family: kind.family().as_str().to_string(),
            cc: kind.cc().to_string(),
            underlay: kind.underlay().to_string(),
            mode,
            run: self.run,
            status: status.to_string(),
            error,
            duration_s: None,
            capacity_mbps: None,
            throughput_mbps: None,
            utilization: None,
            loss: None,
            delay_p50_ms: None,
            delay_p95_ms: None,
            delay_p99_ms: None,
            delay_mean_ms: None,
            cpu_s: None,
            dir: self.rel_dir().display().to_string(),
            wall_s: None,
            max_rss_kb: None,
            label,
            load_avg: None,
            direction: direction.as_str().to_string(),
            workload: self.workload.name.clone(),
            flows: self.workload.flows,
            flows_throughput_mbps: None,
            flows_delay_p95_ms: None,
            jain_index: None,
            jain_weighted_index: None,
            window_from_s: None,
            window_to_s: None,
            queued_at_end: None,
            departed_after_window: None,
            queued_at_log_end: None,
            per_flow: Vec::new(),
        }
    }
}

/// How a run ended.
#[derive(Debug)]
pub enum Outcome {
    /// It finished, ok or failed; `result.json` is written.
    Finished(Box<Row>),
    /// A termination signal arrived; the emulator was stopped and nothing was recorded.
    Interrupted,
}

/// Quotes `s` for `sh` when it holds anything but plainly safe characters.
pub fn shell_quote(s: &str) -> String {
    let safe = !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "_-./:=,@%+".contains(c));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The command lines of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commands {
    /// `alcc link ...` as an argument vector (the program first).
    pub link: Vec<String>,
    /// The server's shell commands (inside `link`): the scheme's first, then a second server
    /// and cross traffic's when the workload has them.
    pub servers: Vec<String>,
    /// The client's shell script (inside `link`, run by `sh -c`).
    pub client: String,
}

/// Builds the command lines of `plan` with its files in `dir`; an error when its scheme has no
/// transfer in the spec's direction (the spec's check refuses such schemes).
pub fn commands(alcc: &Path, spec: &Spec, plan: &RunPlan, dir: &Path) -> Result<Commands, String> {
    let run = RunContext {
        alcc,
        dir,
        duration_s: spec.duration_s,
        port: PORT,
        offer_bytes: OFFER_BYTES,
        server_seconds: spec.duration_s + SERVER_GRACE_S,
        clients: 1,
        server: 0,
    };
    let direction = spec.direction;
    let kind = plan.scheme.kind();
    let transfer = direction.transfer(kind)?;
    let (servers, client) = if plan.workload.is_implicit() {
        let data = transfer.client(&run);
        // The client's deadline ends the transfer: its deadline status means success. Then a
        // download waits for the server to exit and write its rusage.
        let client = format!(
            "sleep {CLIENT_START_DELAY_S}; {}; s=$?; [ $s -eq {} ] && s=0; {}exit $s",
            data.command,
            data.deadline_status,
            direction.after_transfer(&run.quoted(&run.rusage()))
        );
        (vec![transfer.server(&run)], client)
    } else {
        let c = flows::commands(transfer.as_ref(), kind, &run, &plan.workload, &|r| {
            direction.after_transfer(&r.quoted(&r.rusage()))
        })?;
        (c.servers, format!("sleep {CLIENT_START_DELAY_S}; {}", c.client))
    };
    let mut link: Vec<String> = vec![alcc.display().to_string(), "link".into()];
    let mut push = |args: &[&str]| link.extend(args.iter().map(|s| s.to_string()));
    let (up, down) = (plan.trace.uplink.display().to_string(), plan.trace.downlink.display().to_string());
    push(&["--uplink", &up, "--downlink", &down, "--delay", &spec.delay_ms.to_string()]);
    if let Some(b) = spec.queue_bytes {
        push(&["--downlink-queue", "droptail", "--downlink-queue-args", &format!("bytes={b}")]);
    }
    if let Some(b) = spec.uplink_queue_bytes.or(spec.queue_bytes) {
        push(&["--uplink-queue", "droptail", "--uplink-queue-args", &format!("bytes={b}")]);
    }
    if spec.loss > 0.0 {
        push(&[&direction.loss_flag(), &spec.loss.to_string()]);
    }
    let log = dir.join(direction.log_name()).display().to_string();
    push(&["--seed", &plan.run.to_string(), &direction.log_flag(), &log]);
    if !plan.workload.is_implicit() {
        let flow_log = dir.join(FLOW_LOG).display().to_string();
        push(&["--downlink-flow-log", &flow_log]);
    }
    for s in &servers {
        push(&["--server", s]);
    }
    push(&["--", "sh", "-c", &client]);
    Ok(Commands { link, servers, client })
}

/// The last lines of the run's output that say something (the emulator's own summary lines
/// left out), joined, at most 600 characters.
fn output_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty()
                && !l.starts_with("alcc link: uplink:")
                && !l.starts_with("alcc link: downlink:")
                && !l.contains("listening")
        })
        .collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    let chars: Vec<char> = tail.chars().collect();
    chars[chars.len().saturating_sub(600)..].iter().collect()
}

/// How the emulator child ended.
enum Wait {
    Exited(ExitStatus),
    TimedOut,
    Interrupted,
}

/// Waits for `child`, forwarding a caught termination signal to it and stopping it after
/// `limit`; in both cases it is given [`STOP_GRACE`] to clean up, then killed.
fn wait_child(child: &mut Child, limit: Duration) -> Result<Wait> {
    let start = Instant::now();
    let mut stopping: Option<(Instant, bool)> = None;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(match stopping {
                Some((_, true)) => Wait::Interrupted,
                Some((_, false)) => Wait::TimedOut,
                None => Wait::Exited(status),
            });
        }
        match stopping {
            None if sys::caught().is_some() => {
                let _ = sys::kill(child.id(), libc::SIGINT);
                stopping = Some((Instant::now(), true));
            }
            None if start.elapsed() > limit => {
                let _ = sys::kill(child.id(), libc::SIGTERM);
                stopping = Some((Instant::now(), false));
            }
            Some((since, _)) if since.elapsed() > STOP_GRACE => {
                let _ = child.kill();
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `plan` in `out/plan.rel_dir()` (made afresh), writing its files and, last,
/// `result.json`.
pub fn run(alcc: &Path, spec: &Spec, plan: &RunPlan, out: &Path) -> Result<Outcome> {
    let dir = out.join(plan.rel_dir());
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("{}: cannot remove", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    if sys::caught().is_some() {
        return Ok(Outcome::Interrupted);
    }
    let direction = spec.direction;
    let cmds = commands(alcc, spec, plan, &dir).map_err(|why| anyhow::anyhow!("{}: {why}", plan.scheme))?;
    let link_line: Vec<String> = cmds.link.iter().map(|a| shell_quote(a)).collect();
    let text = format!(
        "{}\n{}\nsh -c {}\n",
        link_line.join(" "),
        cmds.servers.join("\n"),
        shell_quote(&cmds.client)
    );
    std::fs::write(dir.join("commands.txt"), text).context("writing commands.txt")?;
    let stderr_path = dir.join("stderr.log");
    let log_file = File::create(&stderr_path).context("creating stderr.log")?;
    let start = Instant::now();
    let mut child = Command::new(&cmds.link[0])
        .args(&cmds.link[1..])
        .stdin(Stdio::null())
        // Errors, not backtraces, make the `error` column.
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .stdout(log_file.try_clone().context("stderr.log")?)
        .stderr(log_file)
        .spawn()
        .with_context(|| format!("starting {}", cmds.link[0]))?;
    let limit = Duration::from_secs_f64(spec.duration_s + CLIENT_START_DELAY_S + TIMEOUT_MARGIN_S);
    let waited = wait_child(&mut child, limit)?;
    let wall_s = start.elapsed().as_secs_f64();
    let failure = match waited {
        Wait::Interrupted => return Ok(Outcome::Interrupted),
        Wait::TimedOut => Some(format!(
            "timed out: stopped after {:.0} s (a run takes about {} s): {}",
            wall_s,
            spec.duration_s,
            output_tail(&stderr_path)
        )),
        Wait::Exited(status) if !status.success() => {
            Some(format!("alcc link: {status}: {}", output_tail(&stderr_path)))
        }
        Wait::Exited(_) => None,
    };
    let mut row = match failure {
        Some(error) => plan.empty_row(direction, FAILED, error),
        None => analyzed_row(plan, direction, &dir, spec.duration_s, &stderr_path),
    };
    if row.is_ok() && !plan.workload.is_implicit() {
        match per_flow::analyze_flows(&dir, FLOW_LOG, &plan.workload, spec.duration_s) {
            Ok((flows, totals)) => {
                row.per_flow = flows;
                row.flows_throughput_mbps = totals.scheme_throughput_mbps;
                row.flows_delay_p95_ms = totals.scheme_delay_p95_ms;
                row.jain_index = totals.jain_index;
                row.jain_weighted_index = totals.jain_weighted_index;
            }
            Err(e) => {
                row = Row {
                    wall_s: None,
                    ..plan.empty_row(direction, FAILED, format!("analysing {FLOW_LOG}: {e:#}"))
                }
            }
        }
    }
    row.wall_s = Some(wall_s);
    row.load_avg = load_average();
    if let Some(r) = read_rusage(&dir.join("rusage.json")) {
        row.cpu_s = Some(r.cpu_s);
        row.max_rss_kb = Some(r.max_rss_kb);
        // A workload's second server process: CPU added, the larger peak memory.
        if let Some(r2) = read_rusage(&dir.join("rusage-1.json")) {
            row.cpu_s = Some(r.cpu_s + r2.cpu_s);
            row.max_rss_kb = Some(r.max_rss_kb.max(r2.max_rss_kb));
        }
    }
    let text = serde_json::to_string_pretty(&row)? + "\n";
    super::table::write_atomic(&dir.join("result.json"), text.as_bytes())?;
    Ok(Outcome::Finished(Box::new(row)))
}

/// The row of a run that ran to its end, from its link log over the run's window
/// ([`analysis::figures_of_run`]); failed when the log cannot be read or nothing crossed the link.
pub fn analyzed_row(plan: &RunPlan, direction: Direction, dir: &Path, duration_s: f64, stderr: &Path) -> Row {
    let delay = plan.scheme.kind().sender_delay_s();
    match analysis::figures_of_run(dir, direction, duration_s, delay) {
        Err(e) => plan.empty_row(direction, FAILED, format!("analysing {}: {e:#}", direction.log_name())),
        Ok(RunFigures::TooFewPackets(n)) => plan.empty_row(
            direction,
            FAILED,
            format!(
                "only {n} packets crossed the {} in the run's window (a handshake at most, no transfer): {}",
                direction.link(),
                output_tail(stderr)
            ),
        ),
        Ok(RunFigures::Measured(s)) => with_window(plan.empty_row(direction, OK, String::new()), &s),
    }
}

/// `row` with the link figures of `s` (the other columns kept).
pub fn with_window(row: Row, s: &WindowSummary) -> Row {
    Row {
        duration_s: Some(s.log_end_s),
        capacity_mbps: Some(s.capacity_mbps),
        throughput_mbps: Some(s.throughput_mbps),
        utilization: Some(s.utilization),
        loss: Some(s.loss),
        delay_p50_ms: s.delay_p50_ms,
        delay_p95_ms: s.delay_p95_ms,
        delay_p99_ms: s.delay_p99_ms,
        delay_mean_ms: s.delay_mean_ms,
        window_from_s: Some(s.window_from_s),
        window_to_s: Some(s.window_to_s),
        queued_at_end: Some(s.packets_queued_at_end),
        departed_after_window: Some(s.packets_departed_after),
        queued_at_log_end: Some(s.packets_queued_at_log_end),
        ..row
    }
}

/// The 1-minute load average (the first field of /proc/loadavg), if readable.
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

fn read_rusage(path: &Path) -> Option<RusageReport> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(scheme: &str) -> RunPlan {
        RunPlan {
            trace: LinkTraces { name: "t".into(), downlink: "/tr/down".into(), uplink: "/tr/up".into() },
            scheme: Scheme::parse(scheme).unwrap(),
            run: 2,
            workload: Workload::implicit(),
        }
    }

    fn spec() -> Spec {
        Spec::parse(
            "t",
            "name = \"x\"\nduration_s = 20\nqueue_bytes = 2000000\ndelay_ms = 10\nschemes = [\"tcp-cubic\"]\n\
             [[traces]]\nname = \"t\"\npath = \"/tr/down\"\n",
        )
        .unwrap()
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("/a/b-c.d"), "/a/b-c.d");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn plain_tcp_is_served_by_the_plain_writer_to_curl() {
        let p = plan("tcp-reno");
        assert_eq!(p.rel_dir(), PathBuf::from("runs/t/tcp-reno/run-2"));
        let c = commands(Path::new("/bin/alcc"), &spec(), &p, Path::new("/o/d")).unwrap();
        assert_eq!(
            c.servers[0],
            "/bin/alcc serve-plain --port 9000 --underlay reno --bytes 100000000000 --http --count 1 \
             --seconds 22 --rusage /o/d/rusage.json"
        );
        assert!(
            c.client.contains("curl -sS -o /dev/null --max-time 20 \"http://$ALCC_SERVER:9000/\""),
            "{}",
            c.client
        );
        assert!(c.client.contains("[ $s -eq 28 ] && s=0"));
        let link = c.link.join(" ");
        assert!(link.starts_with("/bin/alcc link --uplink /tr/up --downlink /tr/down --delay 10"), "{link}");
        assert!(link.contains("--downlink-queue droptail --downlink-queue-args bytes=2000000"));
        assert!(link.contains("--uplink-queue droptail --uplink-queue-args bytes=2000000"));
        assert!(!link.contains("--downlink-loss"));
        assert!(link.contains("--seed 2 --downlink-log /o/d/downlink.log --server"));
        assert_eq!(&c.link[c.link.len() - 3..c.link.len() - 1], ["sh", "-c"]);
    }

    #[test]
    fn sprout_is_framed_and_udp_is_udp_with_alcc_get() {
        let c = commands(Path::new("/bin/alcc"), &spec(), &plan("alcc-sprout"), Path::new("/d")).unwrap();
        assert!(
            c.servers[0].contains("--cc sprout --underlay cubic --mode framed --bytes"),
            "{}",
            c.servers[0]
        );
        assert!(!c.servers[0].contains("--http"));
        assert!(
            c.client.contains("timeout 20 /bin/alcc get \"$ALCC_SERVER:9000\" --mode framed"),
            "{}",
            c.client
        );
        assert!(c.client.contains("[ $s -eq 124 ] && s=0"));
        let c = commands(Path::new("/bin/alcc"), &spec(), &plan("udp-copa"), Path::new("/d")).unwrap();
        assert!(c.servers[0].contains("--cc copa --mode udp"), "{}", c.servers[0]);
        assert!(c.client.contains("--mode udp"));
    }

    #[test]
    fn an_upload_logs_and_loses_on_the_uplink_and_waits_for_no_server() {
        let mut up = spec();
        up.direction = Direction::Up;
        up.loss = 0.01;
        let c = commands(Path::new("/bin/alcc"), &up, &plan("alcc-mdi@reno"), Path::new("/d")).unwrap();
        assert_eq!(c.servers[0], "/bin/alcc serve --receive --port 9000 --count 1 --seconds 22");
        assert!(
            c.client.contains("/bin/alcc put \"$ALCC_SERVER:9000\" --cc mdi --underlay reno"),
            "{}",
            c.client
        );
        assert!(c.client.ends_with("[ $s -eq 0 ] && s=0; exit $s"), "{}", c.client);
        let link = c.link.join(" ");
        assert!(link.contains("--uplink-loss 0.01 --seed 2 --uplink-log /d/uplink.log --server"), "{link}");
        assert!(!link.contains("--downlink-log") && !link.contains("--downlink-loss"), "{link}");
        let e = commands(Path::new("/bin/alcc"), &up, &plan("udp-copa"), Path::new("/d")).unwrap_err();
        assert!(e.starts_with("cannot upload"), "{e}");
        let row = plan("tcp-reno").empty_row(Direction::Up, FAILED, "x".into());
        assert_eq!(
            (row.direction.as_str(), row.mode.as_str(), row.label.as_str()),
            ("up", "kernel", "plain kernel TCP (reno) upload, curl -T")
        );
    }

    #[test]
    fn a_child_past_its_limit_is_stopped_and_reaped() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let start = Instant::now();
        let waited = wait_child(&mut child, Duration::from_millis(200)).unwrap();
        assert!(matches!(waited, Wait::TimedOut));
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(child.try_wait().unwrap().is_some(), "reaped");
        let mut child = Command::new("sh").args(["-c", "exit 3"]).spawn().unwrap();
        match wait_child(&mut child, Duration::from_secs(10)).unwrap() {
            Wait::Exited(status) => assert_eq!(status.code(), Some(3)),
            _ => panic!("sh exited by itself"),
        }
    }

    #[test]
    fn the_tail_skips_the_emulators_summary() {
        let dir = std::env::temp_dir().join(format!("alcc-exp-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("err");
        std::fs::write(
            &f,
            "alcc serve: listening on 0.0.0.0:9000\nError: unknown controller `x`\ncurl: (7) refused\n\
             alcc link: uplink: 3 packets\nalcc link: downlink: 0 packets\n",
        )
        .unwrap();
        let t = output_tail(&f);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(t, "Error: unknown controller `x` | curl: (7) refused");
    }
}
