//! [`ReceiveWindow`]: how the receiving side of a kernel-mode connection (a plain TCP client
//! of any server) governs the window it advertises, and [`WindowControl`], which applies it
//! on the reading thread.
//!
//! - `kernel`: Linux's own receive-buffer autotuning (Dynamic Right-Sizing), nothing set.
//! - `static:rcvbuf=N`: the phone vendors' fix (DRWA paper, section 3.1, Algorithm 2): a small
//!   fixed receive buffer of `N` bytes, set before connect. Vendors cap autotuning with
//!   `tcp_rmem`'s maximum; a buffer set with SO_RCVBUF is that cap from the first byte on
//!   (autotuning would start lower and grow to it).
//! - `drwa[:lambda=3,alpha=0.875,floor=5792,rcvbuf=N]`: DRWA ([`alcc_cc::drwa`]), the window
//!   computed from TCP_INFO once per RTT and applied with TCP_WINDOW_CLAMP.
//!
//! Two kernel facts shape the DRWA setup. Autotuning rewrites the window clamp whenever it
//! grows the buffer (`tcp_rcv_space_adjust`), so the buffer is locked by setting SO_RCVBUF,
//! and that must happen before connect: the window scale is chosen in the SYN. The clamp
//! itself is set only after the handshake, because a clamp present at the SYN also caps the
//! window scale. The buffer defaults to 8 MiB (a window of about 4 MiB): with CAP_NET_ADMIN it
//! is forced (SO_RCVBUFFORCE); without it Linux grants at most 2 x `net.core.rmem_max`, and
//! DRWA then runs with what was granted, reported in [`WindowStats::rcvbuf`]. An explicit
//! `rcvbuf=` (and the static cap) must be granted in full, or connecting fails naming
//! `net.core.rmem_max`.
//!
//! The clamp applied is the model's window but at least four segments of the receiver's MSS
//! ([`MIN_SEGMENTS`]: fewer leave the delayed ACK to its timer).
//!
//! No stall: the advertised window is never made smaller than what the sender already has in
//! flight because Linux does not shrink an offered window (RFC 9293 section 3.8.6): a lower
//! clamp only stops the right edge from advancing until data below it arrived. A kernel told
//! to shrink (`net.ipv4.tcp_shrink_window = 1`, Linux 6.5+) is refused when connecting.

use std::fmt;
use std::io;
use std::os::fd::RawFd;
use std::str::FromStr;
use std::time::Duration;

use alcc_cc::drwa::{Drwa, DrwaParams, Sample};
use alcc_cc::{Params, Time};

use crate::error::{Error, Result};
use crate::sys;

/// DRWA's receive buffer when none is given: 8 MiB.
pub const DEFAULT_DRWA_RCVBUF: u64 = 8 << 20;

/// How often at most TCP_INFO is read while data arrives (the model updates once per RTT).
const SAMPLE_GAP: Duration = Duration::from_millis(1);

/// The smallest clamp in segments of the receiver's MSS. Below two full segments the
/// receiver's delayed ACK waits for its timer (40 ms) instead of acknowledging every second
/// segment, and the sender stalls: on loopback (64 KiB segments) DRWA's 120 KB window moved
/// 4 MB/s against a sender paced at 50 MB/s. Four segments keep ACKs flowing.
const MIN_SEGMENTS: u64 = 4;

/// How the receiving side of a kernel-mode connection sets its advertised window.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum ReceiveWindow {
    /// Linux's own autotuning (the default): nothing is set.
    #[default]
    Kernel,
    /// A fixed receive buffer of `rcvbuf` bytes set before connect: the static cap of phone
    /// vendors.
    Static {
        /// The receive buffer, bytes (as SO_RCVBUF reads it back: the kernel's doubled value).
        rcvbuf: u64,
    },
    /// DRWA: the window from [`alcc_cc::drwa`], applied with TCP_WINDOW_CLAMP.
    Drwa {
        /// Lambda, the smoothing and the floor.
        params: DrwaParams,
        /// The locked receive buffer, bytes; `None`: [`DEFAULT_DRWA_RCVBUF`] or what an
        /// unprivileged process is granted.
        rcvbuf: Option<u64>,
    },
}

impl FromStr for ReceiveWindow {
    type Err = Error;

    /// `kernel`, `static:rcvbuf=BYTES`, `drwa[:lambda=L,alpha=A,floor=BYTES,rcvbuf=BYTES]`.
    fn from_str(s: &str) -> Result<ReceiveWindow> {
        let mut params = Params::parse(s)?;
        const MAX_BUF: u64 = i32::MAX as u64;
        let window = match params.name() {
            "kernel" => ReceiveWindow::Kernel,
            "static" => {
                let rcvbuf = params.take_u64("rcvbuf", 0, 4096, MAX_BUF)?;
                if rcvbuf == 0 {
                    return Err(params
                        .bad_value("rcvbuf", "(missing)", "the static cap needs rcvbuf=BYTES")
                        .into());
                }
                ReceiveWindow::Static { rcvbuf }
            }
            "drwa" => {
                let rcvbuf = params.take_u64("rcvbuf", 0, 4096, MAX_BUF)?;
                // The model's own parameters go to the model's parser.
                let model = DrwaParams::parse(&model_spec(s))?;
                for key in ["lambda", "alpha", "floor"] {
                    params.take_string(key);
                }
                ReceiveWindow::Drwa { params: model, rcvbuf: (rcvbuf > 0).then_some(rcvbuf) }
            }
            other => {
                return Err(alcc_cc::SpecError::UnknownName {
                    name: other.to_string(),
                    known: "kernel, static, drwa".into(),
                }
                .into())
            }
        };
        params.finish()?;
        Ok(window)
    }
}

/// `s` without its `rcvbuf=` pair: the model's own specification.
fn model_spec(s: &str) -> String {
    let s = s.trim();
    let Some((name, rest)) = s.split_once(':') else { return s.to_string() };
    let kept: Vec<&str> =
        rest.split(',').filter(|p| !p.trim().to_ascii_lowercase().starts_with("rcvbuf=")).collect();
    if kept.is_empty() {
        name.to_string()
    } else {
        format!("{name}:{}", kept.join(","))
    }
}

impl fmt::Display for ReceiveWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReceiveWindow::Kernel => write!(f, "kernel"),
            ReceiveWindow::Static { rcvbuf } => write!(f, "static:rcvbuf={rcvbuf}"),
            ReceiveWindow::Drwa { params, rcvbuf: None } => write!(f, "{}", params.spec()),
            ReceiveWindow::Drwa { params, rcvbuf: Some(b) } => write!(f, "{},rcvbuf={b}", params.spec()),
        }
    }
}

impl ReceiveWindow {
    /// Sets up the unconnected socket `fd` (the receive buffer, before the handshake) and
    /// returns what runs once it is connected ([`WindowControl::start`]).
    pub fn prepare(&self, fd: RawFd) -> Result<WindowControl> {
        match self {
            ReceiveWindow::Kernel => Ok(WindowControl::Kernel),
            ReceiveWindow::Static { rcvbuf } => {
                let got = lock_rcvbuf(fd, *rcvbuf)?;
                if got < *rcvbuf {
                    return Err(refused(*rcvbuf, got));
                }
                Ok(WindowControl::Static { rcvbuf: got })
            }
            ReceiveWindow::Drwa { params, rcvbuf } => {
                check_no_shrinking()?;
                let asked = rcvbuf.unwrap_or(DEFAULT_DRWA_RCVBUF);
                let got = lock_rcvbuf(fd, asked)?;
                if rcvbuf.is_some() && got < asked {
                    return Err(refused(asked, got));
                }
                Ok(WindowControl::Drwa(Box::new(DrwaControl {
                    model: Drwa::new(params.clone()),
                    spec: self.to_string(),
                    rcvbuf: got,
                    ceiling: 0,
                    next_sample: Time::ZERO,
                    clamp: None,
                    clamp_sets: 0,
                })))
            }
        }
    }
}

/// Locks the receive buffer at `bytes` (as SO_RCVBUF reads back: Linux doubles what it is
/// given): forced with CAP_NET_ADMIN, else as far as `net.core.rmem_max` allows. Returns
/// what the kernel granted.
fn lock_rcvbuf(fd: RawFd, bytes: u64) -> Result<u64> {
    let half = libc::c_int::try_from(bytes / 2).unwrap_or(libc::c_int::MAX);
    if sys::set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, half).is_err() {
        sys::set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, half)?;
    }
    Ok(sys::get_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF)?.max(0) as u64)
}

fn refused(asked: u64, got: u64) -> Error {
    let rmem_max = std::fs::read_to_string("/proc/sys/net/core/rmem_max").unwrap_or_default();
    Error::Io(io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "receive buffer of {asked} bytes refused: the kernel granted {got} (a process without \
             CAP_NET_ADMIN gets at most 2 x net.core.rmem_max = 2 x {}); raise it with \
             `sysctl -w net.core.rmem_max={}` or ask for a smaller buffer",
            rmem_max.trim(),
            asked.div_ceil(2)
        ),
    ))
}

/// Refuses a kernel that shrinks offered windows: DRWA's no-stall guarantee rests on it not
/// doing so (module docs).
fn check_no_shrinking() -> Result<()> {
    match std::fs::read_to_string("/proc/sys/net/ipv4/tcp_shrink_window") {
        Ok(v) if v.trim() != "0" => Err(Error::Io(io::Error::new(
            io::ErrorKind::Unsupported,
            "drwa: net.ipv4.tcp_shrink_window is set: the kernel would take back window the \
             sender may already have filled (set it to 0)",
        ))),
        // 0, or a kernel before 6.5 (no such sysctl), which never shrinks.
        _ => Ok(()),
    }
}

/// What a receiving socket's window control has done.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WindowStats {
    /// The control (`kernel`, `static:rcvbuf=N`, `drwa:...`).
    pub spec: String,
    /// The receive buffer the kernel granted (bytes; 0 for `kernel`, which autotunes).
    pub rcvbuf: u64,
    /// The largest window the buffer allows (the kernel's window clamp after the handshake).
    pub ceiling: u64,
    /// The last window clamp DRWA applied.
    pub clamp: Option<u64>,
    /// How many times the clamp was changed.
    pub clamp_sets: u64,
    /// DRWA's model updates (once per RTT with data).
    pub updates: u64,
    /// DRWA's minimum RTT.
    pub rtt_min: Option<Duration>,
    /// DRWA's smoothed estimate of the sender's window, bytes.
    pub cwnd_estimate: Option<u64>,
}

impl fmt::Display for WindowStats {
    /// One line: `receive window SPEC: buffer N bytes, largest window N, last clamp N, N clamp
    /// changes, N updates, rtt_min X ms, window estimate N` (`-` where DRWA has no value yet).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let or_dash = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
        let rtt_min = self.rtt_min.map_or("-".to_string(), |d| format!("{:.1} ms", d.as_secs_f64() * 1e3));
        write!(
            f,
            "receive window {}: buffer {} bytes, largest window {}, last clamp {}, {} clamp changes, \
             {} updates, rtt_min {rtt_min}, window estimate {}",
            self.spec,
            self.rcvbuf,
            self.ceiling,
            or_dash(self.clamp),
            self.clamp_sets,
            self.updates,
            or_dash(self.cwnd_estimate),
        )
    }
}

/// The window control of one connected receiving socket, run on the reading thread.
#[derive(Debug)]
pub enum WindowControl {
    /// Autotuning: nothing to do.
    Kernel,
    /// The static buffer: nothing to do after connect.
    Static {
        /// The buffer granted.
        rcvbuf: u64,
    },
    /// DRWA.
    Drwa(Box<DrwaControl>),
}

/// DRWA on one socket: the model, when to sample next, the clamp applied.
#[derive(Debug)]
pub struct DrwaControl {
    model: Drwa,
    spec: String,
    rcvbuf: u64,
    ceiling: u64,
    next_sample: Time,
    clamp: Option<u64>,
    clamp_sets: u64,
}

impl WindowControl {
    /// Once connected: reads the window the buffer allows (the model's ceiling).
    pub fn start(&mut self, fd: RawFd) -> Result<()> {
        if let WindowControl::Drwa(d) = self {
            d.ceiling = sys::get_int(fd, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP)?.max(0) as u64;
            d.model.set_ceiling(d.ceiling);
        }
        Ok(())
    }

    /// After data was read at `now`: DRWA samples TCP_INFO (at most every millisecond) and,
    /// when its model ends a round, sets the new window clamp.
    pub fn after_read(&mut self, fd: RawFd, now: Time) -> io::Result<()> {
        let WindowControl::Drwa(d) = self else { return Ok(()) };
        if now < d.next_sample {
            return Ok(());
        }
        d.next_sample = now + SAMPLE_GAP;
        let info = sys::tcp_info(fd)?;
        let rtt = (info.rcv_rtt > 0).then(|| Duration::from_micros(info.rcv_rtt.into()));
        let sample = Sample { now, bytes_received: info.bytes_received, rtt };
        if let Some(window) = d.model.on_sample(sample) {
            let mss = u64::from(if info.rcv_mss > 0 { info.rcv_mss } else { info.advmss });
            let window = window.max(MIN_SEGMENTS * mss).min(d.ceiling.max(MIN_SEGMENTS * mss));
            if d.clamp != Some(window) {
                let value = libc::c_int::try_from(window).unwrap_or(libc::c_int::MAX);
                sys::set_int(fd, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP, value)?;
                d.clamp = Some(window);
                d.clamp_sets += 1;
            }
        }
        Ok(())
    }

    /// [`after_read`](Self::after_read) at the monotonic clock's present, for callers that keep
    /// no clock of their own (the preload shim's interposed reads).
    pub fn after_read_now(&mut self, fd: RawFd) -> io::Result<()> {
        self.after_read(fd, sys::now())
    }

    /// What it has done.
    pub fn stats(&self) -> WindowStats {
        match self {
            WindowControl::Kernel => WindowStats { spec: "kernel".into(), ..WindowStats::default() },
            WindowControl::Static { rcvbuf } => WindowStats {
                spec: ReceiveWindow::Static { rcvbuf: *rcvbuf }.to_string(),
                rcvbuf: *rcvbuf,
                ..WindowStats::default()
            },
            WindowControl::Drwa(d) => WindowStats {
                spec: d.spec.clone(),
                rcvbuf: d.rcvbuf,
                ceiling: d.ceiling,
                clamp: d.clamp,
                clamp_sets: d.clamp_sets,
                updates: d.model.updates(),
                rtt_min: d.model.rtt_min(),
                cwnd_estimate: d.model.cwnd_estimate().map(|c| c.round() as u64),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print_back() {
        assert_eq!("kernel".parse::<ReceiveWindow>().unwrap(), ReceiveWindow::Kernel);
        assert_eq!(
            "static:rcvbuf=262144".parse::<ReceiveWindow>().unwrap(),
            ReceiveWindow::Static { rcvbuf: 262144 }
        );
        let d: ReceiveWindow = "drwa".parse().unwrap();
        assert_eq!(d, ReceiveWindow::Drwa { params: DrwaParams::default(), rcvbuf: None });
        let d: ReceiveWindow = "drwa:lambda=2,rcvbuf=1048576".parse().unwrap();
        let ReceiveWindow::Drwa { params, rcvbuf } = &d else { panic!("{d:?}") };
        assert_eq!((params.lambda, *rcvbuf), (2.0, Some(1 << 20)));
        assert_eq!(d.to_string().parse::<ReceiveWindow>().unwrap(), d);
        for bad in ["static", "static:rcvbuf=10", "drwa:lambda=0", "drwa:beta=1", "drwa:rcvbuf=100", "bbr"] {
            assert!(bad.parse::<ReceiveWindow>().is_err(), "{bad} accepted");
        }
    }
}
