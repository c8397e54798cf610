// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Slow detector + locator cost (analyzer/slow_detect.c; the target, in
 * docs/numbers.md: one window of a 16,384-rank communicator in < 150 ms
 * on one core).
 * Per size: a learned baseline (100 rounds, untimed), then windows of 60
 * rounds 1 s apart in which every round is slow: the incident's rates are
 * accumulated and the class, culprits and z-scores recomputed every round, and
 * as the delay grows the located round often moves, which also recomputes the
 * rate median (a sort).  Generating the rounds is not timed.
 * Usage: bench_locator [WINDOWS]   (default 5)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "slow.h"
#include "../unit/splitmix.h"

#define ROUNDS	60
#define T	1e6

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* rank `slow` computes `extra` ns more: the others wait for it (S1) */
static void gen(double *dur, double *rate, uint32_t n, uint64_t *rng, double extra,
		uint32_t slow)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		dur[i] = T * (1 + 0.4 * (u01(rng) - 0.5)) + (i == slow ? 0 : extra);
		rate[i] = 10e9 * (1 + 0.1 * (u01(rng) - 0.5));
	}
}

static int bench(uint32_t n, int windows)
{
	double *dur = malloc(sizeof(double) * n * ROUNDS);
	double *rate = malloc(sizeof(double) * n * ROUNDS);
	struct sl_det *d = sl_det_new(NULL, n);
	uint64_t rng = n, t = 0;
	double total = 0, worst = 0;
	int w, i, located = 0;

	if (!dur || !rate || !d) {
		fprintf(stderr, "bench_locator: out of memory\n");
		free(dur);
		free(rate);
		sl_det_free(d);
		return 1;
	}
	for (i = 0; i < 100; i++) {
		struct sl_round rd = { .iter = i, .t_ns = t += 1000000000ull,
				       .dur_ns = dur, .rate = rate };

		gen(dur, rate, n, &rng, 0, 0);
		sl_det_round(d, &rd);
	}
	for (w = 0; w < windows; w++) {
		double t0, dt;

		for (i = 0; i < ROUNDS; i++)
			gen(dur + (size_t)i * n, rate + (size_t)i * n, n, &rng,
			    (2 + 0.01 * (w * ROUNDS + i)) * T, 17);
		t0 = now();
		for (i = 0; i < ROUNDS; i++) {
			struct sl_round rd = { .iter = 100 + w * ROUNDS + i,
					       .t_ns = t += 1000000000ull,
					       .dur_ns = dur + (size_t)i * n,
					       .rate = rate + (size_t)i * n };

			located += !!(sl_det_round(d, &rd) & (SL_EV_ONSET | SL_EV_UPDATE));
		}
		dt = now() - t0;
		total += dt;
		if (dt > worst)
			worst = dt;
	}
	if (sl_det_result(d)->culprit != 17 || sl_det_result(d)->cls != SL_S1) {
		fprintf(stderr, "bench_locator: wrong culprit %d\n", sl_det_result(d)->culprit);
		return 1;
	}
	printf("ranks %u: %.1f ms per window (max %.1f ms; %d windows of %d rounds, "
	       "%d relocations, 1 core)\n", n, total / windows * 1e3, worst * 1e3, windows,
	       ROUNDS, located);
	free(dur);
	free(rate);
	sl_det_free(d);
	return 0;
}

int main(int argc, char **argv)
{
	uint32_t sizes[] = { 1024, 4096, 16384 };
	int windows = argc > 1 ? atoi(argv[1]) : 5, i, rc = 0;

	if (windows < 1)
		windows = 1;
	for (i = 0; i < 3; i++)
		rc |= bench(sizes[i], windows);
	return rc;
}
