//! The bytes of every transfer: an 8 MiB block of `alcc serve`'s pattern, read in a ring from
//! a per-transfer offset ([`crate::plan::Transfer::content_offset`]).

use std::sync::OnceLock;

/// Length of the block.
pub const BLOCK: usize = 8 << 20;

/// Byte `i` of the pattern (the same as `alcc serve --bytes`).
fn pattern(offset: u64, buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        let x = (offset + i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        *b = (x >> 56) as u8 ^ (x >> 23) as u8;
    }
}

/// The block, generated at the first call.
pub fn block() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let mut b = vec![0u8; BLOCK];
        pattern(0, &mut b);
        b
    })
}

/// The longest run of a transfer's bytes that starts at stream position `pos` and lies in
/// one piece of the block (at most `max` bytes).
pub fn slice(start: u64, pos: u64, max: usize) -> &'static [u8] {
    let at = ((start + pos) % BLOCK as u64) as usize;
    &block()[at..(at + max).min(BLOCK)]
}

/// Whether `data` is what a transfer starting at `start` carries at stream position `pos`.
pub fn matches(start: u64, mut pos: u64, mut data: &[u8]) -> bool {
    while !data.is_empty() {
        let want = slice(start, pos, data.len());
        if data[..want.len()] != *want {
            return false;
        }
        pos += want.len() as u64;
        data = &data[want.len()..];
    }
    true
}
