//! The library half of the `alcc` command: the experiment harness (specs, schemes, runs,
//! tables), the log analysis and the resource reports it uses, and the system calls under them.
//! The binary (src/main.rs) is built on it; so is the fuzz target of the experiment TOML
//! (fuzz/fuzz_targets/experiment_spec.rs), which needs the spec parser in a library.
#![deny(unsafe_code)]

pub mod analyze;
pub mod experiment;
pub mod rusage;
#[allow(unsafe_code)] // the crate's one module of system calls; every block has a SAFETY line
pub mod sys;
