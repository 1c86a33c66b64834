//! `alcc serve --receive`: the upload server, the other end of `alcc put` and of the Java
//! uploader (`alcc-upload.jar`). Every client that connects sends; the server reads until the
//! end of the stream, optionally writes what it got to `--out DIR/upload-N`, and prints one
//! line per upload.
//!
//! - `--mode framed` (the default with `--receive`): an [`AlccReceiver`] per connection, which
//!   acknowledges every data frame and runs the receiver-side model that the sender's Hello
//!   names (Sprout's forecaster); a connection that breaks the wire format fails alone.
//! - `--mode kernel`: a plain TCP receiver (the sender runs alcc alone, or is plain TCP);
//!   with `--http`, one HTTP/1.1 `PUT` or `POST` with a `Content-Length` per connection
//!   (`curl -T FILE`), its head parsed by `httparse`; `Expect: 100-continue` is answered.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use alcc::{AlccReceiver, Mode, Options};
use anyhow::{bail, Context, Result};

use crate::accept_loop::serve_each;

/// The largest HTTP request head accepted.
const MAX_HEAD: usize = 16 << 10;

/// The largest number of headers in a request head.
const MAX_HEADERS: usize = 64;

/// How the upload server runs (from `alcc serve --receive`'s arguments).
#[derive(Debug, Clone)]
pub struct ReceiveConfig {
    /// `HOST:PORT` to listen on.
    pub bind: String,
    /// `framed` (alcc's frames) or `kernel` (plain TCP).
    pub mode: Mode,
    /// One HTTP PUT/POST per connection (kernel mode only).
    pub http: bool,
    /// Write each upload to `DIR/upload-N` (N counts connections from 0).
    pub out: Option<PathBuf>,
    /// Exit after this many uploads.
    pub count: Option<u64>,
    /// Stop each upload after this many seconds (the connection is reset).
    pub seconds: Option<f64>,
    /// How long the last acknowledgements may take to leave.
    pub close_timeout: Duration,
}

/// How one upload ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// The sender ended the stream.
    Complete,
    /// `--seconds` stopped it.
    Deadline,
}

/// What one connection delivered.
struct Upload {
    bytes: u64,
    ending: Ending,
    /// Framed mode: what the receiver saw (the sender's controller, frames, reports).
    framed: Option<alcc::ReceiverStats>,
}

/// Runs the upload server.
pub fn run(cfg: ReceiveConfig) -> Result<()> {
    match cfg.mode {
        Mode::Framed if cfg.http => {
            bail!("--http needs --mode kernel: in framed mode the sender frames its bytes")
        }
        Mode::Udp => bail!(
            "--receive runs over TCP (framed or kernel mode); UDP mode's receiver is `alcc get --mode udp`"
        ),
        _ => {}
    }
    if let Some(s) = cfg.seconds.filter(|s| !(s.is_finite() && *s >= 0.0)) {
        bail!("--seconds {s}: must be a non-negative number");
    }
    if let Some(dir) = &cfg.out {
        if !dir.is_dir() {
            bail!("--out {}: not a directory (each upload is written to DIR/upload-N)", dir.display());
        }
    }
    let listener = TcpListener::bind(&cfg.bind).with_context(|| format!("binding {}", cfg.bind))?;
    println!("alcc serve: receiving ({}) on {}", cfg.mode, listener.local_addr()?);
    io::stdout().flush()?;
    let count = cfg.count;
    serve_each(
        "alcc serve",
        count,
        || listener.accept(),
        move |tcp, peer, n| report(peer, cfg.mode, receive_one(tcp, &cfg, n)),
    );
    Ok(())
}

/// Prints the line of one upload.
fn report(peer: SocketAddr, mode: Mode, result: (Instant, Result<Upload>)) {
    let (start, result) = result;
    let secs = start.elapsed().as_secs_f64();
    match result {
        Ok(u) => {
            let framed = u.framed.map_or_else(String::new, |s| {
                format!(
                    ": sender `{}`, {} data frames acknowledged, {} reports",
                    s.sender_spec.as_deref().unwrap_or("?"),
                    s.frames,
                    s.reports
                )
            });
            let end = if u.ending == Ending::Deadline { ", stopped at --seconds" } else { "" };
            eprintln!(
                "alcc serve: {peer}: received {} bytes in {secs:.3} s ({:.2} Mbit/s), {mode}{framed}{end}",
                u.bytes,
                u.bytes as f64 * 8.0 / secs / 1e6
            );
        }
        Err(e) => eprintln!("alcc serve: {peer}: upload failed after {secs:.3} s: {e:#}"),
    }
}

/// Receives one upload on `tcp` (connection number `n`).
fn receive_one(tcp: TcpStream, cfg: &ReceiveConfig, n: u64) -> (Instant, Result<Upload>) {
    let start = Instant::now();
    let deadline = cfg.seconds.map(|s| start + Duration::from_secs_f64(s));
    let result = (|| {
        let mut sink = Sink::open(cfg.out.as_deref(), n)?;
        match cfg.mode {
            Mode::Framed => {
                let r = AlccReceiver::from_tcp(tcp, &Options::default().mode(Mode::Framed))?;
                receive_framed(r, &mut sink, deadline, cfg.close_timeout)
            }
            _ => receive_plain(tcp, cfg.http, &mut sink, deadline),
        }
    })();
    (start, result)
}

/// Where received bytes go: a file, or nowhere.
struct Sink {
    file: Option<(PathBuf, BufWriter<File>)>,
    bytes: u64,
}

impl Sink {
    fn open(dir: Option<&Path>, n: u64) -> Result<Sink> {
        let file = dir
            .map(|d| {
                let path = d.join(format!("upload-{n}"));
                let f = File::create(&path).with_context(|| format!("creating {}", path.display()))?;
                anyhow::Ok((path, BufWriter::new(f)))
            })
            .transpose()?;
        Ok(Sink { file, bytes: 0 })
    }

    fn write(&mut self, data: &[u8]) -> Result<()> {
        if let Some((path, f)) = self.file.as_mut() {
            f.write_all(data).with_context(|| format!("writing {}", path.display()))?;
        }
        self.bytes += data.len() as u64;
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        if let Some((path, f)) = self.file.as_mut() {
            f.flush().with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    }
}

/// The time left until `deadline` as a read timeout; `Some(ZERO)` once it passed.
fn left(deadline: Option<Instant>) -> Option<Duration> {
    deadline.map(|d| d.saturating_duration_since(Instant::now()))
}

fn timed_out(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock)
}

/// Framed mode: the sender's frames through an [`AlccReceiver`] (ACKs and the model inside
/// its `read`).
fn receive_framed(
    mut r: AlccReceiver,
    sink: &mut Sink,
    deadline: Option<Instant>,
    close_timeout: Duration,
) -> Result<Upload> {
    let mut buf = vec![0u8; 256 << 10];
    loop {
        let limit = left(deadline);
        if limit.is_some_and(|l| l.is_zero()) {
            return deadline_reached_framed(r, sink);
        }
        r.set_read_timeout(limit);
        let n = match r.read(&mut buf) {
            Ok(n) => n,
            Err(e) if timed_out(&e) && deadline.is_some() => return deadline_reached_framed(r, sink),
            Err(e) => {
                return Err(e).with_context(|| format!("framed receive, after {} bytes", sink.bytes));
            }
        };
        if n == 0 {
            break;
        }
        sink.write(&buf[..n])?;
    }
    sink.finish()?;
    let stats = r.stats();
    r.close(Some(close_timeout)).context("framed receive: sending the last acknowledgements")?;
    Ok(Upload { bytes: sink.bytes, ending: Ending::Complete, framed: Some(stats) })
}

fn deadline_reached_framed(r: AlccReceiver, sink: &mut Sink) -> Result<Upload> {
    sink.finish()?;
    let stats = r.stats();
    r.abort();
    Ok(Upload { bytes: sink.bytes, ending: Ending::Deadline, framed: Some(stats) })
}

/// Kernel mode: plain TCP, optionally one HTTP PUT/POST.
fn receive_plain(
    mut tcp: TcpStream,
    http: bool,
    sink: &mut Sink,
    deadline: Option<Instant>,
) -> Result<Upload> {
    let mut buf = vec![0u8; 256 << 10];
    let mut expect = None;
    if http {
        tcp.set_read_timeout(Some(
            left(deadline).unwrap_or(Duration::from_secs(10)).max(Duration::from_millis(1)),
        ))?;
        let (length, body_start) = read_put_head(&mut tcp)?;
        sink.write(&body_start)?;
        expect = Some(length);
    }
    let ending = loop {
        if expect.is_some_and(|len| sink.bytes >= len) {
            break Ending::Complete;
        }
        let limit = left(deadline);
        if limit.is_some_and(|l| l.is_zero()) {
            break Ending::Deadline;
        }
        // A zero timeout would mean "forever" to std: `left` is above zero here.
        tcp.set_read_timeout(limit)?;
        let want = expect.map_or(buf.len(), |len| (len - sink.bytes).min(buf.len() as u64) as usize);
        match tcp.read(&mut buf[..want]) {
            Ok(0) => break Ending::Complete,
            Ok(n) => sink.write(&buf[..n])?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if timed_out(&e) && deadline.is_some() => break Ending::Deadline,
            Err(e) => return Err(e).with_context(|| format!("receive, after {} bytes", sink.bytes)),
        }
    };
    sink.finish()?;
    match ending {
        Ending::Deadline => {
            let _ = alcc::sys::set_linger_zero(tcp.as_raw_fd());
        }
        Ending::Complete => {
            if let Some(len) = expect {
                if sink.bytes < len {
                    bail!("truncated: Content-Length {len}, received {}", sink.bytes);
                }
                tcp.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")?;
            }
            let _ = tcp.shutdown(std::net::Shutdown::Write);
        }
    }
    Ok(Upload { bytes: sink.bytes, ending, framed: None })
}

/// What a request head asks for.
#[derive(Debug, PartialEq, Eq)]
enum Head {
    /// A PUT or POST of this many body bytes; whether the client waits for `100 Continue`.
    Put { length: u64, expect_continue: bool },
    /// Not complete yet.
    Partial,
}

/// Why a request is refused: the status line to answer with and the error to report.
#[derive(Debug, PartialEq, Eq)]
struct Refusal {
    status: &'static str,
    why: String,
}

/// Parses an HTTP/1.1 request head (with `httparse`).
fn parse_put_head(bytes: &[u8]) -> Result<(Head, usize), Refusal> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let used = match req.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok((Head::Partial, 0)),
        Err(e) => {
            return Err(Refusal { status: "400 Bad Request", why: format!("not an HTTP request: {e}") })
        }
    };
    let method = req.method.unwrap_or_default();
    if !matches!(method, "PUT" | "POST") {
        return Err(Refusal {
            status: "405 Method Not Allowed",
            why: format!("{method}: this server receives uploads (PUT or POST)"),
        });
    }
    let header = |name: &str| {
        req.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
    };
    if header("transfer-encoding").is_some() {
        return Err(Refusal {
            status: "411 Length Required",
            why: "chunked uploads are not supported: send a Content-Length (curl -T FILE does)".into(),
        });
    }
    let length = match header("content-length").map(|v| v.parse::<u64>()) {
        Some(Ok(n)) => n,
        Some(Err(_)) => return Err(Refusal { status: "400 Bad Request", why: "bad Content-Length".into() }),
        None => return Err(Refusal { status: "411 Length Required", why: "no Content-Length".into() }),
    };
    let expect_continue = header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
    Ok((Head::Put { length, expect_continue }, used))
}

/// Reads a PUT/POST head from `tcp`, answers `100 Continue` when asked; returns the body's
/// length and the body bytes that came with the head. A refused request is answered with its
/// status before the error is returned.
fn read_put_head(tcp: &mut TcpStream) -> Result<(u64, Vec<u8>)> {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = tcp.read(&mut buf).context("reading the request head")?;
        if n == 0 {
            bail!("the connection closed before the request head ended");
        }
        head.extend_from_slice(&buf[..n]);
        match parse_put_head(&head) {
            Ok((Head::Put { length, expect_continue }, used)) => {
                if expect_continue {
                    tcp.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
                }
                return Ok((length, head.split_off(used)));
            }
            Ok((Head::Partial, _)) if head.len() <= MAX_HEAD => {}
            Ok((Head::Partial, _)) => {
                refuse(tcp, "431 Request Header Fields Too Large");
                bail!("request head longer than {MAX_HEAD} bytes");
            }
            Err(r) => {
                refuse(tcp, r.status);
                bail!("{} ({})", r.why, r.status);
            }
        }
    }
}

fn refuse(tcp: &mut TcpStream, status: &str) {
    let _ = write!(tcp, "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_put_head_gives_its_length_and_where_the_body_starts() {
        let req = b"PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\nExpect: 100-continue\r\n\r\nbody";
        let (head, used) = parse_put_head(req).unwrap();
        assert_eq!(head, Head::Put { length: 12, expect_continue: true });
        assert_eq!(&req[used..], b"body");
        let (head, _) = parse_put_head(b"POST / HTTP/1.1\r\ncontent-length: 0\r\n\r\n").unwrap();
        assert_eq!(head, Head::Put { length: 0, expect_continue: false });
        assert_eq!(parse_put_head(b"PUT / HTTP/1.1\r\nContent-Le").unwrap().0, Head::Partial);
    }

    #[test]
    fn other_requests_are_refused_with_a_status() {
        let e = parse_put_head(b"GET / HTTP/1.1\r\n\r\n").unwrap_err();
        assert_eq!(e.status, "405 Method Not Allowed");
        let e = parse_put_head(b"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap_err();
        assert!(e.status.starts_with("411") && e.why.contains("curl -T FILE"), "{e:?}");
        let e = parse_put_head(b"PUT / HTTP/1.1\r\n\r\n").unwrap_err();
        assert_eq!((e.status, e.why.as_str()), ("411 Length Required", "no Content-Length"));
        let e = parse_put_head(b"PUT / HTTP/1.1\r\nContent-Length: -3\r\n\r\n").unwrap_err();
        assert_eq!(e.status, "400 Bad Request");
        let e = parse_put_head(b"\x01\x02 garbage\r\n\r\n").unwrap_err();
        assert_eq!(e.status, "400 Bad Request");
    }
}
