//! UDP mode's datagram parser (alcc::wire::udp::parse_datagram) on arbitrary datagrams: never
//! panics, and a datagram it accepts encodes back to the same frame.
#![no_main]

use alcc::wire::udp::parse_datagram;
use alcc::wire::Frame;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|datagram: &[u8]| {
    if let Ok(frame) = parse_datagram(datagram) {
        let mut out = Vec::new();
        frame.encode(&mut out).expect("an accepted frame encodes");
        let (again, _) = Frame::parse(&out).expect("parses").expect("whole");
        assert_eq!(again, frame);
    }
});
