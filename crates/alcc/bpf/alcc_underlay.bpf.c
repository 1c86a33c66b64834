// SPDX-License-Identifier: MIT
/* alcc's kernel underlay: a TCP congestion control whose window and pacing rate come from
 * user space (issue 10; the paper's section 5.8.1 asks for a kernel module that "keeps the
 * underlying TCP CWND to a high static value"; this is that, without a module).
 *
 * alcc's engine writes one `struct alcc_target` per socket into the socket-local storage
 * map `alcc_targets` (keyed by the socket's fd from user space) whenever the user-space
 * controller's decision changes. This program copies it into the socket:
 *   - ALCC_HOLD: snd_cwnd = target.cwnd, which user space sets at or above the controller's
 *     window plus headroom; the kernel never reduces it on loss, alcc's own gate and pacer
 *     decide what is sent.
 *   - ALCC_FOLLOW: snd_cwnd = target.cwnd = the controller's window, and the kernel's
 *     pacing rate is the controller's rate: the kernel enforces the user-space decision.
 *
 * Where the kernel still touches snd_cwnd when `cong_control` is set (Linux 6.x,
 * net/ipv4/tcp_input.c and tcp_output.c): an RTO (tcp_enter_loss sets it to what is in
 * flight plus one) and an MTU probe's success. Both are undone on the next ACK, because
 * `cong_control` runs at the end of every ACK's processing and writes the target again
 * (after an RTO the first retransmission's ACK shows that the path works again, so the
 * window is not reopened into a dead path). Restart after idle (tcp_slow_start_after_idle,
 * RFC 2861's cwnd validation) is skipped by the kernel itself for a congestion control
 * with `cong_control` (tcp_slow_start_after_idle_check, tcp_cwnd_validate), so the sysctl
 * is left alone. When transmission starts after idle (CA_EVENT_TX_START) the target is
 * applied too, so a window written while no ACK was due is in force for the next flight.
 *
 * Helper use, each checked by the verifier:
 *   - bpf_sk_storage_get(&alcc_targets, sk, NULL, 0): looks the socket's target up and never
 *     creates one (flags 0, no initial value); NULL when user space has not written one, and
 *     then the socket is left as the kernel set it up (its initial window).
 */
#include "kernel_types.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Policies, as user space writes them (src/underlay/policy.rs). */
#define ALCC_HOLD 1
#define ALCC_FOLLOW 2

/* BPF_F_NO_PREALLOC (include/uapi/linux/bpf.h): socket storage must be allocated on use. */
#define ALCC_NO_PREALLOC 1

/* The smallest window written: the kernel assumes at least two segments (RFC 5681's loss
 * window is one; tcp_enter_loss uses in-flight + 1), and zero would stall the socket. */
#define ALCC_MIN_CWND 2

/* One socket's target, written from user space. The layout is shared with
 * src/underlay/target.rs (`#[repr(C)] Target`); change both together. */
struct alcc_target {
	__u32 policy;      /* ALCC_HOLD or ALCC_FOLLOW */
	__u32 cwnd;        /* segments */
	__u64 pacing_rate; /* bytes/s; 0: leave the kernel's pacing as it is */
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, ALCC_NO_PREALLOC);
	__type(key, int);
	__type(value, struct alcc_target);
} alcc_targets SEC(".maps");

/* Copies the socket's target into snd_cwnd (and the pacing rate for `follow`). */
static void alcc_apply(struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct alcc_target *t;
	__u32 cwnd;

	t = bpf_sk_storage_get(&alcc_targets, sk, 0, 0);
	if (!t)
		return;
	cwnd = t->cwnd;
	if (cwnd < ALCC_MIN_CWND)
		cwnd = ALCC_MIN_CWND;
	if (cwnd > tp->snd_cwnd_clamp)
		cwnd = tp->snd_cwnd_clamp;
	tp->snd_cwnd = cwnd;
	/* Nothing in the kernel should treat the socket as in slow start or about to leave
	 * it: ssthresh is the window itself. */
	tp->snd_ssthresh = cwnd;

	if (t->policy == ALCC_FOLLOW && t->pacing_rate) {
		unsigned long rate = t->pacing_rate;

		/* SO_MAX_PACING_RATE still caps the rate, as it does for the kernel's own. */
		if (rate > sk->sk_max_pacing_rate)
			rate = sk->sk_max_pacing_rate;
		sk->sk_pacing_rate = rate;
		/* TCP's internal pacing (no fq qdisc here) runs only when this is set. */
		if (sk->sk_pacing_status == SK_PACING_NONE)
			sk->sk_pacing_status = SK_PACING_NEEDED;
	} else {
		/* tcp_update_pacing_rate is not called for a congestion control with
		 * cong_control: the rate stays where SO_MAX_PACING_RATE (alcc's pacer,
		 * src/flow.rs pace_kernel) put it, also when that cap is raised later. */
		sk->sk_pacing_rate = sk->sk_max_pacing_rate;
	}
}

SEC("struct_ops")
void BPF_PROG(alcc_init, struct sock *sk)
{
	/* alcc writes the target before choosing this congestion control, so the first
	 * flight already has the window user space asked for. */
	alcc_apply(sk);
}

SEC("struct_ops")
void BPF_PROG(alcc_cong_control, struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs)
{
	alcc_apply(sk);
}

SEC("struct_ops")
void BPF_PROG(alcc_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	if (ev == CA_EVENT_TX_START)
		alcc_apply(sk);
}

/* On loss the kernel asks for the new ssthresh: no reduction. */
SEC("struct_ops")
__u32 BPF_PROG(alcc_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;

	return tp->snd_cwnd < ALCC_MIN_CWND ? ALCC_MIN_CWND : tp->snd_cwnd;
}

/* Undoing a (spurious) reduction: there was none, keep the window. */
SEC("struct_ops")
__u32 BPF_PROG(alcc_undo_cwnd, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;

	return tp->snd_cwnd < ALCC_MIN_CWND ? ALCC_MIN_CWND : tp->snd_cwnd;
}

/* The name is a placeholder: the loader writes "alcc_<pid>" here before loading, so that
 * every process registers its own congestion control and the kernel unregisters it when
 * that process's link closes (also on kill -9). */
SEC(".struct_ops.link")
struct tcp_congestion_ops alcc = {
	.name = "alcc",
	.init = (void *)alcc_init,
	.cong_control = (void *)alcc_cong_control,
	.cwnd_event = (void *)alcc_cwnd_event,
	.ssthresh = (void *)alcc_ssthresh,
	.undo_cwnd = (void *)alcc_undo_cwnd,
};
