// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "attach.h"
#include "hmap.h"
#include "procmaps.h"
#include "procmem.h"
#include "proxymap.h"
#include "state.h"

#define RESCAN_NS	200000000ULL	/* an unknown thread: look again at most this often */
#define MAX_MAPS	16
#define MAX_FNS		16
#define MAX_ARGS	64		/* active ops walked per snapshot */
#define MAX_SUBS	64		/* NCCL_PROXY_MAX_SUBS */
#define SNAP_MAX	256
#define SUB_MAX		4096		/* sizeof(struct ncclProxySubArgs) we accept */

/* the comm by its address, looked up in the state at use: its rank may be freed */
struct pm_thread {
	uint64_t thread;		/* pthread_t of a progress thread */
	uint64_t comm;
};

struct pm_proc {
	uint32_t pid;
	struct traced_lib *lib;		/* its NCCL library, NULL: none found */
	struct { unsigned long start, end, off; } maps[MAX_MAPS];
	int nmaps;
	struct { uint64_t addr; uint32_t flags; uint8_t transport; } fns[MAX_FNS];
	int nfns;
	struct pm_thread *threads;
	size_t nthreads;
	size_t ncomms;			/* comms the process had at the scan */
	uint64_t scanned_ns;
};

struct proxymap {
	struct attacher *a;
	const struct state *st;
	uint32_t host;
	struct hmap procs;		/* pid -> struct pm_proc */
	struct proxymap_stats stats;
};

struct proxymap *proxymap_new(struct attacher *a, const struct state *st,
			      uint32_t host)
{
	struct proxymap *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->a = a;
	m->st = st;
	m->host = host;
	hmap_init(&m->procs);
	return m;
}

static void proc_free(struct pm_proc *p)
{
	free(p->threads);
	free(p);
}

void proxymap_free(struct proxymap *m)
{
	struct hkey k;
	size_t it = 0;
	void *v;

	if (!m)
		return;
	while (hmap_next(&m->procs, &it, &k, &v))
		proc_free(v);
	hmap_free(&m->procs);
	free(m);
}

void proxymap_forget(struct proxymap *m, uint32_t pid)
{
	struct pm_proc *p = hmap_del(&m->procs, hkey3(pid, 0, 0));

	if (p)
		proc_free(p);
}

const struct proxymap_stats *proxymap_stats(const struct proxymap *m)
{
	return &m->stats;
}

static int peek(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	return procmem_read((pid_t)pid, addr, buf, len);
}

static int peek_u64(uint32_t pid, uint64_t addr, int32_t off, uint64_t *v)
{
	return procmem_u64((pid_t)pid, addr, off, v);
}

/* The NCCL library PID maps (as the attacher knows it) and its mappings. */
static void find_lib(struct proxymap *m, struct pm_proc *p)
{
	struct mapped_file *files = NULL;
	char path[64], line[PATH_MAX + 128];
	size_t n = 0, i;
	FILE *f;

	if (procmaps_files((pid_t)p->pid, &files, &n))
		return;
	for (i = 0; i < n && !p->lib; i++)
		p->lib = attacher_lib(m->a, files[i].dev, files[i].ino);
	snprintf(path, sizeof(path), "/proc/%u/maps", p->pid);
	f = p->lib ? fopen(path, "re") : NULL;
	while (f && fgets(line, sizeof(line), f) && p->nmaps < MAX_MAPS) {
		struct maps_line ml;

		if (procmaps_parse_line(line, &ml) || !ml.path_len)
			continue;
		for (i = 0; i < n; i++) {
			if (attacher_lib(m->a, files[i].dev, files[i].ino) != p->lib ||
			    strlen(files[i].path) != ml.path_len ||
			    strncmp(files[i].path, ml.path, ml.path_len) != 0)
				continue;
			p->maps[p->nmaps].start = ml.start;
			p->maps[p->nmaps].end = ml.end;
			p->maps[p->nmaps].off = ml.offset;
			p->nmaps++;
			break;
		}
	}
	if (f)
		fclose(f);
	free(files);
}

/*
 * Send or recv, from the progress function's address (0 when it is none
 * of the library's progress functions), and its transport into *TR.
 */
static uint32_t direction(struct pm_proc *p, uint64_t addr, enum nccl_transport *tr)
{
	const struct traced_lib *lib = p->lib;
	uint32_t flags = 0;
	long off = -1;
	int i;

	*tr = NCCL_TR_UNKNOWN;
	for (i = 0; i < p->nfns; i++)
		if (p->fns[i].addr == addr) {
			*tr = p->fns[i].transport;
			return p->fns[i].flags;
		}
	for (i = 0; i < p->nmaps; i++)
		if (addr >= p->maps[i].start && addr < p->maps[i].end)
			off = (long)(addr - p->maps[i].start + p->maps[i].off);
	for (i = 0; lib && off >= 0 && i < lib->nprogress; i++) {
		if (lib->progress[i].off != off)
			continue;
		*tr = lib->progress[i].transport;
		if (lib->progress[i].dir == PROGRESS_SEND)
			flags = CCLD_F_PROXY_DIR;
		else if (lib->progress[i].dir == PROGRESS_RECV)
			flags = CCLD_F_PROXY_DIR | CCLD_F_PROXY_RECV;
	}
	if (p->nfns < MAX_FNS) {
		p->fns[p->nfns].addr = addr;
		p->fns[p->nfns].transport = (uint8_t)*tr;
		p->fns[p->nfns++].flags = flags;
	}
	return flags;
}

static void count_direction(struct proxymap *m, uint32_t flags, enum nccl_transport tr)
{
	if (!(flags & CCLD_F_PROXY_DIR))
		m->stats.no_direction++;
	else
		m->stats.by_transport[tr]++;
}

static uint64_t proxy_state_of(const struct pm_proc *p, const struct comm_rank *cr)
{
	uint64_t ps = 0;

	if (peek_u64(p->pid, cr->comm, p->lib->layouts.walk.comm_proxy_state, &ps))
		return 0;
	return ps;
}

/* Reads each known comm's progress thread. */
static void scan_threads(struct proxymap *m, struct pm_proc *p, uint64_t now)
{
	const struct proxy_walk_layout *w = &p->lib->layouts.walk;
	const struct proc_info *pi = state_proc(m->st, m->host, p->pid);
	const struct comm_rank *cr;
	size_t n = 0, cap = 0;

	p->scanned_ns = now;
	p->nthreads = 0;
	p->ncomms = 0;
	if (!pi || w->state_progress < 0 || w->progress_thread < 0)
		return;
	for (cr = pi->comms; cr; cr = cr->next_in_proc) {
		p->ncomms++;
		uint64_t ps = proxy_state_of(p, cr), th = 0;
		struct pm_thread *t;

		if (!ps || peek_u64(p->pid, ps, w->state_progress + w->progress_thread, &th) ||
		    !th)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			t = realloc(p->threads, cap * sizeof(*t));
			if (!t)
				break;
			p->threads = t;
		}
		p->threads[n].thread = th;
		p->threads[n++].comm = cr->comm;
	}
	p->nthreads = n;
}

static size_t comms_of(struct proxymap *m, uint32_t pid)
{
	const struct proc_info *pi = state_proc(m->st, m->host, pid);
	const struct comm_rank *cr;
	size_t n = 0;

	for (cr = pi ? pi->comms : NULL; cr; cr = cr->next_in_proc)
		n++;
	return n;
}

static struct pm_proc *proc_of(struct proxymap *m, uint32_t pid)
{
	struct hkey k = hkey3(pid, 0, 0);
	struct pm_proc *p = hmap_get(&m->procs, k);

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	find_lib(m, p);
	if (hmap_put(&m->procs, k, p)) {
		free(p);
		return NULL;
	}
	return p;
}

int proxymap_comm_bus(struct proxymap *m, const struct comm_rank *cr, uint64_t *bus)
{
	struct pm_proc *p = proc_of(m, cr->pid);

	if (!p || !p->lib || !p->lib->layouts.comm.valid)
		return -ENOENT;
	return peek_u64(cr->pid, cr->comm, p->lib->layouts.comm.bus_id, bus);
}

static const struct comm_rank *thread_comm(struct proxymap *m, struct pm_proc *p,
					   uint64_t thread, uint64_t now)
{
	uint64_t found = 0;
	size_t i;
	int pass;

	for (pass = 0; pass < 2 && !found; pass++) {
		if (pass == 1) {
			/* again soon only when the process has a comm not scanned */
			if (p->scanned_ns && now - p->scanned_ns < RESCAN_NS &&
			    comms_of(m, p->pid) == p->ncomms)
				break;
			scan_threads(m, p, now);
		}
		for (i = 0; i < p->nthreads; i++) {
			if (p->threads[i].thread != thread)
				continue;
			/* one thread for several comms (shared proxy): ambiguous */
			if (found)
				return NULL;
			found = p->threads[i].comm;
		}
	}
	return found ? state_rank(m->st, m->host, p->pid, found) : NULL;
}

static void set_ident(struct ccld_event *ev, const struct comm_rank *cr, uint32_t dir)
{
	ev->id.comm = cr->comm;
	ev->id.hash = cr->hash;
	ev->id.rank = cr->rank;
	ev->id.nranks = cr->nranks;
	ev->flags |= CCLD_F_IDENT | dir;
}

bool proxymap_resolve(struct proxymap *m, struct ccld_event *ev)
{
	struct pm_proc *p = proc_of(m, ev->pid);
	const struct comm_rank *cr;
	enum nccl_transport tr;
	uint32_t dir;

	if (!p || !p->lib || !ev->thread ||
	    !(cr = thread_comm(m, p, ev->thread, ev->ts_ns)) || !cr->hash) {
		m->stats.unmapped++;
		return false;
	}
	dir = direction(p, ev->u.proxy.progress, &tr);
	count_direction(m, dir, tr);
	set_ident(ev, cr, dir);
	m->stats.mapped++;
	return true;
}

static void fill_sub(struct ccld_event *ev, const struct ccld_proxy_layout *l,
		     const uint8_t *sub)
{
#define SUB_U64(f) (l->f >= 0 && l->f + 8 <= l->sub_size ? *(const uint64_t *)(sub + l->f) : 0)
#define SUB_S32(f, d) (l->f >= 0 && l->f + 4 <= l->sub_size ? *(const int32_t *)(sub + l->f) : (d))
	ev->u.proxy.posted = (uint32_t)SUB_U64(sub_posted);
	ev->u.proxy.transmitted = (uint32_t)SUB_U64(sub_transmitted);
	ev->u.proxy.received = (uint32_t)SUB_U64(sub_received);
	ev->u.proxy.done = (uint32_t)SUB_U64(sub_done);
	ev->u.proxy.nbytes = (int64_t)SUB_U64(sub_nbytes);
	ev->u.proxy.nsteps = SUB_S32(sub_nsteps, -1);
	ev->u.proxy.peer = SUB_S32(sub_peer, -1);
	ev->u.proxy.rank = SUB_S32(sub_rank, -1);
	ev->u.proxy.channel = (int16_t)SUB_S32(sub_channel_id, -1);
#undef SUB_U64
#undef SUB_S32
}

/* One active op's subs into OUT[*N..]; returns args->next, 0 at the end. */
static int read_args(struct proxymap *m, struct pm_proc *p, uint64_t args,
		     const struct comm_rank *cr, struct ccld_event *out, size_t *n,
		     uint64_t *next)
{
	enum nccl_transport tr;
	const struct ccld_proxy_layout *l = &p->lib->layouts.proxy;
	uint64_t op_count = 0, progress = 0;
	uint8_t sub[SUB_MAX];
	int32_t nsubs = 0, slice = 0, s;
	uint8_t coll = 0, dtype = 0, redop = 0;
	bool has_args;
	uint32_t dir;
	int ret;

	*next = 0;
	if ((ret = peek(p->pid, args + (uint64_t)l->args_nsubs, &nsubs, sizeof(nsubs))) ||
	    (ret = peek_u64(p->pid, args, p->lib->layouts.walk.args_next, next)))
		return ret;
	peek_u64(p->pid, args, l->args_op_count, &op_count);
	peek_u64(p->pid, args, l->args_progress, &progress);
	if (l->args_slice_steps >= 0)
		peek(p->pid, args + (uint64_t)l->args_slice_steps, &slice, sizeof(slice));
	/* the op's arguments, compared across ranks (H2 from memory) */
	has_args = l->args_coll >= 0 && l->args_dtype >= 0 && l->args_red_op >= 0 &&
		   !peek(p->pid, args + (uint64_t)l->args_coll, &coll, 1) &&
		   !peek(p->pid, args + (uint64_t)l->args_dtype, &dtype, 1) &&
		   !peek(p->pid, args + (uint64_t)l->args_red_op, &redop, 1);
	dir = direction(p, progress, &tr);
	if (nsubs < 0 || nsubs > MAX_SUBS)
		return -EINVAL;
	for (s = 0; s < nsubs && *n < SNAP_MAX; s++) {
		struct ccld_event *ev = &out[*n];
		uint64_t at = args + (uint64_t)l->args_subs + (uint64_t)s * (uint32_t)l->sub_size;

		if ((ret = peek(p->pid, at, sub, (size_t)l->sub_size)))
			return ret;
		memset(ev, 0, sizeof(*ev));
		fill_sub(ev, l, sub);
		ev->u.proxy.op_count = op_count;
		ev->u.proxy.progress = progress;
		ev->u.proxy.slice_steps = (uint16_t)slice;
		ev->u.proxy.sub = (uint8_t)s;
		set_ident(ev, cr, dir);
		count_direction(m, dir, tr);
		if (has_args) {
			ev->args.coll = coll;
			ev->args.dtype = dtype;
			ev->args.redop = redop;
			ev->flags |= CCLD_F_PROXY_ARGS;
		}
		(*n)++;
	}
	return 0;
}

/*
 * The CPU runs ahead: the proxy holds the ops of several launches, and the
 * later ones wait for the earlier by design.  Only the oldest op is in
 * flight on the GPU; keep its subs.  Collectives count opCount<<1 for the
 * comm, p2p (<<1|1) per channel: a p2p op spans one id per channel, so the
 * oldest p2p id of each channel is kept.
 */
static bool oldest_of(const struct ccld_event *evs, size_t n, const struct ccld_proxy *x)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct ccld_proxy *y = &evs[i].u.proxy;

		if ((y->op_count & 1) != (x->op_count & 1) || y->op_count >= x->op_count)
			continue;
		if (!(x->op_count & 1) || y->channel == x->channel)
			return false;
	}
	return true;
}

static size_t keep_oldest(struct ccld_event *evs, size_t n)
{
	bool *keep = calloc(n ? n : 1, sizeof(*keep));
	size_t i, k = 0;

	if (!keep)
		return n;	/* keep all: later ops only add queued subs */
	for (i = 0; i < n; i++)
		keep[i] = oldest_of(evs, n, &evs[i].u.proxy);
	for (i = 0; i < n; i++)
		if (keep[i])
			evs[k++] = evs[i];
	free(keep);
	return k;
}

int proxymap_snapshot(struct proxymap *m, const struct comm_rank *cr,
		      uint64_t now_ns,
		      void (*emit)(void *ctx, const struct ccld_event *ev),
		      void *ctx)
{
	const struct proxy_walk_layout *w;
	struct pm_proc *p = proc_of(m, cr->pid);
	struct ccld_event *evs;
	uint64_t ps, args = 0;
	size_t n = 0, i;
	int nargs, ret = 0;

	if (!p || !p->lib)
		return -ENOENT;
	w = &p->lib->layouts.walk;
	if (!p->lib->layouts.proxy.valid || w->comm_proxy_state < 0 ||
	    w->state_progress < 0 || w->progress_active < 0 || w->args_next < 0 ||
	    p->lib->layouts.proxy.sub_size > SUB_MAX)
		return -EOPNOTSUPP;
	ps = proxy_state_of(p, cr);
	if (!ps || peek_u64(p->pid, ps, w->state_progress + w->progress_active, &args)) {
		m->stats.snapshot_errors++;
		return -EFAULT;
	}
	evs = calloc(SNAP_MAX, sizeof(*evs));
	if (!evs)
		return -ENOMEM;
	/* the proxy thread moves on while we read: a torn list ends the walk */
	for (nargs = 0; args && nargs < MAX_ARGS && n < SNAP_MAX; nargs++) {
		ret = read_args(m, p, args, cr, evs, &n, &args);
		if (ret)
			break;
	}
	n = keep_oldest(evs, n);
	if (n == 0) {		/* nothing active: still a look at the proxy */
		memset(&evs[0], 0, sizeof(evs[0]));
		set_ident(&evs[0], cr, CCLD_F_PROXY_DIR);
	}
	for (i = 0; i < (n ? n : 1); i++) {
		evs[i].type = CCLD_EV_PROXY;
		evs[i].version = CCLD_ABI_VERSION;
		evs[i].fn = CCLD_FN_PROXY_SNAPSHOT;
		evs[i].pid = cr->pid;
		evs[i].ts_ns = now_ns;
		evs[i].u.proxy.step = (int32_t)i;
		evs[i].u.proxy.nsnap = (uint16_t)n;
		emit(ctx, &evs[i]);
	}
	free(evs);
	m->stats.snapshots++;
	return (int)n;
}
