//! The crate's only unsafe code: the effective user id and the descriptor limit.

/// Whether the process runs as root (effective user id 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid(2) cannot fail and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// The soft limit on open descriptors (RLIMIT_NOFILE), or `None` when it cannot be read.
pub fn open_files_limit() -> Option<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `limit` is a valid, writable rlimit that getrlimit fills.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    (rc == 0).then_some(limit.rlim_cur)
}
