//! [`SendQueue`]: what the application handed a flow and the driver has not yet given the
//! kernel, in the order it was handed: bytes it wrote (copied into blocks of at most 64 KiB,
//! [`ByteBlocks`]) and ranges of files it handed over by reference
//! ([`AlccStream::send_file`](crate::AlccStream::send_file)), which the queue never reads. The
//! driver takes the queue's [`front`](SendQueue::front) one [`Payload`] at a time; kernel mode
//! hands written bytes to one `sendmsg` as the blocks hold them (up to
//! [`MAX_PARTS`](crate::sys::MAX_PARTS) slices) and sends a file range by sendfile(2), so its
//! bytes are never copied through user space.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use crate::sys;

use super::byte_blocks::ByteBlocks;
pub(crate) use super::byte_blocks::Slices;

/// A range of an open file, queued by reference: its bytes are read (or spliced) only when
/// they are sent, so the file must not change until then.
#[derive(Clone, Debug)]
pub(crate) struct FileRange {
    /// The file (the engine's own descriptor of it).
    pub file: Arc<OwnedFd>,
    /// Offset of the range's first byte in the file.
    pub offset: u64,
    /// Bytes in the range.
    pub len: u64,
}

/// One piece of the queue.
#[derive(Debug)]
enum Piece {
    /// This many written bytes (the next ones in the blocks).
    Bytes(usize),
    /// A file range.
    File(FileRange),
}

/// Part of a file, as the driver hands it to a transport.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FileSlice {
    /// The file's descriptor.
    pub fd: RawFd,
    /// Offset of the first byte.
    pub offset: u64,
    /// Bytes.
    pub len: usize,
}

/// The bytes of one chunk: written bytes (as the blocks hold them, or read ahead from a
/// file) or a part of a file range.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Payload<'a> {
    /// Bytes: the concatenation of the slices.
    Bytes(Slices<'a>),
    /// A part of a file the application handed over.
    File(FileSlice),
}

impl Payload<'_> {
    /// Its length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Payload::Bytes(s) => s.len(),
            Payload::File(f) => f.len,
        }
    }

    /// Appends its bytes to `out` (a file's are read with pread(2)); an error if the file
    /// ends before the range does (it shrank after it was handed over).
    pub fn append_to(&self, out: &mut Vec<u8>) -> io::Result<()> {
        match self {
            Payload::Bytes(s) => {
                for part in s.parts() {
                    out.extend_from_slice(part);
                }
                Ok(())
            }
            Payload::File(f) => {
                let start = out.len();
                out.resize(start + f.len, 0);
                let mut done = 0;
                while done < f.len {
                    match sys::pread(f.fd, &mut out[start + done..], f.offset + done as u64) {
                        Ok(0) => {
                            out.truncate(start);
                            return Err(shrank());
                        }
                        Ok(n) => done += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            out.truncate(start);
                            return Err(e);
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

/// The error of a queued file range that reaches past the file's end.
pub(crate) fn shrank() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "alcc send_file: the file ended before the range handed over (it shrank)",
    )
}

/// How much of a file range [`SendQueue::front_read`] reads at once: one pread(2) serves
/// many small chunks (44 segments of 1448 bytes).
pub(crate) const READ_AHEAD: usize = 64 << 10;

/// The flow's queue: bytes and file ranges, in order, up to a capacity.
///
/// The capacity bounds the bytes the application copied in (memory) and, through
/// [`is_full`](Self::is_full), when a write or `send_file` waits. A file range holds no
/// memory, so it is taken whole whenever the queue is not full ([`push_file`](Self::push_file)).
#[derive(Debug, Default)]
pub(crate) struct SendQueue {
    bytes: ByteBlocks,
    pieces: VecDeque<Piece>,
    /// Bytes queued, file ranges included.
    len: u64,
    capacity: u64,
    /// Bytes read ahead from the front file range, from its current offset on
    /// (`ahead[ahead_at..]`), for [`front_read`](Self::front_read).
    ahead: Vec<u8>,
    ahead_at: usize,
    /// Whether anything was queued since the last [`release_if_idle`](Self::release_if_idle).
    queued_since_look: bool,
}

impl SendQueue {
    /// An empty queue that holds at most `capacity` bytes (at least 1) before it is full.
    pub fn new(capacity: usize) -> SendQueue {
        SendQueue { capacity: capacity.max(1) as u64, ..SendQueue::default() }
    }

    /// A queue whose written bytes go into blocks of `block` bytes (tests of block
    /// boundaries; [`new`](Self::new) uses 64 KiB).
    #[cfg(test)]
    fn with_block(capacity: usize, block: usize) -> SendQueue {
        SendQueue { bytes: ByteBlocks::with_block(block), ..SendQueue::new(capacity) }
    }

    /// Bytes queued (written bytes and file ranges).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the queue is full: writes (and `send_file`) wait.
    pub fn is_full(&self) -> bool {
        self.len >= self.capacity
    }

    /// Queues as much of `buf` as fits; returns how much.
    pub fn push(&mut self, buf: &[u8]) -> usize {
        let room = usize::try_from(self.capacity.saturating_sub(self.len)).unwrap_or(usize::MAX);
        let n = room.min(buf.len());
        if n == 0 {
            return 0;
        }
        self.bytes.push(&buf[..n]);
        self.queued_since_look = true;
        match self.pieces.back_mut() {
            Some(Piece::Bytes(k)) => *k += n,
            _ => self.pieces.push_back(Piece::Bytes(n)),
        }
        self.len += n as u64;
        n
    }

    /// Queues the whole of `range` unless the queue is full; returns the bytes taken (its
    /// length, or 0).
    pub fn push_file(&mut self, range: FileRange) -> u64 {
        if self.is_full() || range.len == 0 {
            return 0;
        }
        let n = range.len;
        self.queued_since_look = true;
        self.len += n;
        self.pieces.push_back(Piece::File(range));
        n
    }

    /// The first piece's first `len` bytes (at most what it holds): written bytes as the
    /// blocks hold them (handed to the kernel as they are; fewer bytes if they span more than
    /// [`MAX_PARTS`](crate::sys::MAX_PARTS) blocks, that is chunks of over 960 KiB), or a
    /// part of a file range. `None` when the queue is empty.
    pub fn front(&self, len: usize) -> Option<Payload<'_>> {
        match self.pieces.front()? {
            Piece::Bytes(k) => Some(Payload::Bytes(self.bytes.front(len.min(*k)))),
            Piece::File(r) => Some(Payload::File(FileSlice {
                fd: r.file.as_raw_fd(),
                offset: r.offset,
                len: usize::try_from(r.len).unwrap_or(usize::MAX).min(len),
            })),
        }
    }

    /// Like [`front`](Self::front), but a file range's bytes come as bytes: read from the
    /// file [`READ_AHEAD`] at a time (at most what the range holds) into the queue's buffer,
    /// so that a transport that needs the bytes, or a chunk too small for sendfile to pay,
    /// costs no system call of its own. An error if the file ends before the range does.
    pub fn front_read(&mut self, len: usize) -> io::Result<Option<Payload<'_>>> {
        let Some(Piece::File(r)) = self.pieces.front() else {
            return Ok(self.front(len));
        };
        if self.ahead_at >= self.ahead.len() {
            let want = usize::try_from(r.len).unwrap_or(usize::MAX).min(READ_AHEAD);
            self.ahead.clear();
            self.ahead_at = 0;
            let slice = FileSlice { fd: r.file.as_raw_fd(), offset: r.offset, len: want };
            Payload::File(slice).append_to(&mut self.ahead)?;
        }
        let have = &self.ahead[self.ahead_at..];
        Ok(Some(Payload::Bytes(Slices::one(&have[..len.min(have.len())]))))
    }

    /// Frees the blocks kept for reuse if nothing is queued and nothing was queued since the
    /// last call (the driver calls it each step that leaves the queue empty): a flow whose
    /// application stopped writing gives its memory back, one that keeps writing keeps its
    /// blocks. Returns whether it freed them.
    pub fn release_if_idle(&mut self) -> bool {
        let idle = self.is_empty() && !self.queued_since_look;
        self.queued_since_look = false;
        if idle {
            self.bytes.release_spares();
        }
        idle
    }

    /// Drops the first `n` bytes (they went to the kernel), across pieces.
    pub fn consume(&mut self, mut n: u64) {
        while n > 0 {
            let Some(piece) = self.pieces.front_mut() else { break };
            let taken = match piece {
                Piece::Bytes(k) => {
                    let t = (*k as u64).min(n) as usize;
                    self.bytes.consume(t);
                    *k -= t;
                    t as u64
                }
                Piece::File(r) => {
                    let t = r.len.min(n);
                    r.offset += t;
                    r.len -= t;
                    // What was read ahead starts at the range's offset: it moves along.
                    self.ahead_at = self.ahead_at.saturating_add(t as usize);
                    if self.ahead_at >= self.ahead.len() || r.len == 0 {
                        self.ahead.clear();
                        self.ahead_at = 0;
                    }
                    t
                }
            };
            if matches!(piece, Piece::Bytes(0)) || matches!(piece, Piece::File(r) if r.len == 0) {
                self.pieces.pop_front();
            }
            self.len -= taken;
            n -= taken;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    /// The bytes of the front's first `len`, read.
    fn front_bytes(q: &SendQueue, len: usize) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(p) = q.front(len) {
            p.append_to(&mut out).unwrap();
        }
        out
    }

    /// A file holding `bytes`.
    fn file_of(bytes: &[u8]) -> Arc<OwnedFd> {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(bytes).unwrap();
        Arc::new(OwnedFd::from(f))
    }

    #[test]
    fn the_front_is_the_blocks_slices() {
        let mut q = SendQueue::with_block(8, 3);
        assert_eq!(q.push(b"abcdefghij"), 8);
        assert!(q.is_full());
        q.consume(6);
        assert_eq!(q.push(b"123456"), 6);
        let Some(Payload::Bytes(s)) = q.front(5) else { panic!("not bytes") };
        assert_eq!(s.parts().collect::<Vec<_>>(), [&b"gh1"[..], b"23"], "one slice per block");
        assert_eq!(front_bytes(&q, 5), b"gh123");
        assert_eq!(front_bytes(&q, 100), b"gh123456");
        q.consume(100);
        assert!(q.is_empty());
        assert!(q.front(1).is_none());
    }

    #[test]
    fn file_ranges_keep_their_place_between_writes() {
        let mut q = SendQueue::new(8);
        let file = file_of(b"0123456789ABCDEF");
        assert_eq!(q.push(b"head"), 4);
        // Taken whole although longer than the room left: it holds no memory.
        assert_eq!(q.push_file(FileRange { file: file.clone(), offset: 2, len: 12 }), 12);
        assert!(q.is_full());
        assert_eq!(q.push(b"x"), 0, "full: no more written bytes");
        assert_eq!(q.push_file(FileRange { file: file.clone(), offset: 0, len: 1 }), 0, "nor ranges");
        // A chunk never spans two pieces.
        assert_eq!(front_bytes(&q, 100), b"head");
        q.consume(3);
        assert_eq!(front_bytes(&q, 100), b"d");
        q.consume(1);
        let Some(Payload::File(s)) = q.front(5) else { panic!("not a file") };
        assert_eq!((s.offset, s.len), (2, 5));
        assert_eq!(front_bytes(&q, 5), b"23456");
        q.consume(10);
        assert!(!q.is_full());
        assert_eq!(q.push(b"tail"), 4);
        assert_eq!(q.len(), 6);
        assert_eq!(front_bytes(&q, 100), b"CD");
        // One consume across the end of the range and into the bytes.
        q.consume(3);
        assert_eq!(front_bytes(&q, 100), b"ail");
        q.consume(3);
        assert!(q.is_empty());
    }

    #[test]
    fn a_range_is_read_ahead_once_for_many_small_chunks() {
        let content: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut q = SendQueue::new(8);
        q.push_file(FileRange { file: file_of(&content), offset: 10, len: 150_000 });
        assert_eq!(q.push(b"tail"), 0, "full");
        let mut got = Vec::new();
        while let Some(p) = q.front_read(1448).unwrap() {
            let Payload::Bytes(s) = p else { panic!("a file slice from front_read") };
            let [a] = s.parts().collect::<Vec<_>>()[..] else { panic!("not one slice") };
            assert!(!a.is_empty() && a.len() <= 1448);
            got.extend_from_slice(a);
            let n = a.len() as u64;
            // The buffer holds at most READ_AHEAD bytes, from the range's offset on.
            assert!(q.ahead.len() <= READ_AHEAD);
            q.consume(n);
        }
        assert_eq!(got, &content[10..150_010]);
        assert!(q.ahead.is_empty(), "the buffer goes with the range");
        // Mixed with front: a part sent by sendfile moves the read-ahead along.
        q.push_file(FileRange { file: file_of(&content), offset: 0, len: 5000 });
        assert_eq!(front_bytes(&q, 10), &content[..10]);
        assert!(
            matches!(q.front_read(10).unwrap(), Some(Payload::Bytes(s)) if s.parts().collect::<Vec<_>>() == [&content[..10]])
        );
        q.consume(4000);
        assert!(
            matches!(q.front_read(2000).unwrap(), Some(Payload::Bytes(s)) if s.parts().collect::<Vec<_>>() == [&content[4000..5000]])
        );
        q.consume(1000);
        assert!(q.ahead.is_empty());
        assert_eq!(q.push(b"xy"), 2);
        assert!(
            matches!(q.front_read(10).unwrap(), Some(Payload::Bytes(s)) if s.parts().collect::<Vec<_>>() == [b"xy"])
        );
    }

    #[test]
    fn an_idle_queue_frees_its_blocks() {
        let mut q = SendQueue::new(1 << 20);
        assert_eq!(q.push(&vec![1u8; 300 << 10]), 300 << 10);
        q.consume(300 << 10);
        assert_eq!(q.bytes.blocks_held(), (0, 5));
        assert!(!q.release_if_idle(), "written since the last look: the application may go on");
        assert_eq!(q.bytes.blocks_held(), (0, 5));
        assert!(q.release_if_idle(), "nothing written since");
        assert_eq!(q.bytes.blocks_held(), (0, 0));
        q.push(b"abc");
        assert!(!q.release_if_idle() && !q.release_if_idle(), "never while bytes are queued");
        assert_eq!(front_bytes(&q, 10), b"abc");
    }

    #[test]
    fn a_range_past_the_end_of_its_file_is_an_error() {
        let mut q = SendQueue::new(8);
        q.push_file(FileRange { file: file_of(b"abc"), offset: 1, len: 5 });
        let mut out = b"x".to_vec();
        let e = q.front(5).unwrap().append_to(&mut out).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        assert!(e.to_string().contains("shrank"), "{e}");
        assert_eq!(out, b"x", "nothing half-appended");
    }

    proptest! {
        /// The queue behaves as a bounded FIFO of bytes, wherever its blocks end and whatever
        /// mix of written bytes and file ranges it holds.
        #[test]
        fn queue_is_a_fifo(block in 1usize..40, ops in proptest::collection::vec((0u8..4, 0usize..40), 1..100)) {
            let content: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37)).collect();
            let file = file_of(&content);
            let mut q = SendQueue::with_block(32, block);
            let mut model: VecDeque<u8> = VecDeque::new();
            let mut next = 0u8;
            for (op, n) in ops {
                match op {
                    0 => {
                        let data: Vec<u8> = (0..n).map(|_| { next = next.wrapping_add(1); next }).collect();
                        let took = q.push(&data);
                        prop_assert_eq!(took, n.min(32usize.saturating_sub(model.len())));
                        model.extend(&data[..took]);
                    }
                    1 => {
                        let at = n % 24;
                        let len = n % 40;
                        let took = q.push_file(FileRange { file: file.clone(), offset: at as u64, len: len as u64 });
                        prop_assert_eq!(took, if model.len() >= 32 { 0 } else { len as u64 });
                        model.extend(&content[at..at + took as usize]);
                    }
                    2 => {
                        let got = front_bytes(&q, n);
                        let want: Vec<u8> = model.iter().take(got.len()).copied().collect();
                        prop_assert_eq!(&got, &want);
                        prop_assert!(!got.is_empty() || n == 0 || model.is_empty());
                        q.consume(got.len() as u64);
                        model.drain(..got.len());
                    }
                    _ => {
                        let mut got = Vec::new();
                        if let Some(p) = q.front_read(n).unwrap() {
                            p.append_to(&mut got).unwrap();
                        }
                        let want: Vec<u8> = model.iter().take(got.len()).copied().collect();
                        prop_assert_eq!(&got, &want);
                        prop_assert!(!got.is_empty() || n == 0 || model.is_empty());
                        q.consume(got.len() as u64);
                        model.drain(..got.len());
                    }
                }
                prop_assert_eq!(q.len(), model.len() as u64);
            }
        }
    }
}
