//! The receiving side: [`AlccReceiver`], the stream an application reads the sender's bytes
//! from, in framed and UDP mode when both ends run alcc, and in kernel mode as a plain TCP
//! client of any server whose advertised window it governs ([`kernel`], DRWA).
//!
//! It runs on the reading thread, inside `read`, not on the driver: every data frame (or
//! datagram) is acknowledged as soon as it is taken from the socket, and the receiver-side
//! model the sender's `Hello` names (Sprout's forecaster) is driven from there, its reports
//! sent back on the same socket. [`framed`] is the framed receiver, [`udp`] the UDP one; they
//! share [`ReadyBytes`] and the Hello-to-model step here.

pub(crate) mod framed;
pub(crate) mod kernel;
pub(crate) mod udp;

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use alcc_cc::{registry, Config, ReceiverModel, Time};

use crate::error::{Error, Result};
use crate::mode::Mode;
use crate::options::Options;
use crate::receive_window::{WindowControl, WindowStats};
use crate::sys;

use self::framed::FramedReceiver;
use self::kernel::KernelReceiver;
use self::udp::UdpReceiver;

/// Receive buffer a UDP-mode receiver asks for (SO_RCVBUFFORCE, else SO_RCVBUF up to
/// net.core.rmem_max): 8 MiB holds about 3 500 full-size datagrams at the kernel's per-datagram
/// accounting, several windows of the controllers we ship at cellular rates.
const UDP_RECEIVE_BUFFER: libc::c_int = 8 << 20;

/// What the receiving side of a framed or UDP-mode flow has seen so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    /// The sender's controller specification, once its Hello arrived.
    pub sender_spec: Option<String>,
    /// Application bytes received.
    pub delivered: u64,
    /// Data frames received (and acknowledged).
    pub frames: u64,
    /// Reports of the receiver-side model sent back (Sprout's forecasts).
    pub reports: u64,
    /// Data datagrams that arrived again and were dropped (UDP mode; framed mode's TCP
    /// delivers each frame once).
    pub duplicates: u64,
    /// Datagrams dropped as not this flow's (UDP mode: another connection id, such as a flow
    /// that still sends to an earlier client of the same port; garbage; another version).
    pub foreign: u64,
    /// Application bytes the sender says it sent, from its `Close` (UDP mode): compare with
    /// [`delivered`](Self::delivered) for what was lost.
    pub sender_sent: Option<u64>,
    /// The most bytes of ACK and report frames that waited at once for room in the socket
    /// (framed mode): at most about 64 KiB, beyond which the receiver stops reading data
    /// until they are out (a sender that never reads its ACKs is held back, not buffered for).
    pub max_feedback_backlog: u64,
    /// Kernel mode: what the receive-window control did (DRWA's clamp, the static buffer).
    pub window: Option<WindowStats>,
}

/// The error that ended a connection, kept so that every later call on it returns the same
/// error again (as `io::Error` is not `Clone`, its kind and message).
#[derive(Debug, Default)]
pub(crate) struct Failure(Option<(io::ErrorKind, String)>);

impl Failure {
    /// Records `e` as the connection's failure and returns it.
    pub(crate) fn record(&mut self, e: io::Error) -> io::Error {
        self.0 = Some((e.kind(), e.to_string()));
        e
    }

    /// The recorded failure as an error, or `Ok` while there is none.
    pub(crate) fn check(&self) -> io::Result<()> {
        match &self.0 {
            Some((kind, msg)) => Err(io::Error::new(*kind, msg.clone())),
            None => Ok(()),
        }
    }
}

/// The receiver-side model the sender's Hello asks for (shared by the framed and UDP
/// receivers): `None` for `none` or an algorithm without one, an `InvalidData` error naming
/// the spec for a controller unknown here or parameters its model refuses.
pub(crate) fn model_for_sender(
    mode: &str,
    spec: &str,
    config: &Config,
) -> io::Result<Option<Box<dyn ReceiverModel>>> {
    if spec.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let invalid = |e: &dyn std::fmt::Display| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("alcc {mode}: the sender runs `{spec}`, which this receiver cannot model: {e}"),
        )
    };
    let entry = registry::entry(spec).map_err(|e| invalid(&e))?;
    if !entry.needs_receiver() {
        return Ok(None);
    }
    registry::build_receiver(spec, config).map_err(|e| invalid(&e))
}

/// Application bytes received and not yet read (shared by the framed and UDP receivers):
/// appended at the back, read from the front; the buffer is reused once read out.
#[derive(Debug, Default)]
pub(crate) struct ReadyBytes {
    bytes: Vec<u8>,
    read: usize,
}

impl ReadyBytes {
    /// Appends received application bytes.
    pub fn push(&mut self, payload: &[u8]) {
        if self.read == self.bytes.len() {
            self.bytes.clear();
            self.read = 0;
        }
        self.bytes.extend_from_slice(payload);
    }

    /// Copies as many unread bytes as fit into `buf`; `None` when nothing is unread.
    pub fn read_into(&mut self, buf: &mut [u8]) -> Option<usize> {
        let unread = &self.bytes[self.read..];
        if unread.is_empty() {
            return None;
        }
        let n = buf.len().min(unread.len());
        buf[..n].copy_from_slice(&unread[..n]);
        self.read += n;
        Some(n)
    }
}

/// Fires a receiver model's timer when due and returns its new forecast, if any (shared by the
/// framed and UDP receivers).
pub(crate) fn model_report(
    model: &mut Option<Box<dyn ReceiverModel>>,
    now: Time,
) -> Option<alcc_cc::Forecast> {
    let m = model.as_mut()?;
    if m.next_timer().is_some_and(|t| t <= now) {
        m.on_timer(now);
    }
    match m.take_report(now)? {
        alcc_cc::ReceiverReport::Forecast(f) => Some(f),
        _ => None,
    }
}

/// Whether `e` says that the peer closed or reset the connection.
fn peer_gone(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotConnected | io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
    )
}

/// The receiving state, by mode (boxed: it holds buffers and a model, and an
/// [`AlccReceiver`] stays small wherever it is kept, e.g. beside a sending stream).
enum Receiving {
    Framed(Box<FramedReceiver>),
    Udp(Box<UdpReceiver>),
    Kernel(Box<KernelReceiver>),
}

impl Receiving {
    fn read(&mut self, buf: &mut [u8], nonblocking: bool, timeout: Option<Duration>) -> io::Result<usize> {
        match self {
            Receiving::Framed(r) => r.read(buf, nonblocking, timeout),
            Receiving::Udp(r) => r.read(buf, nonblocking, timeout),
            Receiving::Kernel(r) => r.read(buf, nonblocking, timeout),
        }
    }

    /// Kernel mode writes to the server (an HTTP request, say); framed and UDP mode's
    /// receiving side sends only its own feedback.
    fn write(&mut self, buf: &[u8], nonblocking: bool) -> io::Result<usize> {
        match self {
            Receiving::Kernel(r) => r.write(buf, nonblocking),
            Receiving::Framed(_) | Receiving::Udp(_) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "alcc: the receiving side of framed and udp mode only receives",
            )),
        }
    }

    fn stats(&self) -> ReceiverStats {
        match self {
            Receiving::Framed(r) => r.stats(),
            Receiving::Udp(r) => r.stats(),
            Receiving::Kernel(r) => ReceiverStats {
                delivered: r.delivered(),
                window: Some(r.window_stats()),
                ..ReceiverStats::default()
            },
        }
    }

    /// Sends what is still owed to the sender (framed mode's pending ACK frames) and ends
    /// the receiving side's own direction.
    fn close(&mut self, fd: RawFd, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Receiving::Framed(r) => {
                let ended = r.end_read();
                match r.close(timeout).and_then(|()| sys::shutdown_write(fd)) {
                    // The reader had the whole stream and the sender its ACKs: a sender that
                    // then closed (with our last report frames unread, which makes its kernel
                    // answer with a reset) has finished, not failed this receiver. Found by
                    // bench/soak.sh: `close` failed with ENOTCONN after complete transfers.
                    Err(e) if ended && peer_gone(&e) => Ok(()),
                    other => other,
                }
            }
            Receiving::Udp(_) => Ok(()),
            Receiving::Kernel(_) => sys::shutdown_write(fd),
        }
    }
}

/// The receiving side of a flow: std `Read` of the sender's application bytes. In framed and
/// UDP mode the other end is the [`AlccStream`](crate::AlccStream) that sends, and writes are
/// not part of it; in kernel mode the other end is any TCP server, and
/// [`write_with`](Self::write_with) sends it a request.
pub struct AlccReceiver {
    fd: OwnedFd,
    mode: Mode,
    state: Mutex<Receiving>,
    nonblocking: bool,
    read_timeout: Option<Duration>,
}

impl std::fmt::Debug for AlccReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlccReceiver").field("mode", &self.mode).field("fd", &self.fd.as_raw_fd()).finish()
    }
}

impl AlccReceiver {
    /// Connects to the sender at `addr` and receives: over TCP in [`Mode::Framed`], over a
    /// UDP socket in [`Mode::Udp`] (asking the server to start), and in [`Mode::Kernel`] as a
    /// plain TCP client of any server, its advertised window set by
    /// [`Options::receive_window`] (DRWA, a static buffer, or the kernel's autotuning).
    pub fn connect(addr: impl ToSocketAddrs, options: &Options) -> Result<AlccReceiver> {
        match options.mode {
            Mode::Framed => AlccReceiver::from_tcp(TcpStream::connect(addr)?, options),
            Mode::Udp => AlccReceiver::connect_udp(addr, options),
            Mode::Kernel => AlccReceiver::connect_kernel(addr, options),
        }
    }

    /// Kernel mode: the receive window is prepared on the socket before the handshake (its
    /// buffer decides the window scale), started once connected.
    fn connect_kernel(addr: impl ToSocketAddrs, options: &Options) -> Result<AlccReceiver> {
        let mut last = None;
        for addr in addr.to_socket_addrs()? {
            let fd = sys::tcp_socket_for(&addr)?;
            let control = options.receive_window.prepare(fd.as_raw_fd())?;
            match sys::connect(fd.as_raw_fd(), &addr) {
                Ok(()) => return AlccReceiver::from_prepared(TcpStream::from(fd), control),
                Err(e) => last = Some(e),
            }
        }
        Err(Error::Io(
            last.unwrap_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address to connect to")),
        ))
    }

    /// Kernel mode: makes `tcp`, connected after `control` was prepared on it with
    /// [`ReceiveWindow::prepare`](crate::ReceiveWindow::prepare), a receiver whose window
    /// `control` governs.
    pub fn from_prepared(tcp: TcpStream, mut control: WindowControl) -> Result<AlccReceiver> {
        let fd: OwnedFd = tcp.into();
        control.start(fd.as_raw_fd())?;
        let receiving = Receiving::Kernel(Box::new(KernelReceiver::new(fd.as_raw_fd(), control)));
        Ok(AlccReceiver::assemble(fd, Mode::Kernel, receiving))
    }

    /// Makes the connected `tcp` (accepted or connected) the receiving side of a framed flow.
    pub fn from_tcp(tcp: TcpStream, options: &Options) -> Result<AlccReceiver> {
        if options.mode != Mode::Framed {
            return Err(Error::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("alcc: a receiver on a TCP connection runs framed mode, not {}", options.mode),
            )));
        }
        tcp.set_nonblocking(true)?;
        tcp.set_nodelay(true)?;
        let fd: OwnedFd = tcp.into();
        let receiving = Receiving::Framed(Box::new(FramedReceiver::new(fd.as_raw_fd(), options.config())));
        Ok(AlccReceiver::assemble(fd, Mode::Framed, receiving))
    }

    /// The receiving side of UDP mode: a UDP socket connected to the server at `addr`.
    fn connect_udp(addr: impl ToSocketAddrs, options: &Options) -> Result<AlccReceiver> {
        let addr = addr
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address to connect to"))?;
        let local: SocketAddr = if addr.is_ipv4() {
            ([0, 0, 0, 0], 0).into()
        } else {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let sock = UdpSocket::bind(local)?;
        sock.connect(addr)?;
        AlccReceiver::from_udp(sock, options)
    }

    /// The receiving side of UDP mode on `socket`, which the caller bound (a chosen local
    /// address or port) and connected to the server: asks the server to start at the first
    /// read, as [`connect`](Self::connect) does, for a flow with a fresh random connection id.
    pub fn from_udp(socket: UdpSocket, options: &Options) -> Result<AlccReceiver> {
        socket.peer_addr().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("alcc udp: the receiver's socket is not connected to its server: {e}"),
            )
        })?;
        socket.set_nonblocking(true)?;
        let fd: OwnedFd = socket.into();
        // Nothing is retransmitted in UDP mode, so a datagram the kernel drops at a full
        // receive buffer (the reader was not scheduled for a moment) is lost for good: give
        // the socket room for a burst of the sender's window, as the sending side does for
        // its error queue.
        sys::grow_rcvbuf(fd.as_raw_fd(), UDP_RECEIVE_BUFFER)?;
        let id = crate::wire::udp::ConnectionId::random()?;
        let receiving = Receiving::Udp(Box::new(UdpReceiver::new(fd.as_raw_fd(), id, options.config())));
        Ok(AlccReceiver::assemble(fd, Mode::Udp, receiving))
    }

    fn assemble(fd: OwnedFd, mode: Mode, receiving: Receiving) -> AlccReceiver {
        AlccReceiver { fd, mode, state: Mutex::new(receiving), nonblocking: false, read_timeout: None }
    }

    fn state(&self) -> MutexGuard<'_, Receiving> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The mode of this flow.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// What the receiving side has seen so far.
    pub fn stats(&self) -> ReceiverStats {
        self.state().stats()
    }

    /// The socket (for `poll` on readability; read through this receiver only).
    pub fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match self.mode {
            Mode::Udp => UdpSocket::from(self.fd.try_clone()?).local_addr(),
            _ => TcpStream::from(self.fd.try_clone()?).local_addr(),
        }
    }

    /// The sender's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        match self.mode {
            Mode::Udp => UdpSocket::from(self.fd.try_clone()?).peer_addr(),
            _ => TcpStream::from(self.fd.try_clone()?).peer_addr(),
        }
    }

    /// Makes reads return `WouldBlock` instead of waiting.
    pub fn set_nonblocking(&mut self, nonblocking: bool) {
        self.nonblocking = nonblocking;
    }

    /// Bounds how long a blocking read waits (`None`: forever).
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) {
        self.read_timeout = timeout;
    }

    /// Reads what the sender sent; `Ok(0)` at the end of the stream; `nonblocking` returns
    /// `WouldBlock` instead of waiting.
    pub fn read_with(&self, buf: &mut [u8], nonblocking: bool) -> io::Result<usize> {
        self.state().read(buf, nonblocking, self.read_timeout)
    }

    /// Kernel mode: writes `buf` to the server (a request); `nonblocking` returns
    /// `WouldBlock` instead of waiting for room. Framed and UDP mode: `Unsupported`.
    pub fn write_with(&self, buf: &[u8], nonblocking: bool) -> io::Result<usize> {
        self.state().write(buf, nonblocking)
    }

    /// Sends the acknowledgements still owed (waiting up to `timeout` for room) and ends
    /// the receiving side's direction of the connection.
    pub fn close(self, timeout: Option<Duration>) -> io::Result<()> {
        self.close_ref(timeout)
    }

    /// [`close`](Self::close) through a shared reference (for the C ABI).
    pub fn close_ref(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.state().close(self.fd.as_raw_fd(), timeout)
    }

    /// Resets the connection (TCP) when the receiver is dropped, instead of closing it.
    pub fn abort(self) {
        if self.mode != Mode::Udp {
            let _ = sys::set_linger_zero(self.fd.as_raw_fd());
        }
    }
}

impl Read for AlccReceiver {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_with(buf, self.nonblocking)
    }
}

impl Write for AlccReceiver {
    /// Kernel mode: a request to the server ([`write_with`](Self::write_with)).
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_with(buf, self.nonblocking)
    }

    /// Writes go straight to the kernel: nothing to flush.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsRawFd for AlccReceiver {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_bytes_are_read_in_order_across_pushes_and_reads() {
        let mut r = ReadyBytes::default();
        let mut buf = [0u8; 4];
        assert_eq!(r.read_into(&mut buf), None);
        r.push(b"abcdef");
        assert_eq!(r.read_into(&mut buf), Some(4));
        assert_eq!(&buf, b"abcd");
        r.push(b"gh");
        assert_eq!(r.read_into(&mut buf), Some(4));
        assert_eq!(&buf, b"efgh");
        assert_eq!(r.read_into(&mut buf), None);
        // Read out: the next push starts a fresh buffer.
        r.push(b"i");
        assert_eq!((r.bytes.len(), r.read), (1, 0));
        assert_eq!(r.read_into(&mut buf), Some(1));
        assert_eq!(buf[0], b'i');
    }

    #[test]
    fn the_senders_hello_decides_the_model() {
        let config = Config::default();
        assert!(model_for_sender("framed", "none", &config).unwrap().is_none());
        assert!(model_for_sender("framed", "copa", &config).unwrap().is_none());
        assert!(model_for_sender("udp", "sprout", &config).unwrap().is_some());
        let e = model_for_sender("udp", "nonexistent", &config).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("alcc udp: the sender runs `nonexistent`"), "{e}");
    }
}
