// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* z-scores (Aegis) and the comparable-group check (Greyhound 4.3). */
#include <math.h>
#include <stdlib.h>
#include "check.h"
#include "slow.h"

#define NEAR(a, b, eps) (fabs((a) - (b)) < (eps))

static void test_zscores(void)
{
	double x[6] = { 1, 2, 3, NAN, 4, 5 }, z[6], s[6];
	double y[100], zz;
	int i;

	/* mean 3, population sd sqrt(2) */
	CHECK_INT(sl_zscores(x, 6, z), 5);
	CHECK(NEAR(z[0], -2 / sqrt(2), 1e-12));
	CHECK(NEAR(z[2], 0, 1e-12));
	CHECK(isnan(z[3]));
	CHECK(NEAR(z[5], 2 / sqrt(2), 1e-12));
	/* 99 ranks at 10 GB/s, rank 37 at 20: mean 10.1, sd 0.995 */
	for (i = 0; i < 100; i++)
		y[i] = 10e9;
	y[37] = 20e9;
	CHECK_INT(sl_outlier(y, 100, &zz), 37);
	CHECK(NEAR(zz, 9.9 / sqrt(0.99), 1e-6));
	/* the slow one: rank 5 at 1 GB/s; mean 9.91, sd sqrt(0.8019) */
	y[37] = 10e9;
	y[5] = 1e9;
	CHECK_INT(sl_outlier(y, 100, &zz), 5);
	CHECK(NEAR(zz, -8.91 / sqrt(0.8019), 1e-6));
	/* all equal: no outlier, z 0 */
	y[5] = 10e9;
	CHECK_INT(sl_outlier(y, 100, &zz), -1);
	CHECK_INT(sl_zscores(y, 100, y), 100);
	CHECK(y[0] == 0);	/* z may overwrite x */
	CHECK_INT(sl_outlier(x, 1, NULL), -1);
	/* large values: no cancellation (1e15 +- 1) */
	for (i = 0; i < 4; i++)
		s[i] = 1e15 + (i % 2 ? 1 : -1);
	sl_zscores(s, 4, z);
	CHECK(NEAR(z[0], -1, 1e-9) && NEAR(z[1], 1, 1e-9));
}

static void test_median(void)
{
	double a[] = { 3, 1, 2 }, b[] = { 4, NAN, 1, 3, 2 }, c[] = { NAN }, sc[5];

	CHECK(sl_median(a, 3, sc) == 2);
	CHECK(sl_median(b, 5, sc) == 2.5);
	CHECK(isnan(sl_median(c, 1, sc)));
	CHECK(b[0] == 4 && isnan(b[1]));	/* input untouched */
}

static void test_group_outliers(void)
{
	/* med 100.5, MAD 0.5 -> 3 * 1.4826 * 0.5 = 2.2 < 10% floor = 10.05 */
	double x[] = { 100, 101, 99, 100.5, 130 }, sc[8];
	/* noisy group: med 105, MAD 15 -> 66.7: 125 (+19%) is within the noise */
	double y[] = { 100, 120, 80, 110, 90, 125 };
	/* MAD rule above the floor: med 100, MAD 5 -> 22.2 > 10 */
	double w[] = { 95, 100, 105, 93, 107, 100, 125, NAN };
	bool f[8];

	CHECK_INT(sl_group_outliers(x, 5, SL_GROUP_K_MAD, SL_GROUP_MIN_REL, f, sc), 1);
	CHECK(f[4] && !f[0] && !f[1] && !f[2] && !f[3]);
	/* one-sided: a fast group is not degraded */
	x[4] = 70;
	CHECK_INT(sl_group_outliers(x, 5, SL_GROUP_K_MAD, SL_GROUP_MIN_REL, f, sc), 0);
	/* the limit is med + 10.05 = 110.55 */
	x[4] = 110.5;
	CHECK_INT(sl_group_outliers(x, 5, SL_GROUP_K_MAD, SL_GROUP_MIN_REL, f, sc), 0);
	x[4] = 110.6;
	CHECK_INT(sl_group_outliers(x, 5, SL_GROUP_K_MAD, SL_GROUP_MIN_REL, f, sc), 1);
	CHECK_INT(sl_group_outliers(y, 6, SL_GROUP_K_MAD, SL_GROUP_MIN_REL, f, sc), 0);
	CHECK_INT(sl_group_outliers(w, 8, SL_GROUP_K_MAD, SL_GROUP_MIN_REL, f, sc), 1);
	CHECK(f[6] && !f[7]);
	w[6] = 120;	/* +20% but within this group's spread */
	CHECK_INT(sl_group_outliers(w, 8, SL_GROUP_K_MAD, SL_GROUP_MIN_REL, f, sc), 0);
	/* two comms: nothing can be said */
	CHECK_INT(sl_group_outliers(x + 3, 2, SL_GROUP_K_MAD, SL_GROUP_MIN_REL, f, sc), 0);
}

static void test_group_check(void)
{
	struct sl_comm_stat c[] = {
		/* 4 DP all-reduces of 8 ranks, same signature: comm 4 degraded */
		{ .comm = 1, .sig = 0xa, .nranks = 8, .median_ns = 1000e3 },
		{ .comm = 2, .sig = 0xa, .nranks = 8, .median_ns = 1010e3 },
		{ .comm = 3, .sig = 0xb, .nranks = 8, .median_ns = 5000e3 },
		{ .comm = 4, .sig = 0xa, .nranks = 8, .median_ns = 1500e3 },
		{ .comm = 5, .sig = 0xa, .nranks = 8, .median_ns = 990e3 },
		/* same signature, other size: its own group */
		{ .comm = 6, .sig = 0xa, .nranks = 4, .median_ns = 3000e3 },
		{ .comm = 7, .sig = 0xb, .nranks = 8, .median_ns = 5100e3 },
		{ .comm = 8, .sig = 0xb, .nranks = 8, .median_ns = NAN },
		{ .comm = 9, .sig = 0xb, .nranks = 8, .median_ns = 4900e3 },
	};
	size_t i;

	CHECK_INT(sl_group_check(c, 9), 1);
	for (i = 0; i < 9; i++)
		CHECK_INT(c[i].deviant, c[i].comm == 4);
	CHECK_INT(c[0].comm, 1);	/* order kept */
	CHECK_INT(c[3].group_size, 4);
	CHECK(c[3].group_median_ns == 1005e3);
	CHECK_INT(c[5].group_size, 1);
	CHECK(c[5].group_median_ns == 3000e3);
	CHECK_INT(c[2].group_size, 4);
	CHECK(c[2].group_median_ns == 5000e3);
	CHECK_INT(sl_group_check(c, 0), 0);
}

int main(void)
{
	test_zscores();
	test_median();
	test_group_outliers();
	test_group_check();
	return check_finish("test_slow_stats");
}
