//! The experiment TOML (`alcc experiment run SPEC`) as the harness reads it
//! (alcc_cli::experiment::spec::Spec::parse): never panic; a spec it accepts is recorded
//! (`to_toml`, how OUT/spec.toml keeps it) as text that parses again to the same record.
#![no_main]

use alcc_cli::experiment::spec::Spec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let Ok(spec) = Spec::parse("fuzz", text) else { return };
    let recorded = spec.to_toml();
    let again = match Spec::parse("recorded", &recorded) {
        Ok(again) => again,
        Err(e) => panic!("the record of an accepted spec is refused: {e}\n{recorded}"),
    };
    assert_eq!(again.to_toml(), recorded, "the record changed on a second reading");
    assert_eq!(again.parsed_schemes().len(), spec.schemes.len());
});
