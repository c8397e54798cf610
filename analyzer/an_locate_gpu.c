// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Where each process's GPU is (docs/analyzer.md "Where each GPU is"): a
 * GPU runs its stream in the order the CPU launched the calls, so the
 * rank's oldest open proxy op, or the first call tier B has not completed,
 * holds it.
 */
#include <stdio.h>
#include <stdlib.h>
#include "an_locate_int.h"

/*
 * The rank's oldest proxy op with an unfinished sub (first seen first, then
 * the lower id): the one its GPU works on; 0 if none or ids are unknown.
 */
uint64_t loc_open_op(const struct an_rank *rk, uint64_t *t_first)
{
	uint64_t op = 0, tf = 0;
	uint32_t i;

	for (i = 0; i < rk->nsubs; i++) {
		const struct an_progress *p = &rk->subs[i];

		if (!p->op || !sub_open(p))
			continue;
		if (!op || p->t_first < tf || (p->t_first == tf && p->op < op)) {
			op = p->op;
			tf = p->t_first;
		}
	}
	if (t_first)
		*t_first = tf;
	return op;
}

/*
 * RK's open ops known from memory only are of both id sequences, a
 * collective and a p2p op: which one its GPU reached first, memory cannot
 * say (the ids of one sequence are no order against the other, and a
 * snapshot gives all its ops one time).  Random jobs 1336 and 1352: a GPU
 * stalled before its pipeline send, placed in the all-reduce after it,
 * looked like a rank that skipped the send.
 */
bool loc_mem_both_sequences(const struct an_rank *rk)
{
	bool coll = false, p2p = false;
	uint32_t i;

	for (i = 0; i < rk->nsubs; i++) {
		const struct an_progress *p = &rk->subs[i];

		if (!p->from_mem || !p->op || !sub_open(p))
			continue;
		if (an_coll_op(p->op))
			coll = true;
		else
			p2p = true;
	}
	return coll && p2p;
}

/* the collective seq of RK's proxy sub P: its own, else by its op id; -1 not known */
static int64_t sub_coll_seq(const struct an_rank *rk, const struct an_progress *p)
{
	return p->seq >= 0 ? p->seq : rk->op_off_ok == 1 ? an_op_seq(rk, p->op) : -1;
}

/*
 * Entry of the call behind open proxy sub P of RK, 0 where not known: a
 * collective's by its seq; a p2p op's by its place among the ops toward
 * that peer: the ops finished at the proxy (a connection's ops end in
 * order), then the open ones before it, by id.  Times do not say it: a
 * CPU that runs ahead enters the next step's calls before the proxy has
 * seen this one's op.
 */
static uint64_t sub_entry(const struct an_rank *rk, const struct an_progress *p)
{
	const struct an_p2p *q;
	int64_t k;
	uint32_t i;
	int d = p->dir;

	if (an_coll_op(p->op)) {
		const struct an_sig *sg;
		int64_t seq = sub_coll_seq(rk, p);

		if (seq < 0)
			return 0;
		sg = &rk->hist[(uint64_t)seq % AN_HIST];
		return sg->seq == seq ? sg->t_enter : 0;
	}
	q = an_p2p_find(rk, p->peer);
	if (!q || q->n[d] <= 0 || (q->pch[d] && q->pch[d] != p->channel + 1))
		return 0;
	k = q->pdone[d];
	for (i = 0; i < rk->nsubs; i++) {
		const struct an_progress *o = &rk->subs[i];

		k += o->op && !an_coll_op(o->op) && o->op < p->op && o->peer == p->peer &&
		     (int)o->dir == d && o->channel == p->channel && sub_open(o);
	}
	if (k < q->ndone[d])
		k = q->ndone[d];
	if (k > q->n[d] - 1)
		k = q->n[d] - 1;
	if (q->n[d] - k > AN_P2P_HIST)
		return 0;	/* no longer kept */
	return q->t_hist[d][(uint64_t)k % AN_P2P_HIST];
}

/*
 * Entry of RK's first p2p op its GPU has not completed (tier B's
 * completions; the oldest kept if older), 0 none
 */
static uint64_t first_open_p2p(const struct an_rank *rk)
{
	uint64_t t = 0;
	uint32_t i;
	int d;

	for (i = 0; i < rk->np2p; i++)
		for (d = 0; d < 2; d++) {
			const struct an_p2p *q = &rk->p2p[i];
			int64_t k = q->ndone[d];
			uint64_t te;

			if (q->n[d] <= k)
				continue;
			if (q->n[d] - k > AN_P2P_HIST)
				k = q->n[d] - AN_P2P_HIST;
			te = q->t_hist[d][(uint64_t)k % AN_P2P_HIST];
			if (!te)
				te = q->t_enter[d];
			if (te && (!t || te < t))
				t = te;
		}
	return t;
}

/*
 * Entry of the rank's first call its GPU has not completed, 0 none.  With
 * tier C, the call behind its oldest open proxy op: tier B completes a
 * whole step at once (a CPU that syncs every other step leaves two steps
 * "incomplete" that the proxy finished long ago).  Else tier B's first
 * collective not completed, or p2p op toward a peer.
 */
static uint64_t first_incomplete_entry(const struct an_rank *rk)
{
	int64_t first = rk->completed + 1;
	const struct an_sig *sg = &rk->hist[(uint64_t)first % AN_HIST];
	uint64_t t = 0, tp;
	uint32_t i;

	if (rk->tierc) {
		for (i = 0; i < rk->nsubs; i++) {
			const struct an_progress *p = &rk->subs[i];
			uint64_t te;

			if (!p->op || !sub_open(p) || !(te = sub_entry(rk, p)))
				continue;
			if (!t || te < t)
				t = te;
		}
		if (t)
			return t;
	}
	if (first <= rk->entered && sg->seq == first)
		t = sg->t_enter;
	tp = first_open_p2p(rk);
	return tp && (!t || tp < t) ? tp : t;
}

/* what rank RK's unfinished subs of proxy op OP show of its GPU there */
struct op_flows {
	bool unsent;		/* a send waits for the GPU's data */
	bool unconsumed;	/* a received step waits for the GPU */
	bool starving;		/* a receive waits for a peer's data */
};

static struct op_flows op_flows(const struct an_rank *rk, uint64_t op)
{
	struct op_flows f = { false, false, false };
	uint32_t i;

	for (i = 0; i < rk->nsubs; i++) {
		const struct an_progress *p = &rk->subs[i];

		if (p->op != op || (p->nsteps && p->done >= p->nsteps))
			continue;
		f.unsent |= p->dir == AN_SEND && p->posted > p->transmitted;
		f.unconsumed |= p->dir == AN_RECV && p->received > p->done;
		f.starving |= p->dir == AN_RECV && p->posted > p->received;
	}
	return f;
}

/*
 * Rank RK's GPU evidently executes proxy op OP: it produced and sent all it
 * could (no send waits for its data), consumed all that came (no received
 * step waits for it), and waits for a peer's data.  A GPU elsewhere (queued
 * behind another op) or stalled leaves received data or unproduced sends.
 */
static bool gpu_in_op(const struct an_rank *rk, uint64_t op)
{
	struct op_flows f = op_flows(rk, op);

	return !f.unsent && !f.unconsumed && f.starving;
}

/*
 * Rank R of C, at its open collective OP, produced its part and waits for
 * the rest: its data of OP reached a peer (that peer's receive of OP from
 * R got steps), none of its sends waits for the GPU, and a receive still
 * starves.  A GPU that takes a round's data at once leaves the steps that
 * came unconsumed until the last arrives, which gpu_in_op reads as a GPU
 * elsewhere; data of OP sent by R says its GPU reached OP, and stream
 * order keeps it there until OP ends.  Collectives only: their ids are
 * alike on every rank, p2p ids are each rank's own count.
 */
static bool gpu_sent_in_op(const struct an_comm *c, int32_t r, uint64_t op)
{
	struct op_flows f;
	uint32_t i;
	int32_t k;

	if (!an_coll_op(op))
		return false;
	f = op_flows(&c->r[r], op);
	if (f.unsent || !f.starving)
		return false;
	for (k = 0; k < c->nranks; k++) {
		const struct an_rank *o = &c->r[k];

		if (k == r || !live(o))
			continue;
		for (i = 0; i < o->nsubs; i++) {
			const struct an_progress *p = &o->subs[i];

			if (p->op == op && p->dir == AN_RECV && p->peer == r && p->received)
				return true;
		}
	}
	return false;
}

uint32_t an_ops_executing(const struct an_rank *rk, uint64_t *op)
{
	uint32_t i, j, n = 0;

	*op = 0;
	for (i = 0; i < rk->nsubs; i++) {
		uint64_t o = rk->subs[i].op;

		for (j = 0; j < i && rk->subs[j].op != o; j++)
			;
		if (j < i || !o || !gpu_in_op(rk, o))
			continue;	/* seen already, or not executing */
		if (!n++)
			*op = o;
	}
	return n;
}

/*
 * What rank R of C has pending, for its process's GPU position: the
 * oldest proxy op with an unfinished sub (AN_HOLD_OPEN, *OP, *T when it was
 * first seen); ops entered that the GPU did not complete while no tier C/E
 * data says which (AN_HOLD_UNKNOWN: an intra-node comm has no proxy ops,
 * and tier B, one completion per step, bounds its GPU's position without
 * placing it; a p2p op whose proxy ops are not seen yet likewise; *T the
 * first one's entry); else AN_HOLD_NONE.
 */
enum an_hold an_rank_pending(const struct an_comm *c, int32_t r, uint64_t *op,
			     uint64_t *t)
{
	const struct an_rank *rk = &c->r[r];
	const struct an_sig *sg;
	int64_t first;
	uint64_t tp;

	*op = *t = 0;
	if (!live(rk))
		return AN_HOLD_NONE;
	if (rk->tierc) {
		uint32_t i;

		*op = loc_open_op(rk, t);
		if (!*op)
			return AN_HOLD_NONE;
		for (i = 0; i < rk->nsubs; i++)
			if (rk->subs[i].op == *op && rk->subs[i].from_mem)
				break;
		if (i < rk->nsubs) {
			/*
			 * Known from memory only.  Ids of collectives and of p2p
			 * ops are two sequences: any open op whose flows show
			 * the GPU in it is where the GPU is; one it sent data
			 * of is where it is for sure.
			 */
			for (i = 0; i < rk->nsubs; i++)
				if (gpu_sent_in_op(c, r, rk->subs[i].op)) {
					*op = rk->subs[i].op;
					return AN_HOLD_MEM_SENT;
				}
			for (i = 0; i < rk->nsubs; i++)
				if (gpu_in_op(rk, rk->subs[i].op)) {
					*op = rk->subs[i].op;
					return AN_HOLD_MEM_AT;
				}
			return AN_HOLD_MEM;
		}
		/*
		 * The stream order is the order of the calls: the proxy threads
		 * of different comms pick their ops up in any order.  The entry
		 * of the first call the GPU has not completed (tier B; for p2p
		 * the latest send/recv entered per peer) stands for the open
		 * op; without either, its first sighting.
		 */
		{
			uint64_t te = first_incomplete_entry(rk);

			if (te)
				*t = te;
		}
		return AN_HOLD_OPEN;
	}
	/*
	 * p2p ops entered and not completed, where tier B has seen this
	 * rank's ops complete (without it nothing bounds them: a p2p comm
	 * used once would hide its process's GPU for good)
	 */
	tp = rk->tierb ? first_open_p2p(rk) : 0;
	if (rk->entered < 0 || (rk->tierb && rk->completed >= rk->entered)) {
		if (!tp)
			return AN_HOLD_NONE;
		*t = tp;
		return AN_HOLD_UNKNOWN;
	}
	first = rk->tierb ? rk->completed + 1 : rk->entered;
	sg = &rk->hist[(uint64_t)first % AN_HIST];
	if (sg->seq != first)
		sg = &rk->hist[(uint64_t)rk->entered % AN_HIST];
	*t = sg->t_enter ? sg->t_enter : 1;
	if (tp && tp < *t)
		*t = tp;
	return AN_HOLD_UNKNOWN;
}

/*
 * Rank RK's GPU evidently never reached proxy op OP: data came for one of
 * its receives and waits unconsumed, and nothing of the op was produced
 * or consumed
 */
static bool gpu_not_in_op(const struct an_rank *rk, uint64_t op)
{
	bool waiting = false;
	uint32_t i;

	for (i = 0; i < rk->nsubs; i++) {
		const struct an_progress *p = &rk->subs[i];

		if (p->op != op)
			continue;
		if (p->done || (p->dir == AN_SEND && p->transmitted))
			return false;
		waiting |= p->dir == AN_RECV && p->received > p->done;
	}
	return waiting;
}

/*
 * The rounds of C still open for some live rank: the lowest collective
 * seq one never entered (*ENTERED, entered + 1) and the lowest one whose
 * proxy op is unfinished on one (*OPEN); INT64_MAX none.  Not tier B: a
 * CPU that syncs once a step leaves every op of the step "incomplete"
 * there, on every rank, until the sync returns.
 */
static void rounds_open(const struct an_comm *c, int64_t *entered, int64_t *open)
{
	int32_t k;
	uint32_t i;

	*entered = *open = INT64_MAX;
	for (k = 0; k < c->nranks; k++) {
		const struct an_rank *o = &c->r[k];

		if (!live(o))
			continue;
		if (o->entered + 1 < *entered)
			*entered = o->entered + 1;
		for (i = 0; i < o->nsubs; i++) {
			const struct an_progress *p = &o->subs[i];
			int64_t seq;

			if (!an_coll_op(p->op) || !sub_open(p))
				continue;
			seq = sub_coll_seq(o, p);
			if (seq >= 0 && seq < *open)
				*open = seq;
		}
	}
}

/*
 * A process's GPU, placed at op GOP of comm GC by the oldest open proxy op
 * (entered at BEST_T), that shows it never reached it (gpu_not_in_op) is
 * behind a call it launched earlier.  A collective its proxy finished (so
 * the GPU reached it) that tier B has not seen complete, in a stalled comm
 * whose round is still open for another rank (rounds_open), holds it
 * there: the op's parts within its host have no proxy op and may still
 * wait (a broadcast's root sending to a dead process on its host, random
 * job 1195).  The latest such call entered before BEST_T.  GRANK: the
 * process's rank in GC.  One pass over the comms' ranks.
 */
static void gpus_behind(struct an *an, struct an_comm **cs, int n, uint32_t np,
			uint64_t *best_t, struct an_comm **gc, uint64_t *gop, const int32_t *grank)
{
	bool *refuted = calloc(np, sizeof(*refuted)), any = false;
	uint64_t *cand_t = calloc(np, sizeof(*cand_t));
	uint32_t p;
	int i;

	if (!refuted || !cand_t)
		goto out;
	for (p = 0; p < np; p++)
		any |= refuted[p] = gc[p] && best_t[p] && grank[p] >= 0 &&
				    grank[p] < gc[p]->nranks &&
				    gpu_not_in_op(&gc[p]->r[grank[p]], gop[p]);
	for (i = 0; any && i < n; i++) {
		struct an_comm *c = cs[i];
		int64_t entered = -1, open = -1, s;
		int32_t r;

		for (r = 0; r < c->nranks; r++) {
			const struct an_rank *rk = &c->r[r];

			p = rk->proc;
			if (!p || p > np || !refuted[p - 1] || !live(rk) || !rk->tierb ||
			    rk->op_off_ok != 1)
				continue;
			if (entered < 0)
				rounds_open(c, &entered, &open);
			for (s = rk->entered; s > rk->completed && rk->entered - s < AN_HIST; s--) {
				const struct an_sig *sg = hist_at(rk, s);

				/* another rank never entered it, or has it open (not this one: its proxy finished it) */
				if (!sg || !sg->t_enter || sg->t_enter >= best_t[p - 1] ||
				    sg->t_enter <= cand_t[p - 1] || s < rk->op_off ||
				    rk->op_done[(uint64_t)s % AN_HIST].seq != s ||
				    !(entered <= s || open <= s))
					continue;
				cand_t[p - 1] = sg->t_enter;
				if (an->debug)
					fprintf(stderr, "an: gpu of pid %u not in op %llx of comm"
						" %016llx (its data waits): behind comm %016llx"
						" seq %lld\n", an->procs[p - 1].pid,
						(unsigned long long)gop[p - 1],
						(unsigned long long)gc[p - 1]->hash,
						(unsigned long long)c->hash, (long long)s);
				gc[p - 1] = c;
				gop[p - 1] = ((uint64_t)(s - rk->op_off) << 1) + 1;
			}
		}
	}
	for (p = 0; p < np; p++)
		if (cand_t[p])
			best_t[p] = cand_t[p];
out:
	free(refuted);
	free(cand_t);
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
void an_locate_gpus(struct an *an, struct an_comm **cs, int n)
{
	uint64_t *best_t, *unk_t, *mop, *aop, *sop;
	uint32_t p, np = an->nprocs ? an->nprocs : 1, *nmem, *nat, *nsent;
	struct an_comm **gc, **mc, **ac, **sc;
	uint64_t *gop;
	int32_t *grank;
	bool changed = false, *known;
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
	nsent = calloc(np, sizeof(*nsent));
	sc = calloc(np, sizeof(*sc));
	sop = calloc(np, sizeof(*sop));
	grank = calloc(np, sizeof(*grank));
	known = calloc(np, sizeof(*known));
	if (!best_t || !unk_t || !gc || !gop || !nmem || !mc || !mop || !nat || !ac || !aop ||
	    !nsent || !sc || !sop || !grank || !known)
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
			if (h == AN_HOLD_MEM_SENT) {
				nsent[p - 1]++;
				sc[p - 1] = c;
				sop[p - 1] = op;
			}
			if (h >= AN_HOLD_MEM) {
				nmem[p - 1] += h == AN_HOLD_MEM &&
						loc_mem_both_sequences(&c->r[r]) ? 2 : 1;
				mc[p - 1] = c;
				mop[p - 1] = op;
				if (h >= AN_HOLD_MEM_AT) {
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
				grank[p - 1] = r;
			}
		}
	}
	for (p = 0; p < an->nprocs; p++) {
		known[p] = !unk_t[p] || (best_t[p] && unk_t[p] > best_t[p]);

		/*
		 * Ops seen only in a look at memory have no launch time: the
		 * GPU is at the one such op when it is all there is, and
		 * unknown among several (a comm whose open ops are of both id
		 * sequences counts as two: loc_mem_both_sequences).
		 */
		if (nmem[p] == 1 && !best_t[p] && !unk_t[p]) {
			gc[p] = mc[p];
			gop[p] = mop[p];
		} else if (nsent[p] == 1 && !best_t[p] && !unk_t[p]) {
			/*
			 * of several, the one whose data left it while it
			 * waits: the GPU reached it and cannot pass it (random
			 * job 702).  Where an op no proxy data places is
			 * pending too (an intra-node comm), it stays unknown
			 * as before: placed, random job 672's two GPUs stuck
			 * in one such pair comm gave two equal claims, and
			 * the graph named one of them
			 */
			gc[p] = sc[p];
			gop[p] = sop[p];
		} else if (nat[p] == 1 && !best_t[p] && !unk_t[p]) {
			/* of several, the one its flows show it executes */
			gc[p] = ac[p];
			gop[p] = aop[p];
		} else if (nmem[p]) {
			known[p] = false;
		}
		if (!known[p] || !best_t[p])
			grank[p] = -1;	/* placed without a launch time: as it is */
		if (!known[p])
			gc[p] = NULL, gop[p] = 0;
	}
	gpus_behind(an, cs, n, an->nprocs, best_t, gc, gop, grank);
	for (p = 0; p < an->nprocs; p++) {
		struct an_proc *pr = &an->procs[p];

		changed |= pr->gpu_known != known[p] || pr->gpu_comm != gc[p] ||
			   pr->gpu_op != gop[p];
		pr->gpu_known = known[p];
		pr->gpu_comm = gc[p];
		pr->gpu_op = gop[p];
		pr->gpu_t = gc[p] && best_t[p] ? best_t[p] : 0;
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
	free(nsent);
	free(sc);
	free(sop);
	free(grank);
	free(known);
}
