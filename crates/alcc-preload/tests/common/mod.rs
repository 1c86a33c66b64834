//! What the shim's integration tests share: the library built with the test's profile and
//! a scratch directory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The library, built now with the test's own profile (`cargo test` builds a cdylib-only
/// crate's test harness, not the library itself): target/<profile>/libalcc_preload.so.
pub fn library() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT.get_or_init(build_library).clone().unwrap_or_else(|e| panic!("{e}"))
}

fn build_library() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("the test's own path: {e}"))?;
    let dir = exe.parent().and_then(Path::parent).ok_or("the test is not in target/<profile>/deps")?;
    let release = dir.file_name().is_some_and(|n| n == "release");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.args(["build", "-p", "alcc-preload", "--manifest-path"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"));
    if release {
        cmd.arg("--release");
    }
    let status = cmd.status().map_err(|e| format!("{cargo}: {e}"))?;
    let lib = dir.join("libalcc_preload.so");
    if !status.success() || !lib.exists() {
        return Err(format!(
            "building libalcc_preload.so failed ({status}); expected it at {}",
            lib.display()
        ));
    }
    Ok(lib)
}

/// A scratch directory removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("alcc-preload-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
