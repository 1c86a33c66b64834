//! Compiles the BPF underlay (bpf/alcc_underlay.bpf.c) with clang into `$OUT_DIR`, for
//! `src/underlay/loader.rs` to embed. Where clang or the libbpf headers are missing, the
//! crate still builds: `alcc_bpf` stays unset and choosing the `alcc` underlay is an error
//! that says what was missing here (`ALCC_BPF_UNBUILT`). `ALCC_BPF=off` leaves it out on
//! purpose (to check that path, or on a machine that must not have it).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The clang to use: `$CLANG` if set, else `clang`, else Debian 12's `clang-14`.
fn find_clang() -> Option<String> {
    let mut candidates =
        env::var("CLANG").ok().into_iter().chain(["clang".to_string(), "clang-14".to_string()]);
    candidates.find(|c| Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success()))
}

/// Where `bpf/bpf_helpers.h` is: the vendored libbpf's headers (libbpf-sys exports them as
/// `DEP_BPF_INCLUDE` to crates that depend on it directly), else the system's (libbpf-dev).
fn find_bpf_headers() -> Option<PathBuf> {
    let candidates =
        env::var_os("DEP_BPF_INCLUDE").map(PathBuf::from).into_iter().chain([PathBuf::from("/usr/include")]);
    candidates.into_iter().find(|d| d.join("bpf/bpf_helpers.h").is_file())
}

fn build(out: &Path) -> Result<(), String> {
    if env::var("ALCC_BPF").is_ok_and(|v| v == "off") {
        return Err("ALCC_BPF=off was set when alcc was built".to_string());
    }
    let clang = find_clang().ok_or("no clang found at build time (install clang; scripts/setup.sh does)")?;
    let headers = find_bpf_headers()
        .ok_or("no libbpf headers (bpf/bpf_helpers.h) found at build time (install libbpf-dev)")?;
    let object = out.join("alcc_underlay.bpf.o");
    let output = Command::new(&clang)
        .args(["-target", "bpf", "-O2", "-g", "-Wall", "-Werror"])
        .arg("-I")
        .arg(&headers)
        .arg("-c")
        .arg("bpf/alcc_underlay.bpf.c")
        .arg("-o")
        .arg(&object)
        .output()
        .map_err(|e| format!("running {clang}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{clang} failed on bpf/alcc_underlay.bpf.c: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(())
}

fn main() {
    println!("cargo::rerun-if-changed=bpf/alcc_underlay.bpf.c");
    println!("cargo::rerun-if-changed=bpf/kernel_types.h");
    println!("cargo::rerun-if-env-changed=CLANG");
    println!("cargo::rerun-if-env-changed=ALCC_BPF");
    println!("cargo::rustc-check-cfg=cfg(alcc_bpf)");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR for build scripts"));
    match build(&out) {
        Ok(()) => println!("cargo::rustc-cfg=alcc_bpf"),
        Err(why) => {
            println!("cargo::warning=the alcc BPF underlay is not built: {why}");
            println!("cargo::rustc-env=ALCC_BPF_UNBUILT={why}");
        }
    }
}
