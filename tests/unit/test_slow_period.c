// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Iteration period by autocorrelation, online iteration index and times. */
#include <math.h>
#include <stdlib.h>
#include "check.h"
#include "slow.h"

static uint64_t mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* n ops of a job whose iteration is p ops with distinct signatures; an extra
 * op (signature 0xdead) before op number `insert` if >= 0 */
static size_t make_seq(uint64_t *sig, size_t n, size_t p, long insert)
{
	size_t i, k = 0;

	for (i = 0; k < n; i++) {
		if ((long)i == insert && k < n)
			sig[k++] = 0xdead;
		if (k < n)
			sig[k++] = mix(i % p);
	}
	return k;
}

static void test_offline(void)
{
	static uint64_t sig[2000];
	size_t periods[] = { 1, 7, 40 };
	double score;
	size_t i, j;

	for (i = 0; i < 3; i++) {
		size_t p = periods[i], n = 20 * p < 100 ? 100 : 20 * p;

		make_seq(sig, n, p, -1);
		CHECK_INT(sl_period(sig, n, &score), p);
		CHECK(score == 1.0);
		/* one inserted op: every lag but the shift straddling it matches */
		make_seq(sig, n, p, (long)(n / 3));
		CHECK_INT(sl_period(sig, n, &score), p);
		CHECK(score > 0.9 && score < 1.0);
	}
	/* period 7 with one insertion, n = 140: of lag 7's 133 pairs, 2 contain
	 * the inserted op and 6 straddle it */
	make_seq(sig, 140, 7, 50);
	CHECK_INT(sl_period(sig, 140, &score), 7);
	CHECK(fabs(score - 125.0 / 133) < 1e-9);
	/* 39 equal all-reduces and one other: lag 1 scores 0.95, within 0.9 but
	 * not within 2% of lag 40's 1.0 */
	for (j = 0; j < 400; j++)
		sig[j] = j % 40 == 39 ? 2 : 1;
	CHECK_INT(sl_period(sig, 400, &score), 40);
	/* random signatures: no period */
	for (j = 0; j < 1000; j++)
		sig[j] = mix(j * 31 + 7) % 1000;
	CHECK_INT(sl_period(sig, 1000, &score), 0);
	CHECK(score < 0.05);
	/* a period needs two repetitions: lag <= n / 2 */
	make_seq(sig, 79, 40, -1);
	CHECK_INT(sl_period(sig, 79, NULL), 0);
	make_seq(sig, 80, 40, -1);
	CHECK_INT(sl_period(sig, 80, NULL), 40);
	CHECK_INT(sl_period(sig, 1, NULL), 0);
	CHECK_INT(sl_period(sig, SL_PERIOD_MAX_N + 1, NULL), 0);
}

/* period 7, ops 1 us apart, iterations 7 us; learned at 32 ops */
static void test_online(void)
{
	struct sl_iter *it = sl_iter_new(1024);
	uint64_t dt, t = 0;
	int64_t k;
	int i, bad = 0, starts = 0;

	CHECK(it != NULL);
	if (!it)
		return;
	for (i = 0; i < 31; i++)
		CHECK_INT(sl_iter_push(it, mix(i % 7), t += 1000, &dt), -1);
	CHECK_INT(sl_iter_period(it), 0);
	/* the 32nd op teaches the period: op 31 is in iteration 31 / 7 = 4 */
	CHECK_INT(sl_iter_push(it, mix(31 % 7), t += 1000, &dt), 4);
	CHECK_INT(sl_iter_period(it), 7);
	for (i = 32; i < 200; i++) {
		/* iteration 20 takes twice as long: its ops are 2 us apart */
		t += i / 7 == 20 ? 2000 : 1000;
		k = sl_iter_push(it, mix(i % 7), t, &dt);
		bad += k != i / 7;
		if (i % 7 == 0) {
			starts++;
			bad += dt != (i / 7 == 21 ? 13000u : i / 7 == 20 ? 8000u : 7000u);
		} else {
			bad += dt != 0;
		}
	}
	CHECK_INT(bad, 0);
	CHECK_INT(starts, 24);
	/* an inserted op stays in the iteration in progress */
	CHECK_INT(sl_iter_push(it, 0xdead, t += 1000, &dt), 28);
	CHECK_INT(dt, 0);
	/* op 200 (phase 4) follows as if nothing happened */
	CHECK_INT(sl_iter_push(it, mix(200 % 7), t += 1000, &dt), 28);
	/* a skipped op: 201 missing, 202 arrives */
	CHECK_INT(sl_iter_push(it, mix(202 % 7), t += 1000, &dt), 28);
	CHECK_INT(sl_iter_push(it, mix(203 % 7), t += 1000, &dt), 29);
	/* from op 196: 196-199, the inserted op, 200, 202, 1 us each */
	CHECK_INT(dt, 7000);
	sl_iter_free(it);
}

/* the pattern changes (evaluation): relearned, indices keep increasing */
static void test_relearn(void)
{
	struct sl_iter *it = sl_iter_new(256);
	uint64_t t = 0;
	int64_t k, last = -1;
	int i, unknown = 0, backwards = 0;

	for (i = 0; i < 100; i++)
		last = sl_iter_push(it, mix(i % 5), t += 10, NULL);
	CHECK_INT(sl_iter_period(it), 5);
	CHECK_INT(last, 19);
	for (i = 0; i < 300; i++) {
		k = sl_iter_push(it, mix(1000 + i % 3), t += 10, NULL);
		if (k < 0) {
			unknown++;
			continue;
		}
		backwards += k < last;
		last = k;
	}
	CHECK_INT(sl_iter_period(it), 3);
	CHECK_INT(backwards, 0);
	CHECK(unknown > 0 && unknown < 64);
	CHECK(last > 19 + 80);
	sl_iter_free(it);
	CHECK(sl_iter_new(8) == NULL);
	CHECK(sl_iter_new(SL_PERIOD_MAX_N + 1) == NULL);
	sl_iter_free(NULL);
}

int main(void)
{
	test_offline();
	test_online();
	test_relearn();
	return check_finish("test_slow_period");
}
