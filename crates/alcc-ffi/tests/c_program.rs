//! Builds libalcc and the C test program with the system C compiler, and runs it. (That the
//! C compiler and Rust lay out `struct alcc_info` alike is a unit test of the crate,
//! `layout_tests`.)

use std::path::PathBuf;
use std::process::Command;

#[test]
fn c_program_uses_the_abi() {
    alcc_testenv::require!(alcc_testenv::needs().program("cc"));
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // The test binary lives in <target>/<profile>/deps; libalcc.so is in <target>/<profile>.
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|d| d.parent()).unwrap().to_path_buf();
    let release = profile_dir.file_name().is_some_and(|n| n == "release");
    let target_dir = profile_dir.parent().unwrap();
    let mut build = Command::new(env!("CARGO"));
    build.args(["build", "-p", "alcc-ffi", "--target-dir"]).arg(target_dir);
    if release {
        build.arg("--release");
    }
    assert!(build.status().unwrap().success(), "building libalcc failed");
    let out_dir = std::env::temp_dir().join(format!("alcc-ffi-test-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let program = out_dir.join("alcc_test");
    let status = Command::new("cc")
        .args(["-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-O2", "-o"])
        .arg(&program)
        .arg(manifest.join("tests/c/alcc_test.c"))
        .arg("-I")
        .arg(manifest.join("include"))
        .arg("-L")
        .arg(&profile_dir)
        .args(["-lalcc", "-lpthread"])
        .status()
        .unwrap();
    assert!(status.success(), "compiling the C test failed");
    let out = Command::new(&program).env("LD_LIBRARY_PATH", &profile_dir).output().unwrap();
    let _ = std::fs::remove_dir_all(&out_dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}{stderr}");
    assert!(out.status.success(), "C test failed:\n{stdout}{stderr}");
    assert!(stdout.contains("all checks passed"));
}
