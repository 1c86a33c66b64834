//! `alcc-CC[@UNDERLAY]`: one of our controllers deciding how fast bytes enter a kernel TCP
//! socket with congestion control UNDERLAY (default `cubic`, as in the paper), or alcc's BPF
//! underlay `alcc` (= `alcc:hold`) or `alcc:follow` (crates/alcc/src/underlay, issue 10). Kernel
//! mode with `curl` as the client, or framed mode with `alcc get --mode framed` when the controller keeps
//! a model at the receiver (Sprout; the registry decides). `alcc-none@UNDERLAY` is the engine
//! with no controller (`alcc serve --cc none`): plain kernel TCP written through the engine, which
//! shows the engine's own cost against `tcp-UNDERLAY`.
//!
//! Several flows of one run (a spec's `[[workloads]]`) are served by one `alcc serve` (or two):
//! the engine couples them or not by its own default, `alcc-CC+coupled` asks for coupling by
//! peer address (`--group auto`) and `alcc-CC+uncoupled` for none (`--group none`), so that a
//! sweep runs both side by side ([`Coupling`]). `alcc-CC+manager` couples the flows of all the
//! run's servers (`servers = 2`) in one group through a host manager the run starts: the first
//! server's command starts `alcc manager --socket DIR/manager.sock` in the background, and
//! every server waits for that socket (up to 3 s) before `alcc serve --group run --manager
//! DIR/manager.sock`; the manager ends with the emulator's server namespace.
//!
//! Uploading (`direction = "up"`), the client is `alcc put` in framed mode, as a phone sends
//! (the receiver acknowledges every frame and runs the sender's receiver-side model), to
//! `alcc serve --receive`; it stops itself at the deadline (`--seconds`) and writes its
//! telemetry and CPU time.

use super::{
    is_cc_spec, is_word, unknown_cc_warning, upload_receiver, Client, Family, Kind, Need, RunContext,
    RunMode, Transfer,
};
use crate::experiment::runner::shell_quote;

/// Whether `cc` is `none`: no controller, the engine alone.
fn is_none(cc: &str) -> bool {
    cc.eq_ignore_ascii_case("none")
}

/// The underlay when the scheme names none (the paper's ALCC ran over CUBIC).
pub const DEFAULT_UNDERLAY: &str = "cubic";

/// Whether the flows of one server share one congestion state (issue 14's flow groups,
/// `alcc serve --group`): a scheme name's suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coupling {
    /// No suffix: no `--group` option, the engine's default.
    EngineDefault,
    /// `+coupled`: `--group auto`, the flows to one peer address form one group.
    Coupled,
    /// `+uncoupled`: `--group none`, every flow on its own.
    Uncoupled,
    /// `+manager`: `--group run --manager DIR/manager.sock`, the flows of every server of the
    /// run in one group on a manager the run starts ([`MANAGER_SOCKET`]).
    Manager,
}

/// The manager's socket of a `+manager` run, in the run directory.
pub const MANAGER_SOCKET: &str = "manager.sock";

/// The group name a `+manager` run's servers share.
pub const MANAGER_GROUP: &str = "run";

/// How long a `+manager` run's servers wait for the manager's socket, in 10 ms steps (3 s).
const MANAGER_WAIT_STEPS: u32 = 300;

/// The longest path a Unix socket address takes (`sun_path` holds 108 bytes with the NUL).
const UNIX_SOCKET_PATH_MAX: usize = 107;

impl Coupling {
    /// Parses a scheme name's suffix after `+`.
    fn parse(suffix: &str) -> Result<Coupling, String> {
        match suffix {
            "coupled" => Ok(Coupling::Coupled),
            "uncoupled" => Ok(Coupling::Uncoupled),
            "manager" => Ok(Coupling::Manager),
            other => Err(format!("`+{other}`: the suffix is `+coupled`, `+uncoupled` or `+manager`")),
        }
    }

    /// The option of `alcc serve` (with its leading space), empty for the default.
    fn serve_option(self, run: &RunContext) -> String {
        match self {
            Coupling::EngineDefault => String::new(),
            Coupling::Coupled => " --group auto".into(),
            Coupling::Uncoupled => " --group none".into(),
            Coupling::Manager => {
                format!(" --group {MANAGER_GROUP} --manager {}", run.quoted(&run.dir.join(MANAGER_SOCKET)))
            }
        }
    }

    /// What runs before `alcc serve` in the server's shell command: for `+manager`, the first
    /// server starts the manager, every server waits for its socket; a socket path too long
    /// for a Unix socket fails the run, naming it.
    fn before_serve(self, run: &RunContext) -> String {
        if self != Coupling::Manager {
            return String::new();
        }
        let socket = run.dir.join(MANAGER_SOCKET);
        let len = socket.as_os_str().len();
        let q = run.quoted(&socket);
        if len > UNIX_SOCKET_PATH_MAX {
            return format!(
                "echo \"+manager: the manager's socket {q} is {len} bytes, longer than a Unix socket \
                 path may be ({UNIX_SOCKET_PATH_MAX}): give the sweep a shorter --out\" >&2; exit 2; "
            );
        }
        let start = match run.server {
            0 => format!("{} manager --socket {q} & ", run.alcc_q()),
            _ => String::new(),
        };
        format!(
            "{start}i=0; while [ ! -S {q} ] && [ $i -lt {MANAGER_WAIT_STEPS} ]; do sleep 0.01; i=$((i+1)); done; "
        )
    }

    /// What the label adds.
    fn label(self) -> &'static str {
        match self {
            Coupling::EngineDefault => "",
            Coupling::Coupled => ", flows coupled (--group auto)",
            Coupling::Uncoupled => ", flows uncoupled (--group none)",
            Coupling::Manager => {
                ", the run's servers' flows coupled through alcc manager (--group run --manager)"
            }
        }
    }
}

/// An alcc controller above kernel TCP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlccScheme {
    /// The controller spec (`copa`, `copa:delta=0.5`).
    pub cc: String,
    /// The kernel congestion control under it.
    pub underlay: String,
    /// Kernel, or framed when the controller needs a receiver.
    pub mode: RunMode,
    /// Whether its flows are coupled (the `+coupled`/`+uncoupled`/`+manager` suffix).
    pub coupling: Coupling,
}

impl AlccScheme {
    /// Parses the text after `alcc-`: `CC` or `CC@UNDERLAY`, then `+coupled`, `+uncoupled` or
    /// `+manager`.
    pub fn parse(rest: &str) -> Result<AlccScheme, String> {
        let (rest, coupling) = match rest.split_once('+') {
            Some((r, suffix)) => (r, Coupling::parse(suffix)?),
            None => (rest, Coupling::EngineDefault),
        };
        let (cc, underlay) = rest.rsplit_once('@').unwrap_or((rest, DEFAULT_UNDERLAY));
        if !is_cc_spec(cc) {
            return Err(format!("`{cc}` is not a controller spec (like copa or copa:delta=0.5)"));
        }
        if underlay.is_empty() {
            return Err("`@` must be followed by the underlay (cubic, reno, bbr)".to_string());
        }
        let bpf = matches!(underlay.parse::<alcc::Underlay>(), Ok(alcc::Underlay::Alcc(_)));
        if !is_word(underlay) && !bpf {
            return Err(format!(
                "`{underlay}` is not a kernel congestion control name (or alcc, alcc:hold, alcc:follow)"
            ));
        }
        let mode = match alcc_cc::registry::entry(cc) {
            Ok(e) if e.needs_receiver() => RunMode::Framed,
            _ => RunMode::Kernel,
        };
        Ok(AlccScheme { cc: cc.to_string(), underlay: underlay.to_string(), mode, coupling })
    }

    /// The label without the coupling.
    fn label_of_controller(&self) -> String {
        if is_none(&self.cc) {
            return format!("kernel {} written through alcc's engine, no controller", self.underlay);
        }
        match self.underlay.parse::<alcc::Underlay>() {
            Ok(alcc::Underlay::Alcc(p)) => format!(
                "alcc's {} above alcc's BPF kernel congestion control, {p} policy ({} mode)",
                self.cc,
                self.mode.as_str()
            ),
            _ => format!("alcc's {} above kernel {} ({} mode)", self.cc, self.underlay, self.mode.as_str()),
        }
    }
}

impl Kind for AlccScheme {
    fn family(&self) -> Family {
        Family::Alcc
    }

    fn cc(&self) -> &str {
        &self.cc
    }

    fn underlay(&self) -> &str {
        &self.underlay
    }

    fn mode(&self) -> RunMode {
        self.mode
    }

    fn label(&self) -> String {
        self.label_of_controller() + self.coupling.label()
    }

    fn server(&self, run: &RunContext) -> String {
        let http = if self.mode == RunMode::Kernel { " --http" } else { "" };
        format!(
            "{}{} serve --port {} --cc {} --underlay {} --mode {} --bytes {}{http}{} --count {} --seconds {} \
             --telemetry {} --rusage {}",
            self.coupling.before_serve(run),
            run.alcc_q(),
            run.port,
            shell_quote(&self.cc),
            shell_quote(&self.underlay),
            self.mode.as_str(),
            run.offer_bytes,
            self.coupling.serve_option(run),
            run.clients,
            run.server_seconds,
            run.quoted(&run.telemetry()),
            run.quoted(&run.rusage())
        )
    }

    fn client(&self, run: &RunContext) -> Client {
        match self.mode {
            RunMode::Kernel => Client::curl(run),
            mode => Client::alcc_get(run, mode),
        }
    }

    fn needs(&self) -> Vec<Need> {
        match self.mode {
            RunMode::Kernel => {
                vec![Need::Program {
                    name: "curl",
                    install: "scripts/setup.sh installs it (apt-get install curl)",
                }]
            }
            _ => Vec::new(),
        }
    }

    /// curl from a fixed port, asking for the flow's weight (kernel mode only: framed mode's
    /// client is `alcc get`).
    fn flow_client(&self, run: &RunContext, local_port: u16, weight: Option<f64>) -> Option<Client> {
        (self.mode == RunMode::Kernel).then(|| Client::curl_flow(run, local_port, weight))
    }

    fn warning(&self) -> Option<String> {
        if is_none(&self.cc) {
            return None;
        }
        unknown_cc_warning(&self.cc)
    }

    fn upload(&self) -> Result<Box<dyn Transfer + '_>, String> {
        if self.coupling != Coupling::EngineDefault {
            return Err("`+coupled`/`+uncoupled`/`+manager` choose the download server's flow groups".into());
        }
        Ok(Box::new(AlccUpload(self)))
    }
}

/// `alcc-CC[@UNDERLAY]` uploading: `alcc put` in framed mode.
struct AlccUpload<'a>(&'a AlccScheme);

impl Transfer for AlccUpload<'_> {
    fn mode(&self) -> RunMode {
        RunMode::Framed
    }

    fn label(&self) -> String {
        let s = self.0;
        if is_none(&s.cc) {
            return format!(
                "kernel {} upload written through alcc put, no controller (framed mode)",
                s.underlay
            );
        }
        format!("alcc put: alcc's {} above kernel {} (framed mode)", s.cc, s.underlay)
    }

    fn server(&self, run: &RunContext) -> String {
        upload_receiver(run, RunMode::Framed)
    }

    fn client(&self, run: &RunContext) -> Client {
        let s = self.0;
        Client {
            command: format!(
                "{} put \"$ALCC_SERVER:{}\" --cc {} --underlay {} --mode framed --bytes {} --seconds {} \
                 --telemetry {} --rusage {}",
                run.alcc_q(),
                run.port,
                shell_quote(&s.cc),
                shell_quote(&s.underlay),
                run.offer_bytes,
                run.duration_s,
                run.quoted(&run.telemetry()),
                run.quoted(&run.rusage())
            ),
            // `--seconds` ends the upload with success.
            deadline_status: 0,
        }
    }

    fn needs(&self) -> Vec<Need> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn run() -> RunContext<'static> {
        RunContext {
            alcc: Path::new("/bin/alcc"),
            dir: Path::new("/d"),
            duration_s: 20.0,
            port: 9000,
            offer_bytes: 100,
            server_seconds: 22.0,
            clients: 1,
            server: 0,
        }
    }

    #[test]
    fn the_controller_decides_the_mode() {
        let s = AlccScheme::parse("copa@reno").unwrap();
        assert_eq!((s.cc.as_str(), s.underlay.as_str(), s.mode), ("copa", "reno", RunMode::Kernel));
        let s = AlccScheme::parse("copa:delta=0.1").unwrap();
        assert_eq!((s.cc.as_str(), s.underlay.as_str()), ("copa:delta=0.1", "cubic"));
        // Sprout keeps its model at the receiver: framed mode.
        let s = AlccScheme::parse("sprout@bbr").unwrap();
        assert_eq!((s.mode, s.underlay.as_str()), (RunMode::Framed, "bbr"));
        // alcc's BPF underlay, with or without a policy.
        let s = AlccScheme::parse("verus@alcc:follow").unwrap();
        assert_eq!((s.cc.as_str(), s.underlay.as_str()), ("verus", "alcc:follow"));
        assert!(s.label().contains("BPF kernel congestion control, follow policy"), "{}", s.label());
        assert_eq!(AlccScheme::parse("copa@alcc").unwrap().underlay, "alcc");
        assert!(AlccScheme::parse("copa@alcc:loose").is_err());
        assert!(AlccScheme::parse("copa@cu:bic").is_err());
        // An unknown controller: kernel mode, and a warning.
        let s = AlccScheme::parse("nonexistent").unwrap();
        assert_eq!(s.mode, RunMode::Kernel);
        assert!(s.warning().is_some());
        // No controller: the engine alone, no warning.
        let s = AlccScheme::parse("none@reno").unwrap();
        assert_eq!((s.mode, s.warning()), (RunMode::Kernel, None));
        assert_eq!(s.label(), "kernel reno written through alcc's engine, no controller");
    }

    #[test]
    fn the_suffix_chooses_the_flow_groups() {
        let s = AlccScheme::parse("copa@reno+uncoupled").unwrap();
        assert_eq!((s.cc.as_str(), s.underlay.as_str(), s.coupling), ("copa", "reno", Coupling::Uncoupled));
        assert!(s.server(&run()).contains("--http --group none --count 1"), "{}", s.server(&run()));
        assert_eq!(s.label(), "alcc's copa above kernel reno (kernel mode), flows uncoupled (--group none)");
        let s = AlccScheme::parse("copa+coupled").unwrap();
        assert_eq!((s.underlay.as_str(), s.coupling), ("cubic", Coupling::Coupled));
        assert!(s.server(&run()).contains("--http --group auto --count 1"));
        assert!(s.upload().is_err());
        // No suffix: the engine's default, no option.
        assert!(!AlccScheme::parse("copa").unwrap().server(&run()).contains("--group"));
        assert!(AlccScheme::parse("copa+loosely").unwrap_err().contains("`+manager`"));
        // Several flows: curl from a fixed port with the weight; framed mode cannot.
        let c = s.flow_client(&run(), 40001, Some(2.0)).unwrap();
        assert_eq!(
            c.command,
            "curl -sS -o /dev/null --local-port 40001 --max-time 20 \"http://$ALCC_SERVER:9000/?weight=2\""
        );
        assert!(AlccScheme::parse("sprout").unwrap().flow_client(&run(), 1, None).is_none());
        assert!(s.runs_several_flows());
    }

    #[test]
    fn the_manager_suffix_couples_the_runs_servers_through_a_manager_it_starts() {
        let s = AlccScheme::parse("copa+manager").unwrap();
        assert_eq!(s.coupling, Coupling::Manager);
        let wait = "i=0; while [ ! -S /d/manager.sock ] && [ $i -lt 300 ]; do sleep 0.01; i=$((i+1)); done; ";
        let serve =
            "/bin/alcc serve --port 9000 --cc copa --underlay cubic --mode kernel --bytes 100 --http \
                     --group run --manager /d/manager.sock --count 2 --seconds 22";
        let first = s.server(&RunContext { clients: 2, ..run() });
        assert!(
            first.starts_with(&format!("/bin/alcc manager --socket /d/manager.sock & {wait}{serve}")),
            "{first}"
        );
        let second = s.server(&RunContext { clients: 2, server: 1, port: 9001, ..run() });
        assert!(second.starts_with(&format!("{wait}/bin/alcc serve --port 9001")), "{second}");
        assert!(second.contains("--group run --manager /d/manager.sock --count 2"), "{second}");
        assert!(s.label().ends_with("coupled through alcc manager (--group run --manager)"), "{}", s.label());
        assert!(s.upload().is_err());
        assert!(s.runs_several_flows());
        // A run directory whose socket path a Unix socket cannot take fails the run, saying so.
        let deep = Path::new("/d").join("x".repeat(120));
        let failed = s.server(&RunContext { dir: &deep, ..run() });
        assert!(failed.starts_with("echo \"+manager: the manager's socket /d/xxx"), "{failed}");
        assert!(failed.contains("give the sweep a shorter --out\" >&2; exit 2; "), "{failed}");
    }

    #[test]
    fn kernel_mode_serves_http_to_curl_framed_mode_to_alcc_get() {
        let k = AlccScheme::parse("copa").unwrap();
        assert_eq!(
            k.server(&run()),
            "/bin/alcc serve --port 9000 --cc copa --underlay cubic --mode kernel --bytes 100 --http \
             --count 1 --seconds 22 --telemetry /d/telemetry.jsonl --rusage /d/rusage.json"
        );
        assert!(k.client(&run()).command.starts_with("curl "));
        let k = AlccScheme::parse("sprout").unwrap();
        let server = k.server(&run());
        assert!(
            server.contains("--cc sprout --underlay cubic --mode framed --bytes 100 --count 1"),
            "{server}"
        );
        let c = k.client(&run());
        assert_eq!(c.command, "timeout 20 /bin/alcc get \"$ALCC_SERVER:9000\" --mode framed");
        assert_eq!(c.deadline_status, 124);
        assert!(k.needs().is_empty());
        assert_eq!(k.label(), "alcc's sprout above kernel cubic (framed mode)");
    }

    #[test]
    fn uploads_with_alcc_put_framed_to_the_receiver() {
        let k = AlccScheme::parse("mdi@reno").unwrap();
        let up = k.upload().unwrap();
        assert_eq!(up.mode(), RunMode::Framed);
        assert_eq!(up.server(&run()), "/bin/alcc serve --receive --port 9000 --count 1 --seconds 22");
        let c = up.client(&run());
        assert_eq!(
            c.command,
            "/bin/alcc put \"$ALCC_SERVER:9000\" --cc mdi --underlay reno --mode framed --bytes 100 --seconds 20 \
             --telemetry /d/telemetry.jsonl --rusage /d/rusage.json"
        );
        assert_eq!(c.deadline_status, 0);
        assert_eq!(up.label(), "alcc put: alcc's mdi above kernel reno (framed mode)");
        assert!(up.needs().is_empty());
    }
}
