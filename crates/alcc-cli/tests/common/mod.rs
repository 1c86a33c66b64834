//! Helpers shared by the command's integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// A scratch directory, unique per test process and tag, removed when dropped (also when an
/// assertion fails).
pub struct TmpDir(PathBuf);

impl TmpDir {
    /// Creates `$TMPDIR/alcc-cli-test-PID-TAG`.
    pub fn new(tag: &str) -> TmpDir {
        let dir = std::env::temp_dir().join(format!("alcc-cli-test-{}-{tag}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TmpDir(dir)
    }

    /// A path inside the directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
