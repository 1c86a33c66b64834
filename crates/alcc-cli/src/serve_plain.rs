//! `alcc serve-plain`: the plain-TCP baseline. A download server with no alcc engine code on
//! the data path: each client's bytes go from a file (or an in-memory file) to the socket by
//! sendfile(2), in the kernel, with the kernel's own congestion control (`--underlay`), no
//! pacing, no timestamps and no TCP_INFO polling. What a web server serving a static file does;
//! the harness's `tcp-*` schemes and the CPU table's "relative to plain TCP" use it.
//!
//! `--bytes N` serves the same bytes as `alcc serve --bytes N` ([`crate::serve::content_block`]
//! over and over, from a memfd, sent by sendfile like a file in the page cache); `--file F` serves F.

use std::fs::File;
use std::io::{self, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::accept_loop::serve_each;
use crate::sys;

/// Largest sendfile(2) call, bytes (the kernel caps one call near 2 GiB).
const MAX_CALL: u64 = 1 << 30;

/// Arguments of `alcc serve-plain`.
#[derive(clap::Args, Debug, Clone)]
pub struct ServePlainArgs {
    /// Port to listen on (0 picks a free one; the address is printed on stdout).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Address to listen on (`::` for IPv6).
    #[arg(long, default_value = "0.0.0.0")]
    bind: String,
    /// Kernel congestion control of every connection (net.ipv4.tcp_allowed_congestion_control
    /// lists what an unprivileged user may choose).
    #[arg(long, default_value = "cubic")]
    underlay: String,
    /// Serve this file.
    #[arg(long, conflicts_with = "bytes")]
    file: Option<PathBuf>,
    /// Serve this many bytes (the first 8 MiB of `alcc serve`'s pattern, repeated).
    #[arg(long)]
    bytes: Option<u64>,
    /// Answer one HTTP/1.1 GET per connection (so that `curl` works).
    #[arg(long)]
    http: bool,
    /// Exit after serving this many clients.
    #[arg(long, alias = "clients")]
    count: Option<u64>,
    /// Stop each download after this many seconds (the connection is reset).
    #[arg(long)]
    seconds: Option<f64>,
    /// At exit, write this process's CPU time and peak memory (getrusage) here as JSON.
    #[arg(long)]
    rusage: Option<PathBuf>,
}

/// Where the bytes come from: a file of `len` bytes, or an in-memory block served in a loop.
struct Source {
    file: File,
    len: u64,
    repeat: bool,
}

/// Runs the server; with `--rusage`, writes the process's resource usage when it ends (also
/// after an error).
pub fn run(args: ServePlainArgs) -> Result<()> {
    let rusage = args.rusage.clone();
    let result = serve(args);
    if let Some(path) = rusage {
        crate::rusage::write_self(&path)?;
    }
    result
}

fn source(args: &ServePlainArgs) -> Result<(Source, u64)> {
    match (&args.file, args.bytes) {
        (Some(path), _) => {
            let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
            let len = file.metadata().with_context(|| format!("reading {}", path.display()))?.len();
            Ok((Source { file, len, repeat: false }, len))
        }
        (None, Some(n)) => {
            let mut file = sys::memfd("alcc-serve-plain").context("memfd_create")?;
            file.write_all(crate::serve::content_block()).context("filling the memfd")?;
            Ok((Source { file, len: crate::serve::BLOCK as u64, repeat: true }, n))
        }
        (None, None) => bail!("give --file F or --bytes N"),
    }
}

/// The kernel congestion controls an unprivileged process may choose, for error messages.
fn allowed_ccs() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string())
}

fn set_underlay(fd: std::os::fd::RawFd, underlay: &str) -> Result<()> {
    sys::set_tcp_congestion(fd, underlay).map_err(|e| {
        anyhow::anyhow!(
            "kernel congestion control `{underlay}` refused: {e} (allowed without privileges: {}; \
             /proc/sys/net/ipv4/tcp_available_congestion_control lists what is loaded)",
            allowed_ccs()
        )
    })
}

fn serve(args: ServePlainArgs) -> Result<()> {
    let (source, size) = source(&args)?;
    let bind = if args.bind.contains(':') {
        format!("[{}]:{}", args.bind, args.port)
    } else {
        format!("{}:{}", args.bind, args.port)
    };
    let listener = TcpListener::bind(&bind).with_context(|| format!("binding {bind}"))?;
    // Set on the listener, accepted connections inherit it; a refused name fails here, before
    // any client connects.
    set_underlay(listener.as_raw_fd(), &args.underlay)?;
    println!("alcc serve-plain: listening on {}", listener.local_addr()?);
    io::stdout().flush()?;
    let count = args.count;
    serve_each(
        "alcc serve-plain",
        count,
        || listener.accept(),
        move |stream, peer, _| {
            let start = Instant::now();
            let result = serve_one(stream, &args, &source, size);
            let secs = start.elapsed().as_secs_f64();
            match result {
                Ok((n, end)) => eprintln!(
                    "alcc serve-plain: {peer}: {n} bytes in {secs:.3} s ({:.2} Mbit/s, {end})",
                    n as f64 * 8.0 / secs / 1e6
                ),
                Err(e) => eprintln!("alcc serve-plain: {peer}: failed after {secs:.3} s: {e:#}"),
            }
        },
    );
    Ok(())
}

/// Reads an HTTP request head (up to the blank line); returns its first line.
fn read_request(stream: &mut TcpStream) -> Result<String> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let line = crate::http_head::read_first_line(stream)?;
    stream.set_read_timeout(None)?;
    Ok(line)
}

/// Serves one client; returns the bytes sent and how the download ended.
fn serve_one(
    mut stream: TcpStream,
    args: &ServePlainArgs,
    source: &Source,
    size: u64,
) -> Result<(u64, &'static str)> {
    set_underlay(stream.as_raw_fd(), &args.underlay)?;
    if args.http {
        let line = read_request(&mut stream)?;
        if !line.starts_with("GET ") {
            stream.write_all(
                b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )?;
            bail!("not a GET: {line:?}");
        }
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {size}\r\n\
             Connection: close\r\n\r\n"
        );
        stream.write_all(head.as_bytes())?;
    }
    let deadline = args
        .seconds
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| Instant::now() + Duration::from_secs_f64(s));
    let mut sent = 0u64;
    while sent < size {
        if let Some(deadline) = deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                sys::set_linger_zero(stream.as_raw_fd())?;
                return Ok((sent, "stopped at --seconds, connection reset"));
            }
            // A blocked sendfile returns when the deadline comes (SO_SNDTIMEO).
            stream.set_write_timeout(Some(left))?;
        }
        let (mut offset, count) = if source.repeat {
            let at = sent % source.len;
            (at, (source.len - at).min(size - sent))
        } else {
            (sent, size - sent)
        };
        let mut off = i64::try_from(offset).context("file offset beyond 2^63")?;
        match sys::sendfile(
            stream.as_raw_fd(),
            source.file.as_raw_fd(),
            &mut off,
            count.min(MAX_CALL) as usize,
        ) {
            Ok(0) => bail!("the file shrank while serving ({sent} of {size} bytes sent)"),
            Ok(n) => {
                offset += n as u64;
                sent += n as u64;
                debug_assert_eq!(off as u64, offset);
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset) => {
                return Ok((sent, "the client left"));
            }
            Err(e) => return Err(e).context("sendfile"),
        }
    }
    // All bytes are in the kernel: it delivers them after close, as for any TCP writer.
    let _ = stream.shutdown(Shutdown::Write);
    Ok((sent, "complete"))
}
