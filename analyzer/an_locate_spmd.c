// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A rank that skipped a collective (docs/analyzer.md, "Skipped ops"): the
 * ranks of a job run one program, so every member of a comm C enters as
 * many of C's ops before a given round of a bigger comm D (the world) that
 * holds them all.  A rank that skipped one of C's ops runs on into ops its
 * peers' streams hold behind it: read op by op, its absence looks like a
 * rank held by its GPU (a cascade), or the next round looks entered by all
 * (H3, the skipper a step late).  Counted against D it stands out: fewer
 * of C's ops before D's round (it skipped one of C's) or more (it skipped
 * one of D's, and ran ahead on C).  Which of C's ranks is the odd one is
 * what the other comms of C's role say (their ranks agree on one count,
 * one of C's ranks' counts), else the majority of C's ranks.
 */
#include <inttypes.h>
#include <stdio.h>
#include "an_locate_int.h"

/* the rank of D whose process is rank K of C, -1 */
static int32_t rank_in(const struct an_comm *d, const struct an_comm *c, int32_t k)
{
	int32_t j;

	for (j = 0; c->r[k].proc && j < d->nranks; j++)
		if (d->r[j].proc == c->r[k].proc)
			return j;
	return -1;
}

/*
 * The highest seq of C that rank K entered before it entered D's round T
 * (one process: one clock); -2 unknown (its entries are not in the history)
 */
static int64_t before(const struct an_comm *c, int32_t k, const struct an_comm *d, int64_t t)
{
	const struct an_rank *rd, *rc = &c->r[k];
	const struct an_sig *gd;
	int64_t best = -2, oldest = INT64_MAX, q;
	int32_t j = rank_in(d, c, k);
	uint32_t i;

	if (j < 0)
		return -2;
	rd = &d->r[j];
	gd = &rd->hist[(uint64_t)t % AN_HIST];
	if (gd->seq != t || !gd->t_enter || rc->entered < 0)
		return -2;
	for (i = 0; i < AN_HIST; i++) {
		const struct an_sig *g = &rc->hist[i];

		if (g->seq < 0 || !g->t_enter)
			continue;
		if (g->seq < oldest)
			oldest = g->seq;
		if (g->t_enter < gd->t_enter && g->seq > best)
			best = g->seq;
	}
	/* every entry kept came after D's round: the count is older than them */
	if (best == -2 && oldest > 0)
		return -2;
	/*
	 * A seq it entered after BEST with no entry kept (a record a full ring
	 * lost; a look at its memory says it launched it): when is not known,
	 * maybe before D's round
	 */
	if (best == -2)
		best = -1;
	for (q = best + 1; q <= rc->entered; q++) {
		const struct an_sig *g = &rc->hist[(uint64_t)q % AN_HIST];

		if (g->seq != q || !g->t_enter)
			return -2;
	}
	return best;
}

/* D's latest round that every rank of D entered, -1 none */
static int64_t common_round(const struct an_comm *d)
{
	int64_t t = INT64_MAX;
	int32_t j;

	for (j = 0; j < d->nranks; j++) {
		if (!d->r[j].proc || d->r[j].entered < 0)
			return -1;
		if (d->r[j].entered < t)
			t = d->r[j].entered;
	}
	return t;
}

/*
 * The biggest other comm that holds every process of C, NULL.  One of C's
 * size holds the same processes (a DP comm over the whole job, beside the
 * world): counted against each other as well (random job 1183).
 */
static struct an_comm *outer_comm(struct an *an, const struct an_comm *c)
{
	struct an_comm *best = NULL;
	struct hkey key;
	size_t it;
	void *v;

	for (it = 0; hmap_next(&an->comms, &it, &key, &v);) {
		struct an_comm *d = v;
		int32_t k;

		if (d == c || d->nranks < c->nranks || (best && d->nranks <= best->nranks))
			continue;
		for (k = 0; k < c->nranks && rank_in(d, c, k) >= 0; k++)
			;
		if (k == c->nranks)
			best = d;
	}
	return best;
}

/* the op type rank K of C entered at SEQ, -1 not kept */
static int fn_at(const struct an_comm *c, int32_t k, int64_t seq)
{
	const struct an_sig *g = hist_at(&c->r[k], seq);

	return g ? g->fn : -1;
}

/*
 * The count that the other comms of C's role inside D agree on: every
 * rank of such a comm entered as many of its ops before D's round T, and
 * that count and the op type there are one of C's ranks' (CNT).  Comms of
 * C's size with another count are of another role (a job's TP pairs make
 * two ops a step where its DP pairs make one) and say nothing of C.
 * -2: none, or two such comms disagree.
 */
static int64_t reference_count(struct an *an, const struct an_comm *c,
			       const struct an_comm *d, int64_t t, const int64_t *cnt)
{
	int64_t ref = -2;
	struct hkey key;
	size_t it;
	void *v;

	for (it = 0; hmap_next(&an->comms, &it, &key, &v);) {
		const struct an_comm *o = v;
		int64_t n0 = -2, n;
		int32_t k;

		if (o == c || o == d || o->nranks != c->nranks)
			continue;
		for (k = 0; k < o->nranks; k++) {
			n = rank_in(d, o, k) >= 0 ? before(o, k, d, t) : -2;
			if (n == -2 || (k && n != n0))
				break;
			n0 = n;
		}
		if (k < o->nranks)
			continue;	/* not inside D, unknown, or odd itself */
		for (k = 0; k < c->nranks; k++)
			if (cnt[k] == n0 && fn_at(c, k, n0) == fn_at(o, 0, n0))
				break;
		if (k == c->nranks)
			continue;	/* another role */
		if (ref != -2 && ref != n0)
			return -2;
		ref = n0;
	}
	return ref;
}

/*
 * The seq rank ODD skipped, CNT being its count where rank REF's is one
 * more: the first seq kept where their op types differ (the ops after the
 * skipped one slid down by one: random job 1340, a broadcast left out,
 * the skipper's reduce-scatter in its seq), else the one after its count
 */
static int64_t skipped_seq(const struct an_comm *c, int32_t odd, int64_t cnt, int32_t ref)
{
	int64_t q = cnt - AN_HIST + 1;

	for (q = q < 0 ? 0 : q; q <= cnt; q++) {
		int fo = fn_at(c, odd, q), fr = fn_at(c, ref, q);

		if (fo >= 0 && fr >= 0 && fo != fr)
			return q;
	}
	return cnt + 1;
}

bool loc_spmd_skip(struct an *an, struct an_comm *c, struct an_status *st)
{
	int64_t cnt[64], norm = -2, t;
	int32_t k, odd = -1, nsame = 0;
	struct an_comm *d;
	char hx[17];

	if (c->nranks < 2 || c->nranks > 64 || !(d = outer_comm(an, c)) ||
	    (t = common_round(d)) < 0)
		return false;
	for (k = 0; k < c->nranks; k++)
		if ((cnt[k] = before(c, k, d, t)) == -2)
			return false;
	norm = reference_count(an, c, d, t, cnt);
	if (norm == -2) {
		/* no other comm to go by: a strict majority of C's ranks */
		for (k = 0; k < c->nranks && norm == -2; k++) {
			int32_t j, n = 0;

			for (j = 0; j < c->nranks; j++)
				n += cnt[j] == cnt[k];
			if (2 * n > c->nranks)
				norm = cnt[k];
		}
		if (norm == -2)
			return false;
	}
	for (k = 0; k < c->nranks; k++) {
		if (cnt[k] == norm) {
			nsame++;
		} else if (odd >= 0) {
			return false;	/* one odd rank only */
		} else {
			odd = k;
		}
	}
	if (odd < 0 || !nsame)
		return false;
	an_evidence_clear(st);
	st->ncul = st->nwait = 0;
	st->cls = AN_H1;
	st->strength = ST_STRONG;
	st->barrier = st->p2p = false;
	st->t4 = AN_T4_NONE;
	st->t4_rank = st->t4_peer = -1;
	st->spmd = true;
	st->spmd_skipped = cnt[odd] < norm ? c->hash : d->hash;
	st->p2p_waiter = -1;
	st->seq = cnt[odd] < norm ? skipped_seq(c, odd, cnt[odd], odd ? 0 : 1) : norm + 1;
	st->fn = 0;
	add_cul(an, st, odd);
	for (k = 0; k < c->nranks; k++)
		if (k != odd)
			add_wait(an, st, k);
	for (k = 0; k < c->nranks && !st->fn; k++) {
		const struct an_sig *g = hist_at(&c->r[k], st->seq);

		if (g)
			st->fn = g->fn;
	}
	snprintf(hx, sizeof(hx), "%016" PRIx64, d->hash);
	if (cnt[odd] < norm) {
		an_text(st, "rank %d skipped seq %" PRId64 " of comm %016" PRIx64 ": it entered"
			" this comm's ops up to seq %" PRId64 " before round %" PRId64 " of comm"
			" %s, which holds every rank, where the others entered them up to seq"
			" %" PRId64 "; it went past the op, its peers' streams wait in it",
			odd, st->seq, c->hash, cnt[odd], t, hx, norm);
	} else {
		an_text(st, "rank %d ran ahead on comm %016" PRIx64 ": it entered this comm's"
			" ops up to seq %" PRId64 " before round %" PRId64 " of comm %s, which holds"
			" every rank, where the others entered them up to seq %" PRId64 ": it skipped"
			" an op of comm %s (its round %" PRId64 " there is the others' next)",
			odd, c->hash, cnt[odd], t, hx, norm, hx, t);
	}
	an_val_s(st, "rule", "skipped op (counts against a comm holding every rank)");
	an_val_i(st, "count", cnt[odd]);
	an_val_i(st, "peers_count", norm);
	an_val_i(st, "outer_round", t);
	return true;
}
