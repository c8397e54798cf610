// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * H3, all entered and consistent, no progress: the proxy's counters of each
 * unfinished sub in Mycroft's Table 4 terms (not started, not transmitted,
 * not delivered, GPU not ready), narrowed to the flow's end that is the
 * cause; the cross-comm network end (an_locate_net); else tier B; else
 * every waiting rank is listed.
 */
#include <inttypes.h>
#include <stdlib.h>
#include "an_locate_int.h"

/* ---- H3 with tier C/E counters (Mycroft Table 4) ---------------------- */

enum sub_state { SS_FINISHED, SS_STARVING, SS_T4 };

/* R's process is on a host whose records stopped (an_host_silent) */
static bool rank_silent(const struct an *an, const struct an_comm *c, int32_t r)
{
	const struct an_proc *p = r >= 0 && r < c->nranks ? an_proc_of(an, &c->r[r]) : NULL;

	return p && p->host < an->nhosts && an->hosts[p->host].silent;
}

static enum sub_state classify(const struct an_progress *p, enum an_t4 *t4)
{
	*t4 = AN_T4_NONE;
	if (p->nsteps && p->done >= p->nsteps)
		return SS_FINISHED;
	if (p->dir == AN_SEND) {
		if (!p->posted && !p->transmitted && !p->done)
			*t4 = AN_T4_NOT_STARTED;
		else if (p->posted > p->transmitted)
			*t4 = AN_T4_NOT_TRANSMITTED;
		else if (p->transmitted > p->done)
			*t4 = AN_T4_NOT_DELIVERED;
		else
			*t4 = AN_T4_GPU_NOT_READY;
		return SS_T4;
	}
	if (!p->posted && !p->received && !p->done) {
		*t4 = AN_T4_NOT_STARTED;
		return SS_T4;
	}
	if (p->received > p->done) {
		*t4 = AN_T4_GPU_NOT_READY;	/* data waits for the GPU */
		return SS_T4;
	}
	return SS_STARVING;	/* waiting for data from the peer */
}

static bool sub_current(const struct an_progress *p, int64_t seq)
{
	return p->seq < 0 || p->seq == seq;
}

/*
 * P is the oldest open p2p sub of its connection (rank, channel, peer,
 * direction): ops of one connection complete in order, and one rank's p2p
 * ids on one channel grow with its launches.
 */
static bool p2p_head(const struct an_rank *rk, const struct an_progress *p)
{
	uint32_t i;

	for (i = 0; i < rk->nsubs; i++) {
		const struct an_progress *q = &rk->subs[i];

		if (q != p && q->op && !an_coll_op(q->op) && q->channel == p->channel &&
		    q->peer == p->peer && q->dir == p->dir && sub_open(q) && q->op < p->op)
			return false;
	}
	return true;
}

static const struct an_progress *peer_sub(struct an_comm *c, const struct an_progress *p,
					  int32_t r, enum an_dir dir, int64_t seq);

/*
 * P2p sub P of RK, whose GPU's place is not known and whose open ops seen
 * in memory are of both id sequences (loc_mem_both_sequences: which one
 * it reached first, memory cannot say): its pair's other end's GPU is in
 * the matching op.  That pair is evidence (random jobs 1336 and 1352: a
 * GPU stalled before its pipeline send, its receiver waiting in the
 * receive; the oldest-op rule took the collective, by id alone).
 */
static bool pair_peer_in_it(const struct an *an, const struct an_comm *c,
			    const struct an_rank *rk, const struct an_progress *p, int64_t seq)
{
	const struct an_progress *q;
	const struct an_proc *pq;

	if (p->peer < 0 || p->peer >= c->nranks || !loc_mem_both_sequences(rk))
		return false;
	q = peer_sub((struct an_comm *)c, p, (int32_t)(rk - c->r),
		     p->dir == AN_SEND ? AN_RECV : AN_SEND, seq);
	pq = an_proc_of(an, &c->r[p->peer]);
	return q && q->op && !an_coll_op(q->op) && sub_open(q) && pq && pq->gpu_known &&
	       pq->gpu_comm == c && pq->gpu_op == q->op;
}

/*
 * A sub that is evidence for the round SEQ of C: of the op the process's
 * GPU executes where that is known (an_locate_gpu.c: ops queued behind it are
 * not late, they wait their turn; a send not yet produced by a GPU that is
 * elsewhere is no network fault), else of the rank's oldest open op, or a
 * pair whose other end's GPU waits in it (pair_peer_in_it).
 */
static bool sub_live(const struct an *an, const struct an_comm *c,
		     const struct an_rank *rk, const struct an_progress *p,
		     int64_t seq)
{
	const struct an_proc *pr = an_proc_of(an, rk);
	uint64_t op;

	if (!sub_current(p, seq))
		return false;
	if (!p->op)
		return true;
	if (!an_coll_op(p->op)) {
		/* p2p: its rank's own order; ids name nothing across ranks */
		if (!p2p_head(rk, p))
			return false;
		if (pr && pr->gpu_known && pr->gpu_comm)
			return pr->gpu_comm == c && !an_coll_op(pr->gpu_op);
		op = loc_open_op(rk, NULL);
		return !op || !an_coll_op(op) || pair_peer_in_it(an, c, rk, p, seq);
	}
	/* NCCL numbers a comm's collectives alike on every rank: the oldest
	 * one open anywhere is the stuck one; later ones queue behind it */
	if (p->op != c->st.open_op)
		return false;
	if (pr && pr->gpu_known && pr->gpu_comm)
		return pr->gpu_comm == c && pr->gpu_op == p->op;
	op = loc_open_op(rk, NULL);
	return !op || p->op == op;
}

struct pick {
	int32_t rank;
	const struct an_progress *p;
	enum an_t4 t4;
	bool remote;
};

static void describe_sub(struct an_status *st, const struct pick *k)
{
	const struct an_progress *p = k->p;
	static const char *const cause[] = {
		[AN_T4_NOT_STARTED] = "not initialised or blocked",
		[AN_T4_NOT_TRANSMITTED] = "network/RDMA issue",
		[AN_T4_NOT_DELIVERED] = "network/RDMA issue",
		[AN_T4_GPU_NOT_READY] = "GPU issue",
	};
	static const char *const rcause[] = {
		[AN_T4_NOT_STARTED] = "the peer is blocked",
		[AN_T4_NOT_TRANSMITTED] = "network: the receiver is not ready",
		[AN_T4_NOT_DELIVERED] = "network: the receiver failed",
		[AN_T4_GPU_NOT_READY] = "GPU issue at the peer",
	};

	an_text(st, "rank %d channel %d %s peer %d: ", k->rank, p->channel,
		p->dir == AN_SEND ? "send to" : "recv from", p->peer);
	if (p->dir == AN_SEND)
		an_text(st, "%" PRIu64 " steps ready from the GPU, %" PRIu64
			" transmitted, %" PRIu64 " done", p->posted,
			p->transmitted, p->done);
	else
		an_text(st, "%" PRIu64 " posted, %" PRIu64 " received, %" PRIu64
			" consumed by the GPU", p->posted, p->received, p->done);
	if (p->nsteps)
		an_text(st, " of %" PRIu64, p->nsteps);
	/*
	 * a receive waiting for data that never left: the remote end is its
	 * sender, not a receiver
	 */
	an_text(st, ": %s (%s cause: %s)", an_t4_name(k->t4),
		k->remote ? "remote" : "local",
		!k->remote ? cause[k->t4] :
		p->dir == AN_RECV && k->t4 == AN_T4_NOT_DELIVERED && !p->received ?
		"the sender sent none of it" : rcause[k->t4]);
	an_val_i(st, "channel", p->channel);
	an_val_i(st, "peer", p->peer);
	an_val_s(st, "dir", p->dir == AN_SEND ? "send" : "recv");
	an_val_i(st, "posted", (int64_t)p->posted);
	an_val_i(st, "transmitted", (int64_t)p->transmitted);
	an_val_i(st, "received", (int64_t)p->received);
	an_val_i(st, "done", (int64_t)p->done);
	an_val_i(st, "nsteps", (int64_t)p->nsteps);
	an_val_s(st, "state", an_t4_name(k->t4));
	an_val_s(st, "cause", k->remote ? "remote" : "local");
	st->t4 = k->t4;
	st->t4_remote = k->remote;
	st->t4_rank = k->rank;
	st->t4_peer = p->peer;
}

/*
 * The peer's sub facing rank R in the other direction.  A collective's is
 * the one of the same id (NCCL numbers collectives alike on every rank).
 * p2p ids are the two ranks' own counts: the match is the peer's oldest
 * open sub on the same channel toward R (a connection's ops complete in
 * order), else, once data of P's op flowed, the peer's latest finished one.
 */
static const struct an_progress *peer_sub(struct an_comm *c, const struct an_progress *p,
					  int32_t r, enum an_dir dir, int64_t seq)
{
	const struct an_progress *open = NULL, *fin = NULL;
	struct an_rank *pr;
	uint32_t i;

	if (p->peer < 0 || p->peer >= c->nranks)
		return NULL;
	pr = &c->r[p->peer];
	for (i = 0; i < pr->nsubs; i++) {
		const struct an_progress *q = &pr->subs[i];

		if (q->peer != r || q->dir != dir || q->channel != p->channel)
			continue;
		if (!p->op || !q->op) {
			if (sub_current(q, seq))
				return q;
		} else if (an_coll_op(p->op) || an_coll_op(q->op)) {
			if (q->op == p->op)
				return q;
		} else if (sub_open(q)) {
			if (!open || q->op < open->op)
				open = q;
		} else if (!fin || q->op > fin->op) {
			fin = q;
		}
	}
	if (open)
		return open;
	return fin && (p->received || p->transmitted) ? fin : NULL;
}

/* rank R of C holds received data of the round that its GPU did not consume */
static bool holds_data(const struct an *an, const struct an_comm *c, int32_t r, int64_t seq)
{
	const struct an_rank *rk = &c->r[r];
	uint32_t i;

	for (i = 0; i < rk->nsubs; i++) {
		const struct an_progress *p = &rk->subs[i];
		enum an_t4 t4;

		if (p->dir == AN_RECV && sub_live(an, c, rk, p, seq) &&
		    classify(p, &t4) == SS_T4 && t4 == AN_T4_GPU_NOT_READY)
			return true;
	}
	return false;
}

/* Per-rank facts about its stuck flows, for loc_t4(). */
struct flow_facts {
	uint32_t ends;		/* stuck send flows (either end) it is an end of */
	uint32_t nd_ends;	/* ... of those that left and never arrived */
	bool not_delivered;	/* one of its sends left and never completed */
	bool gpu_recv;		/* data it received waits for its GPU */
	bool starving;		/* one of its recvs waits for a peer's data */
	bool lost;		/* data sent to it never arrived */
	bool unsent;		/* one of its sends has not left: its GPU made nothing */
	bool blocked;		/* ... toward a GPU that holds its earlier data */
	bool silent_end;	/* the other end of a stuck flow, its node silent */
	uint32_t unseen_recvs;	/* ranks whose receive starves from it, it showing no side */
	int32_t unseen_last;	/* the latest such rank counted, + 1 */
};

/*
 * Every sub of collective OP finished at rank PR's proxy (an_proxy.c
 * note_op_done): its send of the op left and completed, though a later op
 * of another comm pruned the subs that said so.
 */
/*
 * Rank SR of C entered round SEQ after the call behind the op its GPU is
 * known to be at, in another comm: its stream has not reached SEQ (it sent
 * nothing of it).  That comm, or NULL where the times do not say so (a
 * round read from memory has no entry time).
 */
static const struct an_comm *sender_behind(const struct an *an, const struct an_comm *c,
					   int32_t sr, int64_t seq)
{
	const struct an_rank *pr;
	const struct an_proc *p;
	const struct an_sig *sg;

	if (sr < 0 || sr >= c->nranks || seq < 0)
		return NULL;
	pr = &c->r[sr];
	p = an_proc_of(an, pr);
	sg = &pr->hist[(uint64_t)seq % AN_HIST];
	if (!p || !p->gpu_known || !p->gpu_comm || p->gpu_comm == c || !p->gpu_t ||
	    sg->seq != seq || !sg->t_enter || p->gpu_t >= sg->t_enter)
		return NULL;
	return p->gpu_comm;
}

static bool sender_round_done(const struct an_rank *pr, uint64_t op)
{
	int64_t seq;

	if (pr->op_off_ok != 1)
		return false;
	seq = an_op_seq(pr, op);
	return seq >= 0 && pr->op_done[(uint64_t)seq % AN_HIST].seq == seq;
}

/*
 * Rank R's open p2p receive P from its peer, the oldest of its connection:
 * the peer's proxy finished more sends toward R than R's finished
 * receives from it, so the send P waits for left (a connection's ops end in
 * order, and the k-th send of a pair is the k-th receive).  Both counts
 * from the comm's first op (not from an attach), on the same channel.
 * Random job 1202: the sender's finished send was gone from a later look
 * at its memory, and the receive waiting for it read as a sender that
 * shows no side.
 */
static bool p2p_send_finished(const struct an_comm *c, int32_t r, const struct an_progress *p)
{
	const struct an_p2p *a = an_p2p_find(&c->r[r], p->peer), *b;

	if (!a || !(b = an_p2p_find(&c->r[p->peer], r)) ||
	    a->from_attach[AN_RECV] || b->from_attach[AN_SEND] ||
	    a->pch[AN_RECV] != p->channel + 1 || b->pch[AN_SEND] != a->pch[AN_RECV] ||
	    !p2p_head(&c->r[r], p))
		return false;
	return b->pdone[AN_SEND] > a->pdone[AN_RECV];
}

/*
 * A receive still waiting while the sender's side of the same op completed
 * (its send done, or the sender already on a later op of the comm, its
 * finished subs pruned): the data left and the receiver's network never
 * took it in.
 */
static bool lost_at_receiver(struct an_comm *c, int32_t r,
			     const struct an_progress *p, int64_t seq)
{
	const struct an_progress *sp = peer_sub(c, p, r, AN_SEND, seq);
	bool known = p->op && p->peer >= 0 && p->peer < c->nranks;
	const struct an_rank *pr;
	uint32_t i;

	if (p->dir != AN_RECV || p->posted <= p->received)
		return false;
	/*
	 * A p2p id says nothing about the sender's order: its counts may, and
	 * they come first.  A send of the sender still open toward R is a
	 * later op's where the sender finished more sends to R than R
	 * finished receives from it (random job 808: rank 4's network
	 * stalled, rank 7 past the all-to-all whose data rank 4 never got,
	 * its next step's send toward rank 4 read as this one's)
	 */
	if (known && !an_coll_op(p->op) && p2p_send_finished(c, r, p))
		return true;
	if (sp)
		return sp->nsteps && sp->done >= sp->nsteps;
	if (!known || !an_coll_op(p->op))
		return false;	/* a p2p op's counts said no above */
	pr = &c->r[p->peer];
	for (i = 0; i < pr->nsubs; i++)
		if (an_coll_op(pr->subs[i].op) && pr->subs[i].op > p->op)
			return true;
	return sender_round_done(pr, p->op);
}

/* A send that left and never completed, its receiver waiting for it. */
static bool delivery_failed(struct an_comm *c, int32_t r, const struct an_progress *p,
			    int64_t seq)
{
	const struct an_progress *rp = peer_sub(c, p, r, AN_RECV, seq);

	return !rp || rp->posted > rp->received;
}

/*
 * Rank R holds received data its GPU did not consume and waits for no one's
 * data (an idle GPU).  Several ranks can: a GPU blocked in a send toward
 * another such GPU (its earlier data sits there unconsumed) waits for that
 * one; a GPU that also made nothing of its own sends is stalled before them,
 * while one whose sends all left ran the op and waits elsewhere (a peer on
 * its host: intra-node links have no proxy counters to say).  The ranks left
 * are alike on this evidence: the first is picked, name_gpu_ties() names
 * them all.
 */
static bool gpu_idle_rank(const struct flow_facts *ff, int32_t r, bool need_unsent)
{
	return ff[r].gpu_recv && !ff[r].starving && !ff[r].blocked &&
	       (!need_unsent || ff[r].unsent);
}

static void mark_blocked(const struct an *an, struct an_comm *c,
			 struct flow_facts *ff, int64_t seq)
{
	int32_t r;
	uint32_t i;

	for (r = 0; r < c->nranks; r++) {
		const struct an_rank *rk = &c->r[r];

		if (!ff[r].gpu_recv || ff[r].starving)
			continue;
		for (i = 0; i < rk->nsubs && !ff[r].blocked; i++) {
			const struct an_progress *p = &rk->subs[i], *rp;
			enum an_t4 t4;

			if (p->dir != AN_SEND || !sub_live(an, c, rk, p, seq) ||
			    classify(p, &t4) != SS_T4 || t4 != AN_T4_NOT_TRANSMITTED ||
			    p->peer < 0 || p->peer >= c->nranks || p->peer == r ||
			    !ff[p->peer].gpu_recv || ff[p->peer].starving)
				continue;
			rp = peer_sub(c, p, r, AN_RECV, seq);
			ff[r].blocked = rp && rp->received > rp->done;
		}
	}
}

static bool gpu_idle_pick(const struct an *an, struct an_comm *c,
			  struct flow_facts *ff, int64_t seq, int32_t *pick)
{
	bool need_unsent = false;
	int32_t r, first = -1;

	mark_blocked(an, c, ff, seq);
	for (r = 0; r < c->nranks; r++) {
		if (first < 0 && ff[r].gpu_recv && !ff[r].starving)
			first = r;
		need_unsent |= gpu_idle_rank(ff, r, false) && ff[r].unsent;
	}
	if (first < 0)
		return false;
	/* every idle GPU blocked toward another (a cycle): the first */
	*pick = first;
	for (r = 0; r < c->nranks; r++)
		if (gpu_idle_rank(ff, r, need_unsent)) {
			*pick = r;
			break;
		}
	return true;
}

/* the other ranks alike to PICK on this evidence: named, and said so */
static void name_gpu_ties(struct an *an, struct an_comm *c, const struct flow_facts *ff,
			  struct an_status *st, int32_t pick)
{
	bool need_unsent = ff[pick].unsent && !ff[pick].blocked;
	uint32_t n = 0;
	int32_t r;

	if (!gpu_idle_rank(ff, pick, need_unsent))
		return;
	for (r = 0; r < c->nranks; r++) {
		if (r == pick || !gpu_idle_rank(ff, r, need_unsent))
			continue;
		add_cul(an, st, r);
		an_text(st, "%s%d", n ? ", " : "; rank ", r);
		n++;
	}
	if (n)
		an_text(st, " alike (received data not consumed%s): nothing here"
			" tells rank %d from %s", need_unsent ? ", own sends not left" : "",
			pick, n > 1 ? "them" : "it");
}

/* rank RK's proxy holds a sub of op OP */
static bool rank_has_op(const struct an_rank *rk, uint64_t op)
{
	uint32_t i;

	for (i = 0; i < rk->nsubs; i++)
		if (rk->subs[i].op == op)
			return true;
	return false;
}

/* RK holds sends of OP and its GPU produced none of them: it has not reached OP */
static bool op_unreached(const struct an_rank *rk, uint64_t op)
{
	uint32_t i, nsend = 0;

	for (i = 0; i < rk->nsubs; i++) {
		const struct an_progress *s = &rk->subs[i];

		if (s->op != op || s->dir != AN_SEND)
			continue;
		if (s->transmitted || s->done)
			return false;
		nsend++;
	}
	return nsend > 0;
}

/*
 * An open collective op of RK into which rank Q's data has arrived while
 * RK's GPU has not reached it: Q's GPU has.  Its id, 0 if none.  Read from
 * memory or seen live alike: a posted receive takes data whatever its GPU
 * does (random job 878, attached before the skip, live records only).
 */
static uint64_t coll_data_from(const struct an_rank *rk, int32_t q)
{
	uint32_t i;

	for (i = 0; i < rk->nsubs; i++) {
		const struct an_progress *s = &rk->subs[i];

		if (s->op && an_coll_op(s->op) && s->dir == AN_RECV &&
		    s->peer == q && s->received && sub_open(s) && op_unreached(rk, s->op))
			return s->op;
	}
	return 0;
}

/* does another comm than C place the GPU of RK's process (memory only) in an op of its own? */
static bool gpu_claimed_elsewhere(const struct an *an, const struct an_comm *c,
				  const struct an_rank *rk)
{
	struct hkey key;
	size_t it;
	void *v;

	for (it = 0; hmap_next(&an->comms, &it, &key, &v);) {
		const struct an_comm *o = v;
		uint64_t op, t;
		int32_t k;

		if (o == c)
			continue;
		for (k = 0; k < o->nranks; k++)
			if (o->r[k].proc == rk->proc &&
			    an_rank_pending(o, k, &op, &t) >= AN_HOLD_MEM_AT)
				return true;
	}
	return false;
}

/*
 * The same crossing where an intra-node comm of R's process leaves its
 * GPU's position unknown (no proxy data places its ops): R's flows show
 * its GPU in P and in no other op, and Q's data of a collective of this
 * comm that R's GPU has not reached (it produced none of its sends: so
 * launched after P) has arrived: Q's GPU went past where its send
 * belongs, and a posted receive takes data whatever its GPU does.
 * (Random job 185: rank 3 left its pipeline send to rank 7 out, rank 7's
 * GPU waits in that group's receive, rank 3's data of the loss all-reduce
 * after it came, attached late; random job 878 alike, its records seen
 * live: P need not have been read from memory.)  A GPU truly held in the
 * intra-node op before P shows the same flows only where P has no send
 * of its own; its comparable ranks then show the same, each toward its own
 * sender: loc_t4 takes this only where every such rank names one sender.
 */
static bool p2p_crossing_unplaced(const struct an *an, struct an_comm *c, int32_t r,
				  const struct an_progress *p)
{
	const struct an_rank *rk = &c->r[r];
	uint64_t at;

	return an_ops_executing(rk, &at) == 1 && at == p->op &&
	       coll_data_from(rk, p->peer) && !gpu_claimed_elsewhere(an, c, rk);
}

/*
 * Rank Q's data of collective OP toward rank R left Q and never arrived:
 * R's posted receive of it got nothing while Q's send of it was
 * transmitted or finished (a finished sub is gone from a look at memory:
 * Q's GPU ran OP and its proxy holds OP, but no send of it toward R).  A
 * posted receive takes data in whatever its GPU does, so R's network
 * failed (or its proxy stopped), not R's or Q's stream order.
 */
static bool coll_data_lost(const struct an *an, const struct an_comm *c, int32_t r,
			   int32_t q, uint64_t op)
{
	const struct an_rank *rk = &c->r[r], *qk;
	const struct an_proc *pq;
	const struct an_progress *w = NULL;
	uint32_t i;

	if (!op || !an_coll_op(op) || q < 0 || q >= c->nranks || q == r)
		return false;
	for (i = 0; i < rk->nsubs && !w; i++) {
		const struct an_progress *s = &rk->subs[i];

		if (s->op == op && s->dir == AN_RECV && s->peer == q && sub_open(s) &&
		    s->posted && !s->received)
			w = s;
	}
	if (!w)
		return false;
	qk = &c->r[q];
	for (i = 0; i < qk->nsubs; i++) {
		const struct an_progress *s = &qk->subs[i];

		if (s->op == op && s->dir == AN_SEND && s->peer == r &&
		    s->channel == w->channel)
			return s->transmitted || s->done;
	}
	pq = an_proc_of(an, qk);
	return pq && pq->gpu_known && pq->gpu_comm == c && pq->gpu_op == op &&
	       rank_has_op(qk, op);
}

/* the collective Q's GPU is in, if Q's data of it toward R was lost (coll_data_lost); else 0 */
static uint64_t sender_coll_lost(const struct an *an, const struct an_comm *c, int32_t r,
				 int32_t q)
{
	const struct an_proc *pq = q >= 0 && q < c->nranks ? an_proc_of(an, &c->r[q]) : NULL;

	if (!pq || !pq->gpu_known || pq->gpu_comm != c)
		return 0;
	return coll_data_lost(an, c, r, q, pq->gpu_op) ? pq->gpu_op : 0;
}

/*
 * Stream orders that cross (a skipped or reordered send): rank R's GPU
 * waits in p2p receive P from Q, nothing received; Q's GPU is in a
 * collective of this comm that R launched too (its proxy holds it) and has
 * not reached, since it is held in P; and Q's send toward R, if open, has
 * not left.  Q did not post the send R waits for before that collective:
 * the two GPUs wait for each other for good.
 */
static bool p2p_crossing(const struct an *an, struct an_comm *c, int32_t r,
			 const struct an_progress *p, int64_t seq, bool *unplaced)
{
	const struct an_proc *pr = an_proc_of(an, &c->r[r]), *pq;
	const struct an_progress *sp;

	*unplaced = false;
	if (p->dir != AN_RECV || !p->op || an_coll_op(p->op) || p->received ||
	    p->peer < 0 || p->peer >= c->nranks || p->peer == r || !pr)
		return false;
	sp = peer_sub(c, p, r, AN_SEND, seq);
	if (sp && (sp->transmitted || sp->done))
		return false;
	if (!pr->gpu_known) {
		*unplaced = p2p_crossing_unplaced(an, c, r, p);
		return *unplaced;
	}
	if (pr->gpu_comm != c || pr->gpu_op != p->op)
		return false;
	pq = an_proc_of(an, &c->r[p->peer]);
	return pq && pq->gpu_known && pq->gpu_comm == c && an_coll_op(pq->gpu_op) &&
	       rank_has_op(&c->r[r], pq->gpu_op) && !sender_coll_lost(an, c, r, p->peer);
}

/*
 * The first open receive of C that shows a crossing (p2p_crossing), in *K:
 * UNPLACED_ONLY, one placed by its flows alone (Table 4 does not weigh
 * such a receive: a p2p sub counts where its GPU is known to be in it);
 * OTHER >= 0, one that waits for another sender than OTHER.  False: none.
 */
static bool find_crossing(const struct an *an, struct an_comm *c, int64_t seq,
			  bool unplaced_only, int32_t other, struct pick *k)
{
	int32_t r;
	uint32_t i;
	bool unplaced;

	for (r = 0; r < c->nranks; r++)
		for (i = 0; i < c->r[r].nsubs; i++) {
			const struct an_progress *p = &c->r[r].subs[i];

			if ((other < 0 || p->peer != other) && sub_open(p) &&
			    p2p_head(&c->r[r], p) && p2p_crossing(an, c, r, p, seq, &unplaced) &&
			    (unplaced || !unplaced_only)) {
				*k = (struct pick){ r, p, AN_T4_NOT_STARTED, true };
				return true;
			}
		}
	return false;
}

/*
 * The stuck flows rank R is an end of; with ND (some data left and never
 * arrived), 0 for a rank that is no end of such a flow.
 */
static uint32_t flow_ends(const struct flow_facts *ff, int32_t r, bool nd)
{
	return nd && !ff[r].nd_ends ? 0 : ff[r].ends;
}

/* a send toward rank R that left and never arrived, R waiting for it */
static void nd_flow_into(const struct an *an, struct an_comm *c, int32_t r,
			 int64_t seq, struct pick *k)
{
	int32_t q;
	uint32_t i;

	for (q = 0; q < c->nranks; q++)
		for (i = 0; i < c->r[q].nsubs; i++) {
			const struct an_progress *p = &c->r[q].subs[i];
			enum an_t4 t4;

			if (p->dir == AN_SEND && p->peer == r &&
			    sub_live(an, c, &c->r[q], p, seq) &&
			    classify(p, &t4) == SS_T4 && t4 == AN_T4_NOT_DELIVERED &&
			    delivery_failed(c, q, p, seq)) {
				*k = (struct pick){ q, p, t4, true };
				return;
			}
		}
}

/*
 * The crossing's verdict: Q never posted, before a collective, the send
 * rank R's GPU waits for (H1); UNPLACED: R's GPU placed by its flows alone
 */
static void say_crossing(struct an *an, struct an_comm *c, struct an_status *st,
			 const struct pick *k, bool unplaced)
{
	const struct an_rank *q = &c->r[k->p->peer];
	/* where the sender's GPU is; unplaced: the collective its data came from */
	int64_t qseq = unplaced ? an_op_seq(&c->r[k->rank], coll_data_from(&c->r[k->rank],
									    k->p->peer)) :
				  an_op_seq(q, an_proc_of(an, q)->gpu_op);

	st->cls = AN_H1;
	st->p2p_cross = true;
	add_cul(an, st, k->p->peer);
	an_text(st, "rank %d did not send to rank %d before the collective %s",
		k->p->peer, k->rank, unplaced ?
		"whose data it has sent" : "its GPU is in");
	if (qseq >= 0)
		an_text(st, " (seq %" PRId64 ")", qseq);
	an_text(st, ": rank %d's GPU waits in a receive from it (channel %d, nothing"
		" received) launched before that collective, which it has not reached;"
		" the streams' orders cross (a skipped or reordered send)",
		k->rank, k->p->channel);
	an_val_i(st, "channel", k->p->channel);
	an_val_i(st, "peer", k->rank);
	an_val_s(st, "dir", "send");
	an_val_s(st, "state", "not posted before the collective");
	if (unplaced)
		an_text(st, " (rank %d's data of it arrived; its GPU's place among"
			" its intra-node ops is not known)", k->p->peer);
}

/* rank R's receive P starves from a sender that shows no side of the op */
static bool recv_unseen(const struct an *an, struct an_comm *c, int32_t r,
			const struct an_progress *p, int64_t seq)
{
	enum an_t4 t4;

	return p->dir == AN_RECV && p->peer >= 0 && p->peer < c->nranks &&
	       sub_live(an, c, &c->r[r], p, seq) && classify(p, &t4) == SS_STARVING &&
	       !lost_at_receiver(c, r, p, seq) && !peer_sub(c, p, r, AN_SEND, seq);
}

/*
 * Receives of several ranks starve from one sender that shows no side of
 * the op: that sender is what they have in common, its data does not
 * come out (its network delivers nothing, or it has not reached the op),
 * where one receive alone may be data lost at that receiver.  Random job
 * 269 (MoE, rank 6's network stops): ranks 4 and 5 waited for rank 6's
 * data in a grouped send/recv, rank 6 showing no side of it, and the
 * first receive named rank 4.  The sender of the most such receives, 2
 * at least (ties: the first); UNSEEN moves to one of its receives.
 */
static int32_t common_sender(const struct an *an, struct an_comm *c,
			     const struct flow_facts *ff, int64_t seq, struct pick *unseen)
{
	int32_t r, best = -1;
	uint32_t i;

	for (r = 0; r < c->nranks; r++)
		if (ff[r].unseen_recvs >= 2 &&
		    (best < 0 || ff[r].unseen_recvs > ff[best].unseen_recvs))
			best = r;
	if (best < 0 || unseen->p->peer == best)
		return best;
	for (r = 0; r < c->nranks; r++)
		for (i = 0; i < c->r[r].nsubs; i++)
			if (c->r[r].subs[i].peer == best &&
			    recv_unseen(an, c, r, &c->r[r].subs[i], seq)) {
				unseen->rank = r;
				unseen->p = &c->r[r].subs[i];
				return best;
			}
	return -1;
}

static void say_common_sender(struct an *an, struct an_comm *c, struct an_status *st,
			      const struct flow_facts *ff, const struct pick *unseen)
{
	int32_t s = unseen->p->peer, r;
	bool first = true;

	add_cul(an, st, s);
	an_text(st, "least progress: rank %d's data: the receives of %u ranks starve"
		" from it in the op (ranks", s, ff[s].unseen_recvs);
	for (r = 0; r < c->nranks; r++) {
		uint32_t i;

		for (i = 0; i < c->r[r].nsubs; i++)
			if (c->r[r].subs[i].peer == s &&
			    recv_unseen(an, c, r, &c->r[r].subs[i], st->seq)) {
				an_text(st, "%s%d", first ? " " : ",", r);
				first = false;
				break;
			}
	}
	an_text(st, "), each posted with nothing received, and rank %d shows no side"
		" of the op: its data does not come out (its network delivers nothing,"
		" or it has not reached the op)", s);
	an_val_i(st, "peer", unseen->rank);
	an_val_s(st, "dir", "recv");
	an_val_s(st, "state", an_t4_name(AN_T4_NOT_DELIVERED));
	an_val_s(st, "cause", "remote");
	an_val_i(st, "starving_receives", ff[s].unseen_recvs);
	st->t4 = AN_T4_NOT_DELIVERED;
	st->t4_remote = true;
	st->t4_rank = unseen->rank;
	st->t4_peer = s;
	st->t4_sender_unseen = true;
}

/*
 * Rank R's other sends of P's op, to other peers, that left (transmitted
 * something, or finished): R's network delivers.  Collective subs of the
 * op only (p2p ids are each rank's own counts, per channel).
 */
static uint32_t sends_left_elsewhere(const struct an *an, const struct an_comm *c, int32_t r,
				     const struct an_progress *p, int64_t seq)
{
	const struct an_rank *rk = &c->r[r];
	uint32_t i, n = 0;

	if (!an_coll_op(p->op) && p->op)
		return 0;
	for (i = 0; i < rk->nsubs; i++) {
		const struct an_progress *q = &rk->subs[i];

		if (q == p || q->dir != AN_SEND || q->peer == p->peer || q->op != p->op ||
		    !sub_current(q, seq) || !sub_live(an, c, rk, q, seq))
			continue;
		if (q->transmitted || (q->nsteps && q->done >= q->nsteps))
			n++;
	}
	return n;
}

/*
 * Some ranks' GPUs are in a p2p op of C launched before its open
 * collective (their subs of the pair live, of the collective open: posted
 * behind it) while others' are in that collective: the collective waits
 * for them, and its flows toward them (data a GPU has not produced, sends
 * to a rank not in it) say nothing of the fault; the pair they are in
 * holds the comm (random job 1233: a
 * pipeline send/recv then an all-reduce on one comm; the all-reduce's
 * ends were named for the stalled GPU of the pair's sender).
 */
static bool pair_before_round(const struct an *an, const struct an_comm *c, int64_t seq)
{
	bool in_pair = false, in_round = false;
	int32_t r;
	uint32_t i;

	if (!an_coll_op(c->st.open_op))
		return false;
	for (r = 0; r < c->nranks; r++) {
		const struct an_rank *rk = &c->r[r];
		const struct an_proc *pr = an_proc_of(an, rk);
		bool pair = false, round = false;

		if (!pr || !pr->gpu_known || pr->gpu_comm != c)
			continue;
		if (pr->gpu_op == c->st.open_op) {
			in_round = true;
			continue;
		}
		if (an_coll_op(pr->gpu_op))
			continue;	/* in another collective, not a pair */
		for (i = 0; i < rk->nsubs; i++) {
			const struct an_progress *p = &rk->subs[i];

			if (p->op == pr->gpu_op && sub_open(p) && sub_live(an, c, rk, p, seq))
				pair = true;
			else if (p->op == c->st.open_op && sub_open(p))
				round = true;
		}
		/* the round posted behind the pair: its GPU has not passed it */
		in_pair |= pair && round;
	}
	return in_pair && in_round;
}

/*
 * Mycroft 5.2/5.3: the flows that fail to complete, aggregated per rank;
 * Table 4 names the state.  Network evidence (a send that left and was
 * never delivered) outranks GPU evidence, since a GPU blocked in a kernel
 * that waits for the network cannot consume other data either; a GPU
 * that holds received data and waits for nobody is the GPU culprit.
 * Between the two ends of stuck flows (a 2-rank comm has nothing else)
 * the rank whose own sends left and were never delivered is the cause.
 */
bool loc_t4(struct an *an, struct an_comm *c, struct an_status *st)
{
	struct pick gpu = { .rank = -1 }, net = { .rank = -1 };
	struct pick least = { .rank = -1 }, quiet = { .rank = -1 };
	struct pick lost = { .rank = -1 }, unseen = { .rank = -1 }, behind = { .rank = -1 };
	struct pick cross = { .rank = -1 }, silent = { .rank = -1 };
	bool cross_unplaced = false;
	uint32_t left = 0;	/* the one stuck send's sender: its other sends that left */
	struct flow_facts *ff;
	uint32_t i, best = 0, nbest_nd = 0;
	double least_frac = 2;
	bool any = false, any_nd = false, gpu_idle = false, any_lost = false;
	bool pair_first = pair_before_round(an, c, st->seq);
	int32_t r;

	ff = calloc((uint32_t)c->nranks, sizeof(*ff));
	if (!ff)
		return false;
	for (r = 0; r < c->nranks; r++) {
		struct an_rank *rk = &c->r[r];
		bool gpu_send = false;
		const struct an_progress *gs = NULL;

		for (i = 0; i < rk->nsubs; i++) {
			const struct an_progress *p = &rk->subs[i];
			enum an_t4 t4;
			enum sub_state ss;
			double frac;

			if (!sub_live(an, c, rk, p, st->seq) ||
			    (pair_first && an_coll_op(p->op)))
				continue;
			any = true;
			ss = classify(p, &t4);
			if (ss == SS_FINISHED)
				continue;
			/* a live rank's flow with a rank whose node went silent */
			if (!rank_silent(an, c, r) && rank_silent(an, c, p->peer)) {
				ff[p->peer].silent_end = true;
				if (silent.rank < 0)
					silent = (struct pick){ r, p, AN_T4_NOT_STARTED, true };
			}
			frac = p->nsteps ? (double)p->done / (double)p->nsteps :
					   1;
			if (frac < least_frac) {
				least_frac = frac;
				least = (struct pick){ r, p, t4 ? t4 :
						       AN_T4_NOT_DELIVERED,
						       ss == SS_STARVING };
			}
			if (ss == SS_STARVING) {
				ff[r].starving = true;
				if (lost_at_receiver(c, r, p, st->seq)) {
					ff[r].lost = any_lost = true;
					if (lost.rank < 0)
						lost = (struct pick){ r, p,
							AN_T4_NOT_DELIVERED, false };
				} else {
					bool crossing = cross.rank < 0 &&
						p2p_crossing(an, c, r, p, st->seq,
							     &cross_unplaced);

					if (crossing)
						cross = (struct pick){ r, p, AN_T4_NOT_STARTED,
								       true };
					/* a crossing's sender may still be unseen */
					if (p->dir == AN_RECV && p->peer >= 0 &&
					    p->peer < c->nranks &&
					    !peer_sub(c, p, r, AN_SEND, st->seq)) {
						if (ff[p->peer].unseen_last != r + 1)
							ff[p->peer].unseen_recvs++;
						ff[p->peer].unseen_last = r + 1;
						if (unseen.rank < 0)
							unseen = (struct pick){ r, p,
								AN_T4_NOT_DELIVERED, true };
					} else if (!crossing && behind.rank < 0 &&
						 p->dir == AN_RECV &&
						 sender_behind(an, c, p->peer, st->seq))
						behind = (struct pick){ r, p,
							AN_T4_NOT_DELIVERED, true };
				}
				continue;
			}
			if (p->dir == AN_RECV && t4 == AN_T4_GPU_NOT_READY)
				ff[r].gpu_recv = true;
			if (p->dir == AN_SEND && t4 == AN_T4_GPU_NOT_READY) {
				gpu_send = true;
				gs = p;
			}
			if (p->dir == AN_SEND && (t4 == AN_T4_GPU_NOT_READY ||
						  t4 == AN_T4_NOT_TRANSMITTED))
				ff[r].unsent = true;
			if (p->dir == AN_SEND && (t4 == AN_T4_NOT_TRANSMITTED ||
						  t4 == AN_T4_NOT_DELIVERED)) {
				ff[r].ends++;
				if (p->peer >= 0 && p->peer < c->nranks)
					ff[p->peer].ends++;
				if (t4 == AN_T4_NOT_DELIVERED &&
				    delivery_failed(c, r, p, st->seq)) {
					ff[r].not_delivered = true;
					ff[r].nd_ends++;
					if (p->peer >= 0 && p->peer < c->nranks)
						ff[p->peer].nd_ends++;
					any_nd = true;
				}
				if (net.rank < 0)
					net = (struct pick){ r, p, t4, false };
			}
		}
		if (gpu_send && !ff[r].starving && quiet.rank < 0)
			quiet = (struct pick){ r, gs, AN_T4_GPU_NOT_READY, false };
	}
	if (cross.rank < 0)
		cross_unplaced = find_crossing(an, c, st->seq, true, -1, &cross);
	/*
	 * A crossing stands only where every receive that shows one waits for
	 * the same sender.  Where several ranks' receives show one, each
	 * toward its own sender, the flows that place their GPUs mislead: a
	 * snapshot holds a connection's oldest op, so a later group's receive
	 * shows without its sends (queued behind another op's), and the GPUs
	 * are elsewhere (random job 149: a stalled GPU, and both ranks of the
	 * last stage seemed to wait in their next group's receive).
	 */
	if (cross.rank >= 0 &&
	    find_crossing(an, c, st->seq, false, cross.p->peer, &(struct pick){ .rank = -1 }))
		cross.rank = -1;
	if (!any) {
		free(ff);
		return false;
	}
	/* a GPU holding received data and waiting for no one */
	gpu_idle = gpu_idle_pick(an, c, ff, st->seq, &gpu.rank);
	for (r = 0; r < c->nranks && gpu.rank < 0; r++)
		if (ff[r].gpu_recv)
			gpu.rank = r;
	if (gpu.rank >= 0) {
		for (i = 0; i < c->r[gpu.rank].nsubs; i++) {
			const struct an_progress *p = &c->r[gpu.rank].subs[i];
			enum an_t4 t4;

			if (sub_live(an, c, &c->r[gpu.rank], p, st->seq) &&
			    p->dir == AN_RECV &&
			    classify(p, &t4) == SS_T4 && t4 == AN_T4_GPU_NOT_READY) {
				gpu.p = p;
				gpu.t4 = t4;
				break;
			}
		}
	}
	st->cls = AN_H3;
	if (silent.rank >= 0) {
		/*
		 * A node that sends nothing any more (died whole, or its agent
		 * did): what its ranks did is unknown, and a flow with them
		 * stuck says nothing against the live end
		 */
		for (r = 0; r < c->nranks; r++)
			if (ff[r].silent_end)
				add_cul(an, st, r);
		an_text(st, "least progress: ");
		describe_sub(st, &silent);
		an_text(st, "; the other end, rank %d, is on a node that sends no"
			" records any more: its side of the op is unknown", silent.p->peer);
	} else if (any_lost && !any_nd) {
		/* the sender is done, the receiver never got it */
		for (r = 0; r < c->nranks; r++)
			if (ff[r].lost)
				add_cul(an, st, r);
		describe_sub(st, &lost);
		an_text(st, "; rank %d's send of it completed: the data never"
			" arrived", lost.p->peer);
	} else if (net.rank >= 0 && (any_nd || !gpu_idle)) {
		/*
		 * A faulty NIC is the common end of the stuck flows.  Where
		 * data left and never arrived, the faulty NIC is at one end of
		 * such a flow: only those ends are candidates (a send not
		 * transmitted may wait only for its GPU, elsewhere in an op
		 * that waits for the faulty end: it produced nothing).  Between
		 * ends alike, the senders whose data never arrived.
		 */
		for (r = 0; r < c->nranks; r++)
			if (flow_ends(ff, r, any_nd) > best)
				best = flow_ends(ff, r, any_nd);
		for (r = 0; r < c->nranks; r++) {
			nbest_nd += flow_ends(ff, r, any_nd) == best && ff[r].not_delivered;
		}
		if (best >= 2 || any_nd) {
			for (r = 0; r < c->nranks; r++)
				if (flow_ends(ff, r, any_nd) == best &&
				    (!nbest_nd || ff[r].not_delivered))
					add_cul(an, st, r);
			/* describe the culprit's own stuck send, if it has one */
			for (i = 0; i < c->r[st->cul[0]].nsubs; i++) {
				const struct an_progress *p = &c->r[st->cul[0]].subs[i];
				enum an_t4 t4;

				if (sub_live(an, c, &c->r[st->cul[0]], p, st->seq) &&
				    p->dir == AN_SEND &&
				    classify(p, &t4) == SS_T4 &&
				    (t4 == AN_T4_NOT_TRANSMITTED ||
				     t4 == AN_T4_NOT_DELIVERED)) {
					net = (struct pick){ st->cul[0], p, t4,
							     false };
					if (t4 == AN_T4_NOT_DELIVERED)
						break;
				}
			}
			if (net.rank != st->cul[0]) {
				net.remote = true;
				if (any_nd)
					nd_flow_into(an, c, st->cul[0], st->seq, &net);
			}
		} else {
			/*
			 * one flow: the receiver with no buffer posted is the
			 * cause; so is one whose proxy is seen but holds no
			 * receive toward the sender for a send without credit
			 * (NCCL posts an op to the proxy when the stream
			 * reaches it: a GPU stalled before it posts nothing)
			 */
			const struct an_progress *rp =
				peer_sub(c, net.p, net.rank, AN_RECV, st->seq);
			int32_t q = net.p->peer;
			bool unposted = !rp && net.t4 == AN_T4_NOT_TRANSMITTED &&
					q >= 0 && q < c->nranks && c->r[q].tierc;

			if ((rp && rp->posted <= rp->received) || unposted) {
				net.remote = true;
				add_cul(an, st, net.p->peer);
			} else if (net.t4 == AN_T4_NOT_TRANSMITTED && q >= 0 && q < c->nranks &&
				   (left = sends_left_elsewhere(an, c, net.rank, net.p, st->seq))) {
				/*
				 * its sends of the op to other peers left: the
				 * sender's network delivers, the credit of this
				 * receiver never came (random job 1103: a
				 * netstall at the receiver of one of a
				 * broadcast's sends named the root before)
				 */
				net.remote = true;
				add_cul(an, st, q);
			} else {
				add_cul(an, st, net.rank);
			}
		}
		/*
		 * A culprit's own send that never left while data it received
		 * waits for its GPU: its network delivers; its GPU produced
		 * nothing (a GPU stalled in a kernel before this op).
		 */
		if (!net.remote && net.rank == (int32_t)st->cul[0] &&
		    net.t4 == AN_T4_NOT_TRANSMITTED && holds_data(an, c, net.rank, st->seq))
			net.t4 = AN_T4_GPU_NOT_READY;
		describe_sub(st, &net);
		if (left) {
			an_text(st, "; rank %d's sends of the op to %u other peer%s left: the"
				" fault is at rank %d's end", net.rank, left, left == 1 ? "" : "s",
				net.p->peer);
			an_val_i(st, "sender_sends_left", left);
		}
	} else if (cross.rank >= 0) {
		say_crossing(an, c, st, &cross, cross_unplaced);
	} else if ((unseen.rank >= 0 || behind.rank >= 0) && !(gpu_idle && gpu.p) &&
		   quiet.rank < 0) {
		/*
		 * A receive starving from a sender that shows no side of the
		 * op, or whose GPU is in an op of another comm launched before
		 * this one: the sender may have sent it all, lost at this
		 * receiver, or not reached it (the hold graph follows that
		 * sender).  A
		 * GPU with data waiting while another of its receives starves
		 * waits for that one, not the other way round; a GPU that waits
		 * for no one's data and produces nothing (quiet) comes first.
		 */
		const struct an_comm *held;

		if (unseen.rank < 0)
			unseen = behind;
		held = sender_behind(an, c, unseen.p->peer, st->seq);

		if (held) {
			/* not sent: the sender's stream has not reached it */
			unseen.t4 = AN_T4_NOT_STARTED;
			add_cul(an, st, unseen.p->peer);
			an_text(st, "least progress: ");
			describe_sub(st, &unseen);
			an_text(st, "; the sender, rank %d, entered it but has not reached"
				" it: its GPU is in an op of comm %016" PRIx64 " it launched"
				" before", unseen.p->peer, held->hash);
			st->t4_sender_behind = true;
		} else if (common_sender(an, c, ff, st->seq, &unseen) >= 0) {
			say_common_sender(an, c, st, ff, &unseen);
		} else {
			add_cul(an, st, unseen.rank);
			an_text(st, "least progress: ");
			describe_sub(st, &unseen);
			uint64_t lost_op = sender_coll_lost(an, c, unseen.rank, unseen.p->peer);

			an_text(st, "; the sender, rank %d, shows no side of the op: it sent"
				" it all (lost at this receiver) or has not reached it",
				unseen.p->peer);
			if (lost_op) {
				int64_t lseq = an_op_seq(&c->r[unseen.rank], lost_op);

				an_text(st, "; its data of the collective its GPU is in");
				if (c->r[unseen.rank].op_off_ok == 1 && lseq >= 0)
					an_text(st, " (seq %" PRId64 ")", lseq);
				an_text(st, " left and never arrived at rank %d either, whose"
					" receive of it is posted: rank %d's network takes"
					" nothing in", unseen.rank, unseen.rank);
			}
			st->t4_sender_unseen = true;
		}
	} else if ((gpu.rank >= 0 && gpu.p) || quiet.rank >= 0) {
		struct pick *k = gpu.rank >= 0 && gpu.p ? &gpu : &quiet;

		add_cul(an, st, k->rank);
		describe_sub(st, k);
		if (k == &gpu && gpu_idle)
			name_gpu_ties(an, c, ff, st, gpu.rank);
	} else {
		if (least.rank < 0) {
			free(ff);
			st->cls = 0;
			return false;
		}
		add_cul(an, st, least.rank);
		an_text(st, "least progress: ");
		describe_sub(st, &least);
	}
	free(ff);
	return true;
}

/*
 * The network-stuck send flows of C's stuck round: the sender's data is
 * ready from its GPU (or left) and did not complete, while the receiver has
 * a buffer posted and nothing arrived.  A rank that never posted its side
 * (it did not enter) is an H1 matter, not a network one.
 */
void an_stuck_flows(const struct an *an, struct an_comm *c, an_flow_fn fn,
		    void *ctx)
{
	int32_t q;
	uint32_t i;

	for (q = 0; q < c->nranks; q++)
		for (i = 0; i < c->r[q].nsubs; i++) {
			const struct an_progress *p = &c->r[q].subs[i], *rp;
			enum an_t4 t4;

			if (p->dir == AN_RECV && sub_live(an, c, &c->r[q], p, c->st.seq) &&
			    lost_at_receiver(c, q, p, c->st.seq)) {
				fn(ctx, c, q, p, AN_T4_NOT_DELIVERED);
				continue;
			}
			if (p->dir != AN_SEND || !sub_live(an, c, &c->r[q], p, c->st.seq) ||
			    classify(p, &t4) != SS_T4 ||
			    (t4 != AN_T4_NOT_TRANSMITTED && t4 != AN_T4_NOT_DELIVERED))
				continue;
			rp = peer_sub(c, p, q, AN_RECV, c->st.seq);
			if (rp && rp->posted > rp->received)
				fn(ctx, c, q, p, t4);
		}
}

struct net_pick {
	int32_t r;
	struct pick own, into;
};

static void pick_net_flow(void *ctx, struct an_comm *c, int32_t sender,
			  const struct an_progress *p, enum an_t4 t4)
{
	struct net_pick *np = ctx;

	(void)c;
	if (sender == np->r && (!np->own.p || t4 == AN_T4_NOT_DELIVERED))
		np->own = (struct pick){ sender, p, t4, false };
	else if (p->dir == AN_SEND && p->peer == np->r && !np->into.p)
		np->into = (struct pick){ sender, p, t4, true };
}

/*
 * Rank R of C is the common end of stuck flows across the stalled comms
 * (an_cascade.c): its network is the cause here too, whatever this comm's
 * own flows alone said.  Evidence: R's own send that left and never
 * arrived, else a flow into R that its network never let through.
 */
bool an_locate_net(struct an *an, struct an_comm *c, int32_t r,
		   uint32_t nflows, uint32_t ncomms)
{
	struct an_status *st = &c->st;
	struct net_pick np = { .r = r };
	const struct pick *k;

	an_stuck_flows(an, c, pick_net_flow, &np);
	k = np.own.p && (np.own.t4 == AN_T4_NOT_DELIVERED || !np.into.p) ?
		&np.own : &np.into;
	if (!k->p)
		return false;
	st->cls = AN_H3;
	st->ncul = 0;
	an_evidence_clear(st);
	add_cul(an, st, r);
	describe_sub(st, k);
	an_text(st, "; rank %d is an end of %u stuck flows in %u stalled comm%s:"
		" the common end is the faulty network", r, nflows, ncomms,
		ncomms == 1 ? "" : "s");
	if (k->remote)
		an_text(st, " (at the receiver, rank %d)", r);
	loc_blocked_inside(an, c, st);
	an_val_i(st, "nranks", c->nranks);
	an_val_i(st, "net_flows", nflows);
	an_val_i(st, "net_comms", ncomms);
	loc_what_is_not_known(c, st);
	st->net_global = true;
	return true;
}

/*
 * The stuck op moved on no rank at all: no send left a GPU, no data
 * arrived anywhere.  One faulty GPU or NIC stops the flows it is an end
 * of, not every flow of every rank: every GPU of the comm is elsewhere
 * (its stream holds an earlier op of another comm), and this comm only
 * queues behind that (an_cascade.c does not let it block another comm).
 */
bool loc_untouched(const struct an *an, const struct an_comm *c,
		   const struct an_status *st)
{
	uint32_t i, nsubs = 0;
	int32_t r;

	for (r = 0; r < c->nranks; r++) {
		const struct an_rank *rk = &c->r[r];

		for (i = 0; live(rk) && i < rk->nsubs; i++) {
			const struct an_progress *p = &rk->subs[i];

			if (!sub_live(an, c, rk, p, st->seq))
				continue;
			if (p->transmitted || p->received || p->done)
				return false;
			nsubs++;
		}
	}
	return nsubs > 0;
}

/*
 * H3: all entered the stuck round with the same arguments.  In this order:
 * the proxy counters (Table 4), tier B (ranks whose GPU has not completed
 * the round that others completed), else every rank that waits is listed.
 */
void loc_h3(struct an *an, struct an_comm *c, struct an_status *st)
{
	int32_t i;

	if (loc_t4(an, c, st)) {
		loc_blocked_inside(an, c, st);
		an_val_i(st, "nranks", c->nranks);
		st->untouched = loc_untouched(an, c, st);
		return;
	}
	st->cls = AN_H3;
	/* tier B: ranks whose GPU has not finished the round others finished */
	{
		uint32_t ndone = 0;

		for (i = 0; i < c->nranks; i++)
			if (live(&c->r[i]) && c->r[i].tierb &&
			    c->r[i].completed >= st->seq)
				ndone++;
		if (ndone) {
			for (i = 0; i < c->nranks; i++)
				if (live(&c->r[i]) && c->r[i].tierb &&
				    c->r[i].completed < st->seq)
					add_cul(an, st, i);
		}
		if (st->ncul) {
			loc_rank_list(st, st->cul, st->ncul);
			an_text(st, ": the GPU has not completed %s seq %" PRId64
				" of comm %016" PRIx64 ", which %u of %d ranks"
				" completed (tier B)", an_fn_name(st->fn), st->seq,
				c->hash, ndone, c->nranks);
			an_val_i(st, "completed_ranks", ndone);
			an_val_i(st, "culprit_completed",
				 c->r[st->cul[0]].completed);
			loc_blocked_inside(an, c, st);
			an_val_i(st, "nranks", c->nranks);
			return;
		}
	}
	for (i = 0; i < (int32_t)st->nwait; i++)
		add_cul(an, st, st->wait[i]);
	an_text(st, "all %u ranks entered %s seq %" PRId64 " of comm %016" PRIx64
		" with the same arguments; no progress data (tier B/C/E) tells"
		" which one is stuck: all are listed", st->nwait,
		an_fn_name(st->fn), st->seq, c->hash);
	loc_blocked_inside(an, c, st);
	an_val_i(st, "nranks", c->nranks);
}
