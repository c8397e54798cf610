// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A block of ranks whose GPUs reach a sampled comm's ops last together.
 * Ranks of one node that share an intra-node comm (a DP or TP comm on
 * NVLink, whose ops have no proxy steps to time) wait for each other there:
 * where one of them computes slower, all leave that op together and reach
 * the cross-node comm's next op together, after the other nodes' ranks.
 * No single rank is last by much, so the straggler rule finds none; the
 * block is what the hooks show, and the verdict names it as such: one of
 * these ranks is the straggler, which one the step records cannot tell.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "an_slow_int.h"

/* in 3 of 4 rounds each member, in 1 of 4 at most any other rank */
#define BLOCK_IN	0.75
#define BLOCK_OUT	0.25

static int by_duration(const void *a, const void *b)
{
	const struct blk_ent *x = a, *y = b;

	return x->dur < y->dur ? -1 : x->dur > y->dur;
}

/*
 * E's N entries sorted by duration: the last index before the largest gap
 * between neighbours (*GAP), -1 where there is none
 */
static int32_t largest_gap(struct blk_ent *e, int32_t n, double *gap)
{
	int32_t k, cut = -1;

	*gap = -1;
	qsort(e, (size_t)n, sizeof(*e), by_duration);
	for (k = 0; k + 1 < n; k++) {
		double g = e[k + 1].dur - e[k].dur;

		if (g > *gap) {
			*gap = g;
			cut = k;
		}
	}
	return cut;
}

void slow_note_block(struct an_slow *s, const struct slow_round *rd, int32_t nranks)
{
	double gap;
	int32_t k, n = 0, cut;

	/* a part sample's ranks only (an_slow_sample.c) */
	for (k = 0; k < nranks; k++) {
		if (s->samp_in && !s->samp_in[k])
			continue;
		s->blk_sort[n].dur = rd->dur[k];
		s->blk_sort[n].rank = k;
		n++;
	}
	if (n < 4)
		return;
	/* the shortest duration arrived last: the block is before the largest gap */
	cut = largest_gap(s->blk_sort, n, &gap);
	if (cut < 0 || !isfinite(gap))
		return;
	s->blk_rounds++;
	for (k = 0; k <= cut; k++) {
		int32_t r = s->blk_sort[k].rank;

		s->arr_blk[r]++;
		s->arr_blk_gap[r] += gap;
		if (rd->hold[r])
			s->arr_blk_holder[r] = rd->hold[r];
	}
}

bool slow_in_block(const struct an_slow *s, int32_t k)
{
	if (s->blk_parts)
		return s->part_blk[k];
	return s->arr_blk[k] >= BLOCK_IN * s->blk_rounds;
}

int32_t slow_block_first(const struct an_comm *c)
{
	int32_t k;

	for (k = 0; k < c->nranks; k++)
		if (slow_in_block(c->slow, k))
			return k;
	return -1;
}

/*
 * In a part, the block is last among the part's ranks only.  Where it is
 * last in the whole comm, the op ends soon after it arrives: its members
 * wait the op's own time, each other rank of the part that and the
 * block's lead.  Where they wait a quarter of the extra or more, or a
 * quarter of what the part's least waiting other rank waits, the op
 * waited for ranks outside the part, as across the parts
 * (slow_parts_block).  Random job 180: a pipeline stage's ranks 2-3,
 * waiting for the next stage's straggler's gradients, reached the world
 * op after ranks 0-1, then waited in it for the straggler's stage: 8 ms
 * for an extra of 25.6 in one run; 7.8 ms where ranks 0-1 waited 24, for
 * an extra over 31 in another.  Named as the block both times: wrong.
 */
static bool part_block_last(const struct an_comm *c, double extra_ns)
{
	const struct an_slow *s = c->slow;
	double most = 0, least = INFINITY;
	int32_t k;

	for (k = 0; k < c->nranks; k++) {
		double w;

		if (!s->samp_in[k] || !s->part_waitn[k])
			continue;
		w = s->part_wait[k] / s->part_waitn[k];
		if (slow_in_block(s, k) && w > most)
			most = w;
		else if (!slow_in_block(s, k) && w < least)
			least = w;
	}
	return !(extra_ns > 0 && most >= 0.25 * extra_ns) &&
	       !(isfinite(least) && most >= 0.25 * least);
}

uint32_t slow_arrival_block(const struct an_comm *c, double extra_ns, double *lead)
{
	const struct an_slow *s = c->slow;
	uint32_t n = 0;
	int32_t k;

	*lead = INFINITY;
	if (s->blk_rounds < ARR_MIN_ROUNDS)
		return 0;
	for (k = 0; k < c->nranks; k++) {
		if (slow_in_block(s, k)) {
			double l = s->arr_blk_gap[k] / s->arr_blk[k];

			n++;
			if (l < *lead)
				*lead = l;
		} else if (s->arr_blk[k] > BLOCK_OUT * s->blk_rounds) {
			return 0;	/* a block that changes: no one block */
		}
	}
	/*
	 * One rank is the straggler rule's; more than half is the others
	 * being early.  The lead must explain a quarter of the extra, as
	 * the straggler's must.
	 */
	if (n < 2 || 2 * n > (uint32_t)c->nranks || !isfinite(*lead) ||
	    (extra_ns > 0 && *lead < 0.25 * extra_ns))
		return 0;
	if (s->samp_in && !part_block_last(c, extra_ns))
		return 0;
	return n;
}

/*
 * The parts of a comm sampled a part at a time: a part's block rule cuts
 * within the part, never around it.  Where the straggler's node shares an
 * intra-node comm, its node's ranks reach the cross-node op last together,
 * and a part made of them alone shows ranks arriving within jitter of each
 * other (random job 61: ranks 0-3 of a world comm of 8, 0.3-2 ms apart in
 * rounds 29 ms longer than the baseline); the part of the other node
 * shows every rank waiting 38 ms in the same op, nobody last by much.
 * Each part alone names nobody; their waits together name the block.
 */
void slow_parts_reset(struct an_slow *s, int32_t nranks)
{
	int32_t k;

	for (k = 0; k < nranks; k++) {
		s->part_wait[k] = 0;
		s->part_waitn[k] = 0;
	}
	s->parts_slow = 0;
}

void slow_part_restart(struct an_slow *s, int32_t nranks)
{
	int32_t k;

	for (k = 0; k < nranks; k++)
		if (s->samp_in[k]) {
			s->part_wait[k] = 0;
			s->part_waitn[k] = 0;
		}
}

void slow_note_part_waits(struct an_slow *s, const struct slow_round *rd, int32_t nranks)
{
	int32_t k;

	for (k = 0; k < nranks; k++)
		if (s->samp_in[k] && isfinite(rd->dur[k])) {
			s->part_wait[k] += rd->dur[k];
			s->part_waitn[k]++;
		}
}

/*
 * A slowdown that ended while a later part was sampled leaves that part's
 * ranks waiting little, like a block's: each part's iterations must have
 * been slow (CCL-D's test on the starts known without hooks) in the main
 */
void slow_part_done(struct an_slow *s)
{
	if (s->samp_iters && 2 * s->samp_slow_iters > s->samp_iters)
		s->parts_slow++;
}

uint32_t slow_parts_block(const struct an_comm *c, double extra_ns, double *lead)
{
	struct an_slow *s = c->slow;
	int32_t k, n = c->nranks, cut;
	double gap;

	*lead = NAN;
	if (!s->samp_in || s->samp_part + 1 != s->samp_nparts || s->parts_slow != s->samp_nparts)
		return 0;
	for (k = 0; k < n; k++) {
		if (s->part_waitn[k] < ARR_MIN_ROUNDS)
			return 0;	/* a rank whose wait no part showed */
		s->blk_sort[k].dur = s->part_wait[k] / s->part_waitn[k];
		s->blk_sort[k].rank = k;
	}
	cut = largest_gap(s->blk_sort, n, &gap);
	/*
	 * As a part's block: 2 to half the ranks, its lead a quarter of the
	 * extra.  And the op ends soon after the block arrives: each of it
	 * waits under a quarter of the extra.  Where the extra is the
	 * network's, the last to arrive wait for the slow transfers too
	 * (random job 121, rank 0's link 5.9x slower, the world comm of 8 in
	 * 2 parts: ranks 0-3 waited 15.8 ms at most, 4-7 32.3 ms at least,
	 * for an extra of 33 ms)
	 */
	if (cut < 1 || 2 * (cut + 1) > n || !(extra_ns > 0) || gap < 0.25 * extra_ns ||
	    !(s->blk_sort[cut].dur < 0.25 * extra_ns))
		return 0;
	for (k = 0; k < n; k++)
		s->part_blk[k] = false;
	for (k = 0; k <= cut; k++)
		s->part_blk[s->blk_sort[k].rank] = true;
	s->blk_parts = true;
	*lead = gap;
	return (uint32_t)cut + 1;
}

/* the comm whose op every member's GPU came from, 0 where they differ */
static uint64_t block_holder(const struct an_comm *c)
{
	const struct an_slow *s = c->slow;
	uint64_t h = 0;
	int32_t k;

	for (k = 0; k < c->nranks; k++) {
		if (!slow_in_block(s, k))
			continue;
		if (!s->arr_blk_holder[k] || (h && s->arr_blk_holder[k] != h))
			return 0;
		h = s->arr_blk_holder[k];
	}
	return h;
}

void slow_block_evidence(const struct an *an, const struct an_comm *c, struct an_verdict *v,
			 double secs)
{
	const struct an_slow *s = c->slow;
	uint64_t h = block_holder(c);
	uint32_t n = 0;
	int32_t k;

	for (k = 0; k < c->nranks; k++)
		if (slow_in_block(s, k)) {
			slow_add_culprit(an, c, v, k);
			n++;
		}
	if (s->blk_parts) {
		double most = 0, least = INFINITY;

		for (k = 0; k < c->nranks; k++) {
			double w = s->part_wait[k] / s->part_waitn[k];

			if (slow_in_block(s, k) && w > most)
				most = w;
			else if (!slow_in_block(s, k) && w < least)
				least = w;
		}
		an_text(v, "; step hooks sampled the comm in %u parts, one after"
			" another, each rank's GPU arrival timed in its part's rounds:"
			" ranks", s->samp_nparts);
		for (k = 0; k < c->nranks; k++)
			if (slow_in_block(s, k))
				an_text(v, " %d", k);
		an_text(v, " wait %.1f ms at most in the op (mean), every other rank"
			" %.1f ms at least: they reach the op last together, none of"
			" them last by much", most / 1e6, least / 1e6);
		an_val_i(v, "block_parts", s->samp_nparts);
	} else {
		an_text(v, "; step hooks sampled %.1f s: ranks", secs);
		for (k = 0; k < c->nranks; k++)
			if (slow_in_block(s, k))
				an_text(v, " %d", k);
		an_text(v, " reach the op last together, %.1f ms after the others at"
			" least (mean, in %.0f%% or more of %u rounds), none of them last"
			" by much: they wait for each other in an op whose GPU-side start"
			" no record shows", s->blk_lead / 1e6, 100 * BLOCK_IN,
			s->blk_rounds);
	}
	if (h)
		an_text(v, " (their GPUs come from their op in comm %016" PRIx64 ")", h);
	an_text(v, "; one of them is the straggler (computation, S1), which one is"
		" undetermined");
	an_val_i(v, "undetermined", 1);
	an_val_i(v, "block_ranks", n);
	an_val_f(v, "block_lead_ms", s->blk_lead / 1e6);
	if (!s->blk_parts)
		an_val_i(v, "block_rounds", s->blk_rounds);
}

/*
 * A straggler's wait that no record shows.  C's sample names the rank whose
 * GPU reaches C's ops last; where its process is also in an intra-node comm
 * T (NVLink, P2P or SHM: no proxy steps, so no record says when a GPU left
 * T's ops) and the CPUs run ahead, the rank may be late from its own work
 * or from waiting in T for another of T's ranks: a slow GPU in a TP group
 * of one node holds all of the group in T's op, and each then reaches its
 * own cross-node comm last, in its own comm, after the same wait (random
 * job 724: TP 4 per node x DP 4, global rank 4 computing 6x slower, the DP
 * comms of global 1,5,9,13 and 0,4,8,12 naming ranks 5 and 4, each its GPU
 * last in 95-97% of 22 rounds by 12.3 ms).  Where T's rounds have known
 * starts its own detectors name its straggler, and C is a cascade of it.
 */
uint64_t slow_unseen_holder(const struct an *an, const struct an_comm *c, int32_t crank)
{
	struct hkey key;
	size_t it;
	void *v;

	/* member_of finds nothing for a rank whose process is not known */
	if (crank < 0 || crank >= c->nranks || !c->slow)
		return 0;
	for (it = 0; hmap_next(&an->comms, &it, &key, &v);) {
		const struct an_comm *t = v;
		const struct an_rank *tr;
		const struct an_sig *sg;
		int32_t k;

		if (t == c || t->nranks < 2 || !t->slow || !slow_runahead(t->slow) ||
		    !an_comm_intra_node(t) || (k = member_of(an, t, c, crank)) < 0)
			continue;
		tr = &t->r[k];
		if (tr->entered < 0)
			continue;
		/* it calls T between C's sampled rounds: T's ops are on its way */
		sg = &tr->hist[(uint64_t)tr->entered % AN_HIST];
		if (sg->seq == tr->entered && sg->t_enter >= c->slow->arr_t0)
			return t->hash;
	}
	return 0;
}

void slow_unseen_evidence(struct an *an, struct an_comm *c, struct an_verdict *v,
			  uint64_t holder)
{
	const struct an_comm *t = an_comm_get(an, holder, 0, false);
	char hex[24];
	int32_t k;

	if (!t)
		return;
	an_text(v, "; but its process is also in comm %016" PRIx64 " (%d ranks on one"
		" node, over intra-node transports: no record shows when a GPU leaves"
		" its ops), which it calls between these rounds: its GPU may have waited"
		" there for another of its ranks, which then reaches its own ops last"
		" alike; one of comm %016" PRIx64 "'s ranks is the straggler"
		" (computation, S1), which one is undetermined", holder, t->nranks,
		holder);
	/* T's other ranks, by process: rank -1 where one is not a rank of C */
	for (k = 0; k < t->nranks && v->ncul < AN_MAX_CULPRITS; k++) {
		const struct an_proc *p = an_proc_of(an, &t->r[k]);
		bool have = false;
		uint32_t i;

		if (!p)
			continue;
		for (i = 0; i < v->ncul; i++)
			have |= v->cul[i].host == p->host && v->cul[i].pid == p->pid;
		if (have)
			continue;
		v->cul[v->ncul].rank = member_of(an, c, t, k);
		v->cul[v->ncul].host = p->host;
		v->cul[v->ncul].pid = p->pid;
		v->ncul++;
	}
	v->ncul_total = v->ncul;
	/* a later incident naming one of them is a cascade of this one (slow_root_of) */
	c->slow->root_unseen = holder;
	snprintf(hex, sizeof(hex), "%016" PRIx64, holder);
	an_val_i(v, "undetermined", 1);
	an_val_s(v, "unseen_holder", hex);
	an_val_i(v, "unseen_holder_ranks", t->nranks);
}
