/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Synthetic jobs for the analyzer tests: global ranks g = 0..N-1 are
 * processes pid 100+g (on host "h<g / per_host>"), communicators list their
 * global ranks, and a clock ticks every 250 ms on every host the way the
 * tracer does.  Verdicts and suspect requests are collected for checks.
 */
#ifndef TEST_AN_HELPERS_H
#define TEST_AN_HELPERS_H

#include <stdlib.h>
#include <string.h>
#include "analyzer.h"
#include <linux/types.h>
#include "ccld.h"
#include "check.h"
#include "json.h"

#define SIM_MAX_V	64
#define SIM_MAX_COMMS	16
#define SIM_MAX_G	64
#define SIM_TICK_NS	250000000ull
#define SEC		1000000000ull

struct sim_comm {
	uint64_t hash;
	int n;
	int g[SIM_MAX_G];		/* global rank of each comm rank */
	int64_t next[SIM_MAX_G];	/* next collective seq per rank */
	int64_t p2p[SIM_MAX_G][SIM_MAX_G][2];	/* next p2p seq [rank][peer][recv] */
};

struct sim {
	struct an *an;
	struct an_config cfg;
	int nhosts;
	int per_host;
	uint32_t host_id[8];
	uint64_t now[8];		/* each host's clock: deliberately apart */
	struct sim_comm c[SIM_MAX_COMMS];
	int nc;
	struct an_verdict v[SIM_MAX_V];
	int nv;
	int nsuspect_on, nsuspect_off;
	uint64_t suspect_comm;
	uint32_t suspect_nprocs;	/* the latest hooks on: how many processes */
	int32_t suspect_rank0;		/* ... the first one's rank */
};

static inline void sim_verdict_cb(void *ctx, const struct an_verdict *v)
{
	struct sim *s = ctx;

	if (s->nv < SIM_MAX_V)
		s->v[s->nv++] = *v;
}

static inline void sim_suspect_cb(void *ctx, const struct an_suspect *sp)
{
	struct sim *s = ctx;

	if (sp->on) {
		s->nsuspect_on++;
		s->suspect_comm = sp->comm;
		s->suspect_nprocs = sp->nprocs;
		s->suspect_rank0 = sp->nprocs ? sp->procs[0].rank : -1;
	} else {
		s->nsuspect_off++;
	}
}

/*
 * hosts: how many hosts the global ranks are spread over (in blocks);
 * hooks: the analyzer can turn step hooks on (a tracer's), else it only
 * reads what others recorded (the fleet analyzer's: no suspect sink)
 */
static inline void sim_init_sink(struct sim *s, double stall_s, double hang_s,
				 int nhosts, int per_host, bool hooks)
{
	struct an_sink sink = { s, sim_verdict_cb, hooks ? sim_suspect_cb : NULL };
	char name[16];
	int h;

	memset(s, 0, sizeof(*s));
	an_config_default(&s->cfg);
	s->cfg.stall_s = stall_s;
	s->cfg.hang_s = hang_s;
	/* CCL-D's plain repeat rule: the tests count iterations 10-20 ms
	 * apart; the minimum wall time has its own tests (test_an_slow) */
	s->cfg.slow_min_s = 0;
	s->an = an_new(&s->cfg, &sink);
	CHECK(s->an != NULL);
	s->nhosts = nhosts;
	s->per_host = per_host;
	for (h = 0; h < nhosts; h++) {
		snprintf(name, sizeof(name), "h%d", h);
		s->host_id[h] = (uint32_t)an_host(s->an, name);
		/* unrelated monotonic clocks: boot times differ by hours */
		s->now[h] = (uint64_t)(h + 1) * 3600 * SEC + h * 12345;
		an_clock(s->an, s->host_id[h], s->now[h]);
	}
}

static inline void sim_init_hosts(struct sim *s, double stall_s, double hang_s,
				  int nhosts, int per_host)
{
	sim_init_sink(s, stall_s, hang_s, nhosts, per_host, true);
}

static inline void sim_init(struct sim *s, double stall_s, double hang_s)
{
	sim_init_hosts(s, stall_s, hang_s, 1, 1 << 30);
}

static inline void sim_fini(struct sim *s)
{
	an_free(s->an);
}

static inline int sim_host(const struct sim *s, int g)
{
	return g / s->per_host;
}

static inline struct sim_comm *sim_find(struct sim *s, uint64_t hash)
{
	int i;

	for (i = 0; i < s->nc; i++)
		if (s->c[i].hash == hash)
			return &s->c[i];
	abort();
}

static inline struct an_key sim_key(struct sim *s, struct sim_comm *c, int r)
{
	struct an_key k = {
		.host = s->host_id[sim_host(s, c->g[r])],
		.pid = 100 + (uint32_t)c->g[r],
		.comm = c->hash,
		.rank = r,
		.nranks = c->n,
	};
	return k;
}

static inline uint64_t sim_now(struct sim *s, struct sim_comm *c, int r)
{
	return s->now[sim_host(s, c->g[r])];
}

static inline void sim_comm(struct sim *s, uint64_t hash, int n, const int *g)
{
	struct sim_comm *c = &s->c[s->nc++];
	int r;

	memset(c, 0, sizeof(*c));
	c->hash = hash;
	c->n = n;
	for (r = 0; r < n; r++) {
		struct an_key k;

		c->g[r] = g ? g[r] : r;
		k = sim_key(s, c, r);
		CHECK_INT(an_rank(s->an, &k, 0, sim_now(s, c, r)), 0);
	}
}

static inline struct an_op sim_op(struct sim *s, struct sim_comm *c, int r, int fn,
			   uint64_t count, int dtype)
{
	struct an_op op = {
		.k = sim_key(s, c, r),
		.tid = 100 + (uint32_t)c->g[r],
		.fn = fn,
		.seq = c->next[r],
		.count = count,
		.dtype = (uint8_t)dtype,
		.redop = fn == CCLD_FN_ALLREDUCE || fn == CCLD_FN_REDUCE ||
			 fn == CCLD_FN_REDUCESCATTER ? 0 : 0xff,
		.root = fn == CCLD_FN_BROADCAST || fn == CCLD_FN_REDUCE ? 0 : -1,
		.peer = -1,
		.t_ns = sim_now(s, c, r),
	};
	return op;
}

/* rank R enters its next collective; returns the op (seq assigned) */
static inline struct an_op sim_enter_op(struct sim *s, uint64_t hash, int r, int fn,
				 uint64_t count, int dtype)
{
	struct sim_comm *c = sim_find(s, hash);
	struct an_op op = sim_op(s, c, r, fn, count, dtype);

	c->next[r]++;
	an_op_enter(s->an, &op);
	return op;
}

/* enter + return (the async enqueue of a real NCCL call) */
static inline struct an_op sim_call(struct sim *s, uint64_t hash, int r, int fn,
			     uint64_t count, int dtype)
{
	struct an_op op = sim_enter_op(s, hash, r, fn, count, dtype);

	an_op_return(s->an, &op, 0, op.t_ns + 20000);
	return op;
}

static inline void sim_complete(struct sim *s, const struct an_op *op)
{
	an_op_complete(s->an, op, s->now[sim_host(s, (int)op->k.pid - 100)]);
}

/*
 * p2p: rank R sends (recv=0) or receives (recv=1) from PEER; FROM_ATTACH:
 * its count started at ccld's attach, not at the comm's creation
 */
static inline struct an_op sim_p2p_op(struct sim *s, uint64_t hash, int r, int peer,
				      int recv, uint64_t count, bool ret, bool from_attach)
{
	struct sim_comm *c = sim_find(s, hash);
	struct an_op op = sim_op(s, c, r, recv ? CCLD_FN_RECV : CCLD_FN_SEND,
				 count, 7);

	op.peer = peer;
	op.seq = c->p2p[r][peer][recv]++;
	op.seq_from_attach = from_attach;
	an_op_enter(s->an, &op);
	if (ret)
		an_op_return(s->an, &op, 0, op.t_ns + 20000);
	return op;
}

static inline struct an_op sim_p2p(struct sim *s, uint64_t hash, int r, int peer,
			    int recv, uint64_t count, bool ret)
{
	return sim_p2p_op(s, hash, r, peer, recv, count, ret, false);
}

/* a p2p call counted from the attach; it returns at once */
static inline struct an_op sim_p2p_attach(struct sim *s, uint64_t hash, int r,
					  int peer, int recv, uint64_t count)
{
	return sim_p2p_op(s, hash, r, peer, recv, count, true, true);
}

/*
 * A look at rank R of comm HASH's memory: it launched NCOLL collectives
 * (all AllReduce), each with proxy work (an_launched)
 */
static inline void sim_launched(struct sim *s, uint64_t hash, int r, int64_t ncoll)
{
	struct sim_comm *c = sim_find(s, hash);
	struct an_key k = sim_key(s, c, r);
	struct an_launch l = { .ncoll = ncoll, .has_coll_ops = true,
			       .coll_ops = (uint64_t)ncoll, .nfn = 5 };

	l.per_fn[4] = (uint64_t)ncoll;
	an_launched(s->an, &k, &l, sim_now(s, c, r));
}

/* one healthy round of a collective on every rank, GPU completion included */
static inline void sim_round(struct sim *s, uint64_t hash, int fn, uint64_t count,
		      int dtype)
{
	struct sim_comm *c = sim_find(s, hash);
	struct an_op ops[SIM_MAX_G];
	int r;

	for (r = 0; r < c->n; r++)
		ops[r] = sim_call(s, hash, r, fn, count, dtype);
	for (r = 0; r < c->n; r++)
		sim_complete(s, &ops[r]);
}

/* advances every host's clock by SECS in 250 ms ticks */
static inline void sim_tick(struct sim *s, double secs)
{
	uint64_t end = (uint64_t)(secs * 1e9 + 0.5), t;
	int h;

	for (t = 0; t < end; t += SIM_TICK_NS)
		for (h = 0; h < s->nhosts; h++) {
			s->now[h] += SIM_TICK_NS;
			an_clock(s->an, s->host_id[h], s->now[h]);
		}
}

/* advances the clocks by 10 ms (between ops of healthy rounds) */
static inline void sim_step(struct sim *s, uint64_t ns)
{
	int h;

	for (h = 0; h < s->nhosts; h++)
		s->now[h] += ns;
}

static inline int sim_count(const struct sim *s, enum an_vkind kind)
{
	int i, n = 0;

	for (i = 0; i < s->nv; i++)
		n += s->v[i].kind == kind;
	return n;
}

static inline const struct an_verdict *sim_find_v(const struct sim *s, uint64_t comm,
					   enum an_vkind kind)
{
	int i;

	for (i = 0; i < s->nv; i++)
		if (s->v[i].comm == comm && s->v[i].kind == kind)
			return &s->v[i];
	return NULL;
}

/* "1,3" */
static inline const char *sim_culprits(const struct an_verdict *v)
{
	static char buf[256];
	size_t n = 0;
	uint32_t i;

	buf[0] = '\0';
	for (i = 0; i < v->ncul && n < sizeof(buf) - 16; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%d",
				      i ? "," : "", v->cul[i].rank);
	return buf;
}

static inline const struct an_value *sim_val(const struct an_verdict *v,
				      const char *key)
{
	uint32_t i;

	for (i = 0; i < v->nval; i++)
		if (!strcmp(v->val[i].key, key))
			return &v->val[i];
	return NULL;
}

/* KEY's value when it is an integer (-1 otherwise) / a string (NULL) */
static inline int64_t sim_val_i(const struct an_verdict *v, const char *key)
{
	const struct an_value *x = sim_val(v, key);

	return x && !x->is_str ? x->i : -1;
}

static inline const char *sim_val_s(const struct an_verdict *v, const char *key)
{
	const struct an_value *x = sim_val(v, key);

	return x && x->is_str ? x->s : NULL;
}

/* the last verdict of class CLS, NULL: none */
static inline const struct an_verdict *sim_last_cls(const struct sim *s, enum an_class cls)
{
	const struct an_verdict *v = NULL;
	int i;

	for (i = 0; i < s->nv; i++)
		if (s->v[i].cls == cls)
			v = &s->v[i];
	return v;
}

/*
 * Comm HASH (4 ranks): 4 clean all-reduce rounds, then rank RANK's GPU
 * never finishes seq 4 while the others do, and every rank enters seq 5
 * (test_an_h3's tier B case: an H3 once the stall threshold passes).
 */
static inline void sim_gpu_hang(struct sim *s, uint64_t hash, int rank)
{
	int i, r;

	for (i = 0; i < 4; i++) {
		sim_round(s, hash, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_step(s, 10000000);
	}
	for (r = 0; r < 4; r++) {
		struct an_op op = sim_call(s, hash, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);

		if (r != rank)
			sim_complete(s, &op);
	}
	for (r = 0; r < 4; r++)
		sim_call(s, hash, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
}

/* detection within stall_s + one tick of the last progress */
static inline void check_latency(const struct an_verdict *v, double thresh_s)
{
	double d = (double)(v->detected_ns - v->onset_ns) / 1e9;

	CHECK(d >= thresh_s);
	CHECK(d <= thresh_s + 0.25 + 1e-9);
}

#endif
