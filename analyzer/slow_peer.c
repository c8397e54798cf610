// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Slow diagnosis without history (docs/slow.md, "Already slow" and "The
 * network part of rounds"):
 *
 *  - sl_peer: a persistent straggler by peer comparison alone.  CCL-D's
 *    locator reads the rank with the shortest duration of a round as the
 *    one that arrived last; its detector needs a baseline learned on a
 *    healthy job.  Attached to a job already slow there is none, but the
 *    rounds still say who arrives last, every round, and how long the
 *    others wait for it (the gap: second shortest - shortest).
 *  - sl_rise: the network part of a comm's rounds, from the last arrival to
 *    completion (the shortest duration), against its own level.  A network
 *    straggler in a compute-dominated step adds little to the round (CCL-D's
 *    Tmax - Tmin does not move: every rank waits for the network alike) but
 *    multiplies this part.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "slow.h"

/*
 * rounds kept: the longest run judged.  64 rounds of a comm with two ops per
 * 17 ms iteration span 0.7 s, under the 1 s a run must last (random job
 * 457): it could never be named; 256 span 1 s down to 4 ms between rounds
 */
#define PEER_RING	256
/*
 * one rank last in share of a run by chance, for the smaller gaps: at most
 * this; the run is judged anew every round, so it is small (1e-4 still
 * named a healthy 2-rank comm 4 times in 20,000 rounds)
 */
#define PEER_CHANCE	1e-6
/*
 * A round whose gap is under this share of the comm's mean interval between
 * rounds is a tie: everyone arrived together (an op right after another of
 * the same comm), who came last is chance; it is left out.
 */
#define PEER_TIE	0.02
/*
 * A round whose last arriver kept the others waiting under this share of
 * the newest round's gap says nothing about who the newest's last arriver
 * is: it neither counts for it nor against it.  An op right after another
 * in each iteration (a small all-reduce after the step's large one) has
 * its own last arriver by chance, late by 0.2-0.5 ms, more than a tie:
 * counted, those rounds kept a rank late by 10 ms in every large round
 * (random job 457, a 3x slower GPU) at about 70% of the run: never named.  In a
 * healthy job which rank is last does not depend on how big its gap is, so
 * the rounds counted are as much chance as before: the run's chance bound
 * holds.
 */
#define PEER_MINOR	0.1
#define PEER_IV_DECAY	(1.0 / 16)	/* the mean interval, exponentially */

void sl_peer_default(struct sl_peer_config *c)
{
	c->min_rounds = 3;
	c->min_iters = 3;
	c->min_ns = 1000000000ull;
	c->share = 0.9;
	c->cost = 0.1;
	c->big = 0.25;
}

struct peer_round {
	int32_t last;
	double gap;
	uint64_t t;
	int64_t iter;
};

struct sl_peer {
	struct sl_peer_config cfg;
	uint32_t nranks;
	uint32_t sig_rounds;	/* rounds making a chance streak unlikely */
	uint64_t n;		/* rounds kept (ties are not) */
	uint64_t t_prev;	/* end of the previous round, tie or not */
	double iv;		/* mean interval between rounds, 0 unknown */
	bool named;		/* the latest kept round's answer ... */
	struct sl_peer_result res;	/* ... and its result: a tie's too */
	struct peer_round r[PEER_RING];
	double gaps[PEER_RING], scratch[PEER_RING];
};

/*
 * The fewest rounds m in which one of nranks ranks, each last with chance
 * 1/nranks, is last in share of them at most CHANCE of the time:
 * nranks x P(Binomial(m, 1/nranks) >= ceil(share m)) <= CHANCE (MAX at most).
 * The share lets rounds off (10 of 11 at 90%): counting only streaks of
 * every round (nranks x (1/nranks)^m) made such a run 12 times likelier
 * than it said for 2 ranks.
 */
uint32_t sl_chance_rounds(uint32_t nranks, double share, double chance, uint32_t max)
{
	uint32_t m;

	for (m = 2; m < max; m++)
		if (sl_chance_last(nranks, m, (uint32_t)ceil(share * m - 1e-9)) <= chance)
			return m;
	return max;
}

double sl_chance_last(uint32_t nranks, uint32_t m, uint32_t k)
{
	double q = 1.0 / nranks, tail = 0;
	uint32_t j;

	for (j = k; j <= m; j++)
		tail += exp(lgamma(m + 1.0) - lgamma(j + 1.0) - lgamma(m - j + 1.0) +
			    j * log(q) + (m - j) * log1p(-q));
	return nranks * tail;
}

static uint32_t chance_rounds(uint32_t nranks, double share)
{
	return sl_chance_rounds(nranks, share, PEER_CHANCE, PEER_RING);
}

struct sl_peer *sl_peer_new(const struct sl_peer_config *c, uint32_t nranks)
{
	struct sl_peer *p;
	struct sl_peer_config d;

	if (!c) {
		sl_peer_default(&d);
		c = &d;
	}
	if (nranks < 2 || !(c->share > 0.5 && c->share <= 1) || !c->min_rounds ||
	    c->min_rounds > PEER_RING)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->cfg = *c;
	p->nranks = nranks;
	p->sig_rounds = chance_rounds(nranks, c->share);
	return p;
}

void sl_peer_free(struct sl_peer *p)
{
	free(p);
}

static const struct peer_round *nth_newest(const struct sl_peer *p, uint64_t i)
{
	return &p->r[(p->n - 1 - i) % PEER_RING];
}

/* the mean interval between rounds, with the round ending at T_NS */
static void note_interval(struct sl_peer *p, uint64_t t_ns)
{
	if (p->t_prev && t_ns > p->t_prev) {
		double d = (double)(t_ns - p->t_prev);

		p->iv = p->iv > 0 ? p->iv + PEER_IV_DECAY * (d - p->iv) : d;
	}
	p->t_prev = t_ns;
}

void sl_peer_unknown(struct sl_peer *p, uint64_t t_ns, int64_t iter)
{
	struct peer_round *pr;

	note_interval(p, t_ns);
	pr = &p->r[p->n++ % PEER_RING];
	pr->last = -1;
	pr->gap = 0;
	pr->t = t_ns;
	pr->iter = iter;
	p->named = false;
}

/* O's last arriver kept the others waiting far less than NW's (PEER_MINOR);
 * a round no rank's (sl_peer_unknown) is not minor: it breaks runs */
static bool minor(const struct peer_round *o, const struct peer_round *nw)
{
	return o->last >= 0 && o->gap < PEER_MINOR * nw->gap;
}

bool sl_peer_round(struct sl_peer *p, const double *dur, uint64_t t_ns, int64_t iter,
		   struct sl_peer_result *res)
{
	double lo = INFINITY, lo2 = INFINITY;
	const struct peer_round *nw, *o;
	struct peer_round *pr;
	uint32_t k, r, m, n, best = 0, bestm = 0, bestn = 0, need;
	int32_t last = -1;
	double lost = 0, interval, iter_iv;
	uint64_t avail;

	for (k = 0; k < p->nranks; k++) {
		if (!isfinite(dur[k]))
			return false;
		if (dur[k] < lo) {
			lo2 = lo;
			lo = dur[k];
			last = (int32_t)k;
		} else if (dur[k] < lo2) {
			lo2 = dur[k];
		}
	}
	note_interval(p, t_ns);
	if (lo2 - lo < PEER_TIE * p->iv) {
		if (p->named)
			*res = p->res;
		return p->named;
	}
	pr = &p->r[p->n++ % PEER_RING];
	pr->last = last;
	pr->gap = lo2 - lo;
	pr->t = t_ns;
	pr->iter = iter;
	/*
	 * The longest run of newest rounds in which the newest's last is last
	 * in share of the rounds counted (minor ones are not)
	 */
	nw = nth_newest(p, 0);
	avail = p->n < PEER_RING ? p->n : PEER_RING;
	for (r = 1, m = 0, n = 0; r <= avail; r++) {
		o = nth_newest(p, r - 1);
		if (minor(o, nw))
			continue;
		n++;
		if (o->last == nw->last)
			m++;
		if (m >= p->cfg.share * n) {
			best = r;
			bestm = m;
			bestn = n;
		}
	}
	p->named = false;
	if (bestn < 2)
		return false;
	for (r = 0, m = 0; r < best; r++) {
		o = nth_newest(p, r);
		if (o->last != nw->last || minor(o, nw))
			continue;
		lost += o->gap;
		p->gaps[m++] = o->gap;
	}
	o = nth_newest(p, best - 1);
	interval = (double)(nw->t - o->t) / (best - 1);
	memset(res, 0, sizeof(*res));
	res->rank = nw->last;
	res->rounds = bestn;
	res->last = bestm;
	res->iters = (uint32_t)(nw->iter - o->iter + 1);
	res->t_first = o->t;
	res->t_last = nw->t;
	res->lost_ns = lost;
	res->gap_ns = sl_median(p->gaps, m, p->scratch);
	res->interval_ns = interval;
	/*
	 * A big gap is big against the iteration, not only against the
	 * interval between rounds: with two rounds per iteration the interval
	 * is half of it, and a chance gap looks twice as big.
	 */
	iter_iv = res->iters > 1 ? (double)(nw->t - o->t) / (res->iters - 1) : interval;
	need = p->cfg.min_rounds;
	if (!(res->gap_ns >= p->cfg.big * fmax(interval, iter_iv)) && need < p->sig_rounds)
		need = p->sig_rounds;
	p->named = bestn >= need && res->iters >= p->cfg.min_iters &&
		   nw->t - o->t >= p->cfg.min_ns && res->gap_ns >= p->cfg.cost * interval;
	p->res = *res;
	return p->named;
}

/* ---- the network part of rounds against its own level ------------------ */

void sl_rise_default(struct sl_rise_config *c)
{
	c->base_rounds = 32;
	c->recent = 8;
	c->factor = 1.5;
	c->floor_ns = 100000;
	c->k_sd = 2;
	c->min_iters = 3;
	c->min_ns = 1000000000ull;
	/*
	 * 5%: a healthy stand-in job's checkpoint pause raised the network
	 * part of its DP comms' tiny ops (0.27 -> 0.51 ms) at 2.0-2.4% of the
	 * wall time, and a step sample blamed a proxy thread the 2-core VM
	 * descheduled (2 false S2 in 3 runs at 2%); a 4x slower link on 3 ms
	 * steps cost its TP comm about 27% (9 ms more per round, ~30 rounds/s)
	 */
	c->cost = 0.05;
}

struct sl_rise {
	struct sl_rise_config cfg;
	size_t bytes;		/* what sl_rise_new allocated */
	uint64_t n;		/* rounds pushed */
	double level;		/* NaN until the first block */
	double level_sd;	/* the robust sd of the rounds of that block */
	double *block;		/* [base_rounds] rounds of the block being filled */
	uint32_t nblock;
	double *x;		/* [recent] newest rounds, by n % recent */
	uint64_t *t;
	int64_t *it;
	double *scratch;	/* [max(base_rounds, recent)] */
	bool streak;		/* risen now */
	struct sl_rise_result res;
	int64_t iter_onset;
};

struct sl_rise *sl_rise_new(const struct sl_rise_config *c)
{
	struct sl_rise_config d;
	struct sl_rise *r;
	uint32_t ns;

	if (!c) {
		sl_rise_default(&d);
		c = &d;
	}
	if (!c->base_rounds || !c->recent || !(c->factor > 1) || !(c->floor_ns >= 0) ||
	    !(c->cost >= 0))
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->cfg = *c;
	ns = c->base_rounds > c->recent ? c->base_rounds : c->recent;
	r->block = calloc(c->base_rounds, sizeof(*r->block));
	r->x = calloc(c->recent, sizeof(*r->x));
	r->t = calloc(c->recent, sizeof(*r->t));
	r->it = calloc(c->recent, sizeof(*r->it));
	r->scratch = calloc(ns, sizeof(*r->scratch));
	if (!r->block || !r->x || !r->t || !r->it || !r->scratch) {
		sl_rise_free(r);
		return NULL;
	}
	r->level = NAN;
	r->bytes = sizeof(*r) + c->base_rounds * sizeof(*r->block) +
		   c->recent * (sizeof(*r->x) + sizeof(*r->t) + sizeof(*r->it)) +
		   ns * sizeof(*r->scratch);
	return r;
}

void sl_rise_free(struct sl_rise *r)
{
	if (!r)
		return;
	free(r->block);
	free(r->x);
	free(r->t);
	free(r->it);
	free(r->scratch);
	free(r);
}

/* the level from full blocks of rounds outside a rise: the lowest median */
static void block_add(struct sl_rise *r, double x)
{
	double m;

	r->block[r->nblock++] = x;
	if (r->nblock < r->cfg.base_rounds)
		return;
	m = sl_median(r->block, r->nblock, r->scratch);
	if (!(m >= r->level)) {
		uint32_t i;

		r->level = m;
		for (i = 0; i < r->nblock; i++)
			r->block[i] = fabs(r->block[i] - m);
		r->level_sd = 1.4826 * sl_median(r->block, r->nblock, r->scratch);
	}
	r->nblock = 0;
}

/* a rise began: at its oldest risen round among the newest */
static void streak_start(struct sl_rise *r, uint32_t have)
{
	uint32_t i, first = 0;
	bool found = false;

	for (i = have; i-- > 0;) {
		uint64_t k = (r->n - 1 - i) % r->cfg.recent;

		if (!found && r->x[k] >= r->cfg.factor * r->level) {
			found = true;
			first = i;
		}
	}
	r->streak = true;
	r->res.lost_ns = 0;
	for (i = first + 1; i-- > 0;) {
		uint64_t k = (r->n - 1 - i) % r->cfg.recent;

		if (i == first) {
			r->res.onset_round = r->n - 1 - i;
			r->res.t_onset = r->t[k];
			r->iter_onset = r->it[k];
		}
		r->res.lost_ns += r->x[k] - r->level;
	}
	r->res.base_ns = r->level;
	r->nblock = 0;
}

int sl_rise_round(struct sl_rise *r, double x, uint64_t t_ns, int64_t iter,
		  struct sl_rise_result *res)
{
	uint64_t k;
	uint32_t have;
	double recent;
	bool risen;
	int ev = 0;

	if (!isfinite(x))
		goto out;
	k = r->n++ % r->cfg.recent;
	r->x[k] = x;
	r->t[k] = t_ns;
	r->it[k] = iter;
	have = r->n < r->cfg.recent ? (uint32_t)r->n : r->cfg.recent;
	if (!isfinite(r->level) || have < r->cfg.recent) {
		block_add(r, x);
		goto out;
	}
	recent = sl_median(r->x, have, r->scratch);
	r->res.level_ns = recent;
	risen = recent >= r->cfg.factor * r->level && recent - r->level >= r->cfg.floor_ns &&
		recent - r->level >= r->cfg.k_sd * r->level_sd;
	if (!r->streak && risen) {
		streak_start(r, have);
	} else if (r->streak) {
		/* hysteresis: back below half the rise */
		if (recent < r->level * (1 + (r->cfg.factor - 1) / 2) ||
		    recent - r->level < r->cfg.floor_ns / 2 ||
		    recent - r->level < r->cfg.k_sd * r->level_sd / 2) {
			r->streak = false;
			if (r->res.active) {
				r->res.active = false;
				ev |= SL_RISE_RECOVERY;
			}
		} else {
			r->res.lost_ns += x - r->level;
		}
	}
	if (!r->streak) {
		block_add(r, x);
		goto out;
	}
	r->res.iters = (uint32_t)(iter - r->iter_onset + 1);
	if (!r->res.active && r->res.iters >= r->cfg.min_iters &&
	    t_ns - r->res.t_onset >= r->cfg.min_ns &&
	    r->res.lost_ns >= r->cfg.cost * (double)(t_ns - r->res.t_onset)) {
		r->res.active = true;
		ev |= SL_RISE_ONSET;
	}
out:
	if (res)
		*res = r->res;
	return ev;
}

size_t sl_peer_bytes(const struct sl_peer *p)
{
	return p ? sizeof(*p) : 0;
}

size_t sl_rise_bytes(const struct sl_rise *r)
{
	return r ? r->bytes : 0;
}
