//! The schemes of an experiment: what runs on the server and on the client of one run, and how
//! the run is labelled in the results table.
//!
//! Every kind of scheme is one variant of [`SchemeKind`] holding a type of its own module that
//! implements [`Kind`] (one method per behaviour: its server, its client, its table columns,
//! its label, what it needs installed). Today's kinds:
//!
//! | name | module | what it is |
//! | --- | --- | --- |
//! | `tcp-KERNELCC` | [`plain_tcp`] | plain kernel TCP, no alcc code on the data path |
//! | `alcc-CC[@UNDERLAY]` | [`alcc`] | one of our controllers above kernel TCP |
//! | `udp-CC` | [`udp`] | alcc's own implementation of CC over UDP (not its authors' program) |
//! | `ref-verus[:r=N]`, `ref-copa`, `ref-sprout` | [`reference`] | the authors' own program (`make refs`), over UDP |
//! | `rx-WINDOW@SERVER` | [`receiver`] | the client governs its advertised window (DRWA, a static buffer) against a `tcp-X`/`alcc-X` server |
//! | `nginx-tcp-KERNELCC`, `nginx-shim-CC[@UNDERLAY]` | [`unmodified`] | Debian's nginx, unmodified: plain, or under the preload shim with controller CC |
//! | `vsftpd-tcp-KERNELCC`, `vsftpd-shim-CC[@UNDERLAY]` | [`vsftpd`] | Debian's vsftpd, unmodified, to curl's FTP client: plain, or under the preload shim |
//! | `java-CC[@KERNELCC]` | [`java`] | the Java library's sender (`alcc-upload.jar`), framed mode |
//!
//! A spec's `direction = "up"` runs each scheme's [`Kind::upload`] instead: the client sends
//! through the uplink trace and the server receives (`alcc serve --receive`). `tcp-K` uploads
//! with `curl -T`, `alcc-CC` with `alcc put`, `java-CC` with the Java uploader; the others have
//! no upload and the spec is refused naming them.
//!
//! Adding a kind: a module with a type that implements [`Kind`] and a `parse` of the text after
//! its prefix, a variant of [`SchemeKind`], its line in [`SchemeKind::PREFIXES`] and in
//! [`SchemeKind::kind`], a row in docs/experiment-format.md, and its family in the report
//! (python/alcc_report/schemes.py) when it brings a new one.

pub mod alcc;
pub mod java;
pub mod plain_tcp;
pub mod receiver;
pub mod reference;
pub mod udp;
pub mod unmodified;
pub mod vsftpd;

use std::fmt;
use std::path::{Path, PathBuf};

use thiserror::Error;

use super::runner::shell_quote;
use super::workload::FLOW_CLIENT_PORT_BASE;

/// Which kind of sender a scheme is: the `family` column of the results table, which the report
/// uses to pair schemes (python/alcc_report/schemes.py).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Plain kernel TCP.
    Tcp,
    /// An alcc controller above kernel TCP.
    Alcc,
    /// alcc's own implementation of a controller over UDP.
    Udp,
    /// The algorithm's authors' own program.
    Ref,
    /// The client governs its receive window (DRWA, a static buffer) against a server scheme.
    Rx,
    /// An off-the-shelf server, unmodified: plain, or under the preload shim.
    Unmodified,
    /// The Java library's sender (java/).
    Java,
}

impl Family {
    /// The name in the results table.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Tcp => "tcp",
            Family::Alcc => "alcc",
            Family::Udp => "udp",
            Family::Ref => "ref",
            Family::Rx => "rx",
            Family::Unmodified => "unmodified",
            Family::Java => "java",
        }
    }
}

/// How the flow learns what was delivered (`alcc serve --mode`, the `mode` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    /// The kernel's ACK information; the client is plain `curl`.
    Kernel,
    /// alcc's frames over TCP; the client is `alcc get --mode framed`.
    Framed,
    /// UDP; the client is `alcc get --mode udp`.
    Udp,
}

impl RunMode {
    /// The name `alcc serve --mode` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            RunMode::Kernel => "kernel",
            RunMode::Framed => "framed",
            RunMode::Udp => "udp",
        }
    }
}

/// What one run's commands are built from.
#[derive(Debug, Clone, Copy)]
pub struct RunContext<'a> {
    /// The `alcc` binary.
    pub alcc: &'a Path,
    /// The run directory (absolute or relative to the sweep's working directory).
    pub dir: &'a Path,
    /// Length of the download, seconds.
    pub duration_s: f64,
    /// The server's port inside the emulated link.
    pub port: u16,
    /// Bytes the server offers (more than any run moves: the deadline ends the download).
    pub offer_bytes: u64,
    /// How long the server serves before it stops by itself, seconds (the download plus a
    /// grace period, for a server that never notices that the client left).
    pub server_seconds: f64,
    /// How many clients the server serves before it exits (1 but in a run of several flows).
    pub clients: u64,
    /// Which server process of the run this is (0, or 1 for a workload's second server): its
    /// files are `telemetry-1.jsonl`, `rusage-1.json`.
    pub server: usize,
}

impl RunContext<'_> {
    /// `path` shell-quoted.
    pub fn quoted(&self, path: &Path) -> String {
        shell_quote(&path.display().to_string())
    }

    /// The `alcc` binary, shell-quoted.
    pub fn alcc_q(&self) -> String {
        self.quoted(self.alcc)
    }

    /// Where the sender writes its telemetry (JSON lines).
    pub fn telemetry(&self) -> PathBuf {
        self.dir.join(format!("telemetry{}.jsonl", self.suffix()))
    }

    /// Where the sender writes its getrusage at exit; the client waits for this file.
    pub fn rusage(&self) -> PathBuf {
        self.dir.join(format!("rusage{}.json", self.suffix()))
    }

    fn suffix(&self) -> String {
        match self.server {
            0 => String::new(),
            k => format!("-{k}"),
        }
    }
}

/// The client side of a run: a shell command that downloads until the deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    /// The download command (a `sh` fragment; `$ALCC_SERVER` is the server's address).
    pub command: String,
    /// The exit status that means "ran to the deadline" (a success): curl's 28, timeout's 124.
    pub deadline_status: i32,
}

impl Client {
    /// `curl` fetching `http://SERVER:PORT/` for `duration_s`.
    pub fn curl(run: &RunContext) -> Client {
        Client {
            command: format!(
                "curl -sS -o /dev/null --max-time {} \"http://$ALCC_SERVER:{}/\"",
                run.duration_s, run.port
            ),
            deadline_status: 28,
        }
    }

    /// `curl` as one of several flows: from the fixed `local_port` (the emulator's flow log
    /// tells the flows apart by it), asking for `weight` as `/?weight=W` when given (alcc's
    /// server sets that connection's priority weight; docs/experiment-format.md).
    pub fn curl_flow(run: &RunContext, local_port: u16, weight: Option<f64>) -> Client {
        let query = weight.map(|w| format!("?weight={w}")).unwrap_or_default();
        Client {
            command: format!(
                "curl -sS -o /dev/null --local-port {local_port} --max-time {} \"http://$ALCC_SERVER:{}/{query}\"",
                run.duration_s, run.port
            ),
            deadline_status: 28,
        }
    }

    /// `alcc get --mode MODE` for `duration_s` (the receiving side of framed or UDP mode).
    pub fn alcc_get(run: &RunContext, mode: RunMode) -> Client {
        Client {
            command: format!(
                "timeout {} {} get \"$ALCC_SERVER:{}\" --mode {}",
                run.duration_s,
                run.alcc_q(),
                run.port,
                mode.as_str()
            ),
            deadline_status: 124,
        }
    }
}

/// Something a scheme needs on the machine; the sweep checks every need of its schemes before
/// the first run and refuses to start, naming what is missing and how to get it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// A program found in `PATH`.
    Program {
        /// Its name.
        name: &'static str,
        /// How to get it.
        install: &'static str,
    },
    /// A file that a build step makes.
    File {
        /// Where it must be.
        path: PathBuf,
        /// How to make it.
        remedy: String,
    },
}

impl Need {
    /// Why the need is not met, or `None` when it is; programs are looked for in `path` (a
    /// `PATH` value).
    pub fn missing(&self, path: &std::ffi::OsStr) -> Option<String> {
        match self {
            Need::Program { name, install } => {
                let found = std::env::split_paths(path).any(|d| is_executable(&d.join(name)));
                (!found).then(|| format!("`{name}` is not installed ({install})"))
            }
            Need::File { path, remedy } => {
                (!path.is_file()).then(|| format!("{} is missing ({remedy})", path.display()))
            }
        }
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// One kind of scheme: every behaviour the harness and the results table need.
pub trait Kind {
    /// The `family` column.
    fn family(&self) -> Family;
    /// The `cc` column: the controller spec, `none` when no alcc controller runs.
    fn cc(&self) -> &str;
    /// The `underlay` column: the kernel congestion control under the sender, empty for none.
    fn underlay(&self) -> &str;
    /// The `mode` column: how the sender learns what was delivered.
    fn mode(&self) -> RunMode;
    /// What the scheme is, in a few words (the `label` column and the report's legend).
    fn label(&self) -> String;
    /// The server's shell command (run inside the emulator's server namespace).
    fn server(&self, run: &RunContext) -> String;
    /// The client's download (run inside the client namespace after the server started).
    fn client(&self, run: &RunContext) -> Client;
    /// What must be installed for its runs.
    fn needs(&self) -> Vec<Need>;
    /// Flow `local_port - base` of several: curl from that local port ([`Client::curl_flow`]),
    /// or, for a scheme with a sender per flow ([`Kind::sender_per_flow`]), the receiver of the
    /// flow whose sender sends from that port; `None` when its client cannot be one of several.
    fn flow_client(&self, _run: &RunContext, _local_port: u16, _weight: Option<f64>) -> Option<Client> {
        None
    }
    /// Whether a run of several flows starts one sender process per flow (the UDP schemes and
    /// the authors' Copa, whose senders serve one receiver each): its [`Kind::server`] starts
    /// `run.clients` senders, flow `i`'s sending from [`flow_port`]`(i)`, measured together
    /// ([`measured_senders`]). Such schemes run their flows from one server (`servers = 1`).
    fn sender_per_flow(&self) -> bool {
        false
    }
    /// Whether it runs several flows in one run ([`Kind::flow_client`] gives a client).
    fn runs_several_flows(&self) -> bool {
        let run = RunContext {
            alcc: Path::new("alcc"),
            dir: Path::new("."),
            duration_s: 1.0,
            port: 1,
            offer_bytes: 1,
            server_seconds: 1.0,
            clients: 2,
            server: 0,
        };
        self.flow_client(&run, 1, None).is_some()
    }
    /// Why every run of it will fail although the sweep goes on (an unregistered controller).
    fn warning(&self) -> Option<String> {
        None
    }
    /// How long after the clients' start its sender starts sending, by the scheme's own start
    /// order (0 but for the authors' Copa, whose sender starts after its receiver): the run's
    /// window starts that much later ([`crate::experiment::analysis::run_window`]).
    fn sender_delay_s(&self) -> f64 {
        0.0
    }
    /// The scheme uploading (`direction = "up"`: the client sends, the server receives), or
    /// why it cannot.
    fn upload(&self) -> Result<Box<dyn Transfer + '_>, String>;
}

/// One direction's commands of a scheme: what the download ([`Kind`]'s own) or the upload
/// ([`Kind::upload`]) runs, and what that needs.
pub trait Transfer {
    /// The `mode` column: how the sender learns what was delivered.
    fn mode(&self) -> RunMode;
    /// What runs, in a few words (the `label` column).
    fn label(&self) -> String;
    /// The server's shell command (run inside the emulator's server namespace).
    fn server(&self, run: &RunContext) -> String;
    /// The client's command (run inside the client namespace after the server started).
    fn client(&self, run: &RunContext) -> Client;
    /// What must be installed for its runs.
    fn needs(&self) -> Vec<Need>;
}

/// A scheme's download: the [`Kind`]'s own commands.
pub struct Download<'a>(pub &'a dyn Kind);

impl Transfer for Download<'_> {
    fn mode(&self) -> RunMode {
        self.0.mode()
    }

    fn label(&self) -> String {
        self.0.label()
    }

    fn server(&self, run: &RunContext) -> String {
        self.0.server(run)
    }

    fn client(&self, run: &RunContext) -> Client {
        self.0.client(run)
    }

    fn needs(&self) -> Vec<Need> {
        self.0.needs()
    }
}

/// The port flow `i` of a scheme with a sender per flow ([`Kind::sender_per_flow`]) sends
/// from: [`FLOW_CLIENT_PORT_BASE`]` + i`, so that the emulator's flow log tells the flows apart
/// (crate::experiment::per_flow::classify).
pub fn flow_port(i: u64) -> u16 {
    FLOW_CLIENT_PORT_BASE.saturating_add(u16::try_from(i).unwrap_or(u16::MAX))
}

/// `alcc rusage --out RUSAGE [--seconds S] -- sh -c 'SENDER_0 & SENDER_1 & ... wait'`: several
/// senders of one run started together and measured as one (their CPU time summed in the
/// run's `rusage.json`, the `cpu_s` column), stopped `seconds` after they start if still running.
pub fn measured_senders(run: &RunContext, seconds: Option<f64>, senders: &[String]) -> String {
    let script: String = senders.iter().map(|c| format!("{c} & ")).collect::<String>() + "wait";
    let limit = seconds.map(|s| format!(" --seconds {s}")).unwrap_or_default();
    format!(
        "{} rusage --out {}{limit} -- sh -c {}",
        run.alcc_q(),
        run.quoted(&run.rusage()),
        shell_quote(&script)
    )
}

/// The server of every upload: `alcc serve --receive` for one client, in framed mode (alcc's
/// frames acknowledged, the sender's receiver-side model run) or as a plain HTTP PUT receiver
/// (`--mode kernel --http`).
pub fn upload_receiver(run: &RunContext, mode: RunMode) -> String {
    let kind = match mode {
        RunMode::Kernel => " --mode kernel --http",
        _ => "",
    };
    format!(
        "{} serve --receive --port {}{kind} --count 1 --seconds {}",
        run.alcc_q(),
        run.port,
        run.server_seconds
    )
}

/// `command` run after making `kernel` the namespace's default TCP congestion control, for
/// senders that cannot choose their own (curl, Java's sockets). A namespace other than the
/// first may only choose one of `net.ipv4.tcp_allowed_congestion_control`: the kernel's
/// refusal fails the run with that list named.
pub fn with_default_cc(kernel: &str, command: &str) -> String {
    let k = shell_quote(kernel);
    format!(
        "{{ echo {k} > /proc/sys/net/ipv4/tcp_congestion_control 2>/dev/null || {{ echo \
         \"cannot make {k} this namespace's default TCP congestion control (a namespace may only \
         choose one of net.ipv4.tcp_allowed_congestion_control: $(cat \
         /proc/sys/net/ipv4/tcp_allowed_congestion_control)), which the sender uses\" >&2; exit 3; }}; }}; \
         {command}"
    )
}

/// The kinds of scheme, one variant each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemeKind {
    /// `tcp-KERNELCC`.
    PlainTcp(plain_tcp::PlainTcp),
    /// `alcc-CC[@UNDERLAY]`.
    Alcc(alcc::AlccScheme),
    /// `udp-CC`.
    Udp(udp::UdpScheme),
    /// `ref-PROGRAM`.
    Ref(reference::RefScheme),
    /// `rx-WINDOW@SERVER`.
    Rx(receiver::ReceiverScheme),
    /// `nginx-tcp-KERNELCC`, `nginx-shim-CC[@UNDERLAY]`.
    Nginx(unmodified::NginxScheme),
    /// `java-CC[@KERNELCC]`.
    Java(java::JavaScheme),
    /// `vsftpd-tcp-KERNELCC`, `vsftpd-shim-CC[@UNDERLAY]`.
    Vsftpd(vsftpd::VsftpdScheme),
}

/// Parses the text after a kind's prefix.
type ParseFn = fn(&str) -> Result<SchemeKind, String>;

impl SchemeKind {
    /// Every kind's prefix and parser, in the order they are tried.
    pub const PREFIXES: &'static [(&'static str, ParseFn)] = &[
        ("tcp-", |s| plain_tcp::PlainTcp::parse(s).map(SchemeKind::PlainTcp)),
        ("alcc-", |s| alcc::AlccScheme::parse(s).map(SchemeKind::Alcc)),
        ("udp-", |s| udp::UdpScheme::parse(s).map(SchemeKind::Udp)),
        ("ref-", |s| reference::RefScheme::parse(s).map(SchemeKind::Ref)),
        ("rx-", |s| receiver::ReceiverScheme::parse(s).map(SchemeKind::Rx)),
        ("nginx-", |s| unmodified::NginxScheme::parse(s).map(SchemeKind::Nginx)),
        ("java-", |s| java::JavaScheme::parse(s).map(SchemeKind::Java)),
        ("vsftpd-", |s| vsftpd::VsftpdScheme::parse(s).map(SchemeKind::Vsftpd)),
    ];

    /// The variant's behaviours.
    pub fn kind(&self) -> &dyn Kind {
        match self {
            SchemeKind::PlainTcp(k) => k,
            SchemeKind::Alcc(k) => k,
            SchemeKind::Udp(k) => k,
            SchemeKind::Ref(k) => k,
            SchemeKind::Rx(k) => k,
            SchemeKind::Nginx(k) => k,
            SchemeKind::Java(k) => k,
            SchemeKind::Vsftpd(k) => k,
        }
    }
}

/// Names that were renamed: the old prefix, the new one, and why.
const RENAMED: &[(&str, &str, &str)] =
    &[("native-", "udp-", "it is alcc's own implementation over UDP, not the algorithm's authors' program")];

/// A parsed scheme: its name as written and its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheme {
    /// The name as written in the spec (also the run directory's name).
    pub name: String,
    /// What it is.
    pub kind: SchemeKind,
}

/// Why a scheme name is not one.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("scheme `{name}`: {reason}")]
pub struct SchemeError {
    /// The name as written.
    pub name: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl Scheme {
    /// Parses a scheme name by its prefix (see [`SchemeKind::PREFIXES`]). An unregistered
    /// controller is accepted (its [`Kind::warning`] says so): its runs are recorded as failed.
    pub fn parse(name: &str) -> Result<Scheme, SchemeError> {
        let err = |reason: String| SchemeError { name: name.to_string(), reason };
        for (prefix, parse) in SchemeKind::PREFIXES {
            if let Some(rest) = name.strip_prefix(prefix) {
                let kind = parse(rest).map_err(err)?;
                return Ok(Scheme { name: name.to_string(), kind });
            }
        }
        for (old, new, why) in RENAMED {
            if let Some(rest) = name.strip_prefix(old) {
                return Err(err(format!("`{old}X` is now `{new}X` ({why}): write `{new}{rest}`")));
            }
        }
        let forms: Vec<String> = SchemeKind::PREFIXES.iter().map(|(p, _)| format!("{p}...")).collect();
        Err(err(format!("expected one of {} (docs/experiment-format.md)", forms.join(", "))))
    }

    /// The kind's behaviours.
    pub fn kind(&self) -> &dyn Kind {
        self.kind.kind()
    }
}

/// Letters, digits and `_` (kernel congestion control names).
pub fn is_word(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Controller specs may carry parameters (`copa:delta=0.5,mode=default`).
pub fn is_cc_spec(s: &str) -> bool {
    !s.is_empty()
        && s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || "_:=,.-".contains(c))
}

/// The warning of a controller the registry does not know.
pub fn unknown_cc_warning(cc: &str) -> Option<String> {
    // `py:module:Class` is a controller written in Python, which `alcc serve` imports at start
    // (docs/python.md); a module it cannot import fails the run with Python's traceback.
    if cc.starts_with("py:") {
        return None;
    }
    alcc_cc::registry::entry(cc)
        .is_err()
        .then(|| format!("`{cc}` is not a registered controller; its runs will fail"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns(name: &str) -> (Family, String, String, RunMode) {
        let s = Scheme::parse(name).unwrap();
        let k = s.kind();
        (k.family(), k.cc().to_string(), k.underlay().to_string(), k.mode())
    }

    #[test]
    fn every_kind_is_found_by_its_prefix() {
        assert_eq!(columns("tcp-bbr"), (Family::Tcp, "none".into(), "bbr".into(), RunMode::Kernel));
        assert_eq!(columns("alcc-copa"), (Family::Alcc, "copa".into(), "cubic".into(), RunMode::Kernel));
        assert_eq!(columns("udp-sprout"), (Family::Udp, "sprout".into(), String::new(), RunMode::Udp));
        assert_eq!(columns("ref-sprout"), (Family::Ref, "sprout".into(), String::new(), RunMode::Udp));
        assert_eq!(
            columns("nginx-tcp-cubic"),
            (Family::Unmodified, "none".into(), "cubic".into(), RunMode::Kernel)
        );
        assert_eq!(
            columns("nginx-shim-copa"),
            (Family::Unmodified, "copa".into(), "cubic".into(), RunMode::Kernel)
        );
    }

    #[test]
    fn the_old_native_names_say_what_they_became() {
        let e = Scheme::parse("native-copa:delta=0.1").unwrap_err().to_string();
        assert!(e.contains("`udp-copa:delta=0.1`") && e.contains("not the algorithm's authors'"), "{e}");
    }

    #[test]
    fn malformed_names_are_refused_with_the_forms() {
        for bad in ["copa", "alcc-", "alcc-copa@", "alcc-co pa", "udp-", "alcc-../x", "udp-a/b", "tcp-"] {
            let e = Scheme::parse(bad).unwrap_err();
            assert_eq!(e.name, bad);
        }
        let e = Scheme::parse("copa").unwrap_err().to_string();
        assert!(
            e.contains("tcp-..., alcc-..., udp-..., ref-..., rx-..., nginx-..., java-..., vsftpd-..."),
            "{e}"
        );
    }

    #[test]
    fn unknown_controllers_parse_with_a_warning() {
        for name in ["alcc-nonexistent", "udp-nonexistent"] {
            let s = Scheme::parse(name).unwrap();
            let w = s.kind().warning().unwrap();
            assert!(w.contains("`nonexistent` is not a registered controller"), "{w}");
        }
        assert_eq!(Scheme::parse("alcc-copa").unwrap().kind().warning(), None);
    }

    #[test]
    fn a_missing_program_is_named_with_its_remedy() {
        let need = Need::Program { name: "alcc-no-such-program", install: "scripts/setup.sh" };
        let path = std::ffi::OsStr::new("/usr/bin:/bin");
        assert_eq!(
            need.missing(path).as_deref(),
            Some("`alcc-no-such-program` is not installed (scripts/setup.sh)")
        );
        assert_eq!(Need::Program { name: "sh", install: "" }.missing(path), None);
    }
}
