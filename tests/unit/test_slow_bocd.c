// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* BOCD with Greyhound's 10% verification (analyzer/slow_bocd.c). */
#include <math.h>
#include <stdlib.h>
#include "check.h"
#include "slow.h"
#include "splitmix.h"

#define SEEDS 30

/* level * (1 +- 20%), uniform */
static double noisy(uint64_t *s, double level)
{
	return level * (1 + 0.4 * (u01(s) - 0.5));
}

/* 100 -> 300 at sample 200, back to 100 at 400: both found within 3 samples */
static void test_step_and_recovery(void)
{
	uint64_t seed;
	int ok_up = 0, ok_down = 0, other = 0;

	for (seed = 1; seed <= SEEDS; seed++) {
		struct sl_bocd *b = sl_bocd_new(NULL);
		struct sl_cp cp;
		uint64_t s = seed;
		int i;

		CHECK(b != NULL);
		if (!b)
			return;
		for (i = 0; i < 600; i++) {
			double lvl = i < 200 ? 100 : i < 400 ? 300 : 100;

			if (!sl_bocd_push(b, noisy(&s, lvl), &cp))
				continue;
			if (cp.index == 200 && cp.at <= 202 && fabs(cp.before - 100) < 5 &&
			    fabs(cp.after - 300) < 45)
				ok_up++;
			else if (cp.index == 400 && cp.at <= 402 && fabs(cp.before - 300) < 15 &&
				 fabs(cp.after - 100) < 15)
				ok_down++;
			else
				other++;
		}
		sl_bocd_free(b);
	}
	CHECK_INT(ok_up, SEEDS);
	CHECK_INT(ok_down, SEEDS);
	CHECK_INT(other, 0);
}

/* exactly when it is reported, noise-free */
static void test_exact_delay(void)
{
	struct sl_bocd *b = sl_bocd_new(NULL);
	struct sl_cp cp;
	int i, n = 0;

	for (i = 0; i < 100; i++) {
		double x = i < 50 ? 100 + (i % 3) : 300 + (i % 3);

		if (sl_bocd_push(b, x, &cp)) {
			n++;
			CHECK_INT(i, 52);	/* the third sample after the change */
			CHECK_INT(cp.index, 50);
			CHECK_INT(cp.at, 52);
			CHECK(fabs(cp.before - 101) < 0.1);
			CHECK(fabs(cp.after - 301) < 0.1);
		}
	}
	CHECK_INT(n, 1);
	CHECK_INT(sl_bocd_map(b), 50);
	sl_bocd_free(b);
}

/* 100 +- 20% for 1000 samples: no change point, for every seed */
static void test_noise_only(void)
{
	uint64_t seed;
	int n = 0;

	for (seed = 1; seed <= SEEDS; seed++) {
		struct sl_bocd *b = sl_bocd_new(NULL);
		struct sl_cp cp;
		uint64_t s = seed * 7919;
		int i;

		for (i = 0; i < 1000; i++)
			n += sl_bocd_push(b, noisy(&s, 100), &cp);
		/* the run-length distribution is truncated: MAP stays at the cap */
		CHECK_INT(sl_bocd_map(b), 256);
		sl_bocd_free(b);
	}
	CHECK_INT(n, 0);
}

/* a 5% step is a change for BOCD on quiet data, but not for the 10% check */
static void test_verification(void)
{
	struct sl_bocd *b = sl_bocd_new(NULL);
	struct sl_cp cp;
	uint64_t s = 42;
	int i, n = 0, first = -1;

	for (i = 0; i < 300; i++) {
		double lvl = i < 100 ? 100 : i < 200 ? 105 : 116;

		/* +-0.5% noise */
		if (sl_bocd_push(b, lvl * (1 + 0.01 * (u01(&s) - 0.5)), &cp)) {
			n++;
			if (first < 0)
				first = (int)cp.index;
		}
	}
	CHECK_INT(n, 1);
	CHECK_INT(first, 200);	/* 105 -> 116 (+10.5%) only */
	sl_bocd_free(b);
}

static void test_config(void)
{
	struct sl_bocd_config c;
	struct sl_bocd *b;
	struct sl_cp cp;

	sl_bocd_default(&c);
	CHECK(c.hazard_len == 250 && c.max_run == 256 && c.min_after == 3);
	CHECK(c.min_change == 0.1 && c.prior_rel == 0.3);
	c.max_run = 2;
	CHECK(sl_bocd_new(&c) == NULL);
	sl_bocd_default(&c);
	c.hazard_len = 1;
	CHECK(sl_bocd_new(&c) == NULL);
	/* non-finite values are ignored */
	b = sl_bocd_new(NULL);
	CHECK(!sl_bocd_push(b, NAN, &cp));
	CHECK(!sl_bocd_push(b, 10, &cp));
	CHECK(!sl_bocd_push(b, INFINITY, &cp));
	CHECK(!sl_bocd_push(b, 10, &cp));
	CHECK_INT(sl_bocd_map(b), 2);
	sl_bocd_free(b);
	sl_bocd_free(NULL);
}

int main(void)
{
	test_step_and_recovery();
	test_exact_delay();
	test_noise_only();
	test_verification();
	test_config();
	return check_finish("test_slow_bocd");
}
