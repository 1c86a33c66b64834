//! UDP mode's datagram parser (alcc::wire::udp::parse_datagram, wire version 2) on arbitrary
//! datagrams: never panics, a datagram it accepts encodes back to the same bytes, and what a
//! flow makes of it (alcc::wire::udp::receive) agrees with the parser.
#![no_main]

use alcc::wire::udp::{connection_id, encode_datagram, parse_datagram, receive, ConnectionId, Received};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|datagram: &[u8]| {
    let parsed = parse_datagram(datagram);
    if let Ok((id, frame)) = &parsed {
        let mut out = Vec::new();
        encode_datagram(*id, frame, &mut out).expect("an accepted frame encodes");
        assert_eq!(parse_datagram(&out).expect("parses"), (*id, frame.clone()));
        assert_eq!(receive(datagram, *id), Ok(Received::Own(frame.clone())));
    }
    // A flow with another id never takes it, and never fails on it. The id the header names
    // counts even when the rest does not parse (a flow fails on a bad datagram of its own).
    let other = ConnectionId(connection_id(datagram).map_or(1, |id| id.0.wrapping_add(1)));
    assert!(!matches!(receive(datagram, other), Ok(Received::Own(_)) | Err(_)));
});
