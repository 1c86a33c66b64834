//! The Mahimahi trace parser (alcc_trace::Trace::parse_bytes) on arbitrary files: never
//! panics; an accepted trace writes back to text that parses to the same opportunities, and
//! its derived figures are computable.
#![no_main]

use alcc_trace::Trace;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(trace) = Trace::parse_bytes("fuzz", bytes) else { return };
    let mut text = Vec::new();
    trace.write(&mut text).expect("writes to memory");
    let again = Trace::parse_bytes("fuzz", &text).expect("a written trace parses");
    assert_eq!(again.opportunities_ms(), trace.opportunities_ms());
    let period = trace.period_ms();
    let _ = trace.mean_rate_mbps();
    let _ = trace.capacity_bytes(0, period.saturating_mul(3));
    let _ = trace.opportunities_before(period.saturating_add(1));
    let _: Vec<u64> = trace.opportunities_from(period / 2).take(1000).collect();
});
