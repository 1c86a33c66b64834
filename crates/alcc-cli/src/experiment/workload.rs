//! What traffic a run carries besides "one flow of the scheme": a spec's `[[workloads]]` tables
//! (docs/experiment-format.md, "Several flows and cross traffic"). A workload names N flows of
//! the scheme (start offsets, priority weights, one or two server processes) and cross traffic
//! that shares the bottleneck: on/off plain kernel TCP (`alcc serve-plain` fetched by curl) and
//! on/off constant-rate UDP (iperf3), as in the ALCC paper's section 5.9 (Figures 22-24).
//!
//! Every flow has fixed ports, so that the emulator's flow log (`alcc link --downlink-flow-log`)
//! tells the flows apart: the scheme's servers listen on [`SCHEME_PORTS`], flow `i`'s client
//! binds [`FLOW_CLIENT_PORT_BASE`]` + i` (curl `--local-port`), the cross TCP server listens on
//! [`CROSS_TCP_PORT`], the iperf3 server on [`CROSS_UDP_PORT`].

use serde::{Deserialize, Serialize};

use super::scheme::plain_tcp::KERNEL_CCS;
use super::scheme::Need;

/// The scheme's server ports: the first server process listens on the first, a second (with
/// `servers = 2`) on the second.
pub const SCHEME_PORTS: [u16; 2] = [9000, 9001];
/// Flow `i` of the scheme connects from this port + `i` (when its client can bind one).
pub const FLOW_CLIENT_PORT_BASE: u16 = 40000;
/// The on/off TCP cross flow's server port.
pub const CROSS_TCP_PORT: u16 = 9100;
/// Its on period `k` connects from this port + `k`.
pub const CROSS_TCP_CLIENT_PORT_BASE: u16 = 41000;
/// The on/off UDP cross flow's (iperf3) server port.
pub const CROSS_UDP_PORT: u16 = 9200;
/// Its data socket's client port (iperf3 `--cport`).
pub const CROSS_UDP_CLIENT_PORT: u16 = 42000;

/// Most flows of the scheme in one run.
pub const MAX_FLOWS: u32 = 64;

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// One workload: N flows of the scheme and the cross traffic beside them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Names the run directories (`runs/TRACE/WORKLOAD/SCHEME/run-K`) and the `workload`
    /// column; empty for the implicit workload of a spec without `[[workloads]]`.
    pub name: String,
    /// Flows of the scheme.
    #[serde(default = "one")]
    pub flows: u32,
    /// Each flow's start, seconds after the first client starts (default: all at 0). Every
    /// flow ends at the run's deadline.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offsets_s: Vec<f64>,
    /// Each flow's priority weight (alcc schemes ask for it with `GET /?weight=W`); default:
    /// none given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub weights: Vec<f64>,
    /// Server processes the flows are dealt over, round-robin (1 or 2).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub servers: u32,
    /// Cross traffic.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cross: Vec<CrossSpec>,
}

/// One cross-traffic flow as the spec writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossSpec {
    /// `tcp-cubic` (or `tcp-reno`, `tcp-bbr`): plain kernel TCP, `alcc serve-plain` fetched by
    /// curl; `udp`: constant-rate UDP from iperf3's server (`iperf3 -c -u -b RATE -R`).
    pub kind: String,
    /// The UDP flow's rate, Mbit/s (udp only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_mbps: Option<f64>,
    /// On periods `[start, end]`, seconds after the first client starts, in order and apart.
    pub on_s: Vec<[f64; 2]>,
}

/// What a cross flow is.
#[derive(Debug, Clone, PartialEq)]
pub enum CrossKind {
    /// Plain kernel TCP with this congestion control.
    Tcp(String),
    /// Constant-rate UDP at this many Mbit/s.
    Udp(f64),
}

impl CrossSpec {
    /// The parsed kind, or why it is not one.
    pub fn parsed_kind(&self) -> Result<CrossKind, String> {
        if self.kind == "udp" {
            return match self.rate_mbps {
                Some(r) if r.is_finite() && r > 0.0 && r <= 10_000.0 => Ok(CrossKind::Udp(r)),
                Some(_) => Err("`rate_mbps` must be between 0 and 10000".into()),
                None => Err("a udp cross flow needs `rate_mbps`".into()),
            };
        }
        match self.kind.strip_prefix("tcp-") {
            Some(k) if KERNEL_CCS.contains(&k) => {
                if self.rate_mbps.is_some() {
                    return Err("`rate_mbps` is for udp cross flows only (TCP takes what it gets)".into());
                }
                Ok(CrossKind::Tcp(k.to_string()))
            }
            _ => Err(format!(
                "`kind` must be `udp` or one of tcp-{}, not `{}`",
                KERNEL_CCS.join(", tcp-"),
                self.kind
            )),
        }
    }

    /// The name of its flow in the per-flow tables: `cross-tcp-cubic`, `cross-udp`.
    pub fn flow_name(&self) -> String {
        format!("cross-{}", self.kind)
    }
}

impl Workload {
    /// The workload of a spec without `[[workloads]]`: one flow, nothing else.
    pub fn implicit() -> Workload {
        Workload {
            name: String::new(),
            flows: 1,
            offsets_s: Vec::new(),
            weights: Vec::new(),
            servers: 1,
            cross: Vec::new(),
        }
    }

    /// Whether it is the implicit one (the run is the single-flow run of old).
    pub fn is_implicit(&self) -> bool {
        self.name.is_empty()
    }

    /// What its cross traffic needs installed: curl for a TCP flow, iperf3 for a UDP flow.
    pub fn needs(&self) -> Vec<Need> {
        let mut needs = Vec::new();
        for c in &self.cross {
            let need = match c.parsed_kind() {
                Ok(CrossKind::Udp(_)) => Need::Program {
                    name: "iperf3",
                    install: "scripts/setup.sh installs it (apt-get install iperf3)",
                },
                _ => Need::Program {
                    name: "curl",
                    install: "scripts/setup.sh installs it (apt-get install curl)",
                },
            };
            if !needs.contains(&need) {
                needs.push(need);
            }
        }
        needs
    }

    /// Flow `i`'s start offset, s.
    pub fn offset_s(&self, i: usize) -> f64 {
        self.offsets_s.get(i).copied().unwrap_or(0.0)
    }

    /// Flow `i`'s weight, if weights are given.
    pub fn weight(&self, i: usize) -> Option<f64> {
        self.weights.get(i).copied()
    }

    /// Which server process (0 or 1) serves flow `i`.
    pub fn server_of(&self, i: usize) -> usize {
        i % self.servers.max(1) as usize
    }

    /// How many flows server process `k` serves.
    pub fn clients_of(&self, k: usize) -> u64 {
        (0..self.flows as usize).filter(|i| self.server_of(*i) == k).count() as u64
    }

    /// The same workload with every time multiplied by `factor` (`--quick` shortens a run and
    /// keeps its shape).
    pub fn scaled(&self, factor: f64) -> Workload {
        let mut w = self.clone();
        for o in &mut w.offsets_s {
            *o *= factor;
        }
        for c in &mut w.cross {
            for p in &mut c.on_s {
                p[0] *= factor;
                p[1] *= factor;
            }
        }
        w
    }

    /// Checks the workload against the runs' length; the error is `(field, reason)` with the
    /// field relative to the workload (`offsets_s`, `cross[0].on_s`).
    pub fn check(&self, duration_s: f64) -> Result<(), (String, String)> {
        let err = |f: &str, r: String| Err((f.to_string(), r));
        if !(1..=MAX_FLOWS).contains(&self.flows) {
            return err("flows", format!("must be between 1 and {MAX_FLOWS}"));
        }
        let n = self.flows as usize;
        if !self.offsets_s.is_empty() && self.offsets_s.len() != n {
            return err("offsets_s", format!("gives {} offsets for {n} flows", self.offsets_s.len()));
        }
        if let Some(o) =
            self.offsets_s.iter().find(|o| !(o.is_finite() && **o >= 0.0 && **o < duration_s - 1.0))
        {
            return err(
                "offsets_s",
                format!("{o}: every flow must start at or after 0 and at least 1 s before the end ({duration_s} s)"),
            );
        }
        if !self.weights.is_empty() && self.weights.len() != n {
            return err("weights", format!("gives {} weights for {n} flows", self.weights.len()));
        }
        if let Some(w) = self.weights.iter().find(|w| !(w.is_finite() && **w > 0.0)) {
            return err("weights", format!("{w}: a weight must be a positive number"));
        }
        if !(1..=2).contains(&self.servers) {
            return err("servers", "must be 1 or 2".into());
        }
        if self.servers as usize > n {
            return err("servers", format!("{} servers for {n} flow(s)", self.servers));
        }
        for (i, c) in self.cross.iter().enumerate() {
            let at = |f: &str| format!("cross[{i}].{f}");
            c.parsed_kind().map_err(|r| (at("kind"), r))?;
            if self.cross[..i].iter().any(|o| o.kind == c.kind) {
                return err(
                    &at("kind"),
                    format!("`{}` is given twice (one cross flow of each kind)", c.kind),
                );
            }
            if c.on_s.is_empty() {
                return err(&at("on_s"), "lists no on period".into());
            }
            let mut end = 0.0;
            for [a, b] in &c.on_s {
                if !(a.is_finite() && b.is_finite() && *a >= end && b - a >= 1.0 && *b <= duration_s) {
                    return err(
                        &at("on_s"),
                        format!(
                            "[{a}, {b}]: periods must be in order, apart, at least 1 s long and end by \
                             {duration_s} s"
                        ),
                    );
                }
                end = *b;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w() -> Workload {
        Workload {
            name: "w".into(),
            flows: 4,
            offsets_s: vec![0.0, 2.0, 4.0, 6.0],
            weights: vec![1.0, 2.0, 3.0, 4.0],
            servers: 2,
            cross: vec![CrossSpec { kind: "udp".into(), rate_mbps: Some(20.0), on_s: vec![[5.0, 10.0]] }],
        }
    }

    #[test]
    fn flows_are_dealt_over_the_servers() {
        let w = w();
        assert_eq!((0..4).map(|i| w.server_of(i)).collect::<Vec<_>>(), [0, 1, 0, 1]);
        assert_eq!((w.clients_of(0), w.clients_of(1)), (2, 2));
        assert_eq!((w.offset_s(3), w.weight(1)), (6.0, Some(2.0)));
        assert_eq!(Workload::implicit().weight(0), None);
        assert!(w.check(20.0).is_ok());
    }

    #[test]
    fn scaling_keeps_the_shape() {
        let s = w().scaled(0.5);
        assert_eq!(s.offsets_s, [0.0, 1.0, 2.0, 3.0]);
        assert_eq!(s.cross[0].on_s, [[2.5, 5.0]]);
    }

    #[test]
    fn bad_workloads_name_the_field() {
        let bad = |f: fn(&mut Workload), field: &str, why: &str| {
            let mut x = w();
            f(&mut x);
            let (got, reason) = x.check(20.0).unwrap_err();
            assert!(got == field && reason.contains(why), "{got}: {reason}");
        };
        bad(|w| w.flows = 0, "flows", "between 1");
        bad(|w| w.offsets_s.pop().map(|_| ()).unwrap_or(()), "offsets_s", "3 offsets for 4 flows");
        bad(|w| w.offsets_s[1] = 19.5, "offsets_s", "1 s before the end");
        bad(|w| w.weights[0] = 0.0, "weights", "positive");
        bad(|w| w.servers = 3, "servers", "1 or 2");
        bad(|w| w.cross[0].kind = "quic".into(), "cross[0].kind", "tcp-cubic");
        bad(|w| w.cross[0].rate_mbps = None, "cross[0].kind", "needs `rate_mbps`");
        bad(|w| w.cross[0].on_s = vec![[5.0, 10.0], [9.0, 12.0]], "cross[0].on_s", "in order");
        bad(|w| w.cross[0].on_s = vec![[5.0, 25.0]], "cross[0].on_s", "end by 20");
        bad(
            |w| w.cross.push(CrossSpec { kind: "udp".into(), rate_mbps: Some(1.0), on_s: vec![[1.0, 3.0]] }),
            "cross[1].kind",
            "given twice",
        );
        let tcp = CrossSpec { kind: "tcp-cubic".into(), rate_mbps: None, on_s: vec![] };
        assert_eq!(tcp.parsed_kind().unwrap(), CrossKind::Tcp("cubic".into()));
        assert_eq!(tcp.flow_name(), "cross-tcp-cubic");
    }
}
