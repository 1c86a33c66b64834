//! `alcc get HOST:PORT`: a download client over plain TCP (like any unmodified client), with
//! `--drwa` governing its advertised window (DRWA) or `--rcvbuf N` a static receive buffer
//! (the phone vendors' cap), or with `--mode framed` the receiving side of framed mode (ACK
//! frames back, and Sprout's forecaster), reporting bytes, time and throughput.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::Instant;

use alcc::{AlccReceiver, Mode, Options, ReceiveWindow};
use anyhow::{bail, Context, Result};

/// Arguments of `alcc get`.
#[derive(clap::Args, Debug)]
pub struct GetArgs {
    /// Server address, `HOST:PORT` (`[::1]:PORT` for IPv6).
    addr: String,
    /// Write the data here (default: count it and throw it away).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Send an HTTP/1.1 GET and strip the response head.
    #[arg(long)]
    http: bool,
    /// `kernel`: a plain TCP client (the server runs alcc alone); `framed` or `udp`: the
    /// receiving side of those modes, for `alcc serve --mode framed|udp` (udp: nothing is
    /// retransmitted; duplicates are dropped, and when bytes of lost datagrams are missing at
    /// the sender's close, `alcc get` fails naming what was sent and what arrived).
    #[arg(long, default_value = "kernel")]
    mode: Mode,
    /// Kernel mode: DRWA sets the advertised window (IMC 2012; `drwa[:lambda=3,alpha=0.875,
    /// floor=5792]`, bare `--drwa` for the paper's parameters), with TCP_WINDOW_CLAMP on a
    /// receive buffer locked before connect.
    #[arg(long, num_args = 0..=1, default_missing_value = "drwa", value_name = "SPEC")]
    drwa: Option<String>,
    /// Kernel mode: the receive buffer in bytes, set before connect. Alone: a static cap (the
    /// phone vendors' small buffer); with --drwa: DRWA's buffer (default 8 MiB, or what an
    /// unprivileged process is granted).
    #[arg(long, value_name = "BYTES")]
    rcvbuf: Option<u64>,
}

impl GetArgs {
    /// The receive-window control asked for, `None` for a plain client.
    fn receive_window(&self) -> Result<Option<ReceiveWindow>> {
        let spec = match (&self.drwa, self.rcvbuf) {
            (None, None) => return Ok(None),
            (None, Some(b)) => format!("static:rcvbuf={b}"),
            (Some(d), None) => d.clone(),
            (Some(d), Some(b)) => format!("{d}{}rcvbuf={b}", if d.contains(':') { "," } else { ":" }),
        };
        if !spec.starts_with("drwa") && !spec.starts_with("static") {
            bail!("--drwa takes a DRWA specification, drwa[:lambda=L,alpha=A,floor=BYTES]; got `{spec}`");
        }
        Ok(Some(spec.parse().with_context(|| format!("receive window `{spec}`"))?))
    }
}

/// Runs the client.
pub fn run(args: GetArgs) -> Result<()> {
    if args.mode != Mode::Kernel {
        if args.drwa.is_some() || args.rcvbuf.is_some() {
            bail!("--drwa and --rcvbuf need --mode kernel (a plain TCP client)");
        }
        if args.http {
            bail!("--http needs --mode kernel: framed and udp modes have no HTTP request");
        }
        return run_alcc(&args);
    }
    let start = Instant::now();
    let window = args.receive_window()?;
    let (body, expect, stats) = match window {
        None => {
            let mut stream =
                TcpStream::connect(&args.addr).with_context(|| format!("connecting to {}", args.addr))?;
            let (body, expect) = download(&mut stream, &args)?;
            (body, expect, None)
        }
        Some(w) => {
            let options = Options::default().receive_window(w);
            let mut stream = AlccReceiver::connect(&args.addr, &options)
                .with_context(|| format!("connecting to {}", args.addr))?;
            let (body, expect) = download(&mut stream, &args)?;
            (body, expect, stream.stats().window)
        }
    };
    let secs = start.elapsed().as_secs_f64();
    eprintln!("alcc get: {body} bytes in {secs:.3} s ({:.2} Mbit/s)", body as f64 * 8.0 / secs / 1e6);
    if let Some(w) = stats {
        eprintln!("alcc get: {w}");
    }
    if let Some(e) = expect {
        if e != body {
            bail!("truncated: Content-Length {e}, received {body}");
        }
    }
    Ok(())
}

/// Sends the HTTP request if asked, reads to the end into `--out`; returns the body's length
/// and the Content-Length announced.
fn download(stream: &mut (impl Read + Write), args: &GetArgs) -> Result<(u64, Option<u64>)> {
    let mut out = open_out(args)?;
    let mut buf = vec![0u8; 256 << 10];
    let mut expect = None;
    let mut body = 0u64;
    if args.http {
        write!(stream, "GET / HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", args.addr)?;
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            if stream.read(&mut byte)? == 0 || head.len() > 16 << 10 {
                bail!("bad HTTP response head");
            }
            head.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&head);
        if !head.starts_with("HTTP/1.1 200") {
            bail!("server answered {}", head.lines().next().unwrap_or_default());
        }
        expect = head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length").then(|| v.trim().parse::<u64>().ok())?
        });
    }
    loop {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n])?;
        body += n as u64;
    }
    out.flush()?;
    Ok((body, expect))
}

fn open_out(args: &GetArgs) -> Result<Box<dyn Write>> {
    Ok(match &args.out {
        Some(p) => {
            Box::new(BufWriter::new(File::create(p).with_context(|| format!("creating {}", p.display()))?))
        }
        None => Box::new(io::sink()),
    })
}

/// The receiving side of framed or UDP mode.
fn run_alcc(args: &GetArgs) -> Result<()> {
    let start = Instant::now();
    let options = Options::default().mode(args.mode);
    let mut stream = AlccReceiver::connect(&args.addr, &options)
        .with_context(|| format!("connecting to {}", args.addr))?;
    let mut out = open_out(args)?;
    let mut buf = vec![0u8; 256 << 10];
    let mut body = 0u64;
    loop {
        let n = stream.read(&mut buf).with_context(|| format!("{} receive", args.mode))?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n])?;
        body += n as u64;
    }
    out.flush()?;
    let stats = stream.stats();
    stream.close(Some(std::time::Duration::from_secs(10)))?;
    let secs = start.elapsed().as_secs_f64();
    let sent = stats.sender_sent.map_or(String::new(), |s| format!(", the sender sent {s} bytes"));
    eprintln!(
        "alcc get: {body} bytes in {secs:.3} s ({:.2} Mbit/s), {}: sender `{}`, {} data frames, {} reports, \
         {} duplicates dropped{sent}",
        body as f64 * 8.0 / secs / 1e6,
        args.mode,
        stats.sender_spec.as_deref().unwrap_or("?"),
        stats.frames,
        stats.reports,
        stats.duplicates
    );
    Ok(())
}
