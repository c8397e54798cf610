// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A slow cascade followed to its root.  Comm C's straggler whose GPU came
 * late from an op of comm H makes C a cascade of H; where H has no incident
 * of its own, the job's slowdown has no root verdict at all.  That is the
 * rule, not the exception, where the CPUs run ahead of their GPUs (PyTorch):
 * a round's durations then include the GPU work queued before the op, so a
 * straggler's extra compute raises its TP comm's rounds little (measured on
 * the stand-in's PyTorch pattern, rank 2 computing 3x slower: 10.6 ms to
 * about 25 ms against a threshold of 2.29x), while the DP comm behind it,
 * which waits for the whole step's lateness at once, is ten times slower
 * and is the comm that opens an incident.
 *
 * C's step sample hooks its processes and those of the comms holding its
 * ranks (an_slow_sample.c), so H's rounds show every arrival too: each
 * round is noted here.  Where H's recent notes have one rank arriving
 * last, the others waiting for it most of their wait (C's straggler
 * itself, or the peer it waited for in H), its GPU coming from its own work
 * rather than straight from a third comm's op, that rank is the straggler
 * and H the root: its verdict comes first, C's cascade points at it, and
 * it ends when C's incident ends.  Anything less (no notes, no rank last
 * most of the time, the rank held there too) leaves C a cascade of H, as
 * before.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "an_slow_int.h"

/* notes older than this (on their host's clock) say nothing of now */
#define ARR_NOTE_AGE_NS	2000000000ull
/* H's straggler's peers waited this share of what C's did, at least */
#define CHAIN_WAIT_SHARE	0.5

void slow_note_arrivals(struct an_comm *c, const struct slow_round *rd)
{
	struct an_slow *s = c->slow;
	struct arr_note *n;
	int32_t last;
	double gap;

	if (rd->narr < (uint32_t)c->nranks || (last = slow_last_arriver(c, rd, &gap)) < 0)
		return;
	n = &s->notes[s->nnotes++ % ARR_NOTES];
	n->seq = rd->seq;
	n->fn = rd->fn;
	n->host = rd->host;
	n->t_end = rd->t_end;
	n->last = last;
	n->gap = gap;
	n->holder = slow_late_from(rd, last, gap);
}

/* the note I of H's kept ones, oldest first */
static const struct arr_note *note_at(const struct an_slow *s, uint32_t i)
{
	uint32_t n = s->nnotes < ARR_NOTES ? s->nnotes : ARR_NOTES;

	return &s->notes[(s->nnotes - n + i) % ARR_NOTES];
}

static bool note_recent(const struct an *an, const struct arr_note *n)
{
	uint64_t now = n->host < an->nhosts ? an->hosts[n->host].now : 0;

	return now <= n->t_end + ARR_NOTE_AGE_NS;
}

/* recent, and on HOST not before SINCE (a sample's start there; 0: any) */
static bool note_since(const struct an *an, const struct arr_note *n, uint32_t host,
		       uint64_t since)
{
	return note_recent(an, n) && (n->host != host || n->t_end >= since);
}

int32_t slow_noted_culprit(const struct an *an, const struct an_comm *h, uint32_t host,
			   uint64_t since, double *share, double *gap_ns, uint64_t *held,
			   uint32_t *rounds, uint32_t *nlast)
{
	const struct an_slow *s = h->slow;
	uint32_t n = s->nnotes < ARR_NOTES ? s->nnotes : ARR_NOTES, i;
	uint32_t *last = calloc((size_t)h->nranks, sizeof(*last));
	uint32_t *heldn = calloc((size_t)h->nranks, sizeof(*heldn));
	double *gap = calloc((size_t)h->nranks, sizeof(*gap));
	double *gmax = calloc((size_t)h->nranks, sizeof(*gmax));
	uint64_t *holder = calloc((size_t)h->nranks, sizeof(*holder));
	int32_t best = -1;

	*rounds = *nlast = 0;
	*share = 0;
	*gap_ns = NAN;
	*held = 0;
	if (last && heldn && gap && gmax && holder) {
		for (i = 0; i < n; i++) {
			const struct arr_note *a = note_at(s, i);

			if (!note_since(an, a, host, since) || a->last < 0 || a->last >= h->nranks)
				continue;
			(*rounds)++;
			slow_tally_last(last, gap, gmax, heldn, holder, a->last, a->gap, a->holder);
		}
		best = slow_arrival_pick(h->nranks, *rounds, last, gap, gmax, heldn, holder,
					 share, gap_ns, held);
		*nlast = best >= 0 ? last[best] : 0;
	}
	free(last);
	free(heldn);
	free(gap);
	free(gmax);
	free(holder);
	return best;
}

/* the oldest recent note of H with rank K last: where its evidence begins */
static const struct arr_note *first_last(const struct an *an, const struct an_slow *s,
					 int32_t k)
{
	uint32_t n = s->nnotes < ARR_NOTES ? s->nnotes : ARR_NOTES, i;

	for (i = 0; i < n; i++)
		if (note_recent(an, note_at(s, i)) && note_at(s, i)->last == k)
			return note_at(s, i);
	return note_at(s, n - 1);
}

/*
 * H's round in progress when C's incident's round ended (C's sample
 * noted it), -1 unknown: the slowdown showed in C then, so it was in H
 */
static int64_t round_at_onset(const struct an_comm *c, const struct an_comm *h)
{
	int32_t k;

	for (k = 0; k < c->nranks; k++)
		if (c->slow->pend_hcomm[k] == h->hash && c->slow->pend_hseq[k] >= 0)
			return c->slow->pend_hseq[k];
	return -1;
}

/* H's rounds per round of C since C's onset round, NaN unknown */
static double rounds_per_round(const struct an_comm *c, const struct an_comm *h)
{
	int64_t hseq = round_at_onset(c, h);
	int64_t dc = c->slow->next - c->slow->pend.seq, dh = h->slow->next - hseq;

	return hseq >= 0 && dc > 0 && dh > 0 ? (double)dh / (double)dc : NAN;
}

/*
 * H's incident opened by C's cascade, naming its rank HK: it ends when C's
 * does (slow_chain_back); V, H's root verdict, sent and freed
 */
static void chain_open(struct an *an, struct an_comm *h, const struct an_comm *c,
		       int32_t hk, struct an_verdict *v)
{
	h->slow->active = true;
	h->slow->cls = AN_S1;
	h->slow->root_cul = hk;
	h->slow->root_unseen = 0;
	h->slow->chain_of = c->hash;
	h->slow->chain_onset = v->onset_ns;
	h->slow->chain_host = v->clock_host;
	h->slow_cascade = false;
	h->slow_seq = v->seq;
	slow_send_verdict(an, v);
	free(v);
}

/*
 * H's root: rank HK, found from C's cascade (its rank CRANK came late from
 * H); its round is the one in progress at the end of the cascade's round
 * (as a sampled onset's verdict is about the round that began its
 * sample), else the first of the noted ones that show it
 */
static void emit_chain_root(struct an *an, struct an_comm *h, int32_t hk,
			    const struct an_comm *c, int32_t crank, const struct an_verdict *cv,
			    double share, double lead, uint32_t rounds, uint32_t nlast)
{
	const struct arr_note *nw = first_last(an, h->slow, hk);
	struct an_verdict *v = calloc(1, sizeof(*v));
	uint64_t now = nw->host < an->nhosts ? an->hosts[nw->host].now : 0;
	int64_t seq = round_at_onset(c, h);
	char hex[24];

	if (!v) {
		fprintf(stderr, "ccld: out of memory for a slow verdict of comm %016" PRIx64 "\n",
			h->hash);
		return;
	}
	/* the op of its rounds that showed it */
	slow_verdict_frame(an, h, v, AN_V_NEW, AN_S1, seq >= 0 ? seq : nw->seq, nw->fn, nw->host,
			   now > nw->t_end ? now : nw->t_end, hk);
	/* C's onset where it is on the same clock: the slowdown began then */
	v->onset_ns = cv->clock_host == nw->host && cv->onset_ns ? cv->onset_ns : nw->t_end;
	an_text(v, "comm %016" PRIx64 " has a straggler: rank %d's GPU reaches its ops"
		" last in %u of %u rounds whose every arrival step hooks showed,"
		" %.1f ms after the others (mean; %.0f%% of their wait), coming from its"
		" own work, not from another comm's op; comm %016" PRIx64 " is slower"
		" because of it (its rank %d's GPU came late from this comm's op):"
		" computation (S1; found by following the cascade to its cause; its"
		" CPU queues its calls ahead of its GPU, so its rounds here hardly"
		" grow and the call is not its arrival)", h->hash, hk, nlast, rounds,
		lead / 1e6, 100 * share, c->hash, crank);
	snprintf(hex, sizeof(hex), "%016" PRIx64, c->hash);
	an_val_s(v, "detector", "hold chain");
	an_val_s(v, "cascade_comm", hex);
	an_val_i(v, "s1_rank", hk);
	an_val_i(v, "rounds", rounds);
	an_val_i(v, "last_rounds", nlast);
	an_val_f(v, "arrive_last_wait_share", share);
	an_val_f(v, "arrive_gap_ms", lead / 1e6);
	an_val_i(v, "nranks", h->nranks);
	chain_open(an, h, c, hk, v);
}

/*
 * No peer is behind in p2p comm H, but C's straggler, rank X there, itself
 * entered its side of their ops late (slow_p2p_self_late): its own GPU made
 * them late, it is the straggler, and C's verdict CV a root that says so
 * (random job 35: PP 2 x DP 4, rank 4's GPU 4.4x slower; its DP comm's
 * verdicts named it, cascades of the pipeline comm, where its peer rank 0
 * entered on time: no root at all).  True then.
 */
static bool p2p_self_late(struct an *an, const struct an_comm *h, const struct an_comm *c,
			  int32_t x, struct an_verdict *cv, double lead)
{
	int32_t peer = -1;
	double late = slow_p2p_self_late(an, h, x, lead, &peer);
	char hex[24];

	if (an->debug)
		fprintf(stderr, "an: slow comm %016" PRIx64 ": rank %d itself late in p2p comm"
			" %016" PRIx64 ": %.1f ms\n", c->hash, x, h->hash, late / 1e6);
	if (isnan(late))
		return false;
	an_text(cv, "; its GPU came late from its own send/recv with rank %d of comm %016"
		PRIx64 ", whose side it entered %.1f ms after that rank entered its own (mean,"
		" in most of their last ops): its own lateness, not its peer's", peer, h->hash,
		late / 1e6);
	snprintf(hex, sizeof(hex), "%016" PRIx64, h->hash);
	an_val_s(cv, "p2p_comm", hex);
	an_val_f(cv, "p2p_late_ms", late / 1e6);
	return true;
}

/*
 * H has no rounds to note (its ops are p2p: a pipeline's send/recv): C's
 * straggler CRANK came late from them, by LEAD ns per round of C.  Where
 * its peer there entered its side of their ops late by half of that at
 * least, most of the time (slow_p2p_behind), the peer made them late:
 * H's root, naming it.  Where no peer is behind, with OWN, C's
 * straggler's own lateness there is asked (p2p_self_late): true where it
 * holds.
 */
static bool p2p_chain(struct an *an, struct an_comm *h, const struct an_comm *c,
		      int32_t crank, struct an_verdict *cv, double lead, bool own)
{
	double late;
	int64_t op = -1;
	int fn = 0;
	int32_t q = slow_p2p_behind(an, h, c, crank, lead, &late, &op, &fn);
	int32_t x = member_of(an, h, c, crank);
	const struct an_proc *p = x >= 0 ? an_proc_of(an, &h->r[x]) : NULL;
	struct an_verdict *v;
	uint64_t now;
	char hex[24];

	if (an->debug)
		fprintf(stderr, "an: slow comm %016" PRIx64 ": cascade of p2p comm %016" PRIx64
			": rank %d's peer behind there: %d (%.1f ms late, lead here %.1f ms)\n",
			c->hash, h->hash, x, q, late / 1e6, lead / 1e6);
	if (q < 0)
		return own && p2p_self_late(an, h, c, x, cv, lead);
	if (!p || !slow_state(an, h))
		return false;
	v = calloc(1, sizeof(*v));
	if (!v) {
		fprintf(stderr, "ccld: out of memory for a slow verdict of comm %016" PRIx64 "\n",
			h->hash);
		return false;
	}
	now = p->host < an->nhosts ? an->hosts[p->host].now : 0;
	slow_verdict_frame(an, h, v, AN_V_NEW, AN_S1, op, fn, p->host, now, q);
	v->p2p = true;
	v->onset_ns = cv->clock_host == p->host && cv->onset_ns ? cv->onset_ns : now;
	an_text(v, "comm %016" PRIx64 " has a straggler: rank %d entered its side of its"
		" send/recv with rank %d %.1f ms after rank %d entered its own (mean, in"
		" most of their last ops), so their transfers wait for it; comm %016" PRIx64
		" is slower because of it (its rank %d's GPU came late from this comm's"
		" op, %.1f ms after the others): computation (S1; found by following the"
		" cascade to its cause)", h->hash, q, x, late / 1e6, x, c->hash, crank,
		lead / 1e6);
	snprintf(hex, sizeof(hex), "%016" PRIx64, c->hash);
	an_val_s(v, "detector", "hold chain");
	an_val_s(v, "cascade_comm", hex);
	an_val_i(v, "s1_rank", q);
	an_val_f(v, "p2p_late_ms", late / 1e6);
	an_val_f(v, "arrive_gap_ms", lead / 1e6);
	an_val_i(v, "nranks", h->nranks);
	chain_open(an, h, c, q, v);
	return false;
}

/* H's straggler by its noted rounds, against C's straggler CRANK's lateness */
struct noted_pick {
	int32_t k;		/* H's rank arriving last, -1 none */
	uint64_t held;		/* ... and the comm it came straight from, 0 none */
	uint32_t rounds, nlast;
	double share, lead;
	double there, here;	/* what H's straggler and C's kept their peers waiting */
};

static void noted_pick(struct an *an, const struct an_comm *h, const struct an_comm *c,
		       int32_t crank, struct noted_pick *np)
{
	const struct an_slow *cs = c->slow;

	np->k = slow_noted_culprit(an, h, cs->samp_host, cs->samp_t0, &np->share, &np->lead,
				   &np->held, &np->rounds, &np->nlast);
	/*
	 * Per round of C: what H's straggler kept its peers waiting per round
	 * of H, times H's rounds per round of C since C's onset; against what
	 * C's straggler kept its peers waiting per sampled round.  Where the
	 * rounds since are not known, the two samples' sums.
	 */
	np->there = np->k >= 0 && np->rounds ?
		    np->nlast * np->lead / np->rounds * rounds_per_round(c, h) : 0;
	np->here = cs->arr_gap[crank] / cs->arr_rounds;
	if (np->k >= 0 && !isfinite(np->there)) {
		np->there = np->nlast * np->lead;
		np->here = cs->arr_gap[crank];
	}
}

/*
 * Its own lateness there, not a third comm's op's, and as much of it as
 * C's straggler kept its peers waiting (half at least: C's straggler comes
 * late by what the ops it went through in H added up to; a rank last by a
 * millisecond of jitter there is not what C waits for)
 */
static bool noted_explains(const struct noted_pick *np)
{
	return np->k >= 0 && !np->held && np->there >= CHAIN_WAIT_SHARE * np->here;
}

bool slow_hold_chain(struct an *an, struct an_verdict *v, uint64_t held, bool own)
{
	const struct an_comm *c = an_comm_get(an, v->comm, 0, false);
	struct an_comm *h = held ? an_comm_get(an, held, 0, false) : NULL;
	const struct an_slow *cs;
	struct noted_pick np;
	int32_t crank;

	if (!c || !h || h == c || !c->slow || (h->slow && h->slow->active) ||
	    v->cls != AN_S1 || v->kind != AN_V_NEW || v->ncul < 1)
		return false;
	cs = c->slow;
	crank = v->cul[0].rank;
	/* what C's sample saw its straggler's peers wait for it, in all */
	if (crank < 0 || crank >= c->nranks || !cs->arr_rounds || !(cs->arr_gap[crank] > 0))
		return false;
	/* no rounds there (p2p ops only): who made the p2p ops late */
	if (!h->slow)
		return p2p_chain(an, h, c, crank, v, cs->arr_gap[crank] / cs->arr_rounds, own);
	noted_pick(an, h, c, crank, &np);
	if (an->debug)
		fprintf(stderr, "an: slow comm %016" PRIx64 ": cascade of %016" PRIx64
			" (no incident): %u noted rounds there, last %d (%.0f%% of the"
			" wait, held by %016" PRIx64 "), %.1f ms waited for it there"
			" against %.1f ms here\n", c->hash, h->hash, np.rounds, np.k,
			100 * np.share, np.held, np.there / 1e6, np.here / 1e6);
	if (np.k < 0 && !np.rounds)
		return p2p_chain(an, h, c, crank, v, cs->arr_gap[crank] / cs->arr_rounds, own);
	if (!noted_explains(&np))
		return false;
	emit_chain_root(an, h, np.k, c, crank, v, np.share, np.lead, np.rounds, np.nlast);
	return false;
}

uint64_t slow_waited_elsewhere(struct an *an, const struct an_comm *c, int32_t crank)
{
	const struct an_slow *cs = c->slow;
	uint32_t proc = crank >= 0 && crank < c->nranks ? c->r[crank].proc : 0;
	uint64_t best = 0;
	double best_there = 0;
	struct hkey key;
	size_t it;
	void *p;

	if (!proc || !cs || !cs->arr_rounds || !(cs->arr_gap[crank] > 0))
		return 0;
	for (it = 0; hmap_next(&an->comms, &it, &key, &p);) {
		const struct an_comm *h = p;
		struct noted_pick np;

		if (h == c || !h->slow || !h->slow->nnotes || !an_comm_has_proc(h, proc))
			continue;
		noted_pick(an, h, c, crank, &np);
		/* C's straggler arriving last there too is its own lateness */
		if (!noted_explains(&np) || h->r[np.k].proc == proc)
			continue;
		if (an->debug)
			fprintf(stderr, "an: slow comm %016" PRIx64 ": rank %d waited in comm"
				" %016" PRIx64 " for its rank %d (%u of %u noted rounds,"
				" %.1f ms there against %.1f ms here)\n", c->hash, crank,
				h->hash, np.k, np.nlast, np.rounds, np.there / 1e6,
				np.here / 1e6);
		if (np.there > best_there) {
			best_there = np.there;
			best = h->hash;
		}
	}
	return best;
}

void slow_chain_back(struct an *an, const struct an_comm *c, uint64_t now, uint32_t host)
{
	struct hkey key;
	size_t it;
	void *p;

	for (it = 0; hmap_next(&an->comms, &it, &key, &p);) {
		struct an_comm *o = p;
		struct an_verdict *v;

		if (o == c || !o->slow || !o->slow->active || o->slow->chain_of != c->hash)
			continue;
		o->slow->active = false;
		o->slow->chain_of = 0;
		o->slow_cascade = false;
		v = calloc(1, sizeof(*v));
		if (!v) {
			fprintf(stderr, "ccld: out of memory for a slow recovery of comm %016"
				PRIx64 "\n", o->hash);
			continue;
		}
		slow_verdict_frame(an, o, v, AN_V_RECOVERED, o->slow->cls,
				   o->slow->next > 0 ? o->slow->next - 1 : o->slow_seq, 0, host,
				   now, o->slow->root_cul);
		v->onset_ns = o->slow->chain_host == host ? o->slow->chain_onset : 0;
		an_text(v, "comm %016" PRIx64 " is back: comm %016" PRIx64 ", slower because"
			" of its straggler, is back to its baseline", o->hash, c->hash);
		an_val_s(v, "detector", "hold chain");
		slow_send_verdict(an, v);
		free(v);
	}
}
