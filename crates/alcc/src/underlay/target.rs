//! [`Target`]: what user space writes into a socket's storage for the BPF program, in the
//! layout of `struct alcc_target` in bpf/alcc_underlay.bpf.c.

/// One socket's target window and rate, as the BPF program reads it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Target {
    /// [`Policy::code`](super::Policy::code): hold (1) or follow (2).
    pub policy: u32,
    /// The kernel congestion window, segments.
    pub cwnd: u32,
    /// The kernel pacing rate, bytes/s; 0 leaves the kernel's pacing as it is.
    pub pacing_rate: u64,
}

impl Target {
    /// Size of `struct alcc_target` (u32, u32, u64: no padding).
    pub const SIZE: usize = 16;

    /// The bytes of `struct alcc_target` in native byte order.
    pub fn to_bytes(self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..4].copy_from_slice(&self.policy.to_ne_bytes());
        b[4..8].copy_from_slice(&self.cwnd.to_ne_bytes());
        b[8..16].copy_from_slice(&self.pacing_rate.to_ne_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_follow_the_c_layout() {
        let t = Target { policy: 2, cwnd: 0x0102_0304, pacing_rate: 0x1122_3344_5566_7788 };
        let b = t.to_bytes();
        assert_eq!(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]), 2);
        assert_eq!(u32::from_ne_bytes([b[4], b[5], b[6], b[7]]), 0x0102_0304);
        let mut r = [0u8; 8];
        r.copy_from_slice(&b[8..]);
        assert_eq!(u64::from_ne_bytes(r), 0x1122_3344_5566_7788);
    }
}
