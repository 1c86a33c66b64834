//! Every Linux system call the engine makes, and the only `unsafe` code in this crate.
//!
//! Socket options (TCP_CONGESTION, TCP_NOTSENT_LOWAT, SO_TIMESTAMPING, ...), TCP_INFO with
//! our own struct definition (the libc one may be shorter than the kernel's), the socket
//! error queue with its SCM_TIMESTAMPING / sock_extended_err control messages, epoll,
//! eventfd and timerfd. Each function checks the return value and turns it into
//! `io::Result`; nothing here panics.

use std::io;
use std::mem;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use alcc_cc::Time;

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn cvt_size(ret: libc::ssize_t) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// Sets an integer socket option.
pub fn set_int(fd: RawFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: `value` lives across the call and its size is passed.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// Reads an integer socket option.
pub fn get_int(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `value`.
    cvt(unsafe { libc::getsockopt(fd, level, name, (&mut value as *mut libc::c_int).cast(), &mut len) })?;
    Ok(value)
}

/// Sets the kernel congestion control of a TCP socket (`cubic`, `reno`, `bbr`).
pub fn set_congestion(fd: RawFd, name: &str) -> io::Result<()> {
    // SAFETY: the pointer and length describe `name`'s bytes, which outlive the call.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// A fresh, unconnected TCP socket (IPv4), for probing socket options.
pub fn tcp_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; the descriptor it returns is owned by nobody else.
    let fd = cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `fd` was just created and is valid.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Reads the kernel congestion control of a TCP socket.
pub fn get_congestion(fd: RawFd) -> io::Result<String> {
    let mut buf = [0u8; 32];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `buf`.
    cvt(unsafe {
        libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, buf.as_mut_ptr().cast(), &mut len)
    })?;
    let n = buf.iter().take(len as usize).position(|&b| b == 0).unwrap_or(len as usize);
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

/// Linux's `struct tcp_info` (include/uapi/linux/tcp.h, as of 6.18) up to
/// `tcpi_total_rto_time`. Fields the running kernel does not fill stay zero.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
#[allow(missing_docs)]
pub struct TcpInfo {
    pub state: u8,
    pub ca_state: u8,
    pub retransmits: u8,
    pub probes: u8,
    pub backoff: u8,
    pub options: u8,
    pub wscale: u8,
    pub flags: u8,
    pub rto: u32,
    pub ato: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub fackets: u32,
    pub last_data_sent: u32,
    pub last_ack_sent: u32,
    pub last_data_recv: u32,
    pub last_ack_recv: u32,
    pub pmtu: u32,
    pub rcv_ssthresh: u32,
    /// Smoothed RTT, microseconds.
    pub rtt: u32,
    pub rttvar: u32,
    pub snd_ssthresh: u32,
    /// Congestion window, segments.
    pub snd_cwnd: u32,
    pub advmss: u32,
    pub reordering: u32,
    pub rcv_rtt: u32,
    pub rcv_space: u32,
    pub total_retrans: u32,
    pub pacing_rate: u64,
    pub max_pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub notsent_bytes: u32,
    pub min_rtt: u32,
    pub data_segs_in: u32,
    pub data_segs_out: u32,
    pub delivery_rate: u64,
    pub busy_time: u64,
    pub rwnd_limited: u64,
    pub sndbuf_limited: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub dsack_dups: u32,
    pub reord_seen: u32,
    pub rcv_ooopack: u32,
    pub snd_wnd: u32,
    pub rcv_wnd: u32,
    pub rehash: u32,
    pub total_rto: u16,
    pub total_rto_recoveries: u16,
    pub total_rto_time: u32,
}

/// `TCP_FIN_WAIT2` of `tcpi_state` (include/net/tcp_states.h).
const TCP_FIN_WAIT2: u8 = 5;
/// `TCP_TIME_WAIT` of `tcpi_state`.
const TCP_TIME_WAIT: u8 = 6;
/// `TCP_CLOSE` of `tcpi_state`.
const TCP_CLOSE: u8 = 7;

impl TcpInfo {
    /// Whether the connection is closed (reset, timed out, or both FINs done).
    pub fn is_closed(&self) -> bool {
        self.state == TCP_CLOSE
    }

    /// Whether our FIN has been acknowledged by the peer (RFC 9293 3.3.2: FIN-WAIT-2 and
    /// TIME-WAIT come only after it, CLOSED after it or after a reset or timeout, which the
    /// socket's error reports). In FIN-WAIT-1, CLOSING and LAST-ACK it is not yet.
    pub fn fin_acknowledged(&self) -> bool {
        matches!(self.state, TCP_FIN_WAIT2 | TCP_TIME_WAIT | TCP_CLOSE)
    }
}

/// Reads TCP_INFO (about 0.4 us).
pub fn tcp_info(fd: RawFd) -> io::Result<TcpInfo> {
    let mut info = TcpInfo::default();
    let mut len = mem::size_of::<TcpInfo>() as libc::socklen_t;
    // SAFETY: `TcpInfo` is plain old data; the kernel writes at most `len` bytes into it.
    cvt(unsafe {
        libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, (&mut info as *mut TcpInfo).cast(), &mut len)
    })?;
    Ok(info)
}

// linux/net_tstamp.h
const SOF_TIMESTAMPING_SOFTWARE: libc::c_int = 1 << 4;
const SOF_TIMESTAMPING_OPT_ID: libc::c_int = 1 << 7;
const SOF_TIMESTAMPING_TX_SCHED: libc::c_int = 1 << 8;
const SOF_TIMESTAMPING_TX_ACK: libc::c_int = 1 << 9;
const SOF_TIMESTAMPING_OPT_TSONLY: libc::c_int = 1 << 11;
const SOF_TIMESTAMPING_OPT_ID_TCP: libc::c_int = 1 << 16;
// linux/errqueue.h
const SO_EE_ORIGIN_TIMESTAMPING: u8 = 4;
const SCM_TSTAMP_SND: u32 = 0;
const SCM_TSTAMP_SCHED: u32 = 1;
const SCM_TSTAMP_ACK: u32 = 2;

/// What the socket reports of its transmit timestamps: in software, with byte-offset ids
/// counted from the moment OPT_ID is first set (SOF_TIMESTAMPING_OPT_ID | OPT_ID_TCP), without
/// payload (OPT_TSONLY).
const STAMP_REPORTING: libc::c_int = SOF_TIMESTAMPING_SOFTWARE
    | SOF_TIMESTAMPING_OPT_ID
    | SOF_TIMESTAMPING_OPT_ID_TCP
    | SOF_TIMESTAMPING_OPT_TSONLY;

/// Which timestamps a write records: SCHED (the packet scheduler took it) and ACK (its last
/// byte cumulatively acknowledged).
const STAMP_RECORDING: libc::c_int = SOF_TIMESTAMPING_TX_SCHED | SOF_TIMESTAMPING_TX_ACK;

/// Asks the kernel for a SCHED and an ACK timestamp of the last byte of every write, with
/// byte-offset ids counted from now (SOF_TIMESTAMPING_OPT_ID | OPT_ID_TCP), without payload
/// (OPT_TSONLY).
pub fn enable_ack_timestamps(fd: RawFd) -> io::Result<()> {
    set_write_stamps(fd, true)
}

/// Switches the recording of SCHED and ACK timestamps for the writes that follow on (`on`) or
/// off, the reporting options staying as [`enable_ack_timestamps`] set them. The byte-offset
/// ids keep counting from where that call started them: the kernel resets its id counter
/// (`sk_tskey`) only when OPT_ID goes from unset to set (net/core/sock.c,
/// `sock_set_timestamping`), and the recording bits are taken per write, onto the write's
/// last buffer (net/ipv4/tcp.c, `tcp_tx_timestamp`; Documentation/networking/timestamping.rst,
/// 1.3.1 and 1.3.4), so a write made while they are off gets no timestamp and one made before
/// keeps its own.
pub fn set_write_stamps(fd: RawFd, on: bool) -> io::Result<()> {
    let flags = STAMP_REPORTING | if on { STAMP_RECORDING } else { 0 };
    set_int(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPING, flags)
}

/// SO_MAX_PACING_RATE (asm-generic/socket.h; not in every libc).
const SO_MAX_PACING_RATE: libc::c_int = 47;

/// Caps the kernel's own pacing of this socket at `rate` bytes/s (`None`: no cap). The
/// kernel paces TCP itself, segment by segment, without the fq qdisc.
pub fn set_max_pacing_rate(fd: RawFd, rate: Option<u64>) -> io::Result<()> {
    let value: u64 = rate.unwrap_or(u64::MAX);
    // SAFETY: `value` lives across the call; the kernel reads an unsigned long (8 bytes).
    cvt(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            SO_MAX_PACING_RATE,
            (&value as *const u64).cast(),
            mem::size_of::<u64>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// Makes the socket's receive buffer (which the error queue counts against) at least `bytes`.
pub fn grow_rcvbuf(fd: RawFd, bytes: libc::c_int) -> io::Result<()> {
    // SO_RCVBUFFORCE exceeds rmem_max but needs CAP_NET_ADMIN; fall back to SO_RCVBUF.
    set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, bytes)
        .or_else(|_| set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, bytes))
}

/// Which moment a transmit timestamp records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StampKind {
    /// The write entered the packet scheduler.
    Sched,
    /// The write left through the driver.
    Snd,
    /// The last byte of the write was cumulatively acknowledged.
    Ack,
}

/// One transmit timestamp from the error queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// What it records.
    pub kind: StampKind,
    /// The id: offset of the write's last byte modulo 2^32.
    pub id: u32,
    /// The timestamp, nanoseconds on CLOCK_REALTIME.
    pub ns: u64,
}

/// `struct sock_extended_err` (linux/errqueue.h).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct SockExtendedErr {
    ee_errno: u32,
    ee_origin: u8,
    ee_type: u8,
    ee_code: u8,
    ee_pad: u8,
    ee_info: u32,
    ee_data: u32,
}

/// Error-queue messages one `recvmmsg` call reads.
const ERRQUEUE_BATCH: usize = 32;

/// Control buffer of one error-queue message: the timestamp and the extended error fit in
/// far less; u64 elements keep it aligned for cmsghdr.
type ControlBuf = [u64; 32];

/// Reads every pending message of the error queue, appending its timestamps to `out`.
/// Returns how many messages were read. One recvmmsg(2) call reads up to 32 messages, so
/// a queue of fewer is drained in one system call (a short batch means the queue is empty;
/// only a full one is followed by another call).
pub fn drain_error_queue(fd: RawFd, out: &mut Vec<Stamp>) -> io::Result<usize> {
    thread_local! {
        /// The control buffers, one set per thread (the driver's, in practice), so that a
        /// step does not clear 8 KiB each time: the kernel writes what it reports.
        static CONTROL: std::cell::RefCell<Box<[ControlBuf; ERRQUEUE_BATCH]>> =
            std::cell::RefCell::new(Box::new([ControlBuf::default(); ERRQUEUE_BATCH]));
    }
    CONTROL.with(|c| drain_into(fd, &mut c.borrow_mut(), out))
}

fn drain_into(
    fd: RawFd,
    control: &mut [ControlBuf; ERRQUEUE_BATCH],
    out: &mut Vec<Stamp>,
) -> io::Result<usize> {
    let mut count = 0;
    loop {
        // SAFETY: mmsghdr is plain old data; zeroed is a valid empty header.
        let mut msgs: [libc::mmsghdr; ERRQUEUE_BATCH] = unsafe { mem::zeroed() };
        for (m, c) in msgs.iter_mut().zip(control.iter_mut()) {
            m.msg_hdr.msg_control = c.as_mut_ptr().cast();
            m.msg_hdr.msg_controllen = mem::size_of::<ControlBuf>();
        }
        // SAFETY: each header points at its own control buffer, all of which outlive the
        // call; no data iovecs; no timeout.
        let ret = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                ERRQUEUE_BATCH as libc::c_uint,
                libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if ret < 0 {
            let err = io::Error::last_os_error();
            return match err.kind() {
                io::ErrorKind::WouldBlock => Ok(count),
                io::ErrorKind::Interrupted => continue,
                _ => Err(err),
            };
        }
        let got = usize::try_from(ret).unwrap_or(0);
        for m in &msgs[..got] {
            if let Some(stamp) = parse_stamp(&m.msg_hdr) {
                out.push(stamp);
            }
        }
        count += got;
        if got < ERRQUEUE_BATCH {
            return Ok(count);
        }
    }
}

/// The transmit timestamp an error-queue message carries, if it is one.
fn parse_stamp(msg: &libc::msghdr) -> Option<Stamp> {
    let mut ns = None;
    let mut ext = None;
    // SAFETY: the CMSG_* macros walk the control buffer the kernel filled, bounded by
    // msg_controllen; each payload is read with read_unaligned at its declared length.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
        while !cmsg.is_null() {
            let c = &*cmsg;
            let data = libc::CMSG_DATA(cmsg);
            let payload = (c.cmsg_len as usize).saturating_sub(data as usize - cmsg as usize);
            if c.cmsg_level == libc::SOL_SOCKET
                && c.cmsg_type == libc::SO_TIMESTAMPING
                && payload >= mem::size_of::<libc::timespec>()
            {
                let ts: libc::timespec = std::ptr::read_unaligned(data.cast());
                ns = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            } else if ((c.cmsg_level == libc::SOL_IP && c.cmsg_type == libc::IP_RECVERR)
                || (c.cmsg_level == libc::SOL_IPV6 && c.cmsg_type == libc::IPV6_RECVERR))
                && payload >= mem::size_of::<SockExtendedErr>()
            {
                ext = Some(std::ptr::read_unaligned(data.cast::<SockExtendedErr>()));
            }
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
    }
    let (ns, e) = (ns?, ext?);
    if e.ee_errno != libc::ENOMSG as u32 || e.ee_origin != SO_EE_ORIGIN_TIMESTAMPING {
        return None;
    }
    let kind = match e.ee_info {
        SCM_TSTAMP_SCHED => StampKind::Sched,
        SCM_TSTAMP_SND => StampKind::Snd,
        SCM_TSTAMP_ACK => StampKind::Ack,
        _ => return None,
    };
    Some(Stamp { kind, id: e.ee_data, ns })
}

/// The most slices one [`send_parts`] writes (its iovecs; the kernel allows 1024).
pub const MAX_PARTS: usize = 16;

/// Writes the concatenation of `parts` (the first [`MAX_PARTS`] non-empty ones) without
/// blocking and without SIGPIPE; with `record`, as one record (MSG_EOR, so that the kernel
/// keeps its timestamp request for the last byte instead of merging the write into the next).
pub fn send_parts<P: AsRef<[u8]>>(
    fd: RawFd,
    parts: impl IntoIterator<Item = P>,
    record: bool,
) -> io::Result<usize> {
    let mut iov = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; MAX_PARTS];
    let mut count = 0;
    // The parts must outlive the call: they are kept until it returns.
    let parts: [Option<P>; MAX_PARTS] = {
        let mut it = parts.into_iter().filter(|p| !p.as_ref().is_empty());
        std::array::from_fn(|_| it.next())
    };
    for p in parts.iter().flatten() {
        let p = p.as_ref();
        iov[count] = libc::iovec { iov_base: p.as_ptr() as *mut libc::c_void, iov_len: p.len() };
        count += 1;
    }
    // SAFETY: msghdr is plain old data; zeroed is a valid empty header.
    let mut msg: libc::msghdr = unsafe { mem::zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = count;
    let flags = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL | if record { libc::MSG_EOR } else { 0 };
    // SAFETY: the iovecs describe the borrowed `parts`, which outlive the call; the kernel
    // only reads them.
    cvt_size(unsafe { libc::sendmsg(fd, &msg, flags) })
}

/// sendfile(2): up to `len` bytes of `file` from `offset` into socket `fd`, in the kernel
/// (the file's pages are spliced into the socket; no byte passes through user space). Does
/// not block only if `fd`'s open file has O_NONBLOCK (sendfile takes no MSG_DONTWAIT).
/// Returns the bytes sent; 0 means the file ended at `offset`.
pub fn sendfile(fd: RawFd, file: RawFd, offset: u64, len: usize) -> io::Result<usize> {
    let mut off = libc::off_t::try_from(offset)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file offset beyond 2^63"))?;
    // SAFETY: both are open descriptors; `off` lives across the call and sendfile updates it.
    cvt_size(unsafe { libc::sendfile(fd, file, &mut off, len) })
}

/// pread(2): reads into `buf` from `offset` of `file` (0 at its end).
pub fn pread(file: RawFd, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let off = libc::off_t::try_from(offset)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file offset beyond 2^63"))?;
    // SAFETY: the pointer and length describe `buf`, which the kernel may fill.
    cvt_size(unsafe { libc::pread(file, buf.as_mut_ptr().cast(), buf.len(), off) })
}

/// Reads into `buf` without blocking.
pub fn recv_nonblocking(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: the pointer and length describe `buf`, which the kernel may fill.
    cvt_size(unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) })
}

/// Waits until `fd` has any of `events` (POLLIN, ...) or `timeout` passes (`None`: forever).
/// Returns whether it became ready.
pub fn poll_one(fd: RawFd, events: libc::c_short, timeout: Option<Duration>) -> io::Result<bool> {
    let ms = timeout.map_or(-1, |t| libc::c_int::try_from(t.as_millis()).unwrap_or(libc::c_int::MAX));
    let mut p = libc::pollfd { fd, events, revents: 0 };
    loop {
        // SAFETY: one valid pollfd.
        match cvt(unsafe { libc::poll(&mut p, 1, ms) }) {
            Ok(n) => return Ok(n > 0),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Shuts down the sending direction (the kernel sends its FIN after what is queued).
pub fn shutdown_write(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain syscall on a descriptor.
    cvt(unsafe { libc::shutdown(fd, libc::SHUT_WR) }).map(drop)
}

/// Shuts down both directions (a peer that broke the protocol is cut off).
pub fn shutdown_both(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain syscall on a descriptor.
    cvt(unsafe { libc::shutdown(fd, libc::SHUT_RDWR) }).map(drop)
}

/// Takes the socket's pending error (SO_ERROR), if any.
pub fn take_socket_error(fd: RawFd) -> io::Result<Option<io::Error>> {
    let e = get_int(fd, libc::SOL_SOCKET, libc::SO_ERROR)?;
    Ok((e != 0).then(|| io::Error::from_raw_os_error(e)))
}

/// Makes the next close send a reset instead of a FIN (SO_LINGER with zero timeout).
pub fn set_linger_zero(fd: RawFd) -> io::Result<()> {
    let l = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: `l` lives across the call and its size is passed.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&l as *const libc::linger).cast(),
            mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    })
    .map(drop)
}

fn clock(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out pointer; these clocks always exist on Linux.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The engine's clock: CLOCK_MONOTONIC in microseconds (the axis timerfd deadlines use).
pub fn now() -> Time {
    Time::from_micros(clock(libc::CLOCK_MONOTONIC) / 1000)
}

/// CLOCK_REALTIME in nanoseconds (the clock of software transmit timestamps).
pub fn realtime_ns() -> u64 {
    clock(libc::CLOCK_REALTIME)
}

/// The CPU-time clock of the calling thread (pthread_getcpuclockid), which any thread of the
/// process can read with [`cpu_clock_time`].
pub fn thread_cpu_clock() -> io::Result<libc::clockid_t> {
    let mut id: libc::clockid_t = 0;
    // SAFETY: pthread_self names the calling thread, which exists; `id` is a valid out pointer.
    match unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) } {
        0 => Ok(id),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// The CPU time on clock `id` ([`thread_cpu_clock`]); `None` once its thread is gone.
pub fn cpu_clock_time(id: libc::clockid_t) -> Option<Duration> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out pointer; an invalid clock is reported, not undefined.
    let ok = unsafe { libc::clock_gettime(id, &mut ts) } == 0;
    ok.then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// CPU time the calling thread has used.
pub fn thread_cpu_time() -> Duration {
    Duration::from_nanos(clock(libc::CLOCK_THREAD_CPUTIME_ID))
}

/// An epoll instance.
#[derive(Debug)]
pub struct Epoll {
    fd: OwnedFd,
}

/// One readiness report of [`Epoll::wait`]: the token registered and the events.
pub type Ready = libc::epoll_event;

impl Epoll {
    /// A new epoll instance (close-on-exec).
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: plain syscall; a non-negative result is a descriptor we now own.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: `fd` was just returned by the kernel and is owned by nobody else.
        Ok(Epoll { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: `ev` is a valid event for the duration of the call.
        cvt(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut ev) }).map(drop)
    }

    /// The descriptor.
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Watches `fd` for `events` (EPOLLIN, EPOLLOUT, EPOLLET, ...), reporting `token`.
    pub fn add(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, events, token)
    }

    /// Stops watching `fd`.
    pub fn delete(&self, fd: RawFd) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd, 0, 0)
    }

    /// Waits for readiness (forever if `timeout` is `None`); fills `events`.
    pub fn wait(&self, events: &mut Vec<Ready>, timeout: Option<Duration>) -> io::Result<()> {
        let ms = timeout.map_or(-1, |t| libc::c_int::try_from(t.as_millis()).unwrap_or(libc::c_int::MAX));
        events.clear();
        let cap = events.capacity().max(1);
        events.reserve(cap);
        // SAFETY: the kernel writes at most `cap` events into the vector's spare capacity,
        // and we set the length to the count it reports.
        let n = unsafe { libc::epoll_wait(self.fd.as_raw_fd(), events.as_mut_ptr(), cap as libc::c_int, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted { Ok(()) } else { Err(e) };
        }
        // SAFETY: the first `n` elements were initialised by the kernel.
        unsafe { events.set_len(n as usize) };
        Ok(())
    }
}

/// An eventfd: application threads wake the driver with it.
#[derive(Debug)]
pub struct EventFd {
    fd: OwnedFd,
}

impl EventFd {
    /// A non-blocking eventfd.
    pub fn new() -> io::Result<EventFd> {
        // SAFETY: plain syscall; a non-negative result is a descriptor we now own.
        let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
        // SAFETY: `fd` was just returned by the kernel and is owned by nobody else.
        Ok(EventFd { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// The descriptor, for epoll.
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Makes the eventfd readable.
    pub fn notify(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from `one`. A full counter (EAGAIN) is already readable.
        unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// Resets it to not readable.
    pub fn drain(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into `v`; EAGAIN when nothing was pending is fine.
        unsafe { libc::read(self.fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    }
}

/// A timerfd on CLOCK_MONOTONIC: the driver's one timer.
#[derive(Debug)]
pub struct TimerFd {
    fd: OwnedFd,
}

impl TimerFd {
    /// A non-blocking, disarmed timer.
    pub fn new() -> io::Result<TimerFd> {
        // SAFETY: plain syscall; a non-negative result is a descriptor we now own.
        let fd = cvt(unsafe {
            libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC)
        })?;
        // SAFETY: `fd` was just returned by the kernel and is owned by nobody else.
        Ok(TimerFd { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// The descriptor, for epoll.
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Arms the timer for the absolute monotonic `deadline` (`None` disarms it).
    pub fn set(&self, deadline: Option<Time>) -> io::Result<()> {
        let us = deadline.map_or(0, |t| t.as_micros().max(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec {
                tv_sec: (us / 1_000_000) as libc::time_t,
                tv_nsec: ((us % 1_000_000) * 1000) as libc::c_long,
            },
        };
        // SAFETY: `spec` is valid for the call; the old value is not asked for.
        cvt(unsafe {
            libc::timerfd_settime(self.fd.as_raw_fd(), libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut())
        })
        .map(drop)
    }

    /// Clears the expiry count.
    pub fn drain(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into `v`; EAGAIN when it has not fired is fine.
        unsafe { libc::read(self.fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    }
}

/// Registers `hook` to run at process exit (`atexit(3)`: on `exit` and on return from
/// `main`, not on a signal or `_exit`).
pub fn at_exit(hook: extern "C" fn()) -> io::Result<()> {
    // SAFETY: `hook` is a plain function that lives as long as the program.
    if unsafe { libc::atexit(hook) } == 0 {
        Ok(())
    } else {
        Err(io::Error::other("atexit refused the hook"))
    }
}

/// A descriptor that polls writable (POLLOUT / EPOLLOUT) exactly while a flow accepts a write:
/// an eventfd used upside down. Its counter is either 0 (writable: the kernel reports
/// EPOLLOUT while the counter is below 2^64 - 2) or 2^64 - 2 (not writable). Marking it
/// writable reads the counter back to 0, which wakes every waiter with EPOLLOUT, so an
/// edge-triggered watcher gets one edge per transition to writable; marking it full adds
/// 2^64 - 2, which wakes nobody who watches for EPOLLOUT only.
#[derive(Debug)]
pub struct WritableFd {
    fd: OwnedFd,
}

impl WritableFd {
    /// The counter value that makes an eventfd not writable.
    const FULL: u64 = u64::MAX - 1;

    /// A new descriptor, writable (non-blocking, close-on-exec).
    pub fn new() -> io::Result<WritableFd> {
        // SAFETY: plain syscall; a non-negative result is a descriptor we now own.
        let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
        // SAFETY: `fd` was just returned by the kernel and is owned by nobody else.
        Ok(WritableFd { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// The descriptor to poll.
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Makes it writable (`true`) or not (`false`). The caller tracks the state and calls this
    /// only on a change (a second `false` would fail with EAGAIN: the counter is full).
    pub fn set_writable(&self, writable: bool) -> io::Result<()> {
        let mut v: u64 = if writable { 0 } else { WritableFd::FULL };
        loop {
            // SAFETY: reads or writes 8 bytes at `v`, which lives across the call.
            let n = unsafe {
                if writable {
                    libc::read(self.fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8)
                } else {
                    libc::write(self.fd.as_raw_fd(), (&v as *const u64).cast(), 8)
                }
            };
            match cvt_size(n) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Reading a counter that is already 0: it was writable.
                Err(e) if writable && e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }
}

/// Whether the open file behind `fd` has O_NONBLOCK set.
pub fn is_nonblocking(fd: RawFd) -> io::Result<bool> {
    // SAFETY: F_GETFL takes no argument and only reads the descriptor's flags.
    let flags = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    Ok(flags & libc::O_NONBLOCK != 0)
}

/// The calling process's id (the kernel's, not a cached one: it changes in a forked child).
pub fn process_id() -> u32 {
    // SAFETY: plain syscall without arguments.
    unsafe { libc::getpid() as u32 }
}

/// Eight random bytes from the kernel (getrandom(2), which blocks only until the kernel's
/// pool is first initialised, early at boot).
pub fn random_u64() -> io::Result<u64> {
    let mut bytes = [0u8; 8];
    let mut filled = 0;
    while filled < bytes.len() {
        let rest = &mut bytes[filled..];
        // SAFETY: `rest` is a valid, writable buffer of `rest.len()` bytes.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        match n {
            n if n > 0 => filled += n as usize,
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(u64::from_ne_bytes(bytes))
}

/// Closes a raw descriptor that no Rust owner will close (a forked child's copy of a
/// descriptor owned by a thread that does not exist in the child).
pub fn close_raw(fd: RawFd) {
    // SAFETY: the caller guarantees that nothing else owns or uses `fd` in this process.
    unsafe { libc::close(fd) };
}

/// A fresh, unconnected TCP socket of `addr`'s family, to set options on before
/// [`connect`] (a receive buffer that must be in place before the handshake).
pub fn tcp_socket_for(addr: &std::net::SocketAddr) -> io::Result<OwnedFd> {
    let family = if addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: plain syscall; the descriptor it returns is owned by nobody else.
    let fd = cvt(unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `fd` was just created and is valid.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `addr` as the kernel's sockaddr, with its length.
fn sockaddr_of(addr: &std::net::SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut storage: libc::sockaddr_storage = unsafe { mem::zeroed() };
    let len = match addr {
        std::net::SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(a.ip().octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin) };
            mem::size_of::<libc::sockaddr_in>()
        }
        std::net::SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: a.ip().octets() },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin6) };
            mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// connect(2) of a socket from [`tcp_socket_for`] to `addr`, blocking until the handshake is
/// done (or refused). Interrupted by a signal, the handshake goes on in the kernel: then this
/// waits for it and returns its outcome (SO_ERROR).
pub fn connect(fd: RawFd, addr: &std::net::SocketAddr) -> io::Result<()> {
    let (storage, len) = sockaddr_of(addr);
    // SAFETY: `storage` holds a valid address of `len` bytes and outlives the call.
    let ret = unsafe { libc::connect(fd, (&storage as *const libc::sockaddr_storage).cast(), len) };
    match cvt(ret) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => {
            poll_one(fd, libc::POLLOUT, None)?;
            match take_socket_error(fd)? {
                Some(e) => Err(e),
                None => Ok(()),
            }
        }
        Err(e) => Err(e),
    }
}

/// A UDP socket bound to `addr` with SO_REUSEADDR, non-blocking off. Several such sockets
/// share one port: an unconnected one receives from every peer, one connected to a peer
/// receives that peer's datagrams (the kernel prefers the connected socket), which is how
/// [`crate::AlccUdpListener`] keeps listening while each flow has its own socket.
pub fn udp_socket_shared(addr: &std::net::SocketAddr) -> io::Result<OwnedFd> {
    let family = if addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: plain syscall; the descriptor it returns is owned by nobody else.
    let fd = cvt(unsafe { libc::socket(family, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `fd` was just created and is valid.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    set_int(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    let (storage, len) = sockaddr_of(addr);
    // SAFETY: `storage` holds a valid address of `len` bytes and outlives the call.
    cvt(unsafe { libc::bind(fd.as_raw_fd(), (&storage as *const libc::sockaddr_storage).cast(), len) })?;
    Ok(fd)
}

/// A descriptor someone else owns, watched by tokio's reactor (the `tokio` feature).
#[cfg(feature = "tokio")]
pub struct Watched(RawFd);

#[cfg(feature = "tokio")]
impl AsRawFd for Watched {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// Registers `fd` with the current tokio runtime's reactor for `interest`. The caller keeps
/// `fd` open, and its number unreused, for as long as the returned `AsyncFd` lives
/// (`tokio_io::AsyncAlccStream` drops its `AsyncFd`s before the stream that owns the
/// descriptors: field order).
#[cfg(feature = "tokio")]
pub(crate) fn watch(
    fd: RawFd,
    interest: tokio::io::Interest,
) -> io::Result<tokio::io::unix::AsyncFd<Watched>> {
    // SAFETY: the caller's contract above: `fd` stays open and is not replaced while the
    // AsyncFd is registered; the AsyncFd never closes it (Watched does not own it).
    unsafe { tokio::io::unix::AsyncFd::register_with_interest(Watched(fd), interest) }
        .map_err(io::Error::from)
}
