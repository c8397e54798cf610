// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "attach.h"
#include "commfind.h"
#include "commread.h"
#include "cudawait.h"
#include "hmap.h"
#include "ncclhash.h"
#include "procmaps.h"
#include "proxy_live.h"
#include "names.h"
#include "snapshot.h"
#include "state.h"
#include "threads.h"
#include "ustack.h"

#define MAX_DEAD_SEARCHES	8	/* brute-force pid searches per snapshot */

/* a rank of a comm on this host that no traced process holds */
struct cand {
	uint64_t comm;		/* comm hash */
	int32_t rank, nranks;
	uint64_t pid_hash;
	char ns[64];		/* pid namespace of the process whose table named it */
};

/* what a pidHash resolved to */
struct resolved {
	long pid;		/* 0: no pid matches */
	bool alive;
};

struct snapshot {
	struct attacher *a;
	struct proxy_live *pl;
	const struct state *st;
	uint32_t host;
	bool verbose;
	char self_ns[64];	/* ccld's own pid namespace */
	struct hmap libs;	/* pid -> its NCCL traced_lib (NULL marker: none) */
	struct hmap resolved;	/* pidHash -> struct resolved */
	struct hmap dead_sent;	/* (comm, rank) -> marker: its PEER record is out */
	struct hmap counts;	/* (pid, comm) -> last launch count + 1 emitted */
	struct hmap gpus;	/* pid -> its GPU label's value last emitted (malloc'd) */
	struct hmap threads;	/* pid -> signature of its threads last emitted */
	struct hmap cudawait;	/* pid -> struct proc_cudawait */
	struct hmap nccl_threads;	/* (pid, tid) -> marker: its stack ran through libnccl */
	int entries_fd;		/* the BPF calls in progress per thread, -1 none */
	struct cand *cands;
	size_t ncands, capcands;
};

static char marker;

static void ns_link(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	n = readlink(path, buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
}

struct snapshot *snapshot_new(struct attacher *a, struct proxy_live *pl, const struct state *st,
			      uint32_t host, bool verbose)
{
	struct snapshot *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->a = a;
	s->pl = pl;
	s->st = st;
	s->host = host;
	s->verbose = verbose;
	s->entries_fd = -1;
	ns_link(getpid(), s->self_ns, sizeof(s->self_ns));
	hmap_init(&s->libs);
	hmap_init(&s->resolved);
	hmap_init(&s->dead_sent);
	hmap_init(&s->counts);
	hmap_init(&s->gpus);
	hmap_init(&s->threads);
	hmap_init(&s->cudawait);
	hmap_init(&s->nccl_threads);
	return s;
}

void snapshot_free(struct snapshot *s)
{
	struct hkey k;
	size_t it = 0;
	void *v;

	if (!s)
		return;
	while (hmap_next(&s->resolved, &it, &k, &v))
		free(v);
	it = 0;
	while (hmap_next(&s->cudawait, &it, &k, &v))
		free(v);
	hmap_free(&s->cudawait);
	hmap_free(&s->libs);
	hmap_free(&s->resolved);
	hmap_free(&s->dead_sent);
	hmap_free(&s->counts);
	for (it = 0; hmap_next(&s->gpus, &it, NULL, &v);)
		free(v);
	hmap_free(&s->gpus);
	hmap_free(&s->threads);
	hmap_free(&s->nccl_threads);
	free(s->cands);
	free(s);
}

/* PID's NCCL library as the attacher knows it, or NULL */
static struct traced_lib *lib_of(struct snapshot *s, pid_t pid)
{
	struct hkey k = hkey3((uint64_t)pid, 0, 0);
	struct mapped_file *files = NULL;
	struct traced_lib *lib = NULL;
	size_t n = 0, i;
	void *v = hmap_get(&s->libs, k);

	if (v)
		return v == &marker ? NULL : v;
	if (procmaps_files(pid, &files, &n))
		return NULL;
	for (i = 0; i < n && !lib; i++)
		lib = attacher_lib(s->a, files[i].dev, files[i].ino);
	free(files);
	hmap_put(&s->libs, k, lib ? (void *)lib : &marker);
	return lib;
}

static void add_cand(struct snapshot *s, const struct cand *c)
{
	size_t i;

	for (i = 0; i < s->ncands; i++)
		if (s->cands[i].comm == c->comm && s->cands[i].rank == c->rank)
			return;
	if (s->ncands == s->capcands) {
		size_t cap = s->capcands ? s->capcands * 2 : 16;
		struct cand *p = realloc(s->cands, cap * sizeof(*p));

		if (!p)
			return;
		s->cands = p;
		s->capcands = cap;
	}
	s->cands[s->ncands++] = *c;
}

/* the ranks of a comm that share this host, from its peer table */
static void note_peers(struct snapshot *s, const struct traced_lib *lib, pid_t pid,
		       const struct ccld_event *ev)
{
	struct comm_peer *peers;
	struct cand c = { .comm = ev->id.hash, .nranks = ev->id.nranks };
	int32_t r, me = ev->id.rank;

	if (ev->id.nranks <= 1 || ev->id.nranks > (1 << 20) || me < 0 || me >= ev->id.nranks)
		return;
	peers = calloc((size_t)ev->id.nranks, sizeof(*peers));
	if (!peers)
		return;
	if (commread_peers(lib, pid, ev->id.comm, ev->id.nranks, peers) == 0) {
		ns_link(pid, c.ns, sizeof(c.ns));
		for (r = 0; r < ev->id.nranks; r++) {
			if (r == me || peers[r].host_hash != peers[me].host_hash ||
			    !peers[r].pid_hash)
				continue;
			c.rank = r;
			c.pid_hash = peers[r].pid_hash;
			add_cand(s, &c);
		}
	}
	free(peers);
}

static void emit_at(snapshot_emit_fn emit, void *ctx, struct ccld_event *ev, uint64_t now)
{
	ev->ts_ns = now;
	emit(ctx, ev);
}

/*
 * NCCL_P2P_DISABLE=1 with NCCL_SHM_DISABLE=1 in PID's environment: NCCL
 * sends to same-host peers over the network (its NET transport, proxied)
 */
static bool intra_transports_off(pid_t pid)
{
	char path[64], *buf = NULL, *v;
	bool p2p = false, shm = false;
	size_t cap = 0, len = 0;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	/* NUL-separated NAME=VALUE entries */
	while ((n = getdelim(&buf, &cap, '\0', f)) > 0) {
		len = (size_t)n;
		if (buf[len - 1] == '\0')
			len--;
		buf[len] = '\0';
		if ((v = strchr(buf, '=')) == NULL)
			continue;
		*v++ = '\0';
		if (!strcmp(buf, "NCCL_P2P_DISABLE"))
			p2p = atoi(v) == 1;
		else if (!strcmp(buf, "NCCL_SHM_DISABLE"))
			shm = atoi(v) == 1;
	}
	free(buf);
	fclose(f);
	return p2p && shm;
}

/*
 * Whether EV's comm runs over NCCL's intra-node transports: every rank has
 * this rank's host hash (its peer table) and the process leaves P2P/SHM on.
 * Such connections have no proxy ops, so an empty look at its proxy says
 * nothing of its GPUs.
 */
static void note_hosts(const struct traced_lib *lib, pid_t pid, struct ccld_event *ev,
		       int64_t *bus_id)
{
	struct comm_peer *peers;
	int32_t r, me = ev->id.rank, n = ev->id.nranks;
	bool one = true;

	*bus_id = -1;
	if (n <= 1 || n > (1 << 20) || me < 0 || me >= n)
		return;
	peers = calloc((size_t)n, sizeof(*peers));
	if (!peers)
		return;
	if (commread_peers(lib, pid, ev->id.comm, n, peers) == 0) {
		for (r = 0; r < n && one; r++)
			one = peers[r].host_hash == peers[me].host_hash;
		ev->u.cstate.counts |= CCLD_CS_HOSTS_READ;
		if (one && !intra_transports_off(pid))
			ev->u.cstate.counts |= CCLD_CS_INTRA_NODE;
		*bus_id = peers[me].bus_id;
	}
	free(peers);
}

/*
 * The GPU of PID as its comm says (cudaDev, busId in NCCL's encoding: the
 * PCI address as hex digits, 0x1a000 is 0000:1a:00.0): a PROC_LABEL record
 * (CCLD_LABEL_GPU), when it is new for the process.
 */
static void gpu_label(struct snapshot *s, pid_t pid, int32_t cuda_dev, int64_t bus,
		      uint64_t now, snapshot_emit_fn emit, void *ctx)
{
	struct hkey k = hkey3((uint64_t)pid, 0, 5);
	char *old = hmap_get(&s->gpus, k), *val, pci[24];
	struct ccld_event ev;

	if (cuda_dev < 0 || bus < 0)
		return;
	memset(&ev, 0, sizeof(ev));
	pci_bus_name((unsigned long long)bus, pci, sizeof(pci));
	snprintf(ev.u.label.value, sizeof(ev.u.label.value), "%d %s", cuda_dev, pci);
	if (old && !strcmp(old, ev.u.label.value))
		return;
	val = strdup(ev.u.label.value);
	if (!val || hmap_put(&s->gpus, k, val)) {
		free(val);
		return;
	}
	free(old);
	ev.type = CCLD_EV_PROC_LABEL;
	ev.version = CCLD_ABI_VERSION;
	ev.pid = ev.tid = (uint32_t)pid;
	ev.id.rank = ev.id.nranks = -1;
	ev.u.label.kind = CCLD_LABEL_GPU;
	emit_at(emit, ctx, &ev, now);
}

/*
 * One comm's counters; only when they moved unless FORCE (a look at
 * attach, which also reads the peer table's hosts).  Returns 0 or -errno
 */
static int read_counts(struct snapshot *s, const struct traced_lib *lib, pid_t pid,
		       uint64_t addr, uint8_t src, bool force, uint64_t now,
		       snapshot_emit_fn emit, void *ctx, struct ccld_event *ev)
{
	struct hkey k = hkey3((uint64_t)pid, addr, 1);
	int64_t bus = -1;
	uint64_t sig;
	int ret = commread_state(lib, pid, addr, src, ev);

	if (ret)
		return ret;
	if (force) {
		note_hosts(lib, pid, ev, &bus);
		gpu_label(s, pid, ev->u.cstate.cuda_dev, bus, now, emit, ctx);
	}
	/* +1: zero launched is a value, not "never emitted" */
	/* never NULL or HMAP_TOMB in the map */
	sig = (((ev->id.nccl_seq + 1) << 20) ^ ev->u.cstate.coll_op_count) | 1ull << 63;
	if (!force && (uint64_t)(uintptr_t)hmap_get(&s->counts, k) == sig)
		return 0;
	hmap_put(&s->counts, k, (void *)(uintptr_t)sig);
	emit_at(emit, ctx, ev, now);
	return 0;
}

void snapshot_set_entries(struct snapshot *s, int fd)
{
	s->entries_fd = fd;
}

/*
 * A process's CUDA synchronize functions (read once), and the one its main
 * thread's stack last showed it in, since when (the loader's clock).
 */
struct proc_cudawait {
	struct cudawait_fn fns[CUDAWAIT_MAX_FNS];
	size_t nfns;
	uint8_t fn;
	uint64_t since;
	/*
	 * the scan's last answer, at that stack pointer, and what the frames
	 * made of it: a thread blocked in one place is unwound once
	 */
	uint8_t scan_fn, confirmed;
	uint64_t scan_sp;
};

/*
 * The main thread of EV's process, sleeping in a system call with no
 * synchronize in the entries map: one on its stack was entered before the
 * probes were in (a GPU stalled before the attach leaves the CPU there).
 */
static void cuda_wait_stack(struct snapshot *s, struct ccld_event *ev, uint64_t now)
{
	struct hkey k = hkey3(ev->pid, 0, 4);
	struct proc_cudawait *w = hmap_get(&s->cudawait, k);
	uint64_t sp, pc;
	uint8_t fn;

	if (!ev->u.thread.main || (ev->u.thread.state != 'S' && ev->u.thread.state != 'D') ||
	    ev->u.thread.syscall < 0)
		return;
	if (!w) {
		int n;

		w = calloc(1, sizeof(*w));
		if (!w)
			return;
		n = cudawait_fns((pid_t)ev->pid, w->fns, CUDAWAIT_MAX_FNS);
		w->nfns = n > 0 ? (size_t)n : 0;
		if (hmap_put(&s->cudawait, k, w)) {
			free(w);
			return;
		}
	}
	/* the registers read once for the scan and the walk */
	if (!threads_task_regs((pid_t)ev->pid, (pid_t)ev->tid, &sp, &pc))
		sp = pc = 0;
	fn = cudawait_thread((pid_t)ev->pid, sp, w->fns, w->nfns);
	if (fn) {
		if (fn != w->scan_fn || sp != w->scan_sp) {
			w->scan_fn = fn;
			w->scan_sp = sp;
			w->confirmed = cudawait_confirm((pid_t)ev->pid, (pid_t)ev->tid, sp, pc,
							w->fns, w->nfns, fn);
		}
		fn = w->confirmed;
	}
	if (fn != w->fn) {
		w->fn = fn;
		w->since = now;
	}
	if (fn) {
		ev->fn = fn;
		ev->cuda_since_ns = w->since;
		ev->u.thread.cuda_stack = 1;
	}
}

/*
 * The CUDA synchronize thread record EV's thread is inside, from the BPF
 * entry state its uprobe saved; a call entered before the probes were in
 * is not there: the main thread's stack may show it (cuda_wait_stack).
 * ev->fn and its entry (or first sighting) in cuda_since_ns.
 */
static void cuda_wait(struct snapshot *s, struct ccld_event *ev, uint64_t now)
{
	static const uint32_t fns[] = { CCLD_FN_CUDA_STREAM_SYNC, CCLD_FN_CUDA_EVENT_SYNC };
	struct ccld_entry_key k = { .pid_tgid = (uint64_t)ev->pid << 32 | ev->tid };
	struct ccld_entry_val v;
	size_t i;
	int drv;

	if (s->entries_fd < 0)
		return;
	for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		for (drv = 0; drv < 2; drv++) {
			k.fn = fns[i] | (drv ? CCLD_COOKIE_DRIVER : 0);
			if (!bpf_map_lookup_elem(s->entries_fd, &k, &v)) {
				ev->fn = (uint8_t)fns[i];
				ev->cuda_since_ns = v.ts;
				return;
			}
		}
	cuda_wait_stack(s, ev, now);
}

#define STACK_PROBES	32	/* threads of a process walked at a full read, at most */

/* one look's stack reads of a process: its modules reported once */
struct stack_reader {
	struct ustack *u;	/* opened at the first stack read */
	bool failed;		/* ... which failed: no more tries */
	int probes;		/* other threads still to walk (a full read) */
};

/*
 * Thread TEV's native stack (ustack.h), where it is blocked in the
 * kernel, as CCLD_EV_THREAD_STACK records through EMIT, before its own:
 * the main thread's (where the training loop runs: a checkpoint write, a
 * data loader, a CUDA synchronize) and NCCL's threads' (its proxy's
 * progress and service threads, its bootstrap).  NCCL names its threads
 * only under NCCL_SET_THREAD_NAME=1 ("NCCL Progress  0"); otherwise they
 * are known by their stacks: at a full read (FULL) the other blocked
 * threads are walked too, STACK_PROBES of them at most, and those with a
 * frame in libnccl are remembered.
 */
static void emit_stack(struct snapshot *s, pid_t pid, const struct ccld_event *tev,
		       uint64_t now, bool full, struct stack_reader *r, snapshot_emit_fn emit,
		       void *ctx)
{
	const struct ccld_thread *t = &tev->u.thread;
	struct hkey k = hkey3((uint64_t)pid, tev->tid, 6);
	char text[CCLD_STACK_PARTS * CCLD_STACK_CHUNK + 1];
	bool named = t->main || !strncmp(t->name, "NCCL", 4), in_nccl = false;
	bool known = hmap_get(&s->nccl_threads, k) != NULL;	/* NCCL's, by an earlier walk */
	struct ccld_event ev;
	uint64_t sp, pc;
	size_t len, part, nparts;
	int nframes, err;

	if (r->failed || (!named && !known && !(full && r->probes > 0)))
		return;
	if (!threads_task_regs(pid, (pid_t)tev->tid, &sp, &pc))
		return;
	if (!r->u && !(r->u = ustack_open(pid, &err))) {
		r->failed = true;
		return;
	}
	if (!named && !known)
		r->probes--;
	nframes = ustack_thread(r->u, (pid_t)tev->tid, sp, pc, text, sizeof(text), "libnccl",
				&in_nccl);
	if (in_nccl && !known && hmap_put(&s->nccl_threads, k, &marker))
		return;
	if (!named && !in_nccl && !known)
		return;
	len = nframes > 0 ? strlen(text) : 0;
	nparts = (len + CCLD_STACK_CHUNK - 1) / CCLD_STACK_CHUNK;
	for (part = 0; part < nparts; part++) {
		size_t at = part * CCLD_STACK_CHUNK;

		memset(&ev, 0, sizeof(ev));
		ev.type = CCLD_EV_THREAD_STACK;
		ev.version = CCLD_ABI_VERSION;
		ev.pid = (uint32_t)pid;
		ev.tid = tev->tid;
		ev.id.rank = ev.id.nranks = -1;
		ev.u.stack.part = (uint8_t)part;
		ev.u.stack.nparts = (uint8_t)nparts;
		ev.u.stack.nframes = (uint8_t)nframes;
		memcpy(ev.u.stack.text, text + at,
		       len - at < CCLD_STACK_CHUNK ? len - at : CCLD_STACK_CHUNK);
		emit_at(emit, ctx, &ev, now);
	}
}

/* PID's threads; only when one changed unless FORCE */
static void read_threads(struct snapshot *s, pid_t pid, bool force, uint64_t now,
			 snapshot_emit_fn emit, void *ctx)
{
	struct ccld_event *evs = calloc(THREADS_RECORDS_MAX, sizeof(*evs));
	struct hkey k = hkey3((uint64_t)pid, 0, 2);
	uint64_t sig = 1469598103934665603ull;
	int n, i;

	if (!evs)
		return;
	n = threads_read(pid, evs, THREADS_RECORDS_MAX);
	for (i = 0; i < n; i++) {
		const struct ccld_thread *t = &evs[i].u.thread;

		sig = (sig ^ evs[i].tid) * 1099511628211ull;
		if (evs[i].type == CCLD_EV_THREAD_FD) {
			sig = (sig ^ hkey_str(evs[i].u.fd.path)) * 1099511628211ull;
			continue;
		}
		cuda_wait(s, &evs[i], now);
		sig = (sig ^ evs[i].fn ^ evs[i].cuda_since_ns ^ evs[i].u.thread.cuda_stack) *
		      1099511628211ull;
		sig = (sig ^ t->state) * 1099511628211ull;
		sig = (sig ^ (uint32_t)t->syscall) * 1099511628211ull;
		sig = (sig ^ hkey_str(t->wchan)) * 1099511628211ull;
	}
	sig |= 1ull << 63;	/* never NULL or HMAP_TOMB in the map */
	if (n > 0 && (force || (uint64_t)(uintptr_t)hmap_get(&s->threads, k) != sig)) {
		struct stack_reader sr = { .probes = STACK_PROBES };

		hmap_put(&s->threads, k, (void *)(uintptr_t)sig);
		for (i = 0; i < n; i++) {
			if (evs[i].type == CCLD_EV_THREAD)
				emit_stack(s, pid, &evs[i], now, force, &sr, emit, ctx);
			emit_at(emit, ctx, &evs[i], now);
		}
		ustack_close(sr.u);
	}
	free(evs);
}

/* every /proc pid (ccld's namespace): the live processes a pidHash may name */
static long *live_pids(size_t *n)
{
	size_t cap = 1024;
	long *p = malloc(cap * sizeof(*p));
	struct dirent *de;
	DIR *d = opendir("/proc");

	*n = 0;
	while (p && d && (de = readdir(d))) {
		long pid = atol(de->d_name);

		if (pid <= 0)
			continue;
		if (*n == cap) {
			long *q = realloc(p, cap * 2 * sizeof(*q));

			if (!q)
				break;
			p = q;
			cap *= 2;
		}
		p[(*n)++] = pid;
	}
	if (d)
		closedir(d);
	return p;
}

static const struct resolved *resolve(struct snapshot *s, const struct cand *c,
				      const long *live, size_t nlive, int *searches)
{
	struct hkey k = hkey3(c->pid_hash, 0, 3);
	struct resolved *r = hmap_get(&s->resolved, k);
	size_t i;

	if (r)
		return r;
	/* another pid namespace (a container): its pids are not ours */
	if (strcmp(c->ns, s->self_ns) || *searches >= MAX_DEAD_SEARCHES)
		return NULL;
	(*searches)++;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->pid = nccl_pid_of_hash(c->pid_hash, c->ns, live, nlive);
	for (i = 0; r->pid && i < nlive && !r->alive; i++)
		r->alive = live[i] == r->pid && procmaps_state((pid_t)r->pid) &&
			   procmaps_state((pid_t)r->pid) != 'Z';
	if (hmap_put(&s->resolved, k, r)) {
		free(r);
		return NULL;
	}
	return r;
}

static bool rank_known(const struct snapshot *s, uint64_t comm, int32_t rank)
{
	const struct comm_rank *cr;
	size_t it;

	for (it = 0; (cr = state_next_rank(s->st, &it));)
		if (cr->host_id == s->host && cr->hash == comm && cr->rank == rank)
			return true;
	return false;
}

/*
 * Ranks on this host that no traced process holds: NCCL's pidHash names
 * their process.  Gone: a PEER comm state and the process's exit, so the
 * analyzer names it.  Alive but not traced (-p without it): said once.
 */
static int resolve_dead(struct snapshot *s, uint64_t now, snapshot_emit_fn emit, void *ctx,
			FILE *log)
{
	size_t i, nlive = 0;
	long *live = NULL;
	int searches = 0, ndead = 0;

	for (i = 0; i < s->ncands; i++) {
		const struct cand *c = &s->cands[i];
		struct hkey k = hkey3(c->comm, (uint64_t)c->rank, 4);
		const struct resolved *r;
		struct ccld_event ev;

		if (rank_known(s, c->comm, c->rank) || hmap_get(&s->dead_sent, k))
			continue;
		if (!live && !(live = live_pids(&nlive)))
			break;
		r = resolve(s, c, live, nlive, &searches);
		if (!r || !r->pid)
			continue;
		if (hmap_put(&s->dead_sent, k, &marker))
			break;
		if (r->alive) {
			fprintf(log, "ccld-trace: comm %016" PRIx64 " rank %d is process %ld, "
				"which is not traced (add it with -p)\n", c->comm, c->rank, r->pid);
			continue;
		}
		memset(&ev, 0, sizeof(ev));
		ev.type = CCLD_EV_COMM_STATE;
		ev.version = CCLD_ABI_VERSION;
		ev.pid = ev.tid = (uint32_t)r->pid;
		ev.flags = CCLD_F_IDENT;
		ev.id.hash = c->comm;
		ev.id.rank = c->rank;
		ev.id.nranks = c->nranks;
		ev.u.cstate.source = CCLD_COMM_SRC_PEER;
		ev.u.cstate.cuda_dev = -1;
		emit_at(emit, ctx, &ev, now);
		memset(&ev, 0, sizeof(ev));
		ev.type = CCLD_EV_PROC_EXIT;
		ev.version = CCLD_ABI_VERSION;
		ev.pid = ev.tid = (uint32_t)r->pid;
		ev.id.rank = ev.id.nranks = -1;
		ev.u.proc.exit_code = -1;
		ev.u.proc.layout_slot = ~0u;
		emit_at(emit, ctx, &ev, now);
		fprintf(log, "ccld-trace: comm %016" PRIx64 " rank %d: its process %ld no longer"
			" exists (NCCL's peer table of the other ranks names it)\n", c->comm,
			c->rank, r->pid);
		ndead++;
	}
	free(live);
	return ndead;
}

/*
 * What a comm of PID says of LIB's table entry: one that fits confirms it
 * (in use from now on), NCCL's startMagic with the rest misplaced rejects it.
 */
static void judge_table(struct snapshot *s, struct traced_lib *lib, pid_t pid,
			enum comm_check v, uint64_t comm, const char *why, FILE *log)
{
	char err[256];

	if (v == COMM_FITS) {
		if (attacher_table_confirm(s->a, lib, err, sizeof(err)))
			fprintf(log, "ccld-trace: %s: %s\n", lib->path, err);
		else
			fprintf(log, "ccld-trace: %s: ccld's table layout of NCCL %s confirmed "
				"by comm %#" PRIx64 " of process %d (NCCL's magics, rank and "
				"size where the table puts them): in use\n", lib->path,
				lib->table.origin, comm, (int)pid);
	} else if (v == COMM_MISFIT) {
		attacher_table_reject(s->a, lib);
		fprintf(log, "ccld-trace: %s: ccld's table layout of NCCL %s does not fit this "
			"build (process %d, %s): not used; no DWARF layout of ncclComm: "
			"identity from init arguments only; processes that initialised "
			"before attach cannot be identified\n", lib->path, lib->table.origin,
			(int)pid, why);
	}
}

/*
 * A search by a table entry: a comm found confirms it; NCCL's startMagic
 * seen only where the rest misfits rejects it, unless the scan stopped
 * early (a fitting comm may lie beyond); nothing at all says nothing.
 */
static enum comm_check search_verdict(size_t found, const struct commfind_stats *fs)
{
	if (found)
		return COMM_FITS;
	return fs->misfits && !fs->cut ? COMM_MISFIT : COMM_NONE;
}

/* one process: its comms, their proxies, its threads */
static void one_proc(struct snapshot *s, pid_t pid, uint64_t now, snapshot_emit_fn emit,
		     void *ctx, FILE *log, size_t *ncomms, const char **how)
{
	struct traced_lib *lib = lib_of(s, pid);
	struct commfind_stats fs;
	struct comm_addr *addrs = NULL;
	struct ccld_event ev;
	bool pending;
	char err[256];
	size_t n = 0, i;
	int ret;

	if (!lib)
		return;
	/* a table entry to confirm: the comms found by it judge it */
	pending = lib->table_state == TABLE_PENDING;
	ret = commfind(lib, pending ? &lib->table : &lib->layouts, pid, &addrs, &n, &fs, err,
		       sizeof(err));
	if (pending && !ret)
		judge_table(s, lib, pid, search_verdict(n, &fs), n ? addrs[0].addr : 0,
			    fs.misfit, log);
	if (pending && !ret && lib->table_state == TABLE_PENDING && s->verbose)
		fprintf(log, "ccld-trace: process %d: no communicator in memory to confirm "
			"ccld's table layout of NCCL %s by\n", (int)pid, lib->table.origin);
	if (ret) {
		if (!pending || s->verbose)
			fprintf(log, "ccld-trace: process %d: its communicators cannot be read "
				"from memory: %s\n", (int)pid, err);
	} else if (lib->layouts.source != LAYOUT_NONE) {
		if (fs.scanned && (fs.cut || s->verbose))
			fprintf(log, "ccld-trace: process %d: no comm in NCCL's ncclComms[]; "
				"scanned %.0f MB of its memory in %.2f s%s: %zu comm(s)\n",
				(int)pid, fs.bytes / 1e6, fs.seconds,
				fs.cut ? " (stopped at the budget)" : "", n);
		for (i = 0; i < n; i++) {
			const struct comm_rank *cr;

			if (read_counts(s, lib, pid, addrs[i].addr, addrs[i].source, true, now,
					emit, ctx, &ev))
				continue;
			(*ncomms)++;
			*how = addrs[i].source == CCLD_COMM_SRC_ARRAY ? "NCCL's ncclComms[]" :
			       "a memory scan";
			note_peers(s, lib, pid, &ev);
			cr = state_rank(s->st, s->host, (uint32_t)pid, addrs[i].addr);
			if (cr && cr->hash)
				proxy_live_snapshot(s->pl, cr, now, emit, ctx);
		}
	}
	free(addrs);
	read_threads(s, pid, true, now, emit, ctx);
}

void snapshot_procs(struct snapshot *s, const pid_t *pids, size_t n, uint64_t now_ns,
		    snapshot_emit_fn emit, void *ctx, FILE *log)
{
	const char *how = "memory";
	size_t i, ncomms = 0;
	int ndead;

	s->ncands = 0;
	for (i = 0; i < n; i++)
		one_proc(s, pids[i], now_ns, emit, ctx, log, &ncomms, &how);
	ndead = resolve_dead(s, now_ns, emit, ctx, log);
	fprintf(log, "ccld-trace: state read from memory: %zu comm rank(s) of %zu process(es)"
		" (%s)%s\n", ncomms, n, ncomms ? how : "none found",
		ndead ? ", with dead peers" : "");
}

/* a comm rank learnt from calls, not read from memory yet */
struct new_comm {
	uint64_t comm;
	uint32_t pid;
	int32_t rank, nranks;	/* -1: unknown */
};

/* CR is a rank of a comm in a process on this host that is still there */
static bool local_live(const struct snapshot *s, const struct comm_rank *cr)
{
	return cr->comm && cr->host_id == s->host && cr->state != RS_EXITED &&
	       cr->state != RS_DESTROYED;
}

void snapshot_new_comms(struct snapshot *s, uint64_t now_ns, snapshot_emit_fn emit, void *ctx)
{
	const struct comm_rank *cr;
	struct ccld_event ev;
	struct new_comm *pending = NULL, *p;
	size_t it, n = 0, cap = 0, i;

	/* collect first: emitting changes the state being iterated */
	for (it = 0; (cr = state_next_rank(s->st, &it));) {
		if (cr->mem_read || cr->peer_named || !local_live(s, cr) ||
		    cr->state == RS_INITIALISING)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			p = realloc(pending, cap * sizeof(*p));
			if (!p)
				goto out;
			pending = p;
		}
		pending[n].comm = cr->comm;
		pending[n].pid = cr->pid;
		/* from the init call's arguments while no layout is in use */
		pending[n].rank = cr->ident_from_memory ? -1 : cr->rank;
		pending[n++].nranks = cr->ident_from_memory ? -1 : cr->nranks;
	}
	for (i = 0; i < n; i++) {
		struct traced_lib *lib = lib_of(s, (pid_t)pending[i].pid);
		char why[128], what[160];
		enum comm_check v;

		if (!lib)
			continue;
		if (lib->table_state == TABLE_PENDING) {
			v = commread_check(&lib->table, (pid_t)pending[i].pid, pending[i].comm,
					   pending[i].rank, pending[i].nranks, why, sizeof(why));
			snprintf(what, sizeof(what), "comm %#" PRIx64 ": %s", pending[i].comm, why);
			judge_table(s, lib, (pid_t)pending[i].pid, v, pending[i].comm, what,
				    stderr);
		}
		if (lib->layouts.source != LAYOUT_NONE)
			read_counts(s, lib, (pid_t)pending[i].pid, pending[i].comm,
				    CCLD_COMM_SRC_CALLS, true, now_ns, emit, ctx, &ev);
	}
out:
	free(pending);
}

/*
 * Comms read inside their init: read again each tick, and in full (their
 * peer tables too) once initState says the init ended; that record tells
 * the analyzer the init returned
 */
void snapshot_init_poll(struct snapshot *s, uint64_t now_ns, snapshot_emit_fn emit, void *ctx)
{
	const struct comm_rank *cr;
	struct ccld_event ev;
	uint64_t comms[64];
	uint32_t pids[64];
	size_t it, n = 0, i;

	for (it = 0; (cr = state_next_rank(s->st, &it)) && n < 64;) {
		if (!cr->mem_in_init || !local_live(s, cr))
			continue;
		comms[n] = cr->comm;
		pids[n++] = cr->pid;
	}
	for (i = 0; i < n; i++) {
		struct traced_lib *lib = lib_of(s, (pid_t)pids[i]);
		const struct ccld_comm_state *cs = &ev.u.cstate;

		/* gone meanwhile: its exit or teardown tells the analyzer */
		if (!lib || commread_state(lib, (pid_t)pids[i], comms[i], CCLD_COMM_SRC_CALLS, &ev) ||
		    !(cs->counts & CCLD_CS_INIT_READ) || cs->init_state == CCLD_INIT_IN_PROGRESS)
			continue;
		read_counts(s, lib, (pid_t)pids[i], comms[i], CCLD_COMM_SRC_CALLS, true, now_ns,
			    emit, ctx, &ev);
	}
}

void snapshot_forget(struct snapshot *s, pid_t pid)
{
	uint64_t p = (uint64_t)pid;
	struct hkey k;
	size_t it;
	void *v;

	if (!s)
		return;
	hmap_del(&s->libs, hkey3(p, 0, 0));
	hmap_del(&s->threads, hkey3(p, 0, 2));
	free(hmap_del(&s->cudawait, hkey3(p, 0, 4)));
	free(hmap_del(&s->gpus, hkey3(p, 0, 5)));
	for (it = 0; hmap_next(&s->counts, &it, &k, &v);)
		if (k.a == p && k.c == 1)
			hmap_del(&s->counts, k);
	for (it = 0; hmap_next(&s->nccl_threads, &it, &k, &v);)
		if (k.a == p)
			hmap_del(&s->nccl_threads, k);
}

void snapshot_refresh(struct snapshot *s, uint64_t hash, const uint32_t *sus, size_t nsus,
		      uint64_t now_ns, snapshot_emit_fn emit, void *ctx)
{
	const struct comm_rank *cr;
	struct ccld_event ev;
	uint64_t comms[64];
	uint32_t pids[128];
	size_t it, n = 0, np, i, j;

	for (it = 0; (cr = state_next_rank(s->st, &it)) && n < 64;) {
		if (cr->hash != hash || cr->peer_named || !local_live(s, cr))
			continue;
		comms[n] = cr->comm;
		pids[n++] = cr->pid;
	}
	for (i = 0; i < n; i++) {
		struct traced_lib *lib = lib_of(s, (pid_t)pids[i]);

		if (lib)
			read_counts(s, lib, (pid_t)pids[i], comms[i], CCLD_COMM_SRC_CALLS, false,
				    now_ns, emit, ctx, &ev);
	}
	/* the threads of each process once: its ranks' and the suspects' */
	for (np = n, i = 0; i < nsus && np < 128; i++)
		pids[np++] = sus[i];
	for (i = 0; i < np; i++) {
		for (j = 0; j < i && pids[j] != pids[i]; j++)
			;
		if (j == i)
			read_threads(s, (pid_t)pids[i], false, now_ns, emit, ctx);
	}
}
