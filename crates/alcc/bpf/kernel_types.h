/* The few kernel types the underlay's BPF program touches, written by hand for CO-RE.
 *
 * Every struct carries preserve_access_index: clang records each field access as a BTF
 * relocation, and libbpf rewrites the offsets at load time from the running kernel's BTF
 * (/sys/kernel/btf/vmlinux). So only the names and types below must match the kernel, not
 * the layout, and the crate builds without a vmlinux.h or BTF on the build machine. Types
 * and sizes are those of Linux 6.x (checked against 6.18's BTF with
 * `bpftool btf dump file /sys/kernel/btf/vmlinux format c`).
 */
#ifndef ALCC_KERNEL_TYPES_H
#define ALCC_KERNEL_TYPES_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed int __s32;
typedef signed long long __s64;
typedef __u8 u8;
typedef __u32 u32;
typedef __u64 u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef long unsigned int size_t;

/* include/uapi/linux/bpf.h: the map types and flags the program uses. */
enum bpf_map_type {
	BPF_MAP_TYPE_SK_STORAGE = 24,
};

/* struct sock: the pacing fields. `sk_pacing_status` is written (allowed for struct_ops
 * congestion controls since Linux 6.0); `sk_max_pacing_rate` is SO_MAX_PACING_RATE. */
struct sock {
	u32 sk_pacing_status;
	unsigned long sk_pacing_rate;
	unsigned long sk_max_pacing_rate;
} __attribute__((preserve_access_index));

/* struct tcp_sock: the window, its clamp, the MSS and what is in flight. The kernel
 * promotes a struct_ops program's `struct sock *` argument to a tcp_sock, so a cast is
 * enough to reach these. Writes are allowed to snd_cwnd and snd_ssthresh only
 * (net/ipv4/bpf_tcp_ca.c, bpf_tcp_ca_btf_struct_access). */
struct tcp_sock {
	u32 snd_cwnd;
	u32 snd_ssthresh;
	u32 snd_cwnd_clamp;
	u32 mss_cache;
	u32 packets_out;
} __attribute__((preserve_access_index));

struct rate_sample;
struct ack_sample;
union tcp_cc_info;

/* The events `cwnd_event` receives (include/net/tcp.h). */
enum tcp_ca_event {
	CA_EVENT_TX_START = 0,
	CA_EVENT_CWND_RESTART = 1,
	CA_EVENT_COMPLETE_CWR = 2,
	CA_EVENT_LOSS = 3,
	CA_EVENT_ECN_NO_CE = 4,
	CA_EVENT_ECN_IS_CE = 5,
};

/* `sk_pacing_status` values (include/net/sock.h). */
enum sk_pacing {
	SK_PACING_NONE = 0,
	SK_PACING_NEEDED = 1,
	SK_PACING_FQ = 2,
};

/* The operations of a congestion control. libbpf matches the members by name against the
 * kernel's struct, not by position, so `name` comes first here on purpose: the loader
 * (src/underlay/loader.rs) writes the per-process name at offset 0 of the map's value
 * before loading, and checks that the placeholder is there. */
struct tcp_congestion_ops {
	char name[16];
	u32 (*ssthresh)(struct sock *sk);
	void (*cwnd_event)(struct sock *sk, enum tcp_ca_event ev);
	void (*cong_control)(struct sock *sk, u32 ack, int flag, const struct rate_sample *rs);
	u32 (*undo_cwnd)(struct sock *sk);
	void (*init)(struct sock *sk);
	void (*release)(struct sock *sk);
} __attribute__((preserve_access_index));

#endif
