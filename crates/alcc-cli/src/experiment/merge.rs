//! `alcc experiment merge --out OUT DIR...`: joins the output directories of one experiment's
//! shards (`alcc experiment run --shard K/N`, on one machine or many) into one results directory
//! that reads exactly as an unsharded sweep's: the same `spec.toml`, every run directory under
//! `runs/`, generated traces, and `results.csv`/`results.json` with the rows in plan order.
//!
//! Every input must hold the same spec (`spec.toml`, byte for byte: the same `--quick` and the
//! same expanded paths); the first difference is an error naming both directories. A run found
//! in more than one input (two directories of the same shard, or a shard beside the unsharded
//! sweep) is refused with an error naming the run and both directories: which copy is right is
//! the caller's decision, not the merge's. Run directories are hard-linked into OUT when OUT is
//! on the same file system, copied otherwise; the inputs are never changed. Runs no input holds
//! are listed, and the exit status is then 1, as a sweep's is when some runs failed.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::runner::{LinkTraces, RunPlan};
use super::shard;
use super::spec::Spec;
use super::sweep;
use super::table::{self, Row};

/// Options of `alcc experiment merge`.
#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// The shards' output directories (`alcc experiment run --shard K/N --out DIR`).
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
    /// The merged results directory (made; it must not hold another experiment).
    #[arg(long)]
    out: PathBuf,
}

/// One input: its directory and what its spec and tables say.
struct Input {
    dir: PathBuf,
    spec_text: String,
    quick: bool,
}

fn read_input(dir: &Path) -> Result<Input> {
    let spec_path = dir.join("spec.toml");
    let spec_text = std::fs::read_to_string(&spec_path).with_context(|| {
        format!(
            "{}: cannot read (is {} an experiment's output directory?)",
            spec_path.display(),
            dir.display()
        )
    })?;
    // results.json says whether the spec was shortened by --quick (spec.toml is the spec as run).
    let quick = std::fs::read_to_string(dir.join("results.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["quick"].as_bool())
        .unwrap_or(false);
    shard::read(dir)?;
    Ok(Input { dir: dir.to_path_buf(), spec_text, quick })
}

/// The matrix of `spec` in plan order, with trace names only (a merge needs no trace file).
fn plan_of(spec: &Spec) -> Vec<RunPlan> {
    let links: Vec<LinkTraces> = spec
        .traces
        .iter()
        .map(|t| LinkTraces { name: t.name.clone(), downlink: PathBuf::new(), uplink: PathBuf::new() })
        .collect();
    sweep::plan(&links, &spec.workload_list(), &spec.parsed_schemes(), spec.runs)
}

fn read_row(dir: &Path, p: &RunPlan) -> Option<Row> {
    let text = std::fs::read_to_string(dir.join(p.rel_dir()).join("result.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// Hard-links (or, across file systems, copies) the tree `from` to `to`.
fn link_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("{}: cannot create", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("{}: cannot read", from.display()))? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type()?.is_dir() {
            link_tree(&src, &dst)?;
        } else if std::fs::hard_link(&src, &dst).is_err() {
            std::fs::copy(&src, &dst)
                .with_context(|| format!("copying {} to {}", src.display(), dst.display()))?;
        }
    }
    Ok(())
}

/// Merges; returns the exit status: 0 when every run of the spec is present and ok, 1 otherwise.
pub fn run(args: MergeArgs) -> Result<i32> {
    let inputs: Vec<Input> = args.dirs.iter().map(|d| read_input(d)).collect::<Result<_>>()?;
    let first = &inputs[0];
    for other in &inputs[1..] {
        if other.spec_text != first.spec_text || other.quick != first.quick {
            bail!(
                "{} and {} hold different experiments (their spec.toml or --quick differ); only shards of \
                 one sweep can be merged",
                first.dir.display(),
                other.dir.display()
            );
        }
    }
    let label = first.dir.join("spec.toml").display().to_string();
    let spec = Spec::parse(&label, &first.spec_text)?;
    let out = &args.out;
    if inputs.iter().any(|i| same_dir(&i.dir, out)) {
        bail!("--out {} is one of the inputs; merge into a new directory", out.display());
    }
    std::fs::create_dir_all(out).with_context(|| format!("{}: cannot create", out.display()))?;
    match std::fs::read_to_string(out.join("spec.toml")) {
        Ok(old) if old != first.spec_text => {
            bail!("{} holds a different experiment; choose another --out", out.display())
        }
        _ => {}
    }
    if out.join("runs").exists() {
        bail!("{} already holds runs; merge into a new directory", out.display());
    }
    table::write_atomic(&out.join("spec.toml"), first.spec_text.as_bytes())?;
    if let Some(traces) = inputs.iter().map(|i| i.dir.join("traces")).find(|t| t.is_dir()) {
        link_tree(&traces, &out.join("traces"))?;
    }

    let plans = plan_of(&spec);
    // Every run is looked up first, so that a duplicate is refused before anything is linked.
    let mut found = Vec::with_capacity(plans.len());
    for p in &plans {
        let holders: Vec<(&Input, Row)> =
            inputs.iter().filter_map(|i| read_row(&i.dir, p).map(|r| (i, r))).collect();
        if let [(a, _), (b, _), ..] = holders.as_slice() {
            bail!(
                "run {} {} {} is in both {} and {}: the inputs overlap (the same shard twice, or a \
                 shard beside the whole sweep); merge each run from one directory only",
                p.trace.name,
                p.scheme,
                p.run,
                a.dir.display(),
                b.dir.display()
            );
        }
        found.push(holders.into_iter().next());
    }
    let mut rows = Vec::new();
    let mut missing = Vec::new();
    for (p, holder) in plans.iter().zip(found) {
        match holder {
            Some((input, row)) => {
                link_tree(&input.dir.join(p.rel_dir()), &out.join(p.rel_dir()))?;
                rows.push(row);
            }
            None => missing.push(format!("{} {} run {}", p.trace.name, p.scheme, p.run)),
        }
    }
    let spec_json = serde_json::to_value(&spec)?;
    table::write_tables(out, &spec.name, first.quick, &spec_json, &rows)?;
    println!("{}", table::medians_table(&rows));
    println!("merged {} inputs into {}: {} of {} runs", inputs.len(), out.display(), rows.len(), plans.len());
    if !missing.is_empty() {
        let shown: Vec<&str> = missing.iter().take(10).map(String::as_str).collect();
        eprintln!(
            "missing {} runs (no input holds them): {}{}",
            missing.len(),
            shown.join(", "),
            if missing.len() > shown.len() { ", ..." } else { "" }
        );
    }
    Ok(if missing.is_empty() && rows.iter().all(Row::is_ok) { 0 } else { 1 })
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
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

    const SPEC: &str = "name = \"m\"\nduration_s = 5\nruns = 2\nschemes = [\"tcp-cubic\", \"alcc-copa\"]\n\
                        [[traces]]\nname = \"t\"\npath = \"/x\"\n";

    /// Writes a fake output directory holding `runs` (plan positions) with `status`.
    fn fake(root: &Path, name: &str, shard: Option<&str>, runs: &[(usize, &str)]) -> PathBuf {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let spec = Spec::parse("s", SPEC).unwrap();
        std::fs::write(dir.join("spec.toml"), spec.to_toml()).unwrap();
        if let Some(s) = shard {
            std::fs::write(dir.join(shard::SHARD_FILE), format!("{s}\n")).unwrap();
        }
        let plans = plan_of(&spec);
        for (i, status) in runs {
            let p = &plans[*i];
            let d = dir.join(p.rel_dir());
            std::fs::create_dir_all(&d).unwrap();
            let mut r = row(&p.scheme.name, p.run, status, (*status == OK).then_some(5.0));
            r.trace = "t".into();
            r.dir = p.rel_dir().display().to_string();
            std::fs::write(d.join("result.json"), serde_json::to_string(&r).unwrap()).unwrap();
            std::fs::write(d.join("downlink.log"), format!("# {name}\n")).unwrap();
        }
        dir
    }

    fn tmp(tag: &str) -> Tmp {
        let d = std::env::temp_dir().join(format!("alcc-merge-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Tmp(d)
    }

    #[test]
    fn shards_merge_in_plan_order_with_their_run_directories() {
        let t = tmp("order");
        // Plan: t/0/tcp-cubic, t/0/alcc-copa, t/1/tcp-cubic, t/1/alcc-copa.
        let a = fake(&t.0, "a", Some("1/2"), &[(0, OK), (2, OK)]);
        let b = fake(&t.0, "b", Some("2/2"), &[(1, OK), (3, FAILED)]);
        let out = t.0.join("out");
        let code = run(MergeArgs { dirs: vec![b, a], out: out.clone() }).unwrap();
        assert_eq!(code, 1, "one run failed");
        let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
        let keys: Vec<String> =
            csv.lines().skip(1).map(|l| l.split(',').take(7).collect::<Vec<_>>().join(",")).collect();
        assert_eq!(keys[0], "t,tcp-cubic,alcc,copa,cubic,kernel,0");
        assert_eq!(keys[1], "t,alcc-copa,alcc,copa,cubic,kernel,0");
        assert_eq!(keys.len(), 4);
        assert_eq!(
            std::fs::read_to_string(out.join("runs/t/alcc-copa/run-1/downlink.log")).unwrap(),
            "# b\n"
        );
        assert!(out.join("spec.toml").is_file() && !out.join(shard::SHARD_FILE).exists());
    }

    #[test]
    fn missing_runs_are_listed_and_duplicates_refused() {
        let t = tmp("dup");
        let a = fake(&t.0, "a", None, &[(0, FAILED), (1, OK)]);
        let b = fake(&t.0, "b", None, &[(0, OK)]);
        let c = fake(&t.0, "c", None, &[(3, OK)]);
        let out = t.0.join("out");
        let e =
            run(MergeArgs { dirs: vec![a.clone(), b, c.clone()], out: out.clone() }).unwrap_err().to_string();
        assert!(e.contains("run t tcp-cubic 0") && e.contains("/a") && e.contains("/b"), "{e}");
        assert!(!out.join("runs").exists(), "nothing linked before the refusal");
        let code = run(MergeArgs { dirs: vec![a, c], out: out.clone() }).unwrap();
        assert_eq!(code, 1, "one run missing, one failed");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
        let runs = v["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 3);
        assert_eq!(runs[0]["status"], FAILED, "a failed run is merged as failed");
        assert_eq!(
            std::fs::read_to_string(out.join("runs/t/alcc-copa/run-1/downlink.log")).unwrap(),
            "# c\n"
        );
    }

    #[test]
    fn different_specs_and_reused_outputs_are_refused() {
        let t = tmp("refuse");
        let a = fake(&t.0, "a", None, &[(0, OK)]);
        let b = fake(&t.0, "b", None, &[(1, OK)]);
        std::fs::write(b.join("spec.toml"), SPEC.replace("duration_s = 5", "duration_s = 6")).unwrap();
        let e = run(MergeArgs { dirs: vec![a.clone(), b], out: t.0.join("out") }).unwrap_err().to_string();
        assert!(e.contains("different experiments"), "{e}");
        let e = run(MergeArgs { dirs: vec![a.clone()], out: a.clone() }).unwrap_err().to_string();
        assert!(e.contains("one of the inputs"), "{e}");
        let e = run(MergeArgs { dirs: vec![t.0.join("nothing")], out: t.0.join("o2") }).unwrap_err();
        assert!(format!("{e:#}").contains("nothing/spec.toml"), "{e:#}");
        assert_eq!(run(MergeArgs { dirs: vec![a.clone()], out: t.0.join("o3") }).unwrap(), 1);
        let e = run(MergeArgs { dirs: vec![a], out: t.0.join("o3") }).unwrap_err().to_string();
        assert!(e.contains("already holds runs"), "{e}");
    }
}
