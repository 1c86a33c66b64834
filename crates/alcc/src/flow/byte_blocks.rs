//! [`ByteBlocks`]: a FIFO of bytes kept in separate blocks of at most [`BLOCK`] bytes, never
//! in one contiguous buffer that doubles.
//!
//! Why blocks: glibc serves an allocation of 128 KiB or more (its initial mmap threshold) by
//! mmap(2), and the first free of such a block raises the threshold to the block's size; from
//! then on buffers of that size come from the malloc arenas, and the holes they leave when
//! freed stay resident. A send queue that grew by doubling (256 KiB, 512 KiB, 1 MiB) made the
//! soak's server grow by 5-8 MiB over 10 000 transfers with its live heap flat
//! (bench/soak-results.md). Blocks of 64 KiB stay below the threshold, are all of one size
//! (a freed one fits the next request exactly) and go back one by one as the queue drains.
//!
//! A queue's first block starts small and grows up to [`BLOCK`] (a flow that writes a few
//! bytes does not take 64 KiB); every later block is a full one. Emptied blocks are kept for
//! reuse until [`release_spares`](ByteBlocks::release_spares) (the flow calls it once its
//! application has written nothing for 200 ms): a busy flow does not call the allocator for
//! each block (with at most two spares, freeing and allocating 64 KiB blocks cost kernel
//! mode 1.7x the sender's CPU on loopback: bench/soak-results.md), and blocks held and spares
//! together never exceed the most blocks the FIFO ever held at once.

use std::collections::VecDeque;

use crate::sys::MAX_PARTS;

/// The largest block: half of glibc's default mmap threshold (128 KiB).
pub(crate) const BLOCK: usize = 64 << 10;

/// The smallest first block.
const FIRST_BLOCK: usize = 4 << 10;

/// Bytes as slices, in order, at most [`MAX_PARTS`] of them (one `sendmsg`'s iovecs): a run
/// of blocks of a [`ByteBlocks`], or one slice.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Slices<'a> {
    /// One slice.
    One(&'a [u8]),
    /// `len` bytes of a run of blocks, from `skip` bytes into the first.
    Run {
        /// The blocks the run spans, as the deque holds them (two ranges when it wraps).
        blocks: (&'a [Vec<u8>], &'a [Vec<u8>]),
        /// Bytes of the first block before the run.
        skip: usize,
        /// Bytes in the run.
        len: usize,
    },
}

impl<'a> Slices<'a> {
    /// The bytes of one slice.
    pub fn one(bytes: &'a [u8]) -> Slices<'a> {
        Slices::One(bytes)
    }

    /// The slices, none of them empty.
    pub fn parts(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let (single, (a, b), mut skip, mut left) = match *self {
            Slices::One(bytes) => (bytes, (&[][..], &[][..]), 0, 0),
            Slices::Run { blocks, skip, len } => (&[][..], blocks, skip, len),
        };
        let blocks = a.iter().chain(b).map_while(move |block| {
            if left == 0 {
                return None;
            }
            let part = &block[skip.min(block.len())..];
            let part = &part[..left.min(part.len())];
            skip = 0;
            left -= part.len();
            Some(part)
        });
        std::iter::once(single).chain(blocks).filter(|p| !p.is_empty())
    }

    /// Bytes in all slices.
    pub fn len(&self) -> usize {
        match self {
            Slices::One(bytes) => bytes.len(),
            Slices::Run { len, .. } => *len,
        }
    }
}

/// A FIFO of bytes in blocks of at most [`BLOCK`] bytes (the module docs).
#[derive(Debug)]
pub(crate) struct ByteBlocks {
    /// The bytes, in order; every block but the last is full (`block` bytes), the first one's
    /// first `head` bytes are already taken.
    blocks: VecDeque<Vec<u8>>,
    head: usize,
    len: usize,
    /// Emptied blocks kept for reuse.
    spare: Vec<Vec<u8>>,
    /// The block size: [`BLOCK`], smaller in tests.
    block: usize,
}

impl Default for ByteBlocks {
    fn default() -> ByteBlocks {
        ByteBlocks::with_block(BLOCK)
    }
}

impl ByteBlocks {
    /// An empty FIFO of blocks of `block` bytes (at least 1).
    pub fn with_block(block: usize) -> ByteBlocks {
        ByteBlocks { blocks: VecDeque::new(), head: 0, len: 0, spare: Vec::new(), block: block.max(1) }
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no bytes are held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends all of `buf`.
    pub fn push(&mut self, mut buf: &[u8]) {
        while !buf.is_empty() {
            let block = self.block;
            if !matches!(self.blocks.back(), Some(t) if t.len() < block) {
                let fresh = self.fresh_block(buf.len());
                self.blocks.push_back(fresh);
            }
            let Some(tail) = self.blocks.back_mut() else { return };
            let n = buf.len().min(block - tail.len());
            let free = tail.capacity() - tail.len();
            if free < n {
                // Grow a small first block by doubling, never past the block size.
                let want = (tail.len() + n).max(tail.capacity() * 2).min(block);
                tail.reserve_exact(want - tail.len());
            }
            tail.extend_from_slice(&buf[..n]);
            self.len += n;
            buf = &buf[n..];
        }
    }

    /// A block to append to: a spare one, or a new one (full-sized when it follows another
    /// block, as small as `want` asks for when it is the only one).
    fn fresh_block(&mut self, want: usize) -> Vec<u8> {
        if let Some(b) = self.spare.pop() {
            return b;
        }
        let capacity = if self.blocks.is_empty() {
            want.min(self.block).next_power_of_two().max(FIRST_BLOCK).min(self.block)
        } else {
            self.block
        };
        Vec::with_capacity(capacity)
    }

    /// The first `len` bytes (at most what is held) as slices: fewer bytes when they span
    /// more than [`MAX_PARTS`] blocks.
    pub fn front(&self, len: usize) -> Slices<'_> {
        let mut left = len.min(self.len);
        let mut skip = self.head;
        let mut spanned = 0;
        let mut taken = 0;
        for b in self.blocks.iter().take(MAX_PARTS) {
            if left == 0 {
                break;
            }
            let n = left.min(b.len() - skip);
            taken += n;
            left -= n;
            skip = 0;
            spanned += 1;
        }
        let (a, b) = self.blocks.as_slices();
        let blocks = if spanned <= a.len() { (&a[..spanned], &b[..0]) } else { (a, &b[..spanned - a.len()]) };
        Slices::Run { blocks, skip: self.head, len: taken }
    }

    /// Drops the first `n` bytes (at most what is held); emptied blocks are kept as spares.
    pub fn consume(&mut self, n: usize) {
        let mut n = n.min(self.len);
        self.len -= n;
        while n > 0 {
            let Some(first) = self.blocks.front() else { break };
            let left = first.len() - self.head;
            if n < left {
                self.head += n;
                return;
            }
            n -= left;
            self.head = 0;
            if let Some(b) = self.blocks.pop_front() {
                self.recycle(b);
            }
        }
        // The last block taken exactly to its end.
        if self.len == 0 {
            if let Some(b) = self.blocks.pop_front() {
                self.recycle(b);
            }
            self.head = 0;
        }
    }

    /// Drops the last bytes so that `len` remain (nothing if fewer are held).
    pub fn truncate(&mut self, len: usize) {
        while self.len > len {
            let from = if self.blocks.len() == 1 { self.head } else { 0 };
            let Some(last) = self.blocks.back_mut() else { break };
            let held = last.len() - from;
            let cut = (self.len - len).min(held);
            last.truncate(last.len() - cut);
            self.len -= cut;
            if cut == held {
                if let Some(b) = self.blocks.pop_back() {
                    self.recycle(b);
                }
                if self.blocks.is_empty() {
                    self.head = 0;
                }
            }
        }
    }

    /// Keeps an emptied block for reuse.
    fn recycle(&mut self, mut b: Vec<u8>) {
        b.clear();
        self.spare.push(b);
    }

    /// Frees the blocks kept for reuse (the bytes held stay).
    pub fn release_spares(&mut self) {
        self.spare = Vec::new();
    }

    /// Blocks holding bytes, and spares (for tests of the memory bound).
    #[cfg(test)]
    pub(crate) fn blocks_held(&self) -> (usize, usize) {
        (self.blocks.len(), self.spare.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn front_vec(b: &ByteBlocks, len: usize) -> Vec<u8> {
        b.front(len).parts().collect::<Vec<_>>().concat()
    }

    #[test]
    fn no_block_is_larger_than_the_block_size() {
        let mut b = ByteBlocks::default();
        let data: Vec<u8> = (0..(1 << 20) + 77).map(|i: u32| (i % 253) as u8).collect();
        b.push(&data[..10]);
        assert!(b.blocks[0].capacity() <= FIRST_BLOCK, "a few bytes take a small block");
        b.push(&data[10..]);
        assert_eq!(b.len(), data.len());
        assert!(b.blocks.iter().all(|x| x.capacity() <= BLOCK), "a block past 64 KiB");
        assert_eq!(b.blocks.len(), data.len().div_ceil(BLOCK));
        // A chunk of 256 KiB from the middle of a block: five slices.
        b.consume(1000);
        let s = b.front(256 << 10);
        assert_eq!(s.len(), 256 << 10);
        assert_eq!(s.parts().count(), 5);
        assert_eq!(front_vec(&b, 256 << 10), &data[1000..1000 + (256 << 10)]);
        // The whole queue needs more than MAX_PARTS slices: the front stops at the last one.
        let s = b.front(usize::MAX);
        assert_eq!(s.parts().count(), MAX_PARTS);
        assert_eq!(s.len(), MAX_PARTS * BLOCK - 1000);
    }

    #[test]
    fn emptied_blocks_are_reused_until_released() {
        let mut b = ByteBlocks::default();
        let data = vec![7u8; 1 << 20];
        b.push(&data);
        assert_eq!(b.blocks_held(), (16, 0));
        b.consume(5 * BLOCK + 3);
        assert_eq!(b.blocks_held(), (11, 5));
        // Spares are reused before anything new is allocated.
        b.push(&data[..3 * BLOCK]);
        assert_eq!(b.blocks_held(), (14, 2));
        b.consume(usize::MAX);
        assert!(b.is_empty());
        assert_eq!(b.blocks_held(), (0, 16));
        b.release_spares();
        assert_eq!(b.blocks_held(), (0, 0));
        b.push(b"x");
        b.release_spares();
        assert_eq!(front_vec(&b, 10), b"x", "the bytes held stay");
    }

    proptest! {
        /// A FIFO of bytes like a VecDeque<u8>, whatever the block size, writes, reads,
        /// partial consumes and truncations.
        #[test]
        fn blocks_are_a_fifo(block in 1usize..50, ops in proptest::collection::vec((0u8..4, 0usize..120), 1..120)) {
            let mut b = ByteBlocks::with_block(block);
            let mut model: VecDeque<u8> = VecDeque::new();
            let mut next = 0u8;
            let mut peak = 0;
            for (op, n) in ops {
                match op {
                    0 if n % 5 == 0 => b.release_spares(),
                    0 | 1 => {
                        let data: Vec<u8> = (0..n).map(|_| { next = next.wrapping_add(1); next }).collect();
                        b.push(&data);
                        model.extend(&data);
                    }
                    2 => {
                        let got = front_vec(&b, n);
                        let want: Vec<u8> = model.iter().take(n).copied().collect();
                        prop_assert!(want.starts_with(&got));
                        prop_assert!(got.len() == want.len() || b.front(n).parts().count() == MAX_PARTS);
                        let k = got.len() / 2 + n % 3;
                        b.consume(k);
                        model.drain(..k.min(model.len()));
                    }
                    _ => {
                        let keep = model.len().saturating_sub(n % 7);
                        b.truncate(keep);
                        model.truncate(keep);
                    }
                }
                prop_assert_eq!(b.len(), model.len());
                prop_assert!(b.blocks.iter().all(|x| x.len() <= block && x.capacity() <= block));
                peak = peak.max(b.blocks.len());
                prop_assert!(b.blocks.len() + b.spare.len() <= peak, "more blocks than ever held at once");
            }
            let all = front_vec(&b, usize::MAX);
            let want: Vec<u8> = model.iter().take(all.len()).copied().collect();
            prop_assert_eq!(all, want);
        }
    }
}
