// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Tier B: completion signals from the CUDA runtime (libcudart) and driver
 * (libcuda) calls that frameworks make after each collective: an event
 * recorded on the NCCL stream, then queried or synchronised; or a stream
 * synchronised.  Records are emitted at return, with the result, into the
 * same ring buffer as tier A (the loader shares the maps of nccl_api.bpf.c).
 * Polls that say "not ready" are dropped here: only completions matter.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "ccld.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "common.bpf.h"

#define FN_MASK		0x7fff

/*
 * The runtime calls the driver: a driver hook inside a hooked runtime call
 * of the same function on the same thread is the same operation, skip it.
 */
static __always_inline int save(struct pt_regs *ctx, __u64 event, __u64 stream)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct ccld_entry_key k = { .pid_tgid = bpf_get_current_pid_tgid(),
			       .fn = cookie & FN_MASK };
	struct ccld_entry_val v = { .ts = bpf_ktime_get_ns(), .ptr = event,
			       .comm = stream };

	if (!traced())
		return 0;
	if (cookie & CCLD_COOKIE_DRIVER) {
		if (bpf_map_lookup_elem(&entries, &k))
			return 0;
		k.fn |= CCLD_COOKIE_DRIVER;
	}
	bpf_map_update_elem(&entries, &k, &v, BPF_ANY);
	return 0;
}

/* cudaEventRecord(event, stream), cuEventRecord(event, stream) & variants */
SEC("uprobe")
int BPF_KPROBE(cuda_event_record, void *event, void *stream)
{
	return save(ctx, (__u64)event, (__u64)stream);
}

/* cudaEventQuery / cudaEventSynchronize (event) */
SEC("uprobe")
int BPF_KPROBE(cuda_event_arg, void *event)
{
	return save(ctx, (__u64)event, 0);
}

/* cudaStreamSynchronize / cudaStreamQuery (stream) */
SEC("uprobe")
int BPF_KPROBE(cuda_stream_arg, void *stream)
{
	return save(ctx, 0, (__u64)stream);
}

SEC("uretprobe")
int BPF_KRETPROBE(cuda_return, long ret)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 fn = cookie & FN_MASK;
	struct ccld_entry_key k = { .pid_tgid = bpf_get_current_pid_tgid(), .fn = fn };
	struct ccld_entry_val *v;
	struct ccld_event *e;
	__u64 id = k.pid_tgid;
	int res = (int)ret;

	if (cookie & CCLD_COOKIE_DRIVER)
		k.fn |= CCLD_COOKIE_DRIVER;
	v = bpf_map_lookup_elem(&entries, &k);
	if (!v)
		return 0;
	/* polls that are not complete yet carry no information */
	if (res != 0 && (fn == CCLD_FN_CUDA_EVENT_QUERY ||
			 fn == CCLD_FN_CUDA_STREAM_QUERY)) {
		bpf_map_delete_elem(&entries, &k);
		return 0;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(0, id >> 32);
		bpf_map_delete_elem(&entries, &k);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = CCLD_EV_CUDA;
	e->version = CCLD_ABI_VERSION;
	e->fn = fn;
	e->flags = CCLD_F_RETPROBE;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->ts_ns = bpf_ktime_get_ns();
	e->id.rank = -1;
	e->id.nranks = -1;
	e->u.cuda.event = v->ptr;
	e->u.cuda.stream = v->comm;
	e->u.cuda.ret = res;
	e->u.cuda.entry_ns = v->ts;
	e->u.cuda.driver = !!(cookie & CCLD_COOKIE_DRIVER);
	bpf_map_delete_elem(&entries, &k);
	bpf_ringbuf_submit(e, 0);
	return 0;
}
