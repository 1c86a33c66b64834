//! Kernel mode's write path: each chunk of written bytes is one `sendmsg` straight from the
//! send queue's slices, with MSG_EOR under a controller so that the kernel timestamps its last
//! byte ([`KernelFeedback`] reads the stamps back); each chunk of a file range goes by
//! sendfile(2) on a socket the engine owns, so those bytes never pass through user space.
//!
//! sendfile takes no MSG_EOR: the kernel may append the next chunk to the segment that holds
//! a file chunk's last byte. The ACK timestamp still carries that byte's id (OPT_ID) and
//! comes when that byte is acknowledged (the kernel checks the id against the acknowledged
//! sequence, also for a segment acknowledged in part), so each chunk keeps its own sample.
//!
//! sendfile hands the socket at most [`SPLICE_PASS`] bytes at a time, and the kernel
//! timestamps the end of each pass as if it were a write of its own: a 256 KiB chunk would
//! bring four SCHED and four ACK stamps, each an skb queued, a wake-up of the driver and a
//! message read back. A chunk longer than one pass is therefore sent in two calls: its head,
//! a whole number of segments, with the socket's timestamp recording switched off
//! ([`sys::set_write_stamps`]), then the rest with it on, so that only the chunk's last byte
//! is stamped, as a `sendmsg` chunk's is. A head the socket takes only in part (it filled)
//! has no stamp: TCP_INFO, or the next chunk's stamp, acknowledges it.
//!
//! A chunk that is not a record (an unbounded controller that needs no RTT samples,
//! [`Control::next_chunk`](crate::flow::control::Control::next_chunk)) goes whole,
//! with the recording switched off: no stamp, no wake-up at its acknowledgement; TCP_INFO
//! acknowledges it, read at every step but those woken by room alone (which only write), and
//! the flow polls it while bytes are in flight ([`KernelTransport::polls_for_acks`]).
//!
//! A segment the kernel sends from its queue of unsent bytes (held back by its window or its
//! pacing) brings its SCHED stamp when it leaves, and the stamp wakes the driver: with the
//! queue full, one wake-up per segment, each of which used to be a whole step (TCP_INFO, the
//! error queue, a write the socket took and one it refused). A step woken by the socket alone
//! now first reads TCP_INFO: with nothing newly acknowledged or retransmitted and at least
//! half of TCP_NOTSENT_LOWAT still unsent (the kernel has plenty to send before anything
//! written now, and reports room, EPOLLOUT, below that half) it ends there
//! ([`KernelTransport::nothing_new`]). The stamp stays in the error queue and is read, before
//! the ACK stamp of its chunk, by the next step that has an acknowledgement to settle: what
//! the controller hears is unchanged.
//!
//! The wake-ups themselves are avoided where the controller's feedback can wait for its
//! timer ([`socket_hold`](crate::flow::socket_hold)): the driver then stops watching the
//! socket until the flow's next step, which reads every stamp queued meanwhile and hands each
//! ACK over at the time its stamp says it arrived.

use std::io;
use std::os::fd::RawFd;

use crate::feedback::kernel::{ClosedSocket, KernelFeedback};
use crate::flow::send_queue::shrank;
use crate::flow::send_queue::FileSlice;
use crate::sys;
use crate::transport::{OutChunk, Payload};

/// The shortest file chunk sent by sendfile; shorter ones are sent from bytes read ahead
/// (one pread per [`READ_AHEAD`](crate::flow::send_queue::READ_AHEAD)). sendfile's fixed cost
/// per call outweighs a copy of a few segments: in a namespace with a 1500-byte MTU, 1 448-byte
/// chunks cost the sender 1.5x the CPU by sendfile that they cost copied, 2 896- and 4 344-byte
/// chunks about the same, 7 240-byte chunks 0.55-0.85x (one flow, 100-200 MB, loopback).
pub(crate) const MIN_SENDFILE: usize = 4096;

/// How kernel mode sends a file range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileSends {
    /// By sendfile(2): the engine owns the socket and set O_NONBLOCK on it, so sendfile
    /// never blocks the driver.
    Sendfile,
    /// As bytes read ahead from the file (pread(2)) and `sendmsg`: the socket's open file is
    /// shared with the application ([`AlccStream::from_shared_fd`](crate::AlccStream::from_shared_fd)), whose
    /// O_NONBLOCK the engine must not change, and sendfile has no MSG_DONTWAIT.
    Read,
}

impl FileSends {
    /// Who reads a closed connection's error: the engine when it owns the socket, the
    /// application when it shares it (the reason for [`FileSends::Read`]).
    fn closed_socket(self) -> ClosedSocket {
        match self {
            FileSends::Sendfile => ClosedSocket::TakeError,
            FileSends::Read => ClosedSocket::LeaveError,
        }
    }

    /// Sends `chunk` into socket `fd` as one call; returns the bytes taken. For a record the
    /// socket's timestamp recording must be on, for any other chunk of a controller off.
    fn send(self, fd: RawFd, scratch: &mut Vec<u8>, chunk: &OutChunk<'_>) -> io::Result<usize> {
        match (self, chunk.payload) {
            (_, Payload::Bytes(bytes)) => sys::send_parts(fd, bytes.parts(), chunk.record),
            (FileSends::Sendfile, Payload::File(f)) => send_file(fd, f),
            (FileSends::Read, payload @ Payload::File(_)) => {
                scratch.clear();
                payload.append_to(scratch)?;
                sys::send_parts(fd, &[scratch], chunk.record)
            }
        }
    }
}

/// sendfile(2) of `f` into `fd`; returns the bytes taken. A file that ends before the slice
/// does (it shrank after it was handed over) is an error.
fn send_file(fd: RawFd, f: FileSlice) -> io::Result<usize> {
    match sys::sendfile(fd, f.fd, f.offset, f.len)? {
        0 if f.len > 0 => Err(shrank()),
        n => Ok(n),
    }
}

/// The most bytes one internal pass of sendfile(2) hands the socket: the task's splice pipe
/// holds PIPE_DEF_BUFFERS (16) pages (fs/splice.c, `splice_direct_to_actor`;
/// include/linux/pipe_fs_i.h), and each pass ends in one `tcp_sendmsg_locked`, which
/// timestamps its last byte. A slice that starts inside a page spans two passes.
pub(crate) const SPLICE_PASS: usize = 16 * 4096;

/// Where a file chunk of `len` bytes, sent in segments of `mss` bytes, is split so that only
/// its end is stamped: the length of its head, a whole number of segments (so the split adds
/// no short segment when the chunk starts on a segment's boundary), or 0 when the chunk fits
/// in one sendfile pass and goes whole.
fn unstamped_head(len: usize, mss: usize) -> usize {
    if len <= SPLICE_PASS {
        return 0;
    }
    let mss = mss.max(1);
    (len - 1) / mss * mss
}

/// Kernel mode: the application's bytes and nothing else go into the TCP socket.
#[derive(Debug)]
pub(crate) struct KernelTransport {
    /// ACK timestamps and TCP_INFO.
    pub feedback: KernelFeedback,
    files: FileSends,
    /// A file chunk read for [`FileSends::Read`].
    scratch: Vec<u8>,
    /// The socket's timestamp recording, as the last write left it.
    recording: Recording,
    /// Whether the last chunk written was not a record (it went without timestamps).
    unstamped: bool,
}

/// Whether the socket records SCHED and ACK timestamps for the writes that follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Recording {
    /// Timestamping was never enabled: the flow has run as plain TCP (`none`) only.
    Unprepared,
    /// On, as [`sys::enable_ack_timestamps`] leaves it.
    On,
    /// Off: the head of a long file chunk went last, or a chunk that is not a record.
    Off,
}

impl KernelTransport {
    /// A transport for a socket on which nothing was written yet.
    pub fn new(files: FileSends) -> KernelTransport {
        KernelTransport {
            feedback: KernelFeedback::new(files.closed_socket()),
            files,
            scratch: Vec::new(),
            recording: Recording::Unprepared,
            unstamped: false,
        }
    }

    /// Whether a file chunk of `len` bytes goes by sendfile (see [`MIN_SENDFILE`]).
    pub fn takes_file_slices(&self, len: usize) -> bool {
        self.files == FileSends::Sendfile && len >= MIN_SENDFILE
    }

    /// The socket's timestamping was (re)enabled ([`sys::enable_ack_timestamps`]): recording on.
    pub fn on_stamps_enabled(&mut self) {
        self.recording = Recording::On;
    }

    /// Whether the flow must re-read TCP_INFO now and then while bytes are in flight: its
    /// last chunk went without timestamps, so no stamp will wake it when it is acknowledged.
    pub fn polls_for_acks(&self) -> bool {
        self.unstamped
    }

    /// Whether a step woken by the socket alone has nothing to do (see the module docs):
    /// the chunks are stamped (an unstamped flow learns of acknowledgements only by polling),
    /// and [`KernelFeedback::nothing_new`] says so.
    pub fn nothing_new(&mut self, fd: RawFd, notsent_lowat: u32) -> io::Result<bool> {
        if self.unstamped || self.recording == Recording::Unprepared {
            return Ok(false);
        }
        self.feedback.nothing_new(fd, notsent_lowat)
    }

    /// Writes `chunk` (the kernel may take part of it); `None` if the socket is full.
    pub fn send(&mut self, fd: RawFd, chunk: OutChunk<'_>) -> io::Result<Option<usize>> {
        self.unstamped = !chunk.record && self.recording != Recording::Unprepared;
        if self.unstamped {
            self.stamps(fd, false)?;
        } else if chunk.record {
            if let (FileSends::Sendfile, Payload::File(f)) = (self.files, chunk.payload) {
                let mss = usize::try_from(self.feedback.last_info().snd_mss).unwrap_or(0);
                let head = unstamped_head(f.len, mss);
                if head > 0 {
                    return self.send_split(fd, f, head);
                }
            }
            self.stamps(fd, true)?;
        }
        retry(|| self.files.send(fd, &mut self.scratch, &chunk))
    }

    /// Sends file slice `f` as its first `head` bytes with timestamp recording off and the
    /// rest with it on (see the module docs). The rest is offered also when the socket took
    /// only part of the head: a file that ended there fails the flow now (sendfile returns 0),
    /// where nothing else would wake the flow again, the head having brought no stamp; a full
    /// socket refuses it (EAGAIN) and reports room later (EPOLLOUT).
    fn send_split(&mut self, fd: RawFd, f: FileSlice, head: usize) -> io::Result<Option<usize>> {
        self.stamps(fd, false)?;
        let Some(taken) = retry(|| send_file(fd, FileSlice { len: head, ..f }))? else {
            return Ok(None);
        };
        self.stamps(fd, true)?;
        let rest = FileSlice { offset: f.offset + taken as u64, len: f.len - taken, ..f };
        Ok(Some(taken + retry(|| send_file(fd, rest))?.unwrap_or(0)))
    }

    /// Switches the socket's timestamp recording on or off, if it is not already.
    fn stamps(&mut self, fd: RawFd, on: bool) -> io::Result<()> {
        let want = if on { Recording::On } else { Recording::Off };
        if self.recording != want {
            sys::set_write_stamps(fd, on)?;
            self.recording = want;
        }
        Ok(())
    }
}

/// Runs `send` again when a signal interrupted it; `None` if the socket is full.
fn retry(mut send: impl FnMut() -> io::Result<usize>) -> io::Result<Option<usize>> {
    loop {
        match send() {
            Ok(n) => return Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_chunks_longer_than_a_pass_are_split_on_a_segment_boundary() {
        assert_eq!(unstamped_head(SPLICE_PASS, 1448), 0);
        assert_eq!(unstamped_head(4096, 65483), 0);
        // 256 KiB on loopback (MSS 65 483): four whole segments, then 212 bytes stamped.
        assert_eq!(unstamped_head(256 << 10, 65_483), 4 * 65_483);
        // A chunk of whole segments keeps its last segment for the stamped part.
        assert_eq!(unstamped_head(100 * 1448, 1448), 99 * 1448);
        assert_eq!(unstamped_head(100 * 1448 + 1, 1448), 100 * 1448);
        assert_eq!(unstamped_head(SPLICE_PASS + 1, 0), SPLICE_PASS);
    }
}
