// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Tier A: uprobes on NCCL's public API.  One program per argument shape;
 * the uprobe cookie says which function fired ((layout slot << 16) | fn),
 * so one program serves every function of that shape and every NCCL build.
 * Argument placement: x86-64 SysV (docs/architecture.md, "Tier A").
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "ccld.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * libbpf 1.1's BPF_KPROBE stops at five arguments and stack arguments are
 * ABI specific: this file encodes the x86-64 SysV placement.
 */
#if defined(__TARGET_ARCH_x86)
#define CCLD_PARM6(ctx)	((ctx)->r9)
#else
#error "ccld's NCCL argument decoding is written for x86-64"
#endif

#include "common.bpf.h"

/*
 * --stop-new: stop a new process that loads NCCL until its probes are
 * attached, only while the loader's heartbeat is younger than
 * heartbeat_max_ns and only if its library file is not probed already.
 */
const volatile bool stop_new_nccl = false;
const volatile __u64 heartbeat_max_ns = 500000000;

/* ccld.h, "--stop-new": the loader's last sign of life */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} heartbeat SEC(".maps");

/* ccld.h: process stopped -> stop time (ns), until someone continues it */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CCLD_MAX_STOPPED);
	__type(key, __u32);
	__type(value, __u64);
} stopped_pids SEC(".maps");

/* ccld.h: NCCL library files with uprobes on them (pid -1) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CCLD_MAX_PROBED_FILES);
	__type(key, struct ccld_file_key);
	__type(value, __u8);
} probed_files SEC(".maps");

/* comm lifecycle and errors: rare, must never be lost, kept apart */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} rare_events SEC(".maps");

/* struct offsets per NCCL build, written by the loader, read-only here */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CCLD_MAX_LAYOUTS);
	__uint(map_flags, BPF_F_RDONLY_PROG);
	__type(key, __u32);
	__type(value, struct ccld_layout);
} layouts SEC(".maps");

/* ncclGroupStart nesting per thread */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u32);
} group_depth SEC(".maps");

/* processes the loader has looked at (ld.so hook: nothing more to do) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} seen_pids SEC(".maps");

static __always_inline struct ccld_event *reserve(bool rare)
{
	struct ccld_event *e;

	if (rare)
		e = bpf_ringbuf_reserve(&rare_events, sizeof(*e), 0);
	else
		e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(rare ? 1 : 0, current_tgid());
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	return e;
}

static __always_inline void fill_header(struct ccld_event *e, __u16 type,
					__u32 fn, __u32 flags)
{
	__u64 id = bpf_get_current_pid_tgid();

	e->type = type;
	e->version = CCLD_ABI_VERSION;
	e->fn = fn;
	e->flags = flags;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->ts_ns = bpf_ktime_get_ns();
	e->id.rank = -1;
	e->id.nranks = -1;
}

static __always_inline const struct ccld_layout *cookie_layout(__u64 cookie)
{
	__u32 slot = cookie >> 16;
	const struct ccld_layout *l = bpf_map_lookup_elem(&layouts, &slot);

	return (l && l->valid) ? l : NULL;
}

static __always_inline int read_i32(__u64 base, __s32 off, __s32 *out)
{
	if (off < 0)
		return -1;
	return bpf_probe_read_user(out, sizeof(*out), (void *)(base + off));
}

static __always_inline int read_u64(__u64 base, __s32 off, __u64 *out)
{
	if (off < 0)
		return -1;
	return bpf_probe_read_user(out, sizeof(*out), (void *)(base + off));
}

/*
 * Reads the communicator's identity from its memory.  The magic words at
 * both ends validate the pointer and the layout before anything is trusted.
 */
static __always_inline void read_ident(struct ccld_event *e, __u64 comm,
				       const struct ccld_layout *l)
{
	__u64 m1 = 0, m2 = 0, v, sum = 0;
	__u32 n, i;

	e->id.comm = comm;
	if (!comm || !l)
		return;
	if (l->start_magic >= 0 && l->end_magic >= 0) {
		if (read_u64(comm, l->start_magic, &m1) ||
		    read_u64(comm, l->end_magic, &m2) ||
		    m1 != l->magic || m2 != l->magic) {
			e->flags |= CCLD_F_BAD_COMM;
			return;
		}
	} else {
		e->flags |= CCLD_F_NO_MAGIC;
	}
	if (read_u64(comm, l->comm_hash, &e->id.hash))
		e->id.hash = 0;
	if (read_i32(comm, l->rank, &e->id.rank))
		e->id.rank = -1;
	if (read_i32(comm, l->nranks, &e->id.nranks))
		e->id.nranks = -1;
	e->flags |= CCLD_F_IDENT;
	if (l->seq_number < 0)
		return;
	n = l->seq_number_n;
	for (i = 0; i < CCLD_MAX_SEQ_TYPES; i++) {
		if (i >= n)
			break;
		if (bpf_probe_read_user(&v, sizeof(v),
					(void *)(comm + l->seq_number + i * 8)))
			return;
		sum += v;
	}
	e->id.nccl_seq = sum;
	e->flags |= CCLD_F_SEQ;
}

static __always_inline void save_entry(__u32 fn, __u64 ptr, __u64 comm)
{
	struct ccld_entry_key k = { .pid_tgid = bpf_get_current_pid_tgid(), .fn = fn };
	struct ccld_entry_val v = { .ts = bpf_ktime_get_ns(), .ptr = ptr, .comm = comm };

	bpf_map_update_elem(&entries, &k, &v, BPF_ANY);
}

static __always_inline __u32 current_group_depth(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 *d = bpf_map_lookup_elem(&group_depth, &id);

	return d ? *d : 0;
}

static __always_inline int emit_call(struct pt_regs *ctx, __u64 comm,
				     __u64 send, __u64 recv, __u64 count,
				     __s32 dtype, __s32 redop, __s32 root_or_peer,
				     __u64 stream)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 fn = cookie & 0xffff;
	struct ccld_event *e;

	if (!traced())
		return 0;
	save_entry(fn, 0, comm);
	e = reserve(false);
	if (!e)
		return 0;
	fill_header(e, CCLD_EV_CALL, fn, 0);
	read_ident(e, comm, cookie_layout(cookie));
	e->u.call.count = count;
	e->u.call.sendbuff = send;
	e->u.call.recvbuff = recv;
	e->u.call.stream = stream;
	e->u.call.root_or_peer = root_or_peer;
	e->u.call.dtype = dtype;
	e->u.call.redop = redop;
	e->u.call.group_depth = current_group_depth();
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* stack argument N (0-based) at entry: [rsp] is the return address */
static __always_inline __u64 stack_arg(struct pt_regs *ctx, int n)
{
	__u64 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (void *)(PT_REGS_SP(ctx) + 8 + 8 * n));
	return v;
}

/* AllReduce, ReduceScatter: send recv count dtype op comm | stream */
SEC("uprobe")
int BPF_KPROBE(coll_redop, void *send, void *recv, __u64 count, int dtype,
	       int op)
{
	return emit_call(ctx, CCLD_PARM6(ctx), (__u64)send, (__u64)recv, count,
			 dtype, op, -1, stack_arg(ctx, 0));
}

/* AllGather, AlltoAll: send recv count dtype comm stream */
SEC("uprobe")
int BPF_KPROBE(coll_plain, void *send, void *recv, __u64 count, int dtype,
	       void *comm)
{
	return emit_call(ctx, (__u64)comm, (__u64)send, (__u64)recv, count,
			 dtype, 0xff, -1, CCLD_PARM6(ctx));
}

/* Broadcast, Gather, Scatter: send recv count dtype root comm | stream */
SEC("uprobe")
int BPF_KPROBE(coll_root, void *send, void *recv, __u64 count, int dtype,
	       int root)
{
	return emit_call(ctx, CCLD_PARM6(ctx), (__u64)send, (__u64)recv, count,
			 dtype, 0xff, root, stack_arg(ctx, 0));
}

/* Reduce: send recv count dtype op root | comm stream */
SEC("uprobe")
int BPF_KPROBE(coll_reduce, void *send, void *recv, __u64 count, int dtype,
	       int op)
{
	return emit_call(ctx, stack_arg(ctx, 0), (__u64)send, (__u64)recv,
			 count, dtype, op, (__s32)CCLD_PARM6(ctx), stack_arg(ctx, 1));
}

/* Send, Recv: buff count dtype peer comm stream */
SEC("uprobe")
int BPF_KPROBE(p2p, void *buff, __u64 count, int dtype, int peer, void *comm)
{
	return emit_call(ctx, (__u64)comm, (__u64)buff, (__u64)buff, count,
			 dtype, 0xff, peer, CCLD_PARM6(ctx));
}

static __always_inline int emit_group(struct pt_regs *ctx, bool start)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 id = bpf_get_current_pid_tgid();
	__u32 fn = cookie & 0xffff, depth = 0, *d;
	struct ccld_event *e;

	if (!traced())
		return 0;
	d = bpf_map_lookup_elem(&group_depth, &id);
	if (d)
		depth = *d;
	if (start) {
		__u32 nd = depth + 1;

		bpf_map_update_elem(&group_depth, &id, &nd, BPF_ANY);
	} else if (depth > 1) {
		__u32 nd = depth - 1;

		bpf_map_update_elem(&group_depth, &id, &nd, BPF_ANY);
	} else {
		bpf_map_delete_elem(&group_depth, &id);
	}
	save_entry(fn, 0, 0);
	e = reserve(false);
	if (!e)
		return 0;
	fill_header(e, CCLD_EV_GROUP, fn, 0);
	e->u.group.depth = depth;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(group_start)
{
	return emit_group(ctx, true);
}

SEC("uprobe")
int BPF_KPROBE(group_end)
{
	return emit_group(ctx, false);
}

/*
 * NCCL's getHash (2.26+, src/include/bitops.h: eatHash then digestHash)
 * over the 128-byte ncclUniqueId: the commHash NCCL gives the comm it
 * creates from that id, so a rank seen entering its init and one found
 * inside it in memory (CCLD_CS_INIT_READ) name the same group
 */
static __always_inline __u64 hash_unique_id(const void *uptr)
{
	__u64 id[16], a0 = 1 ^ sizeof(id), a1 = 1, h;
	int i;

	if (bpf_probe_read_user(id, sizeof(id), uptr))
		return 0;
	for (i = 0; i < 16; i++) {
		a0 += a1;
		a1 ^= a0;
		a0 ^= a0 >> 31;
		a0 *= 0x9de62bbc8cef3ce3ULL;
		a1 ^= a1 >> 32;
		a1 *= 0x485cd6311b599e79ULL;
		a0 += id[i];
	}
	h = a0 ^ (a0 >> 31);
	h *= 0xbac3bd562846de6bULL;
	h += a1;
	h ^= h >> 32;
	h *= 0x995a187a14e7b445ULL;
	return h;
}

/*
 * The name a creation call's ncclConfig_t gives its comm, as a record of its
 * own just before the call's CCLD_EV_COMM one (which then carries it on, to
 * the analyzer's setup records too).  Only a config NCCL itself would
 * accept (its magic, a 2.27+ version, a size that holds commName).
 */
static __always_inline void emit_comm_name(__u32 fn, __u64 config)
{
	struct {
		__u64 size;
		__u32 magic;
		__u32 version;
	} head;
	struct ccld_event *e;
	__u64 name = 0;

	if (!config || bpf_probe_read_user(&head, sizeof(head), (void *)config) ||
	    head.magic != CCLD_CONFIG_MAGIC || head.version < CCLD_CONFIG_NAME_VERSION ||
	    head.size < CCLD_CONFIG_NAME_OFF + sizeof(name) ||
	    bpf_probe_read_user(&name, sizeof(name), (void *)(config + CCLD_CONFIG_NAME_OFF)) ||
	    !name)
		return;
	e = reserve(true);
	if (!e)
		return;
	fill_header(e, CCLD_EV_COMM_NAME, fn, 0);
	if (bpf_probe_read_user_str(e->u.comm_name.name, sizeof(e->u.comm_name.name),
				    (void *)name) <= 1) {
		bpf_ringbuf_discard(e, 0);
		return;
	}
	bpf_ringbuf_submit(e, 0);
}

static __always_inline int emit_comm(struct pt_regs *ctx, __u64 comm,
				     __u64 newcomm_pp, __s32 nranks, __s32 rank,
				     __u64 id_hash, __s32 color, __s32 key,
				     __u64 config)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 fn = cookie & 0xffff;
	const struct ccld_layout *l = cookie_layout(cookie);
	struct ccld_event *e;

	if (!traced())
		return 0;
	save_entry(fn, newcomm_pp, comm);
	emit_comm_name(fn, config);
	e = reserve(true);
	if (!e)
		return 0;
	fill_header(e, CCLD_EV_COMM, fn, 0);
	e->u.comm.id_hash = id_hash;
	e->u.comm.newcomm_pp = newcomm_pp;
	e->u.comm.nranks = nranks;
	e->u.comm.rank = rank;
	e->u.comm.color = color;
	e->u.comm.key = key;
	/* Split/Shrink/teardown: identify the existing comm */
	if (comm) {
		read_ident(e, comm, l);
		e->u.comm.parent = comm;
		e->u.comm.parent_hash = e->id.hash;
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/*
 * CommInitRank, CommInitRankConfig: comm** nranks rank [config] | id[128].
 * The by-value ncclUniqueId goes on the stack and takes no register.
 */
SEC("uprobe")
int BPF_KPROBE(init_rank, void *newcomm_pp, int nranks, int rank, void *config)
{
	__u64 idp = PT_REGS_SP(ctx) + 8;
	__u32 fn = bpf_get_attach_cookie(ctx) & 0xffff;

	return emit_comm(ctx, 0, (__u64)newcomm_pp, nranks, rank,
			 hash_unique_id((void *)idp), -1, -1,
			 fn == CCLD_FN_INIT_RANK_CONFIG ? (__u64)config : 0);
}

/* CommInitRankScalable: newcomm** nranks myrank nId ids* config */
SEC("uprobe")
int BPF_KPROBE(init_scalable, void *newcomm_pp, int nranks, int rank, int nid,
	       void *ids)
{
	return emit_comm(ctx, 0, (__u64)newcomm_pp, nranks, rank,
			 hash_unique_id(ids), -1, -1, (__u64)CCLD_PARM6(ctx));
}

/* CommInitAll: comm** ndev devlist */
SEC("uprobe")
int BPF_KPROBE(init_all, void *comms, int ndev)
{
	return emit_comm(ctx, 0, (__u64)comms, ndev, -1, 0, -1, -1, 0);
}

/* CommSplit: comm color key newcomm** config */
SEC("uprobe")
int BPF_KPROBE(split, void *comm, int color, int key, void *newcomm_pp, void *config)
{
	return emit_comm(ctx, (__u64)comm, (__u64)newcomm_pp, -1, -1, 0, color,
			 key, (__u64)config);
}

/* CommShrink: comm exclList exclCount newcomm** config flags */
SEC("uprobe")
int BPF_KPROBE(shrink, void *comm, void *excl, int nexcl, void *newcomm_pp, void *config)
{
	return emit_comm(ctx, (__u64)comm, (__u64)newcomm_pp, -1, -1, 0, -1,
			 nexcl, (__u64)config);
}

/* CommFinalize, CommDestroy, CommAbort: comm */
SEC("uprobe")
int BPF_KPROBE(teardown, void *comm)
{
	return emit_comm(ctx, (__u64)comm, 0, -1, -1, 0, -1, -1, 0);
}

/* CommGetAsyncError: comm result* (read at return) */
SEC("uprobe")
int BPF_KPROBE(async_error, void *comm, void *result)
{
	if (!traced())
		return 0;
	save_entry(CCLD_FN_GET_ASYNC_ERROR, (__u64)result, (__u64)comm);
	return 0;
}

/* Every hooked function's return. */
SEC("uretprobe")
int BPF_KRETPROBE(api_return, long ret)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 fn = cookie & 0xffff;
	const struct ccld_layout *l = cookie_layout(cookie);
	struct ccld_entry_key k = { .pid_tgid = bpf_get_current_pid_tgid(), .fn = fn };
	struct ccld_entry_val *v = bpf_map_lookup_elem(&entries, &k);
	struct ccld_entry_val saved = {};
	struct ccld_event *e;
	__s32 res = 0;
	__u64 newcomm = 0;

	if (!traced())
		return 0;
	if (v) {
		saved = *v;
		bpf_map_delete_elem(&entries, &k);
	}
	if (fn == CCLD_FN_GET_ASYNC_ERROR) {
		/* only errors are worth a record: this call is polled */
		if (!saved.ptr ||
		    bpf_probe_read_user(&res, sizeof(res), (void *)saved.ptr) ||
		    (res == 0 && (int)ret == 0))
			return 0;
		e = reserve(true);
		if (!e)
			return 0;
		fill_header(e, CCLD_EV_ASYNC_ERR, fn, CCLD_F_RETPROBE);
		read_ident(e, saved.comm, l);
		e->u.async_err.result = res ? res : (int)ret;
		bpf_ringbuf_submit(e, 0);
		return 0;
	}
	if (ccld_fn_is_init(fn) || ccld_fn_is_teardown(fn)) {
		e = reserve(true);
		if (!e)
			return 0;
		fill_header(e, CCLD_EV_COMM_RET, fn, CCLD_F_RETPROBE);
		e->u.ret.ret = (int)ret;
		e->u.ret.entry_ns = saved.ts;
		if (ccld_fn_is_init(fn) && fn != CCLD_FN_INIT_ALL && saved.ptr &&
		    !bpf_probe_read_user(&newcomm, sizeof(newcomm),
					 (void *)saved.ptr)) {
			__s32 dev = -1;
			__u64 bus = 0;

			e->u.ret.newcomm = newcomm;
			read_ident(e, newcomm, l);
			if (newcomm && l && !(e->flags & CCLD_F_BAD_COMM)) {
				read_i32(newcomm, l->cuda_dev, &dev);
				read_u64(newcomm, l->bus_id, &bus);
			}
			e->u.ret.cuda_dev = dev;
			e->u.ret.bus_id = bus;
		} else {
			e->id.comm = saved.comm;
			e->u.ret.newcomm = saved.ptr;
		}
		bpf_ringbuf_submit(e, 0);
		return 0;
	}
	e = reserve(false);
	if (!e)
		return 0;
	fill_header(e, CCLD_EV_RET, fn, CCLD_F_RETPROBE);
	e->id.comm = saved.comm;
	e->u.ret.ret = (int)ret;
	e->u.ret.entry_ns = saved.ts;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* glibc <link.h>: struct r_debug and struct link_map (x86-64 ABI) */
#define R_DEBUG_MAP	8
#define R_DEBUG_STATE	24
#define RT_CONSISTENT	0
#define LINK_MAP_NAME	8
#define LINK_MAP_LD	16
#define LINK_MAP_NEXT	24
#define MAX_LINK_MAPS	64
#define NAME_LEN	128
#define SIGCONT_NR	18
#define SIGSTOP_NR	19

struct link_walk {
	__u64 lm;	/* current struct link_map * */
	__u64 l_ld;	/* found: its link_map's l_ld (its dynamic section) */
	bool found;
	char buf[NAME_LEN];
};

/*
 * "nccl" anywhere in the first LEN bytes of S: the last four bytes read
 * kept in one word, one compare per byte (with a compare per letter the
 * verifier walked far more branches: this program's load took 0.39 s
 * under strace, 0.15 s so)
 */
static __always_inline bool name_has_nccl(const char *s, int len)
{
	const __u32 nccl = 'n' << 24 | 'c' << 16 | 'c' << 8 | 'l';
	__u32 last4 = 0;
	int i;

	for (i = 0; i < NAME_LEN; i++) {
		if (i >= len)
			return false;
		last4 = last4 << 8 | (__u8)s[i];
		if (i >= 3 && last4 == nccl)
			return true;
	}
	return false;
}

/* bpf_loop callback: one link_map entry; returns 1 to stop */
static long check_link_map(__u32 i, struct link_walk *w)
{
	__u64 name;
	int len;

	if (!w->lm ||
	    bpf_probe_read_user(&name, sizeof(name), (void *)(w->lm + LINK_MAP_NAME)))
		return 1;
	len = bpf_probe_read_user_str(w->buf, sizeof(w->buf), (void *)name);
	if (len > 0 && name_has_nccl(w->buf, len)) {
		w->found = true;
		if (bpf_probe_read_user(&w->l_ld, sizeof(w->l_ld),
					(void *)(w->lm + LINK_MAP_LD)))
			w->l_ld = 0;
		return 1;
	}
	if (bpf_probe_read_user(&w->lm, sizeof(w->lm), (void *)(w->lm + LINK_MAP_NEXT)))
		return 1;
	return 0;
}

struct vma_file {
	struct ccld_file_key key;
	bool found;
};

/* bpf_find_vma callback: the file mapped at the address, as (dev, ino) */
static long vma_file_key(struct task_struct *task, struct vm_area_struct *vma,
			 struct vma_file *f)
{
	struct file *file = BPF_CORE_READ(vma, vm_file);

	if (!file)
		return 0;
	f->key.ino = BPF_CORE_READ(file, f_inode, i_ino);
	f->key.dev = BPF_CORE_READ(file, f_inode, i_sb, s_dev);
	f->found = true;
	return 0;
}

/* the file mapped at ADDR of this process has probes already */
static __always_inline bool file_probed(__u64 addr)
{
	struct vma_file f = {};

	if (!addr || bpf_find_vma(bpf_get_current_task_btf(), addr, vma_file_key, &f, 0) ||
	    !f.found)
		return false;
	return bpf_map_lookup_elem(&probed_files, &f.key) != NULL;
}

/* the loader's heartbeat is fresh: it runs and will continue a stop */
static __always_inline bool loader_alive(void)
{
	__u32 zero = 0;
	__u64 *beat = bpf_map_lookup_elem(&heartbeat, &zero);

	return beat && *beat &&
	       (__s64)(bpf_ktime_get_ns() - *beat) < (__s64)heartbeat_max_ns;
}

/*
 * Stops the current process and records it in stopped_pids, in that
 * order: whoever finds the entry finds the SIGSTOP sent already, so its
 * SIGCONT cannot come first and be lost.  No entry, no stop (a SIGCONT
 * discards the pending SIGSTOP).
 */
static __always_inline bool stop_current(__u32 tgid)
{
	__u64 now = bpf_ktime_get_ns();

	if (bpf_send_signal(SIGSTOP_NR))
		return false;
	if (bpf_map_update_elem(&stopped_pids, &tgid, &now, BPF_ANY)) {
		bpf_send_signal(SIGCONT_NR);
		return false;
	}
	return true;
}

/*
 * ld.so calls _dl_debug_state() after each change to the list of loaded
 * objects (the debugger hook).  When a process not seen before has just
 * mapped a library whose name contains "nccl", tell the loader.  With
 * --stop-new, and only while the loader's heartbeat is fresh and that
 * library file is not probed already, stop the process until its probes
 * are attached: none of its NCCL calls is missed.  The record says
 * whether it was stopped (CCLD_F_STOPPED) and is sent last, after the
 * stop is recorded.  The cookie is &_r_debug - &_dl_debug_state.
 */
SEC("uprobe")
int BPF_KPROBE(ld_debug_state)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 rdebug = PT_REGS_IP(ctx) + (__s64)bpf_get_attach_cookie(ctx);
	struct link_walk w = {};
	struct ccld_event *e;
	__u32 flags = 0;
	__u8 one = 1;
	int state;

	if (bpf_map_lookup_elem(&seen_pids, &tgid))
		return 0;
	if (bpf_probe_read_user(&state, sizeof(state), (void *)(rdebug + R_DEBUG_STATE)) ||
	    state != RT_CONSISTENT ||
	    bpf_probe_read_user(&w.lm, sizeof(w.lm), (void *)(rdebug + R_DEBUG_MAP)))
		return 0;
	bpf_loop(MAX_LINK_MAPS, check_link_map, &w, 0);
	if (!w.found)
		return 0;
	bpf_map_update_elem(&seen_pids, &tgid, &one, BPF_ANY);
	e = reserve(true);
	if (!e)
		return 0;
	if (stop_new_nccl && loader_alive() && !file_probed(w.l_ld) && stop_current(tgid))
		flags = CCLD_F_STOPPED;
	fill_header(e, CCLD_EV_LIB_LOAD, 0, flags);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/*
 * NCCL's warnings (ccld.h, CCLD_EV_NCCL_WARN).  ncclDebugLog's entry keeps,
 * per thread, where the message will be (ncclLastError: the cookie is
 * &ncclLastError - &ncclDebugLog, the entry's IP the function's address in
 * this process), the source file and line, and the format; its return
 * reads the formatted message and sends it in parts on the rare ring.
 */
struct warn_entry {
	__u64 msg;		/* &ncclLastError in this process */
	__u64 file;		/* const char *filefunc (WARN: __FILE__) */
	__u64 fmt;
	__u32 line;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);	/* a thread that died inside: evicted */
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct warn_entry);
} warn_entries SEC(".maps");

/* the strings of one warning, read before they are cut into records */
struct warn_text {
	char msg[CCLD_WARN_MSG_PARTS * CCLD_WARN_CHUNK];
	char file[4 * CCLD_WARN_CHUNK];
	char fmt[CCLD_WARN_CHUNK];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct warn_text);
} warn_scratch SEC(".maps");

SEC("uprobe")
int BPF_KPROBE(nccl_warn_entry, int level, unsigned long flags, const char *filefunc,
	       int line, const char *fmt)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct warn_entry w = {};

	if (level != NCCL_LOG_WARN_LEVEL || !traced())
		return 0;
	w.msg = PT_REGS_IP(ctx) + (__s64)bpf_get_attach_cookie(ctx);
	w.file = (__u64)filefunc;
	w.fmt = (__u64)fmt;
	w.line = line;
	bpf_map_update_elem(&warn_entries, &id, &w, BPF_ANY);
	return 0;
}

static __always_inline bool warn_part(__u8 part, __u8 nparts, __u32 line, const char *src)
{
	struct ccld_event *e = reserve(true);

	if (!e)
		return false;
	fill_header(e, CCLD_EV_NCCL_WARN, 0, CCLD_F_RETPROBE);
	e->u.warn.line = line;
	e->u.warn.part = part;
	e->u.warn.nparts = nparts;
	__builtin_memcpy(e->u.warn.text, src, CCLD_WARN_CHUNK);
	bpf_ringbuf_submit(e, 0);
	return true;
}

SEC("uretprobe")
int BPF_KRETPROBE(nccl_warn_return)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct warn_entry *we = bpf_map_lookup_elem(&warn_entries, &id);
	struct warn_entry w;
	struct warn_text *t;
	__u32 zero = 0;
	long n, nf, from;
	__u8 nmsg, i;

	if (!we)
		return 0;
	w = *we;
	bpf_map_delete_elem(&warn_entries, &id);
	t = bpf_map_lookup_elem(&warn_scratch, &zero);
	if (!t)
		return 0;
	__builtin_memset(t, 0, sizeof(*t));
	n = bpf_probe_read_user_str(t->msg, sizeof(t->msg), (void *)w.msg);
	if (n < 1)
		n = 1;
	nf = bpf_probe_read_user_str(t->file, sizeof(t->file), (void *)w.file);
	bpf_probe_read_user_str(t->fmt, sizeof(t->fmt), (void *)w.fmt);
	/* the file's last bytes (its name, not the build's directories) */
	from = nf - CCLD_WARN_CHUNK;
	if (from < 0)
		from = 0;
	if (from > (long)sizeof(t->file) - CCLD_WARN_CHUNK)
		from = sizeof(t->file) - CCLD_WARN_CHUNK;
	/* message chunks, the NUL included (N counts it) */
	nmsg = (n + CCLD_WARN_CHUNK - 1) / CCLD_WARN_CHUNK;
	if (nmsg < 1)
		nmsg = 1;
	if (nmsg > CCLD_WARN_MSG_PARTS)
		nmsg = CCLD_WARN_MSG_PARTS;
	if (!warn_part(0, 2 + nmsg, w.line, t->file + from) ||
	    !warn_part(1, 2 + nmsg, w.line, t->fmt))
		return 0;
	for (i = 0; i < CCLD_WARN_MSG_PARTS; i++) {
		if (i >= nmsg ||
		    !warn_part(2 + i, 2 + nmsg, w.line, t->msg + i * CCLD_WARN_CHUNK))
			break;
	}
	return 0;
}
