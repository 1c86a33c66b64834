//! The Mahimahi link-log parser (alcc_trace::Log::parse) on arbitrary files: never panics,
//! and an accepted log turns into a recording.
#![no_main]

use alcc_trace::Log;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(log) = Log::parse("fuzz", bytes) {
        let _ = log.to_recording();
    }
});
