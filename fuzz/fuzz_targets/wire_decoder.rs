//! Framed mode's stream decoder (alcc::wire::Decoder) on arbitrary bytes cut into arbitrary
//! pieces, in both directions: it never panics, never returns a frame after its first error,
//! and every frame it returns encodes to bytes that parse back to the same frame.
#![no_main]

use alcc::wire::{Decoder, Direction, Frame};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (bool, Vec<u8>, Vec<u8>)| {
    let (to_sender, cuts, bytes) = input;
    let direction = if to_sender { Direction::ToSender } else { Direction::ToReceiver };
    let mut decoder = Decoder::new(direction);
    let mut rest = &bytes[..];
    let mut cuts = cuts.iter().map(|&c| usize::from(c) + 1);
    let mut failed = false;
    while !rest.is_empty() {
        let n = cuts.next().unwrap_or(rest.len()).min(rest.len());
        decoder.push(&rest[..n]);
        rest = &rest[n..];
        loop {
            match decoder.next_frame() {
                Ok(Some(frame)) => {
                    assert!(!failed, "a frame after an error: {frame:?}");
                    let mut out = Vec::new();
                    frame.encode(&mut out).expect("a decoded frame encodes");
                    let (again, used) = Frame::parse(&out).expect("parses").expect("whole");
                    assert_eq!(used, out.len());
                    assert_eq!(again, frame);
                }
                Ok(None) => break,
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
    }
    if failed {
        assert!(decoder.finish().is_err(), "finish after an error must fail");
    }
});
