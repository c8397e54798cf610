// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Detection, run at every host clock: which comms have an op in flight with
 * no progress for stall_s (hang_s for barriers and for ops only inferred to
 * be in flight), and the verdict stream: once per incident, an update when
 * the picture changes, a recovery when the stuck round moves.  How the
 * stalled comms block each other (root vs cascade): an_cascade.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "an_config.h"
#include "an_detect_int.h"

/*
 * The shortest time since progress over the comm's hosts, each on its own
 * clock.  A silent host's clock stopped with its records: its side would
 * keep a comm it shares with live hosts fresh for ever (a node that died
 * whole), so only live hosts count; a comm on silent hosts only is not
 * judged.
 */
static double quiet_of(const struct an *an, const struct an_comm *c,
		       uint32_t *qhost, uint64_t *qlast)
{
	double best = INFINITY;
	uint32_t h;

	for (h = 0; h < c->nhost_last && h < an->nhosts; h++) {
		const struct an_host_st *hs = &an->hosts[h];
		double q;

		if (!c->host_last[h] || !hs->have_now || hs->silent)
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

/* step hooks on (ON) or off for process PR: its comms' rounds are perturbed */
static void hook_count(struct an *an, struct an_proc *pr, bool on, uint32_t host,
		       uint64_t t_ns)
{
	uint32_t h = pr->host;

	if (on) {
		/*
		 * A round that ended before this ran without hooks: its
		 * records may still be on their way.
		 */
		if (!pr->hooked++)
			pr->hooked_since = h == host && t_ns ? t_ns :
					   h < an->nhosts ? an->hosts[h].now : 0;
	} else if (pr->hooked) {
		pr->hooked--;
		pr->perturbed_until = (h < an->nhosts ? an->hosts[h].now : 0) + AN_PERTURB_NS;
	}
}

void an_suspect_comm(struct an *an, struct an_comm *c, bool on, bool slow, uint32_t host,
		     uint64_t t_ns)
{
	struct an_suspect s = { .on = on, .slow = slow, .comm = c->hash };
	/* a slow sample's processes beyond the comm's own (an_slow_sample.c) */
	uint32_t nextra = slow ? c->nsamp_extra : 0, j;
	struct an_culprit *p = NULL;
	int32_t i;

	if (slow)
		c->sampling = on;
	else
		c->suspected = on;
	if (slow && !on)
		c->nsamp_extra = 0;
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
	for (i = 0; i < c->nranks; i++)
		if (c->r[i].proc && (!slow || an_slow_rank_sampled(c, i)))
			hook_count(an, &an->procs[c->r[i].proc - 1], on, host, t_ns);
	for (j = 0; j < nextra; j++)
		hook_count(an, &an->procs[c->samp_extra[j] - 1], on, host, t_ns);
	if (on) {
		p = calloc((size_t)c->nranks + nextra, sizeof(*p));
		if (!p)
			return;
		for (i = 0; i < c->nranks; i++) {
			const struct an_proc *pr = an_proc_of(an, &c->r[i]);

			if (!pr || c->r[i].gone || (slow && !an_slow_rank_sampled(c, i)))
				continue;
			p[s.nprocs].rank = i;
			p[s.nprocs].host = pr->host;
			p[s.nprocs].pid = pr->pid;
			s.nprocs++;
		}
		for (j = 0; j < nextra; j++) {
			const struct an_proc *pr = &an->procs[c->samp_extra[j] - 1];

			p[s.nprocs].rank = -1;	/* not one of its ranks */
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
	an_suspect_comm(an, c, on, false, UINT32_MAX, 0);
}

void an_emit(struct an *an, const struct an_verdict *v)
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
	double stalled;

	/*
	 * Every rank destroyed its comm or exited: the job is over, nothing
	 * got past the stuck round.  The incident closes unsaid; the comm
	 * goes forget_s later (an_forget.c).
	 */
	if (an_comm_over(an, c)) {
		c->declared = false;
		free(c->last);
		c->last = NULL;
		return;
	}
	*v = *c->last;
	v->kind = AN_V_RECOVERED;
	v->detected_ns = h->now;
	v->onset_ns = c->decl_onset;
	stalled = h->now > c->decl_onset ? (double)(h->now - c->decl_onset) / 1e9 : 0;
	an_evidence_clear(v);
	an_val_f(v, "stalled_s", stalled);
	an_text(v, "comm %016llx got past seq %lld after %.1f s without progress",
		(unsigned long long)c->hash, (long long)c->decl_seq, stalled);
	an_emit(an, v);
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
	an_val_f(v, "stalled_s", v->detected_ns > v->onset_ns ?
		 (double)(v->detected_ns - v->onset_ns) / 1e9 : 0);
	an_evidence_copy(v, st);
	if (blocker) {
		v->blocked_comm = blocker->c->hash;
		v->blocked_seq = blocker->c->st.seq;
		an_text(v, "; a cascade: %s blocked by comm %016llx seq %lld",
			st->cls == AN_H1 ? "its culprits are" : "it is",
			(unsigned long long)v->blocked_comm, (long long)v->blocked_seq);
	}
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

/*
 * Which quiet comms an evaluation looks at when there are more than it
 * can relate (AN_MAX_NODES): those in an incident, then those with input
 * since their last look or something in flight, then idle ones (nothing
 * in flight: a group used only now and then); the longest quiet first.
 */
struct quiet_comm {
	struct an_comm *c;
	int order;		/* in the hash table's walk */
	int prio;
	double quiet;
};

static int by_priority(const void *a, const void *b)
{
	const struct quiet_comm *x = a, *y = b;

	if (x->prio != y->prio)
		return x->prio - y->prio;
	if (x->quiet != y->quiet)
		return x->quiet > y->quiet ? -1 : 1;
	return x->order - y->order;
}

static int by_order(const void *a, const void *b)
{
	return ((const struct quiet_comm *)a)->order - ((const struct quiet_comm *)b)->order;
}

/* the comms in or near an incident, at most AN_MAX_NODES, in table order */
static int quiet_comms(struct an *an, struct an_comm **cs)
{
	double sus = an_config_suspect_s(&an->cfg);
	struct quiet_comm *q = NULL, *nq;
	uint32_t cap = 0, nq_all = 0, i;
	struct hkey key;
	size_t it;
	void *v;

	for (it = 0; hmap_next(&an->comms, &it, &key, &v);) {
		struct an_comm *c = v;
		uint32_t qh;
		uint64_t ql;
		double quiet = quiet_of(an, c, &qh, &ql);

		c->node = -1;
		if (!c->declared && !c->suspected && quiet < sus)
			continue;
		/* per evaluation, not counted in the analyzer's memory */
		if (nq_all == cap) {
			nq = realloc(q, (cap ? cap * 2 : 64) * sizeof(*q));
			if (!nq)
				break;
			q = nq;
			cap = cap ? cap * 2 : 64;
		}
		q[nq_all].c = c;
		q[nq_all].order = (int)nq_all;
		q[nq_all].prio = c->declared ? 0 : c->suspected ? 1 :
				 c->analyzed != c->version || c->gpu_gen != an->gpu_gen ||
				 c->st.strength != ST_NONE ? 2 : 3;
		q[nq_all].quiet = quiet;
		nq_all++;
	}
	if (nq_all > AN_MAX_NODES) {
		qsort(q, nq_all, sizeof(*q), by_priority);
		nq_all = AN_MAX_NODES;
		qsort(q, nq_all, sizeof(*q), by_order);
	}
	for (i = 0; i < nq_all; i++)
		cs[i] = q[i].c;
	free(q);
	return (int)nq_all;
}

/* node N is past threshold THR: quiet that long, or a call older than hang_s */
static bool past(const struct an *an, const struct node *n, double thr)
{
	return n->quiet - n->c->held_quiet >= thr ||
	       (double)n->c->st.max_call_age_ns / 1e9 >= an->cfg.hang_s;
}

/* culprits whose host went silent: what is known of them stopped there */
static void silent_note(const struct an *an, struct an_verdict *v)
{
	uint32_t i;

	for (i = 0; i < v->ncul; i++) {
		uint32_t h = v->cul[i].host;

		if (h >= an->nhosts || !an->hosts[h].silent)
			continue;
		an_text(v, "; the node of rank %d (%s) sends no records any more (its"
			" agent or the node itself is down): its state is what its last"
			" records said", v->cul[i].rank, an_host_name(an, h));
		an_val_s(v, "node_silent", an_host_name(an, h));
		return;
	}
}

static void evaluate(struct an *an)
{
	struct node nodes[AN_MAX_NODES];
	double sus = an_config_suspect_s(&an->cfg);
	int nn = 0, i;
	struct an_comm *cs[AN_MAX_NODES];
	int ncs, j;

	/* the comms in or near an incident, then where each GPU is */
	ncs = quiet_comms(an, cs);
	an_locate_gpus(an, cs, ncs);
	for (j = 0; j < ncs; j++) {
		struct an_comm *c = cs[j];
		struct node n = { .c = c, .edge = -1 };
		struct an_status *st = &c->st;
		bool pending;
		double thr;
		uint64_t nlost;
		int32_t lrank;

		n.quiet = quiet_of(an, c, &n.qhost, &n.qlast);
		if (n.quiet < c->held_quiet)
			c->held_quiet = 0;	/* it moved since */
		if (c->analyzed != c->version || c->gpu_gen != an->gpu_gen)
			an_locate(an, c);
		if (c->declared && (st->strength == ST_NONE ||
				    st->seq != c->decl_seq ||
				    st->p2p != c->decl_p2p))
			recover(an, c);
		thr = st->strength == ST_STRONG && !st->barrier ?
		      an->cfg.stall_s : an->cfg.hang_s;
		/*
		 * a rank's records were lost since its latest call seen: its
		 * picture may be wrong (an entry lost looks like "never
		 * entered"); the verdict waits for a record or a look at its
		 * memory made after the loss, at most until hang_s
		 */
		n.lost = !c->declared && an_comm_lost(an, c, &lrank, &nlost) > 0;
		if (n.lost && thr < an->cfg.hang_s)
			thr = an->cfg.hang_s;
		n.gpu_lost = !c->declared && !n.lost && an_gpu_holder_lost(an, c);
		n.cand = st->strength != ST_NONE && past(an, &n, thr);
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
	cascade_link(an, nodes, nn);
	/*
	 * a root on a GPU not ready whose holder's entry may be a lost record
	 * waits as a comm with lost records does (a cascade's GPU is placed)
	 */
	for (i = 0; i < nn; i++) {
		struct node *n = &nodes[i];

		if (n->edge >= 0 || !n->gpu_lost)
			continue;
		n->lost = true;
		n->cand = n->cand && past(an, n, an->cfg.hang_s);
	}
	/* roots first, then their cascades: a reader sees the cause first */
	for (i = 0; i < 2 * nn; i++) {
		struct node *n = &nodes[i % nn];
		struct an_comm *c = n->c;
		int root = i % nn, k;

		if ((i < nn) != (n->edge < 0))
			continue;
		for (k = 0; k < nn && nodes[root].edge >= 0; k++)
			root = nodes[root].edge;
		/*
		 * waiting on a barrier that is not (yet) a hang: no verdict, and
		 * a comm held behind it counts its own stall from the barrier's
		 * end (held_quiet)
		 */
		if (nodes[root].c->st.barrier && !nodes[root].cand) {
			if (root != i % nn)
				c->held_quiet = n->quiet;
			continue;
		}
		if (!n->cand && !c->declared)
			continue;
		/* its root waits for records that were lost: so does it */
		if (root != i % nn && nodes[root].lost && !nodes[root].cand &&
		    !c->declared)
			continue;
		build(an, n, n->edge >= 0 ? &nodes[n->edge] : NULL, &an->tmp);
		if (n->lost)
			an_lost_note(an, c, &an->tmp);
		an_hw_note(an, &an->tmp);
		an_warn_note(an, &an->tmp);
		an_env_note(an, &an->tmp);
		an_net_note(an, c, &an->tmp);
		silent_note(an, &an->tmp);
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
		an_emit(an, &an->tmp);
	}
}

void an_host_silent(struct an *an, uint32_t host, bool silent)
{
	if (host < an->nhosts)
		an->hosts[host].silent = silent;
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
	an_env_check(an, host, now_ns);
	an_setup_clock(an, host, now_ns);
	an_slow_clock(an, host, now_ns);
	an_slow_group_clock(an, host, now_ns);
	an_forget(an, host, now_ns);
}

