//! The host manager's protocol decoder (alcc::coupling::protocol, docs/coupled-flows.md) on
//! arbitrary bytes in arbitrary pieces: never panics, never holds more than one partial
//! message, and every message it returns encodes back to the bytes it was read from.
#![no_main]

use alcc::coupling::protocol::{decode, Decoder, MAX_MESSAGE};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (u8, &[u8])| {
    let (split, bytes) = input;
    let mut d = Decoder::new();
    let at = usize::from(split).min(bytes.len());
    for part in [&bytes[..at], &bytes[at..]] {
        d.feed(part);
        loop {
            match d.next_message() {
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
    }
    if let Ok(Some((msg, used))) = decode(bytes) {
        assert!(used <= MAX_MESSAGE);
        let mut again = Vec::new();
        msg.encode(&mut again);
        assert_eq!(&again[..], &bytes[..used]);
    }
});
