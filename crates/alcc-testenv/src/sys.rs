//! The crate's only unsafe code: the effective user id, the descriptor limit, and a socket
//! filter that loses a TCP peer's FIN (for tests of how a connection ends).

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

/// The classic BPF socket filter of [`drop_incoming_fins`]: TCP runs a socket's filter on
/// each arriving segment with the data starting at the TCP header (tcp_filter), so byte 13
/// is the flags byte; a segment with FIN set is dropped (return 0), any other kept whole.
const DROP_FIN: [libc::sock_filter; 4] = [
    // A = the byte at offset 13.
    bpf(libc::BPF_LD | libc::BPF_B | libc::BPF_ABS, 0, 0, 13),
    // If A & FIN (0x01): the next instruction (drop), else skip it (keep).
    bpf(libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K, 0, 1, 0x01),
    bpf(libc::BPF_RET | libc::BPF_K, 0, 0, 0),
    bpf(libc::BPF_RET | libc::BPF_K, 0, 0, u32::MAX),
];

/// One classic BPF instruction (the opcodes are 16-bit; libc gives them as u32).
const fn bpf(code: u32, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code: code as u16, jt, jf, k }
}

/// Makes the connected TCP socket `fd` drop every segment that carries a FIN, until
/// [`detach_filter`]: the peer's FIN is lost, however often it is retransmitted, as on a
/// lossy path (SO_ATTACH_FILTER; needs no privilege).
pub fn drop_incoming_fins(fd: std::os::fd::RawFd) -> std::io::Result<()> {
    let prog = libc::sock_fprog { len: DROP_FIN.len() as u16, filter: DROP_FIN.as_ptr().cast_mut() };
    // The kernel copies the program, so the filter need only live across the call.
    set_socket_option(fd, libc::SO_ATTACH_FILTER, &prog)
}

/// Removes the socket filter of [`drop_incoming_fins`] from `fd` (SO_DETACH_FILTER).
pub fn detach_filter(fd: std::os::fd::RawFd) -> std::io::Result<()> {
    set_socket_option(fd, libc::SO_DETACH_FILTER, &0 as &libc::c_int)
}

/// setsockopt(2) of the SOL_SOCKET option `name` on `fd` to `value`.
fn set_socket_option<T>(fd: std::os::fd::RawFd, name: libc::c_int, value: &T) -> std::io::Result<()> {
    // SAFETY: the kernel reads at most the length passed, that of `*value`, which lives
    // across the call.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            name,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
