// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Iteration period of a communicator's (or process's) op sequence, Greyhound
 * 4.2: autocorrelation for categorical data (a signature is a category, so
 * the score of a lag is the fraction of equal pairs, not Pearson's ACF), then
 * the iteration index of each op and the time between iteration starts.
 */
#include <stdlib.h>
#include <string.h>
#include "slow.h"

#define LEARN_FIRST	32	/* first attempt; then 64, 128, ... max_n */
#define RELEARN_MIN	8	/* see sl_iter_push: mismatch budget floor */

size_t sl_period(const uint64_t *sig, size_t n, double *score)
{
	double best = 0, *sc;
	size_t lag, i, found = 0;

	if (score)
		*score = 0;
	if (n < 2 || n > SL_PERIOD_MAX_N)
		return 0;
	sc = malloc((n / 2 + 1) * sizeof(*sc));
	if (!sc)
		return 0;
	for (lag = 1; lag <= n / 2; lag++) {
		size_t eq = 0;

		for (i = 0; i + lag < n; i++)
			eq += sig[i] == sig[i + lag];
		sc[lag] = (double)eq / (double)(n - lag);
		if (sc[lag] > best)
			best = sc[lag];
	}
	/* a multiple of the period scores about as well as the period: take the
	 * smallest lag close to the best */
	for (lag = 1; lag <= n / 2; lag++) {
		if (sc[lag] >= best * (1 - SL_PERIOD_TOL) && sc[lag] >= SL_PERIOD_MIN_SCORE) {
			found = lag;
			break;
		}
	}
	if (score)
		*score = found ? sc[found] : best;
	free(sc);
	return found;
}

struct sl_iter {
	size_t cap;		/* max_n */
	size_t bytes;		/* what sl_iter_new allocated */
	size_t n;		/* signatures buffered while learning */
	size_t next_try;	/* learn when n reaches this */
	uint64_t *sig;		/* [cap] learning buffer */
	uint64_t *t;		/* [cap] their times */
	size_t p;		/* period, 0 while learning */
	uint64_t *tmpl;		/* [cap / 2] one period of signatures, phase 0 first */
	size_t phase;		/* phase of the next expected op */
	size_t miss;		/* mismatch budget used (see sl_iter_push) */
	int64_t iter;		/* iteration of the last op */
	int64_t base;		/* iterations before the current learning phase */
	uint64_t start_t;	/* start of the current iteration */
};

struct sl_iter *sl_iter_new(size_t max_n)
{
	struct sl_iter *it;

	if (max_n < LEARN_FIRST || max_n > SL_PERIOD_MAX_N)
		return NULL;
	it = calloc(1, sizeof(*it));
	if (!it)
		return NULL;
	it->cap = max_n;
	it->next_try = LEARN_FIRST;
	it->sig = calloc(max_n, sizeof(*it->sig));
	it->t = calloc(max_n, sizeof(*it->t));
	it->tmpl = calloc(max_n / 2, sizeof(*it->tmpl));
	if (!it->sig || !it->t || !it->tmpl) {
		sl_iter_free(it);
		return NULL;
	}
	it->iter = -1;
	it->bytes = sizeof(*it) + max_n * (sizeof(*it->sig) + sizeof(*it->t)) +
		    max_n / 2 * sizeof(*it->tmpl);
	return it;
}

void sl_iter_free(struct sl_iter *it)
{
	if (!it)
		return;
	free(it->sig);
	free(it->t);
	free(it->tmpl);
	free(it);
}

size_t sl_iter_period(const struct sl_iter *it)
{
	return it->p;
}

static int64_t learn(struct sl_iter *it, uint64_t sig, uint64_t t_ns)
{
	size_t p, n;

	it->sig[it->n] = sig;
	it->t[it->n] = t_ns;
	n = ++it->n;
	if (n < it->next_try)
		return -1;
	p = sl_period(it->sig, n, NULL);
	if (!p) {
		if (n == it->cap) {
			/* no period in a full buffer: slide by half and retry */
			memmove(it->sig, it->sig + n / 2, (n - n / 2) * sizeof(*it->sig));
			memmove(it->t, it->t + n / 2, (n - n / 2) * sizeof(*it->t));
			it->n = n - n / 2;
		} else {
			it->next_try = n * 2 < it->cap ? n * 2 : it->cap;
		}
		return -1;
	}
	/* iterations start at the buffer's ops 0, p, 2p...: the phase is that
	 * of the first op seen (an attach point, not a training-step boundary) */
	it->p = p;
	memcpy(it->tmpl, it->sig + (n - p) / p * p, p * sizeof(*it->tmpl));
	it->phase = n % p;
	it->miss = 0;
	it->iter = it->base + (int64_t)((n - 1) / p);
	it->start_t = it->t[(n - 1) / p * p];
	return it->iter;
}

int64_t sl_iter_push(struct sl_iter *it, uint64_t sig, uint64_t t_ns, uint64_t *iter_ns)
{
	size_t p = it->p, budget;

	if (iter_ns)
		*iter_ns = 0;
	if (!p)
		return learn(it, sig, t_ns);
	budget = 2 * (p > RELEARN_MIN ? p : RELEARN_MIN);
	if (sig != it->tmpl[it->phase]) {
		if (p > 1 && sig == it->tmpl[(it->phase + 1) % p]) {
			/* one op was skipped (a missed record) */
			it->phase = (it->phase + 1) % p;
		} else {
			/* an inserted op belongs to the iteration in progress; a
			 * mismatch costs 2 and a match pays back 1, so a new pattern
			 * (e.g. evaluation) exhausts the budget and is relearned */
			it->miss += 2;
			if (it->miss > budget) {
				it->base = it->iter + 1;
				it->p = 0;
				it->n = 0;
				it->next_try = LEARN_FIRST;
				return learn(it, sig, t_ns);
			}
			return it->iter;
		}
	}
	if (it->miss)
		it->miss--;
	if (it->phase == 0) {
		it->iter++;
		if (iter_ns)
			*iter_ns = t_ns - it->start_t;
		it->start_t = t_ns;
	}
	it->phase = (it->phase + 1) % p;
	return it->iter;
}

size_t sl_iter_bytes(const struct sl_iter *it)
{
	return it ? it->bytes : 0;
}
