//! `udp-CC`: alcc's own implementation of controller CC sending UDP datagrams to
//! `alcc get --mode udp` (no kernel TCP under it, nothing retransmitted). The same controller
//! code as `alcc-CC`, without the kernel in the way; it is not CC's authors' program (formerly
//! named `native-CC`).
//!
//! UDP mode's server serves one client at a time, so a run of several flows (a workload's
//! `flows`) starts one `alcc serve --mode udp` per flow, each on its own port
//! ([`super::flow_port`]) and so on its own congestion state, measured together
//! ([`super::measured_senders`]); flow `i` writes `telemetry-flow-i.jsonl`.

use std::path::Path;

use super::{
    flow_port, is_cc_spec, measured_senders, unknown_cc_warning, Client, Family, Kind, Need, RunContext,
    RunMode, Transfer,
};
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
        // `alcc serve --mode udp` on `port`, its telemetry to `telemetry`.
        let serve = |port: u16, telemetry: &Path| {
            format!(
                "{} serve --port {port} --cc {} --mode udp --bytes {} --count 1 --seconds {} --telemetry {}",
                run.alcc_q(),
                shell_quote(&self.cc),
                run.offer_bytes,
                run.server_seconds,
                run.quoted(telemetry)
            )
        };
        if run.clients > 1 {
            let senders: Vec<String> = (0..run.clients)
                .map(|i| serve(flow_port(i), &run.dir.join(format!("telemetry-flow-{i}.jsonl"))))
                .collect();
            return measured_senders(run, None, &senders);
        }
        format!("{} --rusage {}", serve(run.port, &run.telemetry()), run.quoted(&run.rusage()))
    }

    fn client(&self, run: &RunContext) -> Client {
        Client::alcc_get(run, RunMode::Udp)
    }

    /// `alcc get --mode udp` from the flow's own server, which listens on the flow's port.
    fn flow_client(&self, run: &RunContext, port: u16, _weight: Option<f64>) -> Option<Client> {
        Some(Client::alcc_get(&RunContext { port, ..*run }, RunMode::Udp))
    }

    fn sender_per_flow(&self) -> bool {
        true
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
        // Several flows: a server per flow on the flow's port, measured as one.
        let several = RunContext { clients: 2, ..run };
        assert!(k.sender_per_flow() && k.runs_several_flows());
        assert_eq!(
            k.server(&several),
            "/bin/alcc rusage --out /d/rusage.json -- sh -c '/bin/alcc serve --port 40000 --cc copa --mode udp \
             --bytes 100 --count 1 --seconds 10 --telemetry /d/telemetry-flow-0.jsonl & /bin/alcc serve --port 40001 \
             --cc copa --mode udp --bytes 100 --count 1 --seconds 10 --telemetry /d/telemetry-flow-1.jsonl & wait'"
        );
        let c = k.flow_client(&several, 40001, Some(2.0)).unwrap();
        assert_eq!(c.command, "timeout 8 /bin/alcc get \"$ALCC_SERVER:40001\" --mode udp");
        assert_eq!(c.deadline_status, 124);
        assert!(k.label().contains("not its authors' program"));
    }
}
