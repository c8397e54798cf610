// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The analyzer's state and its lookups: configuration, hosts, processes
 * (and their records: state, threads, labels, lost records), comms and
 * their ranks, memory counted.  The records of calls and GPU completions:
 * an_calls.c; of proxies and NCCL's memory: an_proxy.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "an_core_int.h"

#define AN_MAX_NRANKS	(1 << 20)
#define AN_MAX_HOSTS	(1 << 16)

struct an *an_new(const struct an_config *c, const struct an_sink *sink)
{
	struct an *an = calloc(1, sizeof(*an));
	struct an_config d;

	if (!an)
		return NULL;
	an_config_default(&d);
	an->cfg = c ? *c : d;
	/* a value out of range: its default (the parsers refuse them first) */
	if (!(an->cfg.stall_s > 0))
		an->cfg.stall_s = d.stall_s;
	if (an->cfg.hang_s < an->cfg.stall_s)
		an->cfg.hang_s = an->cfg.stall_s;
	if (an->cfg.suspect_frac <= 0 || an->cfg.suspect_frac > 1)
		an->cfg.suspect_frac = d.suspect_frac;
	if (!an->cfg.slow_min_iters)
		an->cfg.slow_min_iters = d.slow_min_iters;
	if (an->cfg.slow_min_s < 0)
		an->cfg.slow_min_s = d.slow_min_s;
	if (!(an->cfg.forget_s > 0))
		an->cfg.forget_s = 0;
	if (!an->cfg.mem_max)
		an->cfg.mem_max = d.mem_max;
	if (sink)
		an->sink = *sink;
	hmap_init(&an->comms);
	hmap_init(&an->setups);
	hmap_init(&an->procmap);
	hmap_init(&an->tcp);
	hmap_init(&an->endpoints);
	/* CCLD_AN_DEBUG: the picture behind each evaluation, on stderr */
	an->debug = getenv("CCLD_AN_DEBUG") != NULL;
	return an;
}

static void status_free(struct an_status *st)
{
	free(st->cul);
	free(st->wait);
}

/* frees comm C (not in an->comms any more), and counts its memory off */
void an_comm_free(struct an *an, struct an_comm *c)
{
	size_t n = sizeof(*c) + (size_t)c->nranks * sizeof(*c->r) +
		   (size_t)c->nhost_last * sizeof(*c->host_last) +
		   (size_t)(c->st.cap_cul + c->st.cap_wait) * sizeof(int32_t);
	int32_t r;

	for (r = 0; r < c->nranks; r++) {
		n += (size_t)c->r[r].cap_p2p * sizeof(*c->r[r].p2p) +
		     (size_t)c->r[r].cap_subs * sizeof(*c->r[r].subs) +
		     (size_t)c->r[r].cap_sent * sizeof(*c->r[r].sent);
		free(c->r[r].p2p);
		free(c->r[r].subs);
		free(c->r[r].sent);
	}
	n += an_slow_bytes(c->slow);
	an->stats.mem_bytes -= n < an->stats.mem_bytes ? n : an->stats.mem_bytes;
	free(c->r);
	free(c->host_last);
	free(c->last);
	status_free(&c->st);
	an_slow_free(c->slow);
	free(c);
}

void an_free(struct an *an)
{
	struct hkey k;
	size_t it;
	void *v;
	uint32_t i;

	if (!an)
		return;
	for (it = 0; hmap_next(&an->comms, &it, &k, &v);)
		an_comm_free(an, v);
	hmap_free(&an->comms);
	an_setup_free(an);
	hmap_free(&an->procmap);
	an_net_free(an);
	an_endpoint_free(an);
	for (i = 0; i < an->nhosts; i++)
		free(an->hosts[i].name);
	free(an->hosts);
	free(an->procs);
	free(an->free_procs);
	free(an);
}

const struct an_stats *an_stats(const struct an *an)
{
	return &an->stats;
}

/*
 * May the state grow by N bytes (an_config.mem_max)?  Refused: counted, and
 * said on stderr the first time (hostile or runaway records must not take
 * the node agent to its memory limit, where the kernel kills it).
 */
static bool mem_ok(struct an *an, size_t n)
{
	if (n <= an->cfg.mem_max && an->stats.mem_bytes <= an->cfg.mem_max - n)
		return true;
	if (!an->stats.mem_refused++)
		fprintf(stderr, "ccld: the analyzer's state reached its memory budget"
			" (%zu MiB of --mem-max %zu MiB; %zu MiB more asked): records that"
			" would grow it are refused from now on\n", an->stats.mem_bytes >> 20,
			an->cfg.mem_max >> 20, n >> 20);
	return false;
}

bool an_mem_take(struct an *an, size_t n)
{
	if (!mem_ok(an, n))
		return false;
	an->stats.mem_bytes += n;
	return true;
}

/* Grows an array to NEED elements (doubling); counts memory. NULL: ENOMEM or over budget. */
void *an_grow(struct an *an, void *p, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t ncap = *cap ? *cap : 4;
	void *np;

	if (need <= *cap)
		return p;
	while (ncap < need)
		ncap *= 2;
	if (!mem_ok(an, (size_t)(ncap - *cap) * elem))
		return NULL;
	np = realloc(p, (size_t)ncap * elem);
	if (!np)
		return NULL;
	memset((char *)np + (size_t)*cap * elem, 0, (size_t)(ncap - *cap) * elem);
	an->stats.mem_bytes += (size_t)(ncap - *cap) * elem;
	*cap = ncap;
	return np;
}

int an_host(struct an *an, const char *name)
{
	struct an_host_st *h;
	uint32_t i;

	for (i = 0; i < an->nhosts; i++)
		if (!strcmp(an->hosts[i].name, name))
			return (int)i;
	if (an->nhosts >= AN_MAX_HOSTS)
		return -1;
	h = realloc(an->hosts, (an->nhosts + 1) * sizeof(*h));
	if (!h)
		return -1;
	an->hosts = h;
	h = &an->hosts[an->nhosts];
	memset(h, 0, sizeof(*h));
	h->name = strdup(name);
	if (!h->name)
		return -1;
	return (int)an->nhosts++;
}

const char *an_host_name(const struct an *an, uint32_t host)
{
	return host < an->nhosts ? an->hosts[host].name : "?";
}

/* a new slot for process (HOST, PID), a forgotten one first: index + 1, 0 */
static uint32_t proc_new(struct an *an, uint32_t host, uint32_t pid)
{
	struct an_proc *p;
	uint32_t i;

	if (an->nfree) {
		i = an->free_procs[an->nfree - 1];
	} else {
		p = an_grow(an, an->procs, &an->cap_procs, an->nprocs + 1, sizeof(*p));
		if (!p)
			return 0;
		an->procs = p;
		i = an->nprocs;
	}
	/* values are index + 2: hmap reserves NULL and 1 (HMAP_TOMB) */
	if (hmap_put(&an->procmap, hkey3(host, pid, 0), (void *)(uintptr_t)(i + 2)))
		return 0;
	if (i == an->nprocs)
		an->nprocs++;
	else
		an->nfree--;
	p = &an->procs[i];
	memset(p, 0, sizeof(*p));
	p->host = host;
	p->pid = pid;
	p->state = AN_PROC_RUNNING;
	an->stats.procs++;
	return i + 1;
}

static uint32_t proc_get(struct an *an, uint32_t host, uint32_t pid, bool create)
{
	void *v = hmap_get(&an->procmap, hkey3(host, pid, 0));

	if (v || !create)
		return v ? (uint32_t)(uintptr_t)v - 1 : 0;
	return proc_new(an, host, pid);
}

/*
 * The slot of process (HOST, PID), alive at T_NS (a rank of it appeared, it
 * runs): one whose process exited before T_NS (same host, same clock) is
 * the pid's previous owner, which the comms it was in keep; the new process
 * gets a slot of its own, and the old one's TCP pairs are dropped.  A
 * record at or before the exit is the old process's (a fleet shard late).
 */
static uint32_t proc_live(struct an *an, uint32_t host, uint32_t pid, uint64_t t_ns)
{
	uint32_t i = proc_get(an, host, pid, true);

	if (i && an->procs[i - 1].state == AN_PROC_EXITED && t_ns > an->procs[i - 1].t_ns) {
		i = proc_new(an, host, pid);
		if (i)
			an_net_forget(an, host, pid);
	}
	return i;
}

const struct an_proc *an_proc_of(const struct an *an, const struct an_rank *r)
{
	return r->proc ? &an->procs[r->proc - 1] : NULL;
}

bool an_comm_has_proc(const struct an_comm *c, uint32_t proc)
{
	int32_t k;

	for (k = 0; proc && k < c->nranks; k++)
		if (c->r[k].proc == proc)
			return true;
	return false;
}

uint32_t an_rank_host(const struct an *an, const struct an_rank *r)
{
	return r->proc ? an->procs[r->proc - 1].host : 0;
}

struct an_comm *an_comm_get(struct an *an, uint64_t hash, int32_t nranks,
			    bool create)
{
	struct an_comm *c = hmap_get(&an->comms, hkey3(hash, 0, 0));
	int32_t i;

	if (c || !create || nranks <= 0 || nranks > AN_MAX_NRANKS ||
	    !mem_ok(an, sizeof(*c) + (size_t)nranks * sizeof(*c->r)))
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->r = calloc((size_t)nranks, sizeof(*c->r));
	if (!c->r || hmap_put(&an->comms, hkey3(hash, 0, 0), c)) {
		free(c->r);
		free(c);
		return NULL;
	}
	c->hash = hash;
	c->nranks = nranks;
	c->node = -1;
	c->color = -1;
	for (i = 0; i < nranks; i++) {
		struct an_rank *r = &c->r[i];
		int j;

		r->entered = r->returned = r->completed = r->call_seq = -1;
		for (j = 0; j < AN_HIST; j++)
			r->hist[j].seq = r->op_done[j].seq = r->op_arr[j].seq = -1;
	}
	an->stats.mem_bytes += sizeof(*c) + (size_t)nranks * sizeof(*c->r);
	an->stats.comms++;
	return c;
}

/* progress on comm C seen on HOST at T: the stall clock restarts */
void an_comm_progress(struct an *an, struct an_comm *c, uint32_t host, uint64_t t)
{
	c->version++;
	c->mem_progress = false;
	if (host >= c->nhost_last) {
		uint32_t cap = c->nhost_last;
		uint64_t *p = an_grow(an, c->host_last, &cap, host + 1,
				      sizeof(*p));

		if (!p)
			return;
		c->host_last = p;
		c->nhost_last = cap;
	}
	if (t > c->host_last[host])
		c->host_last[host] = t;
}

/*
 * The rank K names, an input at T_NS; a rank not known yet is bound to its
 * process (LIVE: a process alive at T_NS, else one a peer's table says is
 * gone).
 */
struct an_rank *an_rank_bind(struct an *an, const struct an_key *k, bool create,
			     bool live, uint64_t t_ns)
{
	struct an_comm *c = an_comm_get(an, k->comm, k->nranks, create);
	struct an_rank *r;

	if (!c || k->rank < 0 || k->rank >= c->nranks || k->host >= an->nhosts) {
		an->stats.rejected++;
		return NULL;
	}
	r = &c->r[k->rank];
	if (!r->proc) {
		r->proc = live ? proc_live(an, k->host, k->pid, t_ns) :
				 proc_get(an, k->host, k->pid, true);
		if (!r->proc)
			return NULL;
		an->procs[r->proc - 1].nrefs++;
		c->nknown++;
		an->stats.ranks++;
		an->env_dirty = true;	/* a rank more to compare (an_env.c) */
	}
	if (c->in_host != k->host || t_ns > c->in_t) {
		c->in_host = k->host;
		c->in_t = t_ns;
	}
	return r;
}

struct an_rank *an_rank_get(struct an *an, const struct an_key *k, bool create,
			    uint64_t t_ns)
{
	return an_rank_bind(an, k, create, true, t_ns);
}

void an_thread_state(struct an *an, uint32_t host, uint32_t pid, const struct an_thread *t,
		     uint64_t t_ns)
{
	uint32_t i;
	struct an_proc *p;

	an->stats.records++;
	if (host >= an->nhosts || !(i = proc_get(an, host, pid, true))) {
		an->stats.rejected++;
		return;
	}
	p = &an->procs[i - 1];
	if (t_ns != p->threads_t) {	/* a new look at the process */
		p->threads_t = t_ns;
		p->nthreads = p->nthreads_d = 0;
		p->has_d = false;
	}
	p->nthreads++;
	if (t->main) {
		if (!p->has_main || p->main_thread.state != t->state ||
		    p->main_thread.syscall != t->syscall || p->main_thread.arg0 != t->arg0)
			p->main_since = t_ns;
		p->main_thread = *t;
		p->has_main = true;
	}
	if (t->state == 'D') {
		p->nthreads_d++;
		if (!p->has_d || t->main) {
			p->d_thread = *t;
			p->has_d = true;
		}
	}
}

void an_proc_label(struct an *an, uint32_t host, uint32_t pid, enum an_label kind,
		   const char *value)
{
	/* a rank is a decimal number, 9 digits at most */
	bool bad_rank = (kind == AN_LABEL_RANK || kind == AN_LABEL_LOCAL_RANK) &&
			(!value[0] || strlen(value) > 9 ||
			 strspn(value, "0123456789") != strlen(value));
	uint32_t i;

	an->stats.records++;
	if (host >= an->nhosts || kind < AN_LABEL_POD || kind > AN_LABEL_MAX_KIND || bad_rank ||
	    !(i = proc_get(an, host, pid, true))) {
		an->stats.rejected++;
		return;
	}
	if (kind == AN_LABEL_NCCL_ENV) {
		an_env_set(an, &an->procs[i - 1], value);
		return;
	}
	snprintf(an->procs[i - 1].label[kind - 1], AN_LABEL_MAX, "%s", value);
	if (kind == AN_LABEL_NCCL_LIB)
		an->env_dirty = true;
}

void an_verdict_root(struct an_verdict *v, enum an_class cls, uint64_t comm, int64_t seq,
		     int fn, uint32_t host, uint64_t t_ns)
{
	memset(v, 0, sizeof(*v));
	v->kind = AN_V_NEW;
	v->cls = cls;
	v->role = AN_ROOT;
	v->comm = comm;
	v->seq = seq;
	v->fn = fn;
	v->clock_host = host;
	v->detected_ns = t_ns;
	v->onset_ns = t_ns;
}

struct an_proc *an_proc_add(struct an *an, uint32_t host, uint32_t pid)
{
	uint32_t i = host < an->nhosts ? proc_get(an, host, pid, true) : 0;

	return i ? &an->procs[i - 1] : NULL;
}

const struct an_proc *an_proc_find(const struct an *an, uint32_t host, uint32_t pid)
{
	uint32_t i = proc_get((struct an *)an, host, pid, false);

	return i ? &an->procs[i - 1] : NULL;
}

void an_records_lost(struct an *an, uint32_t host, uint32_t pid, uint64_t total,
		     uint64_t t_ns)
{
	uint32_t i;
	struct an_proc *p;
	struct hkey k;
	size_t it;
	void *v;

	an->stats.records++;
	if (host >= an->nhosts || !(i = proc_get(an, host, pid, true))) {
		an->stats.rejected++;
		return;
	}
	p = &an->procs[i - 1];
	if (total <= p->nlost)
		return;		/* known already (cumulative counts) */
	p->nlost = total;
	if (t_ns > p->lost_t)
		p->lost_t = t_ns;
	for (it = 0; hmap_next(&an->comms, &it, &k, &v);)
		((struct an_comm *)v)->version++;
}

void an_sched(struct an *an, uint32_t host, uint32_t pid, const struct an_sched *s,
	      uint64_t t_ns)
{
	uint32_t i;

	an->stats.records++;
	if (host >= an->nhosts || !pid || !(i = proc_get(an, host, pid, true))) {
		an->stats.rejected++;
		return;
	}
	an_sched_note(&an->procs[i - 1], s, t_ns);
}

void an_steps_shed(struct an *an, uint32_t host, uint64_t total, uint64_t t_ns)
{
	(void)t_ns;
	an->stats.records++;
	if (host >= an->nhosts) {
		an->stats.rejected++;
		return;
	}
	if (total <= an->hosts[host].steps_shed)
		return;		/* known already (cumulative counts) */
	an->steps_shed += total - an->hosts[host].steps_shed;
	an->hosts[host].steps_shed = total;
}

void an_nccl_warning(struct an *an, uint32_t host, uint32_t pid, const char *file,
		     uint32_t line, const char *msg, uint64_t t_ns)
{
	struct an_proc *p;
	uint32_t i;

	an->stats.records++;
	if (host >= an->nhosts || !(i = proc_get(an, host, pid, true))) {
		an->stats.rejected++;
		return;
	}
	p = &an->procs[i - 1];
	p->nwarn++;
	p->warn_t = t_ns;
	p->warn_line = line;
	snprintf(p->warn_file, sizeof(p->warn_file), "%s", file);
	snprintf(p->warn_msg, sizeof(p->warn_msg), "%s", msg);
}

void an_proc_state(struct an *an, uint32_t host, uint32_t pid,
		   enum an_proc_state st, int exit_status, uint64_t t_ns)
{
	/*
	 * a process found stopped when the tracer attached: that state comes
	 * before any record of its ranks, and nothing later repeats it
	 */
	uint32_t i = proc_get(an, host, pid, st == AN_PROC_STOPPED);
	struct hkey k;
	size_t it;
	void *v;

	an->stats.records++;
	if (!i) {
		an->stats.rejected++;
		return;
	}
	/* alive after its exit: a new process with the same pid (proc_live) */
	if (st != AN_PROC_EXITED && an->procs[i - 1].state == AN_PROC_EXITED) {
		i = proc_live(an, host, pid, t_ns);
		if (!i || an->procs[i - 1].state == AN_PROC_EXITED)
			return;		/* ENOMEM, or the exited one's, late */
	}
	an->procs[i - 1].state = st;
	an->procs[i - 1].exit_status = exit_status;
	an->procs[i - 1].t_ns = t_ns;
	/* the picture of every comm of the process may change: rare event */
	for (it = 0; hmap_next(&an->comms, &it, &k, &v);)
		((struct an_comm *)v)->version++;
}

