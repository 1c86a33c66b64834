//! `udp-CC`: alcc's own implementation of controller CC sending UDP datagrams to
//! `alcc get --mode udp` (no kernel TCP under it, nothing retransmitted). The same controller
//! code as `alcc-CC`, without the kernel in the way; it is not CC's authors' program (formerly
//! named `native-CC`).

use super::{is_cc_spec, unknown_cc_warning, Client, Family, Kind, Need, RunContext, RunMode, Transfer};
use crate::experiment::runner::shell_quote;

/// alcc's controller over UDP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpScheme {
    /// The controller spec.
    pub cc: String,
}

impl UdpScheme {
    /// Parses the text after `udp-`.
    pub fn parse(cc: &str) -> Result<UdpScheme, String> {
        if !is_cc_spec(cc) {
            return Err(format!("`{cc}` is not a controller spec (like copa or copa:delta=0.5)"));
        }
        Ok(UdpScheme { cc: cc.to_string() })
    }
}

impl Kind for UdpScheme {
    fn family(&self) -> Family {
        Family::Udp
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
        format!("alcc's own {} over UDP (not its authors' program)", self.cc)
    }

    fn server(&self, run: &RunContext) -> String {
        format!(
            "{} serve --port {} --cc {} --mode udp --bytes {} --count 1 --seconds {} --telemetry {} \
             --rusage {}",
            run.alcc_q(),
            run.port,
            shell_quote(&self.cc),
            run.offer_bytes,
            run.server_seconds,
            run.quoted(&run.telemetry()),
            run.quoted(&run.rusage())
        )
    }

    fn client(&self, run: &RunContext) -> Client {
        Client::alcc_get(run, RunMode::Udp)
    }

    fn needs(&self) -> Vec<Need> {
        Vec::new()
    }

    fn warning(&self) -> Option<String> {
        unknown_cc_warning(&self.cc)
    }

    fn upload(&self) -> Result<Box<dyn Transfer + '_>, String> {
        Err("UDP mode's sender is the accepting side (`alcc serve --mode udp`): it does not upload".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn udp_without_underlay_to_alcc_get() {
        let run = RunContext {
            alcc: Path::new("/bin/alcc"),
            dir: Path::new("/d"),
            duration_s: 8.0,
            port: 9000,
            offer_bytes: 100,
            server_seconds: 10.0,
            clients: 1,
            server: 0,
        };
        let k = UdpScheme::parse("copa").unwrap();
        assert_eq!(
            k.server(&run),
            "/bin/alcc serve --port 9000 --cc copa --mode udp --bytes 100 --count 1 --seconds 10 \
             --telemetry /d/telemetry.jsonl --rusage /d/rusage.json"
        );
        assert_eq!(k.client(&run).command, "timeout 8 /bin/alcc get \"$ALCC_SERVER:9000\" --mode udp");
        assert!(UdpScheme::parse("a/b").is_err());
        assert!(k.label().contains("not its authors' program"));
    }
}
