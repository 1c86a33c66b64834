//! `vsftpd-tcp-KERNELCC` and `vsftpd-shim-CC[@UNDERLAY]`: Debian's vsftpd, unmodified, serving
//! one large file to curl's FTP client, as in the ALCC paper's FTP experiment (issue 12).
//!
//! - `vsftpd-tcp-cubic` is plain vsftpd, the kernel's congestion control set on the server
//!   namespace's routes (as `nginx-tcp-K`, [`super::unmodified`]).
//! - `vsftpd-shim-copa` is the same vsftpd under `libalcc_preload.so` with `ALCC_CC=copa`, the
//!   passive data port as `ALCC_PORTS` (the paper governed the data transfer; the control
//!   connection is served by a child forked after its accept, which the shim does not govern),
//!   `ALCC_FORK=start` (vsftpd's session processes may not make threads: RLIMIT_NPROC = 0),
//!   and Reno underneath unless the scheme names another ([`DEFAULT_UNDERLAY`]).
//!
//! vsftpd runs standalone (`listen=YES`, `background=NO`) with `use_sendfile=YES`, anonymous
//! download only, one passive data port (the control port + 1), and `isolate=NO
//! isolate_network=NO` so that it makes its session processes with fork(2) (its default clone
//! in new namespaces runs no fork handlers); its configuration, the served sparse file and the
//! empty chroot directory are written into the run directory by the server command, as nginx's
//! are. The client is `curl ftp://SERVER:PORT/download.bin` (passive mode, curl's default).

use std::path::Path;

use super::unmodified::{self, Governor, NginxScheme};
use super::{Client, Family, Kind, Need, RunContext, RunMode, Transfer};
use crate::experiment::runner::shell_quote;

/// The underlay when a shim scheme names none: Reno. The process that sends vsftpd's data runs
/// as the user `ftp`, without CAP_NET_ADMIN, so the kernel lets it choose only a congestion
/// control of net.ipv4.tcp_allowed_congestion_control (Reno is always there; CUBIC was refused
/// on the project's machine and the connection went ungoverned, logged `could NOT govern`).
/// Compare `vsftpd-shim-X` with `alcc-X@reno`.
pub const DEFAULT_UNDERLAY: &str = "reno";

/// vsftpd, unmodified, plain or under the shim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VsftpdScheme {
    /// Plain or under the shim.
    pub governor: Governor,
}

impl VsftpdScheme {
    /// Parses the text after `vsftpd-`: `tcp-KERNELCC` or `shim-CC[@UNDERLAY]`.
    pub fn parse(rest: &str) -> Result<VsftpdScheme, String> {
        Ok(VsftpdScheme {
            governor: unmodified::parse_governor(rest, "vsftpd", "vsftpd-", DEFAULT_UNDERLAY)?,
        })
    }
}

/// The passive data port of a run whose control port is `port`.
pub fn data_port(port: u16) -> u16 {
    port.wrapping_add(1)
}

/// vsftpd's configuration for one run: standalone on `port`, anonymous download from
/// `dir/ftp/pub`, passive data connections on [`data_port`] only.
pub fn vsftpd_conf(dir: &Path, port: u16) -> String {
    let data = data_port(port);
    format!(
        "listen=YES\nlisten_ipv6=NO\nlisten_port={port}\nbackground=NO\n\
         anonymous_enable=YES\nno_anon_password=YES\nanon_root={root}\nlocal_enable=NO\nwrite_enable=NO\n\
         ftp_username=ftp\nsecure_chroot_dir={empty}\npasv_enable=YES\npasv_min_port={data}\n\
         pasv_max_port={data}\nconnect_from_port_20=NO\nxferlog_enable=NO\nuse_sendfile=YES\n\
         seccomp_sandbox=NO\nisolate=NO\nisolate_network=NO\n",
        root = dir.join("ftp/pub").display(),
        empty = dir.join("ftp/empty").display(),
    )
}

impl Kind for VsftpdScheme {
    fn family(&self) -> Family {
        Family::Unmodified
    }

    fn cc(&self) -> &str {
        match &self.governor {
            Governor::Kernel(_) => "none",
            Governor::Shim { cc, .. } => cc,
        }
    }

    fn underlay(&self) -> &str {
        match &self.governor {
            Governor::Kernel(k) => k,
            Governor::Shim { underlay, .. } => underlay,
        }
    }

    fn mode(&self) -> RunMode {
        RunMode::Kernel
    }

    fn label(&self) -> String {
        match &self.governor {
            Governor::Kernel(k) => {
                format!("Debian's vsftpd, unmodified, plain kernel TCP ({k}), to curl ftp://")
            }
            Governor::Shim { cc, underlay } => format!(
                "Debian's vsftpd, unmodified, under libalcc_preload.so: alcc's {cc} above kernel {underlay}, \
                 to curl ftp://"
            ),
        }
    }

    fn server(&self, run: &RunContext) -> String {
        let conf = run.dir.join("ftp/vsftpd.conf");
        let file = run.dir.join("ftp/pub/download.bin");
        let setup = format!(
            "mkdir -p {public} {empty} && truncate -s {bytes} {file} && printf '%s' {text} > {conf_q}",
            public = run.quoted(&run.dir.join("ftp/pub")),
            empty = run.quoted(&run.dir.join("ftp/empty")),
            bytes = run.offer_bytes,
            file = run.quoted(&file),
            text = shell_quote(&vsftpd_conf(run.dir, run.port)),
            conf_q = run.quoted(&conf),
        );
        let (prepare, env) = match &self.governor {
            Governor::Kernel(k) => (unmodified::route_congctl(k), String::new()),
            Governor::Shim { cc, underlay } => (
                String::new(),
                format!(
                    "env LD_PRELOAD={} ALCC_CC={} ALCC_UNDERLAY={} ALCC_PORTS={} ALCC_FORK=start \
                     ALCC_EXIT_LINGER={} ALCC_LOG={} ",
                    run.quoted(&NginxScheme::shim_library(run.alcc)),
                    shell_quote(cc),
                    shell_quote(underlay),
                    data_port(run.port),
                    unmodified::EXIT_LINGER_S,
                    run.quoted(&run.dir.join("alcc.log")),
                ),
            ),
        };
        format!(
            "{setup}{prepare} && {alcc} rusage --out {rusage} -- timeout -s TERM {seconds} {env}vsftpd {conf_q}; \
             s=$?; rm -f {file}; exit $s",
            alcc = run.alcc_q(),
            rusage = run.quoted(&run.rusage()),
            seconds = run.server_seconds,
            conf_q = run.quoted(&conf),
            file = run.quoted(&file),
        )
    }

    fn client(&self, run: &RunContext) -> Client {
        Client {
            command: format!(
                "curl -sS -o /dev/null --max-time {} \"ftp://$ALCC_SERVER:{}/download.bin\"",
                run.duration_s, run.port
            ),
            deadline_status: 28,
        }
    }

    fn needs(&self) -> Vec<Need> {
        let mut needs = vec![
            Need::Program {
                name: "vsftpd",
                install: "scripts/setup.sh installs it (apt-get install vsftpd)",
            },
            Need::Program { name: "curl", install: "scripts/setup.sh installs it (apt-get install curl)" },
            Need::Program { name: "timeout", install: "coreutils" },
            Need::Program { name: "truncate", install: "coreutils" },
            Need::Program { name: "ip", install: "iproute2" },
        ];
        needs.extend(self.governor.needs());
        needs
    }

    fn warning(&self) -> Option<String> {
        self.governor.warning()
    }

    fn upload(&self) -> Result<Box<dyn Transfer + '_>, String> {
        Err("vsftpd serves downloads here; an unmodified uploader is tcp-K (curl -T)".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> RunContext<'static> {
        RunContext {
            alcc: Path::new("/t/release/alcc"),
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
    fn vsftpd_plain_and_under_the_shim() {
        let plain = VsftpdScheme::parse("tcp-cubic").unwrap();
        assert_eq!((plain.cc(), plain.underlay()), ("none", "cubic"));
        let server = plain.server(&run());
        assert!(server.starts_with(
            "mkdir -p /o/d/ftp/pub /o/d/ftp/empty && truncate -s 100 /o/d/ftp/pub/download.bin"
        ));
        assert!(server.contains("congctl cubic"), "{server}");
        assert!(server.contains("timeout -s TERM 22 vsftpd /o/d/ftp/vsftpd.conf; s=$?; rm -f"), "{server}");
        assert!(!server.contains("LD_PRELOAD"));
        assert_eq!(VsftpdScheme::parse("shim-verus").unwrap().underlay(), "reno");
        let shim = VsftpdScheme::parse("shim-copa@reno").unwrap();
        assert_eq!((shim.cc(), shim.underlay()), ("copa", "reno"));
        assert!(shim.label().contains("under libalcc_preload.so: alcc's copa above kernel reno"));
        let server = shim.server(&run());
        assert!(
            server.contains(
                "env LD_PRELOAD=/t/release/libalcc_preload.so ALCC_CC=copa ALCC_UNDERLAY=reno ALCC_PORTS=9001 \
                 ALCC_FORK=start ALCC_EXIT_LINGER=1 ALCC_LOG=/o/d/alcc.log vsftpd"
            ),
            "{server}"
        );
        let conf = vsftpd_conf(Path::new("/o/d"), 9000);
        for line in [
            "listen_port=9000\n",
            "pasv_min_port=9001\n",
            "pasv_max_port=9001\n",
            "isolate=NO\n",
            "use_sendfile=YES\n",
            "anon_root=/o/d/ftp/pub\n",
            "background=NO\n",
        ] {
            assert!(conf.contains(line), "{line}: {conf}");
        }
        assert_eq!(
            shim.client(&run()).command,
            "curl -sS -o /dev/null --max-time 20 \"ftp://$ALCC_SERVER:9000/download.bin\""
        );
        for bad in ["copa", "tcp-vegas", "shim-", "shim-sprout", "hls-tcp-cubic"] {
            assert!(VsftpdScheme::parse(bad).is_err(), "{bad}");
        }
        assert!(VsftpdScheme::parse("tcp-vegas").unwrap_err().contains("vsftpd-tcp-"));
    }
}
