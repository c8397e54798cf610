// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Tier D, TCP (NCCL's socket transport): retransmits, resets and state
 * changes on the sockets of traced processes.  These fire in softirq or
 * timer context, where the current task is anyone: the socket is matched
 * against tcp_watch, the table of traced processes' sockets the loader
 * keeps from /proc (user/kernel/tcpwatch.c), and the record carries its owner.
 *
 * Each program exists twice: tp_btf (typed, BTF) and raw_tp (the same
 * tracepoint without BTF typing); the loader attaches the first that works.
 * Socket fields are read with CO-RE probe reads, valid in both.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "ccld.h"
#include "common.bpf.h"

#define AF_INET		2
#define AF_INET6	10
#define IPPROTO_TCP	6

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ccld_tcp_key);
	__type(value, __u32);
} tcp_watch SEC(".maps");

static __always_inline int sock_key(const struct sock *sk, struct ccld_tcp_key *k, __u16 *family)
{
	__builtin_memset(k, 0, sizeof(*k));
	*family = BPF_CORE_READ(sk, __sk_common.skc_family);
	k->netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
	k->lport = BPF_CORE_READ(sk, __sk_common.skc_num);
	k->rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (*family == AF_INET) {
		__u32 l = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		__u32 r = BPF_CORE_READ(sk, __sk_common.skc_daddr);

		__builtin_memcpy(k->laddr, &l, 4);
		__builtin_memcpy(k->raddr, &r, 4);
	} else if (*family == AF_INET6) {
		struct in6_addr l = BPF_CORE_READ(sk, __sk_common.skc_v6_rcv_saddr);
		struct in6_addr r = BPF_CORE_READ(sk, __sk_common.skc_v6_daddr);

		__builtin_memcpy(k->laddr, &l, 16);
		__builtin_memcpy(k->raddr, &r, 16);
	} else {
		return -1;
	}
	return 0;
}

static __always_inline int report(const struct sock *sk, __u8 kind, int oldstate, int newstate)
{
	struct ccld_tcp_key k;
	struct ccld_event *ev;
	__u32 *owner;
	__u16 family;

	if (!sk || sock_key(sk, &k, &family))
		return 0;
	owner = bpf_map_lookup_elem(&tcp_watch, &k);
	if (!owner)
		return 0;
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		count_drop(0, *owner);
		return 0;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->type = CCLD_EV_TCP;
	ev->version = CCLD_ABI_VERSION;
	ev->pid = *owner;
	ev->ts_ns = bpf_ktime_get_ns();
	ev->u.tcp.kind = kind;
	ev->u.tcp.family = (__u8)family;
	ev->u.tcp.old_state = (__u8)oldstate;
	ev->u.tcp.new_state = (__u8)newstate;
	ev->u.tcp.lport = k.lport;
	ev->u.tcp.rport = k.rport;
	__builtin_memcpy(ev->u.tcp.laddr, k.laddr, sizeof(k.laddr));
	__builtin_memcpy(ev->u.tcp.raddr, k.raddr, sizeof(k.raddr));
	ev->u.tcp.netns = k.netns;
	ev->u.tcp.total_retrans = BPF_CORE_READ((struct tcp_sock *)sk, total_retrans);
	ev->u.tcp.srtt_us = BPF_CORE_READ((struct tcp_sock *)sk, srtt_us) >> 3;
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

static __always_inline int state_change(const struct sock *sk, int oldstate, int newstate)
{
	if (!sk || BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP)
		return 0;
	return report(sk, CCLD_TCP_STATE, oldstate, newstate);
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tcp_retransmit_btf, const struct sock *sk)
{
	return report(sk, CCLD_TCP_RETRANSMIT, 0, 0);
}

SEC("raw_tp/tcp_retransmit_skb")
int BPF_PROG(tcp_retransmit_raw, const struct sock *sk)
{
	return report(sk, CCLD_TCP_RETRANSMIT, 0, 0);
}

SEC("tp_btf/tcp_receive_reset")
int BPF_PROG(tcp_receive_reset_btf, const struct sock *sk)
{
	return report(sk, CCLD_TCP_RESET_RX, 0, 0);
}

SEC("raw_tp/tcp_receive_reset")
int BPF_PROG(tcp_receive_reset_raw, const struct sock *sk)
{
	return report(sk, CCLD_TCP_RESET_RX, 0, 0);
}

SEC("tp_btf/tcp_send_reset")
int BPF_PROG(tcp_send_reset_btf, const struct sock *sk)
{
	return report(sk, CCLD_TCP_RESET_TX, 0, 0);
}

SEC("raw_tp/tcp_send_reset")
int BPF_PROG(tcp_send_reset_raw, const struct sock *sk)
{
	return report(sk, CCLD_TCP_RESET_TX, 0, 0);
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(inet_sock_set_state_btf, const struct sock *sk, int oldstate, int newstate)
{
	return state_change(sk, oldstate, newstate);
}

SEC("raw_tp/inet_sock_set_state")
int BPF_PROG(inet_sock_set_state_raw, const struct sock *sk, int oldstate, int newstate)
{
	return state_change(sk, oldstate, newstate);
}
