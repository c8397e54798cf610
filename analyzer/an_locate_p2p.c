// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * p2p hangs (Send/Recv): rank r's n-th send to p pairs with p's n-th
 * receive from r.  An unmatched op names the peer that never posted its
 * side (H1), a differing count or dtype is H2, matched but not completing
 * is H3 (the proxy counters, an_locate_h3.c).  Counts from the attach are
 * never compared: such pairs are matched by what is still open.
 */
#include <inttypes.h>
#include "an_locate_int.h"
#include <linux/types.h>
#include "ccld.h"

/* ---- p2p: sends of r to p pair with receives of p from r, in order ---- */

/* a send and the receive it pairs with agree: the same count and type */
static bool p2p_sig_eq(const struct an_sig *a, const struct an_sig *b)
{
	return a->count == b->count && a->dtype == b->dtype;
}

/*
 * p2p known only from a look at memory (the attach snapshot): no counter
 * of sends and receives exists, but ranks' proxies hold open p2p ops.  The
 * ranks that hold one wait; their flows say who waits for whom (Table 4).
 * p2p ids are each rank's own count per channel: never compared across
 * ranks, the round is the lowest open id of the first waiting rank, as
 * that rank counts.
 */
static void locate_p2p_mem(struct an *an, struct an_comm *c, struct an_status *st)
{
	uint64_t op = 0;
	int32_t r;
	uint32_t i;

	if (!c->st.open_op || an_coll_op(c->st.open_op))
		return;
	for (r = 0; r < c->nranks; r++) {
		const struct an_rank *rk = &c->r[r];
		uint64_t lo = 0;

		for (i = 0; live(rk) && rk->mem_open && i < rk->nsubs; i++) {
			const struct an_progress *p = &rk->subs[i];

			if (p->op && !an_coll_op(p->op) && p->from_mem && sub_open(p) &&
			    (!lo || p->op < lo))
				lo = p->op;
		}
		if (!lo)
			continue;
		add_wait(an, st, r);
		if (!op)
			op = lo;
	}
	if (!st->nwait)
		return;
	st->strength = ST_STRONG;
	st->p2p = true;
	st->seq = (int64_t)((op - 1) >> 1);
	st->fn = CCLD_FN_SEND;
	if (loc_t4(an, c, st)) {
		an_text(st, " (open p2p ops of comm %016" PRIx64 ", as memory holds them)", c->hash);
		st->untouched = loc_untouched(an, c, st);
		return;
	}
	st->cls = AN_H3;
	for (i = 0; i < st->nwait; i++)
		add_cul(an, st, st->wait[i]);
	loc_rank_list(st, st->cul, st->ncul);
	an_text(st, " hold p2p ops of comm %016" PRIx64 " open (read from memory);"
		" no progress data tells which one is stuck: all are listed", c->hash);
}

/* both ends of a p2p pair as culprits, the lower rank first */
static void add_cul_pair(struct an *an, struct an_status *st, int32_t a, int32_t b)
{
	add_cul(an, st, a < b ? a : b);
	add_cul(an, st, a < b ? b : a);
}

/*
 * H2 on a p2p pair: W's op differs from its peer's matching one P.  Fills
 * VA / VB (LEN bytes each) with the two values and returns the field.
 */
static const char *p2p_h2(struct an *an, struct an_status *st, int32_t wr,
			  int32_t cr, const struct an_sig *w, const struct an_sig *p,
			  char *va, char *vb, size_t len)
{
	struct an_sig mine = *w;
	const char *f;

	mine.fn = p->fn;	/* Send pairs with Recv */
	f = loc_sig_diff(&mine, p, va, vb, len);
	st->cls = AN_H2;
	add_cul_pair(an, st, wr, cr);
	an_val_s(st, "field", f);
	an_val_s(st, "majority", va);
	an_val_s(st, "minority", vb);
	return f;
}

/*
 * Two ranks' p2p counts toward each other name the same ops only when both
 * count from the comm's creation.  A count from the attach started at
 * whatever op each side was at then: those pairs are matched by what is
 * still open instead (p2p_unaligned).
 */
static bool p2p_comparable(const struct an_p2p *p, const struct an_p2p *q, int d)
{
	return !p->from_attach[d] && (!q || !q->from_attach[1 - d]);
}

/*
 * Every op R entered in direction D toward P's peer finished at its proxy
 * (tier C on that connection), and none is open there: the GPU is past
 * them although tier B, one completion per step, has not said so yet.
 */
static bool p2p_proxy_done(const struct an_rank *r, const struct an_p2p *p, int d)
{
	uint32_t i;

	if (!r->tierc || !p->pch[d] || p->pdone[d] < p->n[d])
		return false;
	for (i = 0; i < r->nsubs; i++) {
		const struct an_progress *o = &r->subs[i];

		if (o->op && !an_coll_op(o->op) && o->peer == p->peer &&
		    (int)o->dir == d && sub_open(o))
			return false;
	}
	return true;
}

/* direction D of P (a rank's p2p toward one peer) has an op in flight */
static bool p2p_in_flight(const struct an_rank *r, const struct an_p2p *p, int d)
{
	return (p->n[d] && p->nret[d] < p->n[d]) ||
	       (r->tierb && p->ndone[d] < p->n[d] && !p2p_proxy_done(r, p, d)) ||
	       (!r->tierb && p->n[d] && loc_open_op(r, NULL));
}

/* its oldest op of direction D not finished, in its own count */
static int64_t p2p_first_open(const struct an_rank *r, const struct an_p2p *p, int d)
{
	if (r->tierb && p->ndone[d] < p->n[d])
		return p->ndone[d];
	return p->nret[d] < p->n[d] ? p->nret[d] : p->n[d] - 1;
}

/*
 * Direction D of rank R's p2p Q toward one peer (NULL: none posted) has
 * nothing open: every op R posted there returned and finished on its GPU
 * (tier B).  A peer's op waiting on that direction waits for an op R has
 * not posted, whatever each side counts from.
 */
static bool p2p_none_open(const struct an_rank *r, const struct an_p2p *q, int d)
{
	return r->tierb && (!q || (q->ndone[d] >= q->n[d] && q->nret[d] >= q->n[d]));
}

/*
 * The flow the progress data located (loc_t4) is a send its proxy holds
 * for the remote receiver ("not transmitted: the receiver is not ready").
 * A receiver with nothing open toward that sender has not posted the
 * receive the send waits for: it never entered it (H1), and no network
 * fault is needed to explain the hang (random job 982: a pipeline stage's
 * CPU stopped between steps; rank 0's exchange with rank 1 was the pair
 * found open, the flow from there rank 1's send to the stopped rank).
 */
static void receiver_never_posted(struct an *an, struct an_comm *c, struct an_status *st)
{
	int32_t snd = st->t4_rank, rcv = st->t4_peer;
	const struct an_rank *pr;
	char buf[LOC_PROC_WORDS_MAX];

	if (st->cls != AN_H3 || st->t4 != AN_T4_NOT_TRANSMITTED || !st->t4_remote ||
	    snd < 0 || snd >= c->nranks || rcv < 0 || rcv >= c->nranks)
		return;
	pr = &c->r[rcv];
	if (!live(pr) || !p2p_none_open(pr, an_p2p_find(pr, snd), 1))
		return;
	st->cls = AN_H1;
	st->ncul = 0;
	add_cul(an, st, rcv);
	st->t4 = AN_T4_NONE;
	st->t4_remote = false;
	st->t4_rank = st->t4_peer = -1;
	an_text(st, "; rank %d has no Recv toward rank %d open (every one it posted"
		" finished on its GPU): it never entered the one that send waits for (%s)",
		rcv, snd, loc_proc_words(an, pr, buf, sizeof(buf)));
	an_val_i(st, "receiver_never_posted", 1);
}

/*
 * Rank WR waits in direction WD toward CR, and their counts are not
 * comparable (counted from the attach).  Ops of a pair complete in order
 * and a send cannot complete before its data arrived, so: a peer whose GPU
 * (tier B) finished every op it posted toward WR, and that is in no call
 * toward it, never posted the match (H1); two sides with exactly one op
 * open toward each other hold the matching pair (H2 if they differ).
 */
static void p2p_unaligned(struct an *an, struct an_comm *c, struct an_status *st,
			  int32_t wr, const struct an_p2p *wp, int wd, int32_t cr)
{
	const struct an_rank *w = &c->r[wr], *pr = &c->r[cr];
	const struct an_p2p *q = an_p2p_find(pr, wr);
	int od = 1 - wd;
	char buf[LOC_PROC_WORDS_MAX];

	if (proc_down(an, pr) || p2p_none_open(pr, q, od)) {
		st->cls = AN_H1;
		add_cul(an, st, cr);
		an_text(st, "rank %d has no %s toward rank %d open (every one it posted"
			" since the attach finished on its GPU) while rank %d waits in"
			" %s on comm %016" PRIx64 " (%s)", cr, od ? "Recv" : "Send", wr,
			wr, an_fn_name(st->fn), c->hash, loc_proc_words(an, pr, buf, sizeof(buf)));
	} else if (q && w->tierb && pr->tierb &&
		   wp->n[wd] - wp->ndone[wd] == 1 && q->n[od] - q->ndone[od] == 1 &&
		   !p2p_sig_eq(&wp->last[wd], &q->last[od])) {
		char va[32], vb[32];
		const char *f = p2p_h2(an, st, wr, cr, &wp->last[wd], &q->last[od],
				       va, vb, sizeof(va));

		an_text(st, "rank %d %s, the one op it has open toward rank %d, has %s %s;"
			" rank %d's one open %s toward it has %s", wr, an_fn_name(st->fn),
			cr, f, va, cr, od ? "Recv" : "Send", vb);
	} else if (add_wait(an, st, cr), !loc_t4(an, c, st)) {
		st->cls = AN_H3;
		add_cul_pair(an, st, wr, cr);
		an_text(st, "ranks %d and %d both have %s/%s open toward each other on"
			" comm %016" PRIx64 "; no progress data tells which one is stuck",
			wr, cr, an_fn_name(st->fn), od ? "Recv" : "Send", c->hash);
	} else {
		receiver_never_posted(an, c, st);
	}
	an_text(st, " (p2p counted from the attach: matched by what is open, not by count)");
	an_val_s(st, "seq_from", "attach");
}

/*
 * Direction D of rank R's p2p P toward its peer (in C) is unmatched: R
 * posted more ops than the peer posted toward it, counted alike (from the
 * comm's creation), and one of them is in flight.
 */
static bool p2p_unmatched(const struct an_comm *c, const struct an_rank *r,
			  const struct an_p2p *p, int d)
{
	int32_t self = (int32_t)(r - c->r);
	const struct an_p2p *q;

	if (p->peer < 0 || p->peer >= c->nranks)
		return false;
	q = an_p2p_find(&c->r[p->peer], self);
	return p2p_comparable(p, q, d) && p->n[d] > (q ? q->n[1 - d] : 0) &&
	       p2p_in_flight(r, p, d);
}

/*
 * When rank R entered its unmatched op (direction D toward P's peer): the
 * first one the peer's count does not match; 0 where not known (beyond the
 * entries kept)
 */
static uint64_t unmatched_entered(const struct an_comm *c, const struct an_rank *r,
				  const struct an_p2p *p, int d)
{
	const struct an_p2p *q = an_p2p_find(&c->r[p->peer], (int32_t)(r - c->r));
	int64_t k = q ? q->n[1 - d] : 0;

	return p->n[d] - k > AN_P2P_HIST ? 0 : p->t_hist[d][(uint64_t)k % AN_P2P_HIST];
}

/*
 * The peer may not have reached R's unmatched op (direction D toward P's
 * peer) yet: R entered it after round SEQ of the comm, so on R's stream it
 * queues behind the round, and the peer entered nothing of the comm after
 * that round (blocked behind it, e.g. a host sync while its GPU is stuck
 * in the round).  A peer that entered a later round went past the op: it
 * skipped it.  False where an entry is not known.
 */
static bool unmatched_after_round(const struct an_comm *c, const struct an_rank *r,
				  const struct an_p2p *p, int d, int64_t seq)
{
	const struct an_sig *sg = &r->hist[(uint64_t)seq % AN_HIST];
	uint64_t te;

	if (seq < 0 || sg->seq != seq || !sg->t_enter || c->r[p->peer].entered != seq)
		return false;
	te = unmatched_entered(c, r, p, d);
	return te && te > sg->t_enter;
}

/*
 * Counts aligned, rank R's unmatched op (direction D toward P's peer): the
 * first of the comm's rounds (from SEQ, the stuck one) that R entered after
 * that op, the peer entered too: the comm's ops come in one order on every
 * rank, so the peer's matching op comes before that round, and its CPU went
 * past it: it skipped its side, it is not held before it (random job 424: a
 * pipeline stage left a send out of one step's group, the next step's send
 * matched its peer's earlier receive, and both then entered the world's
 * next all-reduce).  The round's number in *PAST.  False where an entry is
 * not known.
 */
static bool unmatched_went_past(const struct an_comm *c, const struct an_rank *r,
				const struct an_p2p *p, int d, int64_t seq, int64_t *past)
{
	uint64_t te = unmatched_entered(c, r, p, d);
	int64_t s;

	if (!te)
		return false;
	for (s = seq; s >= 0 && s <= r->entered; s++) {
		const struct an_sig *sg = hist_at(r, s);

		if (!sg || !sg->t_enter)
			return false;
		if (sg->t_enter > te) {
			*past = s;
			return c->r[p->peer].entered >= s;
		}
	}
	return false;
}

/*
 * Counted from the attach (not comparable), direction D of rank R's P
 * waits for an op its peer never posted: R's oldest open op there was
 * entered before R entered the comm's round SEQ; the peer posted ops
 * toward R since the attach, its GPU finished every one (ops of a pair
 * complete in order: none of them is R's match), and it entered round SEQ
 * itself, so its CPU went past the pair (PyTorch's pipeline on the world
 * comm: a stage left a send out, and both sides then entered the world's
 * all-reduce).
 */
static bool p2p_missing_unaligned(const struct an_comm *c, const struct an_rank *r,
				  const struct an_p2p *p, int d, int64_t seq)
{
	const struct an_sig *sg = hist_at(r, seq);
	const struct an_rank *pr;
	const struct an_p2p *q;
	int od = 1 - d;
	int64_t k;
	uint64_t te;

	if (!sg || !sg->t_enter || p->peer < 0 || p->peer >= c->nranks)
		return false;
	pr = &c->r[p->peer];
	q = an_p2p_find(pr, (int32_t)(r - c->r));
	if (!q || p2p_comparable(p, q, d) || !live(pr) || !pr->tierb || pr->entered < seq ||
	    q->n[od] <= 0 || q->ndone[od] < q->n[od] || q->nret[od] < q->n[od] ||
	    !p2p_in_flight(r, p, d))
		return false;
	k = p2p_first_open(r, p, d);
	if (k < 0 || p->n[d] - k > AN_P2P_HIST)
		return false;
	te = p->t_hist[d][(uint64_t)k % AN_P2P_HIST];
	return te && te < sg->t_enter;
}

bool loc_p2p_unmatched(const struct an_comm *c, int64_t seq)
{
	int32_t i;
	uint32_t j;
	int d;

	for (i = 0; i < c->nranks; i++)
		for (j = 0; live(&c->r[i]) && j < c->r[i].np2p; j++)
			for (d = 0; d < 2; d++)
				if ((p2p_unmatched(c, &c->r[i], &c->r[i].p2p[j], d) &&
				     !unmatched_after_round(c, &c->r[i], &c->r[i].p2p[j], d, seq)) ||
				    p2p_missing_unaligned(c, &c->r[i], &c->r[i].p2p[j], d, seq))
					return true;
	return false;
}

/*
 * Rank R cannot run (stopped, exited) with its op st->fn seq st->seq toward
 * rank W entered, not finished, W's matching op entered too: R holds the
 * pair, W (in st's waiters) waits on it
 */
static void stopped_in(struct an *an, const struct an_comm *c, struct an_status *st,
		       int32_t r, int32_t w, bool aligned)
{
	char buf[LOC_PROC_WORDS_MAX];

	st->cls = AN_H1;
	add_cul(an, st, r);
	an_text(st, "rank %d stopped in %s seq %" PRId64 " toward rank %d on comm"
		" %016" PRIx64 " (%s)%s; rank %d waits on it", r, an_fn_name(st->fn),
		st->seq, w, c->hash, loc_proc_words(an, &c->r[r], buf, sizeof(buf)),
		aligned ? "" : " (p2p counted from the attach)", w);
	an_val_i(st, "peer", w);
}

void loc_p2p(struct an *an, struct an_comm *c, struct an_status *st, int64_t round)
{
	int32_t i, wr = -1, cr = -1;
	const struct an_p2p *wp = NULL;
	int wd = 0, pass;
	int64_t wseq = 0, past = -1;
	bool aligned = true, peer_said = false, went_past = false;
	uint32_t j;
	char buf[LOC_PROC_WORDS_MAX];

	/*
	 * An op its peer never posted (pass 0) names a culprit outright; any
	 * op in flight (pass 1) only says where the comm waits.  Of several
	 * ranks waiting toward each other (an all-to-all that one rank left
	 * one send out of jams every peer's later ops), the first in flight
	 * is often a victim whose peer is stuck too.
	 */
	for (pass = 0; pass < 2 && wr < 0; pass++)
		for (i = 0; i < c->nranks && wr < 0; i++) {
			const struct an_rank *r = &c->r[i];

			if (!live(r))
				continue;
			for (j = 0; j < r->np2p && wr < 0; j++) {
				const struct an_p2p *p = &r->p2p[j];
				const struct an_p2p *q;
				int d;

				if (p->peer < 0 || p->peer >= c->nranks)
					continue;
				q = an_p2p_find(&c->r[p->peer], i);
				for (d = 0; d < 2; d++) {
					int64_t theirs = q ? q->n[1 - d] : 0;
					bool cmp = p2p_comparable(p, q, d);

					/* in flight: unmatched, in the call, not completed
					 * by the GPU (tier B) or open at the proxy (tier C) */
					if (!pass && !cmp && round >= 0 &&
					    p2p_missing_unaligned(c, r, p, d, round))
						went_past = true;
					if (pass ? (cmp && p->n[d] > theirs) || p2p_in_flight(r, p, d) :
						   p2p_unmatched(c, r, p, d) || went_past) {
						wr = i;
						wp = p;
						wd = d;
						aligned = cmp;
						wseq = !cmp ? p2p_first_open(r, p, d) :
						       p->n[d] > theirs ? theirs : p->n[d] - 1;
						cr = p->peer;
						break;
					}
				}
			}
		}
	if (wr < 0) {
		locate_p2p_mem(an, c, st);
		return;
	}
	st->strength = ST_STRONG;
	st->p2p = true;
	st->seq = wseq;
	st->fn = wd ? CCLD_FN_RECV : CCLD_FN_SEND;
	/* pass is 2 where only pass 1 (any op in flight) found one */
	if (pass == 2 && proc_down(an, &c->r[wr]) && !proc_down(an, &c->r[cr])) {
		/*
		 * No op is unmatched and the first rank with one in flight
		 * cannot run (stopped, exited): it holds the pair, its
		 * peer waits on it
		 */
		add_wait(an, st, cr);
		stopped_in(an, c, st, wr, cr, aligned);
		return;
	}
	add_wait(an, st, wr);
	st->p2p_waiter = wr;
	if (!aligned) {
		p2p_unaligned(an, c, st, wr, wp, wd, cr);
		/*
		 * the peer entered the comm's later round: it skipped its side
		 * (it waits where the hang it began holds it, not the cause)
		 */
		st->spmd = went_past && st->cls == AN_H1;
	} else {
		const struct an_p2p *q = an_p2p_find(&c->r[cr], wr);
		int64_t theirs = q ? q->n[1 - wd] : 0;
		const struct an_rank *pr = &c->r[cr];

		if (theirs > wseq && proc_down(an, pr)) {
			/* the peer entered its side of the pair and cannot run */
			st->fn = wd ? CCLD_FN_SEND : CCLD_FN_RECV;
			stopped_in(an, c, st, cr, wr, true);
			peer_said = true;
		} else if (theirs <= wseq) {
			st->cls = AN_H1;
			add_cul(an, st, cr);
			an_text(st, "rank %d never entered the %s matching rank %d's"
				" %s seq %" PRId64 " on comm %016" PRIx64 " (%s)",
				cr, wd ? "Send" : "Recv", wr, an_fn_name(st->fn),
				wseq, c->hash, loc_proc_words(an, pr, buf, sizeof(buf)));
			st->spmd = round >= 0 &&
				   unmatched_went_past(c, &c->r[wr], wp, wd, round, &past);
			if (st->spmd)
				an_text(st, "; it skipped it: it entered the comm's round"
					" %" PRId64 ", which rank %d entered after that %s",
					past, wr, an_fn_name(st->fn));
		} else if (!p2p_sig_eq(&wp->last[wd], &q->last[1 - wd]) &&
			   wp->last[wd].seq == wseq &&
			   q->last[1 - wd].seq == wseq) {
			char va[32], vb[32];
			const char *f = p2p_h2(an, st, wr, cr, &wp->last[wd],
					       &q->last[1 - wd], va, vb, sizeof(va));

			an_text(st, "rank %d %s seq %" PRId64 " has %s %s, its peer"
				" rank %d has %s", wr, an_fn_name(st->fn), wseq,
				f, va, cr, vb);
		} else if (add_wait(an, st, cr), !loc_t4(an, c, st)) {
			st->cls = AN_H3;
			add_cul_pair(an, st, wr, cr);
			an_text(st, "ranks %d and %d entered matching %s/%s seq %"
				PRId64 " on comm %016" PRIx64 "; no progress data"
				" tells which one is stuck", wr, cr,
				an_fn_name(st->fn), wd ? "Send" : "Recv", wseq,
				c->hash);
		} else {
			receiver_never_posted(an, c, st);
		}
	}
	/* stopped_in's peer is the rank that waits on the culprit */
	if (!peer_said)
		an_val_i(st, "peer", cr);
	if (c->r[wr].in_call || wp->nret[wd] < wp->n[wd]) {
		uint64_t a = age(an, an_rank_host(an, &c->r[wr]),
				 wp->t_enter[wd]);

		st->max_call_age_ns = a;
		an_text(st, "; rank %d is blocked inside %s, a call that never"
			" returned (%.1f s)", wr, an_fn_name(st->fn), secs(a));
		an_val_i(st, "blocked_in_call", 1);
	}
}
