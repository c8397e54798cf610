// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Root vs cascade (Mycroft 5.2, docs/analyzer.md "Cascades"): the comms
 * stalled past the suspect time, related once per evaluation.  The network
 * culprit across comms first (Mycroft 5.3), then the hold graph (whose GPU
 * executes which stalled comm), "blocked by" (every culprit waits inside
 * another comm's stuck round), the same culprits (the comm that stalled
 * first is the root), and cycles cut at the comm that stalled first among
 * those with the most definite evidence.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "an_detect_int.h"

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

/* a before b in time of stall: longer quiet, then the lower hash */
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
bool an_h3_weak(const struct an_status *st)
{
	return st->cls == AN_H3 && st->t4 != AN_T4_NONE && st->t4 != AN_T4_NOT_DELIVERED;
}

int32_t an_h3_focus(const struct an_status *st)
{
	return st->t4_remote ? st->t4_peer : st->t4_rank;
}

/*
 * A cycle's cut: a definite cause (H2, H1, data that left and never
 * arrived), then a receive starving from a sender that shows no side of
 * the op (the one edge of the cycle that may be misread), then the
 * evidence as located.  An H1 whose culprit's GPU is held in a comm whose
 * located flow is that rank's own (its GPU not ready, its network) is no
 * cause of its own: its CPU waits for that GPU (a host sync); nor is a
 * receive whose sender's GPU is in an op launched before it: both come
 * last; after them only a GPU not ready that may be held in another stalled
 * comm (link_nodes: conflicting claims).
 */
static int cut_rank_evidence(const struct node *n)
{
	const struct an_status *st = &n->c->st;
	int ev = evidence_rank(st);

	if (n->gpu_maybe_held)
		return -1;
	if ((st->cls == AN_H1 && n->gpu_stuck) || (st->cls == AN_H3 && st->t4_sender_behind))
		return 0;
	if (ev >= 2)
		return 2 + ev;
	return st->cls == AN_H3 && st->t4_sender_unseen ? 2 : ev;
}

/*
 * Between nodes of the same rank above, a GPU not ready held in another
 * stalled comm (proxy data places GPUs of its ranks in that comm's op)
 * that names its culprits too, whose located rank's GPU is not placed in
 * it (held_loose), comes after one that is not such: the edge out of it
 * was read from flows, an edge into it ("a culprit waits there") was not,
 * and its own claim rests on no GPU seen in its op.  Not where the comm it
 * is held in names others: that claim is no better (test_attach_late's
 * gpustall-pytorch: the world comm, naming the stalled rank, held by a
 * DP pair where a GPU waits for a peer stuck in the pipeline).
 */
static int cut_rank(const struct node *n)
{
	return 2 * cut_rank_evidence(n) + !(n->held_loose && an_h3_weak(&n->c->st));
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
 * The process of the sender that shows no side of the op N's H3 located (a
 * receive starving from it), 0 none
 */
static uint32_t unseen_sender(const struct node *n)
{
	const struct an_status *st = &n->c->st;

	if (st->cls != AN_H3 || !st->t4_sender_unseen || st->t4_peer < 0 ||
	    st->t4_peer >= n->c->nranks)
		return 0;
	return n->c->r[st->t4_peer].proc;
}

/* node J becomes M's cascade; M, where it led into J's tree, a root */
static void reroot(struct node *nodes, int nn, int j, int m)
{
	if (root_of(nodes, nn, m) == j)
		nodes[m].edge = -1;
	nodes[j].edge = m;
}

/*
 * A root that is a receive starving from a sender that shows no side of
 * the op, where another stuck comm locates that sender's own send with a
 * local cause (not transmitted or not delivered, its receiver ready): the
 * sender's network fails, so its data here cannot have come either.  That
 * comm is the root, the receive its cascade (random job 224: rank 14's
 * network stops; its world op's send "not transmitted (local cause)", and
 * its pipeline peer's receive from it starving with rank 14 showing no
 * side: the pipeline comm, holding the peer's GPU, was the root and named
 * the receiver).
 */
static int sender_failing_node(const struct node *nodes, int nn, int j)
{
	uint32_t sender = unseen_sender(&nodes[j]);
	int m;

	if (!sender)
		return -1;
	for (m = 0; m < nn; m++) {
		const struct an_status *sm = &nodes[m].c->st;

		if (m != j && !nodes[m].closed && sm->cls == AN_H3 && !sm->t4_remote &&
		    sm->t4_rank >= 0 && sm->t4_rank < nodes[m].c->nranks &&
		    (sm->t4 == AN_T4_NOT_TRANSMITTED || sm->t4 == AN_T4_NOT_DELIVERED) &&
		    nodes[m].c->r[sm->t4_rank].proc == sender)
			return m;
	}
	return -1;
}

/*
 * A weak H3 root (a GPU not ready, a send not transmitted: states that
 * backpressure from elsewhere produces) with, in its own tree, a comm
 * whose located flow is data that left and was never delivered, with a
 * local cause: nothing held elsewhere produces that, so that comm is the
 * root (test_intranode netstall, 1 of 1 CI runs of 3082bec: rank 3's
 * network stops; the world comm's H3 "GPU not ready" at its host peer
 * rank 2, whose GPU waited in their TP op for rank 3, was the root, and
 * the pipeline comm {1,3} saying rank 3's data never arrived its cascade,
 * through rank 3's GPU in the world op).
 */
static int definite_in_tree(const struct node *nodes, int nn, int j)
{
	int m;

	if (!an_h3_weak(&nodes[j].c->st))
		return -1;
	for (m = 0; m < nn; m++)
		if (m != j && !nodes[m].closed && definite_h3(&nodes[m].c->st) &&
		    root_of(nodes, nn, m) == j)
			return m;
	return -1;
}

/*
 * A root that is a receive starving from a sender that shows no side of
 * the op, where the sender is the one culprit of an H1 whose CPU stopped
 * on its own (its GPU held in no comm, its main thread in no CUDA
 * synchronize): the sender never reached its send.
 * That H1 is the root, the receive its cascade, even where the receiver's
 * GPU is in the op (closed).  Random job 1148: rank 0 stopped in a
 * checkpoint write; its pipeline peer's receive from it starving read as
 * data lost at that receiver, a root naming the receiver beside the H1.
 */
static int sender_stuck_node(const struct an *an, const struct node *nodes, int nn, int j)
{
	uint32_t sender = unseen_sender(&nodes[j]);
	int m;

	if (!sender)
		return -1;
	for (m = 0; m < nn; m++) {
		const struct an_status *sm = &nodes[m].c->st;
		const struct an_rank *r;
		const struct an_proc *p;

		if (m == j || sm->cls != AN_H1 || sm->ncul != 1 || nodes[m].held)
			continue;
		r = &nodes[m].c->r[sm->cul[0]];
		p = an_proc_of(an, r);
		/*
		 * not a CPU in a CUDA synchronize: that one waits for its GPU,
		 * wherever the hold graph could not place it (an intra-node op)
		 */
		if (r->proc == sender && !(p && p->main_thread.cuda_sync))
			return m;
	}
	return -1;
}

static void reroot_to_stuck_senders(const struct an *an, struct node *nodes, int nn)
{
	int j, m;

	for (j = 0; j < nn; j++) {
		if (nodes[j].edge >= 0 || (m = sender_stuck_node(an, nodes, nn, j)) < 0)
			continue;
		reroot(nodes, nn, j, m);
		nodes[j].closed = false;
	}
}

/*
 * A root that only shows the effect of a network failure another comm
 * locates yields to that comm: an unseen sender's own send failing
 * (sender_failing_node), or data that left and never arrived in its tree
 * (definite_in_tree)
 */
static void reroot_to_net_failures(struct node *nodes, int nn)
{
	int j, m;

	for (j = 0; j < nn; j++) {
		if (nodes[j].edge >= 0 || nodes[j].closed)
			continue;
		if ((m = sender_failing_node(nodes, nn, j)) < 0 &&
		    (m = definite_in_tree(nodes, nn, j)) < 0)
			continue;
		reroot(nodes, nn, j, m);
	}
}

/*
 * A culprit of node N waits (or is a culprit) in node I's stuck round: a
 * rank whose network fails stalls every comm it is in (test_intranode's
 * netstall: the world comm's "GPU not ready" at rank 3's host peer beside
 * the pair comm where rank 3's data never arrived)
 */
static bool culprit_stuck_in(const struct an *an, const struct node *n, int i)
{
	const struct an_status *st = &n->c->st;
	uint32_t k;

	for (k = 0; k < st->ncul; k++) {
		uint32_t p = n->c->r[st->cul[k]].proc;

		if (p && ((an->procs[p - 1].wmask | an->procs[p - 1].cmask) >> i & 1))
			return true;
	}
	return false;
}

/*
 * A weak H3 left as a root beside a root with a definite cause, one of its
 * culprits also stuck (culprit or waiting) in that root's tree, or one of
 * that root's culprits stuck in it: it is part of that incident, not a
 * second one.
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

		if (nodes[i].edge >= 0 || nodes[i].closed || !an_h3_weak(st))
			continue;
		for (k = 0; k < (int)st->ncul; k++) {
			uint32_t p = c->r[st->cul[k]].proc;

			if (p)
				in |= an->procs[p - 1].wmask | an->procs[p - 1].cmask;
		}
		for (j = 0; j < nn; j++)
			if (j != i && nodes[j].edge < 0 &&
			    evidence_rank(&nodes[j].c->st) >= 2 &&
			    ((tree[j] & in) || culprit_stuck_in(an, &nodes[j], i)))
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
 * Nodes holding the GPU of the rank at C's located flow (H3 by Table 4):
 * its peer where the cause is remote, else itself.  0 when that GPU is in
 * C, unknown, or no flow was located.
 */
static uint64_t focus_held(const struct an *an, const struct an_comm *c,
			   const struct an_status *st)
{
	int32_t r = an_h3_focus(st);
	const struct an_proc *p;

	if (st->t4 == AN_T4_NONE || r < 0 || r >= c->nranks)
		return 0;
	p = an_proc_of(an, &c->r[r]);
	if (!p || !p->gpu_known || !p->gpu_comm || p->gpu_comm == c || p->gpu_comm->node < 0)
		return 0;
	return 1ull << p->gpu_comm->node;
}

/* does C's located status name a culprit rank of process PROC? */
static bool names_proc(const struct an_comm *c, uint32_t proc)
{
	uint32_t k;

	for (k = 0; proc && k < c->st.ncul; k++)
		if (c->st.cul[k] >= 0 && c->st.cul[k] < c->nranks && c->r[c->st.cul[k]].proc == proc)
			return true;
	return false;
}

/*
 * Culprit K of H1 comm C only follows another: its CPU waits for its GPU
 * (inside a CUDA synchronize), which is in the stuck round of stalled comm
 * D (node J), an H1 whose culprits C names too, none of them in such a
 * wait.  Once they enter D, K's GPU moves on and its CPU enters C.
 */
static bool culprit_follows(const struct an *an, const struct node *nodes, int nn,
			    const struct an_comm *c, uint32_t k)
{
	const struct an_proc *p = an_proc_of(an, &c->r[c->st.cul[k]]);
	const struct an_comm *d;
	uint32_t i;

	if (!p || p->state != AN_PROC_RUNNING || !p->main_thread.cuda_sync ||
	    !p->gpu_known || !p->gpu_comm || p->gpu_comm == c ||
	    p->gpu_comm->node < 0 || p->gpu_comm->node >= nn)
		return false;
	d = nodes[p->gpu_comm->node].c;
	if (d->st.cls != AN_H1 || !d->st.ncul || d->st.spmd)
		return false;
	for (i = 0; i < d->st.ncul; i++) {
		uint32_t q = d->r[d->st.cul[i]].proc;
		const struct an_proc *qp = q ? &an->procs[q - 1] : NULL;

		if (!qp || qp == p || qp->main_thread.cuda_sync || !names_proc(c, q))
			return false;
	}
	return true;
}

/*
 * An H1 naming several ranks keeps those that hold it: a rank that only
 * follows another of them (culprit_follows) is said, not named (random
 * job 1042: 16 ranks, TP 4 x DP 4, attached late; rank 15 stopped in its
 * own code; the world's "never entered" listed ranks 3 and 15, rank 3's
 * GPU being in its DP comm's broadcast, which waited for rank 15).
 */
static void h1_drop_followers(struct an *an, struct node *nodes, int nn)
{
	int i;

	for (i = 0; i < nn; i++) {
		struct an_comm *c = nodes[i].c;
		struct an_status *st = &c->st;
		bool drop[AN_EDGE_MAX_CUL] = { false };
		uint32_t k, n = 0;

		if (st->cls != AN_H1 || st->ncul < 2 || st->ncul > AN_EDGE_MAX_CUL || st->spmd)
			continue;
		for (k = 0; k < st->ncul; k++)
			drop[k] = culprit_follows(an, nodes, nn, c, k);
		for (k = 0; k < st->ncul; k++) {
			const struct an_proc *p;

			if (!drop[k]) {
				st->cul[n++] = st->cul[k];
				continue;
			}
			p = an_proc_of(an, &c->r[st->cul[k]]);
			an_text(st, "; rank %d only follows: its CPU waits for its GPU,"
				" which is in comm %016" PRIx64 "'s stuck round, held by"
				" the other ranks named here", st->cul[k], p->gpu_comm->hash);
			an_val_i(st, "follower", st->cul[k]);
		}
		st->ncul = n;
	}
}

/* every culprit process of C is a culprit of D too */
static bool culprits_within(const struct an_comm *c, const struct an_comm *d)
{
	uint32_t i;

	if (!c->st.ncul)
		return false;
	for (i = 0; i < c->st.ncul; i++)
		if (!names_proc(d, c->r[c->st.cul[i]].proc))
			return false;
	return true;
}

/* the GPU of the rank at C's located flow is placed in C */
static bool focus_in(const struct an *an, const struct an_comm *c,
		     const struct an_status *st)
{
	int32_t r = an_h3_focus(st);
	const struct an_proc *p;

	if (r < 0 || r >= c->nranks)
		return false;
	p = an_proc_of(an, &c->r[r]);
	return p && p->gpu_known && p->gpu_comm == c;
}

/*
 * Every culprit of H1 comm C is the process at D's located flow, with a
 * local cause (its GPU does not produce or consume, or its own data never
 * arrived): the culprit's GPU is stuck in D, which explains why its CPU
 * never entered C.  A rank that skipped an op and waits in D for another
 * rank is not so.
 */
static bool culprits_stuck_at(const struct an_comm *c, const struct an_comm *d)
{
	const struct an_status *sd = &d->st;
	uint32_t k, proc;

	if (sd->cls != AN_H3 || sd->t4 == AN_T4_NONE || sd->t4_remote ||
	    sd->t4_rank < 0 || sd->t4_rank >= d->nranks || !c->st.ncul)
		return false;
	proc = d->r[sd->t4_rank].proc;
	for (k = 0; k < c->st.ncul; k++)
		if (!proc || c->r[c->st.cul[k]].proc != proc)
			return false;
	return true;
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

		nodes[i].closed = nodes[i].held = nodes[i].gpu_stuck = false;
		nodes[i].held_loose = false;
		if (any_down(an, c) || st->spmd)
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

			/*
			 * the located flow first: its rank, or the peer its
			 * cause is at.  A GPU held in another comm there is
			 * what the comm waits for; other ranks' GPUs may wait in
			 * ops of comms that themselves wait for this one
			 */
			m = focus_held(an, c, st);
			for (r = 0; r < c->nranks && !m; r++) {
				const struct an_proc *p = an_proc_of(an, &c->r[r]);
				uint64_t op, t;
				enum an_hold h = an_rank_pending(c, r, &op, &t);

				/*
				 * a rank open on a later collective of this comm is
				 * ahead (p2p ids are per rank and channel: no order)
				 */
				if (h == AN_HOLD_NONE ||
				    ((h == AN_HOLD_OPEN || h >= AN_HOLD_MEM) &&
				     an_coll_op(c->st.open_op) && an_coll_op(op) &&
				     op != c->st.open_op))
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
		/*
		 * An H1 whose culprits' GPUs are not placed (an intra-node op
		 * entered before, tier B only) while their process's own data
		 * left in another comm and never arrived: that network fault
		 * holds the process (its CPU waits for its GPU, which waits for
		 * the network); it is no cause of its own.
		 */
		if (!m && st->cls == AN_H1) {
			int j;

			for (j = 0; j < nn; j++)
				if (j != i && definite_h3(&nodes[j].c->st) &&
				    !nodes[j].c->st.net_global &&
				    culprits_stuck_at(c, nodes[j].c))
					m |= 1ull << j;
		}
		if (m) {
			nodes[i].edge = pick(nodes, m);
			nodes[i].held = true;
			nodes[i].held_loose = st->cls == AN_H3 && !focus_in(an, c, st) &&
					      culprits_within(c, nodes[nodes[i].edge].c);
			if (st->cls == AN_H1)
				nodes[i].gpu_stuck = culprits_stuck_at(c, nodes[nodes[i].edge].c);
		} else if (open && known) {
			nodes[i].edge = -1;
			nodes[i].closed = true;
		}
	}
}

/*
 * A p2p op whose peer "went past" its side (an_locate_p2p.c) is read from
 * the round numbers of the op's own rank: the comm's first round that rank
 * entered after the op, the peer entered too.  Where the counts show that
 * rank itself skipped an op of the comm, its round N there is the others'
 * N+1: its op belongs to a later step than the peer's round, the peer has
 * not reached it, and it waits for the skipper.  That H1 is the counts'
 * cascade (random job 577, pytorch, 16 ranks: rank 14 left the world's
 * loss all-reduce out and ran on into its next step, whose pipeline send
 * to rank 10 waits unmatched; rank 10 waits in the round rank 14 skipped.
 * Two roots: the world comm's H1 "rank 10 never entered the Recv ... it
 * skipped it", first, and the TP comm's "rank 14 ran ahead ... it skipped
 * an op of" the world comm).
 */
static void p2p_past_yields(struct node *nodes, int nn)
{
	int i, j;

	for (i = 0; i < nn; i++) {
		const struct an_status *si = &nodes[i].c->st;
		uint32_t waiter;

		if (!si->spmd || !si->p2p || nodes[i].edge >= 0 || si->p2p_waiter < 0 ||
		    si->p2p_waiter >= nodes[i].c->nranks)
			continue;
		waiter = nodes[i].c->r[si->p2p_waiter].proc;
		for (j = 0; j < nn; j++) {
			const struct an_status *sj = &nodes[j].c->st;

			if (j != i && sj->spmd && !sj->p2p && nodes[j].edge < 0 && sj->ncul &&
			    sj->spmd_skipped == nodes[i].c->hash && waiter &&
			    nodes[j].c->r[sj->cul[0]].proc == waiter) {
				nodes[i].edge = j;
				break;
			}
		}
	}
}

/*
 * A skipped op found by the counts (an_locate_spmd.c) is where the hang
 * began: such a node waits for no other kind of node, and every other
 * root that holds its rank is its cascade (their ops queue behind the
 * skipped one on the peers' streams, or wait for the skipper).
 */
static void spmd_roots(struct node *nodes, int nn)
{
	int i, j;

	p2p_past_yields(nodes, nn);
	for (j = 0; j < nn; j++)
		if (nodes[j].c->st.spmd && nodes[j].edge >= 0 &&
		    !nodes[nodes[j].edge].c->st.spmd)
			nodes[j].edge = -1;
	for (j = 0; j < nn; j++) {
		const struct an_status *sj = &nodes[j].c->st;
		uint32_t proc;

		if (!sj->spmd || nodes[j].edge >= 0 || !sj->ncul)
			continue;
		proc = nodes[j].c->r[sj->cul[0]].proc;
		/*
		 * ... but a mismatch naming its rank is the cause: a rank whose
		 * call differs (a Reduce for the others' AllReduce) may finish
		 * it and run on, and its counts then read as a skip (random
		 * jobs 838, 898: an op type mismatch on the world, attached
		 * late, its DP comm's counts a step ahead)
		 */
		for (i = 0; i < nn; i++)
			if (i != j && nodes[i].edge < 0 && nodes[i].c->st.cls == AN_H2 &&
			    names_proc(nodes[i].c, proc))
				break;
		if (i < nn) {
			nodes[j].edge = i;
			continue;
		}
		/* another skip found naming the same rank (its TP and DP comms) is one too */
		for (i = 0; i < nn; i++)
			if (i != j && nodes[i].edge < 0 &&
			    (nodes[i].c->st.spmd ? names_proc(nodes[i].c, proc) :
			     an_comm_has_proc(nodes[i].c, proc)))
				nodes[i].edge = j;
		return;
	}
}

/*
 * Rank R of C: its GPU no proxy data places, and its process has an op of
 * D pending whose place no proxy data says either (an intra-node comm):
 * that GPU may be held in D.
 */
static bool rank_gpu_maybe_in(const struct an *an, const struct an_comm *c,
			      int32_t r, const struct an_comm *d)
{
	const struct an_proc *p;
	int k;

	if (r < 0 || r >= c->nranks)
		return false;
	p = an_proc_of(an, &c->r[r]);
	if (!p || p->gpu_known)
		return false;
	for (k = 0; k < d->nranks; k++) {
		uint64_t op, t;

		if (d->r[k].proc == c->r[r].proc)
			return an_rank_pending(d, k, &op, &t) == AN_HOLD_UNKNOWN;
	}
	return false;
}

/* C is a GPU not ready (a weak H3) whose GPU may be held in D */
static bool gpu_maybe_in(const struct an *an, const struct an_comm *c,
			 const struct an_comm *d)
{
	return an_h3_weak(&c->st) && rank_gpu_maybe_in(an, c, an_h3_focus(&c->st), d);
}

/*
 * Node I's GPU not ready may be held in node D, and a GPU not ready is
 * also named (by I or another node) on another process whose GPU may be
 * held in D: the claims conflict.
 */
static bool gpu_claims_conflict(const struct an *an, const struct node *nodes,
				int nn, int i, int d)
{
	const struct an_comm *c = nodes[i].c;
	uint32_t p = c->r[an_h3_focus(&c->st)].proc;
	int j, k;

	for (j = 0; j < nn; j++) {
		const struct an_status *st = &nodes[j].c->st;

		if (j == d || !an_h3_weak(st))
			continue;
		for (k = 0; k < (int)st->ncul; k++)
			if (nodes[j].c->r[st->cul[k]].proc != p &&
			    rank_gpu_maybe_in(an, nodes[j].c, st->cul[k], nodes[d].c))
				return true;
	}
	return false;
}

static void link_nodes(struct an *an, struct node *nodes, int nn)
{
	uint64_t located_mask = 0;
	int i, j, k, pass;

	/*
	 * every process's masks, not only those of this evaluation's waiters
	 * and culprits: a culprit's wmask left from an evaluation with more
	 * nodes named nodes past nn, whose edges are garbage
	 */
	for (k = 0; k < (int)an->nprocs; k++)
		an->procs[k].wmask = an->procs[k].cmask = 0;
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
		    definite_h3(st) || st->spmd)
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
	 * never runs).  Not a GPU not ready whose GPU may be held in this
	 * comm: that comm is explained by this one, not the other way.
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
		for (j = 0; j < nn; j++)
			if ((m >> j & 1) && gpu_maybe_in(an, nodes[j].c, c))
				m &= ~(1ull << j);
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

		/*
		 * Closed (its open ranks' GPUs all run its op) says nothing of
		 * a culprit named for a remote cause (a receiver not ready):
		 * that rank is not in the op (random job 1331: a stage's
		 * receiver waited in the world comm, where a rank's data left
		 * and never arrived)
		 */
		if (nodes[i].edge >= 0 || (nodes[i].closed && !st->t4_remote) || !an_h3_weak(st))
			continue;
		for (k = 0; k < (int)st->ncul; k++) {
			uint32_t p = c->r[st->cul[k]].proc;

			if (p)
				m |= an->procs[p - 1].wmask;
		}
		for (j = 0; j < nn; j++)
			if (evidence_rank(&nodes[j].c->st) < 2 || j == i)
				m &= ~(1ull << j);
		if (m) {
			nodes[i].edge = pick(nodes, m);
			nodes[i].closed = false;
		}
	}
	/*
	 * GPUs not ready, named on two processes whose GPUs no proxy data
	 * places, both with an op pending in the same other stalled comm that
	 * none places either (an intra-node comm): their claims conflict, and
	 * one GPU may well wait in that comm for the other.  Each points there
	 * (over any edge but a hold that proxy data placed) and comes last in a
	 * cycle's cut, so that comm, listing its ranks, is the root (random job
	 * 299: rank 3's GPU stopped; the world comm named ranks 1, 3 and 7, a
	 * DP comm rank 1, all GPUs maybe held in the TP comm of ranks 0-3).  A claim no other
	 * contradicts stays a root: one GPU not ready is the likeliest cause
	 * (random job 282: rank 5's GPU stopped inside its host's comm).
	 */
	for (i = 0; i < nn; i++) {
		uint64_t m = 0;

		nodes[i].gpu_maybe_held = false;
		if (nodes[i].closed)
			continue;
		for (j = 0; j < nn; j++)
			if (j != i && gpu_maybe_in(an, nodes[i].c, nodes[j].c) &&
			    gpu_claims_conflict(an, nodes, nn, i, j))
				m |= 1ull << j;
		nodes[i].gpu_maybe_held = m != 0;
		if (m && !nodes[i].held)
			nodes[i].edge = pick(nodes, m);
	}
	/*
	 * the same culprits: the comm that stalled first is the root; not
	 * one whose GPUs proxy data placed in this comm's op (held here: it
	 * waits behind this one in their streams)
	 */
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
			if ((m >> j & 1) && (!earlier(&nodes[j], &nodes[i]) ||
					     (nodes[j].held && nodes[j].edge == i)))
				m &= ~(1ull << j);
		nodes[i].edge = pick(nodes, m);
	}
	/*
	 * cycles (ordering deadlocks): the comm that stalled first is the
	 * root, among those with the most definite evidence in the cycle.
	 * Streams of one SPMD program do not wait for each other in a circle:
	 * one edge of it rests on a flow misread.  Among ties, a receive
	 * starving from a sender that shows no side of the op is that flow
	 * (the sender may have sent it all: its data was lost at the
	 * receiver, whose comm is then the root); an edge to a sender whose
	 * op is there, not sent, is backpressure.
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
				int ej = cut_rank(&nodes[j]);
				int eb = cut_rank(&nodes[best]);

				if (ej != eb ? ej > eb : earlier(&nodes[j], &nodes[best]))
					best = j;
			}
			nodes[best].edge = -1;
			cut = true;
		}
		if (!cut)
			break;
	}
	reroot_to_stuck_senders(an, nodes, nn);
	reroot_to_net_failures(nodes, nn);
	spmd_roots(nodes, nn);
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

		fprintf(stderr, "an: node %d comm %016llx seq %lld cls %d cul %u edge %d%s%s%s%s%s%s%s%s open_op %llx quiet %.2f ev %d\n",
			i, (unsigned long long)c->hash, (long long)c->st.seq, c->st.cls,
			c->st.ncul, nodes[i].edge, nodes[i].closed ? " closed" : "",
			nodes[i].held ? " held" : "",
			c->st.t4_sender_unseen ? " sender-unseen" : "",
			c->st.t4_sender_behind ? " sender-behind" : "",
			nodes[i].gpu_stuck ? " gpu-stuck" : "",
			nodes[i].cand ? " cand" : "", nodes[i].lost ? " lost" : "",
			nodes[i].gpu_lost ? " gpu-lost" : "",
			(unsigned long long)c->st.open_op, nodes[i].quiet,
			evidence_rank(&c->st));
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
			for (k = 0; k < rk->np2p; k++) {
				const struct an_p2p *q = &rk->p2p[k];

				fprintf(stderr, "an:     p2p peer %d send %lld/%lld/%lld pdone %lld%s recv %lld/%lld/%lld pdone %lld%s (entered/returned/done)\n",
					q->peer, (long long)q->n[0], (long long)q->nret[0],
					(long long)q->ndone[0], (long long)q->pdone[0],
					q->from_attach[0] ? " from attach" : "",
					(long long)q->n[1], (long long)q->nret[1],
					(long long)q->ndone[1], (long long)q->pdone[1],
					q->from_attach[1] ? " from attach" : "");
			}
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

void cascade_link(struct an *an, struct node *nodes, int nn)
{
	net_narrow(an, nodes, nn);
	h1_drop_followers(an, nodes, nn);
	link_nodes(an, nodes, nn);
	if (an->debug)
		debug_nodes(an, nodes, nn);
}
