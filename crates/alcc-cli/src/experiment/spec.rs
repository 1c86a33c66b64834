//! The experiment definition (TOML): what to run, over which links, how often. See
//! docs/experiment-format.md for the format.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::direction::Direction;
use super::scheme::{Scheme, SchemeError};
use super::workload::Workload;

/// A spec that cannot be used, with the field at fault.
#[derive(Debug, Error)]
pub enum SpecError {
    /// The file cannot be read.
    #[error("{path}: cannot read: {error}")]
    Read {
        /// The spec file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// Not TOML, or fields of the wrong type, missing or unknown (the message names them).
    #[error("{path}: {message}")]
    Syntax {
        /// The spec file (or a label).
        path: String,
        /// The TOML parser's message, with line and column.
        message: String,
    },
    /// A field's value is out of range.
    #[error("{path}: field `{field}`: {reason}")]
    Field {
        /// The spec file (or a label).
        path: String,
        /// The field, e.g. `traces[1].path`.
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// A scheme name is not one.
    #[error("{path}: field `schemes`: {error}")]
    Scheme {
        /// The spec file (or a label).
        path: String,
        /// The scheme's error.
        error: SchemeError,
    },
}

/// How a synthetic trace is generated (`alcc trace gen`'s models).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Generate {
    /// `cellular` or `constant`.
    pub kind: String,
    /// Seed of the cellular model.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Length (and loop period) of the trace, seconds.
    #[serde(default = "default_trace_s")]
    pub duration_s: f64,
    /// Rate, Mbit/s (constant: required; cellular: the walk's mean, default 9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_mbps: Option<f64>,
}

fn default_seed() -> u64 {
    1
}

fn default_trace_s() -> f64 {
    60.0
}

fn default_runs() -> u32 {
    1
}

/// One link: a trace file (downlink, and uplink unless `uplink` names another) or a generated
/// trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// Name of the trace in the results (and its directory).
    pub name: String,
    /// Mahimahi trace file; `${VAR}` and `${VAR:-default}` are expanded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Uplink trace file (default: the same as `path`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uplink: Option<String>,
    /// Generate the trace instead of reading one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate: Option<Generate>,
    /// A missing file skips this trace (with a warning) instead of stopping the experiment.
    #[serde(default, skip_serializing_if = "is_false")]
    pub optional: bool,
}

fn is_false(b: &bool) -> bool {
    !b
}

/// What `--quick` changes. Absent fields keep their defaults: 8 s, 1 run, 2 traces, every
/// scheme.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quick {
    /// Length of each download.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// Runs per scheme and trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<u32>,
    /// Only the first this many traces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_traces: Option<usize>,
    /// Only these schemes (each one of `schemes`), in `schemes`' order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schemes: Option<Vec<String>>,
}

/// An experiment: schemes x traces x runs over the emulator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Name (the default output directory is `results/NAME`).
    pub name: String,
    /// Length of each download, seconds.
    pub duration_s: f64,
    /// Runs per scheme and trace.
    #[serde(default = "default_runs")]
    pub runs: u32,
    /// One-way propagation delay in each direction, ms.
    #[serde(default)]
    pub delay_ms: f64,
    /// Downlink drop-tail queue, bytes (absent: unbounded); the uplink's too unless
    /// `uplink_queue_bytes` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// Uplink drop-tail queue, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uplink_queue_bytes: Option<u64>,
    /// Probability that a packet of the measured direction (the downlink, or the uplink when
    /// `direction = "up"`) is lost at random.
    #[serde(default)]
    pub loss: f64,
    /// Which way the data goes: `down` (the server sends; the default) or `up` (the client
    /// uploads to a receiving server through the uplink trace).
    #[serde(default, skip_serializing_if = "Direction::is_down")]
    pub direction: Direction,
    /// The schemes, e.g. `tcp-cubic`, `alcc-copa@reno`, `udp-sprout`.
    pub schemes: Vec<String>,
    /// The links.
    pub traces: Vec<TraceSpec>,
    /// Several flows of each scheme and cross traffic (absent: one flow, nothing else).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<Workload>,
    /// What `--quick` changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quick: Option<Quick>,
}

/// Defaults of `--quick` when the spec has no `[quick]` table (or leaves a field out).
pub const QUICK_DEFAULT: (f64, u32, usize) = (8.0, 1, 2);

/// Names used as directory names: letters, digits, `_`, `-`, `.` (not leading).
fn is_dir_name(s: &str) -> bool {
    !s.is_empty() && !s.starts_with('.') && s.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
}

impl Spec {
    /// Reads and checks a spec file.
    pub fn load(path: &Path) -> Result<Spec, SpecError> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| SpecError::Read { path: path.to_path_buf(), error })?;
        Spec::parse(&path.display().to_string(), &text)
    }

    /// Parses and checks spec text; `label` names it in errors.
    pub fn parse(label: &str, text: &str) -> Result<Spec, SpecError> {
        let spec: Spec = toml::from_str(text).map_err(|e| SpecError::Syntax {
            path: label.to_string(),
            message: e.to_string().trim_end().to_string(),
        })?;
        spec.validate(label)?;
        Ok(spec)
    }

    /// The spec as TOML (how `OUT/spec.toml` records it).
    pub fn to_toml(&self) -> String {
        // Every field is a plain value, array or table: serialization cannot fail.
        toml::to_string(self).unwrap_or_default()
    }

    /// The parsed schemes, in spec order.
    pub fn parsed_schemes(&self) -> Vec<Scheme> {
        // `validate` parsed every one already.
        self.schemes.iter().filter_map(|s| Scheme::parse(s).ok()).collect()
    }

    /// The workloads each scheme runs in: the spec's `[[workloads]]`, or the implicit one (one
    /// flow, no cross traffic) when it has none.
    pub fn workload_list(&self) -> Vec<Workload> {
        if self.workloads.is_empty() {
            vec![Workload::implicit()]
        } else {
            self.workloads.clone()
        }
    }

    /// Checks every field's range; the error names the field.
    pub fn validate(&self, label: &str) -> Result<(), SpecError> {
        let field = |field: &str, reason: &str| SpecError::Field {
            path: label.to_string(),
            field: field.to_string(),
            reason: reason.to_string(),
        };
        if !is_dir_name(&self.name) {
            return Err(field("name", "must be letters, digits, `_`, `-` or `.` (it names a directory)"));
        }
        if !(self.duration_s.is_finite() && self.duration_s >= 1.0 && self.duration_s <= 3600.0) {
            return Err(field("duration_s", "must be between 1 and 3600 seconds"));
        }
        if !(1..=10_000).contains(&self.runs) {
            return Err(field("runs", "must be between 1 and 10000"));
        }
        if !(self.delay_ms.is_finite() && (0.0..=10_000.0).contains(&self.delay_ms)) {
            return Err(field("delay_ms", "must be between 0 and 10000 ms"));
        }
        if self.queue_bytes == Some(0) {
            return Err(field("queue_bytes", "must be positive (leave it out for an unbounded queue)"));
        }
        if self.uplink_queue_bytes == Some(0) {
            return Err(field(
                "uplink_queue_bytes",
                "must be positive (leave it out for an unbounded queue)",
            ));
        }
        if !(self.loss.is_finite() && (0.0..=1.0).contains(&self.loss)) {
            return Err(field("loss", "must be a probability between 0 and 1"));
        }
        if self.schemes.is_empty() {
            return Err(field("schemes", "lists no scheme"));
        }
        for (i, s) in self.schemes.iter().enumerate() {
            let scheme =
                Scheme::parse(s).map_err(|error| SpecError::Scheme { path: label.to_string(), error })?;
            if let Err(why) = self.direction.transfer(scheme.kind()) {
                return Err(field(
                    "schemes",
                    &format!("`{s}` {why} (direction = \"{}\")", self.direction.as_str()),
                ));
            }
            if self.schemes[..i].contains(s) {
                return Err(field("schemes", &format!("`{s}` is listed twice")));
            }
        }
        if self.traces.is_empty() {
            return Err(field("traces", "lists no trace (add a [[traces]] table)"));
        }
        for (i, t) in self.traces.iter().enumerate() {
            let at = |f: &str| format!("traces[{i}].{f}");
            if !is_dir_name(&t.name) {
                return Err(field(
                    &at("name"),
                    "must be letters, digits, `_`, `-` or `.` (it names a directory)",
                ));
            }
            if self.traces[..i].iter().any(|o| o.name == t.name) {
                return Err(field(&at("name"), &format!("`{}` is used twice", t.name)));
            }
            match (&t.path, &t.generate) {
                (Some(_), Some(_)) => return Err(field(&at("path"), "give `path` or `generate`, not both")),
                (None, None) => {
                    return Err(field(&at("path"), "give a trace file `path` or `generate = {...}`"))
                }
                (None, Some(g)) => {
                    if t.uplink.is_some() {
                        return Err(field(&at("uplink"), "a generated trace serves both directions"));
                    }
                    check_generate(g).map_err(|(f, r)| field(&at(&format!("generate.{f}")), r))?;
                }
                (Some(_), None) => {}
            }
        }
        self.validate_workloads(label)?;
        if let Some(q) = &self.quick {
            if q.duration_s.is_some_and(|d| !(d.is_finite() && (1.0..=3600.0).contains(&d))) {
                return Err(field("quick.duration_s", "must be between 1 and 3600 seconds"));
            }
            if q.runs.is_some_and(|r| r == 0) {
                return Err(field("quick.runs", "must be at least 1"));
            }
            if q.max_traces.is_some_and(|m| m == 0) {
                return Err(field("quick.max_traces", "must be at least 1"));
            }
            if let Some(list) = &q.schemes {
                if list.is_empty() {
                    return Err(field("quick.schemes", "lists no scheme (leave it out for every scheme)"));
                }
                if let Some(s) = list.iter().find(|s| !self.schemes.contains(s)) {
                    return Err(field("quick.schemes", &format!("`{s}` is not one of `schemes`")));
                }
            }
        }
        Ok(())
    }

    fn validate_workloads(&self, label: &str) -> Result<(), SpecError> {
        let field =
            |field: String, reason: String| SpecError::Field { path: label.to_string(), field, reason };
        if !self.workloads.is_empty() && !self.direction.is_down() {
            return Err(field("workloads".into(), "are for downloads only (direction = \"down\")".into()));
        }
        let schemes = self.parsed_schemes();
        for (i, w) in self.workloads.iter().enumerate() {
            let at = |f: &str| format!("workloads[{i}].{f}");
            if !is_dir_name(&w.name) {
                return Err(field(
                    at("name"),
                    "must be letters, digits, `_`, `-` or `.` (it names a directory)".into(),
                ));
            }
            if self.workloads[..i].iter().any(|o| o.name == w.name) {
                return Err(field(at("name"), format!("`{}` is used twice", w.name)));
            }
            w.check(self.duration_s).map_err(|(f, r)| field(at(&f), r))?;
            if w.flows > 1 {
                if let Some(s) = schemes.iter().find(|s| !s.kind().runs_several_flows()) {
                    return Err(field(
                        at("flows"),
                        format!(
                            "`{s}` cannot run several flows: its client is not curl, and it has no sender per \
                             flow (schemes fetched by curl do: tcp-X and kernel-mode alcc-X; and udp-X and ref-copa, \
                             one sender each)"
                        ),
                    ));
                }
                if w.servers > 1 {
                    if let Some(s) = schemes.iter().find(|s| s.kind().sender_per_flow()) {
                        return Err(field(
                            at("servers"),
                            format!(
                                "`{s}` starts a sender per flow in one server namespace: servers must be 1"
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The spec `--quick` runs: shorter downloads, fewer runs and traces, no `[quick]` table.
    pub fn quick_version(&self) -> Spec {
        let q = self.quick.clone().unwrap_or_default();
        let (d, r, m) = QUICK_DEFAULT;
        let mut spec = self.clone();
        spec.duration_s = q.duration_s.unwrap_or(d).min(self.duration_s);
        // Offsets and on periods shrink with the run: the same shape, shorter.
        let factor = spec.duration_s / self.duration_s;
        spec.workloads = self.workloads.iter().map(|w| w.scaled(factor)).collect();
        spec.runs = q.runs.unwrap_or(r).min(self.runs);
        spec.traces.truncate(q.max_traces.unwrap_or(m));
        if let Some(list) = &q.schemes {
            spec.schemes.retain(|s| list.contains(s));
        }
        spec.quick = None;
        spec
    }

    /// Expands `${VAR}` and `${VAR:-default}` in every trace path, then makes a relative path
    /// relative to `base`, the spec file's directory (so that `../../shared/traces` in
    /// `experiments/` means the traces beside the repository, wherever the command runs).
    pub fn expand_paths(&mut self, label: &str, base: &Path) -> Result<(), SpecError> {
        for (i, t) in self.traces.iter_mut().enumerate() {
            for (name, value) in [("path", &mut t.path), ("uplink", &mut t.uplink)] {
                if let Some(v) = value {
                    let expanded =
                        expand_env(v, |k| std::env::var(k).ok()).map_err(|reason| SpecError::Field {
                            path: label.to_string(),
                            field: format!("traces[{i}].{name}"),
                            reason,
                        })?;
                    *v = base.join(&expanded).display().to_string();
                }
            }
        }
        Ok(())
    }
}

fn check_generate(g: &Generate) -> Result<(), (&'static str, &'static str)> {
    if !(g.duration_s.is_finite() && (1.0..=86_400.0).contains(&g.duration_s)) {
        return Err(("duration_s", "must be between 1 s and one day"));
    }
    if g.rate_mbps.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
        return Err(("rate_mbps", "must be a positive number"));
    }
    match g.kind.as_str() {
        "cellular" => Ok(()),
        "constant" if g.rate_mbps.is_none() => Err(("rate_mbps", "a constant trace needs its rate")),
        "constant" => Ok(()),
        _ => Err(("kind", "must be `cellular` or `constant`")),
    }
}

/// Replaces `${VAR}` by the value of `VAR` (an error when unset) and `${VAR:-default}` by its
/// value or `default` when unset or empty. Other text, lone `$` included, stays as it is.
pub fn expand_env(text: &str, get: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let end = after.find('}').ok_or_else(|| format!("`{text}`: `${{` without a closing `}}`"))?;
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("`{text}`: `${{{inner}}}` is not a variable name"));
        }
        match (get(var).filter(|v| !v.is_empty()), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(format!("`{text}`: environment variable {var} is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEMO: &str = r#"
name = "demo"
duration_s = 20
runs = 3
delay_ms = 10
queue_bytes = 2000000
schemes = ["tcp-cubic", "alcc-copa", "udp-copa"]
[[traces]]
name = "synthetic"
generate = { kind = "cellular", seed = 1, duration_s = 60 }
[[traces]]
name = "CampusWalk"
path = "${ALCC_TRACE_DIR:-/x}/alcc-paper/CampusWalk.trace"
[[traces]]
name = "third"
path = "/t/third.trace"
"#;

    fn error(text: &str) -> String {
        Spec::parse("t.toml", text).unwrap_err().to_string()
    }

    #[test]
    fn a_full_spec_parses_with_defaults() {
        let s = Spec::parse("t.toml", DEMO).unwrap();
        assert_eq!((s.name.as_str(), s.duration_s, s.runs, s.delay_ms), ("demo", 20.0, 3, 10.0));
        assert_eq!((s.queue_bytes, s.uplink_queue_bytes, s.loss), (Some(2_000_000), None, 0.0));
        assert_eq!(s.traces.len(), 3);
        let g = s.traces[0].generate.as_ref().unwrap();
        assert_eq!((g.kind.as_str(), g.seed, g.duration_s, g.rate_mbps), ("cellular", 1, 60.0, None));
        assert_eq!(s.parsed_schemes().len(), 3);
    }

    #[test]
    fn the_recorded_toml_reads_back_identically() {
        let s = Spec::parse("t.toml", DEMO).unwrap();
        let again = Spec::parse("again", &s.to_toml()).unwrap();
        assert_eq!(s, again);
    }

    #[test]
    fn quick_shortens_with_defaults_or_the_table() {
        let s = Spec::parse("t.toml", DEMO).unwrap();
        let q = s.quick_version();
        assert_eq!((q.duration_s, q.runs, q.traces.len(), q.quick.clone()), (8.0, 1, 2, None));
        let text = format!("{DEMO}\n[quick]\nduration_s = 5\nruns = 2\nmax_traces = 1\n");
        let q = Spec::parse("t.toml", &text).unwrap().quick_version();
        assert_eq!((q.duration_s, q.runs, q.traces.len()), (5.0, 2, 1));
        assert_eq!(q.traces[0].name, "synthetic");
        // --quick never lengthens a spec.
        let short = DEMO.replace("duration_s = 20", "duration_s = 4");
        assert_eq!(Spec::parse("t.toml", &short).unwrap().quick_version().duration_s, 4.0);
        // A subset of the schemes, in the spec's order.
        let text = format!("{DEMO}\n[quick]\nschemes = [\"udp-copa\", \"tcp-cubic\"]\n");
        let q = Spec::parse("t.toml", &text).unwrap().quick_version();
        assert_eq!(q.schemes, ["tcp-cubic", "udp-copa"]);
        for (bad, why) in
            [("[]", "lists no scheme"), ("[\"udp-verus\"]", "`udp-verus` is not one of `schemes`")]
        {
            let e = error(&format!("{DEMO}\n[quick]\nschemes = {bad}\n"));
            assert!(e.contains("`quick.schemes`") && e.contains(why), "{e}");
        }
    }

    #[test]
    fn errors_name_the_field() {
        let e = error(&DEMO.replace("duration_s = 20", "duration_s = 0"));
        assert!(e.contains("t.toml") && e.contains("`duration_s`"), "{e}");
        let e = error(&DEMO.replace("runs = 3", "runs = 0"));
        assert!(e.contains("`runs`"), "{e}");
        let e = error(&DEMO.replace("delay_ms = 10", "delay_ms = -1"));
        assert!(e.contains("`delay_ms`"), "{e}");
        let e = error(&DEMO.replace("\"udp-copa\"", "\"udp-copa\", \"quic-x\""));
        assert!(e.contains("`schemes`") && e.contains("quic-x"), "{e}");
        let e = error(&DEMO.replace("\"udp-copa\"", "\"native-copa\""));
        assert!(e.contains("`schemes`") && e.contains("udp-copa"), "{e}");
        let e = error(&DEMO.replace("\"udp-copa\"", "\"tcp-cubic\""));
        assert!(e.contains("listed twice"), "{e}");
        let e = error(&DEMO.replace("name = \"third\"", "name = \"CampusWalk\""));
        assert!(e.contains("traces[2].name") && e.contains("used twice"), "{e}");
        let e = error(&DEMO.replace("kind = \"cellular\"", "kind = \"wifi\""));
        assert!(e.contains("traces[0].generate.kind"), "{e}");
        let e = error(&DEMO.replace("kind = \"cellular\"", "kind = \"constant\""));
        assert!(e.contains("traces[0].generate.rate_mbps"), "{e}");
        let e = error(&DEMO.replace("path = \"/t/third.trace\"", ""));
        assert!(e.contains("traces[2].path"), "{e}");
        let e = error(&DEMO.replace("name = \"demo\"", "name = \"../up\""));
        assert!(e.contains("`name`"), "{e}");
    }

    #[test]
    fn an_upload_spec_takes_only_schemes_that_upload() {
        let up = DEMO.replace(
            "schemes = [\"tcp-cubic\", \"alcc-copa\", \"udp-copa\"]",
            "direction = \"up\"\nschemes = [\"tcp-reno\", \"alcc-mdi\", \"java-mdi@reno\"]",
        );
        let s = Spec::parse("t.toml", &up).unwrap();
        assert_eq!(s.direction, Direction::Up);
        assert!(s.to_toml().contains("direction = \"up\""));
        assert_eq!(Spec::parse("again", &s.to_toml()).unwrap(), s);
        // The default is left out of the recorded spec (older ones compare equal).
        assert!(!Spec::parse("t.toml", DEMO).unwrap().to_toml().contains("direction"));
        let e = error(&DEMO.replace("schemes = [", "direction = \"up\"\nschemes = ["));
        assert!(
            e.contains("field `schemes`: `udp-copa` cannot upload: UDP mode's sender is the accepting side")
                && e.contains("(direction = \"up\")"),
            "{e}"
        );
        let e = error(&DEMO.replace("schemes = [", "direction = \"sideways\"\nschemes = ["));
        assert!(e.contains("direction") && e.contains("sideways"), "{e}");
    }

    #[test]
    fn syntax_and_unknown_fields_are_reported_with_their_place() {
        let e = error(&DEMO.replace("runs = 3", "runz = 3"));
        assert!(e.contains("t.toml") && e.contains("runz"), "{e}");
        let e = error(&DEMO.replace("runs = 3", "runs = \"three\""));
        assert!(e.contains("runs") && e.contains("line"), "{e}");
        let e = error("name = ");
        assert!(e.contains("t.toml"), "{e}");
    }

    #[test]
    fn the_shipped_experiments_parse() {
        let paper = Spec::parse("paper.toml", include_str!("../../../../experiments/paper.toml")).unwrap();
        assert_eq!(
            (paper.queue_bytes, paper.delay_ms, paper.runs, paper.loss),
            (Some(2_000_000), 10.0, 20, 0.0)
        );
        let names: Vec<&str> = paper.traces.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["CampusWalk", "highwayGold", "rapidGold"]);
        for cc in ["verus", "copa", "sprout"] {
            assert!(
                paper.schemes.contains(&format!("alcc-{cc}")) && paper.schemes.contains(&format!("udp-{cc}"))
            );
        }
        for k in ["cubic", "reno", "bbr"] {
            assert!(paper.schemes.contains(&format!("tcp-{k}")));
        }
        for cc in ["verus", "copa", "sprout"] {
            assert!(
                paper.schemes.contains(&format!("ref-{cc}")),
                "the paper compared with the authors' {cc}"
            );
        }
        let q = paper.quick_version();
        assert_eq!((q.traces.len(), q.runs, q.duration_s, q.schemes.len()), (2, 1, 8.0, 11));
        assert!(q.schemes.iter().all(|s| !s.starts_with("ref-")), "CI runs its one ref-copa elsewhere");
        let demo = Spec::parse("demo.toml", include_str!("../../../../experiments/demo.toml")).unwrap();
        assert!(demo.traces.iter().all(|t| t.generate.is_some()));
        assert!(demo.parsed_schemes().iter().all(|s| s.kind().warning().is_none()));
        // Copa as the authors' (the default) and with our drain check.
        for s in
            ["tcp-cubic", "tcp-bbr", "alcc-sprout", "alcc-sprout-ack", "alcc-copa", "alcc-copa:mode=drain"]
        {
            assert!(demo.schemes.iter().any(|d| d == s), "demo.toml lacks {s}");
        }
        // Several Copa flows: the authors' sender per flow beside ours with both mode switches.
        let flows =
            Spec::parse("copa-flows.toml", include_str!("../../../../experiments/copa-flows.toml")).unwrap();
        assert_eq!(flows.schemes, ["ref-copa", "udp-copa", "udp-copa:mode=drain"]);
        assert_eq!(flows.workload_list()[0].flows, 4);
        assert!(flows.parsed_schemes().iter().all(|s| s.kind().sender_per_flow()));
        let ack =
            Spec::parse("sprout-ack.toml", include_str!("../../../../experiments/sprout-ack.toml")).unwrap();
        assert!(ack.parsed_schemes().iter().all(|s| s.kind().warning().is_none()));
        assert_eq!((ack.traces.len(), ack.runs, ack.duration_s), (6, 3, 30.0));
        assert_eq!(ack.traces.iter().filter(|t| t.uplink.is_some()).count(), 2);
        let flavors =
            Spec::parse("flavors.toml", include_str!("../../../../experiments/flavors.toml")).unwrap();
        assert!(flavors.parsed_schemes().iter().all(|s| s.kind().warning().is_none()));
        assert_eq!(flavors.schemes.iter().filter(|s| s.contains('@')).count(), 6);
        let baseline =
            Spec::parse("baseline.toml", include_str!("../../../../experiments/baseline.toml")).unwrap();
        assert!(baseline.parsed_schemes().iter().all(|s| s.kind().warning().is_none()));
        let loss = Spec::parse("loss.toml", include_str!("../../../../experiments/loss.toml")).unwrap();
        assert_eq!(loss.loss, 0.01);
        assert!(loss.traces[0].uplink.is_some());
        let mdi = Spec::parse("mdi.toml", include_str!("../../../../experiments/mdi.toml")).unwrap();
        assert!(mdi.parsed_schemes().iter().all(|s| s.kind().warning().is_none()), "the registry knows mdi");
        assert!(
            mdi.schemes.contains(&"alcc-mdi".to_string()) && mdi.schemes.contains(&"udp-mdi".to_string())
        );
        let uplink = Spec::parse("uplink.toml", include_str!("../../../../experiments/uplink.toml")).unwrap();
        assert_eq!((uplink.direction, uplink.runs, uplink.queue_bytes), (Direction::Up, 3, Some(2_000_000)));
        assert_eq!(uplink.traces.iter().filter(|t| t.uplink.is_some()).count(), 2);
        assert!(uplink.parsed_schemes().iter().all(|s| s.kind().warning().is_none()));
        let q = uplink.quick_version();
        assert_eq!(q.schemes, ["java-mdi@reno", "alcc-mdi@reno", "tcp-reno"], "one upload per client type");
        let reference =
            Spec::parse("reference.toml", include_str!("../../../../experiments/reference.toml")).unwrap();
        assert!(reference.parsed_schemes().iter().all(|s| s.kind().warning().is_none()));
        assert_eq!((reference.traces.len(), reference.runs, reference.schemes.len()), (12, 3, 7));
        assert!(reference.schemes.iter().any(|s| s == "udp-sprout:clock=half_rtt"));
        let reference_alcc =
            Spec::parse("reference-alcc.toml", include_str!("../../../../experiments/reference-alcc.toml"))
                .unwrap();
        assert!(reference_alcc.parsed_schemes().iter().all(|s| s.kind().warning().is_none()));
        // Verus over CUBIC and over the BPF underlay (CUBIC's HyStart holds Verus's slow start).
        assert!(["alcc-verus", "alcc-verus@alcc"]
            .iter()
            .all(|v| reference_alcc.schemes.iter().any(|s| s == v)));
        let coupled =
            Spec::parse("coupled.toml", include_str!("../../../../experiments/coupled.toml")).unwrap();
        assert!(coupled.parsed_schemes().iter().all(|s| s.kind().warning().is_none()));
        assert_eq!((coupled.delay_ms, coupled.queue_bytes, coupled.runs), (20.0, Some(1_500_000), 3));
        let names: Vec<&str> = coupled.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["equal", "weighted", "weighted-2proc", "cubic-onoff", "udp-onoff"]);
        assert!(coupled.workloads.iter().all(|w| w.flows == 4));
        assert_eq!(coupled.quick_version().traces.len(), 1);
        let manager =
            Spec::parse("coupled-manager.toml", include_str!("../../../../experiments/coupled-manager.toml"))
                .unwrap();
        // A coupled Copa group names the drain check's variant (docs/coupled-flows.md).
        assert_eq!(manager.schemes, ["alcc-copa:mode=drain+coupled", "alcc-copa:mode=drain+manager"]);
        assert!(coupled
            .schemes
            .iter()
            .filter(|s| s.starts_with("alcc-copa"))
            .all(|s| s.contains(":mode=drain+")));
        assert!(manager
            .parsed_schemes()
            .iter()
            .all(|s| s.kind().warning().is_none() && s.kind().runs_several_flows()));
        let servers: Vec<u32> = manager.workloads.iter().map(|w| w.servers).collect();
        assert_eq!(servers, [1, 2]);
        for (file, text, delay) in [
            ("drwa.toml", include_str!("../../../../experiments/drwa.toml"), 10.0),
            ("drwa-50ms.toml", include_str!("../../../../experiments/drwa-50ms.toml"), 50.0),
        ] {
            let drwa = Spec::parse(file, text).unwrap();
            assert!(drwa.parsed_schemes().iter().all(|s| s.kind().warning().is_none()), "{file}");
            assert_eq!(
                (drwa.traces.len(), drwa.delay_ms, drwa.queue_bytes),
                (4, delay, Some(2_000_000)),
                "{file}"
            );
            assert_eq!(drwa.schemes.iter().filter(|s| s.starts_with("rx-")).count(), 4, "{file}");
        }
    }

    const WORKLOAD: &str =
        "\n[[workloads]]\nname = \"w\"\nflows = 2\noffsets_s = [0, 10]\nweights = [1, 3]\n\
                            [[workloads.cross]]\nkind = \"udp\"\nrate_mbps = 10\non_s = [[5, 15]]\n";

    #[test]
    fn workloads_parse_check_and_shrink_with_quick() {
        let two = DEMO.replace("\"udp-copa\"", "\"alcc-copa+uncoupled\"");
        let s = Spec::parse("t.toml", &format!("{two}{WORKLOAD}")).unwrap();
        assert_eq!(s.workloads.len(), 1);
        assert_eq!(s.workload_list()[0].weights, [1.0, 3.0]);
        assert_eq!(Spec::parse("again", &s.to_toml()).unwrap(), s);
        // Without workloads, the implicit one and nothing recorded.
        let plain = Spec::parse("t.toml", DEMO).unwrap();
        assert!(plain.workload_list()[0].is_implicit() && !plain.to_toml().contains("workloads"));
        // --quick: 8 s of 20, times scaled by 0.4.
        let q = s.quick_version();
        assert_eq!(q.workloads[0].offsets_s, [0.0, 4.0]);
        assert_eq!(q.workloads[0].cross[0].on_s, [[2.0, 6.0]]);
        // Several flows need curl clients or a sender per flow: ref-verus has neither; udp-copa
        // and ref-copa start one sender per flow, from one server only.
        let e = error(&format!("{}{WORKLOAD}", DEMO.replace("\"udp-copa\"", "\"ref-verus\"")));
        assert!(
            e.contains("`workloads[0].flows`") && e.contains("`ref-verus` cannot run several flows"),
            "{e}"
        );
        let per_flow = DEMO.replace("\"udp-copa\"", "\"udp-copa\", \"ref-copa\"");
        assert_eq!(Spec::parse("t.toml", &format!("{per_flow}{WORKLOAD}")).unwrap().workloads[0].flows, 2);
        let e = error(&format!("{per_flow}{}", WORKLOAD.replace("flows = 2\n", "flows = 2\nservers = 2\n")));
        assert!(
            e.contains("`workloads[0].servers`") && e.contains("`udp-copa` starts a sender per flow"),
            "{e}"
        );
        let e = error(&format!("{two}{}", WORKLOAD.replace("[0, 10]", "[0, 19.5]")));
        assert!(e.contains("`workloads[0].offsets_s`"), "{e}");
        let e = error(&format!("{two}{}", WORKLOAD.replace("rate_mbps = 10\n", "")));
        assert!(e.contains("`workloads[0].cross[0].kind`") && e.contains("rate_mbps"), "{e}");
        let e = error(&format!("{two}{WORKLOAD}{}", WORKLOAD.replace("flows = 2", "flows = 1")));
        assert!(e.contains("`workloads[1].name`") && e.contains("used twice"), "{e}");
        let up = two.replace("schemes = [", "direction = \"up\"\nschemes = [").replace("\"tcp-cubic\", ", "");
        let e = error(&format!("{}{WORKLOAD}", up.replace("alcc-copa+uncoupled", "tcp-reno")));
        assert!(e.contains("`workloads`") && e.contains("downloads only"), "{e}");
    }

    #[test]
    fn relative_trace_paths_are_relative_to_the_spec_file() {
        let mut s = Spec::parse("t.toml", DEMO).unwrap();
        s.traces[2].uplink = Some("up/${NO_SUCH_ALCC_VAR:-x}.trace".into());
        s.traces[1].path = Some("${NO_SUCH_ALCC_VAR:-../../shared/traces}/a.trace".into());
        s.expand_paths("t.toml", Path::new("/repo/experiments")).unwrap();
        assert_eq!(s.traces[1].path.as_deref(), Some("/repo/experiments/../../shared/traces/a.trace"));
        // Absolute paths stay as they are.
        assert_eq!(s.traces[2].path.as_deref(), Some("/t/third.trace"));
        assert_eq!(s.traces[2].uplink.as_deref(), Some("/repo/experiments/up/x.trace"));
    }

    #[test]
    fn env_expansion() {
        let get = |k: &str| (k == "HOME_X").then(|| "/h".to_string());
        assert_eq!(expand_env("${HOME_X}/a", get).unwrap(), "/h/a");
        assert_eq!(expand_env("${NOPE:-/d}/a/${HOME_X}", get).unwrap(), "/d/a//h");
        assert_eq!(expand_env("$HOME_X/a", get).unwrap(), "$HOME_X/a");
        assert!(expand_env("${NOPE}/a", get).unwrap_err().contains("NOPE is not set"));
        assert!(expand_env("${HOME_X", get).unwrap_err().contains("closing"));
        assert!(expand_env("${a b}", get).unwrap_err().contains("not a variable name"));
    }
}
