// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Analyzer inputs: hosts, processes, comm ranks and the per-rank state. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "an_int.h"
#include <linux/types.h>
#include "ccld.h"

#define AN_MAX_NRANKS	(1 << 20)
#define AN_MAX_HOSTS	(1 << 16)

void an_config_default(struct an_config *c)
{
	c->stall_s = 30;
	c->hang_s = 300;
	c->suspect_frac = 0.5;
	c->barrier_bytes = 4;
	c->slow_window_s = 60;
	c->slow_min_iters = 3;
	c->slow_min_s = 1;
}

struct an *an_new(const struct an_config *c, const struct an_sink *sink)
{
	struct an *an = calloc(1, sizeof(*an));

	if (!an)
		return NULL;
	if (c)
		an->cfg = *c;
	else
		an_config_default(&an->cfg);
	if (an->cfg.stall_s <= 0)
		an->cfg.stall_s = 30;
	if (an->cfg.hang_s < an->cfg.stall_s)
		an->cfg.hang_s = an->cfg.stall_s;
	if (an->cfg.suspect_frac <= 0 || an->cfg.suspect_frac > 1)
		an->cfg.suspect_frac = 0.5;
	if (!an->cfg.slow_min_iters)
		an->cfg.slow_min_iters = 3;
	if (an->cfg.slow_min_s < 0)
		an->cfg.slow_min_s = 1;
	if (sink)
		an->sink = *sink;
	hmap_init(&an->comms);
	hmap_init(&an->procmap);
	hmap_init(&an->tcp);
	/* CCLD_AN_DEBUG: the picture behind each evaluation, on stderr */
	an->debug = getenv("CCLD_AN_DEBUG") != NULL;
	return an;
}

static void status_free(struct an_status *st)
{
	free(st->cul);
	free(st->wait);
}

static void rank_free(struct an_rank *r)
{
	free(r->p2p);
	free(r->subs);
}

void an_free(struct an *an)
{
	struct hkey k;
	size_t it;
	void *v;
	uint32_t i;

	if (!an)
		return;
	for (it = 0; hmap_next(&an->comms, &it, &k, &v);) {
		struct an_comm *c = v;
		int32_t r;

		for (r = 0; r < c->nranks; r++)
			rank_free(&c->r[r]);
		free(c->r);
		free(c->host_last);
		free(c->last);
		status_free(&c->st);
		an_slow_free(c->slow);
		free(c);
	}
	hmap_free(&an->comms);
	hmap_free(&an->procmap);
	an_net_free(an);
	for (i = 0; i < an->nhosts; i++)
		free(an->hosts[i].name);
	free(an->hosts);
	free(an->procs);
	free(an);
}

const struct an_stats *an_stats(const struct an *an)
{
	return &an->stats;
}

/* Grows an array to NEED elements (doubling); counts memory. NULL: ENOMEM. */
void *an_grow(struct an *an, void *p, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t ncap = *cap ? *cap : 4;
	void *np;

	if (need <= *cap)
		return p;
	while (ncap < need)
		ncap *= 2;
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

static uint32_t proc_get(struct an *an, uint32_t host, uint32_t pid, bool create)
{
	struct hkey k = hkey3(host, pid, 0);
	void *v = hmap_get(&an->procmap, k);
	struct an_proc *p;

	/* values are index + 2: hmap reserves NULL and 1 (HMAP_TOMB) */
	if (v || !create)
		return v ? (uint32_t)(uintptr_t)v - 1 : 0;
	p = an_grow(an, an->procs, &an->cap_procs, an->nprocs + 1, sizeof(*p));
	if (!p)
		return 0;
	an->procs = p;
	p = &an->procs[an->nprocs];
	memset(p, 0, sizeof(*p));
	p->host = host;
	p->pid = pid;
	p->state = AN_PROC_RUNNING;
	if (hmap_put(&an->procmap, k, (void *)(uintptr_t)(an->nprocs + 2)))
		return 0;
	return ++an->nprocs;
}

const struct an_proc *an_proc_of(const struct an *an, const struct an_rank *r)
{
	return r->proc ? &an->procs[r->proc - 1] : NULL;
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

	if (c || !create || nranks <= 0 || nranks > AN_MAX_NRANKS)
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
static void progress(struct an *an, struct an_comm *c, uint32_t host,
		     uint64_t t)
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

struct an_rank *an_rank_get(struct an *an, const struct an_key *k, bool create)
{
	struct an_comm *c = an_comm_get(an, k->comm, k->nranks, create);
	struct an_rank *r;

	if (!c || k->rank < 0 || k->rank >= c->nranks || k->host >= an->nhosts) {
		an->stats.rejected++;
		return NULL;
	}
	r = &c->r[k->rank];
	if (!r->proc) {
		r->proc = proc_get(an, k->host, k->pid, true);
		if (!r->proc)
			return NULL;
		c->nknown++;
		an->stats.ranks++;
	}
	return r;
}

int an_rank(struct an *an, const struct an_key *k, uint64_t parent,
	    uint64_t t_ns)
{
	struct an_rank *r;
	struct an_comm *c;

	an->stats.records++;
	r = an_rank_get(an, k, true);
	if (!r)
		return k->nranks <= 0 ? -EINVAL : -ENOMEM;
	c = an_comm_get(an, k->comm, 0, false);
	if (parent)
		c->parent = parent;
	r->gone = 0;
	r->last_ns = t_ns;
	progress(an, c, k->host, t_ns);
	return 0;
}

void an_rank_gone(struct an *an, const struct an_key *k, uint64_t t_ns)
{
	struct an_rank *r;

	an->stats.records++;
	r = an_rank_get(an, k, false);
	if (!r)
		return;
	r->gone = 1;
	r->in_call = 0;
	progress(an, an_comm_get(an, k->comm, 0, false), k->host, t_ns);
}

static struct an_p2p *p2p_get(struct an *an, struct an_rank *r, int32_t peer)
{
	struct an_p2p *p;
	uint32_t i;

	for (i = 0; i < r->np2p; i++)
		if (r->p2p[i].peer == peer)
			return &r->p2p[i];
	p = an_grow(an, r->p2p, &r->cap_p2p, r->np2p + 1, sizeof(*p));
	if (!p)
		return NULL;
	r->p2p = p;
	p = &r->p2p[r->np2p++];
	memset(p, 0, sizeof(*p));
	p->peer = peer;
	p->last[0].seq = p->last[1].seq = -1;
	return p;
}

static void sig_of(struct an_sig *s, const struct an_op *op)
{
	s->seq = op->seq;
	s->t_enter = op->t_ns;
	s->count = op->count;
	s->root = op->root;
	s->fn = (uint8_t)op->fn;
	s->dtype = op->dtype;
	s->redop = op->redop;
	s->flags = 0;
}

static bool op_ok(const struct an_op *op)
{
	return op->seq >= 0 && (ccld_fn_is_coll(op->fn) ||
				(ccld_fn_is_p2p(op->fn) && op->peer >= 0));
}

/* rank R's collective before SEQ was known done by T_NS (tier B or C) */
static bool prior_done(const struct an_rank *r, int64_t seq, uint64_t t_ns)
{
	const struct an_op_done *d = &r->op_done[(uint64_t)(seq - 1) % AN_HIST];

	return seq == 0 || r->completed >= seq - 1 ||
	       (d->seq == seq - 1 && d->t <= t_ns);
}

void an_op_enter(struct an *an, const struct an_op *op)
{
	struct an_rank *r;
	struct an_comm *c;

	an->stats.records++;
	if (!op_ok(op) || !(r = an_rank_get(an, &op->k, true))) {
		an->stats.rejected += !op_ok(op);
		return;
	}
	c = an_comm_get(an, op->k.comm, 0, false);
	r->gone = 0;
	r->last_ns = op->t_ns;
	r->mem_only = 0;
	r->mem_open = 0;	/* it moves: the look at its proxy is old */
	if (ccld_fn_is_p2p(op->fn)) {
		int d = op->fn == CCLD_FN_RECV;
		struct an_p2p *p = p2p_get(an, r, op->peer);

		if (!p)
			return;
		if (op->seq + 1 > p->n[d])
			p->n[d] = op->seq + 1;
		sig_of(&p->last[d], op);
		p->t_enter[d] = op->t_ns;
	} else {
		sig_of(&r->hist[op->seq % AN_HIST], op);
		if (prior_done(r, op->seq, op->t_ns))
			r->hist[op->seq % AN_HIST].flags |= SIG_IDLE;
		if (op->seq > r->entered)
			r->entered = op->seq;
		r->in_call = 1;
		r->call_seq = op->seq;
		r->call_ns = op->t_ns;
		/* counters of an older op no longer describe the one in flight */
		if (r->nsubs && r->subs[0].seq >= 0 && r->subs[0].seq < op->seq)
			r->nsubs = 0;
	}
	progress(an, c, op->k.host, op->t_ns);
}

void an_op_return(struct an *an, const struct an_op *op, int64_t ret,
		  uint64_t t_ns)
{
	struct an_rank *r;

	an->stats.records++;
	if (!op_ok(op) || !(r = an_rank_get(an, &op->k, false)))
		return;
	r->last_ns = t_ns;
	if (ccld_fn_is_p2p(op->fn)) {
		int d = op->fn == CCLD_FN_RECV;
		struct an_p2p *p = p2p_get(an, r, op->peer);

		if (!p)
			return;
		if (op->seq + 1 > p->nret[d])
			p->nret[d] = op->seq + 1;
		if (p->last[d].seq == op->seq)
			p->last[d].flags |= SIG_RET;
	} else {
		struct an_sig *s = &r->hist[op->seq % AN_HIST];

		if (s->seq == op->seq)
			s->flags |= SIG_RET;
		if (op->seq > r->returned)
			r->returned = op->seq;
		if (r->call_seq == op->seq)
			r->in_call = 0;
	}
	(void)ret;
	progress(an, an_comm_get(an, op->k.comm, 0, false), op->k.host, t_ns);
}

/*
 * When the GPU finished round SG on rank R: tier B completes a whole step at
 * once (one event per step), so the proxy's own end of the round's op where
 * its id maps to the seq (op_done), else where the rank's proxy went idle after an op
 * launched at or after SG's entry (tier C), every op of this comm up to SG
 * was done by then (stream order): that is the round's own end, not the
 * step's.  Else the tier B time T_NS.
 */
static uint64_t op_done_at(const struct an_rank *r, const struct an_sig *sg,
			   uint64_t t_ns)
{
	const struct an_op_done *d = &r->op_done[(uint64_t)sg->seq % AN_HIST];

	if (d->seq == sg->seq && d->t >= sg->t_enter && d->t <= t_ns)
		return d->t;
	if (r->tierc && r->idle_tf >= sg->t_enter && r->idle_t >= sg->t_enter &&
	    r->idle_t <= t_ns)
		return r->idle_t;
	return t_ns;
}

static void note_done(struct an *an, uint64_t comm, const struct an_rank *r,
		      uint64_t t_ns);

static void complete_coll(struct an *an, struct an_comm *c, struct an_rank *r,
			  int64_t upto, uint32_t host, uint64_t t_ns)
{
	int64_t s;

	r->tierb = 1;
	r->last_ns = t_ns;
	r->mem_open = 0;
	/* each round newly completed: its duration on this rank (slow) */
	for (s = upto - AN_HIST + 1 > r->completed + 1 ? upto - AN_HIST + 1 :
	     r->completed + 1; c && s <= upto; s++)
		if (r->hist[s % AN_HIST].seq == s)
			an_slow_duration(an, c, (int32_t)(r - c->r),
					 &r->hist[s % AN_HIST],
					 op_done_at(r, &r->hist[s % AN_HIST], t_ns),
					 host);
	/* a tier B completion of all it entered: its stream idle from here */
	if (upto >= r->entered && upto > r->completed)
		note_done(an, c ? c->hash : 0, r, t_ns);
	if (upto > r->completed)
		r->completed = upto;
	if (r->nsubs && r->subs[0].seq >= 0 && r->subs[0].seq <= upto)
		r->nsubs = 0;
	progress(an, c, host, t_ns);
}

void an_op_complete(struct an *an, const struct an_op *op, uint64_t t_ns)
{
	struct an_comm *c;
	struct an_rank *r;

	an->stats.records++;
	if (!op_ok(op) || !(r = an_rank_get(an, &op->k, false)))
		return;
	c = an_comm_get(an, op->k.comm, 0, false);
	if (ccld_fn_is_p2p(op->fn)) {
		int d = op->fn == CCLD_FN_RECV;
		struct an_p2p *p = p2p_get(an, r, op->peer);

		if (!p)
			return;
		r->tierb = 1;
		if (op->seq + 1 > p->ndone[d])
			p->ndone[d] = op->seq + 1;
		progress(an, c, op->k.host, t_ns);
		return;
	}
	/* completion is in stream order: this op done means all before it */
	if (r->hist[op->seq % AN_HIST].seq == op->seq)
		r->hist[op->seq % AN_HIST].flags |= SIG_DONE;
	complete_coll(an, c, r, op->seq, op->k.host, t_ns);
}

void an_complete_upto(struct an *an, const struct an_key *k, int64_t upto,
		      uint64_t t_ns)
{
	struct an_rank *r;

	an->stats.records++;
	if (upto < 0 || !(r = an_rank_get(an, k, false)))
		return;
	complete_coll(an, an_comm_get(an, k->comm, 0, false), r, upto,
		      k->host, t_ns);
}

static bool same_sub(const struct an_progress *a, const struct an_progress *b)
{
	return a->channel == b->channel && a->peer == b->peer &&
	       a->dir == b->dir && a->op == b->op;
}

static bool sub_finished(const struct an_progress *p)
{
	return p->nsteps && p->done >= p->nsteps;
}

/* when OP was first seen on rank R (another sub of it), else T_NS */
static uint64_t first_seen(const struct an_progress *subs, uint32_t n,
			   uint64_t op, uint64_t t_ns)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (subs[i].op == op)
			return subs[i].t_first;
	return t_ns;
}

/* OP was first seen in a look at memory (an earlier snapshot) */
static bool seen_in_memory(const struct an_progress *subs, uint32_t n, uint64_t op)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (subs[i].op == op)
			return subs[i].from_mem;
	return false;
}

/*
 * The comm rank's proxy finished everything up to its latest call: remember
 * when, with that call's entry (its launch), for the GPU-side start of the
 * process's later ops (an_gpu_start).
 */
static void note_done(struct an *an, uint64_t comm, const struct an_rank *r,
		      uint64_t t_ns)
{
	struct an_proc *p = r->proc ? &an->procs[r->proc - 1] : NULL;
	const struct an_sig *sg;
	struct an_done *d;
	uint64_t launch = 0;
	uint32_t i;
	int dir;

	if (!p)
		return;
	if (r->entered >= 0) {
		sg = &r->hist[(uint64_t)r->entered % AN_HIST];
		if (sg->seq == r->entered)
			launch = sg->t_enter;
	}
	/* p2p: the latest send or receive entered */
	for (i = 0; i < r->np2p; i++)
		for (dir = 0; dir < 2; dir++)
			if (r->p2p[i].n[dir] && r->p2p[i].t_enter[dir] > launch)
				launch = r->p2p[i].t_enter[dir];
	if (!launch)
		return;
	d = &p->done[p->ndone++ % AN_DONE_RING];
	d->comm = comm;
	d->t_launch = launch;
	d->t_done = t_ns;
}

/*
 * When the GPU of the process could start round SG of COMM: not before the
 * call, and not before its ops launched earlier were done, in this comm or
 * another (one stream, in launch order: a CPU that queued its whole step
 * ahead of its GPU called long before the GPU got there).  CCL-D's GPU-side
 * start, from op-level proxy records: a rank whose GPU was held elsewhere
 * arrives late here.  *IDLE_SINCE: where the start is the call, since when
 * its earlier ops were known done (0 unknown).
 */
uint64_t an_gpu_start(const struct an *an, uint64_t comm, const struct an_rank *r,
		      const struct an_sig *sg, uint64_t t_done, uint64_t *holder,
		      uint64_t *idle_since)
{
	const struct an_proc *p = an_proc_of(an, r);
	uint64_t t = sg->t_enter, hold_t = 0;
	uint32_t i, n;

	*holder = *idle_since = 0;
	if (!p)
		return t;
	n = p->ndone < AN_DONE_RING ? p->ndone : AN_DONE_RING;
	for (i = 0; i < n; i++) {
		const struct an_done *d = &p->done[i];

		if (d->t_launch >= sg->t_enter)
			continue;
		if (d->t_done > sg->t_enter && d->t_done <= t_done && d->comm != comm &&
		    d->t_done > hold_t) {
			/* the latest op of another comm that held it (before its
			 * earlier ops of this comm, if one of those ended later) */
			hold_t = d->t_done;
			*holder = d->comm;
		}
		if (d->t_done > t && d->t_done <= t_done) {
			t = d->t_done;
		} else if (d->t_done <= sg->t_enter && d->t_done > *idle_since) {
			*idle_since = d->t_done;
		}
	}
	return t;
}

static bool open_subs(const struct an_rank *r)
{
	uint32_t i;

	for (i = 0; i < r->nsubs; i++)
		if (!sub_finished(&r->subs[i]))
			return true;
	return false;
}

/*
 * A send sub of R finished: the op's send rate so far, from the op's first
 * sighting to this completion (bytes of every finished send sub of it).
 */
static void send_done(struct an_rank *r, const struct an_progress *p,
		      uint64_t t_first, uint64_t t_ns)
{
	if (r->rate_op != p->op) {
		r->rate_op = p->op;
		r->rate_bytes = 0;
		r->rate_t0 = t_first;
	}
	r->rate_bytes += p->nbytes;
	r->rate_t1 = t_ns;
	if (r->rate_t1 > r->rate_t0)
		r->send_rate = (double)r->rate_bytes * 1e9 /
			       (double)(r->rate_t1 - r->rate_t0);
}

/*
 * Two step-level records of one send sub: the steps transmitted and not yet
 * done were in the network in between.  The integral of that count over
 * time is the sum of the steps' network times (each step's done minus its
 * transmitted), whatever the pipelining; a slow link shows as a longer time
 * per step, while a sender waiting for its GPU or for credits does not.
 */
static void net_time(struct an_rank *r, const struct an_progress *o,
		     const struct an_progress *n, uint64_t t_ns)
{
	if (n->op != o->op || t_ns < o->t_last)
		return;
	if (o->transmitted > o->done)
		r->net_ns += (double)(o->transmitted - o->done) * (double)(t_ns - o->t_last);
	if (n->done > o->done && n->done <= n->nsteps && n->nsteps) {
		r->net_steps += n->done - o->done;
		r->net_bytes += (double)(n->done - o->done) * (double)n->nbytes /
				(double)n->nsteps;
	}
}

/*
 * Every sub of collective proxy op OP finished on rank R: its round's end
 * on that rank (op_done_at), and a completion of the process's stream for
 * the GPU-side start of its later ops (an_gpu_start).  Under run-ahead the
 * proxy holds the later ops of the step already and is never idle between
 * them: this is the only per-op end there is without step hooks.
 */
static void note_op_done(struct an *an, uint64_t comm, struct an_rank *r, uint64_t op,
			 uint64_t t_ns)
{
	struct an_proc *p = r->proc ? &an->procs[r->proc - 1] : NULL;
	const struct an_sig *sg;
	struct an_done *d;
	int64_t seq;
	uint32_t i;

	for (i = 0; i < r->nsubs; i++)
		if (r->subs[i].op == op && !sub_finished(&r->subs[i]))
			return;
	if (!an_coll_op(op)) {
		/*
		 * a p2p op: no seq, but its end holds the stream as well; it
		 * went to the proxy at its launch, after its calls
		 */
		uint64_t tf = first_seen(r->subs, r->nsubs, op, t_ns), launch = 0;
		int dir;

		/* its launch: the latest p2p call of the rank before the proxy saw it */
		for (i = 0; i < r->np2p; i++)
			for (dir = 0; dir < 2; dir++)
				if (r->p2p[i].n[dir] && r->p2p[i].t_enter[dir] <= tf &&
				    r->p2p[i].t_enter[dir] > launch)
					launch = r->p2p[i].t_enter[dir];
		if (p && launch && op != r->p2p_done_op) {
			r->p2p_done_op = op;
			d = &p->done[p->ndone++ % AN_DONE_RING];
			d->comm = comm;
			d->t_launch = launch;
			d->t_done = t_ns;
		}
		return;
	}
	if (r->op_off_ok != 1)
		return;
	seq = an_op_seq(r, op);
	sg = &r->hist[(uint64_t)seq % AN_HIST];
	if (seq < 0 || sg->seq != seq || !sg->t_enter || t_ns < sg->t_enter ||
	    r->op_done[(uint64_t)seq % AN_HIST].seq == seq)
		return;
	r->op_done[(uint64_t)seq % AN_HIST].seq = seq;
	r->op_done[(uint64_t)seq % AN_HIST].t = t_ns;
	if (!p)
		return;
	d = &p->done[p->ndone++ % AN_DONE_RING];
	d->comm = comm;
	d->t_launch = sg->t_enter;
	d->t_done = t_ns;
}

/*
 * Step hooks are on and a send sub of collective op OP transmitted its
 * first step (the record before it showed none): the GPU of rank R had the
 * op's data ready, i.e. had reached the op.  The GPU-side start of the
 * round, exact where the call is not (the CPU queued it long before).
 */
static void note_op_arrival(struct an_rank *r, const struct an_progress *o,
			    const struct an_progress *n, uint64_t t_ns)
{
	struct an_op_done *a;
	int64_t seq;

	if (n->dir != AN_SEND || !n->step || !o->step || o->op != n->op ||
	    o->transmitted || !n->transmitted || !an_coll_op(n->op) || r->op_off_ok != 1)
		return;
	seq = an_op_seq(r, n->op);
	a = &r->op_arr[(uint64_t)seq % AN_HIST];
	if (seq < 0 || (a->seq == seq && a->t <= t_ns))
		return;
	a->seq = seq;
	a->t = t_ns;
}

/*
 * A new proxy op on rank R: the finished subs of other ops say nothing
 * any more (the unfinished ones do: several ops can be in flight).
 */
static void prune_finished(struct an_rank *r, uint64_t op)
{
	uint32_t i, n = 0;

	for (i = 0; i < r->nsubs; i++)
		if (r->subs[i].op == op || !sub_finished(&r->subs[i]))
			r->subs[n++] = r->subs[i];
	r->nsubs = n;
}

static bool advanced(const struct an_progress *o, const struct an_progress *n)
{
	return n->seq != o->seq || n->posted > o->posted ||
	       n->transmitted > o->transmitted ||
	       n->received > o->received || n->done > o->done;
}

void an_progress(struct an *an, const struct an_key *k,
		 const struct an_progress *p, uint64_t t_ns)
{
	struct an_progress *s;
	struct an_rank *r;
	bool adv = true, fresh = false;
	uint64_t tf;
	uint32_t i;

	an->stats.records++;
	if (!(r = an_rank_get(an, k, false)))
		return;
	if (r->nsubs && r->subs[0].seq != p->seq)
		r->nsubs = 0;	/* another op: its counters replace these */
	for (i = 0; i < r->nsubs; i++)
		if (same_sub(&r->subs[i], p))
			break;
	if (i == r->nsubs) {
		tf = first_seen(r->subs, r->nsubs, p->op, t_ns);
		if (tf == t_ns)
			prune_finished(r, p->op);
		i = r->nsubs;
		s = an_grow(an, r->subs, &r->cap_subs, r->nsubs + 1, sizeof(*s));
		if (!s)
			return;
		r->subs = s;
		r->nsubs++;
		fresh = true;
	} else {
		adv = advanced(&r->subs[i], p);
		tf = r->subs[i].t_first;
	}
	if (p->dir == AN_SEND && p->op && p->nbytes && sub_finished(p) &&
	    (fresh || !sub_finished(&r->subs[i])))
		send_done(r, p, tf, t_ns);
	if (!fresh && p->step && r->subs[i].step && p->dir == AN_SEND)
		net_time(r, &r->subs[i], p, t_ns);
	if (!fresh)
		note_op_arrival(r, &r->subs[i], p, t_ns);
	/*
	 * Step hooks are on in this process: its host's rounds are perturbed.
	 * An analyzer that turns hooks on itself knows when (an_suspect_comm);
	 * one that cannot (the fleet's) learns it from the records.
	 */
	if (p->step && !an->sink.suspect && k->host < an->nhosts &&
	    an->hosts[k->host].perturbed_until < t_ns + AN_PERTURB_NS)
		an->hosts[k->host].perturbed_until = t_ns + AN_PERTURB_NS;
	{
		bool mem = !fresh && r->subs[i].from_mem;

		r->subs[i] = *p;
		r->subs[i].from_mem = mem;
	}
	r->subs[i].t_first = tf;
	r->subs[i].t_last = t_ns;
	r->tierc = 1;
	if (sub_finished(p) && p->op)
		note_op_done(an, k->comm, r, p->op, t_ns);
	if (sub_finished(p) && p->op && !open_subs(r)) {
		r->idle_t = t_ns;
		r->idle_tf = tf;
		note_done(an, k->comm, r, t_ns);
	}
	if (adv) {
		r->last_ns = t_ns;
		r->mem_open = 0;
		progress(an, an_comm_get(an, k->comm, 0, false), k->host, t_ns);
	} else {
		an_comm_get(an, k->comm, 0, false)->version++;
	}
}

void an_snapshot(struct an *an, const struct an_key *k,
		 const struct an_progress *p, size_t n, uint64_t t_ns)
{
	struct an_progress *s;
	struct an_rank *r;
	uint64_t *tf;
	bool *mem;
	size_t i;

	an->stats.records++;
	if (!(r = an_rank_get(an, k, false)) || n > UINT32_MAX / 2)
		return;
	/* ops already seen keep their first sighting: the stream order */
	tf = calloc(n ? n : 1, sizeof(*tf));
	mem = calloc(n ? n : 1, sizeof(*mem));
	if (!tf || !mem) {
		free(tf);
		free(mem);
		return;
	}
	for (i = 0; i < n; i++) {
		tf[i] = first_seen(r->subs, r->nsubs, p[i].op, t_ns);
		/* first seen in a look at memory (now or by an earlier look) */
		mem[i] = tf[i] == t_ns || seen_in_memory(r->subs, r->nsubs, p[i].op);
	}
	/* nothing active (n 0) is a picture too: an empty array may be NULL */
	s = n ? an_grow(an, r->subs, &r->cap_subs, (uint32_t)n, sizeof(*s)) : r->subs;
	if (n && !s) {
		free(tf);
		free(mem);
		return;
	}
	r->subs = s;
	for (i = 0; i < n; i++) {
		s[i] = p[i];
		/* an op first seen in memory was launched while nobody watched */
		s[i].from_mem = mem[i];
		s[i].t_first = tf[i];
	}
	free(tf);
	free(mem);
	r->nsubs = (uint32_t)n;
	r->tierc = 1;
	r->mem_open = open_subs(r);
	/* a snapshot is a look, not progress: only the picture changes */
	an_comm_get(an, k->comm, 0, false)->version++;
}

/*
 * The proxy op id of a collective is collOpCount<<1 when it was launched
 * (NCCL's uploadProxyOps), seq is sum(seqNumber[]): both count launches.
 * While every collective of the comm has proxy work, their difference is
 * constant and maps op ids to seqs; a later look that shows another
 * difference (a collective without proxy work) turns the mapping off.
 */
static void learn_op_offset(struct an_rank *r, const struct an_launch *l)
{
	int64_t off;

	if (!l->has_coll_ops || l->ncoll < 0 || (uint64_t)l->ncoll < l->coll_ops ||
	    r->op_off_ok < 0)
		return;
	off = l->ncoll - (int64_t)l->coll_ops;
	if (r->op_off_ok == 0) {
		r->op_off = off;
		r->op_off_ok = 1;
	} else if (r->op_off != off) {
		r->op_off_ok = -1;
	}
}

void an_launched(struct an *an, const struct an_key *k, const struct an_launch *l,
		 uint64_t t_ns)
{
	struct an_comm *c;
	struct an_rank *r;
	bool first, moved = false;
	uint32_t i;

	an->stats.records++;
	if (!(r = an_rank_get(an, k, true)))
		return;
	c = an_comm_get(an, k->comm, 0, false);
	first = !r->mem;
	r->mem = 1;
	r->gone = 0;
	if (l->dead) {
		r->dead = 1;
	} else if (l->ncoll >= 0) {
		int64_t last = l->ncoll - 1;
		struct an_sig *sg;

		if (last > r->entered) {
			r->entered = last;
			moved = true;
			/* launched while nobody watched: no time, no arguments */
			r->mem_only = 1;
			sg = &r->hist[(uint64_t)last % AN_HIST];
			if (sg->seq != last) {
				memset(sg, 0, sizeof(*sg));
				sg->seq = last;
				sg->flags = SIG_MEM | SIG_RET;
			}
		}
		if (last > r->returned)
			r->returned = last;
		learn_op_offset(r, l);
		r->nfn = l->nfn < AN_SEQ_FNS ? (uint8_t)l->nfn : AN_SEQ_FNS;
		for (i = 0; i < r->nfn; i++)
			r->fn_launched[i] = l->per_fn[i];
	}
	if (first || moved) {
		progress(an, c, k->host, t_ns);
		c->mem_progress = true;
	} else {
		c->version++;
	}
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
	uint32_t i;

	an->stats.records++;
	if (host >= an->nhosts || kind < AN_LABEL_POD || kind > AN_LABEL_CONTAINER ||
	    !(i = proc_get(an, host, pid, true))) {
		an->stats.rejected++;
		return;
	}
	snprintf(an->procs[i - 1].label[kind - 1], AN_LABEL_MAX, "%s", value);
}

const struct an_proc *an_proc_find(const struct an *an, uint32_t host, uint32_t pid)
{
	uint32_t i = proc_get((struct an *)an, host, pid, false);

	return i ? &an->procs[i - 1] : NULL;
}

void an_proc_state(struct an *an, uint32_t host, uint32_t pid,
		   enum an_proc_state st, int exit_status, uint64_t t_ns)
{
	uint32_t i = proc_get(an, host, pid, false);
	struct hkey k;
	size_t it;
	void *v;

	an->stats.records++;
	if (!i) {
		an->stats.rejected++;
		return;
	}
	an->procs[i - 1].state = st;
	an->procs[i - 1].exit_status = exit_status;
	an->procs[i - 1].t_ns = t_ns;
	/* the picture of every comm of the process may change: rare event */
	for (it = 0; hmap_next(&an->comms, &it, &k, &v);)
		((struct an_comm *)v)->version++;
}
