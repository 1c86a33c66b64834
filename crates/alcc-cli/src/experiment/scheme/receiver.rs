//! `rx-WINDOW@SERVER`: the receiving side governs the window (issue 15): the client is
//! `alcc get --http` with its advertised window set by WINDOW, the server is any `tcp-X` or
//! `alcc-X` scheme's. WINDOW is `drwa[:lambda=L,alpha=A,floor=B,rcvbuf=B]` (DRWA) or
//! `static:rcvbuf=BYTES` (the phone vendors' small fixed buffer). Examples: `rx-drwa@tcp-cubic`
//! (DRWA at the client against a plain kernel CUBIC server), `rx-static:rcvbuf=1048576@tcp-cubic`
//! (the static cap), `rx-drwa@alcc-copa` (DRWA at the client and alcc at the server). The
//! congestion control, underlay and mode columns are the server's.
//!
//! `rx-WINDOW-curl@SERVER` (`rx-drwa-curl@tcp-cubic`): the client is an unmodified `curl`
//! under the preload shim (`LD_PRELOAD=libalcc_preload.so ALCC_RECEIVER=WINDOW`, the library
//! beside the alcc binary), the same window through `connect` and `recv` interposition.

use std::path::PathBuf;

use super::{Client, Family, Kind, Need, RunContext, RunMode, SchemeKind, Transfer};
use crate::experiment::runner::shell_quote;

/// The program that receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Receiver {
    /// `alcc get --http --drwa=WINDOW` (or `--rcvbuf`).
    AlccGet,
    /// An unmodified `curl` under the preload shim with `ALCC_RECEIVER=WINDOW`.
    CurlUnderShim,
}

/// A receive-window client against a server scheme.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiverScheme {
    /// The receive window (`alcc::ReceiveWindow` syntax).
    pub window: String,
    /// The program that receives.
    pub receiver: Receiver,
    /// The server's scheme (`tcp-X` or kernel-mode `alcc-X`).
    pub server: Box<SchemeKind>,
}

/// The preload shim beside the running alcc binary (`make build` puts both in
/// target/release); `None` when the binary's own path is unknown.
fn preload_library() -> Option<PathBuf> {
    Some(std::env::current_exe().ok()?.parent()?.join("libalcc_preload.so"))
}

impl ReceiverScheme {
    /// Parses the text after `rx-`.
    pub fn parse(s: &str) -> Result<ReceiverScheme, String> {
        let (window, server) = s
            .split_once('@')
            .ok_or_else(|| format!("write rx-WINDOW@SERVER (rx-drwa@tcp-cubic), not rx-{s}"))?;
        let (window, receiver) = match window.strip_suffix("-curl") {
            Some(w) => (w, Receiver::CurlUnderShim),
            None => (window, Receiver::AlccGet),
        };
        let parsed: alcc::ReceiveWindow =
            window.parse().map_err(|e| format!("receive window `{window}`: {e}"))?;
        if matches!(parsed, alcc::ReceiveWindow::Kernel) {
            return Err("rx-kernel@X is the server scheme X itself with a plain client: write X".into());
        }
        let server_kind = if let Some(rest) = server.strip_prefix("tcp-") {
            SchemeKind::PlainTcp(super::plain_tcp::PlainTcp::parse(rest)?)
        } else if let Some(rest) = server.strip_prefix("alcc-") {
            SchemeKind::Alcc(super::alcc::AlccScheme::parse(rest)?)
        } else {
            return Err(format!(
                "the server of rx-WINDOW@SERVER is a tcp-X or alcc-X scheme, not `{server}`"
            ));
        };
        if server_kind.kind().mode() != RunMode::Kernel {
            return Err(format!(
                "`{server}` does not run in kernel mode: a plain TCP client cannot fetch from it"
            ));
        }
        Ok(ReceiverScheme { window: window.to_string(), receiver, server: Box::new(server_kind) })
    }

    /// `alcc get`'s flag for the window.
    fn flag(&self) -> String {
        match self.window.strip_prefix("static:rcvbuf=") {
            Some(bytes) => format!("--rcvbuf {}", shell_quote(bytes)),
            None => format!("--drwa={}", shell_quote(&self.window)),
        }
    }
}

impl Kind for ReceiverScheme {
    fn family(&self) -> Family {
        Family::Rx
    }

    fn cc(&self) -> &str {
        self.server.kind().cc()
    }

    fn underlay(&self) -> &str {
        self.server.kind().underlay()
    }

    fn mode(&self) -> RunMode {
        RunMode::Kernel
    }

    fn label(&self) -> String {
        let client = match self.receiver {
            Receiver::AlccGet => "the client",
            Receiver::CurlUnderShim => "an unmodified curl (LD_PRELOAD)",
        };
        format!("receive window {} at {client}; server: {}", self.window, self.server.kind().label())
    }

    fn server(&self, run: &RunContext) -> String {
        self.server.kind().server(run)
    }

    fn client(&self, run: &RunContext) -> Client {
        match self.receiver {
            Receiver::AlccGet => Client {
                command: format!(
                    "timeout {} {} get \"$ALCC_SERVER:{}\" --http {}",
                    run.duration_s,
                    run.alcc_q(),
                    run.port,
                    self.flag()
                ),
                deadline_status: 124,
            },
            Receiver::CurlUnderShim => {
                let lib = run.alcc.with_file_name("libalcc_preload.so");
                let curl = Client::curl(run);
                Client {
                    command: format!(
                        "env LD_PRELOAD={} ALCC_RECEIVER={} {}",
                        run.quoted(&lib),
                        shell_quote(&self.window),
                        curl.command
                    ),
                    ..curl
                }
            }
        }
    }

    fn needs(&self) -> Vec<Need> {
        let server = self.server.kind().needs();
        match self.receiver {
            // The client is alcc itself; the server's needs are the server scheme's minus curl.
            Receiver::AlccGet => {
                server.into_iter().filter(|n| !matches!(n, Need::Program { name: "curl", .. })).collect()
            }
            Receiver::CurlUnderShim => {
                let mut needs = server;
                if !needs.iter().any(|n| matches!(n, Need::Program { name: "curl", .. })) {
                    needs.push(Need::Program {
                        name: "curl",
                        install: "scripts/setup.sh installs it (apt-get install curl)",
                    });
                }
                needs.extend(preload_library().map(|path| Need::File {
                    path,
                    remedy: "the preload shim is not built: `make build` (or cargo build --release -p alcc-preload)"
                        .into(),
                }));
                needs
            }
        }
    }

    fn warning(&self) -> Option<String> {
        self.server.kind().warning()
    }

    fn upload(&self) -> Result<Box<dyn Transfer + '_>, String> {
        Err("rx-WINDOW governs a downloading client's receive window: it has no upload".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn run() -> RunContext<'static> {
        RunContext {
            alcc: Path::new("/bin/alcc"),
            dir: Path::new("/o/d"),
            duration_s: 20.0,
            port: 9000,
            offer_bytes: 100,
            server_seconds: 22.0,
            clients: 1,
            server: 0,
        }
    }

    #[test]
    fn drwa_against_plain_cubic_fetches_with_alcc_get() {
        let k = ReceiverScheme::parse("drwa@tcp-cubic").unwrap();
        assert_eq!((k.cc(), k.underlay(), k.family()), ("none", "cubic", Family::Rx));
        assert_eq!(
            k.server(&run()),
            super::super::plain_tcp::PlainTcp::parse("cubic").unwrap().server(&run())
        );
        let c = k.client(&run());
        assert_eq!(c.command, "timeout 20 /bin/alcc get \"$ALCC_SERVER:9000\" --http --drwa=drwa");
        assert_eq!(c.deadline_status, 124);
        assert!(k.needs().is_empty());
        assert!(k.label().starts_with("receive window drwa at the client; server: plain kernel TCP (cubic)"));
    }

    #[test]
    fn the_static_cap_and_alcc_servers() {
        let k = ReceiverScheme::parse("static:rcvbuf=1048576@tcp-bbr").unwrap();
        assert!(k.client(&run()).command.ends_with("--http --rcvbuf 1048576"));
        let k = ReceiverScheme::parse("drwa:lambda=2@alcc-copa").unwrap();
        assert_eq!((k.cc(), k.underlay()), ("copa", "cubic"));
        assert!(k.client(&run()).command.ends_with("--drwa=drwa:lambda=2"));
    }

    #[test]
    fn curl_under_the_shim_is_the_same_window_through_ld_preload() {
        let k = ReceiverScheme::parse("drwa:lambda=2-curl@tcp-bbr").unwrap();
        assert_eq!((k.window.as_str(), k.receiver), ("drwa:lambda=2", Receiver::CurlUnderShim));
        let c = k.client(&run());
        assert_eq!(
            c.command,
            format!(
                "env LD_PRELOAD=/bin/libalcc_preload.so ALCC_RECEIVER=drwa:lambda=2 {}",
                Client::curl(&run()).command
            )
        );
        assert_eq!(c.deadline_status, Client::curl(&run()).deadline_status);
        assert!(k.label().contains("an unmodified curl (LD_PRELOAD)"), "{}", k.label());
        let needs = k.needs();
        assert!(needs.iter().any(|n| matches!(n, Need::Program { name: "curl", .. })), "{needs:?}");
        assert!(
            needs
                .iter()
                .any(|n| matches!(n, Need::File { path, .. } if path.ends_with("libalcc_preload.so"))),
            "{needs:?}"
        );
        assert!(ReceiverScheme::parse("kernel-curl@tcp-cubic").is_err());
    }

    #[test]
    fn bad_forms_are_refused() {
        for bad in [
            "drwa",
            "drwa@udp-copa",
            "bogus@tcp-cubic",
            "kernel@tcp-cubic",
            "drwa@tcp-vegas",
            "static@tcp-cubic",
        ] {
            assert!(ReceiverScheme::parse(bad).is_err(), "{bad} accepted");
        }
    }
}
