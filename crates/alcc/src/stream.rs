//! [`AlccStream`]: a TCP stream whose bytes enter the kernel only as fast as a user-space
//! controller allows, with std `Read` and `Write`.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alcc_cc::{registry, Config};

use crate::driver::{self, Driver};
use crate::error::{Error, Result};
use crate::flow::{Flow, Limits, Shared};
use crate::framing::FrameWriter;
use crate::info::FlowInfo;
use crate::mode::Mode;
use crate::receiver::{FramedReceiver, ReceiverStats};
use crate::sys;
use crate::udp_receiver::UdpReceiver;
use crate::underlay::Underlay;

/// How a flow is set up: its controller, the kernel congestion control under it, buffers.
#[derive(Clone, Debug)]
pub struct Options {
    /// Controller specification (`copa:delta=0.5`, `fixed:window=20`), or `none` for plain
    /// kernel TCP through the same API (no gating, no timestamps, no socket options but the
    /// underlay).
    pub cc: String,
    /// Kernel congestion control under the controller; always set explicitly.
    pub underlay: String,
    /// Bytes the application may queue before writes block.
    pub queue_capacity: usize,
    /// Largest chunk written into the kernel at once.
    pub max_chunk: u64,
    /// TCP_NOTSENT_LOWAT: how many not-yet-sent bytes the kernel may hold.
    pub notsent_lowat: u32,
    /// Receive buffer size to make room for ACK timestamps in the error queue.
    pub errqueue_rcvbuf: u32,
    /// Packet size the controller counts in.
    pub mss: u64,
    /// TCP_USER_TIMEOUT: how long sent data may stay unacknowledged (or the peer's window
    /// stay closed) before the kernel gives up and the flow fails with `TimedOut`. `None`
    /// keeps the kernel's default (minutes of retries).
    pub user_timeout: Option<Duration>,
    /// How the flow learns what was delivered. In [`Mode::Framed`] both ends run alcc: the
    /// accepting side sends (each chunk in a data frame) and the connecting side receives.
    pub mode: Mode,
}

impl Default for Options {
    /// `fixed` (unbounded), over `cubic`, 1 MiB queue, chunks of at most 256 KiB, 128 KiB
    /// not-sent low-water mark.
    fn default() -> Options {
        Options {
            cc: "fixed".into(),
            underlay: "cubic".into(),
            queue_capacity: 1 << 20,
            max_chunk: 256 << 10,
            notsent_lowat: 128 << 10,
            errqueue_rcvbuf: 4 << 20,
            mss: Config::default().mss,
            user_timeout: None,
            mode: Mode::Kernel,
        }
    }
}

impl Options {
    /// Default options with controller `cc`.
    pub fn with_cc(cc: &str) -> Options {
        Options { cc: cc.into(), ..Options::default() }
    }

    /// Sets the mode.
    pub fn mode(mut self, mode: Mode) -> Options {
        self.mode = mode;
        self
    }

    /// Sets the kernel congestion control.
    pub fn underlay(mut self, name: &str) -> Options {
        self.underlay = name.into();
        self
    }
}

/// Whether `spec` means plain kernel TCP.
fn is_none(spec: &str) -> bool {
    spec.trim().eq_ignore_ascii_case("none")
}

/// Builds the controller for `spec` (`None` for `none`), refusing receiver-side algorithms
/// in kernel mode.
fn build_controller(spec: &str, mss: u64, mode: Mode) -> Result<Option<Box<dyn alcc_cc::Controller>>> {
    if is_none(spec) {
        return Ok(None);
    }
    if mode == Mode::Kernel && registry::entry(spec)?.needs_receiver() {
        return Err(Error::NeedsReceiver(spec.to_string()));
    }
    Ok(Some(registry::build(spec, &Config { mss, seed: 0 })?))
}

/// Checks that `spec` names a controller kernel mode can run (or is `none`).
pub fn check_spec(spec: &str) -> Result<()> {
    check_spec_for(spec, Mode::Kernel)
}

/// Checks that `spec` names a controller `mode` can run (or is `none`).
pub fn check_spec_for(spec: &str, mode: Mode) -> Result<()> {
    build_controller(spec, Config::default().mss, mode).map(drop)
}

/// A TCP stream paced by a user-space controller.
pub struct AlccStream {
    id: u64,
    fd: Arc<OwnedFd>,
    shared: Arc<Shared>,
    driver: Arc<Driver>,
    nonblocking: bool,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    closed: AtomicBool,
    /// How this flow learns what was delivered.
    mode: Mode,
    /// The receiving side of framed mode (the connecting side).
    receiver: Option<Mutex<FramedReceiver>>,
    /// The receiving side of UDP mode (the connecting side).
    udp_receiver: Option<Mutex<UdpReceiver>>,
}

impl std::fmt::Debug for AlccStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlccStream").field("id", &self.id).field("fd", &self.fd.as_raw_fd()).finish()
    }
}

impl AlccStream {
    /// Connects to `addr` and runs the flow with `options`. In [`Mode::Framed`] this is the
    /// receiving side: reads return the sender's application bytes, writes are refused.
    /// In [`Mode::Udp`] this is the receiving side of UDP mode (see [`accept_udp`](Self::accept_udp)).
    pub fn connect(addr: impl ToSocketAddrs, options: &Options) -> Result<AlccStream> {
        if options.mode == Mode::Udp {
            return AlccStream::udp_receiver(addr, options);
        }
        let tcp = TcpStream::connect(addr)?;
        match options.mode {
            Mode::Framed => AlccStream::framed_receiver(tcp, options),
            _ => AlccStream::from_tcp(tcp, options),
        }
    }

    /// A stream the driver never holds: the receiving side of framed or UDP mode.
    fn receiving(fd: OwnedFd, mode: Mode) -> Result<AlccStream> {
        let driver = driver::get()?;
        let info = FlowInfo { controller: "receiver".into(), ..FlowInfo::default() };
        let shared = Shared::new(1, info);
        {
            let mut st = shared.lock();
            st.released = true;
            st.finished = true;
        }
        Ok(AlccStream::assemble(u64::MAX, Arc::new(fd), shared, driver, mode))
    }

    /// The receiving side of UDP mode: a UDP socket connected to the server at `addr`.
    fn udp_receiver(addr: impl ToSocketAddrs, options: &Options) -> Result<AlccStream> {
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
        sock.set_nonblocking(true)?;
        let fd: OwnedFd = sock.into();
        let config = Config { mss: options.mss.max(1), seed: 0 };
        let receiver = UdpReceiver::new(fd.as_raw_fd(), config);
        let mut s = AlccStream::receiving(fd, Mode::Udp)?;
        s.udp_receiver = Some(Mutex::new(receiver));
        Ok(s)
    }

    /// The sending side of UDP mode: waits on `socket` for a client's start request,
    /// connects the socket to that client and sends to it under `options` (one client per
    /// socket). Datagrams that are not a valid request are ignored while waiting.
    pub fn accept_udp(socket: UdpSocket, options: &Options) -> Result<(AlccStream, SocketAddr)> {
        let controller = build_controller(&options.cc, options.mss, Mode::Udp)?;
        let mut hello = Vec::new();
        crate::wire::Frame::Hello { spec: options.cc.trim().to_string() }
            .encode(&mut hello)
            .map_err(|e| Error::Io(io::Error::new(io::ErrorKind::InvalidInput, e)))?;
        let mut buf = [0u8; 2048];
        let peer = loop {
            let (n, peer) = socket.recv_from(&mut buf)?;
            if matches!(crate::wire::udp::parse_datagram(&buf[..n]), Ok(crate::wire::Frame::Hello { .. })) {
                break peer;
            }
        };
        socket.connect(peer)?;
        socket.set_nonblocking(true)?;
        let stream =
            AlccStream::sending(socket.into(), options, controller, "udp", Mode::Udp, |f| f.udp(hello))?;
        Ok((stream, peer))
    }

    /// Makes the connected `tcp` the receiving side of a framed-mode flow.
    pub fn framed_receiver(tcp: TcpStream, options: &Options) -> Result<AlccStream> {
        tcp.set_nonblocking(true)?;
        tcp.set_nodelay(true)?;
        let fd: OwnedFd = tcp.into();
        let config = Config { mss: options.mss.max(1), seed: 0 };
        let receiver = FramedReceiver::new(fd.as_raw_fd(), config);
        let mut s = AlccStream::receiving(fd, Mode::Framed)?;
        s.receiver = Some(Mutex::new(receiver));
        Ok(s)
    }

    /// The mode of this flow.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The receiving side of a framed flow: what it has seen so far (`None` on a sending
    /// or kernel-mode stream).
    pub fn receiver_stats(&self) -> Option<ReceiverStats> {
        if let Some(u) = &self.udp_receiver {
            return Some(u.lock().unwrap_or_else(|p| p.into_inner()).stats());
        }
        Some(self.receiver.as_ref()?.lock().unwrap_or_else(|p| p.into_inner()).stats())
    }

    /// Takes over a connected TCP stream on which nothing was written yet.
    pub fn from_tcp(tcp: TcpStream, options: &Options) -> Result<AlccStream> {
        let controller = build_controller(&options.cc, options.mss, options.mode)?;
        let writer = match options.mode {
            Mode::Framed => Some(
                FrameWriter::new(&options.cc)
                    .map_err(|e| Error::Io(io::Error::new(io::ErrorKind::InvalidInput, e)))?,
            ),
            Mode::Kernel => None,
            Mode::Udp => {
                return Err(Error::Io(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "udp mode runs on a UDP socket: AlccStream::accept_udp",
                )))
            }
        };
        let fd: OwnedFd = tcp.into();
        let raw = fd.as_raw_fd();
        // The kernel's segment size is known once connected; the underlay counts in it.
        let mss = sys::tcp_info(raw).map_or(options.mss, |i| u64::from(i.snd_mss)).max(1);
        let underlay = options.underlay.parse::<Underlay>()?.attach(
            raw,
            controller.as_ref().map(|c| c.decision()),
            mss,
        )?;
        if let Some(t) = options.user_timeout {
            let ms = libc::c_int::try_from(t.as_millis()).unwrap_or(libc::c_int::MAX).max(1);
            sys::set_int(raw, libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, ms)?;
        }
        if controller.is_some() {
            // Chunks leave at once (no Nagle), the kernel holds few unsent bytes, and every
            // chunk's SCHED and ACK timestamps fit in the error queue.
            sys::set_int(raw, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)?;
            let lowat = libc::c_int::try_from(options.notsent_lowat).unwrap_or(libc::c_int::MAX);
            sys::set_int(raw, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, lowat)?;
            let rcvbuf = libc::c_int::try_from(options.errqueue_rcvbuf).unwrap_or(libc::c_int::MAX);
            if writer.is_none() {
                sys::grow_rcvbuf(raw, rcvbuf)?;
                sys::enable_ack_timestamps(raw)?;
            }
        }
        // `none` leaves the socket as plain kernel TCP (the baseline); its deliveries are
        // read from TCP_INFO only.
        let flags = {
            let s = TcpStream::from(fd.try_clone()?);
            s.set_nonblocking(true)?;
            // `s` shares the open file description; closing this duplicate leaves `fd` open.
            s
        };
        drop(flags);
        let name = options.underlay.clone();
        AlccStream::sending(fd, options, controller, &name, options.mode, |flow| {
            let flow = flow.with_underlay(underlay);
            match writer {
                Some(w) => flow.framed(w),
                None => flow,
            }
        })
    }

    /// Registers a sending flow on `fd` (already configured) with the driver and returns the
    /// application's end of it; `wrap` picks the flow's feedback source.
    fn sending(
        fd: OwnedFd,
        options: &Options,
        controller: Option<Box<dyn alcc_cc::Controller>>,
        underlay: &str,
        mode: Mode,
        wrap: impl FnOnce(Flow) -> Flow,
    ) -> Result<AlccStream> {
        let driver = driver::get()?;
        let id = driver.next_id();
        let decision = controller.as_ref().map(|c| c.decision());
        let info = FlowInfo {
            controller: options.cc.clone(),
            underlay: underlay.to_string(),
            metrics: controller.as_ref().map(|c| c.metrics()),
            window: decision.map_or(u64::MAX, |d| d.window),
            pacing_rate: decision.and_then(|d| d.pacing_rate),
            ..FlowInfo::default()
        };
        let shared = Shared::new(options.queue_capacity.max(1), info);
        let fd = Arc::new(fd);
        let limits = Limits { max_chunk: options.max_chunk.max(1), default_mss: options.mss.max(1) };
        let flow = Flow::new(id, fd.clone(), shared.clone(), controller, options.cc.clone(), limits);
        driver.register(wrap(flow));
        Ok(AlccStream::assemble(id, fd, shared, driver, mode))
    }

    /// A stream over a flow already known to the driver (or, for a receiver, to nobody).
    fn assemble(
        id: u64,
        fd: Arc<OwnedFd>,
        shared: Arc<Shared>,
        driver: Arc<Driver>,
        mode: Mode,
    ) -> AlccStream {
        AlccStream {
            id,
            fd,
            shared,
            driver,
            nonblocking: false,
            read_timeout: None,
            write_timeout: None,
            closed: AtomicBool::new(false),
            mode,
            receiver: None,
            udp_receiver: None,
        }
    }

    /// The raw socket (for `poll` on readability; write through this stream only).
    pub fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.with_tcp(|s| s.peer_addr())
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.with_tcp(|s| s.local_addr())
    }

    fn with_tcp<T>(&self, f: impl FnOnce(&TcpStream) -> io::Result<T>) -> io::Result<T> {
        let s = TcpStream::from(self.fd.try_clone()?);
        f(&s)
    }

    /// Makes reads and writes return `WouldBlock` instead of waiting.
    pub fn set_nonblocking(&mut self, nonblocking: bool) {
        self.nonblocking = nonblocking;
    }

    /// Bounds how long a blocking read waits (`None`: forever).
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) {
        self.read_timeout = timeout;
    }

    /// Bounds how long a blocking write waits for queue space (`None`: forever).
    pub fn set_write_timeout(&mut self, timeout: Option<Duration>) {
        self.write_timeout = timeout;
    }

    /// Replaces the controller (`copa:delta=0.5`, `none`) from now on.
    pub fn set_cc(&self, spec: &str) -> Result<()> {
        let mss =
            self.shared.lock().info.metrics.as_ref().map_or(Config::default().mss, |_| Config::default().mss);
        if self.receiver.is_some() || self.udp_receiver.is_some() {
            return Err(Error::Io(io::Error::new(
                io::ErrorKind::Unsupported,
                "alcc: the receiving side runs no controller (the sender's Hello chose its model)",
            )));
        }
        // In framed mode the receiver built its model from the first controller's Hello; a
        // receiver-side algorithm switched in later would have no model feeding it.
        if self.mode != Mode::Kernel && !is_none(spec) && registry::entry(spec)?.needs_receiver() {
            return Err(Error::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("alcc framed: `{spec}` needs the receiver's model, chosen when the flow started"),
            )));
        }
        let controller = build_controller(spec, mss, self.mode)?;
        self.shared.lock().new_controller = Some((spec.to_string(), controller));
        self.wake();
        Ok(())
    }

    /// Replaces the kernel congestion control (`cubic`, or the BPF underlay `alcc:follow`).
    pub fn set_underlay(&self, name: &str) -> Result<()> {
        let decision = {
            let st = self.shared.lock();
            (st.info.metrics.is_some())
                .then_some(alcc_cc::Decision { window: st.info.window, pacing_rate: st.info.pacing_rate })
        };
        let mss = self.shared.lock().info.kernel_mss;
        let mss = if mss > 0 { u64::from(mss) } else { Config::default().mss };
        let underlay = name.parse::<Underlay>()?.attach(self.fd.as_raw_fd(), decision, mss)?;
        let mut st = self.shared.lock();
        st.info.underlay = name.into();
        if !st.released {
            st.new_underlay = Some(underlay);
        }
        drop(st);
        self.wake();
        Ok(())
    }

    /// The controller's metrics, the kernel's cwnd, RTT, bytes in flight, queue and rates.
    pub fn info(&self) -> FlowInfo {
        self.info_handle().info()
    }

    /// A handle that reads this flow's [`FlowInfo`] from another thread (telemetry).
    pub fn info_handle(&self) -> InfoHandle {
        InfoHandle { fd: self.fd.clone(), shared: self.shared.clone() }
    }

    fn wake(&self) {
        let mut st = self.shared.lock();
        if !st.wake_pending && !st.released {
            st.wake_pending = true;
            drop(st);
            self.driver.wake(self.id);
        }
    }

    fn failure(err: &Option<(io::ErrorKind, String)>) -> Option<io::Error> {
        err.as_ref().map(|(k, m)| io::Error::new(*k, m.clone()))
    }

    /// Waits until everything queued is in the kernel and acknowledged, the FIN sent
    /// (`timeout`: give up with `TimedOut`). Reports a reset or other failure as an error.
    pub fn close(self, timeout: Option<Duration>) -> io::Result<()> {
        self.close_ref(timeout)
    }

    /// [`close`](Self::close) through a shared reference (for the C ABI); later writes fail.
    pub fn close_ref(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.closed.store(true, Ordering::Relaxed);
        if let Some(r) = &self.receiver {
            r.lock().unwrap_or_else(|p| p.into_inner()).close(timeout)?;
            return sys::shutdown_write(self.fd.as_raw_fd());
        }
        if self.udp_receiver.is_some() {
            return Ok(());
        }
        self.shared.lock().closing = true;
        self.wake();
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut st = self.shared.lock();
        loop {
            if let Some(e) = Self::failure(&st.error) {
                return Err(e);
            }
            if st.finished {
                return Ok(());
            }
            st = match deadline {
                None => self.shared.cond.wait(st).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(io::Error::new(io::ErrorKind::TimedOut, "alcc close: flush timed out"));
                    }
                    self.shared.cond.wait_timeout(st, left).unwrap_or_else(|p| p.into_inner()).0
                }
            };
        }
    }

    /// Resets the connection at once, discarding what is queued.
    pub fn abort(self) {
        self.closed.store(true, Ordering::Relaxed);
        if self.receiver.is_some() {
            // Closing the descriptor (when `self` drops) then sends a reset.
            let _ = sys::set_linger_zero(self.fd.as_raw_fd());
        }
        self.shared.lock().abort = true;
        self.wake();
    }

    /// Shuts down reading (writing ends with [`close`](Self::close)).
    pub fn shutdown_read(&self) -> io::Result<()> {
        self.with_tcp(|s| s.shutdown(Shutdown::Read))
    }

    fn wait_readable(&self) -> io::Result<()> {
        if sys::poll_one(self.fd.as_raw_fd(), libc::POLLIN, self.read_timeout)? {
            Ok(())
        } else {
            Err(io::Error::new(io::ErrorKind::TimedOut, "alcc read timed out"))
        }
    }
}

/// Reads one flow's [`FlowInfo`] from any thread; see [`AlccStream::info_handle`].
#[derive(Clone)]
pub struct InfoHandle {
    fd: Arc<OwnedFd>,
    shared: Arc<Shared>,
}

impl InfoHandle {
    /// The same as [`AlccStream::info`].
    pub fn info(&self) -> FlowInfo {
        let mut info = self.shared.lock().info.clone();
        let fd = self.fd.as_raw_fd();
        if let Ok(ti) = sys::tcp_info(fd) {
            info.set_kernel(&ti);
        }
        // What the kernel actually runs, not what was asked for.
        if let Ok(cc) = sys::get_congestion(fd) {
            info.underlay = cc;
        }
        info
    }

    /// Whether the flow is over (finished or failed, and released by the driver).
    pub fn is_done(&self) -> bool {
        self.shared.lock().released
    }
}

impl AlccStream {
    /// Reads what the peer sent; `nonblocking` returns `WouldBlock` instead of waiting.
    pub fn read_with(&self, buf: &mut [u8], nonblocking: bool) -> io::Result<usize> {
        if let Some(r) = &self.receiver {
            return r.lock().unwrap_or_else(|p| p.into_inner()).read(buf, nonblocking, self.read_timeout);
        }
        if let Some(r) = &self.udp_receiver {
            return r.lock().unwrap_or_else(|p| p.into_inner()).read(buf, nonblocking, self.read_timeout);
        }
        if self.mode != Mode::Kernel {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "alcc framed: the sending side reads nothing (the peer's bytes are its ACK frames)",
            ));
        }
        loop {
            match sys::recv_nonblocking(self.fd.as_raw_fd(), buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && !nonblocking => self.wait_readable()?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => return other,
            }
        }
    }

    /// Queues as much of `buf` as fits; waits while the queue is full unless `nonblocking`
    /// (then `WouldBlock`).
    pub fn write_with(&self, buf: &[u8], nonblocking: bool) -> io::Result<usize> {
        if self.receiver.is_some() || self.udp_receiver.is_some() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "alcc: in framed and udp modes the connecting side only receives (the accepting side sends)",
            ));
        }
        if buf.is_empty() {
            return Ok(0);
        }
        let deadline = self.write_timeout.map(|t| Instant::now() + t);
        let mut st = self.shared.lock();
        loop {
            if let Some(e) = Self::failure(&st.error) {
                return Err(e);
            }
            if st.closing || st.released {
                return Err(io::Error::new(io::ErrorKind::BrokenPipe, "alcc stream is closed"));
            }
            let space = st.capacity.saturating_sub(st.queue.len());
            if space > 0 {
                let n = space.min(buf.len());
                st.queue.extend(&buf[..n]);
                let notify = !st.wake_pending;
                st.wake_pending = true;
                drop(st);
                if notify {
                    self.driver.wake(self.id);
                }
                return Ok(n);
            }
            if nonblocking {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            st = match deadline {
                None => self.shared.cond.wait(st).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(io::Error::new(io::ErrorKind::TimedOut, "alcc write timed out"));
                    }
                    self.shared.cond.wait_timeout(st, left).unwrap_or_else(|p| p.into_inner()).0
                }
            };
        }
    }

    /// Waits until everything queued was handed to the kernel.
    pub fn flush_with(&self, nonblocking: bool) -> io::Result<()> {
        let mut st = self.shared.lock();
        loop {
            if let Some(e) = Self::failure(&st.error) {
                return Err(e);
            }
            if st.queue.is_empty() {
                return Ok(());
            }
            if nonblocking {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            st = self.shared.cond.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Read for AlccStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_with(buf, self.nonblocking)
    }
}

impl Write for AlccStream {
    /// Queues as much of `buf` as fits; blocks (or returns `WouldBlock`) while the queue is full.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_with(buf, self.nonblocking)
    }

    /// Waits until everything queued was handed to the kernel.
    fn flush(&mut self) -> io::Result<()> {
        self.flush_with(self.nonblocking)
    }
}

impl Drop for AlccStream {
    /// Without [`close`](Self::close), the driver still flushes the queue and sends the FIN,
    /// in the background.
    fn drop(&mut self) {
        if !self.closed.load(Ordering::Relaxed) {
            self.shared.lock().closing = true;
            self.wake();
        }
    }
}

/// What the process's driver thread has done so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverStats {
    /// Flows it currently serves.
    pub flows: usize,
    /// CPU time its thread has used.
    pub cpu_time: Duration,
    /// Times it woke up.
    pub wakeups: u64,
}

/// What the process's driver thread has done so far (starts it if needed).
pub fn driver_stats() -> io::Result<DriverStats> {
    let d = driver::get()?;
    Ok(DriverStats { flows: d.flows(), cpu_time: d.cpu_time(), wakeups: d.wakeups() })
}
