//! `nginx-tcp-KERNELCC` and `nginx-shim-CC[@UNDERLAY]`: Debian's nginx binary, unmodified, serving
//! one large file with `sendfile on` and 2 worker processes, fetched by `curl` (issue 12); and
//! `nginx-hls-tcp-KERNELCC`, `nginx-hls-shim-CC[@UNDERLAY]`: the same nginx serving an HLS stream
//! (a VOD playlist of MPEG-TS segments) to `ffmpeg` as the player (issue 12's video case).
//!
//! - `nginx-tcp-cubic` is plain nginx: no alcc code anywhere, the kernel's congestion control set
//!   on every route of the server's namespace (`ip route change ROUTE congctl cubic`; accepted
//!   connections take it from the route). The namespace's default (`net.ipv4.
//!   tcp_congestion_control`) cannot be used: it is inherited from the host (BBR on the project's
//!   machine), and a namespace may set it only to a controller of
//!   `net.ipv4.tcp_allowed_congestion_control`, which CUBIC is not there. The baseline.
//! - `nginx-shim-copa` is the same nginx started with `LD_PRELOAD=libalcc_preload.so ALCC_CC=copa
//!   ALCC_UNDERLAY=cubic` (crates/alcc-preload, docs/unmodified-programs.md): alcc's controller
//!   decides what enters each accepted socket. Its counterpart is `alcc-copa` (`alcc serve`, the
//!   same controller written against the API): the shim should cost nothing in fidelity.
//!
//! The nginx configuration is written into the run directory by the server command itself
//! (`RUN/nginx/nginx.conf`, with its pid file, error log and temporary paths beside it), so every
//! run's directory shows exactly what ran. The file served is a sparse file of the offered size
//! (`RUN/www/download.bin`, no disk blocks; removed when nginx has stopped). nginx runs under
//! `alcc rusage` (the `cpu_s` column: master and both workers, which the master reaps) and
//! `timeout -s TERM`, which stops it (nginx's fast shutdown) when the server's time is up.
//!
//! The HLS stream is made once, before a sweep, by `scripts/video-media.sh` from ffmpeg's lavfi
//! test sources (H.264 720p at 6 Mbit/s and AAC, 4 s segments, 80 s: more than a 20 s run moves
//! on the project's traces) into `video/hls/` beside the `alcc` binary; the sweep refuses to
//! start without it. nginx serves that directory read-only. The client is `ffmpeg -i
//! http://SERVER/hls/stream.m3u8 -c copy -f null -` under `timeout`: it reads the playlist, then
//! the segments in order as fast as the network carries them (no decoding, no real-time pacing),
//! as a player filling its buffer does. ffmpeg fetches the next segment on a second keep-alive
//! connection while it reads the current one (its `http_multiple`, on by default for HTTP/1.1
//! servers), so up to two flows share the link, each governed on its own.

use std::path::{Path, PathBuf};

use super::plain_tcp::KERNEL_CCS;
use super::{
    is_cc_spec, is_word, unknown_cc_warning, Client, Family, Kind, Need, RunContext, RunMode, Transfer,
};
use crate::experiment::runner::shell_quote;

/// The underlay when a shim scheme names none (as `alcc-CC`).
pub const DEFAULT_UNDERLAY: &str = super::alcc::DEFAULT_UNDERLAY;

/// The shim's file name, beside the `alcc` binary (`make build`).
pub const SHIM_LIBRARY: &str = "libalcc_preload.so";

/// How many seconds the engine may spend at a worker's exit flushing what is still queued
/// (`ALCC_EXIT_LINGER`): the server stops after the client left, so nothing is waiting.
pub(super) const EXIT_LINGER_S: u32 = 1;

/// Who decides how fast nginx's bytes enter its sockets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Governor {
    /// No one but the kernel: its congestion control (one of [`KERNEL_CCS`]).
    Kernel(String),
    /// alcc's controller `cc` through the preload shim, above kernel congestion control
    /// `underlay`.
    Shim {
        /// The controller spec (`ALCC_CC`).
        cc: String,
        /// The kernel congestion control under it (`ALCC_UNDERLAY`).
        underlay: String,
    },
}

impl Governor {
    /// What a run under this governor needs besides the server program: the preload shim
    /// beside the `alcc` binary that runs the sweep (this same binary).
    pub fn needs(&self) -> Vec<Need> {
        let Governor::Shim { .. } = self else { return Vec::new() };
        let Ok(alcc) = std::env::current_exe() else { return Vec::new() };
        vec![Need::File {
            path: NginxScheme::shim_library(&alcc),
            remedy: "the preload shim is not built: run `make build` (or `cargo build --release -p \
                     alcc-preload`)"
                .to_string(),
        }]
    }

    /// The warning for a controller the registry does not know (none for the kernel's own).
    pub fn warning(&self) -> Option<String> {
        match self {
            Governor::Kernel(_) => None,
            Governor::Shim { cc, .. } => unknown_cc_warning(cc),
        }
    }
}

/// What nginx serves, and the client that reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// One large file (`GET /` answers `RUN/www/download.bin`, sparse, of the offered size),
    /// downloaded by curl.
    File,
    /// An HLS stream (`video/hls/stream.m3u8` beside the `alcc` binary, made by
    /// `scripts/video-media.sh`), read by ffmpeg.
    Hls,
}

/// The HLS stream's playlist, relative to the media directory (and its URL path).
pub const HLS_PLAYLIST: &str = "hls/stream.m3u8";

impl Content {
    /// The directory nginx serves.
    fn root(self, run: &RunContext) -> PathBuf {
        match self {
            Content::File => run.dir.join("www"),
            Content::Hls => NginxScheme::media_dir(run.alcc),
        }
    }

    /// Shell commands that make what is served before nginx starts (each followed by ` && `).
    fn prepare(self, run: &RunContext) -> String {
        match self {
            Content::File => format!(
                "mkdir -p {www} && truncate -s {bytes} {file} && ",
                www = run.quoted(&run.dir.join("www")),
                bytes = run.offer_bytes,
                file = run.quoted(&Content::file(run)),
            ),
            Content::Hls => String::new(),
        }
    }

    /// Shell commands that remove it when nginx has stopped (each preceded by `; `).
    fn remove(self, run: &RunContext) -> String {
        match self {
            Content::File => format!("; rm -f {}", run.quoted(&Content::file(run))),
            Content::Hls => String::new(),
        }
    }

    /// The sparse file of [`Content::File`].
    fn file(run: &RunContext) -> PathBuf {
        run.dir.join("www/download.bin")
    }

    /// The client's command.
    fn client(self, run: &RunContext) -> Client {
        match self {
            Content::File => Client::curl(run),
            Content::Hls => Client {
                command: format!(
                    "timeout {} ffmpeg -nostdin -v error -i \"http://$ALCC_SERVER:{}/{HLS_PLAYLIST}\" -map 0 \
                     -c copy -f null -",
                    run.duration_s, run.port
                ),
                deadline_status: 124,
            },
        }
    }

    /// What it needs besides nginx.
    fn needs(self) -> Vec<Need> {
        match self {
            Content::File => {
                vec![Need::Program {
                    name: "curl",
                    install: "scripts/setup.sh installs it (apt-get install curl)",
                }]
            }
            Content::Hls => {
                let mut needs = vec![Need::Program {
                    name: "ffmpeg",
                    install: "scripts/setup.sh installs it (apt-get install ffmpeg)",
                }];
                if let Ok(alcc) = std::env::current_exe() {
                    let media = NginxScheme::media_dir(&alcc);
                    needs.push(Need::File {
                        path: media.join(HLS_PLAYLIST),
                        remedy: format!(
                            "the HLS stream is not made: run `scripts/video-media.sh {}`",
                            media.display()
                        ),
                    });
                }
                needs
            }
        }
    }

    /// How the label says it.
    fn describe(self) -> &'static str {
        match self {
            Content::File => "a file to curl",
            Content::Hls => "an HLS stream to ffmpeg",
        }
    }
}

/// nginx, unmodified, plain or under the shim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NginxScheme {
    /// Plain or under the shim.
    pub governor: Governor,
    /// What it serves to which client.
    pub content: Content,
}

/// Parses `tcp-KERNELCC` or `shim-CC[@UNDERLAY]`, the text after `prefix` (`nginx-`,
/// `vsftpd-`) of a scheme of the unmodified server `program`; `default_underlay` when the
/// scheme names none.
pub(super) fn parse_governor(
    rest: &str,
    program: &str,
    prefix: &str,
    default_underlay: &str,
) -> Result<Governor, String> {
    if let Some(kernel) = rest.strip_prefix("tcp-") {
        if !KERNEL_CCS.contains(&kernel) {
            let plain = format!("{program}-tcp-");
            return Err(format!(
                "plain {program} schemes are {plain}{}",
                KERNEL_CCS.join(&format!("|{plain}"))
            ));
        }
        return Ok(Governor::Kernel(kernel.to_string()));
    }
    let Some(shim) = rest.strip_prefix("shim-") else {
        return Err(format!(
            "expected {prefix}tcp-KERNELCC (plain {program}) or {prefix}shim-CC[@UNDERLAY] ({program} under \
             libalcc_preload.so)"
        ));
    };
    let (cc, underlay) = shim.rsplit_once('@').unwrap_or((shim, default_underlay));
    if !is_cc_spec(cc) || cc.eq_ignore_ascii_case("none") {
        return Err(format!("`{cc}` is not a controller spec (like copa or copa:delta=0.5)"));
    }
    if !is_word(underlay) {
        return Err(format!("`{underlay}` is not a kernel congestion control name (cubic, reno, bbr)"));
    }
    if alcc_cc::registry::entry(cc).is_ok_and(|e| e.needs_receiver()) {
        return Err(format!(
            "`{cc}` keeps a model at the receiver (framed mode); the shim governs kernel-mode \
             connections to unmodified clients only"
        ));
    }
    Ok(Governor::Shim { cc: cc.to_string(), underlay: underlay.to_string() })
}

/// Shell commands (starting ` && `) that give every route of the server's namespace the kernel
/// congestion control `kernel` (`congctl`): the namespace's default cannot be set to one
/// outside net.ipv4.tcp_allowed_congestion_control (EPERM), a route's can.
pub(super) fn route_congctl(kernel: &str) -> String {
    let each = format!("while read -r r; do ip route change $r congctl {kernel} || exit 1; done");
    format!(" && ip route show | {{ {each}; }}")
}

impl NginxScheme {
    /// Parses the text after `nginx-`: `[hls-]tcp-KERNELCC` or `[hls-]shim-CC[@UNDERLAY]`.
    pub fn parse(rest: &str) -> Result<NginxScheme, String> {
        let (content, rest) = match rest.strip_prefix("hls-") {
            Some(r) => (Content::Hls, r),
            None => (Content::File, rest),
        };
        let governor = parse_governor(rest, "nginx", "nginx-[hls-]", DEFAULT_UNDERLAY)?;
        Ok(NginxScheme { governor, content })
    }

    /// The shim library used by runs of the `alcc` binary `alcc`: the file beside it.
    pub fn shim_library(alcc: &Path) -> PathBuf {
        alcc.parent().unwrap_or(Path::new(".")).join(SHIM_LIBRARY)
    }

    /// The media that runs of the `alcc` binary `alcc` serve: `video/` beside it
    /// (`scripts/video-media.sh` makes `video/hls/`).
    pub fn media_dir(alcc: &Path) -> PathBuf {
        alcc.parent().unwrap_or(Path::new(".")).join("video")
    }
}

/// nginx's configuration for one run: 2 workers, sendfile, keep-alive, the files of `root`
/// served (`GET /` answered with `download.bin`; HLS's media types); every other path inside the
/// run directory `dir`.
pub fn nginx_conf(dir: &Path, root: &Path, port: u16) -> String {
    let q = |rel: &str| format!("\"{}\"", dir.join(rel).display());
    let temp = q("nginx/tmp");
    format!(
        "worker_processes 2;\n\
         daemon off;\n\
         master_process on;\n\
         user root;\n\
         pid {pid};\n\
         error_log {log} notice;\n\
         events {{ worker_connections 256; }}\n\
         http {{\n\
         \x20 access_log off;\n\
         \x20 sendfile on;\n\
         \x20 keepalive_timeout 30;\n\
         \x20 types {{ application/vnd.apple.mpegurl m3u8; video/mp2t ts; }}\n\
         \x20 client_body_temp_path {temp};\n\
         \x20 proxy_temp_path {temp};\n\
         \x20 fastcgi_temp_path {temp};\n\
         \x20 uwsgi_temp_path {temp};\n\
         \x20 scgi_temp_path {temp};\n\
         \x20 server {{\n\
         \x20   listen {port};\n\
         \x20   root \"{www}\";\n\
         \x20   location = / {{ try_files /download.bin =404; }}\n\
         \x20 }}\n\
         }}\n",
        pid = q("nginx/nginx.pid"),
        log = q("nginx/error.log"),
        www = root.display(),
    )
}

impl Kind for NginxScheme {
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
                format!(
                    "Debian's nginx, unmodified, plain kernel TCP ({k}), sendfile, {}",
                    self.content.describe()
                )
            }
            Governor::Shim { cc, underlay } => format!(
                "Debian's nginx, unmodified, under libalcc_preload.so: alcc's {cc} above kernel {underlay}, \
                 sendfile, {}",
                self.content.describe()
            ),
        }
    }

    fn server(&self, run: &RunContext) -> String {
        let conf = run.dir.join("nginx/nginx.conf");
        let setup = format!(
            "mkdir -p {tmp} && {content}printf '%s' {text} > {conf_q}",
            tmp = run.quoted(&run.dir.join("nginx/tmp")),
            content = self.content.prepare(run),
            text = shell_quote(&nginx_conf(run.dir, &self.content.root(run), run.port)),
            conf_q = run.quoted(&conf),
        );
        let (prepare, env) = match &self.governor {
            Governor::Kernel(k) => (route_congctl(k), String::new()),
            Governor::Shim { cc, underlay } => (
                String::new(),
                format!(
                    "env LD_PRELOAD={} ALCC_CC={} ALCC_UNDERLAY={} ALCC_EXIT_LINGER={EXIT_LINGER_S} ALCC_LOG={} ",
                    run.quoted(&NginxScheme::shim_library(run.alcc)),
                    shell_quote(cc),
                    shell_quote(underlay),
                    run.quoted(&run.dir.join("alcc.log")),
                ),
            ),
        };
        format!(
            "{setup}{prepare} && {alcc} rusage --out {rusage} -- timeout -s TERM {seconds} {env}nginx -c {conf_q} \
             -p {prefix} -e {log}; s=$?{remove}; exit $s",
            alcc = run.alcc_q(),
            rusage = run.quoted(&run.rusage()),
            seconds = run.server_seconds,
            conf_q = run.quoted(&conf),
            prefix = run.quoted(&run.dir.join("nginx")),
            log = run.quoted(&run.dir.join("nginx/error.log")),
            remove = self.content.remove(run),
        )
    }

    fn client(&self, run: &RunContext) -> Client {
        self.content.client(run)
    }

    fn needs(&self) -> Vec<Need> {
        let mut needs = vec![
            Need::Program {
                name: "nginx",
                install: "scripts/setup.sh installs it (apt-get install nginx-light)",
            },
            Need::Program { name: "timeout", install: "coreutils" },
            Need::Program { name: "truncate", install: "coreutils" },
            Need::Program { name: "ip", install: "iproute2" },
        ];
        needs.extend(self.content.needs());
        needs.extend(self.governor.needs());
        needs
    }

    fn warning(&self) -> Option<String> {
        self.governor.warning()
    }

    fn upload(&self) -> Result<Box<dyn Transfer + '_>, String> {
        Err("nginx serves downloads; an unmodified uploader is tcp-K (curl -T)".into())
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
    fn plain_and_shim_names_cannot_be_mistaken() {
        let plain = NginxScheme::parse("tcp-cubic").unwrap();
        assert_eq!(plain.governor, Governor::Kernel("cubic".into()));
        assert_eq!((plain.cc(), plain.underlay()), ("none", "cubic"));
        assert!(plain.label().contains("plain kernel TCP (cubic)"), "{}", plain.label());
        let shim = NginxScheme::parse("shim-verus").unwrap();
        assert_eq!((shim.cc(), shim.underlay()), ("verus", "cubic"));
        assert!(shim.label().contains("under libalcc_preload.so: alcc's verus above kernel cubic"));
        let shim = NginxScheme::parse("shim-copa:delta=0.1@reno").unwrap();
        assert_eq!((shim.cc(), shim.underlay()), ("copa:delta=0.1", "reno"));
        for bad in ["copa", "tcp-vegas", "shim-", "shim-none", "shim-copa@", "shim-co pa", "shim-sprout"] {
            assert!(NginxScheme::parse(bad).is_err(), "{bad}");
        }
        assert!(NginxScheme::parse("shim-sprout").unwrap_err().contains("framed mode"));
        assert!(NginxScheme::parse("shim-nonexistent").unwrap().warning().is_some());
    }

    #[test]
    fn the_server_writes_its_config_and_stops_by_itself() {
        let plain = NginxScheme::parse("tcp-bbr").unwrap().server(&run());
        assert!(
            plain.starts_with(
                "mkdir -p /o/d/nginx/tmp && mkdir -p /o/d/www && truncate -s 100 /o/d/www/download.bin"
            ),
            "{plain}"
        );
        assert!(
            plain.contains(
                " && ip route show | { while read -r r; do ip route change $r congctl bbr || exit 1; done; } && "
            ),
            "{plain}"
        );
        assert!(
            plain.contains(
                "/t/release/alcc rusage --out /o/d/rusage.json -- timeout -s TERM 22 nginx -c \
                 /o/d/nginx/nginx.conf -p /o/d/nginx -e /o/d/nginx/error.log; s=$?; rm -f /o/d/www/download.bin"
            ),
            "{plain}"
        );
        assert!(!plain.contains("LD_PRELOAD"));
        let shim = NginxScheme::parse("shim-copa").unwrap().server(&run());
        assert!(
            shim.contains(
                "timeout -s TERM 22 env LD_PRELOAD=/t/release/libalcc_preload.so ALCC_CC=copa \
                 ALCC_UNDERLAY=cubic ALCC_EXIT_LINGER=1 ALCC_LOG=/o/d/alcc.log nginx -c"
            ),
            "{shim}"
        );
        assert!(!shim.contains("congctl"));
        let conf = nginx_conf(Path::new("/o/d"), Path::new("/o/d/www"), 9000);
        for line in
            ["sendfile on;", "worker_processes 2;", "listen 9000;", "root \"/o/d/www\";", "daemon off;"]
        {
            assert!(conf.contains(line), "{line}: {conf}");
        }
        assert_eq!(NginxScheme::parse("tcp-cubic").unwrap().client(&run()).deadline_status, 28);
    }

    #[test]
    fn the_hls_form_serves_the_made_stream_to_ffmpeg() {
        let plain = NginxScheme::parse("hls-tcp-cubic").unwrap();
        assert_eq!(plain, NginxScheme { governor: Governor::Kernel("cubic".into()), content: Content::Hls });
        assert!(plain.label().ends_with("sendfile, an HLS stream to ffmpeg"), "{}", plain.label());
        let shim = NginxScheme::parse("hls-shim-copa@reno").unwrap();
        assert_eq!((shim.cc(), shim.underlay(), shim.content), ("copa", "reno", Content::Hls));
        assert_eq!(NginxScheme::parse("shim-copa").unwrap().content, Content::File);
        for bad in ["hls-", "hls-copa", "hls-hls-tcp-cubic", "hls-shim-sprout"] {
            assert!(NginxScheme::parse(bad).is_err(), "{bad}");
        }
        let server = shim.server(&run());
        // No file to make or remove: nginx serves the stream beside the alcc binary.
        assert!(server.starts_with("mkdir -p /o/d/nginx/tmp && printf"), "{server}");
        assert!(server.contains("root \"/t/release/video\";"), "{server}");
        assert!(server.contains("application/vnd.apple.mpegurl m3u8;"), "{server}");
        assert!(server.ends_with("-e /o/d/nginx/error.log; s=$?; exit $s"), "{server}");
        assert!(server.contains("ALCC_CC=copa ALCC_UNDERLAY=reno"), "{server}");
        let client = shim.client(&run());
        assert_eq!(
            client.command,
            "timeout 20 ffmpeg -nostdin -v error -i \"http://$ALCC_SERVER:9000/hls/stream.m3u8\" -map 0 -c copy \
             -f null -"
        );
        assert_eq!(client.deadline_status, 124);
        let needs = shim.needs();
        assert!(needs.iter().any(|n| matches!(n, Need::Program { name: "ffmpeg", .. })), "{needs:?}");
        assert!(!needs.iter().any(|n| matches!(n, Need::Program { name: "curl", .. })), "{needs:?}");
        assert!(
            needs
                .iter()
                .any(|n| matches!(n, Need::File { path, .. } if path.ends_with("video/hls/stream.m3u8"))),
            "{needs:?}"
        );
    }
}
