//! `alcc-CC[@UNDERLAY]`: one of our controllers deciding how fast bytes enter a kernel TCP
//! socket with congestion control UNDERLAY (default `cubic`, as in the paper), or alcc's BPF
//! underlay `alcc` (= `alcc:hold`) or `alcc:follow` (crates/alcc/src/underlay, issue 10). Kernel
//! mode with `curl` as the client, or framed mode with `alcc get --mode framed` when the controller keeps
//! a model at the receiver (Sprout; the registry decides). `alcc-none@UNDERLAY` is the engine
//! with no controller (`alcc serve --cc none`): plain kernel TCP written through the engine, which
//! shows the engine's own cost against `tcp-UNDERLAY`.
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

/// An alcc controller above kernel TCP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlccScheme {
    /// The controller spec (`copa`, `copa:delta=0.5`).
    pub cc: String,
    /// The kernel congestion control under it.
    pub underlay: String,
    /// Kernel, or framed when the controller needs a receiver.
    pub mode: RunMode,
}

impl AlccScheme {
    /// Parses the text after `alcc-`: `CC` or `CC@UNDERLAY`.
    pub fn parse(rest: &str) -> Result<AlccScheme, String> {
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
        Ok(AlccScheme { cc: cc.to_string(), underlay: underlay.to_string(), mode })
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

    fn server(&self, run: &RunContext) -> String {
        let http = if self.mode == RunMode::Kernel { " --http" } else { "" };
        format!(
            "{} serve --port {} --cc {} --underlay {} --mode {} --bytes {}{http} --count 1 --seconds {} \
             --telemetry {} --rusage {}",
            run.alcc_q(),
            run.port,
            shell_quote(&self.cc),
            shell_quote(&self.underlay),
            self.mode.as_str(),
            run.offer_bytes,
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

    fn warning(&self) -> Option<String> {
        if is_none(&self.cc) {
            return None;
        }
        unknown_cc_warning(&self.cc)
    }

    fn upload(&self) -> Result<Box<dyn Transfer + '_>, String> {
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
