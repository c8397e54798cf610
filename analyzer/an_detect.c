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

static void suspect(struct an *an, struct an_comm *c, bool on)
{
	struct an_suspect s = { .on = on, .comm = c->hash };
	struct an_culprit *p = NULL;
	int32_t i;

	c->suspected = on;
	if (!an->sink.suspect)
		return;
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
static bool earlier(const struct node *a, const struct node *b)
{
	if (a->quiet != b->quiet)
		return a->quiet > b->quiet;
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
	return st->cls != AN_H3 || st->t4 != AN_T4_NONE || st->ncul < st->nwait;
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
	if (st->cls == AN_H1)
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

		if (nodes[i].edge >= 0 || !weak(st))
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
	/* blocked: every culprit of C waits inside D's stuck round */
	for (i = 0; i < nn; i++) {
		const struct an_status *st = &nodes[i].c->st;
		struct an_comm *c = nodes[i].c;
		uint64_t m = ~(1ull << i);

		nodes[i].edge = -1;
		if (!st->ncul || st->ncul > AN_EDGE_MAX_CUL || any_down(an, c))
			continue;
		for (k = 0; k < (int)st->ncul && m; k++) {
			uint32_t p = c->r[st->cul[k]].proc;

			m &= p ? an->procs[p - 1].wmask : 0;
		}
		nodes[i].edge = pick(nodes, m);
	}
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

		if (located_mask >> i & 1)
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

		if (nodes[i].edge >= 0 || !weak(st))
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

		if (nodes[i].edge >= 0 || st->ncul > AN_EDGE_MAX_CUL)
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

static void evaluate(struct an *an)
{
	struct node nodes[AN_MAX_NODES];
	double sus = an->cfg.stall_s * an->cfg.suspect_frac;
	struct hkey key;
	size_t it;
	void *v;
	int nn = 0, i;

	for (it = 0; hmap_next(&an->comms, &it, &key, &v);) {
		struct an_comm *c = v;
		struct node n = { .c = c, .edge = -1 };
		struct an_status *st = &c->st;
		bool pending;
		double thr;

		c->node = -1;
		n.quiet = quiet_of(an, c, &n.qhost, &n.qlast);
		if (!c->declared && !c->suspected && n.quiet < sus)
			continue;
		if (c->analyzed != c->version)
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
	link_nodes(an, nodes, nn);
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
}
