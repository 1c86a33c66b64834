//! `alcc get --drwa` and `alcc get --rcvbuf N` against `alcc serve-plain` (a plain kernel
//! TCP server, no alcc code on its data path) on loopback: the file arrives byte-identical,
//! and DRWA works for an unprivileged user (as `nobody` through runuser when the test runs as
//! root).

use std::ffi::OsStr;
use std::process::{Child, Command, Output};

mod common;
use common::{TmpDir, ALCC};

/// Starts `alcc serve-plain --file F --port 0 --count 1`; returns the child and its port.
fn serve(file: &std::path::Path) -> (Child, String) {
    common::serve_plain(&[OsStr::new("--file"), file.as_os_str()])
}

fn content(len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 53) as u8).collect()
}

fn check(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "alcc get failed: {stderr}");
    stderr
}

#[test]
fn drwa_and_the_static_cap_download_a_file_byte_identical() {
    let dir = TmpDir::new("drwa-get");
    let src = dir.path("src");
    let data = content(24 << 20);
    std::fs::write(&src, &data).unwrap();
    for flags in [&["--drwa"][..], &["--drwa=drwa:lambda=2", "--rcvbuf", "4194304"], &["--rcvbuf", "262144"]]
    {
        let (mut server, port) = serve(&src);
        let dst = dir.path("dst");
        let out = Command::new(ALCC)
            .args(["get", &format!("127.0.0.1:{port}"), "--out"])
            .arg(&dst)
            .args(flags)
            .output()
            .unwrap();
        let stderr = check(&out);
        server.wait().unwrap();
        assert!(std::fs::read(&dst).unwrap() == data, "{flags:?}: the file differs");
        let expect =
            if flags[0].starts_with("--drwa") { "receive window drwa" } else { "static:rcvbuf=262144" };
        assert!(stderr.contains(expect), "{flags:?}: {stderr}");
    }
}

#[test]
fn drwa_works_unprivileged() {
    let dir = TmpDir::new("drwa-nobody");
    let src = dir.path("src");
    std::fs::write(&src, content(128 << 20)).unwrap();
    let (mut server, port) = serve(&src);
    let addr = format!("127.0.0.1:{port}");
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    let out = if root {
        // runuser (util-linux) drops to nobody: no CAP_NET_ADMIN, rmem_max applies. A copy of
        // the binary in the scratch directory, which nobody can reach wherever the checkout is.
        use std::os::unix::fs::PermissionsExt;
        let bin = dir.path("alcc");
        std::fs::copy(ALCC, &bin).unwrap();
        for p in [dir.path(""), bin.clone()] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let bin = bin.to_str().unwrap();
        Command::new("runuser").args(["-u", "nobody", "--", bin, "get", &addr, "--drwa"]).output().unwrap()
    } else {
        Command::new(ALCC).args(["get", &addr, "--drwa"]).output().unwrap()
    };
    let stderr = check(&out);
    server.wait().unwrap();
    assert!(stderr.contains(&format!("{} bytes", 128 << 20)), "{stderr}");
    let changes: u64 = stderr
        .split(" clamp changes")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no clamp count in {stderr}"));
    assert!(changes >= 1, "DRWA applied no clamp as an unprivileged user: {stderr}");
}
