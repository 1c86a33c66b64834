//! `struct alcc_info` as the C compiler lays it out from include/alcc.h (tests/c/layout.c
//! prints it) against [`CInfo`] as Rust lays it out: size, alignment and every field's
//! offset and size must agree, so that a field added on one side only fails here.

use std::path::PathBuf;
use std::process::Command;

use crate::CInfo;

/// Every field of `struct alcc_info` (name, offset, size) as Rust lays out [`CInfo`].
fn rust_layout() -> Vec<(&'static str, usize, usize)> {
    use std::mem::{offset_of, size_of_val};
    let i = CInfo::from(&engine::FlowInfo::default());
    macro_rules! field {
        ($f:ident) => {
            (stringify!($f), offset_of!(CInfo, $f), size_of_val(&i.$f))
        };
    }
    vec![
        field!(window),
        field!(pacing_rate),
        field!(bytes_in_flight),
        field!(max_bytes_in_flight),
        field!(queued),
        field!(bytes_written),
        field!(bytes_acked),
        field!(losses),
        field!(srtt_us),
        field!(min_rtt_us),
        field!(kernel_cwnd),
        field!(kernel_delivery_rate),
        field!(kernel_rtt_us),
        field!(kernel_min_rtt_us),
        field!(kernel_notsent),
        field!(kernel_total_retrans),
        field!(controller),
        field!(underlay),
        field!(prior_congestion),
    ]
}

#[test]
fn alcc_info_has_the_same_layout_in_c_and_rust() {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out_dir = std::env::temp_dir().join(format!("alcc-ffi-layout-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let program = out_dir.join("layout");
    let compiled = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&program)
        .arg(manifest.join("tests/c/layout.c"))
        .arg("-I")
        .arg(manifest.join("include"))
        .status();
    let Ok(status) = compiled else {
        let _ = std::fs::remove_dir_all(&out_dir);
        panic!("no C compiler `cc` (scripts/setup.sh installs one)");
    };
    assert!(status.success(), "compiling tests/c/layout.c failed");
    let out = Command::new(&program).output().unwrap();
    let _ = std::fs::remove_dir_all(&out_dir);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines().map(|l| l.split_whitespace().collect::<Vec<_>>());
    let head = lines.next().unwrap();
    assert_eq!(head[0], "struct");
    let c_size: usize = head[1].parse().unwrap();
    let c_align: usize = head[2].parse().unwrap();
    assert_eq!(
        (c_size, c_align),
        (std::mem::size_of::<CInfo>(), std::mem::align_of::<CInfo>()),
        "sizeof/alignof struct alcc_info (C) vs CInfo (Rust)"
    );
    let c: Vec<(String, usize, usize)> =
        lines.map(|f| (f[0].to_string(), f[1].parse().unwrap(), f[2].parse().unwrap())).collect();
    let rust: Vec<(String, usize, usize)> =
        rust_layout().into_iter().map(|(n, o, s)| (n.to_string(), o, s)).collect();
    assert_eq!(c, rust, "(field, offset, size) in C and in Rust");
}
