//! Controller specifications (`copa:delta=0.5`) as the registry and the engine read them
//! (alcc_cc::registry::build, alcc::check_spec_for in every mode): never panic; a spec the
//! registry accepts builds a controller with a sane decision.
#![no_main]

use alcc::Mode;
use alcc_cc::registry;
use alcc_cc::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (u16, &str)| {
    let (mss, spec) = input;
    // MDI's `model=FILE` reads a file: /dev/zero or a FIFO would measure the machine.
    if spec.contains("model") {
        return;
    }
    let config = Config { mss: u64::from(mss.max(1)), seed: 1 };
    if let Ok(c) = registry::build(spec, &config) {
        let d = c.decision();
        assert!(d.window > 0, "{spec}: zero window");
        assert!(d.pacing_rate != Some(0), "{spec}: zero pacing rate");
    }
    let _ = registry::build_receiver(spec, &config);
    for mode in [Mode::Kernel, Mode::Framed, Mode::Udp] {
        let _ = alcc::check_spec_for(spec, mode);
    }
});
