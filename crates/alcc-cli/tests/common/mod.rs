//! Helpers shared by the command's integration tests: scratch directories, the test data
//! pattern, and starting and waiting for the `alcc` servers.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `alcc` binary under test.
pub const ALCC: &str = env!("CARGO_BIN_EXE_alcc");

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

/// Fills `buf` with the test pattern starting at byte `offset` of the stream (the first
/// [`BLOCK`] bytes of it are what the servers repeat, see [`served`]).
pub fn pattern(offset: u64, buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        let x = (offset + i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        *b = (x >> 56) as u8 ^ (x >> 23) as u8;
    }
}

/// The size of the block `alcc serve --bytes` and `alcc serve-plain --bytes` repeat.
pub const BLOCK: usize = 8 << 20;

/// The `n` bytes `alcc serve --bytes n` and `alcc serve-plain --bytes n` send: the first
/// [`BLOCK`] bytes of [`pattern`], repeated.
pub fn served(n: usize) -> Vec<u8> {
    let mut block = vec![0u8; BLOCK.min(n)];
    pattern(0, &mut block);
    block.iter().copied().cycle().take(n).collect()
}

/// Writes `len` bytes of deterministic content that is not periodic on any small scale
/// (xorshift64*) to `path`, in 1 MiB blocks: test files for the gigabyte transfers.
pub fn write_content(path: &std::path::Path, len: u64) {
    use std::io::Write;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut block = Vec::with_capacity(1 << 20);
    let mut left = len;
    while left > 0 {
        block.clear();
        while block.len() < (1 << 20) {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            block.extend_from_slice(&x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
        }
        let n = left.min(block.len() as u64) as usize;
        f.write_all(&block[..n]).unwrap();
        left -= n as u64;
    }
    f.flush().unwrap();
}

/// Spawns `cmd` with stdout and stderr piped and reads the first line it prints on stdout
/// (a server's line naming where it listens); returns the child and that line.
pub fn spawn_first_line(cmd: &mut Command) -> (Child, String) {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    (child, line)
}

/// Spawns a server, checks that its first line starts with `prefix` and returns the child
/// and the port (the text after the line's last `:`).
pub fn spawn_listening(cmd: &mut Command, prefix: &str) -> (Child, String) {
    let (child, line) = spawn_first_line(cmd);
    assert!(line.starts_with(prefix), "printed {line:?}");
    let port = line.trim().rsplit(':').next().unwrap().to_string();
    (child, port)
}

/// Starts `alcc serve-plain ARGS --port 0 --count 1`; returns the child and its port.
pub fn serve_plain<S: AsRef<OsStr>>(args: &[S]) -> (Child, String) {
    spawn_listening(
        Command::new(ALCC).arg("serve-plain").args(args).args(["--port", "0", "--count", "1"]),
        "alcc serve-plain: listening on ",
    )
}

/// Waits (at most 60 s) for a server to exit successfully; returns its stderr.
pub fn wait_ok(child: Child) -> String {
    wait_ok_within(child, Duration::from_secs(60))
}

/// Waits at most `limit` for a server to exit (killing it after that) and checks that it
/// succeeded; returns its stderr.
pub fn wait_ok_within(mut child: Child, limit: Duration) -> String {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("the server did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "the server failed: {err}");
    err
}
