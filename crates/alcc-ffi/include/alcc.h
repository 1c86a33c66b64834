/*
 * alcc.h - application-layer congestion control, C ABI (libalcc.so / libalcc.a).
 *
 * Drop-in replacements for the socket calls of a TCP sender: a socket accepted with
 * alcc_accept() or connected with alcc_connect() sends through a user-space congestion
 * controller that lets bytes into the kernel only as fast as it allows. Same arguments and
 * return values as accept(2), connect(2), send(2), recv(2) and close(2); errors are -1 with
 * errno set. Use alcc_send/alcc_recv/alcc_close (not send/recv/close) on these descriptors.
 *
 * The controller and kernel congestion control come from alcc_set_cc(), set on a listening
 * socket (for the connections it accepts later), on an unconnected socket (before
 * alcc_connect) or on an alcc connection (from now on). Without it, the environment
 * variables ALCC_CC (default "fixed", an unbounded window) and ALCC_UNDERLAY (default
 * "reno", which every unprivileged process may choose; the paper's "cubic" needs root where
 * net.ipv4.tcp_allowed_congestion_control does not list it) decide.
 *
 * Modes (alcc_set_mode, or ALCC_MODE): "kernel" (default) runs alcc at the sender only,
 * for any TCP client. "framed" runs alcc at both ends (docs/wire-format.md): the sending
 * side sends each chunk in a data frame; the receiving side (alcc_recv) gets only the
 * application bytes and answers with ACK frames (and, for Sprout, its forecasts), so
 * receiver-side algorithms such as "sprout" run. The receiving side cannot alcc_send,
 * alcc_set_cc or alcc_get_info (-1/EOPNOTSUPP: it runs no controller) and the sending side
 * cannot alcc_recv in framed mode; a peer that breaks the wire format fails that connection
 * with -1/EIO.
 *
 * Roles (alcc_set_role, or ALCC_ROLE): "send" or "receive". Without a choice the accepting
 * side sends and the connecting side receives in framed mode (a download); an upload (the
 * uplink: a phone sending to a server) chooses "send" before alcc_connect and "receive" on
 * the listening socket. In kernel mode every alcc connection sends (its peer is any TCP
 * socket).
 *
 * The congestion control a connection starts under: the kernel initialises a socket's
 * congestion control at the handshake, under the listener's (or, when nobody chose one, the
 * host's default, net.ipv4.tcp_congestion_control: bbr on many hosts). BBR turns the kernel's
 * own pacing on, and switching to alcc's underlay later does not turn it off. So alcc_set_cc
 * on a listening or unconnected socket sets the underlay's congestion control on it at once
 * (reno under the BPF underlay "alcc"), alcc_accept sets it on the listener for the connections
 * it accepts from then on, and alcc_connect on a sending socket before connecting. A listener's
 * connections that completed their handshake earlier keep what they started under: call
 * alcc_set_cc before listen(2). alcc_info.prior_congestion names what each started under.
 *
 * struct alcc_info is checked field by field against the Rust definition by a test
 * (crates/alcc-ffi/src/layout_tests.rs compiles tests/c/layout.c against this header).
 */
#ifndef ALCC_H
#define ALCC_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What one connection is doing; filled by alcc_get_info(). */
struct alcc_info {
    uint64_t window;            /* controller window, bytes (UINT64_MAX: unbounded) */
    uint64_t pacing_rate;       /* controller pacing rate, bytes/s (0: not paced) */
    uint64_t bytes_in_flight;   /* written to the kernel, not yet acknowledged */
    uint64_t max_bytes_in_flight; /* the largest bytes_in_flight seen after a write */
    uint64_t queued;            /* waiting in alcc's send queue */
    uint64_t bytes_written;     /* handed to the kernel so far */
    uint64_t bytes_acked;       /* acknowledged by the peer so far */
    uint64_t losses;            /* loss events given to the controller */
    uint64_t srtt_us;           /* controller's smoothed RTT, us (0: unknown) */
    uint64_t min_rtt_us;        /* controller's minimum RTT, us (0: unknown) */
    uint64_t kernel_cwnd;       /* kernel congestion window, bytes */
    uint64_t kernel_delivery_rate; /* kernel delivery-rate estimate, bytes/s */
    uint32_t kernel_rtt_us;     /* kernel smoothed RTT, us */
    uint32_t kernel_min_rtt_us; /* kernel minimum RTT, us */
    uint32_t kernel_notsent;    /* bytes in the kernel not yet sent */
    uint32_t kernel_total_retrans; /* segments the kernel retransmitted */
    char controller[64];        /* controller spec, NUL-terminated ("none": plain TCP) */
    char underlay[16];          /* kernel congestion control, NUL-terminated */
    char prior_congestion[16];  /* the one the socket had when alcc took it over; "bbr" under
                                 * another underlay: the kernel still paces it (below) */
};

/* accept(2) on a listening socket; the new connection runs under alcc. */
int alcc_accept(int sockfd, struct sockaddr *addr, socklen_t *addrlen);
/* connect(2) (blocking); the connection then runs under alcc. If connect succeeds but alcc
 * cannot take the socket over (a refused controller or underlay), the socket is closed. */
int alcc_connect(int sockfd, const struct sockaddr *addr, socklen_t addrlen);
/* send(2): queues bytes; blocks while alcc's queue is full unless flags has MSG_DONTWAIT
 * (then -1/EAGAIN). Other flags are ignored. */
ssize_t alcc_send(int sockfd, const void *buf, size_t len, int flags);
/* sendfile(2) through alcc: queues count bytes of the open file in_fd, from *offset (which
 * moves past them) or, when offset is NULL, from its file position (which moves), by
 * reference: kernel mode sends them with sendfile(2), so they are never copied in user space.
 * The file's bytes are read when they are sent, so they must not change until then; a file
 * shorter than the range fails the connection. Returns count (a range is taken whole); blocks
 * while alcc's queue is full unless flags has MSG_DONTWAIT (then -1/EAGAIN). */
ssize_t alcc_sendfile(int sockfd, int in_fd, off_t *offset, size_t count, int flags);
/* recv(2); MSG_DONTWAIT is honoured, other flags are ignored. */
ssize_t alcc_recv(int sockfd, void *buf, size_t len, int flags);
/* close(2): flushes everything queued, sends the FIN, waits until it is all acknowledged
 * (at most ALCC_CLOSE_TIMEOUT seconds if set; without it the wait still ends, because a
 * peer that acknowledges nothing for 60 s after the close, or keeps its window shut, fails
 * the connection with ETIMEDOUT). 0 once all was acknowledged; -1/ECONNRESET etc. if the
 * peer reset the connection or the flush failed, -1/ETIMEDOUT if ALCC_CLOSE_TIMEOUT passed.
 * The connection is gone from alcc's table at return, but the descriptor number stays
 * open until the engine lets go of the socket: at return after success or a failure;
 * after ALCC_CLOSE_TIMEOUT, once the engine has flushed the rest in the background (or the
 * 60 s without progress ended it). Never close(2) the number yourself. */
int alcc_close(int fd);
/* Closes every alcc connection of the process that is still open and waits, at most
 * linger_ms, until each has handed its queued bytes to the kernel (kernel mode: every byte
 * and the FIN are in the kernel, which delivers them after exit as for any socket; framed
 * and UDP mode: all acknowledged). Returns how many had not: their queued bytes are lost if
 * the process ends now. The engine already runs this from an atexit(3) hook, with
 * ALCC_EXIT_LINGER seconds (default 10, 0 = off), on exit(3) and return from main; call it
 * yourself before _exit(2) or where atexit hooks do not run. Never fails. */
int alcc_exit_flush(unsigned int linger_ms);
/* Chooses the controller ("copa:delta=0.5", "fixed:window=20", "none") and, unless
 * underlay is NULL, the kernel congestion control ("cubic", "reno", "bbr", or alcc's BPF
 * underlay "alcc" = "alcc:hold", "alcc:follow"). -1/EINVAL for an unknown or malformed spec
 * or alcc policy; for a kernel name -1/EPERM when this unprivileged process may not choose
 * it (not in net.ipv4.tcp_allowed_congestion_control), -1/ENOENT when the kernel does not
 * have it; for "alcc" -1/EPERM without
 * root (CAP_BPF and CAP_NET_ADMIN), -1/EOPNOTSUPP without kernel BTF or in a build without
 * the BPF program, or the kernel's errno when it refuses the program. */
int alcc_set_cc(int fd, const char *spec, const char *underlay);
/* Chooses the mode, "kernel" or "framed", on a listening socket (for the connections it
 * accepts later) or an unconnected socket (before alcc_connect). -1/EINVAL for an unknown
 * mode, -1/EOPNOTSUPP for "udp" (UDP mode is in the Rust API and the CLI only),
 * -1/EISCONN on a connection. Choose the mode before a receiver-side controller
 * ("sprout"), which alcc_set_cc refuses in kernel mode. */
int alcc_set_mode(int fd, const char *mode);
/* Chooses how the connecting side of a kernel-mode connection sets the window it advertises
 * to any TCP server, on an unconnected socket (before alcc_connect): "drwa" (DRWA, IMC 2012:
 * the window from the receiver's RTT and delivery, "drwa:lambda=3,alpha=0.875,floor=5792,
 * rcvbuf=BYTES"), "static:rcvbuf=BYTES" (a small fixed buffer, as phone vendors ship) or
 * "kernel" (autotuning). alcc_connect then sets the receive buffer before the handshake
 * (-1/EPERM there when an explicit rcvbuf exceeds what this process may lock: 2 x
 * net.core.rmem_max without CAP_NET_ADMIN); alcc_recv applies DRWA's window, alcc_send sends
 * requests to the server. -1/EINVAL for a malformed spec or in framed mode, -1/EISCONN on a
 * connection. */
int alcc_set_receive_window(int fd, const char *spec);

/* Chooses the role, "send" or "receive", on a listening socket (for the connections it
 * accepts later) or an unconnected socket (before alcc_connect). -1/EINVAL for another name
 * or for "receive" on a socket set to kernel mode, -1/EISCONN on a connection; a connection
 * whose role is "receive" in kernel mode (ALCC_MODE) fails in alcc_accept/alcc_connect with
 * -1/EINVAL. */
int alcc_set_role(int fd, const char *role);
/* Coupled flows (docs/coupled-flows.md): chooses which connections share one congestion
 * state and this one's priority weight. group is "auto" (connections to the same peer
 * address in this process; the default, or ALCC_GROUP), "none" (uncoupled), a group name
 * (1-64 letters, digits, '-', '_', '.'), or NULL to keep the current choice; weight is
 * finite and above 0 (default 1, or ALCC_WEIGHT). On a listening or unconnected socket it
 * applies to the connections accepted or connected later; on a sending alcc connection only
 * the weight changes, at once (group must be NULL there: -1/EISCONN). -1/EINVAL for a bad
 * name or weight, -1/EOPNOTSUPP on a receiving connection. */
int alcc_set_group(int fd, const char *group, double weight);
/* Fills *info for an alcc connection. -1/EBADF if fd is not one. */
int alcc_get_info(int fd, struct alcc_info *info);
/* For event loops: a descriptor that polls writable (POLLOUT, EPOLLOUT; level- or
 * edge-triggered) exactly while alcc_send(fd, ..., MSG_DONTWAIT) would not fail with EAGAIN:
 * the send queue has room, or the connection failed or was closed (the send then returns
 * the error at once; this is how a failure wakes a waiter). Watch it for EPOLLOUT only, the
 * socket itself for reading. Edge-triggered: one edge each time the queue goes from full to
 * having room. Owned by the connection: do not read, write or close it; it is valid until
 * alcc_close(fd). -1/EBADF if fd is not an alcc connection, -1/EOPNOTSUPP on the receiving
 * side of framed mode. */
int alcc_writable_fd(int fd);

#ifdef __cplusplus
}
#endif

#endif /* ALCC_H */
