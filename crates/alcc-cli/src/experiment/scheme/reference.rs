//! `ref-verus[:r=N]`, `ref-copa`, `ref-sprout`: the authors' own programs — Verus, Copa
//! (genericCC's "markovian" sender) and Sprout (`sproutbt2`) — built from their source tarballs
//! by `scripts/refs.sh` (`make refs`) and run as black boxes the way the ALCC paper ran them:
//! the sender on the server side, the measured direction the downlink, each program in its own
//! start order (`../shared/refs/BUILD.md`):
//!
//! | scheme | server side (sender) | client side (receiver) | who contacts whom |
//! | --- | --- | --- | --- |
//! | `ref-verus[:r=N]` | `verus_server -name verus -p PORT -t D` | `verus_client SERVER -p PORT` | the receiver |
//! | `ref-copa` | `genericcc_sender serverip=CLIENT serverport=PORT ... onduration=D`, 0.5 s after the receiver | `genericcc_receiver PORT` | the sender |
//! | `ref-sprout` | `sproutbt2 PORT` | `sproutbt2 SERVER PORT` | the receiver (then both ends send bulk data) |
//!
//! The receiver starts when every client does (0.5 s after the link is up) and data flows for
//! the run's duration, as with `alcc get`. None of the programs stops cleanly in every case: the
//! sender runs under `alcc rusage`, which stops it with SIGKILL at the end and writes its CPU time
//! (the `cpu_s` column, like `alcc serve --rusage`); the client script stops the receiver with
//! SIGKILL (exit status 137 counts as "ran to the deadline"). Copa's and Verus's senders stop
//! themselves about then. Both sides run in the run directory, where Verus writes its logs.
//! Packets on the wire: Copa 1468 bytes, Verus 1478, Sprout up to 1500.
//!
//! Several flows of `ref-copa` (a workload's `flows`): one sender per flow, started together
//! and measured as one ([`super::measured_senders`]), flow `i`'s sending from and to port
//! [`super::flow_port`]`(i)` (`sourceport=`, `serverport=`), where its own receiver listens: N
//! independent Copa flows over one bottleneck, as the authors ran several senders.

use std::path::{Path, PathBuf};

use super::{flow_port, measured_senders, Client, Family, Kind, Need, RunContext, RunMode, Transfer};
use crate::experiment::runner::CLIENT_START_DELAY_S;

/// Copa's configuration in the ALCC paper's runs (BUILD.md): automatic mode switching with a
/// default delta of 0.5, slow start on, one "on" period of the whole duration.
const COPA_ARGS: &str =
    "offduration=0 cctype=markovian delta_conf=do_ss:auto:0.5 traffic_params=deterministic,num_cycles=1";

/// How long after its receiver the Copa sender starts (BUILD.md: "about a second"; its min RTT
/// comes from the handshake only when the first try is answered).
const COPA_SENDER_AFTER_S: f64 = 0.5;

/// A sender that stops itself is stopped this long after it should have.
const STOP_GRACE_S: f64 = 1.0;

/// The ratio R that `verus_server` was compiled with by its authors (`VERUS_R` in verus.hpp).
pub const VERUS_DEFAULT_R: u32 = 6;

/// Where `make refs` puts the programs: `$ALCC_REFS_DIR/bin`, by default `target/refs/bin` of the
/// checkout whose `target/release/alcc` (or `target/debug/alcc`) is `alcc`.
pub fn refs_bin(alcc: &Path) -> PathBuf {
    match std::env::var_os("ALCC_REFS_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d).join("bin"),
        None => {
            let target = alcc.parent().and_then(Path::parent).unwrap_or(Path::new("target"));
            target.join("refs").join("bin")
        }
    }
}

/// One of the authors' programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// Verus with its compile-time ratio R (a sender binary per R).
    Verus {
        /// The ratio threshold of DmaxLast / Dmin.
        r: u32,
    },
    /// Copa in genericCC.
    Copa,
    /// Sprout's bulk-transfer example.
    Sprout,
}

impl Program {
    /// The sender's file in the build folder.
    fn sender(self) -> String {
        match self {
            Program::Verus { r } if r == VERUS_DEFAULT_R => "verus_server".to_string(),
            Program::Verus { r } => format!("verus_server_r{r}"),
            Program::Copa => "genericcc_sender".to_string(),
            Program::Sprout => "sproutbt2".to_string(),
        }
    }

    /// Every file the program needs in the build folder.
    pub fn files(self) -> Vec<String> {
        let other = match self {
            Program::Verus { .. } => "verus_client",
            Program::Copa => "genericcc_receiver",
            Program::Sprout => "sprout.model",
        };
        vec![self.sender(), other.to_string()]
    }
}

/// The authors' program as a scheme.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefScheme {
    /// Which program.
    pub program: Program,
    /// Our controller spec for the same algorithm and parameters (`udp-CC` is its counterpart).
    cc: String,
}

impl RefScheme {
    /// Parses the text after `ref-`: `verus`, `verus:r=N` (N from 1 to 100), `copa` or `sprout`.
    pub fn parse(rest: &str) -> Result<RefScheme, String> {
        let program = match rest.split_once(':') {
            None => match rest {
                "verus" => Program::Verus { r: VERUS_DEFAULT_R },
                "copa" => Program::Copa,
                "sprout" => Program::Sprout,
                other => {
                    return Err(format!(
                        "`{other}` is not one of the authors' programs: ref-verus[:r=N], ref-copa, ref-sprout"
                    ))
                }
            },
            Some(("verus", params)) => {
                let r = params
                    .strip_prefix("r=")
                    .and_then(|v| v.parse::<u32>().ok())
                    .filter(|r| (1..=100).contains(r))
                    .ok_or_else(|| {
                        format!("`{rest}`: Verus's only parameter is r, a whole number from 1 to 100 (ref-verus:r=4)")
                    })?;
                Program::Verus { r }
            }
            Some((name, _)) => {
                return Err(format!(
                    "`{name}` takes no parameters here (only ref-verus:r=N): the authors' programs run as \
                     BUILD.md starts them"
                ))
            }
        };
        // Written as one writes ours, so that ref-verus:r=2 pairs with udp-verus:r=2 and
        // ref-verus with udp-verus.
        let cc = match program {
            Program::Verus { r } if r == VERUS_DEFAULT_R => "verus".to_string(),
            Program::Verus { r } => format!("verus:r={r}"),
            Program::Copa => "copa".to_string(),
            Program::Sprout => "sprout".to_string(),
        };
        Ok(RefScheme { program, cc })
    }

    /// The receiver, listening on (Verus, Sprout: contacting the server at) `port`, stopped
    /// with SIGKILL at the end of its lifetime.
    fn receiver(&self, run: &RunContext, port: u16) -> Client {
        let dir_q = run.quoted(&absolute(run.dir));
        let bin = refs_bin(run.alcc);
        // The environment assignments go before `exec`, which would take them for the program.
        let (env, receiver) = match self.program {
            Program::Verus { .. } => (
                String::new(),
                format!("{} \"$ALCC_SERVER\" -p {}", run.quoted(&bin.join("verus_client")), port),
            ),
            Program::Copa => {
                (String::new(), format!("{} {}", run.quoted(&bin.join("genericcc_receiver")), port))
            }
            Program::Sprout => (
                format!("SPROUT_MODEL_IN={} ", run.quoted(&bin.join("sprout.model"))),
                format!("{} \"$ALCC_SERVER\" {}", run.quoted(&bin.join("sproutbt2")), port),
            ),
        };
        Client {
            command: format!(
                "(cd {dir_q} && {env}exec {receiver}) & p=$!; sleep {}; kill -9 $p 2>/dev/null; wait $p",
                self.receiver_lifetime(run.duration_s)
            ),
            // 128 + SIGKILL: stopped at the deadline.
            deadline_status: 137,
        }
    }

    /// How long the receiver lives after it starts, seconds.
    fn receiver_lifetime(&self, duration_s: f64) -> f64 {
        match self.program {
            // It starts before the sender, which then runs for the whole duration.
            Program::Copa => duration_s + COPA_SENDER_AFTER_S,
            _ => duration_s,
        }
    }
}

/// The run directory as an absolute path: the programs work inside it.
fn absolute(dir: &Path) -> PathBuf {
    std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf())
}

impl Kind for RefScheme {
    fn family(&self) -> Family {
        Family::Ref
    }

    fn cc(&self) -> &str {
        &self.cc
    }

    fn underlay(&self) -> &str {
        ""
    }

    fn mode(&self) -> RunMode {
        RunMode::Udp
    }

    fn label(&self) -> String {
        match self.program {
            Program::Verus { r } => format!("the authors' Verus (R = {r}) over UDP, run as a black box"),
            Program::Copa => {
                "the authors' Copa (genericCC, markovian, auto delta 0.5) over UDP, run as a black box"
                    .to_string()
            }
            Program::Sprout => {
                "the authors' Sprout (sproutbt2, bulk data both ways) over UDP, run as a black box"
                    .to_string()
            }
        }
    }

    fn sender_delay_s(&self) -> f64 {
        match self.program {
            Program::Copa => COPA_SENDER_AFTER_S,
            _ => 0.0,
        }
    }

    fn server(&self, run: &RunContext) -> String {
        let dir = absolute(run.dir);
        let dir_q = run.quoted(&dir);
        let bin = refs_bin(run.alcc);
        let sender = run.quoted(&bin.join(self.program.sender()));
        let d = run.duration_s;
        // The sender, measured, and stopped `seconds` after it starts if it is still running.
        let measured = |seconds: f64, args: String| {
            format!(
                "exec {} rusage --out {} --seconds {seconds} -- {sender} {args}",
                run.alcc_q(),
                run.quoted(&dir.join("rusage.json"))
            )
        };
        // The Copa sender's arguments, with the receiver's port (and the sender's own) `ports`.
        let copa_args = |ports: String| {
            format!(
                "serverip=\"$ALCC_CLIENT\" {ports} onduration={} {COPA_ARGS}",
                (d * 1000.0).round() as u64
            )
        };
        match self.program {
            // Listens; the receiver's first contact starts its -t seconds.
            Program::Verus { .. } => format!(
                "cd {dir_q} && {}",
                measured(
                    CLIENT_START_DELAY_S + d + STOP_GRACE_S,
                    format!("-name verus -p {} -t {d}", run.port)
                )
            ),
            // One sender per flow, each to its own receiver.
            Program::Copa if run.clients > 1 => {
                let senders: Vec<String> = (0..run.clients)
                    .map(|i| {
                        let p = flow_port(i);
                        format!("{sender} {}", copa_args(format!("serverport={p} sourceport={p}")))
                    })
                    .collect();
                format!(
                    "cd {dir_q} && sleep {} && exec {}",
                    CLIENT_START_DELAY_S + COPA_SENDER_AFTER_S,
                    measured_senders(run, Some(d + STOP_GRACE_S), &senders)
                )
            }
            // Connects to the receiver, which must be listening.
            Program::Copa => format!(
                "cd {dir_q} && sleep {} && {}",
                CLIENT_START_DELAY_S + COPA_SENDER_AFTER_S,
                measured(d + STOP_GRACE_S, copa_args(format!("serverport={}", run.port)))
            ),
            // Waits for the client; sends until stopped.
            Program::Sprout => format!(
                "cd {dir_q} && SPROUT_MODEL_IN={} {}",
                run.quoted(&bin.join("sprout.model")),
                measured(CLIENT_START_DELAY_S + d, run.port.to_string())
            ),
        }
    }

    fn client(&self, run: &RunContext) -> Client {
        self.receiver(run, run.port)
    }

    /// The receiver of flow `port - 40000` of several: Copa's only (its sender per flow sends
    /// to the flow's port); the other programs run one flow.
    fn flow_client(&self, run: &RunContext, port: u16, _weight: Option<f64>) -> Option<Client> {
        (self.program == Program::Copa).then(|| self.receiver(run, port))
    }

    fn sender_per_flow(&self) -> bool {
        self.program == Program::Copa
    }

    fn needs(&self) -> Vec<Need> {
        // The sweep runs this same binary.
        let Ok(alcc) = std::env::current_exe() else { return Vec::new() };
        let bin = refs_bin(&alcc);
        let build = match self.program {
            Program::Verus { r } if r != VERUS_DEFAULT_R => format!("make refs VERUS_RS=\"{r}\""),
            _ => "make refs".to_string(),
        };
        self.program
            .files()
            .into_iter()
            .map(|f| Need::File {
                path: bin.join(f),
                remedy: format!(
                    "the authors' program is not built: run `{build}`, or set ALCC_REFS_DIR to the folder \
                     scripts/refs.sh built into"
                ),
            })
            .collect()
    }

    fn upload(&self) -> Result<Box<dyn Transfer + '_>, String> {
        Err("the authors' programs are run as the paper ran them, sending from the server side".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::runner::shell_quote;

    fn q(s: &Path) -> String {
        shell_quote(&s.display().to_string())
    }

    fn run() -> RunContext<'static> {
        RunContext {
            alcc: Path::new("/x/target/release/alcc"),
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
    fn names_parameters_and_columns() {
        let v = RefScheme::parse("verus:r=2").unwrap();
        assert_eq!((v.program, v.cc()), (Program::Verus { r: 2 }, "verus:r=2"));
        assert_eq!(RefScheme::parse("verus").unwrap().cc(), "verus");
        let c = RefScheme::parse("copa").unwrap();
        assert_eq!(
            (c.family(), c.underlay(), c.mode(), c.family().as_str()),
            (Family::Ref, "", RunMode::Udp, "ref")
        );
        assert!(c.label().contains("authors' Copa"));
        for bad in ["verus:r=0", "verus:r=x", "verus:delta=1", "verus:r=2.5", "cubic", "copa:delta=0.1", ""] {
            assert!(RefScheme::parse(bad).is_err(), "{bad}");
        }
        let e = RefScheme::parse("cubic").unwrap_err();
        assert!(e.contains("ref-verus[:r=N], ref-copa, ref-sprout"), "{e}");
    }

    #[test]
    fn each_program_starts_in_its_own_order() {
        let run = run();
        let bin = q(&refs_bin(run.alcc));
        let c = RefScheme::parse("copa").unwrap();
        assert_eq!(
            c.server(&run),
            format!(
                "cd /d && sleep 1 && exec /x/target/release/alcc rusage --out /d/rusage.json --seconds 21 -- \
                 {bin}/genericcc_sender serverip=\"$ALCC_CLIENT\" serverport=9000 onduration=20000 offduration=0 \
                 cctype=markovian delta_conf=do_ss:auto:0.5 traffic_params=deterministic,num_cycles=1"
            )
        );
        assert_eq!(
            c.client(&run),
            Client {
                command: format!(
                    "(cd /d && exec {bin}/genericcc_receiver 9000) & p=$!; sleep 20.5; kill -9 $p 2>/dev/null; wait $p"
                ),
                deadline_status: 137
            }
        );
        let v = RefScheme::parse("verus:r=2").unwrap();
        let s = v.server(&run);
        assert!(
            s.contains(&format!("--seconds 21.5 -- {bin}/verus_server_r2 -name verus -p 9000 -t 20")),
            "{s}"
        );
        assert!(v.client(&run).command.contains("verus_client \"$ALCC_SERVER\" -p 9000) & p=$!; sleep 20;"));
        assert!(RefScheme::parse("verus")
            .unwrap()
            .server(&run)
            .contains(&format!("{bin}/verus_server -name")));
        let p = RefScheme::parse("sprout").unwrap();
        let s = p.server(&run);
        assert!(s.starts_with(&format!("cd /d && SPROUT_MODEL_IN={bin}/sprout.model exec")), "{s}");
        assert!(s.ends_with(&format!("--seconds 20.5 -- {bin}/sproutbt2 9000")), "{s}");
        let c = p.client(&run).command;
        assert!(
            c.starts_with(&format!("(cd /d && SPROUT_MODEL_IN={bin}/sprout.model exec {bin}/sproutbt2")),
            "{c}"
        );
    }

    #[test]
    fn several_copa_flows_get_a_sender_and_a_receiver_each() {
        let c = RefScheme::parse("copa").unwrap();
        let one = run();
        let run = RunContext { clients: 2, ..one };
        let bin = q(&refs_bin(run.alcc));
        let s = c.server(&run);
        let sender = |p: u16| {
            format!(
                "{bin}/genericcc_sender serverip=\"$ALCC_CLIENT\" serverport={p} sourceport={p} onduration=20000 \
                 {COPA_ARGS} & "
            )
        };
        let script = format!("{}{}wait", sender(40000), sender(40001));
        assert_eq!(
            s,
            format!(
                "cd /d && sleep 1 && exec /x/target/release/alcc rusage --out /d/rusage.json --seconds 21 -- sh -c {}",
                shell_quote(&script)
            )
        );
        assert!(c.sender_per_flow() && c.runs_several_flows());
        let r = c.flow_client(&run, 40001, None).unwrap();
        assert!(
            r.command.starts_with(&format!("(cd /d && exec {bin}/genericcc_receiver 40001) & p=$!;")),
            "{}",
            r.command
        );
        assert_eq!(r.deadline_status, 137);
        // One flow: as before, on the run's port.
        assert!(c.client(&one).command.contains("genericcc_receiver 9000)"));
        // Verus and Sprout run one flow.
        for other in ["verus", "sprout"] {
            let o = RefScheme::parse(other).unwrap();
            assert!(!o.sender_per_flow() && !o.runs_several_flows(), "{other}");
        }
    }

    #[test]
    fn relative_run_directories_become_absolute() {
        let run = RunContext { dir: Path::new("out/runs/t/ref-copa/run-0"), ..run() };
        let cwd = std::env::current_dir().unwrap();
        let abs = q(&cwd.join("out/runs/t/ref-copa/run-0"));
        assert!(RefScheme::parse("copa").unwrap().server(&run).starts_with(&format!("cd {abs} && ")));
        assert!(RefScheme::parse("copa").unwrap().server(&run).contains(&format!("--out {abs}/rusage.json")));
    }

    #[test]
    fn a_missing_build_names_the_file_and_the_remedy() {
        let v = RefScheme::parse("verus:r=3").unwrap();
        let files: Vec<PathBuf> = v
            .needs()
            .iter()
            .map(|n| match n {
                Need::File { path, .. } => path.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(files[0].ends_with("verus_server_r3") && files[1].ends_with("verus_client"), "{files:?}");
        let path = std::ffi::OsStr::new("/usr/bin");
        let why =
            Need::File { path: "/nonexistent/verus_server_r3".into(), remedy: "run `make refs`".into() }
                .missing(path)
                .unwrap();
        assert_eq!(why, "/nonexistent/verus_server_r3 is missing (run `make refs`)");
    }

    #[test]
    fn the_build_folder_is_beside_the_binary() {
        if std::env::var_os("ALCC_REFS_DIR").filter(|d| !d.is_empty()).is_none() {
            assert_eq!(
                refs_bin(Path::new("/src/target/release/alcc")),
                PathBuf::from("/src/target/refs/bin")
            );
        }
    }
}
