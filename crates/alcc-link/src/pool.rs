//! [`PacketPool`]: the relay's packet buffers, taken back after each packet is written or
//! dropped and handed out again for the next arrivals, so that the relay does not allocate
//! and free one buffer per packet (malloc and free were about 7 % of the downlink thread at
//! 2 Gbit/s: bench/link-results.md).

/// Free packet buffers of one relay direction, at most a fixed number of them.
#[derive(Debug)]
pub(crate) struct PacketPool {
    free: Vec<Vec<u8>>,
    limit: usize,
}

impl PacketPool {
    /// A pool that keeps at most `limit` free buffers (the rest of a burst's are freed).
    pub fn new(limit: usize) -> PacketPool {
        PacketPool { free: Vec::new(), limit }
    }

    /// A buffer holding a copy of `bytes`: a free one if the pool has one, else a new one.
    pub fn copy_of(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut buffer = self.free.pop().unwrap_or_default();
        buffer.clear();
        buffer.extend_from_slice(bytes);
        buffer
    }

    /// Takes back a buffer whose packet is gone (kept only while the pool has room).
    pub fn give_back(&mut self, buffer: Vec<u8>) {
        if self.free.len() < self.limit && buffer.capacity() > 0 {
            self.free.push(buffer);
        }
    }

    /// Free buffers held.
    #[cfg(test)]
    fn free(&self) -> usize {
        self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_given_back_is_reused_with_the_new_bytes_only() {
        let mut pool = PacketPool::new(2);
        let first = pool.copy_of(&[1, 2, 3, 4]);
        let address = first.as_ptr();
        pool.give_back(first);
        let second = pool.copy_of(&[9]);
        assert_eq!(second, [9]);
        assert_eq!(second.as_ptr(), address, "the buffer was not reused");
    }

    #[test]
    fn the_pool_keeps_at_most_its_limit() {
        let mut pool = PacketPool::new(2);
        for _ in 0..5 {
            pool.give_back(vec![0; 1500]);
        }
        assert_eq!(pool.free(), 2);
        // An empty buffer (a dropped packet's payload when flows are not logged) holds
        // nothing worth keeping.
        let mut pool = PacketPool::new(2);
        pool.give_back(Vec::new());
        assert_eq!(pool.free(), 0);
    }
}
