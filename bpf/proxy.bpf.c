// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Tier C: NCCL's proxy profiler hooks (docs/architecture.md).
 * Every hook gets (int sub, struct ncclProxyArgs *args, ...); this reads
 * the sub's channel, peer and step counters through the DWARF offsets of
 * the build (cookie = (layout slot << 16) | fn) and the calling thread's
 * pthread_t, by which the loader knows the communicator: NCCL runs one
 * progress thread per proxy state, and comm->proxyState->progressState
 * .thread names it.  The op hooks are attached system wide; the step hooks
 * only to the processes of a communicator that is suspected stuck, and
 * detached when it moves again (the loader does both).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ccld.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "common.bpf.h"

#define MAX_SUBS	64	/* NCCL_PROXY_MAX_SUBS */

/* proxy struct offsets per NCCL build, written by the loader */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CCLD_MAX_LAYOUTS);
	__uint(map_flags, BPF_F_RDONLY_PROG);
	__type(key, __u32);
	__type(value, struct ccld_proxy_layout);
} proxy_layouts SEC(".maps");

static __always_inline __u64 rd_u64(__u64 base, __s32 off)
{
	__u64 v = 0;

	if (off >= 0)
		bpf_probe_read_user(&v, sizeof(v), (void *)(base + off));
	return v;
}

static __always_inline __s32 rd_s32(__u64 base, __s32 off, __s32 dflt)
{
	__s32 v = dflt;

	if (off >= 0)
		bpf_probe_read_user(&v, sizeof(v), (void *)(base + off));
	return v;
}

/* the thread pointer: glibc's pthread_t on x86-64 */
static __always_inline __u64 thread_pointer(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	return BPF_CORE_READ(t, thread.fsbase);
}

/*
 * The main ring more than 3/4 full.  Step records come by the hundred
 * thousand while a comm is sampled, and they are sampling data: where the
 * consumer falls behind (a tracer writing every record as JSON), they must
 * not crowd the calls out of the ring, whose loss leaves a rank looking as
 * if it never entered one (test_attach_midrun calls-pytorch lost 1,150
 * records, calls among them, to 133,599 step records).
 */
static __always_inline bool ring_crowded(void)
{
	__u64 size = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE);

	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > size / 4 * 3;
}

static __always_inline void count_shed(void)
{
	__u32 k = CCLD_DROP_STEPS_SHED;
	__u64 *cnt = bpf_map_lookup_elem(&drops, &k);

	if (cnt)
		(*cnt)++;
}

static __always_inline int emit(struct pt_regs *ctx, __s32 s, __u64 args,
				__s32 step, __s32 state)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 slot = cookie >> 16;
	const struct ccld_proxy_layout *l;
	struct ccld_event *e;
	__u64 sub, pt;

	if (!traced())
		return 0;
	l = bpf_map_lookup_elem(&proxy_layouts, &slot);
	if (!l || !l->valid || s < 0 || s >= MAX_SUBS || l->sub_size <= 0)
		return 0;
	if (step >= 0 && ring_crowded()) {
		count_shed();	/* sampling data: counted, the sample told */
		return 0;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(0, current_tgid());
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	pt = bpf_get_current_pid_tgid();
	e->type = CCLD_EV_PROXY;
	e->version = CCLD_ABI_VERSION;
	e->fn = cookie & 0xffff;
	e->pid = pt >> 32;
	e->tid = (__u32)pt;
	e->ts_ns = bpf_ktime_get_ns();
	e->id.comm = args;
	e->id.rank = -1;
	e->id.nranks = -1;
	e->thread = thread_pointer();
	sub = args + l->args_subs + (__u64)s * (__u32)l->sub_size;
	e->u.proxy.op_count = rd_u64(args, l->args_op_count);
	e->u.proxy.progress = rd_u64(args, l->args_progress);
	e->u.proxy.slice_steps = (__u16)rd_s32(args, l->args_slice_steps, 0);
	e->u.proxy.nbytes = (__s64)rd_u64(sub, l->sub_nbytes);
	e->u.proxy.posted = (__u32)rd_u64(sub, l->sub_posted);
	e->u.proxy.transmitted = (__u32)rd_u64(sub, l->sub_transmitted);
	e->u.proxy.received = (__u32)rd_u64(sub, l->sub_received);
	e->u.proxy.done = (__u32)rd_u64(sub, l->sub_done);
	e->u.proxy.nsteps = rd_s32(sub, l->sub_nsteps, -1);
	e->u.proxy.peer = rd_s32(sub, l->sub_peer, -1);
	e->u.proxy.rank = rd_s32(sub, l->sub_rank, -1);
	e->u.proxy.channel = (__s16)rd_s32(sub, l->sub_channel_id, -1);
	e->u.proxy.step = step;
	e->u.proxy.sub = (__u8)s;
	e->u.proxy.state = (__u8)state;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* StartProxyOpEvent, StopProxyOpEvent: (int sub, args) */
SEC("uprobe")
int BPF_KPROBE(proxy_op, int s, __u64 args)
{
	return emit(ctx, s, args, -1, 0);
}

/* RecordProxyOpEventState: (int sub, args, int state) */
SEC("uprobe")
int BPF_KPROBE(proxy_op_state, int s, __u64 args, int state)
{
	return emit(ctx, s, args, -1, state);
}

/* Start{Send,Recv}ProxyStepEvent, StopProxyStepEvent: (int sub, args, int stepId) */
SEC("uprobe")
int BPF_KPROBE(proxy_step, int s, __u64 args, int step)
{
	return emit(ctx, s, args, step, 0);
}

/* RecordProxyStepEventState: (int sub, args, int stepId, int state) */
SEC("uprobe")
int BPF_KPROBE(proxy_step_state, int s, __u64 args, int step, int state)
{
	return emit(ctx, s, args, step, state);
}
