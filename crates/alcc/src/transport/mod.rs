//! Transports: how a flow's chunks reach the network, one per [`Mode`](crate::Mode), chosen once when the
//! flow starts. Each has its own write path and is paired with the [`feedback`](crate::feedback)
//! source that tells the flow what its chunks became, so the sending side mirrors the
//! feedback side:
//!
//! | transport | writes | feedback |
//! | --- | --- | --- |
//! | [`kernel`] | each chunk as one `sendmsg` record into the TCP socket (MSG_EOR), or a file range's by `sendfile` | [`KernelFeedback`](crate::feedback::kernel::KernelFeedback): ACK timestamps and TCP_INFO |
//! | [`framed`] | each chunk as a data frame, after a `Hello` | [`FramedFeedback`](crate::feedback::framed::FramedFeedback): the peer's ACK and report frames |
//! | [`udp`] | each chunk as one data datagram, after a `Hello` | [`UdpFeedback`](crate::feedback::udp::UdpFeedback): per-datagram ACKs, loss detection |
//!
//! It is also the one place that prepares a socket for a controller
//! ([`Transport::prepare_for_controller`]), both when a flow starts under one and when
//! `set_cc` gives a controller to a flow that started as `none`.

pub(crate) mod framed;
pub(crate) mod kernel;
pub(crate) mod udp;

use std::io;
use std::os::fd::RawFd;

use alcc_cc::{SenderHint, Time};

use crate::feedback::FeedbackSource;
pub(crate) use crate::flow::send_queue::Payload;
use crate::options::Options;
use crate::sent_chunks::SentChunks;
use crate::sys;

use self::framed::FramedTransport;
use self::kernel::KernelTransport;
use self::udp::UdpTransport;

/// One chunk on its way out: its place in the flow and its bytes, as the send queue holds them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OutChunk<'a> {
    /// The flow's sequence number of this chunk.
    pub seq: u64,
    /// When it leaves (engine clock).
    pub now: Time,
    /// What the controller puts in its header for the receiver-side model.
    pub hint: SenderHint,
    /// Its bytes: written ones, or a part of a file handed over by reference.
    pub payload: Payload<'a>,
    /// Whether it must be its own record for the kernel (MSG_EOR, one SCHED and one ACK
    /// timestamp each); under a controller, kernel mode sends a chunk that is not one without
    /// timestamps.
    pub record: bool,
}

impl OutChunk<'_> {
    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.payload.len()
    }
}

/// A flow's transport.
pub(crate) enum Transport {
    /// Kernel mode: the application's bytes, nothing added.
    Kernel(KernelTransport),
    /// Framed mode: data frames on the TCP connection.
    Framed(FramedTransport),
    /// UDP mode: data datagrams.
    Udp(UdpTransport),
}

impl Transport {
    /// The transport of kernel mode; `files` says how it sends file ranges.
    pub fn kernel(files: kernel::FileSends) -> Transport {
        Transport::Kernel(KernelTransport::new(files))
    }

    /// The transport of framed mode, its `Hello` naming `spec`.
    pub fn framed(spec: &str) -> io::Result<Transport> {
        Ok(Transport::Framed(FramedTransport::new(spec)?))
    }

    /// The transport of UDP mode on a connected UDP socket for the client's flow `id`, its
    /// `Hello` naming `spec`.
    pub fn udp(spec: &str, id: crate::wire::udp::ConnectionId) -> io::Result<Transport> {
        Ok(Transport::Udp(UdpTransport::new(spec, id)?))
    }

    /// Its feedback source.
    pub fn feedback(&mut self) -> &mut dyn FeedbackSource {
        match self {
            Transport::Kernel(t) => &mut t.feedback,
            Transport::Framed(t) => &mut t.feedback,
            Transport::Udp(t) => &mut t.feedback,
        }
    }

    /// Its feedback source, to read.
    pub fn feedback_ref(&self) -> &dyn FeedbackSource {
        match self {
            Transport::Kernel(t) => &t.feedback,
            Transport::Framed(t) => &t.feedback,
            Transport::Udp(t) => &t.feedback,
        }
    }

    /// The socket's pending error, if any, taken at the start of each step: SO_ERROR in
    /// framed and UDP mode; in kernel mode nothing here, since its feedback reads TCP_INFO
    /// every step anyway (but a step woken by room alone, whose socket reported no error)
    /// and takes SO_ERROR only once that shows the connection closed.
    pub fn take_error(&mut self, fd: RawFd) -> io::Result<Option<io::Error>> {
        match self {
            Transport::Kernel(_) => Ok(None),
            Transport::Framed(_) => sys::take_socket_error(fd),
            // After its `Close`, a refusal is judged once the client's answer was looked for.
            Transport::Udp(t) => match sys::take_socket_error(fd)? {
                Some(e) => Ok(t.feedback.absorb_refusal(e).err()),
                None => Ok(None),
            },
        }
    }

    /// Whether the driver must report the socket's readability (the peer's frames); kernel
    /// mode's feedback comes from the error queue.
    pub fn reads_socket(&self) -> bool {
        !matches!(self, Transport::Kernel(_))
    }

    /// Whether a step woken by the socket alone may end at once: in kernel mode, when TCP_INFO
    /// shows nothing newly acknowledged or retransmitted and the kernel holds at least half
    /// of `notsent_lowat` unsent ([`KernelTransport::nothing_new`]). Framed and UDP mode read
    /// their feedback from the socket: never.
    pub fn nothing_new(&mut self, fd: RawFd, notsent_lowat: u32) -> io::Result<bool> {
        match self {
            Transport::Kernel(t) => t.nothing_new(fd, notsent_lowat),
            Transport::Framed(_) | Transport::Udp(_) => Ok(false),
        }
    }

    /// Kernel mode: the TCP_INFO its feedback read last; `None` in framed and UDP mode.
    pub fn kernel_info(&self) -> Option<&sys::TcpInfo> {
        match self {
            Transport::Kernel(t) => Some(t.feedback.last_info()),
            Transport::Framed(_) | Transport::Udp(_) => None,
        }
    }

    /// Whether the flow must re-read its feedback now and then while bytes are in flight,
    /// because no event on the socket will tell of their acknowledgement: kernel mode after a
    /// chunk that went without timestamps ([`KernelTransport::polls_for_acks`]); framed and
    /// UDP mode hear every acknowledgement on the socket.
    pub fn polls_for_acks(&self) -> bool {
        match self {
            Transport::Kernel(t) => t.polls_for_acks(),
            Transport::Framed(_) | Transport::Udp(_) => false,
        }
    }

    /// Whether a chunk of `len` bytes of a file range should reach [`send`](Self::send) as a
    /// part of the file (kernel mode's sendfile) rather than as bytes read ahead from it.
    pub fn takes_file_slices(&self, len: usize) -> bool {
        match self {
            Transport::Kernel(t) => t.takes_file_slices(len),
            Transport::Framed(_) | Transport::Udp(_) => false,
        }
    }

    /// Frees the buffer blocks the transport keeps for reuse (framed mode's frames), when
    /// the flow's application has stopped writing.
    pub fn release_spares(&mut self) {
        match self {
            Transport::Framed(t) => t.release_spares(),
            Transport::Kernel(_) | Transport::Udp(_) => {}
        }
    }

    /// The most application bytes one chunk may carry on this transport, if it limits them.
    pub fn payload_limit(&self) -> Option<u64> {
        match self {
            Transport::Kernel(_) => None,
            Transport::Framed(_) => Some(u64::from(crate::wire::MAX_PAYLOAD)),
            Transport::Udp(_) => Some(u64::from(crate::wire::udp::UDP_PAYLOAD)),
        }
    }

    /// Writes what an earlier chunk left pending (a frame the socket took only part of, UDP
    /// mode's `Hello`); `Ok(false)` if the socket is full.
    pub fn flush(&mut self, fd: RawFd) -> io::Result<bool> {
        match self {
            Transport::Kernel(_) => Ok(true),
            Transport::Framed(t) => t.flush(fd),
            Transport::Udp(t) => t.flush(fd),
        }
    }

    /// Whether nothing is pending (see [`flush`](Self::flush)).
    pub fn is_flushed(&self) -> bool {
        match self {
            Transport::Kernel(_) | Transport::Udp(_) => true,
            Transport::Framed(t) => t.is_flushed(),
        }
    }

    /// Sends `chunk`; returns how many of its bytes were taken, `None` if the socket is full.
    pub fn send(&mut self, fd: RawFd, chunk: OutChunk<'_>) -> io::Result<Option<usize>> {
        match self {
            Transport::Kernel(t) => t.send(fd, chunk),
            Transport::Framed(t) => t.send(&chunk),
            Transport::Udp(t) => t.send(fd, chunk),
        }
    }

    /// Ends the flow's sending once everything was written: FIN for TCP; for UDP, once
    /// nothing is in flight, the `Close` datagrams until the receiver answered. Returns
    /// whether it is done (call again until it is).
    pub fn finish(&mut self, fd: RawFd, chunks: &SentChunks, now: Time) -> io::Result<bool> {
        match self {
            Transport::Kernel(_) | Transport::Framed(_) => sys::shutdown_write(fd).map(|()| true),
            Transport::Udp(t) => t.finish(fd, chunks, now),
        }
    }

    /// Whether, after [`finish`](Self::finish) and the last acknowledgement, the end of the
    /// stream has reached the peer, so that the flow may let go of the socket. Framed mode:
    /// the peer's kernel has acknowledged our FIN. Its receiver takes only the FIN as the
    /// end of the stream, and keeps sending report frames (Sprout's forecasts) until it reads
    /// it; a report that reaches a closed socket makes our kernel answer with a reset
    /// (RFC 1122 4.2.2.13), which a receiver whose FIN was lost on the way reads as a reset
    /// instead of the end (bench/soak.sh found it). Until then the flow stays and reads those
    /// reports; the close's user timeout ([`on_close`](Self::on_close)) bounds the wait for
    /// a peer that never acknowledges. Once the peer's kernel holds the FIN, a later reset
    /// no longer hides the end from its reader. Kernel mode: nothing to wait for (the kernel
    /// delivers the rest; its peer sends no frames); UDP mode: its own `Close` exchange.
    pub fn end_delivered(&self, fd: RawFd) -> io::Result<bool> {
        match self {
            Transport::Framed(_) => sys::tcp_info(fd).map(|i| i.fin_acknowledged()),
            Transport::Kernel(_) | Transport::Udp(_) => Ok(true),
        }
    }

    /// The application closed the flow: from now on a TCP peer that acknowledges nothing
    /// (or holds its window shut) for [`Options::close_user_timeout`] fails the flow.
    pub fn on_close(&self, fd: RawFd, options: &Options) -> io::Result<()> {
        match self {
            Transport::Kernel(_) | Transport::Framed(_) => {
                let t = options
                    .user_timeout
                    .map_or(options.close_user_timeout, |u| u.min(options.close_user_timeout));
                let ms = libc::c_int::try_from(t.as_millis()).unwrap_or(libc::c_int::MAX).max(1);
                sys::set_int(fd, libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, ms)
            }
            Transport::Udp(_) => Ok(()),
        }
    }

    /// Whether, once the FIN is sent, the kernel alone delivers the rest (kernel mode: it
    /// holds every byte; framed and UDP mode need the flow until the peer's ACK frames or
    /// datagrams are in, else they would arrive at a closed socket and reset it).
    pub fn kernel_delivers_after_fin(&self) -> bool {
        matches!(self, Transport::Kernel(_))
    }

    /// The flow failed: a framed peer that broke the protocol (or failed) is cut off at once.
    pub fn on_failure(&self, fd: RawFd) {
        if let Transport::Framed(_) = self {
            let _ = sys::shutdown_both(fd);
        }
    }

    /// Prepares the socket for a controller: chunks leave at once (TCP_NODELAY), the kernel
    /// holds few unsent bytes (TCP_NOTSENT_LOWAT) and, in kernel mode, every chunk's SCHED
    /// and ACK timestamps are requested and fit in the error queue. Bytes written before
    /// (a flow that ran as `none`) are skipped by the timestamp ids (the sent chunks' id base).
    pub fn prepare_for_controller(
        &mut self,
        fd: RawFd,
        options: &Options,
        chunks: &mut SentChunks,
    ) -> io::Result<()> {
        let tcp_options = || -> io::Result<()> {
            sys::set_int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)?;
            let lowat = libc::c_int::try_from(options.notsent_lowat).unwrap_or(libc::c_int::MAX);
            sys::set_int(fd, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, lowat)
        };
        match self {
            Transport::Kernel(t) => {
                tcp_options()?;
                let rcvbuf = libc::c_int::try_from(options.errqueue_rcvbuf).unwrap_or(libc::c_int::MAX);
                sys::grow_rcvbuf(fd, rcvbuf)?;
                sys::enable_ack_timestamps(fd)?;
                t.on_stamps_enabled();
                chunks.set_id_base(chunks.written());
                Ok(())
            }
            Transport::Framed(_) => tcp_options(),
            Transport::Udp(_) => Ok(()),
        }
    }
}
