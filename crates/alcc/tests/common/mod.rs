//! Helpers shared by the loopback tests: a deterministic byte pattern and a checksum.
#![allow(dead_code)]

use std::io::{self, Read, Write};

/// FNV-1a, 64-bit: enough to tell two byte streams apart in a test.
#[derive(Clone, Copy, Debug)]
pub struct Fnv(pub u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    pub fn update(&mut self, data: &[u8]) {
        for &b in data {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// Fills `buf` with the pattern bytes starting at stream offset `offset`.
pub fn pattern(offset: u64, buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        let x = (offset + i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        *b = (x >> 56) as u8 ^ (x >> 23) as u8;
    }
}

/// Writes `total` pattern bytes to `w`; returns their checksum.
pub fn write_pattern(w: &mut impl Write, total: u64) -> io::Result<u64> {
    let mut buf = vec![0u8; 256 << 10];
    let mut sum = Fnv::default();
    let mut off = 0;
    while off < total {
        let n = (total - off).min(buf.len() as u64) as usize;
        pattern(off, &mut buf[..n]);
        w.write_all(&buf[..n])?;
        sum.update(&buf[..n]);
        off += n as u64;
    }
    Ok(sum.0)
}

/// Reads `r` to the end; returns (bytes, checksum).
pub fn read_all(r: &mut impl Read) -> io::Result<(u64, u64)> {
    let mut buf = vec![0u8; 256 << 10];
    let mut sum = Fnv::default();
    let mut total = 0;
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            return Ok((total, sum.0));
        }
        sum.update(&buf[..n]);
        total += n as u64;
    }
}

/// Utime + stime of this process's thread named `name`, in clock ticks, from /proc.
pub fn thread_ticks(name: &str) -> Option<u64> {
    for entry in std::fs::read_dir("/proc/self/task").ok()? {
        let path = entry.ok()?.path();
        let comm = std::fs::read_to_string(path.join("comm")).ok()?;
        if comm.trim() == name {
            let stat = std::fs::read_to_string(path.join("stat")).ok()?;
            // Fields after the parenthesised command: state is field 3, utime 14, stime 15.
            let rest = &stat[stat.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            return Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?);
        }
    }
    None
}

/// Resident set size of this process, KiB.
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}
