// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Detection, run at every host clock: which comms have an op in flight with
 * no progress for stall_s (hang_s for barriers and for ops only inferred to
 * be in flight), how the stalled comms block each other (root vs cascade,
 * Mycroft 5.2), and the verdict stream: once per incident, an update when
 * the picture changes, a recovery when the stuck round moves.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "an_int.h"

struct node {
	struct an_comm *c;
	double quiet;		/* seconds since the comm's last progress */
	uint32_t qhost;		/* on this host's clock */
	uint64_t qlast;
	bool cand;		/* past its threshold */
	bool closed;		/* its open ranks' GPUs all execute it */
	bool held;		/* edge from the GPU hold graph */
	int edge;		/* the node that blocks this one, -1 */
};

/* the shortest time since progress over the comm's hosts, each on its own clock */
static double quiet_of(const struct an *an, const struct an_comm *c,
		       uint32_t *qhost, uint64_t *qlast)
{
	double best = INFINITY;
	uint32_t h;

	for (h = 0; h < c->nhost_last && h < an->nhosts; h++) {
		const struct an_host_st *hs = &an->hosts[h];
		double q;

		if (!c->host_last[h] || !hs->have_now)
			continue;
		q = hs->now > c->host_last[h] ?
			(double)(hs->now - c->host_last[h]) / 1e9 : 0;
		if (q < best) {
			best = q;
			*qhost = h;
			*qlast = c->host_last[h];
		}
	}
	return isfinite(best) ? best : 0;
}

void an_suspect_comm(struct an *an, struct an_comm *c, bool on, bool slow)
{
	struct an_suspect s = { .on = on, .slow = slow, .comm = c->hash };
	struct an_culprit *p = NULL;
	uint32_t h;
	int32_t i;

	if (slow)
		c->sampling = on;
	else
		c->suspected = on;
	/*
	 * Live, a suspected or sampled comm's processes get step hooks, which
	 * cost microseconds per step: rounds then, and for a second after, are
	 * not judged slow (replay keeps the same rule, so the same verdicts).
	 * An analyzer that cannot turn hooks on (no suspect sink: the fleet's)
	 * perturbs nothing; it sees others' hooks by their step records.
	 */
	if (on)
		an->nsuspected++;
	else if (an->nsuspected)
		an->nsuspected--;
	if (!an->sink.suspect)
		return;
	/* the processes it hooks: their comms' rounds are perturbed */
	for (i = 0; i < c->nranks; i++) {
		struct an_proc *pr = c->r[i].proc ? &an->procs[c->r[i].proc - 1] : NULL;

		if (!pr)
			continue;
		if (on) {
			pr->hooked++;
		} else if (pr->hooked) {
			pr->hooked--;
			h = pr->host;
			pr->perturbed_until = (h < an->nhosts ? an->hosts[h].now : 0) +
					      AN_PERTURB_NS;
		}
	}
	if (on) {
		p = calloc((size_t)c->nranks, sizeof(*p));
		if (!p)
			return;
		for (i = 0; i < c->nranks; i++) {
			const struct an_proc *pr = an_proc_of(an, &c->r[i]);

			if (!pr || c->r[i].gone)
				continue;
			p[s.nprocs].rank = i;
			p[s.nprocs].host = pr->host;
			p[s.nprocs].pid = pr->pid;
			s.nprocs++;
		}
	}
	s.procs = p;
	an->sink.suspect(an->sink.ctx, &s);
	free(p);
}

static void suspect(struct an *an, struct an_comm *c, bool on)
{
	an_suspect_comm(an, c, on, false);
}

static void emit(struct an *an, const struct an_verdict *v)
{
	if (v->kind == AN_V_RECOVERED)
		an->stats.recoveries++;
	else
		an->stats.verdicts++;
	if (an->sink.verdict)
		an->sink.verdict(an->sink.ctx, v);
}

static void recover(struct an *an, struct an_comm *c)
{
	struct an_verdict *v = &an->tmp;
	const struct an_host_st *h = &an->hosts[c->decl_host];

	*v = *c->last;
	v->kind = AN_V_RECOVERED;
	v->detected_ns = h->now;
	v->onset_ns = c->decl_onset;
	v->nval = 1;
	memset(&v->val[0], 0, sizeof(v->val[0]));
	v->val[0].key = "stalled_s";
	v->val[0].is_float = true;
	v->val[0].f = h->now > c->decl_onset ?
		      (double)(h->now - c->decl_onset) / 1e9 : 0;
	snprintf(v->text, sizeof(v->text), "comm %016llx got past seq %lld"
		 " after %.1f s without progress",
		 (unsigned long long)c->hash, (long long)c->decl_seq,
		 v->val[0].f);
	emit(an, v);
	c->declared = false;
	free(c->last);
	c->last = NULL;
}

static void build(struct an *an, struct node *n, struct node *blocker,
		  struct an_verdict *v)
{
	const struct an_status *st = &n->c->st;
	struct an_comm *c = n->c;
	uint32_t i;

	memset(v, 0, sizeof(*v));
	v->cls = st->cls;
	v->role = blocker ? AN_CASCADE : AN_ROOT;
	v->comm = c->hash;
	v->seq = st->seq;
	v->p2p = st->p2p;
	v->fn = st->fn;
	v->ncul_total = st->ncul;
	for (i = 0; i < st->ncul && i < AN_MAX_CULPRITS; i++) {
		const struct an_proc *p = an_proc_of(an, &c->r[st->cul[i]]);

		v->cul[i].rank = st->cul[i];
		v->cul[i].host = p ? p->host : 0;
		v->cul[i].pid = p ? p->pid : 0;
	}
	v->ncul = i;
	v->clock_host = c->declared ? c->decl_host : n->qhost;
	v->detected_ns = an->hosts[v->clock_host].now;
	v->onset_ns = c->declared ? c->decl_onset : n->qlast;
	v->t4 = st->t4;
	v->t4_remote = st->t4_remote;
	snprintf(v->text, sizeof(v->text), "%s", st->text);
	if (blocker) {
		size_t l = strlen(v->text);

		v->blocked_comm = blocker->c->hash;
		v->blocked_seq = blocker->c->st.seq;
		snprintf(v->text + l, sizeof(v->text) - l, "; a cascade: %s"
			 " blocked by comm %016llx seq %lld",
			 st->cls == AN_H1 ? "its culprits are" : "it is",
			 (unsigned long long)v->blocked_comm,
			 (long long)v->blocked_seq);
	}
	v->val[0].key = "stalled_s";
	v->val[0].is_float = true;
	v->val[0].f = v->detected_ns > v->onset_ns ?
		      (double)(v->detected_ns - v->onset_ns) / 1e9 : 0;
	v->nval = 1;
	for (i = 0; i < st->nval && v->nval < AN_MAX_EVIDENCE; i++)
		v->val[v->nval++] = st->val[i];
}

static bool changed(const struct an_verdict *a, const struct an_verdict *b)
{
	return a->cls != b->cls || a->role != b->role || a->seq != b->seq ||
	       a->ncul_total != b->ncul_total || a->ncul != b->ncul ||
	       memcmp(a->cul, b->cul, a->ncul * sizeof(a->cul[0])) ||
	       a->blocked_comm != b->blocked_comm ||
	       a->blocked_seq != b->blocked_seq || a->t4 != b->t4 ||
	       a->t4_remote != b->t4_remote;
}

/* a before b in time of stall: longer quiet, then the lower hash */
/*
 * When the comm's wait began: the first entry of its stuck round by a rank
 * that waits in it (0 unknown), on that rank's host clock.
 */
static uint64_t wait_began(const struct an_comm *c)
{
	const struct an_status *st = &c->st;
	uint64_t t = 0;
	uint32_t k;

	for (k = 0; k < st->nwait; k++) {
		const struct an_rank *r = &c->r[st->wait[k]];
		const struct an_sig *sg = &r->hist[(uint64_t)st->seq % AN_HIST];
		uint64_t e = 0;
		uint32_t i;
		int d;

		if (st->p2p) {
			for (i = 0; i < r->np2p; i++)
				for (d = 0; d < 2; d++)
					if (r->p2p[i].n[d] > r->p2p[i].ndone[d] &&
					    (!e || r->p2p[i].t_enter[d] < e))
						e = r->p2p[i].t_enter[d];
		} else if (st->seq >= 0 && sg->seq == st->seq) {
			e = sg->t_enter;
		}
		if (e && (!t || e < t))
			t = e;
	}
	return t;
}

/* the single H1 culprit's last call in C (its own clock), 0 unknown */
static uint64_t culprit_last_call(const struct an_comm *c, uint32_t *proc)
{
	const struct an_rank *r;
	const struct an_sig *sg;
	uint64_t t = 0;
	uint32_t i;
	int d;

	if (c->st.cls != AN_H1 || c->st.ncul != 1)
		return 0;
	r = &c->r[c->st.cul[0]];
	*proc = r->proc;
	sg = &r->hist[(uint64_t)(r->entered < 0 ? 0 : r->entered) % AN_HIST];
	if (r->entered >= 0 && sg->seq == r->entered)
		t = sg->t_enter;
	for (i = 0; i < r->np2p; i++)
		for (d = 0; d < 2; d++)
			if (r->p2p[i].n[d] && r->p2p[i].t_enter[d] > t)
				t = r->p2p[i].t_enter[d];
	return t;
}

static bool earlier(const struct node *a, const struct node *b)
{
	uint64_t ta = wait_began(a->c), tb = wait_began(b->c), la, lb;
	uint32_t pa = 0, pb = 0;

	/*
	 * Two comms that wait for the same missing rank (H1): in that rank's
	 * own program order, the comm it called longest ago is the one it
	 * would have called next (each comm once per iteration): where the
	 * hang began.  The other ranks' entries and progress records are on
	 * other clocks and come in any order.
	 */
	la = culprit_last_call(a->c, &pa);
	lb = culprit_last_call(b->c, &pb);
	if (la && lb && pa && pa == pb && la != lb)
		return la < lb;
	/*
	 * Both known only from the look at memory when ccld attached: their
	 * quiet times are the order they were read in, not when they
	 * stalled.  The one more ranks wait in is where the hang shows most.
	 */
	if (a->c->mem_progress && b->c->mem_progress) {
		if (a->c->st.nwait != b->c->st.nwait)
			return a->c->st.nwait > b->c->st.nwait;
		return a->c->hash < b->c->hash;
	}
	if (a->quiet != b->quiet)
		return a->quiet > b->quiet;
	if (ta && tb && ta != tb)
		return ta < tb;
	return a->c->hash < b->c->hash;
}

static bool any_down(const struct an *an, const struct an_comm *c)
{
	uint32_t i;

	for (i = 0; i < c->st.ncul; i++) {
		const struct an_proc *p = an_proc_of(an, &c->r[c->st.cul[i]]);

		if (p && p->state != AN_PROC_RUNNING)
			return true;
	}
	return false;
}

static int evidence_rank(const struct an_status *st);

/*
 * An H3 whose culprit's own data left and was never delivered: no
 * backpressure from another comm produces that state (the culprit waits on
 * no one), so it is as definite as a rank that never entered.
 */
static bool definite_h3(const struct an_status *st)
{
	return st->cls == AN_H3 &&
	       (st->net_global ||
		(st->t4 == AN_T4_NOT_DELIVERED && !st->t4_remote));
}

/* among MASK: the most definite evidence, then the one that stalled first */
static int pick(struct node *nodes, uint64_t mask)
{
	int best = -1, j;

	for (j = 0; j < AN_MAX_NODES; j++) {
		int ej, eb;

		if (!(mask >> j & 1))
			continue;
		if (best < 0) {
			best = j;
			continue;
		}
		ej = evidence_rank(&nodes[j].c->st);
		eb = evidence_rank(&nodes[best].c->st);
		if (ej != eb ? ej > eb : earlier(&nodes[j], &nodes[best]))
			best = j;
	}
	return best;
}

/*
 * The stuck round's cause is located: a rank missing or differing (H1, H2),
 * or progress data (tier B/C/E) narrowing H3 to fewer ranks than entered.
 * An H3 that lists every rank only says "stuck somewhere".
 */
static bool located(const struct an_status *st)
{
	return st->cls != AN_H3 || ((st->t4 != AN_T4_NONE || st->ncul < st->nwait) &&
				    !st->untouched);
}

/*
 * How definite a comm's cause is: ranks that called different ops (H2) can
 * never complete the round, whatever else happens; a rank that never
 * entered (H1) may itself be held elsewhere; an H3 narrowed by progress
 * data is likely; an H3 listing everyone is unknown.  Used where the
 * structure alone does not decide: "same culprits" links and cycles.
 */
static int evidence_rank(const struct an_status *st)
{
	if (st->cls == AN_H2)
		return 3;
	if (st->cls == AN_H1 || definite_h3(st))
		return 2;
	return located(st) ? 1 : 0;
}

/*
 * An H3 located by a state that backpressure from elsewhere also produces:
 * a GPU that does not produce or consume may be stuck in another comm's
 * kernel, a send not transmitted may wait for that GPU.  Only "not
 * delivered" (data left and the network never completed it) cannot be.
 */
static bool weak(const struct an_status *st)
{
	return st->cls == AN_H3 && st->t4 != AN_T4_NONE && st->t4 != AN_T4_NOT_DELIVERED;
}

static int root_of(const struct node *nodes, int nn, int i)
{
	int k;

	for (k = 0; k < nn && nodes[i].edge >= 0; k++)
		i = nodes[i].edge;
	return i;
}

/* nodes whose evidence is at least as definite as node I's */
static uint64_t as_definite(const struct node *nodes, int nn, int i)
{
	int want = evidence_rank(&nodes[i].c->st), j;
	uint64_t m = 0;

	for (j = 0; j < nn; j++)
		if (evidence_rank(&nodes[j].c->st) >= want)
			m |= 1ull << j;
	return m;
}

/*
 * A weak H3 left as a root beside a root with a definite cause, one of its
 * culprits also stuck (culprit or waiting) in that root's tree: it is part
 * of that incident, not a second one.
 */
static void merge_weak_roots(struct an *an, struct node *nodes, int nn)
{
	uint64_t tree[AN_MAX_NODES] = { 0 };
	int i, j, k;

	for (i = 0; i < nn; i++)
		tree[root_of(nodes, nn, i)] |= 1ull << i;
	for (i = 0; i < nn; i++) {
		const struct an_status *st = &nodes[i].c->st;
		struct an_comm *c = nodes[i].c;
		uint64_t in = 0, m = 0;

		if (nodes[i].edge >= 0 || nodes[i].closed || !weak(st))
			continue;
		for (k = 0; k < (int)st->ncul; k++) {
			uint32_t p = c->r[st->cul[k]].proc;

			if (p)
				in |= an->procs[p - 1].wmask | an->procs[p - 1].cmask;
		}
		for (j = 0; j < nn; j++)
			if (j != i && nodes[j].edge < 0 &&
			    evidence_rank(&nodes[j].c->st) >= 2 && (tree[j] & in))
				m |= 1ull << j;
		if (m)
			nodes[i].edge = pick(nodes, m);
	}
}

/* per process: stuck flows it is an end of, and in which nodes */
struct net_count {
	uint32_t *ends;
	uint64_t *nodes;
	int node;
};

static void count_end(struct net_count *nc, uint32_t proc, int node)
{
	if (!proc)
		return;
	nc->ends[proc - 1]++;
	nc->nodes[proc - 1] |= 1ull << node;
}

static void count_flow(void *ctx, struct an_comm *c, int32_t sender,
		       const struct an_progress *p, enum an_t4 t4)
{
	struct net_count *nc = ctx;

	(void)t4;
	count_end(nc, c->r[sender].proc, nc->node);
	if (p->peer >= 0 && p->peer < c->nranks && p->peer != sender)
		count_end(nc, c->r[p->peer].proc, nc->node);
}

static int popcount64(uint64_t m)
{
	return __builtin_popcountll(m);
}

/*
 * Data reached process PROC (index + 1) and waits for its GPU in a stalled
 * comm: its network delivers, so the flows it stops are its GPU's doing
 * (each comm's own Table-4 rule names that), not its NIC's.
 */
static bool holds_received(const struct node *nodes, int nn, uint32_t proc)
{
	int i;
	int32_t r;
	uint32_t k;

	for (i = 0; i < nn; i++) {
		const struct an_comm *c = nodes[i].c;

		for (r = 0; r < c->nranks; r++) {
			const struct an_rank *rk = &c->r[r];

			if (rk->proc != proc || rk->gone)
				continue;
			for (k = 0; k < rk->nsubs; k++)
				if (rk->subs[k].dir == AN_RECV &&
				    rk->subs[k].received > rk->subs[k].done &&
				    !(rk->subs[k].nsteps && rk->subs[k].done >= rk->subs[k].nsteps))
					return true;
		}
	}
	return false;
}

/*
 * Mycroft 5.3 across comms: a faulty NIC is an end of every flow it
 * stalls, in every comm its rank is in, while a comm seen alone may show
 * only one stuck flow with two ends (a pair), or a sender that waits for
 * the credit a dead receiver never sends.  The process that is the end of
 * the most stuck flows, strictly, in two comms or more, is the network
 * culprit: every stalled H3 comm where it is an end names it.  Returns its
 * process index + 1, 0 for none.
 */
static void net_narrow(struct an *an, struct node *nodes, int nn)
{
	struct net_count nc = { 0 };
	uint32_t best = 0, second = 0, p, np = an->nprocs;
	int i;

	if (!np)
		return;
	nc.ends = calloc(np, sizeof(*nc.ends));
	nc.nodes = calloc(np, sizeof(*nc.nodes));
	if (!nc.ends || !nc.nodes)
		goto out;
	for (i = 0; i < nn; i++) {
		if (nodes[i].c->st.cls != AN_H3)
			continue;
		nc.node = i;
		an_stuck_flows(an, nodes[i].c, count_flow, &nc);
	}
	for (p = 0; p < np; p++) {
		if (!best || nc.ends[p] > nc.ends[best - 1]) {
			second = best;
			best = p + 1;
		} else if (!second || nc.ends[p] > nc.ends[second - 1]) {
			second = p + 1;
		}
	}
	if (!best || nc.ends[best - 1] < 2 ||
	    popcount64(nc.nodes[best - 1]) < 2 ||
	    (second && nc.ends[second - 1] >= nc.ends[best - 1]) ||
	    holds_received(nodes, nn, best)) {
		goto out;
	}
	for (i = 0; i < nn; i++) {
		struct an_comm *c = nodes[i].c;
		int32_t r;

		if (!(nc.nodes[best - 1] >> i & 1))
			continue;
		for (r = 0; r < c->nranks; r++)
			if (c->r[r].proc == best &&
			    an_locate_net(an, c, r, nc.ends[best - 1],
					  (uint32_t)popcount64(nc.nodes[best - 1])))
				break;
		c->analyzed = 0;	/* its own picture first, next time */
	}
out:
	free(nc.ends);
	free(nc.nodes);
}

/*
 * The hold graph: a comm whose open rank's GPU executes another stalled
 * comm waits for that comm; a comm whose open ranks' GPUs all execute it is
 * where the incident is (closed: no other rule makes it a cascade).  An H1
 * whose culprits' GPUs are all held elsewhere waits there too (its CPU
 * waits for its GPU, e.g. in a stream synchronize).
 */
static void hold_edges(struct an *an, struct node *nodes, int nn)
{
	int i, k;

	for (i = 0; i < nn; i++) {
		const struct an_status *st = &nodes[i].c->st;
		struct an_comm *c = nodes[i].c;
		bool open = false, known = true;
		uint64_t m = 0;

		nodes[i].closed = nodes[i].held = false;
		if (any_down(an, c))
			continue;
		if (st->cls == AN_H1) {
			for (k = 0; k < (int)st->ncul; k++) {
				const struct an_proc *p = an_proc_of(an, &c->r[st->cul[k]]);

				if (!p || !p->gpu_known || !p->gpu_comm ||
				    p->gpu_comm == c || p->gpu_comm->node < 0) {
					m = 0;
					break;
				}
				m |= 1ull << p->gpu_comm->node;
			}
		} else if (st->cls == AN_H3) {
			int32_t r;

			for (r = 0; r < c->nranks; r++) {
				const struct an_proc *p = an_proc_of(an, &c->r[r]);
				uint64_t op, t;
				enum an_hold h = an_rank_pending(c, r, &op, &t);

				/* a rank open on a later op of this comm is ahead */
				if (h == AN_HOLD_NONE ||
				    ((h == AN_HOLD_OPEN || h == AN_HOLD_MEM || h == AN_HOLD_MEM_AT) &&
				     c->st.open_op && op != c->st.open_op))
					continue;
				if (h == AN_HOLD_UNKNOWN || !p || !p->gpu_known ||
				    !p->gpu_comm || p->gpu_comm->node < 0)
					known = false;
				else if (p->gpu_comm == c)
					open = true;
				else
					m |= 1ull << p->gpu_comm->node;
			}
		}
		if (m) {
			nodes[i].edge = pick(nodes, m);
			nodes[i].held = true;
		} else if (open && known) {
			nodes[i].edge = -1;
			nodes[i].closed = true;
		}
	}
}

/*
 * Where each process's GPU is: it runs the ops of its stream in the order
 * the CPU launched them, so among the stalled comms the oldest proxy op
 * with unfinished work holds its GPU, and every later one waits behind it
 * (Mycroft 5.2's dependency, ordered by the stream).  Unknown where ops it
 * entered earlier have no proxy data to say (intra-node comms); idle
 * (known, no comm) where nothing is pending.  Bumps an->gpu_gen on change,
 * so that comms are located again with the new picture.
 */
static void locate_gpus(struct an *an, struct an_comm **cs, int n)
{
	uint64_t *best_t, *unk_t, *mop, *aop;
	uint32_t p, np = an->nprocs ? an->nprocs : 1, *nmem, *nat;
	struct an_comm **gc, **mc, **ac;
	uint64_t *gop;
	bool changed = false;
	int i;

	best_t = calloc(np, sizeof(*best_t));
	unk_t = calloc(np, sizeof(*unk_t));
	gc = calloc(np, sizeof(*gc));
	gop = calloc(np, sizeof(*gop));
	nmem = calloc(np, sizeof(*nmem));
	mc = calloc(np, sizeof(*mc));
	mop = calloc(np, sizeof(*mop));
	nat = calloc(np, sizeof(*nat));
	ac = calloc(np, sizeof(*ac));
	aop = calloc(np, sizeof(*aop));
	if (!best_t || !unk_t || !gc || !gop || !nmem || !mc || !mop || !nat || !ac || !aop)
		goto out;
	for (i = 0; i < n; i++) {
		struct an_comm *c = cs[i];
		int32_t r;

		for (r = 0; r < c->nranks; r++) {
			uint64_t op, t;
			enum an_hold h = an_rank_pending(c, r, &op, &t);

			p = c->r[r].proc;
			if (an->debug && p)
				fprintf(stderr, "an: gpu? pid %u comm %016llx h %d op %llx t %llu tierb %d\n",
					an->procs[p - 1].pid, (unsigned long long)c->hash, h,
					(unsigned long long)op, (unsigned long long)(t % 100000000000ull),
					c->r[r].tierb);
			if (!p || h == AN_HOLD_NONE)
				continue;
			if (h == AN_HOLD_MEM || h == AN_HOLD_MEM_AT) {
				nmem[p - 1]++;
				mc[p - 1] = c;
				mop[p - 1] = op;
				if (h == AN_HOLD_MEM_AT) {
					nat[p - 1]++;
					ac[p - 1] = c;
					aop[p - 1] = op;
				}
			} else if (h == AN_HOLD_UNKNOWN) {
				if (!unk_t[p - 1] || t < unk_t[p - 1])
					unk_t[p - 1] = t;
			} else if (!best_t[p - 1] || t < best_t[p - 1] ||
				   (t == best_t[p - 1] && op < gop[p - 1])) {
				best_t[p - 1] = t;
				gc[p - 1] = c;
				gop[p - 1] = op;
			}
		}
	}
	for (p = 0; p < an->nprocs; p++) {
		struct an_proc *pr = &an->procs[p];
		bool known = !unk_t[p] || (best_t[p] && unk_t[p] > best_t[p]);

		/*
		 * Ops seen only in a look at memory have no launch time: the
		 * GPU is at the one such op when it is all there is, and
		 * unknown among several.
		 */
		if (nmem[p] == 1 && !best_t[p] && !unk_t[p]) {
			gc[p] = mc[p];
			gop[p] = mop[p];
		} else if (nat[p] == 1 && !best_t[p] && !unk_t[p]) {
			/* of several, the one its flows show it executes */
			gc[p] = ac[p];
			gop[p] = aop[p];
		} else if (nmem[p]) {
			known = false;
		}
		if (!known)
			gc[p] = NULL, gop[p] = 0;
		changed |= pr->gpu_known != known || pr->gpu_comm != gc[p] ||
			   pr->gpu_op != gop[p];
		pr->gpu_known = known;
		pr->gpu_comm = gc[p];
		pr->gpu_op = gop[p];
	}
	if (changed)
		an->gpu_gen++;
out:
	free(best_t);
	free(unk_t);
	free(gc);
	free(gop);
	free(nmem);
	free(mc);
	free(mop);
	free(nat);
	free(ac);
	free(aop);
}

static void link_nodes(struct an *an, struct node *nodes, int nn)
{
	uint64_t located_mask = 0;
	int i, j, k, pass;

	for (i = 0; i < nn; i++) {
		const struct an_status *st = &nodes[i].c->st;
		struct an_comm *c = nodes[i].c;

		for (k = 0; k < (int)st->nwait; k++)
			if (c->r[st->wait[k]].proc)
				an->procs[c->r[st->wait[k]].proc - 1].wmask = 0;
		for (k = 0; k < (int)st->ncul; k++)
			if (c->r[st->cul[k]].proc)
				an->procs[c->r[st->cul[k]].proc - 1].cmask = 0;
	}
	for (i = 0; i < nn; i++) {
		const struct an_status *st = &nodes[i].c->st;
		struct an_comm *c = nodes[i].c;

		for (k = 0; k < (int)st->nwait; k++)
			if (c->r[st->wait[k]].proc)
				an->procs[c->r[st->wait[k]].proc - 1].wmask |= 1ull << i;
		for (k = 0; k < (int)st->ncul; k++)
			if (c->r[st->cul[k]].proc)
				an->procs[c->r[st->cul[k]].proc - 1].cmask |= 1ull << i;
	}
	for (i = 0; i < nn; i++)
		if (located(&nodes[i].c->st))
			located_mask |= 1ull << i;
	/*
	 * blocked: every culprit of C waits inside D's stuck round (not a
	 * D whose op started nowhere: it queues behind something else)
	 */
	for (i = 0; i < nn; i++) {
		const struct an_status *st = &nodes[i].c->st;
		struct an_comm *c = nodes[i].c;
		uint64_t m = ~(1ull << i);

		for (j = 0; j < nn; j++)
			if (nodes[j].c->st.untouched)
				m &= ~(1ull << j);

		nodes[i].edge = -1;
		if (!st->ncul || st->ncul > AN_EDGE_MAX_CUL || any_down(an, c) ||
		    definite_h3(st))
			continue;
		for (k = 0; k < (int)st->ncul && m; k++) {
			uint32_t p = c->r[st->cul[k]].proc;

			m &= p ? an->procs[p - 1].wmask : 0;
		}
		nodes[i].edge = pick(nodes, m);
	}
	hold_edges(an, nodes, nn);
	/*
	 * A comm stuck with no located cause (H3, no progress data), one of
	 * whose waiting ranks also waits in a comm with a located cause: that
	 * comm explains it (e.g. a rank skipped a TP all-reduce; its partner's
	 * GPU stream is stuck there, so the world all-reduce queued behind it
	 * never runs).
	 */
	for (i = 0; i < nn; i++) {
		const struct an_status *st = &nodes[i].c->st;
		struct an_comm *c = nodes[i].c;
		uint64_t m = 0;

		if ((located_mask >> i & 1) || nodes[i].closed || nodes[i].held)
			continue;
		for (k = 0; k < (int)st->nwait; k++) {
			uint32_t p = c->r[st->wait[k]].proc;

			if (p)
				m |= an->procs[p - 1].wmask;
		}
		m &= located_mask & ~(1ull << i);
		if (m)
			nodes[i].edge = pick(nodes, m);
	}
	/*
	 * A weak H3 whose culprit waits in a comm with a definite cause (H1,
	 * H2): its GPU is held there (a rank skipped a TP all-reduce: its
	 * partner's stream is stuck in it, so the world op behind never sends).
	 */
	for (i = 0; i < nn; i++) {
		const struct an_status *st = &nodes[i].c->st;
		struct an_comm *c = nodes[i].c;
		uint64_t m = 0;

		if (nodes[i].edge >= 0 || nodes[i].closed || !weak(st))
			continue;
		for (k = 0; k < (int)st->ncul; k++) {
			uint32_t p = c->r[st->cul[k]].proc;

			if (p)
				m |= an->procs[p - 1].wmask;
		}
		for (j = 0; j < nn; j++)
			if (evidence_rank(&nodes[j].c->st) < 2 || j == i)
				m &= ~(1ull << j);
		if (m)
			nodes[i].edge = pick(nodes, m);
	}
	/* the same culprits: the comm that stalled first is the root */
	for (i = 0; i < nn; i++) {
		const struct an_status *st = &nodes[i].c->st;
		struct an_comm *c = nodes[i].c;
		uint64_t m = 0;

		if (nodes[i].edge >= 0 || nodes[i].closed ||
		    st->ncul > AN_EDGE_MAX_CUL)
			continue;
		for (k = 0; k < (int)st->ncul; k++) {
			uint32_t p = c->r[st->cul[k]].proc;

			m |= p ? an->procs[p - 1].cmask : 0;
		}
		m &= ~(1ull << i) & as_definite(nodes, nn, i);
		for (j = 0; j < nn; j++)
			if ((m >> j & 1) && !earlier(&nodes[j], &nodes[i]))
				m &= ~(1ull << j);
		nodes[i].edge = pick(nodes, m);
	}
	/*
	 * cycles (ordering deadlocks): the comm that stalled first is the
	 * root, among those with the most definite evidence in the cycle
	 */
	for (pass = 0; pass < nn; pass++) {
		bool cut = false;

		for (i = 0; i < nn && !cut; i++) {
			int x = i, best;

			for (k = 0; k < nn && x >= 0; k++)
				x = nodes[x].edge;
			if (x < 0)
				continue;
			best = x;
			for (j = nodes[x].edge; j != x; j = nodes[j].edge) {
				int ej = evidence_rank(&nodes[j].c->st);
				int eb = evidence_rank(&nodes[best].c->st);

				if (ej != eb ? ej > eb : earlier(&nodes[j], &nodes[best]))
					best = j;
			}
			nodes[best].edge = -1;
			cut = true;
		}
		if (!cut)
			break;
	}
	merge_weak_roots(an, nodes, nn);
}

/* CCLD_AN_DEBUG: the picture behind the verdicts, on stderr */
static void debug_nodes(const struct an *an, const struct node *nodes, int nn)
{
	int i;

	for (i = 0; i < nn; i++) {
		const struct an_comm *c = nodes[i].c;
		int32_t r;
		uint32_t k;

		fprintf(stderr, "an: node %d comm %016llx seq %lld cls %d cul %u edge %d%s%s open_op %llx quiet %.2f\n",
			i, (unsigned long long)c->hash, (long long)c->st.seq, c->st.cls,
			c->st.ncul, nodes[i].edge, nodes[i].closed ? " closed" : "",
			nodes[i].held ? " held" : "", (unsigned long long)c->st.open_op,
			nodes[i].quiet);
		fprintf(stderr, "an:   wait");
		for (k = 0; k < c->st.nwait; k++)
			fprintf(stderr, " %d", c->st.wait[k]);
		fprintf(stderr, " cul");
		for (k = 0; k < c->st.ncul; k++)
			fprintf(stderr, " %d", c->st.cul[k]);
		fprintf(stderr, "\n");
		for (r = 0; r < c->nranks; r++) {
			const struct an_rank *rk = &c->r[r];
			const struct an_proc *p = an_proc_of(an, rk);

			fprintf(stderr, "an:   rank %d pid %u entered %lld completed %lld gpu %s%016llx/%llx\n",
				r, p ? p->pid : 0, (long long)rk->entered, (long long)rk->completed,
				p && p->gpu_known ? "" : "?",
				p && p->gpu_comm ? (unsigned long long)p->gpu_comm->hash : 0ull,
				p ? (unsigned long long)p->gpu_op : 0ull);
			for (k = 0; k < rk->nsubs; k++) {
				const struct an_progress *q = &rk->subs[k];

				fprintf(stderr, "an:     op %llx t %llu %s peer %d ch %d %llu/%llu/%llu/%llu of %llu\n",
					(unsigned long long)q->op, (unsigned long long)(q->t_first % 100000000000ull),
					q->dir == AN_SEND ? "send" : "recv", q->peer, q->channel,
					(unsigned long long)q->posted, (unsigned long long)q->transmitted,
					(unsigned long long)q->received, (unsigned long long)q->done,
					(unsigned long long)q->nsteps);
			}
		}
	}
}

static void evaluate(struct an *an)
{
	struct node nodes[AN_MAX_NODES];
	double sus = an->cfg.stall_s * an->cfg.suspect_frac;
	struct hkey key;
	size_t it;
	void *v;
	int nn = 0, i;

	struct an_comm *cs[AN_MAX_NODES];
	int ncs = 0, j;

	/* the comms in or near an incident, then where each GPU is */
	for (it = 0; hmap_next(&an->comms, &it, &key, &v);) {
		struct an_comm *c = v;
		uint32_t qh;
		uint64_t ql;

		c->node = -1;
		if ((c->declared || c->suspected ||
		     quiet_of(an, c, &qh, &ql) >= sus) && ncs < AN_MAX_NODES)
			cs[ncs++] = c;
	}
	locate_gpus(an, cs, ncs);
	for (j = 0; j < ncs; j++) {
		struct an_comm *c = cs[j];
		struct node n = { .c = c, .edge = -1 };
		struct an_status *st = &c->st;
		bool pending;
		double thr;

		n.quiet = quiet_of(an, c, &n.qhost, &n.qlast);
		if (c->analyzed != c->version || c->gpu_gen != an->gpu_gen)
			an_locate(an, c);
		if (c->declared && (st->strength == ST_NONE ||
				    st->seq != c->decl_seq ||
				    st->p2p != c->decl_p2p))
			recover(an, c);
		thr = st->strength == ST_STRONG && !st->barrier ?
		      an->cfg.stall_s : an->cfg.hang_s;
		n.cand = st->strength != ST_NONE &&
			 (n.quiet >= thr ||
			  (double)st->max_call_age_ns / 1e9 >= an->cfg.hang_s);
		/* the cached picture may be from the suspect time: ages moved */
		if (n.cand && !c->declared)
			an_locate(an, c);
		pending = st->strength == ST_STRONG && n.quiet >= sus;
		if (pending && !st->barrier && !c->suspected)
			suspect(an, c, true);
		else if (c->suspected && !c->declared && !pending)
			suspect(an, c, false);
		if ((n.cand || pending || c->declared) && nn < AN_MAX_NODES) {
			c->node = nn;
			nodes[nn++] = n;
		}
	}
	if (!nn)
		return;
	net_narrow(an, nodes, nn);
	link_nodes(an, nodes, nn);
	if (an->debug)
		debug_nodes(an, nodes, nn);
	/* roots first, then their cascades: a reader sees the cause first */
	for (i = 0; i < 2 * nn; i++) {
		struct node *n = &nodes[i % nn];
		struct an_comm *c = n->c;
		int root = i % nn, k;

		if ((i < nn) != (n->edge < 0))
			continue;
		if (!n->cand && !c->declared)
			continue;
		for (k = 0; k < nn && nodes[root].edge >= 0; k++)
			root = nodes[root].edge;
		/* waiting on a barrier that is not (yet) a hang: no verdict */
		if (nodes[root].c->st.barrier && !nodes[root].cand)
			continue;
		build(an, n, n->edge >= 0 ? &nodes[n->edge] : NULL, &an->tmp);
		an_hw_note(an, &an->tmp);
		an_net_note(an, c, &an->tmp);
		if (!c->declared) {
			c->last = malloc(sizeof(*c->last));
			if (!c->last)
				continue;
			c->declared = true;
			c->decl_seq = c->st.seq;
			c->decl_p2p = c->st.p2p;
			c->decl_host = n->qhost;
			c->decl_onset = n->qlast;
			an->tmp.kind = AN_V_NEW;
		} else if (changed(c->last, &an->tmp)) {
			an->tmp.kind = AN_V_UPDATE;
		} else {
			continue;
		}
		*c->last = an->tmp;
		emit(an, &an->tmp);
	}
}

void an_clock(struct an *an, uint32_t host, uint64_t now_ns)
{
	struct an_host_st *h;

	an->stats.records++;
	if (host >= an->nhosts) {
		an->stats.rejected++;
		return;
	}
	h = &an->hosts[host];
	if (h->have_now && now_ns < h->now)
		return;		/* monotonic: an older tick changes nothing */
	h->now = now_ns;
	h->have_now = true;
	evaluate(an);
	an_slow_clock(an, host, now_ns);
}
