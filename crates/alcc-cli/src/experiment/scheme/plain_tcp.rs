//! `tcp-KERNELCC`: plain kernel TCP with one of the kernel's congestion controls, served by
//! `alcc serve-plain` (sendfile from an in-memory file; no alcc engine code on the data path, no
//! TCP_INFO polling) and fetched by `curl`. The baseline every other scheme is compared with
//! (the report's CPU table divides by it). `alcc-none@KERNELCC` is the engine without a
//! controller, for measuring what the engine itself costs.
//!
//! Uploading (`direction = "up"`), it is `curl -T` sending an HTTP PUT of zeros to
//! `alcc serve --receive --mode kernel --http` (a plain TCP receiver) until the deadline. curl
//! cannot choose its socket's congestion control: the client namespace's default is set to
//! KERNELCC first ([`super::with_default_cc`]), and a kernel that refuses it fails the run.

use super::{upload_receiver, with_default_cc, Client, Family, Kind, Need, RunContext, RunMode, Transfer};
use crate::experiment::runner::shell_quote;

/// Kernel congestion controls a `tcp-*` scheme may name.
pub const KERNEL_CCS: &[&str] = &["cubic", "reno", "bbr"];

/// Plain kernel TCP with congestion control `kernel`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainTcp {
    /// The kernel congestion control (one of [`KERNEL_CCS`]).
    pub kernel: String,
}

impl PlainTcp {
    /// Parses the text after `tcp-`.
    pub fn parse(kernel: &str) -> Result<PlainTcp, String> {
        if !KERNEL_CCS.contains(&kernel) {
            return Err(format!("plain TCP schemes are tcp-{}, not tcp-{kernel}", KERNEL_CCS.join("|tcp-")));
        }
        Ok(PlainTcp { kernel: kernel.to_string() })
    }
}

impl Kind for PlainTcp {
    fn family(&self) -> Family {
        Family::Tcp
    }

    fn cc(&self) -> &str {
        "none"
    }

    fn underlay(&self) -> &str {
        &self.kernel
    }

    fn mode(&self) -> RunMode {
        RunMode::Kernel
    }

    fn label(&self) -> String {
        format!("plain kernel TCP ({}), sendfile", self.kernel)
    }

    fn server(&self, run: &RunContext) -> String {
        format!(
            "{} serve-plain --port {} --underlay {} --bytes {} --http --count {} --seconds {} --rusage {}",
            run.alcc_q(),
            run.port,
            shell_quote(&self.kernel),
            run.offer_bytes,
            run.clients,
            run.server_seconds,
            run.quoted(&run.rusage())
        )
    }

    fn client(&self, run: &RunContext) -> Client {
        Client::curl(run)
    }

    fn needs(&self) -> Vec<Need> {
        curl_need()
    }

    /// curl from a fixed port; no weight is asked for (the plain server has none to give).
    fn flow_client(&self, run: &RunContext, local_port: u16, _weight: Option<f64>) -> Option<Client> {
        Some(Client::curl_flow(run, local_port, None))
    }

    fn upload(&self) -> Result<Box<dyn Transfer + '_>, String> {
        Ok(Box::new(PlainUpload(self)))
    }
}

fn curl_need() -> Vec<Need> {
    vec![Need::Program { name: "curl", install: "scripts/setup.sh installs it (apt-get install curl)" }]
}

/// `tcp-K` uploading: `curl -T` to an HTTP PUT receiver.
struct PlainUpload<'a>(&'a PlainTcp);

impl Transfer for PlainUpload<'_> {
    fn mode(&self) -> RunMode {
        RunMode::Kernel
    }

    fn label(&self) -> String {
        format!("plain kernel TCP ({}) upload, curl -T", self.0.kernel)
    }

    fn server(&self, run: &RunContext) -> String {
        upload_receiver(run, RunMode::Kernel)
    }

    fn client(&self, run: &RunContext) -> Client {
        // A PUT of `offer_bytes` zeros from a pipe: curl would send a pipe chunked, which the
        // receiver refuses, so the length is given and the chunked header removed; no
        // `Expect: 100-continue` round trip.
        let put = format!(
            "head -c {n} /dev/zero | curl -sS -o /dev/null --max-time {} -T - -H 'Content-Length: {n}' \
             -H 'Transfer-Encoding:' -H 'Expect:' \"http://$ALCC_SERVER:{}/\"",
            run.duration_s,
            run.port,
            n = run.offer_bytes
        );
        Client { command: with_default_cc(&self.0.kernel, &put), deadline_status: 28 }
    }

    fn needs(&self) -> Vec<Need> {
        curl_need()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn only_the_kernels_known_ccs() {
        assert_eq!(PlainTcp::parse("reno").unwrap().kernel, "reno");
        let e = PlainTcp::parse("vegas").unwrap_err();
        assert!(e.contains("tcp-cubic|tcp-reno|tcp-bbr"), "{e}");
    }

    #[test]
    fn served_to_curl() {
        let run = RunContext {
            alcc: Path::new("/bin/alcc"),
            dir: Path::new("/o/d"),
            duration_s: 20.0,
            port: 9000,
            offer_bytes: 100,
            server_seconds: 22.0,
            clients: 1,
            server: 0,
        };
        let k = PlainTcp::parse("bbr").unwrap();
        assert_eq!(
            k.server(&run),
            "/bin/alcc serve-plain --port 9000 --underlay bbr --bytes 100 --http --count 1 --seconds 22 \
             --rusage /o/d/rusage.json"
        );
        assert_eq!(k.client(&run).deadline_status, 28);
        assert_eq!(k.label(), "plain kernel TCP (bbr), sendfile");
        assert!(matches!(&k.needs()[..], [Need::Program { name: "curl", .. }]));
    }

    #[test]
    fn uploads_with_curl_to_the_put_receiver() {
        let run = RunContext {
            alcc: Path::new("/bin/alcc"),
            dir: Path::new("/o/d"),
            duration_s: 20.0,
            port: 9000,
            offer_bytes: 100,
            server_seconds: 22.0,
            clients: 1,
            server: 0,
        };
        let k = PlainTcp::parse("reno").unwrap();
        let up = k.upload().unwrap();
        assert_eq!(
            up.server(&run),
            "/bin/alcc serve --receive --port 9000 --mode kernel --http --count 1 --seconds 22"
        );
        let c = up.client(&run);
        assert!(
            c.command.starts_with("{ echo reno > /proc/sys/net/ipv4/tcp_congestion_control"),
            "{}",
            c.command
        );
        assert!(
            c.command.ends_with(
                "head -c 100 /dev/zero | curl -sS -o /dev/null --max-time 20 -T - -H 'Content-Length: 100' \
                 -H 'Transfer-Encoding:' -H 'Expect:' \"http://$ALCC_SERVER:9000/\""
            ),
            "{}",
            c.command
        );
        assert_eq!((c.deadline_status, up.mode()), (28, RunMode::Kernel));
        assert_eq!(up.label(), "plain kernel TCP (reno) upload, curl -T");
    }
}
