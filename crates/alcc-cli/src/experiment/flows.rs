//! The commands of a run with a workload ([`super::workload`]): the scheme's server process(es)
//! serving N flows, the cross traffic's servers, and one client script that starts every flow
//! at its offset and every cross flow's on periods, waits for all of them, and exits with the
//! first failure's status (a client's deadline status counts as success).

use std::fmt::Write as _;

use super::scheme::{Client, Kind, RunContext, Transfer};
use super::workload::{
    CrossKind, CrossSpec, Workload, CROSS_TCP_CLIENT_PORT_BASE, CROSS_TCP_PORT, CROSS_UDP_CLIENT_PORT,
    CROSS_UDP_PORT, FLOW_CLIENT_PORT_BASE, SCHEME_PORTS,
};

/// UDP datagram size of the cross flow (iperf3 `-l`): under the link's 1500-byte MTU, so that
/// no datagram is fragmented (a fragment carries no ports and belongs to no flow).
pub const UDP_DATAGRAM_BYTES: u32 = 1400;

/// The server commands and the client script of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowCommands {
    /// Shell commands for the server namespace: the scheme's servers first.
    pub servers: Vec<String>,
    /// The client namespace's script (without the leading start delay).
    pub client: String,
}

/// `{ sleep S; COMMAND; }` with the sleep left out when S is 0; the client's deadline status
/// becomes 0, and the subshell exits with the result.
fn timed(start_s: f64, client: &Client) -> String {
    let sleep = if start_s > 0.0 { format!("sleep {start_s}; ") } else { String::new() };
    format!("( {sleep}{}; r=$?; [ $r -eq {} ] && r=0; exit $r )", client.command, client.deadline_status)
}

/// Builds the commands of `workload` for `transfer` (the download of scheme `kind`), with `base`
/// the single-flow run context (port, duration, files); `rusage_wait` is the client's wait for a
/// server's rusage file.
pub fn commands(
    transfer: &dyn Transfer,
    kind: &dyn Kind,
    base: &RunContext,
    workload: &Workload,
    rusage_wait: &dyn Fn(&RunContext) -> String,
) -> Result<FlowCommands, String> {
    let servers_n = workload.servers.max(1) as usize;
    let contexts: Vec<RunContext> = (0..servers_n)
        .map(|k| RunContext { port: SCHEME_PORTS[k], clients: workload.clients_of(k), server: k, ..*base })
        .collect();
    let mut servers: Vec<String> = contexts.iter().map(|c| transfer.server(c)).collect();
    let mut script = String::new();
    let mut pids = Vec::new();
    for i in 0..workload.flows as usize {
        let offset = workload.offset_s(i);
        let ctx =
            RunContext { duration_s: round_ms(base.duration_s - offset), ..contexts[workload.server_of(i)] };
        let client = if workload.flows == 1 {
            transfer.client(&ctx)
        } else {
            let port = FLOW_CLIENT_PORT_BASE + i as u16;
            kind.flow_client(&ctx, port, workload.weight(i))
                .ok_or("its client cannot be one of several flows (not curl, no sender per flow)")?
        };
        let _ = write!(script, "{} & f{i}=$!; ", timed(offset, &client));
        pids.push(format!("$f{i}"));
    }
    for (j, cross) in workload.cross.iter().enumerate() {
        let (server, chain) = cross_commands(base, cross)?;
        servers.push(server);
        let _ = write!(script, "{chain} & c{j}=$!; ");
        pids.push(format!("$c{j}"));
    }
    let _ =
        write!(script, "s=0; for p in {}; do wait $p; r=$?; [ $s -eq 0 ] && s=$r; done; ", pids.join(" "));
    for c in &contexts {
        script.push_str(&rusage_wait(c));
    }
    script.push_str("exit $s");
    Ok(FlowCommands { servers, client: script })
}

/// Seconds rounded to the millisecond (no float noise in command lines).
fn round_ms(s: f64) -> f64 {
    (s * 1000.0).round() / 1000.0
}

/// The server command and the client chain (a subshell run in the background) of one cross
/// flow: its on periods one after the other, a sleep before each.
fn cross_commands(base: &RunContext, cross: &CrossSpec) -> Result<(String, String), String> {
    let kind = cross.parsed_kind()?;
    let mut chain = String::from("( ");
    let mut now = 0.0;
    for (k, [start, end]) in cross.on_s.iter().enumerate() {
        let wait = round_ms(start - now);
        if wait > 0.0 {
            let _ = write!(chain, "sleep {wait}; ");
        }
        let length = round_ms(end - start);
        match &kind {
            CrossKind::Tcp(_) => {
                let _ = write!(
                    chain,
                    "curl -sS -o /dev/null --local-port {} --max-time {length} \"http://$ALCC_SERVER:{CROSS_TCP_PORT}/\"; \
                     r=$?; [ $r -eq 28 ] || [ $r -eq 0 ] || exit $r; ",
                    CROSS_TCP_CLIENT_PORT_BASE + k as u16
                );
            }
            CrossKind::Udp(rate) => {
                // iperf3 sends for whole seconds (-t); -R: the server sends, through the downlink.
                let seconds = length.round().max(1.0);
                let _ = write!(
                    chain,
                    "iperf3 -c \"$ALCC_SERVER\" -p {CROSS_UDP_PORT} --cport {CROSS_UDP_CLIENT_PORT} -u -R -b {rate}M \
                     -l {UDP_DATAGRAM_BYTES} -t {seconds} >/dev/null || exit $?; "
                );
            }
        }
        now = *end;
    }
    chain.push_str("exit 0 )");
    let server = match kind {
        CrossKind::Tcp(kernel) => format!(
            "{} serve-plain --port {CROSS_TCP_PORT} --underlay {kernel} --bytes {} --http --count {} --seconds {}",
            base.alcc_q(),
            base.offer_bytes,
            cross.on_s.len(),
            base.server_seconds
        ),
        CrossKind::Udp(_) => format!("iperf3 -s -p {CROSS_UDP_PORT}"),
    };
    Ok((server, chain))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::scheme::{Download, Scheme};
    use std::path::Path;

    fn base() -> RunContext<'static> {
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

    fn build(scheme: &str, w: &Workload) -> Result<FlowCommands, String> {
        let s = Scheme::parse(scheme).unwrap();
        let kind = s.kind();
        commands(&Download(kind), kind, &base(), w, &|c| format!("wait-for {}; ", c.rusage().display()))
    }

    #[test]
    fn four_weighted_flows_over_two_servers_with_cross_traffic() {
        let w = Workload {
            name: "w".into(),
            flows: 4,
            offsets_s: vec![0.0, 2.0, 4.0, 6.5],
            weights: vec![1.0, 2.0, 3.0, 4.0],
            servers: 2,
            cross: vec![
                CrossSpec { kind: "tcp-cubic".into(), rate_mbps: None, on_s: vec![[2.0, 6.0], [10.0, 15.0]] },
                CrossSpec { kind: "udp".into(), rate_mbps: Some(20.0), on_s: vec![[5.0, 9.4]] },
            ],
        };
        let c = build("alcc-copa+coupled", &w).unwrap();
        assert_eq!(c.servers.len(), 4);
        assert!(
            c.servers[0].contains("serve --port 9000") && c.servers[0].contains("--group auto --count 2")
        );
        assert!(c.servers[0].ends_with("--telemetry /d/telemetry.jsonl --rusage /d/rusage.json"));
        assert!(c.servers[1].contains("serve --port 9001") && c.servers[1].contains("--count 2"));
        assert!(c.servers[1].ends_with("--telemetry /d/telemetry-1.jsonl --rusage /d/rusage-1.json"));
        assert_eq!(
            c.servers[2],
            "/bin/alcc serve-plain --port 9100 --underlay cubic --bytes 100 --http --count 2 --seconds 22"
        );
        assert_eq!(c.servers[3], "iperf3 -s -p 9200");
        assert!(
            c.client.starts_with(
                "( curl -sS -o /dev/null --local-port 40000 --max-time 20 \"http://$ALCC_SERVER:9000/?weight=1\"; \
                 r=$?; [ $r -eq 28 ] && r=0; exit $r ) & f0=$!; ( sleep 2; curl -sS -o /dev/null --local-port 40001 \
                 --max-time 18 \"http://$ALCC_SERVER:9001/?weight=2\";"
            ),
            "{}",
            c.client
        );
        assert!(c.client.contains("( sleep 6.5; curl -sS -o /dev/null --local-port 40003 --max-time 13.5"));
        assert!(c.client.contains(
            "( sleep 2; curl -sS -o /dev/null --local-port 41000 --max-time 4 \"http://$ALCC_SERVER:9100/\"; \
             r=$?; [ $r -eq 28 ] || [ $r -eq 0 ] || exit $r; sleep 4; curl -sS -o /dev/null --local-port 41001 \
             --max-time 5"
        ));
        assert!(c.client.contains(
            "( sleep 5; iperf3 -c \"$ALCC_SERVER\" -p 9200 --cport 42000 -u -R -b 20M -l 1400 -t 4 >/dev/null"
        ));
        assert!(c.client.ends_with(
            "s=0; for p in $f0 $f1 $f2 $f3 $c0 $c1; do wait $p; r=$?; [ $s -eq 0 ] && s=$r; done; \
             wait-for /d/rusage.json; wait-for /d/rusage-1.json; exit $s"
        ));
    }

    #[test]
    fn two_servers_share_one_group_through_the_manager_the_first_starts() {
        let w = Workload {
            name: "w".into(),
            flows: 4,
            weights: vec![1.0, 2.0, 3.0, 4.0],
            servers: 2,
            ..Workload::implicit()
        };
        let c = build("alcc-copa+manager", &w).unwrap();
        assert_eq!(c.servers.len(), 2);
        let started: Vec<bool> =
            c.servers.iter().map(|s| s.contains("alcc manager --socket /d/manager.sock &")).collect();
        assert_eq!(started, [true, false], "the first server's command starts the manager");
        for (s, port) in c.servers.iter().zip([9000, 9001]) {
            assert!(s.contains("while [ ! -S /d/manager.sock ]"), "{s}");
            assert!(s.contains(&format!("serve --port {port} ")), "{s}");
            assert!(s.contains("--group run --manager /d/manager.sock --count 2"), "{s}");
        }
        assert!(c.client.contains("\"http://$ALCC_SERVER:9001/?weight=4\""), "{}", c.client);
    }

    #[test]
    fn one_flow_keeps_its_own_client_and_several_need_curl_or_a_sender_each() {
        let one = Workload {
            cross: vec![CrossSpec { kind: "udp".into(), rate_mbps: Some(10.0), on_s: vec![[1.0, 3.0]] }],
            name: "x".into(),
            ..Workload::implicit()
        };
        let c = build("udp-copa", &one).unwrap();
        assert!(c.client.starts_with(
            "( timeout 20 /bin/alcc get \"$ALCC_SERVER:9000\" --mode udp; r=$?; [ $r -eq 124 ]"
        ));
        let several = Workload { flows: 2, ..one };
        assert!(build("ref-verus", &several).unwrap_err().contains("not curl"));
        // A sender per flow: one server command starting both, each flow's client to its port.
        let c = build("udp-copa", &several).unwrap();
        assert!(c.servers[0].contains("serve --port 40000 ") && c.servers[0].contains("serve --port 40001 "));
        assert!(c.client.contains("get \"$ALCC_SERVER:40001\" --mode udp"), "{}", c.client);
        assert!(c.client.contains("wait-for /d/rusage.json"), "{}", c.client);
        let c = build("tcp-cubic", &several).unwrap();
        assert!(c.servers[0].contains("--count 2"), "{}", c.servers[0]);
        assert!(c.client.contains("--local-port 40001 --max-time 20 \"http://$ALCC_SERVER:9000/\""));
    }
}
