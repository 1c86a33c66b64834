//! `alcc get HOST:PORT`: a download client over plain TCP (like any unmodified client), or
//! with `--mode framed` the receiving side of framed mode (ACK frames back, and Sprout's
//! forecaster), reporting bytes, time and throughput.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::Instant;

use alcc::{AlccReceiver, Mode, Options};
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
}

/// Runs the client.
pub fn run(args: GetArgs) -> Result<()> {
    if args.mode != Mode::Kernel {
        if args.http {
            bail!("--http needs --mode kernel: framed and udp modes have no HTTP request");
        }
        return run_alcc(&args);
    }
    let start = Instant::now();
    let mut stream =
        TcpStream::connect(&args.addr).with_context(|| format!("connecting to {}", args.addr))?;
    let mut out = open_out(&args)?;
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
    let secs = start.elapsed().as_secs_f64();
    eprintln!("alcc get: {body} bytes in {secs:.3} s ({:.2} Mbit/s)", body as f64 * 8.0 / secs / 1e6);
    if let Some(e) = expect {
        if e != body {
            bail!("truncated: Content-Length {e}, received {body}");
        }
    }
    Ok(())
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
