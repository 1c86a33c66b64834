//! Reading an HTTP request head for the download servers (`alcc serve --http`,
//! `alcc serve-plain --http`), which need only its first line.

use std::io::Read;

use anyhow::{bail, Result};

/// The largest request head accepted.
const MAX_HEAD: usize = 16 << 10;

/// Reads a request head from `stream` up to the blank line ending it (byte by byte, so that
/// nothing after it is consumed); returns its first line.
pub fn read_first_line(stream: &mut impl Read) -> Result<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && !head.ends_with(b"\n\n") {
        if head.len() > MAX_HEAD {
            bail!("request head too long");
        }
        if stream.read(&mut byte)? == 0 {
            bail!("connection closed before the request ended");
        }
        head.push(byte[0]);
    }
    Ok(String::from_utf8_lossy(&head).lines().next().unwrap_or_default().to_string())
}
