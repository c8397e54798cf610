// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CCL-D slow detection (eqs. 1-3) and location (eq. 4) for one communicator
 * (docs/slow.md).  Each round is judged on its own as it
 * arrives (R > thr), and an incident opens after slow rounds in `repeat`
 * consecutive iterations, so that a verdict comes within `repeat` iterations
 * of the onset; CCL-D's per-window round (largest Tmax - Tmin) is reported
 * alongside.  O(nranks) per round, no allocation after sl_det_new().
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "slow.h"

struct base_round {
	uint64_t sig;
	double tmax;
	bool hiccup;
};

/*
 * The baseline of one op signature (SIG_BASE_MIN rounds of it at least): a
 * comm whose step has a large and a small op has maxima of two levels, a
 * spread that is no noise.  Judged against the comm's one Tbase, the large
 * op's rounds look slow, and the spread taken as noise raises the threshold
 * above real slowdowns of either: each op is judged against its own.
 */
#define SIG_BASES	16
#define SIG_BASE_MIN	5
struct sig_base {
	uint64_t sig;
	double mean;		/* Tbase of the signature */
	double thr;
};

struct sl_det {
	struct sl_config c;
	uint32_t n;
	size_t bytes;		/* what sl_det_new allocated */
	struct sl_base base;
	/* baseline learning: Welford over the rounds' maxima, and the maxima
	 * with their op signatures to find hiccups at the end */
	uint32_t bn;
	double bmean, bm2;
	struct base_round *br;	/* [base_rounds] */
	struct sig_base sb[SIG_BASES];
	uint32_t nsb;
	bool have_first;
	uint64_t t_first;
	/* windows */
	uint64_t w_start;
	struct sl_window w, last_w;	/* in progress, last closed */
	/* iterations */
	uint64_t nrounds;
	bool have_iter;
	int64_t cur_iter;
	uint64_t cur_first_t;
	bool cur_slow;		/* the current iteration had a slow round */
	uint32_t slow_streak, clean_streak;
	int64_t clean_iter;	/* first iteration of the clean streak */
	uint64_t clean_t;
	/*
	 * The candidate incident (from its first slow iteration, dropped
	 * after `repeat` clean ones, as an incident recovers) or the incident
	 */
	bool cand;
	uint32_t max_streak;	/* longest run of slow iterations in the candidate */
	uint64_t cand_unjudged;	/* unjudged wall time since its onset */
	bool active;
	/*
	 * The op signatures of the slow rounds that opened it (up to its
	 * onset): while it lasts, a slow round of another op is not it going
	 * on (a busy host's blip in a tiny op restarted the clean iterations
	 * of a recovery); that op's slowdown opens its own incident after
	 */
	uint64_t inc_sig[SIG_BASES];
	uint32_t ninc_sig;
	double best_spread;
	struct sl_result res, out;	/* working copy, what sl_det_result shows */
	double *rsum;		/* [n] rates summed over the slow rounds */
	double *lspread;	/* [n] Tmax - Tmin of the slow rounds it arrived last in */
	uint32_t *rcnt;		/* [n] */
	double *rmean;		/* [n] of the active/last incident */
	double *scratch;	/* [n] for the median */
};

void sl_config_default(struct sl_config *c)
{
	c->tbase_init_ns = 0;
	c->base_rounds = 100;
	c->base_ns = 120000000000ull;
	c->r_floor = 0.5;
	c->k_cv = 6;
	c->window_ns = 60000000000ull;
	c->repeat = 3;
	c->min_ns = 1000000000ull;
	c->alpha = 0.4;
	c->beta = 0.6;
}

static void reset_result(struct sl_result *r)
{
	memset(r, 0, sizeof(*r));
	r->tbase_ns = r->thr = NAN;
	r->tmax_ns = r->tmin_ns = r->r = r->p = NAN;
	r->iter = -1;
	r->culprit = r->s1_rank = r->s2_rank = -1;
	r->s1_dur_ns = r->s1_z = r->s1_share = r->s2_rate = r->rate_median = r->s2_z = NAN;
	r->onset_iter = r->recover_iter = -1;
}

struct sl_det *sl_det_new(const struct sl_config *c, uint32_t nranks)
{
	struct sl_det *d;
	uint32_t i;

	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	if (c)
		d->c = *c;
	else
		sl_config_default(&d->c);
	c = &d->c;
	if (!nranks || !c->base_rounds || !c->window_ns || !c->repeat ||
	    !(c->alpha <= c->beta) || !(c->r_floor >= 0) || !(c->k_cv >= 0)) {
		free(d);
		return NULL;
	}
	d->n = nranks;
	d->rsum = calloc(nranks, sizeof(*d->rsum));
	d->lspread = calloc(nranks, sizeof(*d->lspread));
	d->rcnt = calloc(nranks, sizeof(*d->rcnt));
	d->rmean = calloc(nranks, sizeof(*d->rmean));
	d->scratch = calloc(nranks, sizeof(*d->scratch));
	d->br = calloc(c->base_rounds, sizeof(*d->br));
	if (!d->rsum || !d->lspread || !d->rcnt || !d->rmean || !d->scratch || !d->br) {
		sl_det_free(d);
		return NULL;
	}
	d->bytes = sizeof(*d) + nranks * (sizeof(*d->rsum) + sizeof(*d->lspread) +
					  sizeof(*d->rcnt) + sizeof(*d->rmean) +
					  sizeof(*d->scratch)) +
		   c->base_rounds * sizeof(*d->br);
	for (i = 0; i < nranks; i++)
		d->rmean[i] = NAN;
	d->base.learned_ns = d->base.cv = d->base.tbase_ns = NAN;
	d->base.thr = c->r_floor;
	if (c->tbase_init_ns > 0) {
		/* eq. 1: the configured value until the baseline is learned */
		d->base.known = d->base.configured = true;
		d->base.tbase_ns = c->tbase_init_ns;
	}
	d->last_w.iter = d->w.iter = -1;
	reset_result(&d->res);
	reset_result(&d->out);
	return d;
}

void sl_det_free(struct sl_det *d)
{
	if (!d)
		return;
	free(d->rsum);
	free(d->lspread);
	free(d->rcnt);
	free(d->rmean);
	free(d->scratch);
	free(d->br);
	free(d);
}

const struct sl_base *sl_det_base(const struct sl_det *d)
{
	return &d->base;
}

double sl_det_r_floor(const struct sl_det *d)
{
	return d->c.r_floor;
}

const struct sl_window *sl_det_window(const struct sl_det *d)
{
	return &d->last_w;
}

const struct sl_result *sl_det_result(const struct sl_det *d)
{
	return &d->out;
}

uint64_t sl_det_pending(const struct sl_det *d)
{
	return d->cand && !d->active ? d->res.onset_ns : 0;
}

const double *sl_det_rates(const struct sl_det *d)
{
	return d->rmean;
}

/* Welford: one more round's maximum into the baseline's mean and M2 */
static void base_add(struct sl_det *d, double tmax)
{
	double dx = tmax - d->bmean;

	d->bn++;
	d->bmean += dx / d->bn;
	d->bm2 += dx * (tmax - d->bmean);
}

static int by_sig_tmax(const void *a, const void *b)
{
	const struct base_round *x = a, *y = b;

	if (x->sig != y->sig)
		return x->sig < y->sig ? -1 : 1;
	return (x->tmax > y->tmax) - (x->tmax < y->tmax);
}

/*
 * Hiccups among the baseline rounds: a round more than HICCUP_X times the
 * median of the rounds of its own op signature (3 or more of them), as when
 * a process was descheduled for a moment.  Its signature's other rounds say
 * that this is not the comm's spread; left in, one such round of 50x makes
 * the threshold 30 and hides every later slowdown.  At most a tenth of the
 * rounds: more is a noisy comm, whose spread the threshold must reflect.
 * Returns how many rounds were marked.
 */
#define HICCUP_X	3.0
static uint32_t mark_hiccups(struct sl_det *d)
{
	struct base_round *br = d->br;
	uint32_t i = 0, j, k, n = d->bn, marked = 0;

	qsort(br, n, sizeof(*br), by_sig_tmax);
	while (i < n) {
		double med;

		for (j = i; j < n && br[j].sig == br[i].sig; j++)
			;
		med = (j - i) % 2 ? br[i + (j - i) / 2].tmax :
		      (br[i + (j - i) / 2 - 1].tmax + br[i + (j - i) / 2].tmax) / 2;
		for (k = i; br[i].sig && j - i >= 3 && k < j; k++)
			if (br[k].tmax > HICCUP_X * med) {
				br[k].hiccup = true;
				marked++;
			}
		i = j;
	}
	if (marked * 10 > n) {
		for (i = 0; i < n; i++)
			br[i].hiccup = false;
		marked = 0;
	}
	return marked;
}

/* per op signature: mean and threshold of its rounds (br sorted: mark_hiccups) */
static void sig_bases(struct sl_det *d, uint32_t n)
{
	uint32_t i = 0, j, k;

	d->nsb = 0;
	while (i < n && d->nsb < SIG_BASES) {
		double sum = 0, ss = 0, mean;
		uint32_t m = 0;

		for (j = i; j < n && d->br[j].sig == d->br[i].sig; j++)
			if (!d->br[j].hiccup) {
				sum += d->br[j].tmax;
				m++;
			}
		if (m >= SIG_BASE_MIN && d->br[i].sig && sum > 0) {
			mean = sum / m;
			for (k = i; k < j; k++)
				if (!d->br[k].hiccup)
					ss += (d->br[k].tmax - mean) * (d->br[k].tmax - mean);
			d->sb[d->nsb].sig = d->br[i].sig;
			d->sb[d->nsb].mean = mean;
			d->sb[d->nsb].thr = fmax(d->c.r_floor,
						 d->c.k_cv * sqrt(ss / (m - 1)) / mean);
			d->nsb++;
		}
		i = j;
	}
}

/* Tbase and threshold for a round of signature SIG: its own, else the comm's */
static void base_of(const struct sl_det *d, uint64_t sig, double *tb, double *thr)
{
	uint32_t i;

	for (i = 0; sig && i < d->nsb; i++)
		if (d->sb[i].sig == sig) {
			*tb = d->sb[i].mean;
			*thr = d->sb[i].thr;
			return;
		}
	*tb = d->base.tbase_ns;
	*thr = d->base.thr;
}

bool sl_det_is_slow(const struct sl_det *d, uint64_t sig, const double *dur)
{
	double tmax = -INFINITY, tb, thr;
	uint32_t i;

	if (!d->base.known)
		return false;
	for (i = 0; i < d->n; i++)
		if (isfinite(dur[i]) && dur[i] > tmax)
			tmax = dur[i];
	if (!isfinite(tmax))
		return false;
	base_of(d, sig, &tb, &thr);
	return (tmax - tb) / tb > thr;
}

double sl_det_tbase(const struct sl_det *d, uint64_t sig)
{
	double tb, thr;

	if (!d->base.known)
		return NAN;
	base_of(d, sig, &tb, &thr);
	return tb;
}

static int by_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * A slowdown that began while the baseline was learned (attached mid run
 * shortly before a fault) would be learned as the baseline and hide
 * itself: 7 rounds of 0.5 ms, then 43 of 36 ms, give a Tbase of 31 ms and a
 * threshold of 8x (random job 131).  Per op signature, in arrival order,
 * the first split with SIG_BASE_MIN of its rounds before it and
 * SHIFT_AFTER_MIN after, where 3 of 4 of the rounds after it exceed the
 * median of those before by more than the threshold those give
 * (max(r_floor, k_cv CV)), is a level shift: what a baseline of the rounds
 * before it would have called slow.  The baseline keeps the window's
 * rounds before the earliest shift of any signature; the rounds after it
 * are judged as any later round.  Returns how many it keeps (all: none).
 */
#define SHIFT_AFTER_MIN	8
static uint32_t shift_cut(const struct sl_det *d)
{
	uint32_t n = d->bn, cut = n, i, j, k, m;
	double *x = malloc(2 * (size_t)n * sizeof(*x)), *med = x ? x + n : NULL;
	uint32_t *at = malloc((size_t)n * sizeof(*at));

	for (i = 0; x && at && i < n; i++) {
		uint64_t sig = d->br[i].sig;

		for (j = 0; j < i && d->br[j].sig != sig; j++)
			;
		if (j < i)
			continue;	/* that signature was looked at */
		for (m = 0, j = i; j < n; j++)
			if (d->br[j].sig == sig) {
				x[m] = d->br[j].tmax;
				at[m++] = j;
			}
		for (k = SIG_BASE_MIN; k + SHIFT_AFTER_MIN <= m && at[k] < cut; k++) {
			double sum = 0, ss = 0, mean, cv, bar;
			uint32_t above = 0;

			for (j = 0; j < k; j++) {
				sum += x[j];
				med[j] = x[j];
			}
			mean = sum / k;
			for (j = 0; j < k; j++)
				ss += (x[j] - mean) * (x[j] - mean);
			cv = mean > 0 ? sqrt(ss / (k - 1)) / mean : 0;
			qsort(med, k, sizeof(*med), by_double);
			bar = (k % 2 ? med[k / 2] : (med[k / 2 - 1] + med[k / 2]) / 2) *
			      (1 + fmax(d->c.r_floor, d->c.k_cv * cv));
			for (j = k; j < m; j++)
				above += x[j] > bar;
			if (4 * above >= 3 * (m - k)) {
				cut = at[k];
				break;
			}
		}
	}
	free(x);
	free(at);
	return cut;
}

static void finish_baseline(struct sl_det *d)
{
	struct sl_base *b = &d->base;
	uint32_t i, n = shift_cut(d);
	double sd;

	b->shifted = d->bn - n;
	if (b->shifted) {
		/* the mean and sd of the rounds before the shift */
		d->bn = 0;
		d->bmean = d->bm2 = 0;
		for (i = 0; i < n; i++)
			base_add(d, d->br[i].tmax);
	}
	b->trimmed = mark_hiccups(d);
	if (b->trimmed) {
		/* the mean and sd again, without them */
		d->bn = 0;
		d->bmean = d->bm2 = 0;
		for (i = 0; i < n; i++)
			if (!d->br[i].hiccup)
				base_add(d, d->br[i].tmax);
	}
	sd = d->bn > 1 ? sqrt(d->bm2 / (d->bn - 1)) : 0;
	b->learned = true;
	b->m = d->bn;
	b->learned_ns = d->bmean;
	b->cv = d->bmean > 0 ? sd / d->bmean : 0;
	b->thr = fmax(d->c.r_floor, d->c.k_cv * b->cv);
	/* a learned baseline that is itself slow against the configured one
	 * would hide the slowdown: keep the configured value (slow-at-start) */
	if (d->c.tbase_init_ns > 0 &&
	    (d->bmean - d->c.tbase_init_ns) / d->c.tbase_init_ns > b->thr) {
		b->configured = true;
		b->tbase_ns = d->c.tbase_init_ns;
	} else {
		b->configured = false;
		b->tbase_ns = d->bmean;
	}
	b->known = b->tbase_ns > 0;
	if (!b->configured)
		sig_bases(d, n);
}

static void close_window(struct sl_det *d, uint64_t t)
{
	uint64_t k = (t - d->w_start) / d->c.window_ns;
	struct sl_window *w = &d->w;

	w->t_start = d->w_start;
	w->t_end = d->w_start + d->c.window_ns;
	w->r = d->base.known ? (w->tmax_ns - d->base.tbase_ns) / d->base.tbase_ns : NAN;
	w->slow = w->r > d->base.thr;
	d->last_w = *w;
	memset(w, 0, sizeof(*w));
	w->iter = -1;
	d->w_start += k * d->c.window_ns;
}

/* S2 candidate over the accumulated rates; with_median only when reported */
static void rate_culprit(struct sl_det *d, bool with_median)
{
	struct sl_result *r = &d->res;
	double m = 0, m2 = 0, lo = INFINITY;
	uint32_t i, k = 0;
	int32_t at = -1;

	for (i = 0; i < d->n; i++) {
		double x, dx;

		if (!d->rcnt[i]) {
			d->rmean[i] = NAN;
			continue;
		}
		x = d->rmean[i] = d->rsum[i] / d->rcnt[i];
		k++;
		dx = x - m;
		m += dx / k;
		m2 += dx * (x - m);
		if (x < lo) {
			lo = x;
			at = (int32_t)i;
		}
	}
	r->s2_rank = at;
	r->s2_rate = at >= 0 ? lo : NAN;
	r->s2_z = at >= 0 ? (m2 > 0 ? (lo - m) / sqrt(m2 / k) : 0) : NAN;
	if (with_median)
		r->rate_median = sl_median(d->rmean, d->n, d->scratch);
}

/* class and culprit of the located round; true if they changed */
static bool locate(struct sl_det *d, bool with_median)
{
	struct sl_result *r = &d->res;
	int32_t old_cul = r->culprit, old_s1 = r->s1_rank, old_s2 = r->s2_rank;
	enum sl_class old_cls = r->cls;

	rate_culprit(d, with_median);
	/*
	 * P over the incident's slow rounds, each weighed by its excess: one
	 * round, the located one, can be unlike the rest (random job 155: a
	 * slow link's rounds of 8 ms on both ranks, P 0.03, but the round
	 * with the largest spread 3.9 against 1.1 ms, P 1.17: S1 naming the
	 * link's peer)
	 */
	r->p = r->lost_ns > 0 ? r->spread_ns / r->lost_ns :
	       (r->tmax_ns - r->tmin_ns) / (r->tmax_ns - r->tbase_ns);
	if (r->p > d->c.beta)
		r->cls = SL_S1;
	else if (r->p < d->c.alpha)
		r->cls = SL_S2;
	else
		r->cls = SL_S3;
	r->culprit = r->cls == SL_S2 ? r->s2_rank : r->s1_rank;
	r->s1_share = r->s1_rank >= 0 && r->spread_ns > 0 ?
		      d->lspread[r->s1_rank] / r->spread_ns : NAN;
	return r->cls != old_cls || r->culprit != old_cul || r->s1_rank != old_s1 ||
	       r->s2_rank != old_s2;
}

/* iterations first_iter.. (count of them) had no slow round */
static int clean_iters(struct sl_det *d, int64_t first_iter, uint64_t first_t, uint64_t count)
{
	if (!count)
		return 0;
	if (!d->clean_streak) {
		d->clean_iter = first_iter;
		d->clean_t = first_t;
	}
	d->clean_streak += count > UINT32_MAX - d->clean_streak ? 0 : (uint32_t)count;
	d->slow_streak = 0;
	if (!d->active && d->clean_streak >= d->c.repeat)
		d->cand = false;	/* a spell that did not last */
	if (!d->active || d->clean_streak < d->c.repeat)
		return 0;
	d->cand = false;
	d->active = false;
	d->res.active = false;
	d->res.recover_iter = d->clean_iter;
	d->res.recover_ns = d->clean_t;
	d->out = d->res;
	return SL_EV_RECOVERY;
}

/* a new iteration (or the first) begins with this round */
static int next_iter(struct sl_det *d, int64_t it, uint64_t t)
{
	int ev = 0;

	if (d->have_iter && it <= d->cur_iter)
		return 0;	/* same iteration (or out of order: kept in it) */
	if (d->have_iter) {
		uint64_t gap = (uint64_t)(it - d->cur_iter - 1);

		/* iterations without a round of this comm count as clean */
		if (!d->cur_slow)
			ev |= clean_iters(d, d->cur_iter, d->cur_first_t, 1 + gap);
		else
			ev |= clean_iters(d, d->cur_iter + 1, t, gap);
	}
	d->have_iter = true;
	d->cur_iter = it;
	d->cur_first_t = t;
	d->cur_slow = false;
	return ev;
}

struct round_stats {
	double tmax, tmin, mean, sd;
	double tbase, thr;	/* of the round's op signature */
	int32_t imin;
};

/* SIG is one of the ops whose slow rounds opened the incident */
static bool incident_sig(const struct sl_det *d, uint64_t sig)
{
	uint32_t i;

	for (i = 0; i < d->ninc_sig; i++)
		if (d->inc_sig[i] == sig)
			return true;
	return false;
}

/*
 * While an incident lasts, a round slow against the baseline by under
 * INCIDENT_SHARE of the incident's mean extra per slow round is not the
 * incident going on: a busy VM's blip (8.5 ms on a 1.2 ms op, two steps
 * after 50 ms rounds ended) restarted the clean iterations of a recovery
 * (test_intranode compute: recovered 6 steps after the fault, 4 allowed).
 * A slowdown that eases keeps rounds well above a quarter of its extra.
 */
#define INCIDENT_SHARE	0.25

static bool below_incident(const struct sl_det *d, const struct round_stats *s)
{
	const struct sl_result *r = &d->res;

	return d->active && r->slow_rounds &&
	       s->tmax - s->tbase < INCIDENT_SHARE * r->lost_ns / r->slow_rounds;
}

static int slow_round(struct sl_det *d, const struct sl_round *rd, const struct round_stats *s,
		      double r_val)
{
	struct sl_result *r = &d->res;
	bool moved = false, changed;
	uint32_t i;

	if (!d->cur_slow) {
		d->cur_slow = true;
		d->clean_streak = 0;
		d->slow_streak++;
		if (d->slow_streak > d->max_streak)
			d->max_streak = d->slow_streak;
		if (!d->active && !d->cand) {
			/* a new candidate: start the incident afresh */
			d->cand = true;
			d->max_streak = 1;
			reset_result(r);
			r->at_start = !d->base.learned;
			r->onset_iter = d->cur_iter;
			r->onset_ns = rd->t_ns;
			d->ninc_sig = 0;
			d->cand_unjudged = 0;
			d->best_spread = -1;
			memset(d->rsum, 0, d->n * sizeof(*d->rsum));
			memset(d->lspread, 0, d->n * sizeof(*d->lspread));
			memset(d->rcnt, 0, d->n * sizeof(*d->rcnt));
		}
		r->slow_iters++;
	}
	if (!d->active && !incident_sig(d, rd->sig) && d->ninc_sig < SIG_BASES)
		d->inc_sig[d->ninc_sig++] = rd->sig;
	r->slow_rounds++;
	/* what the slow round cost: how much longer than the baseline */
	r->lost_ns += s->tmax - s->tbase;
	r->spread_ns += s->tmax - s->tmin;
	if (s->imin >= 0 && (uint32_t)s->imin < d->n)
		d->lspread[s->imin] += s->tmax - s->tmin;
	if (rd->rate) {
		for (i = 0; i < d->n; i++) {
			if (isfinite(rd->rate[i])) {
				d->rsum[i] += rd->rate[i];
				d->rcnt[i]++;
			}
		}
	}
	if (s->tmax - s->tmin > d->best_spread) {
		d->best_spread = s->tmax - s->tmin;
		r->iter = d->cur_iter;
		r->t_ns = rd->t_ns;
		r->tmax_ns = s->tmax;
		r->tmin_ns = s->tmin;
		r->tbase_ns = s->tbase;
		r->thr = s->thr;
		r->r = r_val;
		r->s1_rank = s->imin;
		r->s1_dur_ns = s->tmin;
		r->s1_z = s->sd > 0 ? (s->tmin - s->mean) / s->sd : 0;
		moved = true;
	}
	if (!d->active) {
		/*
		 * A slowdown that costs something: `repeat` slow iterations in
		 * a row (CCL-D's repeat rule), and the candidate, which short
		 * clean gaps do not end, lasted min_ns of wall time, less
		 * the time no judged round covered: slow rounds before and
		 * after a stall of 2.5 s (the hang side's) were 3 slow
		 * iterations of 60 ms, not a slowdown of 2.6 s.
		 */
		if (d->max_streak < d->c.repeat ||
		    (d->c.min_ns && rd->t_ns - r->onset_ns < d->c.min_ns + d->cand_unjudged))
			return 0;
		d->active = true;
		r->active = true;
		locate(d, true);
		d->out = *r;
		return SL_EV_ONSET;
	}
	d->out.lost_ns = r->lost_ns;	/* shown, not a change */
	d->out.spread_ns = r->spread_ns;
	d->out.slow_rounds = r->slow_rounds;
	d->out.slow_iters = r->slow_iters;
	changed = locate(d, false) || moved;
	if (changed)
		r->rate_median = sl_median(d->rmean, d->n, d->scratch);
	else
		r->rate_median = d->out.rate_median;	/* not recomputed */
	d->out = *r;
	return changed ? SL_EV_UPDATE : 0;
}

int sl_det_round(struct sl_det *d, const struct sl_round *rd)
{
	struct round_stats s = { -INFINITY, INFINITY, 0, 0, NAN, NAN, -1 };
	double x0 = NAN, sum = 0, sum2 = 0, r_val = NAN;
	uint64_t t = rd->t_ns;
	int64_t it;
	uint32_t i, k = 0;
	bool in_base = false;
	int ev = 0;

	for (i = 0; i < d->n; i++) {
		double x = rd->dur_ns[i], dx;

		if (!isfinite(x))
			continue;
		if (!k++)
			x0 = x;
		/* shifted sums: no cancellation, one pass */
		dx = x - x0;
		sum += dx;
		sum2 += dx * dx;
		if (x > s.tmax)
			s.tmax = x;
		if (x < s.tmin) {
			s.tmin = x;
			s.imin = (int32_t)i;
		}
	}
	if (!k)
		return 0;
	s.mean = x0 + sum / k;
	s.sd = sqrt(fmax(sum2 / k - (sum / k) * (sum / k), 0));
	it = rd->iter >= 0 ? rd->iter : (int64_t)d->nrounds;
	d->nrounds++;

	if (!d->have_first) {
		d->have_first = true;
		d->t_first = t;
		d->w_start = t;
	}
	if (t >= d->w_start + d->c.window_ns) {
		if (d->w.rounds) {
			close_window(d, t);
			ev |= SL_EV_WINDOW;
		} else {
			d->w_start += (t - d->w_start) / d->c.window_ns * d->c.window_ns;
		}
	}

	/* eq. 1: the first m = min(base_rounds, rounds within base_ns) rounds */
	if (!d->base.learned) {
		if (d->bn < d->c.base_rounds && t - d->t_first < d->c.base_ns) {
			in_base = true;
			d->br[d->bn].sig = rd->sig;
			d->br[d->bn].tmax = s.tmax;
			base_add(d, s.tmax);
		} else {
			finish_baseline(d);
			ev |= SL_EV_BASELINE;
		}
	}

	if (d->base.known) {
		base_of(d, rd->sig, &s.tbase, &s.thr);
		r_val = (s.tmax - s.tbase) / s.tbase;
		if (r_val > s.thr)
			ev |= SL_EV_SLOW_ROUND;
	}
	/* eq. 2: the window's round with the largest spread */
	if (!d->w.rounds || s.tmax - s.tmin > d->w.tmax_ns - d->w.tmin_ns) {
		d->w.iter = it;
		d->w.t_ns = t;
		d->w.tmax_ns = s.tmax;
		d->w.tmin_ns = s.tmin;
	}
	d->w.rounds++;

	ev |= next_iter(d, it, t);
	if (d->cand && !d->active)
		d->cand_unjudged += rd->unjudged_ns;
	if ((ev & SL_EV_SLOW_ROUND) && (!d->active || incident_sig(d, rd->sig)) &&
	    !below_incident(d, &s))
		ev |= slow_round(d, rd, &s, r_val);

	if (in_base && d->bn == d->c.base_rounds) {
		finish_baseline(d);
		ev |= SL_EV_BASELINE;
	}
	return ev;
}

size_t sl_det_bytes(const struct sl_det *d)
{
	return d ? d->bytes : 0;
}
