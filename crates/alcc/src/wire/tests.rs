//! Exact tests of the wire format: round trips, every rejection, and property tests over
//! arbitrary byte strings cut at arbitrary places.

use std::time::Duration;

use alcc_cc::{Forecast, Time};
use proptest::prelude::*;

use super::frame::{encode_data_header, Envelope, RawHeader};
use super::*;

fn hello(spec: &str) -> Frame {
    Frame::Hello { spec: spec.into() }
}

fn data(seq: u64, payload: &[u8]) -> Frame {
    Frame::Data {
        header: DataHeader {
            seq,
            send_time: Time::from_micros(1_000 + seq),
            time_to_next: if seq % 2 == 0 { None } else { Some(Duration::from_millis(7)) },
            len: payload.len() as u32,
        },
        payload: payload.to_vec(),
    }
}

fn ack(seq: u64, delivered: u64) -> Frame {
    Frame::Ack(Ack { seq, receive_time: Time::from_micros(5 * seq), delivered })
}

fn forecast(bytes: u64, at_us: u64) -> Forecast {
    Forecast {
        received_or_lost_bytes: bytes,
        receiver_time: Time::from_micros(at_us),
        tick: Duration::from_millis(20),
        counts: vec![1, 3, 3, 9, 12, 15, 20, 21],
        packet_bytes: 1448,
    }
}

fn bytes_of(frames: &[Frame]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in frames {
        f.encode(&mut out).expect("valid test frame");
    }
    out
}

fn decode_all(dir: Direction, bytes: &[u8]) -> Result<Vec<Frame>, WireError> {
    let mut d = Decoder::new(dir);
    d.push(bytes);
    let mut out = Vec::new();
    while let Some(f) = d.next_frame()? {
        out.push(f);
    }
    d.finish()?;
    Ok(out)
}

#[test]
fn data_frame_bytes_are_exact() {
    let mut out = Vec::new();
    data(1, b"hi").encode(&mut out).unwrap();
    let want: Vec<u8> = [
        &[0xA1, 0xCC, 1, 2, 0, 0, 0, 22][..],
        &1u64.to_be_bytes(),
        &1001u64.to_be_bytes(),
        &7000u32.to_be_bytes(),
        b"hi",
    ]
    .concat();
    assert_eq!(out, want);
    // Backlogged is all ones.
    let mut out = Vec::new();
    data(0, b"x").encode(&mut out).unwrap();
    assert_eq!(&out[24..28], &[0xff; 4]);
}

#[test]
fn every_kind_round_trips() {
    let down = vec![hello("sprout:sigma=200"), data(0, b"abc"), data(1, &[0u8; 1000]), data(2, b"z")];
    assert_eq!(decode_all(Direction::ToReceiver, &bytes_of(&down)).unwrap(), down);
    let up = vec![ack(0, 3), Frame::Report(forecast(3, 10)), ack(1, 1003), Frame::Report(forecast(3, 10))];
    assert_eq!(decode_all(Direction::ToSender, &bytes_of(&up)).unwrap(), up);
}

#[test]
fn largest_payload_passes_and_one_more_byte_does_not() {
    let big = vec![7u8; MAX_PAYLOAD as usize];
    let frames = vec![hello("fixed"), data(0, &big)];
    assert_eq!(decode_all(Direction::ToReceiver, &bytes_of(&frames)).unwrap(), frames);
    let mut out = Vec::new();
    let h = DataHeader { seq: 0, send_time: Time::ZERO, time_to_next: None, len: MAX_PAYLOAD + 1 };
    assert!(encode_data_header(Envelope::Stream, &h, &mut out).is_err());
    let raw = RawHeader { magic: MAGIC, version: 1, kind: 2, body_len: MAX_BODY + 1 };
    assert_eq!(raw.check(), Err(WireError::Oversized { len: MAX_BODY + 1, max: MAX_BODY }));
}

/// Decodes `bytes` towards `dir` after a valid prefix, returning the first error.
fn rejection(dir: Direction, prefix: &[Frame], bytes: &[u8]) -> WireError {
    let mut all = bytes_of(prefix);
    all.extend_from_slice(bytes);
    decode_all(dir, &all).expect_err("must be refused")
}

fn header(version: u8, kind: u8, len: u32) -> Vec<u8> {
    let mut h = MAGIC.to_vec();
    h.push(version);
    h.push(kind);
    h.extend_from_slice(&len.to_be_bytes());
    h
}

#[test]
fn header_rejections() {
    let r = |b: &[u8]| rejection(Direction::ToReceiver, &[], b);
    assert_eq!(r(b"GET / HTTP/1.1\r\n"), WireError::BadMagic(*b"GE"));
    // A wrong magic is refused from its first two bytes, without waiting for more.
    let mut d = Decoder::new(Direction::ToReceiver);
    d.push(b"GE");
    assert_eq!(d.next_frame(), Err(WireError::BadMagic(*b"GE")));
    assert_eq!(r(&header(2, 1, 5)), WireError::UnsupportedVersion(2));
    assert_eq!(r(&header(0, 1, 5)), WireError::UnsupportedVersion(0));
    assert_eq!(r(&header(1, 9, 5)), WireError::UnknownType(9));
    assert_eq!(r(&header(1, 0, 5)), WireError::UnknownType(0));
    // Oversized headers are refused before their body arrives.
    let mut d = Decoder::new(Direction::ToReceiver);
    d.push(&header(1, 2, u32::MAX));
    assert_eq!(d.next_frame(), Err(WireError::Oversized { len: u32::MAX, max: MAX_BODY }));
    assert_eq!(r(&header(1, 1, 257)), WireError::Oversized { len: 257, max: 256 });
    assert_eq!(r(&header(1, 4, 26 + 4 * 65)), WireError::Oversized { len: 286, max: 282 });
    assert!(matches!(r(&header(1, 1, 0)), WireError::BadLength { kind: FrameKind::Hello, .. }));
    assert!(matches!(r(&header(1, 2, 20)), WireError::BadLength { kind: FrameKind::Data, .. }));
    assert!(matches!(r(&header(1, 3, 23)), WireError::BadLength { kind: FrameKind::Ack, .. }));
    assert!(matches!(r(&header(1, 3, 25)), WireError::BadLength { kind: FrameKind::Ack, .. }));
    assert!(matches!(r(&header(1, 4, 26)), WireError::BadLength { kind: FrameKind::Report, .. }));
    assert!(matches!(r(&header(1, 4, 29)), WireError::BadLength { kind: FrameKind::Report, .. }));
    assert!(matches!(r(&header(1, 5, 9)), WireError::BadLength { kind: FrameKind::Close, .. }));
    assert_eq!(r(&header(1, 6, 5)), WireError::UnknownType(6));
}

#[test]
fn a_kind_of_the_other_direction_is_refused_at_its_header() {
    // A data frame announcing a megabyte, towards the sender: refused from its 8 header
    // bytes, none of the body buffered.
    let mut d = Decoder::new(Direction::ToSender);
    d.push(&header(1, 2, MAX_BODY));
    let e = d.next_frame().expect_err("refused at the header");
    assert!(matches!(e, WireError::Unexpected { kind: FrameKind::Data, .. }), "{e:?}");
    assert_eq!(d.buffered(), 0);
    // And towards the receiver, after its Hello: an Ack or a Report header alone.
    for (kind, len) in [(3, 24), (4, 30)] {
        let mut d = Decoder::new(Direction::ToReceiver);
        d.push(&bytes_of(&[hello("copa")]));
        assert!(matches!(d.next_frame(), Ok(Some(Frame::Hello { .. }))));
        d.push(&header(1, kind, len));
        assert!(matches!(d.next_frame(), Err(WireError::Unexpected { .. })), "type {kind}");
    }
}

#[test]
fn field_rejections() {
    let mut spec = header(1, 1, 4);
    spec.extend_from_slice(b"a b\0");
    assert!(matches!(
        rejection(Direction::ToReceiver, &[], &spec),
        WireError::BadField { kind: FrameKind::Hello, .. }
    ));
    let report = |f: Forecast| {
        let mut out = Vec::new();
        // Encode refuses too; build the bytes from a valid report and patch them.
        let mut valid = forecast(0, 0);
        valid.counts = vec![0; f.counts.len().clamp(1, 64)];
        Frame::Report(valid).encode(&mut out).unwrap();
        out[8 + 16..8 + 20].copy_from_slice(&(f.tick.as_micros() as u32).to_be_bytes());
        out[8 + 20..8 + 24].copy_from_slice(&f.packet_bytes.to_be_bytes());
        for (i, c) in f.counts.iter().enumerate() {
            out[8 + 26 + 4 * i..8 + 30 + 4 * i].copy_from_slice(&c.to_be_bytes());
        }
        rejection(Direction::ToSender, &[], &out)
    };
    let field = |what| WireError::BadField { kind: FrameKind::Report, what };
    let zero_tick = Forecast { tick: Duration::ZERO, ..forecast(0, 0) };
    assert_eq!(report(zero_tick.clone()), field("tick not a whole number of µs in 1 µs..=1 s"));
    let long_tick = Forecast { tick: Duration::from_millis(1001), ..forecast(0, 0) };
    assert_eq!(report(long_tick), field("tick not a whole number of µs in 1 µs..=1 s"));
    let no_size = Forecast { packet_bytes: 0, ..forecast(0, 0) };
    assert_eq!(report(no_size), field("packet size not in 1..=65535"));
    let huge = Forecast { packet_bytes: 65_536, ..forecast(0, 0) };
    assert_eq!(report(huge), field("packet size not in 1..=65535"));
    let down = Forecast { counts: vec![5, 4], ..forecast(0, 0) };
    assert_eq!(report(down.clone()), field("cumulative counts decrease"));
    // The encoder refuses the same reports.
    assert!(Frame::Report(zero_tick).encode(&mut Vec::new()).is_err());
    assert!(Frame::Report(down).encode(&mut Vec::new()).is_err());
    // Count-of-counts field disagreeing with the length.
    let mut out = Vec::new();
    Frame::Report(forecast(0, 0)).encode(&mut out).unwrap();
    out[8 + 25] = 7;
    assert_eq!(rejection(Direction::ToSender, &[], &out), field("count of counts disagrees with length"));
}

#[test]
fn stream_rule_rejections() {
    let to_rx = |prefix: &[Frame], f: Frame| rejection(Direction::ToReceiver, prefix, &bytes_of(&[f]));
    let to_tx = |prefix: &[Frame], f: Frame| rejection(Direction::ToSender, prefix, &bytes_of(&[f]));
    assert!(matches!(to_rx(&[], data(0, b"a")), WireError::Unexpected { kind: FrameKind::Data, .. }));
    assert!(matches!(to_rx(&[hello("a")], hello("b")), WireError::Unexpected { kind: FrameKind::Hello, .. }));
    assert_eq!(
        to_rx(&[hello("a"), data(0, b"a")], data(2, b"a")),
        WireError::OutOfOrder { what: "data sequence number", prev: 0, got: 2 }
    );
    assert_eq!(
        to_rx(&[hello("a"), data(0, b"a")], data(0, b"a")),
        WireError::OutOfOrder { what: "data sequence number", prev: 0, got: 0 }
    );
    assert_eq!(
        to_rx(&[hello("a")], data(1, b"a")),
        WireError::OutOfOrder { what: "data sequence number", prev: u64::MAX, got: 1 }
    );
    assert!(matches!(to_rx(&[hello("a")], ack(0, 1)), WireError::Unexpected { kind: FrameKind::Ack, .. }));
    assert!(matches!(to_tx(&[], hello("a")), WireError::Unexpected { kind: FrameKind::Hello, .. }));
    assert!(matches!(to_tx(&[], data(0, b"a")), WireError::Unexpected { kind: FrameKind::Data, .. }));
    // Close is a UDP-mode datagram; on a framed connection the FIN ends the stream.
    let close = Frame::Close { sent: 1 };
    assert!(matches!(
        to_rx(&[hello("a")], close.clone()),
        WireError::Unexpected { kind: FrameKind::Close, .. }
    ));
    assert!(matches!(to_tx(&[], close), WireError::Unexpected { kind: FrameKind::Close, .. }));
    assert_eq!(
        to_tx(&[ack(3, 10)], ack(3, 11)),
        WireError::OutOfOrder { what: "ACK sequence number", prev: 3, got: 3 }
    );
    assert_eq!(
        to_tx(&[ack(3, 10)], ack(4, 10)),
        WireError::OutOfOrder { what: "ACK delivered bytes", prev: 10, got: 10 }
    );
    assert_eq!(
        to_tx(&[Frame::Report(forecast(100, 50))], Frame::Report(forecast(99, 60))),
        WireError::OutOfOrder { what: "report bytes", prev: 100, got: 99 }
    );
    assert_eq!(
        to_tx(&[Frame::Report(forecast(100, 50))], Frame::Report(forecast(100, 49))),
        WireError::OutOfOrder { what: "report receiver time", prev: 50, got: 49 }
    );
}

#[test]
fn truncation_and_poisoning() {
    let bytes = bytes_of(&[hello("copa"), data(0, b"abcdef")]);
    let cut = &bytes[..bytes.len() - 2];
    let mut d = Decoder::new(Direction::ToReceiver);
    d.push(cut);
    assert_eq!(d.next_frame().unwrap(), Some(hello("copa")));
    assert_eq!(d.next_frame().unwrap(), None);
    assert_eq!(d.finish(), Err(WireError::Truncated(cut.len() - 12)));
    // After an error, valid bytes do not revive the stream.
    let mut d = Decoder::new(Direction::ToReceiver);
    d.push(b"XX");
    assert!(d.next_frame().is_err());
    d.push(&bytes);
    assert_eq!(d.next_frame(), Err(WireError::BadMagic(*b"XX")));
    assert_eq!(d.finish(), Err(WireError::BadMagic(*b"XX")));
    assert_eq!(decoder::allowed(Direction::ToSender), &[FrameKind::Ack, FrameKind::Report]);
}

/// Feeds `bytes` to a decoder cut at `cuts` (positions taken modulo the length); returns
/// the frames it accepted and how it ended.
fn feed(dir: Direction, bytes: &[u8], cuts: &[usize]) -> (Vec<Frame>, Result<(), WireError>) {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    points.push(0);
    points.push(bytes.len());
    points.sort_unstable();
    let mut d = Decoder::new(dir);
    let mut frames = Vec::new();
    for w in points.windows(2) {
        d.push(&bytes[w[0]..w[1]]);
        loop {
            match d.next_frame() {
                Ok(Some(f)) => frames.push(f),
                Ok(None) => break,
                Err(e) => return (frames, Err(e)),
            }
        }
    }
    let end = d.finish();
    (frames, end)
}

fn any_direction() -> impl Strategy<Value = Direction> {
    prop_oneof![Just(Direction::ToReceiver), Just(Direction::ToSender)]
}

/// Byte strings that often start like frames, so that the fuzzing reaches the bodies.
fn frame_like_bytes() -> impl Strategy<Value = Vec<u8>> {
    let head = (0u8..6, 0u8..3, 0u32..400).prop_map(|(kind, version, len)| header(version, kind, len));
    (proptest::collection::vec((head, proptest::collection::vec(any::<u8>(), 0..80)), 0..6))
        .prop_map(|parts| parts.into_iter().flat_map(|(h, b)| h.into_iter().chain(b)).collect())
}

proptest! {
    /// Arbitrary bytes, arbitrary cuts: no panic; cutting changes nothing; every frame
    /// accepted is valid (it re-encodes, through the checking encoder, to the same bytes).
    #[test]
    fn arbitrary_bytes_never_yield_an_invalid_frame(
        dir in any_direction(),
        bytes in prop_oneof![proptest::collection::vec(any::<u8>(), 0..600), frame_like_bytes()],
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let (frames, end) = feed(dir, &bytes, &cuts);
        let (whole, whole_end) = feed(dir, &bytes, &[]);
        prop_assert_eq!(&frames, &whole);
        prop_assert_eq!(&end, &whole_end);
        let again = bytes_of(&frames);
        prop_assert_eq!(&again[..], &bytes[..again.len()]);
        if end.is_ok() {
            prop_assert_eq!(again.len(), bytes.len());
        }
    }

    /// Valid streams survive any cutting intact; a flipped byte is either refused or yields
    /// frames that are themselves valid.
    #[test]
    fn valid_streams_round_trip_and_mutations_stay_safe(
        payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..300), 0..8),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
        flip in any::<(usize, u8)>(),
    ) {
        let mut frames = vec![hello("sprout")];
        frames.extend(payloads.iter().enumerate().map(|(i, p)| data(i as u64, p)));
        let bytes = bytes_of(&frames);
        let (got, end) = feed(Direction::ToReceiver, &bytes, &cuts);
        prop_assert_eq!(&got, &frames);
        prop_assert_eq!(end, Ok(()));
        let mut bad = bytes.clone();
        let at = flip.0 % bad.len();
        bad[at] ^= flip.1.max(1);
        let (got, _) = feed(Direction::ToReceiver, &bad, &cuts);
        let again = bytes_of(&got);
        prop_assert_eq!(&again[..], &bad[..again.len()]);
    }
}
