//! [`AlccStream`]: the sending side of a flow. Its bytes enter the network only as fast as a
//! user-space controller allows; std `Read` (kernel mode: the peer's own bytes) and `Write`.
//!
//! The application's calls touch only the flow's [`Shared`] state: a write queues bytes and
//! wakes the driver, a flush or a close waits ([`Shared::wait_for`]) until the driver has
//! done its part. The driver thread owns the rest of the flow ([`Flow`]).

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::coupling::groups::Membership;
use crate::driver::{self, Driver, FlowId};
use crate::error::{Error, Result};
use crate::flow::control::Control;
use crate::flow::send_queue::FileRange;
use crate::flow::shared::{ControlChange, Ending, Shared, SharedState, Wait};
use crate::flow::Flow;
use crate::info::FlowInfo;
use crate::mode::Mode;
use crate::options::Options;
use crate::sys;
use crate::transport::kernel::FileSends;
use crate::transport::Transport;
use crate::underlay::{self, FlowUnderlay, Underlay};
use crate::wire::udp::{is_version1_request, parse_datagram, ConnectionId, VERSION_NOTICE};
use crate::wire::Frame;

/// The sending side of a flow paced by a user-space controller.
pub struct AlccStream {
    id: FlowId,
    fd: Arc<OwnedFd>,
    shared: Arc<Shared>,
    driver: Arc<Driver>,
    options: Options,
    nonblocking: bool,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    closed: AtomicBool,
}

impl std::fmt::Debug for AlccStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlccStream")
            .field("id", &self.id)
            .field("mode", &self.options.mode)
            .field("fd", &self.fd.as_raw_fd())
            .finish()
    }
}

impl AlccStream {
    /// Connects to `addr` and sends under `options`, over TCP in [`Mode::Kernel`] or
    /// [`Mode::Framed`] (then the peer receives with an [`AlccReceiver`](crate::AlccReceiver)).
    /// UDP mode's sender waits for its receiver instead: [`accept_udp`](Self::accept_udp).
    pub fn connect(addr: impl ToSocketAddrs, options: &Options) -> Result<AlccStream> {
        if options.mode == Mode::Udp {
            return Err(Error::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                "alcc udp: the sender waits for its receiver (AlccStream::accept_udp); the receiver connects (AlccReceiver::connect)",
            )));
        }
        // The socket starts under the underlay (reno under the BPF one), not the host's
        // default: bbr would leave the kernel's pacing on after the switch (underlay::initial).
        AlccStream::from_tcp(underlay::connect(addr, &options.underlay)?, options)
    }

    /// Takes over a connected TCP stream (accepted or connected) on which nothing was written
    /// yet, and sends on it under `options` in kernel or framed mode. The socket keeps what
    /// its handshake started it under: one started under `bbr` (the host's default on many
    /// hosts) stays paced by the kernel after the switch to the underlay
    /// ([`FlowInfo::prior_congestion`] says so); create it under the underlay
    /// ([`underlay::bind_listener`], [`underlay::connect`]) or use [`crate::AlccListener`].
    pub fn from_tcp(tcp: TcpStream, options: &Options) -> Result<AlccStream> {
        tcp.set_nonblocking(true)?;
        let control = Control::build(&options.cc, options, options.mode)?;
        AlccStream::from_fd_under(tcp.into(), options, control, FileSends::Sendfile)
    }

    /// Takes over a connected TCP socket like [`from_tcp`](Self::from_tcp), but leaves its
    /// file status flags alone: `fd` may be a `dup` of a descriptor the application keeps
    /// using (reading from it, polling it, closing it), and O_NONBLOCK belongs to the open
    /// file that all those descriptors share. The engine needs no O_NONBLOCK: every call it
    /// makes on the socket passes MSG_DONTWAIT (so a range handed to
    /// [`send_file`](Self::send_file) is read into a buffer and written, not sent by
    /// sendfile(2), which has no such flag). The socket's pending error is the application's
    /// to read too (reading SO_ERROR clears it): when the connection closes, the engine leaves
    /// it and fails the flow with a reset of its own only if bytes it sent were still
    /// unacknowledged. End such a stream with [`release`](Self::release) when the
    /// application's descriptor closes.
    pub fn from_shared_fd(fd: OwnedFd, options: &Options) -> Result<AlccStream> {
        let control = Control::build(&options.cc, options, options.mode)?;
        AlccStream::from_fd_under(fd, options, control, FileSends::Read)
    }

    /// Like [`from_tcp`](Self::from_tcp), under a controller of the application's own
    /// instead of one from the registry; `options.cc` only names it (in [`FlowInfo`] and, in
    /// framed mode, in the `Hello` the receiver builds its model from).
    pub fn from_tcp_with_controller(
        tcp: TcpStream,
        options: &Options,
        controller: Box<dyn alcc_cc::Controller>,
    ) -> Result<AlccStream> {
        let control = Control::controlled(controller);
        tcp.set_nonblocking(true)?;
        AlccStream::from_fd_under(tcp.into(), options, control, FileSends::Sendfile)
    }

    fn from_fd_under(
        fd: OwnedFd,
        options: &Options,
        control: Control,
        files: FileSends,
    ) -> Result<AlccStream> {
        let transport = match options.mode {
            Mode::Kernel => Transport::kernel(files),
            Mode::Framed => Transport::framed(&options.cc)?,
            Mode::Udp => {
                return Err(Error::Io(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "udp mode runs on a UDP socket: AlccStream::accept_udp",
                )))
            }
        };
        let raw = fd.as_raw_fd();
        // The kernel's segment size is known once connected; the underlay counts in it.
        let mss = sys::tcp_info(raw).map_or(options.mss, |i| u64::from(i.snd_mss)).max(1);
        let attached = options.underlay.parse::<Underlay>()?.attach(raw, control.decision(), mss)?;
        if let Some(t) = options.user_timeout {
            let ms = libc::c_int::try_from(t.as_millis()).unwrap_or(libc::c_int::MAX).max(1);
            sys::set_int(raw, libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, ms)?;
        }
        AlccStream::start(
            fd,
            options,
            control,
            transport,
            (attached.flow, &options.underlay),
            attached.prior_congestion,
        )
    }

    /// The sending side of UDP mode: waits on `socket` for a client's start request,
    /// connects the socket to that client and sends to it under `options` (one client per
    /// socket), every datagram carrying the connection id of the client's request. Datagrams
    /// that are not a valid request are ignored while waiting (a version-1 client's request
    /// is answered with [`VERSION_NOTICE`](crate::wire::udp::VERSION_NOTICE)).
    pub fn accept_udp(socket: UdpSocket, options: &Options) -> Result<(AlccStream, SocketAddr)> {
        // Refused specs fail before anything is read.
        Control::build(&options.cc, options, Mode::Udp)?;
        Transport::udp(&options.cc, ConnectionId::default())?;
        let (peer, id) = wait_hello(&socket, |_, _| true)?;
        socket.connect(peer)?;
        Ok((AlccStream::start_udp(socket, id, options)?, peer))
    }

    /// The sending side of UDP mode on `socket`, already connected to its client, whose
    /// start request for flow `id` was read (by [`AlccStream::accept_udp`] or
    /// [`crate::AlccUdpListener`]).
    pub(crate) fn start_udp(socket: UdpSocket, id: ConnectionId, options: &Options) -> Result<AlccStream> {
        let options = Options { mode: Mode::Udp, ..options.clone() };
        let control = Control::build(&options.cc, &options, Mode::Udp)?;
        let transport = Transport::udp(&options.cc, id)?;
        socket.set_nonblocking(true)?;
        AlccStream::start(
            socket.into(),
            &options,
            control,
            transport,
            (FlowUnderlay::Kernel, "udp"),
            String::new(),
        )
    }

    /// Prepares the socket `fd` (already configured but for the controller, with `underlay`
    /// and its name; `prior_congestion` the kernel congestion control it had before, empty
    /// for UDP) and hands the flow to the driver; returns the application's end of it.
    fn start(
        fd: OwnedFd,
        options: &Options,
        control: Control,
        transport: Transport,
        (underlay, underlay_name): (FlowUnderlay, &str),
        prior_congestion: String,
    ) -> Result<AlccStream> {
        let driver = driver::get()?;
        let id = driver.next_id()?;
        let mut info = FlowInfo {
            controller: options.cc.clone(),
            underlay: underlay_name.to_string(),
            prior_congestion,
            ..FlowInfo::default()
        };
        control.publish(&mut info);
        let shared = Shared::new(options.queue_capacity, info);
        let fd = Arc::new(fd);
        let peer = match options.mode {
            Mode::Udp => fd.try_clone().ok().and_then(|f| UdpSocket::from(f).peer_addr().ok()),
            _ => fd.try_clone().ok().and_then(|f| TcpStream::from(f).peer_addr().ok()),
        };
        let membership = Membership::new(
            options.grouping.key(peer, options.manager.as_deref()),
            crate::coupling::check_weight(options.weight)?,
        );
        let mut flow = Flow::new(id, fd.clone(), shared.clone(), control, transport, underlay, options)
            .in_group(membership);
        flow.prepare_socket()?;
        driver.register(flow)?;
        crate::exit::track(id, &shared);
        Ok(AlccStream {
            id,
            fd,
            shared,
            driver,
            options: options.clone(),
            nonblocking: false,
            read_timeout: None,
            write_timeout: None,
            closed: AtomicBool::new(false),
        })
    }

    /// The mode of this flow.
    pub fn mode(&self) -> Mode {
        self.options.mode
    }

    /// The raw socket (for `poll` on readability; write through this stream only).
    pub fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        match self.options.mode {
            Mode::Udp => UdpSocket::from(self.fd.try_clone()?).peer_addr(),
            _ => self.with_tcp(|s| s.peer_addr()),
        }
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match self.options.mode {
            Mode::Udp => UdpSocket::from(self.fd.try_clone()?).local_addr(),
            _ => self.with_tcp(|s| s.local_addr()),
        }
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

    /// Replaces the controller (`copa:delta=0.5`, `none`) from now on, built with this flow's
    /// [`Options::mss`]. Returns once the driver has put it in place; a flow that ran as
    /// `none` has its socket prepared for a controller first (ACK timestamps, TCP_NODELAY,
    /// TCP_NOTSENT_LOWAT), as one created under a controller has.
    pub fn set_cc(&self, spec: &str) -> Result<()> {
        let mode = self.options.mode;
        // The receiver built its model from the first controller's Hello; a receiver-side
        // algorithm switched in later would have no model feeding it.
        if mode != Mode::Kernel
            && !crate::options::is_none(spec)
            && alcc_cc::registry::entry(spec)?.needs_receiver()
        {
            return Err(Error::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("alcc {mode}: `{spec}` needs the receiver's model, chosen when the flow started"),
            )));
        }
        let control = Control::build(spec, &self.options, mode)?;
        let generation = {
            let mut st = self.shared.lock();
            st.control_requested += 1;
            let generation = st.control_requested;
            st.control_change = Some(ControlChange { spec: spec.to_string(), control, generation });
            generation
        };
        self.wake();
        self.shared
            .wait_for(Wait::Forever, "set_cc", |st| {
                if st.control_applied >= generation {
                    Some(Ok(()))
                } else if st.released {
                    Some(Err(io::Error::new(io::ErrorKind::NotConnected, "alcc set_cc: the flow has ended")))
                } else {
                    None
                }
            })
            .map_err(Error::Io)
    }

    /// Replaces the kernel congestion control (`cubic`, or the BPF underlay `alcc:follow`).
    pub fn set_underlay(&self, name: &str) -> Result<()> {
        let (decision, mss) = {
            let st = self.shared.lock();
            let decision = (st.info.metrics.is_some())
                .then_some(alcc_cc::Decision { window: st.info.window, pacing_rate: st.info.pacing_rate });
            let mss = st.info.kernel_mss;
            (decision, if mss > 0 { u64::from(mss) } else { self.options.mss.max(1) })
        };
        let underlay = name.parse::<Underlay>()?.attach(self.fd.as_raw_fd(), decision, mss)?.flow;
        let mut st = self.shared.lock();
        st.info.underlay = name.into();
        if !st.released {
            st.new_underlay = Some(underlay);
        }
        drop(st);
        self.wake();
        Ok(())
    }

    /// Sets the flow's priority weight in its group (docs/coupled-flows.md; e.g. after an HTTP
    /// request named it). A weight that is not finite and above zero is refused.
    pub fn set_weight(&self, weight: f64) -> Result<()> {
        let weight = crate::coupling::check_weight(weight)?;
        let mut st = self.shared.lock();
        if !st.released {
            st.new_weight = Some(weight);
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
        InfoHandle { fd: Arc::downgrade(&self.fd), shared: self.shared.clone() }
    }

    /// Fails the flow in this process if it is a forked child's copy of a flow that the
    /// parent's driver serves (nobody here would ever move its bytes); returns whether it did.
    fn fail_if_inherited(&self) -> bool {
        if self.driver.runs_here() {
            return false;
        }
        self.shared.lock().fail(
            io::ErrorKind::Unsupported,
            "alcc: this flow belongs to the process that started it; a forked child cannot send on it \
             (take the socket over anew in the child)"
                .into(),
        );
        self.shared.notify();
        true
    }

    fn wake(&self) {
        if self.fail_if_inherited() {
            return;
        }
        let mut st = self.shared.lock();
        if !st.wake_pending && !st.released {
            st.wake_pending = true;
            drop(st);
            self.driver.wake(self.id);
        }
    }

    /// Waits until everything queued is in the kernel and acknowledged, the FIN sent (and,
    /// in framed mode, acknowledged: crates/alcc/README.md "Close and exit"). `timeout`: give
    /// up waiting with `TimedOut`; the driver goes on flushing in the background. Reports a
    /// reset or other failure as an error. Without a timeout the wait still ends: a peer that
    /// acknowledges nothing for [`Options::close_user_timeout`] after the close fails the flow
    /// (crates/alcc/README.md "Close and exit").
    pub fn close(self, timeout: Option<Duration>) -> io::Result<()> {
        self.close_ref(timeout)
    }

    /// [`close`](Self::close) through a shared reference (for the C ABI); later writes fail.
    pub fn close_ref(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.end(Ending::Finish);
        self.shared.wait_for(Wait::up_to(timeout, false), "close: flush", |st| st.finished.then_some(Ok(())))
    }

    /// Ends the application's side of the flow as `ending` says (later writes fail) and lets
    /// the driver act on it.
    fn end(&self, ending: Ending) {
        self.closed.store(true, Ordering::Relaxed);
        {
            let mut st = self.shared.lock();
            if !st.ending.is_ended() {
                st.ending = ending;
            }
            st.sync_readiness();
        }
        self.wake();
    }

    /// Lets go of the flow as close(2) lets go of one of several descriptors of a socket:
    /// the driver still moves everything queued into the kernel under the controller, then
    /// closes the engine's descriptor without sending a FIN itself. The kernel sends what it
    /// holds and its FIN once the socket's last descriptor closes, in this process or
    /// another (a dup the application kept, a forked child). Returns at once; a failure
    /// while flushing is not reported to anyone (as with close(2)). For
    /// [`from_shared_fd`](Self::from_shared_fd) streams, whose socket the application keeps.
    /// The engine's descriptor closes when the driver is done *and* this stream is dropped:
    /// drop it soon (it only holds the descriptor and the flow's figures from then on).
    pub fn release(&self) {
        self.end(Ending::Release);
    }

    /// Ends the sending side as shutdown(2) with SHUT_WR does, without waiting: the driver
    /// flushes what is queued, then sends the FIN; later writes fail. [`close`](Self::close)
    /// is this plus waiting until everything is acknowledged.
    pub fn finish(&self) {
        self.end(Ending::Finish);
    }

    /// Whether the driver has let go of the flow (finished, released or failed).
    pub fn is_released(&self) -> bool {
        self.shared.lock().released
    }

    /// The flow's readiness descriptor for event loops: it polls writable (POLLOUT, EPOLLOUT)
    /// exactly while a write to this stream would not block, level- or edge-triggered (one
    /// edge per transition to writable); watch it for EPOLLOUT only. When the flow fails or
    /// is closed it stays writable and the next write returns the error. Made on the first
    /// call (one eventfd); valid while the stream lives; do not read, write or close it.
    pub fn writable_fd(&self) -> io::Result<RawFd> {
        self.shared.lock().readiness_fd()
    }

    /// Whether a write would not block now (queue room, or the flow ended or failed).
    pub fn accepts_write(&self) -> bool {
        self.shared.lock().accepts_write()
    }

    /// The flow's failure, if it failed.
    pub fn failure(&self) -> Option<io::Error> {
        self.shared.lock().failure()
    }

    /// Resets the connection at once, discarding what is queued.
    pub fn abort(self) {
        self.closed.store(true, Ordering::Relaxed);
        // SO_LINGER 0 now, not only when the driver gets to the flow: whoever closes the
        // socket last (the driver, or the process exiting first) then sends a reset.
        let _ = sys::set_linger_zero(self.fd.as_raw_fd());
        self.shared.lock().abort = true;
        self.wake();
    }

    /// Shuts down reading (writing ends with [`close`](Self::close)).
    pub fn shutdown_read(&self) -> io::Result<()> {
        self.with_tcp(|s| s.shutdown(Shutdown::Read))
    }

    /// Reads what the peer sent (kernel mode; in framed and UDP mode the peer sends only
    /// ACK frames, which the flow reads itself); `nonblocking` returns `WouldBlock` instead
    /// of waiting.
    pub fn read_with(&self, buf: &mut [u8], nonblocking: bool) -> io::Result<usize> {
        if self.options.mode != Mode::Kernel {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "alcc {}: the sending side reads nothing (the peer's bytes are its ACK frames)",
                    self.options.mode
                ),
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

    fn wait_readable(&self) -> io::Result<()> {
        if sys::poll_one(self.fd.as_raw_fd(), libc::POLLIN, self.read_timeout)? {
            Ok(())
        } else {
            Err(io::Error::new(io::ErrorKind::TimedOut, "alcc read timed out"))
        }
    }

    /// Queues as much of `buf` as fits; waits while the queue is full unless `nonblocking`
    /// (then `WouldBlock`).
    pub fn write_with(&self, buf: &[u8], nonblocking: bool) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let n = self.queue_with(nonblocking, "write", |st| st.queue.push(buf) as u64)?;
        Ok(usize::try_from(n).unwrap_or(buf.len()))
    }

    /// Queues `len` bytes of `file` from `offset` by reference, after what was queued
    /// before: the application copies nothing, and in kernel mode the driver sends them with
    /// sendfile(2), so they never pass through user space (framed and UDP mode, and a stream
    /// made by [`from_shared_fd`](Self::from_shared_fd), read each chunk into a buffer with
    /// pread(2)). The whole range is taken unless the queue is full (it holds no memory), so
    /// the return value is `len` (or 0 for an empty range); a full queue waits as
    /// [`write`](Write::write) does (or `WouldBlock` when non-blocking).
    ///
    /// The stream keeps its own descriptor of the file (a dup; the file's position is never
    /// used or moved) until the range is sent. The bytes sent are the file's when the driver
    /// sends them, as with sendfile(2): they must not change until the flow has sent them
    /// ([`flush`](Write::flush) waits for that), and a file that ends before the range
    /// fails the flow with `UnexpectedEof`.
    pub fn send_file(&self, file: impl AsFd, offset: u64, len: u64) -> io::Result<u64> {
        self.send_file_with(file, offset, len, self.nonblocking)
    }

    /// [`send_file`](Self::send_file); `nonblocking` returns `WouldBlock` instead of waiting
    /// while the queue is full.
    pub fn send_file_with(
        &self,
        file: impl AsFd,
        offset: u64,
        len: u64,
        nonblocking: bool,
    ) -> io::Result<u64> {
        if len == 0 {
            return Ok(0);
        }
        offset.checked_add(len).filter(|end| i64::try_from(*end).is_ok()).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "alcc send_file: the range ends beyond 2^63")
        })?;
        let file = Arc::new(file.as_fd().try_clone_to_owned()?);
        self.queue_with(nonblocking, "send_file", |st| {
            st.queue.push_file(FileRange { file: file.clone(), offset, len })
        })
    }

    /// Waits (as `nonblocking` and the write timeout allow) until the queue has room, then
    /// queues with `push` and wakes the driver; `what` names the call in errors.
    fn queue_with(
        &self,
        nonblocking: bool,
        what: &str,
        mut push: impl FnMut(&mut SharedState) -> u64,
    ) -> io::Result<u64> {
        self.fail_if_inherited();
        let wait = Wait::up_to(self.write_timeout, nonblocking);
        let mut notify = false;
        let n = self.shared.wait_for(wait, what, |st| {
            if st.ending.is_ended() || st.released {
                return Some(Err(io::Error::new(io::ErrorKind::BrokenPipe, "alcc stream is closed")));
            }
            if st.queue.is_full() {
                return None;
            }
            let n = push(st);
            st.sync_readiness();
            notify = !st.wake_pending;
            st.wake_pending = true;
            Some(Ok(n))
        })?;
        if notify {
            self.driver.wake(self.id);
        }
        Ok(n)
    }

    /// Waits until everything queued was handed to the kernel.
    pub fn flush_with(&self, nonblocking: bool) -> io::Result<()> {
        self.shared
            .wait_for(Wait::up_to(None, nonblocking), "flush", |st| st.queue.is_empty().then_some(Ok(())))
    }
}

impl AsRawFd for AlccStream {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Reads datagrams from `socket` until a start request (`Hello`) for a flow that `wanted`
/// accepts (the client's address and the connection id it chose); returns those. Other
/// datagrams are ignored, but a version-1 client's request gets the 8-byte
/// [`VERSION_NOTICE`], which it reports as an unsupported version instead of waiting in vain.
pub(crate) fn wait_hello(
    socket: &UdpSocket,
    mut wanted: impl FnMut(SocketAddr, ConnectionId) -> bool,
) -> io::Result<(SocketAddr, ConnectionId)> {
    let mut buf = [0u8; 2048];
    loop {
        let (n, peer) = socket.recv_from(&mut buf)?;
        match parse_datagram(&buf[..n]) {
            Ok((id, Frame::Hello { .. })) if wanted(peer, id) => return Ok((peer, id)),
            Ok(_) => {}
            Err(_) if is_version1_request(&buf[..n]) => {
                // Lost like any datagram if the socket's buffer is full.
                let _ = socket.send_to(&VERSION_NOTICE, peer);
            }
            Err(_) => {}
        }
    }
}

/// Reads one flow's [`FlowInfo`] from any thread; see [`AlccStream::info_handle`].
///
/// It does not keep the flow's socket open: once the stream and the driver have let go of it,
/// the socket closes as it would without a handle (a connected UDP socket kept open would take
/// the datagrams of a new client on the same address, a TCP socket its FIN), and
/// [`info`](Self::info) then gives the kernel's figures of its last reading.
#[derive(Clone)]
pub struct InfoHandle {
    fd: Weak<OwnedFd>,
    shared: Arc<Shared>,
}

impl InfoHandle {
    /// The same as [`AlccStream::info`]. After the flow's socket was closed, the kernel's
    /// fields are those of the last reading while it was open (kept with the flow's figures).
    pub fn info(&self) -> FlowInfo {
        let Some(socket) = self.fd.upgrade() else {
            return self.shared.lock().info.clone();
        };
        let fd = socket.as_raw_fd();
        let tcp = sys::tcp_info(fd).ok();
        // What the kernel actually runs, not what was asked for.
        let underlay = sys::get_congestion(fd).ok();
        let mut st = self.shared.lock();
        if let Some(ti) = &tcp {
            st.info.set_kernel(ti);
        }
        if let Some(cc) = underlay {
            st.info.underlay = cc;
        }
        st.info.clone()
    }

    /// Whether the flow is over (finished or failed, and released by the driver).
    pub fn is_done(&self) -> bool {
        self.shared.lock().released
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
    /// in the background, also when the process exits first ([`crate::flush_at_exit`]).
    fn drop(&mut self) {
        if !self.closed.load(Ordering::Relaxed) {
            self.end(Ending::Finish);
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
    /// How long its steps and wake-ups took (percentiles since it started).
    pub step_latency: crate::step_latency::StepLatency,
}

/// What the process's driver thread has done so far (starts it if needed).
pub fn driver_stats() -> io::Result<DriverStats> {
    let d = driver::get()?;
    Ok(DriverStats {
        flows: d.flows(),
        cpu_time: d.cpu_time(),
        wakeups: d.wakeups(),
        step_latency: d.step_latency(),
    })
}
