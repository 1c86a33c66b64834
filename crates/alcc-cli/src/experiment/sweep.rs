//! `alcc experiment run`: the whole matrix (traces x runs x schemes), progress with the time
//! left, resume of complete runs, Ctrl-C, and the results tables.

use std::path::{Path, PathBuf};
use std::time::Instant;

use alcc_trace::synth::{self, CellularModel};
use alcc_trace::Trace;
use anyhow::{bail, Context, Result};

use super::direction::Direction;
use super::runner::{self, LinkTraces, Outcome, RunPlan};
use super::scheme::Scheme;
use super::shard::Shard;
use super::spec::{Generate, Spec};
use super::table::{self, Row};
use super::workload::Workload;
use crate::sys;

/// Options of `alcc experiment run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The experiment definition (TOML; see docs/experiment-format.md).
    spec: PathBuf,
    /// Shorten the spec for CI (its `[quick]` table; default 8 s, 1 run, the first 2 traces).
    #[arg(long)]
    quick: bool,
    /// Output directory (default `results/NAME`, or `results/NAME-quick` with --quick).
    /// Rerunning into the same directory resumes: complete runs are skipped.
    #[arg(long)]
    out: Option<PathBuf>,
    /// When OUT holds a different spec (or another shard of it), discard its runs and start
    /// over instead of refusing.
    #[arg(long)]
    force: bool,
    /// Run only shard K of N (1 <= K <= N): the runs whose place in the matrix is K-1 modulo N.
    /// Machines given the same spec and every K from 1 to N run disjoint shares that together
    /// are the whole sweep; `alcc experiment merge` joins their output directories.
    #[arg(long, value_name = "K/N")]
    shard: Option<Shard>,
}

/// Exit status of an interrupted sweep (128 + SIGINT).
pub const EXIT_INTERRUPTED: i32 = 130;

/// Runs the sweep; returns the process exit status: 0 all runs ok, 1 some failed, 130
/// interrupted.
pub fn run(args: RunArgs) -> Result<i32> {
    // First, so that a signal during the preparations also ends the sweep cleanly.
    sys::catch_termination().context("installing the signal handlers")?;
    let label = args.spec.display().to_string();
    let mut spec = Spec::load(&args.spec)?;
    if args.quick {
        spec = spec.quick_version();
    }
    // Trace paths are relative to the spec's directory.
    let base = args.spec.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    spec.expand_paths(&label, &base)?;
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("results").join(if args.quick {
            format!("{}-quick", spec.name)
        } else {
            spec.name.clone()
        })
    });
    std::fs::create_dir_all(&out).with_context(|| format!("{}: cannot create", out.display()))?;
    claim_output(&out, &spec, args.force)?;
    Shard::claim(args.shard, &out, args.force)?;
    let traces = resolve_traces(&spec, &out)?;
    let schemes = spec.parsed_schemes();
    for s in &schemes {
        if let Some(w) = s.kind().warning() {
            eprintln!("warning: {s}: {w}");
        }
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    check_needs(&schemes, spec.direction, &path)?;
    for w in &spec.workloads {
        if let Some(why) = w.needs().iter().find_map(|n| n.missing(&path)) {
            bail!("cannot run workload `{}`: {why}, for its cross traffic", w.name);
        }
    }
    let mut plans = plan(&traces, &spec.workload_list(), &schemes, spec.runs);
    if let Some(shard) = args.shard {
        let all = plans.len();
        plans = shard.select(plans);
        eprintln!("shard {shard}: {} of the sweep's {all} runs", plans.len());
    }
    if !sys::is_root() {
        bail!("alcc experiment run needs root: the emulator makes network namespaces and TUN devices");
    }
    let alcc = std::env::current_exe().context("finding the alcc binary")?;

    let complete: Vec<bool> = plans.iter().map(|p| is_complete(&out, p)).collect();
    let skipped = complete.iter().filter(|c| **c).count();
    if skipped > 0 {
        eprintln!("resuming in {}: {skipped} of {} runs already complete", out.display(), plans.len());
    }
    let started = Instant::now();
    let mut done_here = 0usize;
    let mut interrupted = false;
    for (i, p) in plans.iter().enumerate() {
        if complete[i] {
            continue;
        }
        if sys::caught().is_some() {
            interrupted = true;
            break;
        }
        let left = plans.len() - i;
        let per_run = if done_here == 0 {
            spec.duration_s + 3.0
        } else {
            started.elapsed().as_secs_f64() / done_here as f64
        };
        let remaining_after_skips = left - complete[i..].iter().filter(|c| **c).count();
        eprintln!(
            "[{}/{}] {}{} {} run {} — {} left",
            i + 1,
            plans.len(),
            p.trace.name,
            if p.workload.is_implicit() { String::new() } else { format!(" {}", p.workload.name) },
            p.scheme,
            p.run,
            human(per_run * remaining_after_skips as f64)
        );
        match runner::run(&alcc, &spec, p, &out)? {
            Outcome::Interrupted => {
                let dir = out.join(p.rel_dir());
                let _ = std::fs::remove_dir_all(&dir);
                // The scheme's directory too, if this was its only run (remove_dir keeps a
                // directory that is not empty).
                if let Some(parent) = dir.parent() {
                    let _ = std::fs::remove_dir(parent);
                }
                interrupted = true;
                break;
            }
            Outcome::Finished(row) => {
                done_here += 1;
                if row.is_ok() {
                    eprintln!(
                        "    ok: {:.2} Mbit/s, p95 {} ms, CPU {} s{}",
                        row.throughput_mbps.unwrap_or(0.0),
                        row.delay_p95_ms.map_or("-".into(), |d| format!("{d:.1}")),
                        row.cpu_s.map_or("-".into(), |c| format!("{c:.2}")),
                        window_note(&row)
                    );
                } else {
                    eprintln!("    failed: {}", row.error);
                }
            }
        }
    }
    let rows = collect_rows(&out, &plans);
    let spec_json = serde_json::to_value(&spec)?;
    table::write_tables(&out, &spec.name, args.quick, &spec_json, &rows)?;
    println!("{}", table::medians_table(&rows));
    println!("results: {}/results.csv ({} runs recorded of {})", out.display(), rows.len(), plans.len());
    if interrupted {
        eprintln!("interrupted: the partial run was removed; rerun the same command to resume");
        return Ok(EXIT_INTERRUPTED);
    }
    Ok(if rows.iter().all(Row::is_ok) { 0 } else { 1 })
}

/// What a completed run's progress line adds about its window: the packets still in the link at
/// the window's end (in no figure) and a log that ended before the window did.
fn window_note(row: &Row) -> String {
    let mut note = String::new();
    if let (Some(queued), Some(left)) = (row.queued_at_end, row.queued_at_log_end) {
        if queued > 0 {
            note +=
                &format!("; {queued} packets queued at the window's end ({left} still when the log ended)");
        }
    }
    if let (Some(end), Some(to)) = (row.duration_s, row.window_to_s) {
        if end < to {
            note += &format!("; the link log ends at {end:.2} s, before the window ({to:.2} s)");
        }
    }
    note
}

/// Refuses to start when a scheme needs something the machine lacks (programs looked for in
/// `path`), naming every missing thing and the schemes that need it.
fn check_needs(schemes: &[Scheme], direction: Direction, path: &std::ffi::OsStr) -> Result<()> {
    let mut missing: Vec<(String, Vec<String>)> = Vec::new();
    for s in schemes {
        let needs = direction.transfer(s.kind()).map(|t| t.needs()).unwrap_or_default();
        for why in needs.iter().filter_map(|n| n.missing(path)) {
            match missing.iter_mut().find(|(w, _)| *w == why) {
                Some((_, names)) => names.push(s.name.clone()),
                None => missing.push((why, vec![s.name.clone()])),
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> =
        missing.iter().map(|(why, names)| format!("{why}, for {}", names.join(", "))).collect();
    bail!("cannot run these schemes: {}", lines.join("; "))
}

/// Records the spec in `out/spec.toml`, refusing a directory that holds another spec unless
/// `force` (then its runs and tables are discarded).
fn claim_output(out: &Path, spec: &Spec, force: bool) -> Result<()> {
    let path = out.join("spec.toml");
    let text = spec.to_toml();
    if let Ok(old) = std::fs::read_to_string(&path) {
        if old != text {
            if !force {
                bail!(
                    "{} holds a different experiment ({} differs from this spec); choose another --out, \
                     or pass --force to discard its runs",
                    out.display(),
                    path.display()
                );
            }
            for stale in ["runs", "traces"] {
                let _ = std::fs::remove_dir_all(out.join(stale));
            }
            for stale in ["results.csv", "results.json"] {
                let _ = std::fs::remove_file(out.join(stale));
            }
        }
    }
    table::write_atomic(&path, text.as_bytes())
}

/// The trace files of every link: generated ones written to `out/traces/NAME.trace`, files
/// checked to exist and parse. A missing optional trace is skipped with a warning.
pub fn resolve_traces(spec: &Spec, out: &Path) -> Result<Vec<LinkTraces>> {
    let mut links = Vec::new();
    for (i, t) in spec.traces.iter().enumerate() {
        if let Some(g) = &t.generate {
            let dir = out.join("traces");
            std::fs::create_dir_all(&dir).with_context(|| format!("{}: cannot create", dir.display()))?;
            let path = dir.join(format!("{}.trace", t.name));
            generate(g).with_context(|| format!("traces[{i}].generate"))?.write_file(&path)?;
            links.push(LinkTraces { name: t.name.clone(), downlink: path.clone(), uplink: path });
            continue;
        }
        let down = PathBuf::from(t.path.clone().unwrap_or_default());
        let up = t.uplink.as_ref().map_or_else(|| down.clone(), PathBuf::from);
        let missing: Vec<&PathBuf> = [&down, &up].into_iter().filter(|p| !p.is_file()).collect();
        if let Some(m) = missing.first() {
            if t.optional {
                eprintln!("warning: trace {}: {} not found; skipped (optional)", t.name, m.display());
                continue;
            }
            bail!(
                "trace `{}` (traces[{i}]): {} not found (set ALCC_TRACE_DIR to the directory of the traces)",
                t.name,
                m.display()
            );
        }
        for p in [&down, &up] {
            Trace::parse_file(p).with_context(|| format!("trace `{}` (traces[{i}])", t.name))?;
        }
        links.push(LinkTraces { name: t.name.clone(), downlink: down, uplink: up });
    }
    if links.is_empty() {
        bail!("no trace to run (every trace was optional and missing)");
    }
    Ok(links)
}

fn generate(g: &Generate) -> Result<Trace> {
    let duration_ms = (g.duration_s * 1000.0).round() as u64;
    Ok(match g.kind.as_str() {
        "constant" => synth::constant(g.rate_mbps.unwrap_or_default(), duration_ms)?,
        _ => {
            let d = CellularModel::default();
            let model =
                CellularModel { duration_ms, mean_rate_mbps: g.rate_mbps.unwrap_or(d.mean_rate_mbps), ..d };
            synth::cellular(&model, g.seed)?
        }
    })
}

/// The matrix in the order it runs: per trace, per workload, per run index, every scheme (so
/// that schemes compared with each other run close together in time).
pub fn plan(traces: &[LinkTraces], workloads: &[Workload], schemes: &[Scheme], runs: u32) -> Vec<RunPlan> {
    let mut plans = Vec::new();
    for t in traces {
        for w in workloads {
            for run in 0..runs {
                for s in schemes {
                    plans.push(RunPlan { trace: t.clone(), scheme: s.clone(), run, workload: w.clone() });
                }
            }
        }
    }
    plans
}

fn read_row(out: &Path, p: &RunPlan) -> Option<Row> {
    let text = std::fs::read_to_string(out.join(p.rel_dir()).join("result.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// Whether `p`'s run directory holds a result with status ok (resume skips it).
pub fn is_complete(out: &Path, p: &RunPlan) -> bool {
    read_row(out, p).is_some_and(|r| r.is_ok())
}

/// The rows of every planned run that has a result, in plan order.
pub fn collect_rows(out: &Path, plans: &[RunPlan]) -> Vec<Row> {
    plans.iter().filter_map(|p| read_row(out, p)).collect()
}

/// `1h02m`, `4m10s`, `35s`.
pub fn human(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::super::table::tests::row;
    use super::super::table::{FAILED, OK};
    use super::*;

    struct Tmp(PathBuf);
    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    fn tmp(tag: &str) -> Tmp {
        let d = std::env::temp_dir().join(format!("alcc-exp-sweep-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Tmp(d)
    }

    fn link(name: &str) -> LinkTraces {
        LinkTraces { name: name.into(), downlink: "/x".into(), uplink: "/x".into() }
    }

    #[test]
    fn the_matrix_runs_schemes_together() {
        let schemes = [Scheme::parse("tcp-cubic").unwrap(), Scheme::parse("alcc-copa").unwrap()];
        let p = plan(&[link("a"), link("b")], &[Workload::implicit()], &schemes, 2);
        let names: Vec<String> =
            p.iter().map(|p| format!("{}/{}/{}", p.trace.name, p.run, p.scheme)).collect();
        assert_eq!(names[..4], ["a/0/tcp-cubic", "a/0/alcc-copa", "a/1/tcp-cubic", "a/1/alcc-copa"]);
        assert_eq!(p.len(), 8);
    }

    #[test]
    fn resume_skips_only_ok_results() {
        let t = tmp("resume");
        let schemes = [Scheme::parse("tcp-cubic").unwrap(), Scheme::parse("alcc-copa").unwrap()];
        let plans = plan(&[link("t")], &[Workload::implicit()], &schemes, 2);
        let write = |p: &RunPlan, r: &Row| {
            let d = t.0.join(p.rel_dir());
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("result.json"), serde_json::to_string(r).unwrap()).unwrap();
        };
        write(&plans[0], &row("tcp-cubic", 0, OK, Some(5.0)));
        write(&plans[1], &row("alcc-copa", 0, FAILED, None));
        // A run directory without result.json (cut short) is not complete.
        std::fs::create_dir_all(t.0.join(plans[2].rel_dir())).unwrap();
        let complete: Vec<bool> = plans.iter().map(|p| is_complete(&t.0, p)).collect();
        assert_eq!(complete, [true, false, false, false]);
        let rows = collect_rows(&t.0, &plans);
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].status.as_str(), rows[1].status.as_str()), (OK, FAILED));
    }

    #[test]
    fn a_different_spec_is_refused_unless_forced() {
        let t = tmp("claim");
        let text = |d: u32| {
            format!("name = \"x\"\nduration_s = {d}\nschemes = [\"tcp-cubic\"]\n[[traces]]\nname = \"t\"\npath = \"/x\"\n")
        };
        let a = Spec::parse("a", &text(10)).unwrap();
        let b = Spec::parse("b", &text(11)).unwrap();
        claim_output(&t.0, &a, false).unwrap();
        std::fs::create_dir_all(t.0.join("runs/t")).unwrap();
        claim_output(&t.0, &a, false).unwrap();
        assert!(t.0.join("runs/t").exists());
        let e = claim_output(&t.0, &b, false).unwrap_err().to_string();
        assert!(e.contains("different experiment") && e.contains("--force"), "{e}");
        claim_output(&t.0, &b, true).unwrap();
        assert!(!t.0.join("runs").exists());
        assert_eq!(Spec::parse("c", &std::fs::read_to_string(t.0.join("spec.toml")).unwrap()).unwrap(), b);
    }

    #[test]
    fn missing_traces_are_named_before_anything_runs() {
        let t = tmp("missing");
        let text = "name = \"x\"\nduration_s = 10\nschemes = [\"tcp-cubic\"]\n[[traces]]\nname = \"gone\"\n\
                    path = \"/nonexistent/a.trace\"\n";
        let spec = Spec::parse("a", text).unwrap();
        let e = resolve_traces(&spec, &t.0).unwrap_err().to_string();
        assert!(e.contains("gone") && e.contains("/nonexistent/a.trace"), "{e}");
        let optional = format!("{text}optional = true\n[[traces]]\nname = \"gen\"\ngenerate = {{ kind = \"constant\", rate_mbps = 12, duration_s = 2 }}\n");
        let spec = Spec::parse("b", &optional).unwrap();
        let links = resolve_traces(&spec, &t.0).unwrap();
        assert_eq!(links.len(), 1);
        assert_eq!(links[0].downlink, t.0.join("traces/gen.trace"));
        assert_eq!(Trace::parse_file(&links[0].downlink).unwrap().mean_rate_mbps(), 12.0);
    }

    #[test]
    fn every_scheme_needing_curl_is_named_when_it_is_missing() {
        let schemes = [Scheme::parse("tcp-cubic").unwrap(), Scheme::parse("alcc-copa").unwrap()];
        // A PATH without curl: a directory with nothing in it.
        let t = tmp("needs");
        let e = check_needs(&schemes, Direction::Down, t.0.as_os_str()).unwrap_err().to_string();
        assert!(e.contains("`curl` is not installed") && e.contains("for tcp-cubic, alcc-copa"), "{e}");
        assert!(check_needs(&[Scheme::parse("udp-copa").unwrap()], Direction::Down, t.0.as_os_str()).is_ok());
    }

    #[test]
    fn the_progress_line_says_what_the_window_left_out() {
        let row: Row = serde_json::from_value(serde_json::json!({
            "trace": "t", "scheme": "udp-copa", "family": "udp", "cc": "copa", "underlay": "", "mode": "udp",
            "run": 0, "status": "ok", "error": "", "duration_s": 30.2, "capacity_mbps": null,
            "throughput_mbps": 1.0, "utilization": null, "loss": null, "delay_p50_ms": null,
            "delay_p95_ms": null, "delay_p99_ms": null, "delay_mean_ms": null, "cpu_s": null,
            "dir": "d", "wall_s": null, "max_rss_kb": null, "window_from_s": 0.5, "window_to_s": 30.5,
            "queued_at_end": 12, "departed_after_window": 2, "queued_at_log_end": 10
        }))
        .unwrap();
        assert_eq!(
            window_note(&row),
            "; 12 packets queued at the window's end (10 still when the log ended); the link log ends at \
             30.20 s, before the window (30.50 s)"
        );
        let old = Row { window_to_s: None, queued_at_end: None, ..row };
        assert_eq!(window_note(&old), "");
    }

    #[test]
    fn human_durations() {
        assert_eq!(human(35.4), "35s");
        assert_eq!(human(250.0), "4m10s");
        assert_eq!(human(3720.0), "1h02m");
    }
}
