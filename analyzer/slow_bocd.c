// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Bayesian online change-point detection (Adams & MacKay 2007) for a series
 * such as iteration times: Normal data with unknown mean and variance, a
 * Normal-Gamma conjugate prior, constant hazard H = 1 / hazard_len.  The
 * run-length distribution is truncated to max_run (the last run length means
 * "max_run or more"), so memory and time per sample are constant.  A
 * candidate (the MAP run length drops) is reported only if, min_after samples
 * later, the MAP run still starts there and the mean after differs from the
 * mean before by more than min_change (Greyhound 4.2, 10%).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "slow.h"

struct sl_bocd {
	struct sl_bocd_config c;
	size_t bytes;		/* what sl_bocd_new allocated */
	double log_h, log_1h;	/* log H, log (1 - H) */
	/* index r = run length (samples in the run incl. the last), 1..max_run;
	 * index 0 is unused.  Posterior of the run's mean/precision: mu, beta
	 * here; kappa = kappa0 + r and alpha = alpha0 + r / 2 depend on r only */
	double *lp;		/* log P(run length r | data) */
	double *mu, *beta;
	double *lg;		/* per r: lgamma(alpha + 1/2) - lgamma(alpha) */
	double *tmp;
	double mu0, beta0;	/* prior, set from the first sample */
	double *ring;		/* the last 2 * max_run values */
	uint32_t rlen;		/* valid entries of lp (max run length so far) */
	uint32_t map;		/* MAP run length after the last push */
	uint64_t t;		/* samples pushed */
	uint64_t last_cp;	/* start of the current accepted segment */
	bool pending;
	uint64_t cand;		/* candidate change point */
};

#define KAPPA0	1.0
#define ALPHA0	1.0

void sl_bocd_default(struct sl_bocd_config *c)
{
	c->hazard_len = 250;
	c->max_run = 256;
	c->prior_rel = 0.3;
	c->min_after = 3;
	c->min_change = 0.1;
	c->min_before = 3;
}

struct sl_bocd *sl_bocd_new(const struct sl_bocd_config *c)
{
	struct sl_bocd *b;
	uint32_t r, n;

	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	if (c)
		b->c = *c;
	else
		sl_bocd_default(&b->c);
	if (!(b->c.hazard_len > 1) || b->c.max_run < 4 || b->c.max_run > (1u << 20) ||
	    !(b->c.prior_rel > 0) || b->c.min_after < 1 || b->c.min_after >= b->c.max_run ||
	    !(b->c.min_change >= 0)) {
		free(b);
		return NULL;
	}
	n = b->c.max_run + 1;
	b->lp = calloc(n, sizeof(double));
	b->mu = calloc(n, sizeof(double));
	b->beta = calloc(n, sizeof(double));
	b->lg = calloc(n, sizeof(double));
	b->tmp = calloc(n, sizeof(double));
	b->ring = calloc(2 * (size_t)b->c.max_run, sizeof(double));
	if (!b->lp || !b->mu || !b->beta || !b->lg || !b->tmp || !b->ring) {
		sl_bocd_free(b);
		return NULL;
	}
	b->bytes = sizeof(*b) + 5 * (size_t)n * sizeof(double) +
		   2 * (size_t)b->c.max_run * sizeof(double);
	b->log_h = log(1 / b->c.hazard_len);
	b->log_1h = log1p(-1 / b->c.hazard_len);
	/* predicting the next sample from a run of r uses alpha_r = alpha0 + r/2;
	 * r = 0 is the prior */
	for (r = 0; r < n; r++) {
		double a = ALPHA0 + r / 2.0;

		b->lg[r] = lgamma(a + 0.5) - lgamma(a);
	}
	return b;
}

void sl_bocd_free(struct sl_bocd *b)
{
	if (!b)
		return;
	free(b->lp);
	free(b->mu);
	free(b->beta);
	free(b->lg);
	free(b->tmp);
	free(b->ring);
	free(b);
}

uint32_t sl_bocd_map(const struct sl_bocd *b)
{
	return b->map;
}

/* log Student-t predictive of x after r samples with posterior (mu, beta) */
static double log_pred(const struct sl_bocd *b, uint32_t r, double mu, double beta, double x)
{
	double a = ALPHA0 + r / 2.0, k = KAPPA0 + r;
	double nu = 2 * a, s2 = beta * (k + 1) / (a * k), d = x - mu;

	return b->lg[r] - 0.5 * log(nu * M_PI * s2) - (a + 0.5) * log1p(d * d / (nu * s2));
}

static void post(double *mu, double *beta, uint32_t r, double x)
{
	double k = KAPPA0 + r, d = x - *mu;

	*beta += k * d * d / (2 * (k + 1));
	*mu += d / (k + 1);
}

/* mean of samples [from, to) still in the ring */
static double ring_mean(const struct sl_bocd *b, uint64_t from, uint64_t to)
{
	uint64_t len = 2 * (uint64_t)b->c.max_run, i;
	double s = 0;

	if (to - from > len)
		from = to - len;
	for (i = from; i < to; i++)
		s += b->ring[i % len];
	return to > from ? s / (double)(to - from) : NAN;
}

static bool verify(struct sl_bocd *b, struct sl_cp *cp)
{
	uint64_t start = b->t - b->map, from;
	double before, after;

	b->pending = false;
	/* the model went back to a longer run: it was noise */
	if (start != b->cand)
		return false;
	from = b->last_cp;
	if (b->cand - from > b->c.max_run)
		from = b->cand - b->c.max_run;
	before = ring_mean(b, from, b->cand);
	after = ring_mean(b, b->cand, b->t);
	if (!(fabs(after - before) > b->c.min_change * fabs(before)))
		return false;
	b->last_cp = b->cand;
	cp->index = b->cand;
	cp->at = b->t - 1;
	cp->before = before;
	cp->after = after;
	return true;
}

bool sl_bocd_push(struct sl_bocd *b, double x, struct sl_cp *cp)
{
	uint32_t r, max = b->c.max_run, n, best = 1, prev = b->map;
	double norm = -INFINITY, m;

	if (!isfinite(x))
		return false;
	b->ring[b->t % (2 * (uint64_t)max)] = x;
	if (b->t == 0) {
		b->mu0 = x;
		b->beta0 = ALPHA0 * pow(fmax(b->c.prior_rel * fabs(x), 1e-300), 2);
		b->lp[1] = 0;
		b->mu[1] = b->mu0;
		b->beta[1] = b->beta0;
		post(&b->mu[1], &b->beta[1], 0, x);
		b->rlen = 1;
		b->map = 1;
		b->t = 1;
		return false;
	}
	/* growth r -> r + 1, change -> run 1.  At max the runs of max - 1 and
	 * max merge into "max or more" with the statistics of the last max
	 * samples: dropping that mass instead leaves many long runs of nearly
	 * equal probability, and the MAP then wanders among them */
	n = b->rlen < max ? b->rlen + 1 : max;
	if (b->rlen == max) {
		double a = b->lp[max] + log_pred(b, max, b->mu[max], b->beta[max], x);
		double g = b->lp[max - 1] + log_pred(b, max - 1, b->mu[max - 1],
						      b->beta[max - 1], x);
		double hi = fmax(a, g);

		b->tmp[max] = hi + log(exp(a - hi) + exp(g - hi)) + b->log_1h;
		b->mu[max] = b->mu[max - 1];
		b->beta[max] = b->beta[max - 1];
		post(&b->mu[max], &b->beta[max], max - 1, x);
		n = max - 1;
	}
	for (r = n; r >= 2; r--) {
		b->tmp[r] = b->lp[r - 1] + log_pred(b, r - 1, b->mu[r - 1], b->beta[r - 1], x) +
			    b->log_1h;
		b->mu[r] = b->mu[r - 1];
		b->beta[r] = b->beta[r - 1];
		post(&b->mu[r], &b->beta[r], r - 1, x);
	}
	n = b->rlen < max ? b->rlen + 1 : max;
	/* exact A&M: the change happens before x, which the prior predicts;
	 * the run-length probabilities sum to 1 */
	b->tmp[1] = b->log_h + log_pred(b, 0, b->mu0, b->beta0, x);
	b->mu[1] = b->mu0;
	b->beta[1] = b->beta0;
	post(&b->mu[1], &b->beta[1], 0, x);
	for (r = 1; r <= n; r++)
		if (b->tmp[r] > norm)
			norm = b->tmp[r];
	m = 0;
	for (r = 1; r <= n; r++)
		m += exp(b->tmp[r] - norm);
	norm += log(m);
	for (r = 1; r <= n; r++) {
		b->lp[r] = b->tmp[r] - norm;
		if (b->lp[r] > b->lp[best])
			best = r;
	}
	b->rlen = n;
	b->map = best;
	b->t++;

	if (best < prev) {
		uint64_t start = b->t - best;

		/* a candidate too close to the last change has no "before" */
		if (start >= b->last_cp + b->c.min_before && (!b->pending || start > b->cand)) {
			b->pending = true;
			b->cand = start;
		}
	}
	if (b->pending && b->t - b->cand >= b->c.min_after)
		return verify(b, cp);
	return false;
}

size_t sl_bocd_bytes(const struct sl_bocd *b)
{
	return b ? b->bytes : 0;
}
