// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * z-scores of per-rank values within a communicator (Aegis 5.1) and the
 * comparable-group check across communicators of one shape (Greyhound 4.3)
 * with a median-absolute-deviation rule (docs/slow.md).
 */
#include <math.h>
#include <stdlib.h>
#include "slow.h"

static void mean_sd(const double *x, size_t n, double *mean, double *sd, size_t *cnt)
{
	double m = 0, m2 = 0;
	size_t i, k = 0;

	/* Welford: no cancellation for values like 1e9 +- 1e3 */
	for (i = 0; i < n; i++) {
		double d;

		if (!isfinite(x[i]))
			continue;
		k++;
		d = x[i] - m;
		m += d / k;
		m2 += d * (x[i] - m);
	}
	*cnt = k;
	*mean = k ? m : NAN;
	*sd = k ? sqrt(m2 / k) : NAN;
}

size_t sl_zscores(const double *x, size_t n, double *z)
{
	double mean, sd;
	size_t i, k;

	mean_sd(x, n, &mean, &sd, &k);
	for (i = 0; i < n; i++) {
		if (!isfinite(x[i]))
			z[i] = NAN;
		else
			z[i] = sd > 0 ? (x[i] - mean) / sd : 0;
	}
	return k;
}

int64_t sl_outlier(const double *x, size_t n, double *z)
{
	double mean, sd, best = -1;
	size_t i, k;
	int64_t at = -1;

	mean_sd(x, n, &mean, &sd, &k);
	if (k < 2 || !(sd > 0))
		return -1;
	for (i = 0; i < n; i++) {
		if (isfinite(x[i]) && fabs(x[i] - mean) > best) {
			best = fabs(x[i] - mean);
			at = (int64_t)i;
		}
	}
	if (z)
		*z = (x[at] - mean) / sd;
	return at;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double sl_median(const double *x, size_t n, double *scratch)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (isfinite(x[i]))
			scratch[k++] = x[i];
	if (!k)
		return NAN;
	qsort(scratch, k, sizeof(*scratch), cmp_double);
	return k % 2 ? scratch[k / 2] : (scratch[k / 2 - 1] + scratch[k / 2]) / 2;
}

size_t sl_group_outliers(const double *x, size_t n, double k_mad, double min_rel,
			 bool *flag, double *scratch)
{
	double med, mad, lim;
	size_t i, k = 0, nflag = 0;

	for (i = 0; i < n; i++) {
		flag[i] = false;
		if (isfinite(x[i]))
			scratch[k++] = x[i];
	}
	/* with two the median is their mean: neither can be told apart */
	if (k < 3)
		return 0;
	med = sl_median(x, n, scratch);
	for (i = 0, k = 0; i < n; i++)
		if (isfinite(x[i]))
			scratch[k++] = fabs(x[i] - med);
	mad = sl_median(scratch, k, scratch);
	/* 1.4826 MAD estimates sd for normal data; the relative floor keeps
	 * Greyhound's 10% when most groups are identical (MAD 0) */
	lim = fmax(k_mad * 1.4826 * mad, min_rel * fabs(med));
	for (i = 0; i < n; i++) {
		if (isfinite(x[i]) && x[i] - med > lim) {
			flag[i] = true;
			nflag++;
		}
	}
	return nflag;
}

static int cmp_shape(const void *a, const void *b, void *arg)
{
	const struct sl_comm_stat *c = arg;
	const struct sl_comm_stat *x = &c[*(const size_t *)a], *y = &c[*(const size_t *)b];

	if (x->nranks != y->nranks)
		return x->nranks < y->nranks ? -1 : 1;
	if (x->sig != y->sig)
		return x->sig < y->sig ? -1 : 1;
	return 0;
}

long sl_group_check(struct sl_comm_stat *c, size_t n)
{
	size_t *idx, i, j, k;
	double *val, *scratch, med;
	bool *flag;
	long ndev = 0;

	if (!n)
		return 0;
	idx = calloc(n, sizeof(*idx));
	val = calloc(n, sizeof(*val));
	scratch = calloc(n, sizeof(*scratch));
	flag = calloc(n, sizeof(*flag));
	if (!idx || !val || !scratch || !flag) {
		free(idx);
		free(val);
		free(scratch);
		free(flag);
		return -1;
	}
	for (i = 0; i < n; i++)
		idx[i] = i;
	qsort_r(idx, n, sizeof(*idx), cmp_shape, c);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && !cmp_shape(&idx[i], &idx[j], c); j++)
			;
		for (k = i; k < j; k++)
			val[k - i] = c[idx[k]].median_ns;
		sl_group_outliers(val, j - i, SL_GROUP_K_MAD, SL_GROUP_MIN_REL, flag, scratch);
		med = sl_median(val, j - i, scratch);
		for (k = i; k < j; k++) {
			struct sl_comm_stat *s = &c[idx[k]];

			s->group_size = (uint32_t)(j - i);
			s->group_median_ns = med;
			s->deviant = flag[k - i];
			ndev += s->deviant;
		}
	}
	free(idx);
	free(val);
	free(scratch);
	free(flag);
	return ndev;
}
