// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * 16,384 ranks in one comm: steady-state memory independent of run length,
 * and a late rank located within one tick.  Prints the locate time (the
 * target (docs/numbers.md) is < 150 ms per window on one core, built
 * without sanitizers; this binary has ASan, so the bound checked is loose).
 */
#include <time.h>
#include "test_an_helpers.h"
#include "an_int.h"
#include "an_slow_int.h"

#define N 16384
#define C 0xfeedull

static uint64_t now;

static void round_(struct an *an, int64_t seq, int skip)
{
	struct an_op op = {
		.k = { .host = 0, .comm = C, .nranks = N },
		.fn = CCLD_FN_ALLREDUCE, .seq = seq, .count = 1 << 20,
		.dtype = 7, .redop = 0, .root = -1, .peer = -1,
	};
	int r;

	for (r = 0; r < N; r++) {
		if (r == skip)
			continue;
		op.k.rank = r;
		op.k.pid = 10000 + (uint32_t)r;
		op.tid = op.k.pid;
		op.t_ns = now;
		an_op_enter(an, &op);
		an_op_return(an, &op, 0, now + 1000);
		if (skip < 0)
			an_op_complete(an, &op, now + 5000);
	}
	now += 10000000;
}

static double ms_since(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) * 1e3 +
	       (double)(b.tv_nsec - a->tv_nsec) / 1e6;
}

/*
 * Records that name comms of 2^20 ranks (hostile, or corrupt) under a 64
 * MiB budget: refused and counted, the state stays under it, and a comm
 * that fits is still made
 */
static void test_mem_max(void)
{
	struct an_key k = { .host = 0, .rank = 0, .pid = 4242 };
	struct sim s;
	uint64_t h;

	sim_init(&s, 5, 300);
	s.an->cfg.mem_max = 64UL << 20;
	k.nranks = 1 << 20;
	for (h = 1; h <= 3; h++) {
		k.comm = 0xbad0ull + h;
		CHECK(an_rank(s.an, &k, 0, s.now[0]) < 0);
	}
	CHECK_INT(an_stats(s.an)->mem_refused, 3);
	CHECK(an_stats(s.an)->mem_bytes <= s.an->cfg.mem_max);
	k.comm = 0x600dull;
	k.nranks = 4;
	CHECK_INT(an_rank(s.an, &k, 0, s.now[0]), 0);
	CHECK_INT(an_stats(s.an)->mem_refused, 3);
	CHECK(an_comm_get(s.an, 0x600dull, 0, false) != NULL);
	CHECK(an_comm_get(s.an, 0xbad1ull, 0, false) == NULL);
	sim_fini(&s);
}

/* a round of comm HASH's 4 ranks (pids PID0..PID0+3): enter, return, complete */
static void small_round(struct an *an, uint64_t hash, uint32_t pid0, int64_t seq)
{
	struct an_op op = {
		.k = { .host = 0, .comm = hash, .nranks = 4 },
		.fn = CCLD_FN_ALLREDUCE, .seq = seq, .count = 1024,
		.dtype = 7, .redop = 0, .root = -1, .peer = -1,
	};
	int r;

	for (r = 0; r < 4; r++) {
		op.k.rank = r;
		op.k.pid = pid0 + (uint32_t)r;
		op.tid = op.k.pid;
		op.t_ns = now;
		an_op_enter(an, &op);
		an_op_return(an, &op, 0, now + 1000);
		an_op_complete(an, &op, now + 500000);
	}
	now += 1000000;
}

/*
 * A comm's slow-detection state (the rounds, CCL-D's baseline, the
 * iteration period's 1024 signatures: tens of KB) is counted against
 * --mem-max: it was not, so thousands of comms held hundreds of MB the
 * budget did not see.  Where the budget has no room for it, the comm has
 * none (judged for hangs only), and the refusal is counted.
 */
static void test_mem_slow_state(void)
{
	const struct an_comm *c;
	struct sim s;
	size_t before;
	int64_t seq;

	sim_init(&s, 5, 300);
	now = s.now[0];
	before = an_stats(s.an)->mem_bytes;
	for (seq = 0; seq < 4; seq++)
		small_round(s.an, 0x51ull, 2000, seq);
	c = an_comm_get(s.an, 0x51ull, 0, false);
	CHECK(c && c->slow);
	if (c && c->slow) {
		printf("slow-detection state of a 4-rank comm: %zu bytes\n", c->slow->bytes);
		CHECK(c->slow->bytes >= 16384);
		CHECK(an_stats(s.an)->mem_bytes >= before + c->slow->bytes);
	}
	/* room for a comm, not for its slow state */
	s.an->cfg.mem_max = an_stats(s.an)->mem_bytes + 8192;
	for (seq = 0; seq < 4; seq++)
		small_round(s.an, 0x52ull, 2000, seq);
	c = an_comm_get(s.an, 0x52ull, 0, false);
	CHECK(c != NULL);
	CHECK(c && !c->slow);
	CHECK(an_stats(s.an)->mem_refused >= 1);
	CHECK(an_stats(s.an)->mem_bytes <= s.an->cfg.mem_max);
	sim_fini(&s);
}

int main(void)
{
	struct sim s;
	struct an_key k = { .host = 0, .comm = C, .nranks = N };
	struct timespec t0;
	size_t mem1;
	double worst = 0;
	int64_t seq = 0;
	int r, i;

	sim_init(&s, 5, 300);
	now = s.now[0];
	for (r = 0; r < N; r++) {
		k.rank = r;
		k.pid = 10000 + (uint32_t)r;
		CHECK_INT(an_rank(s.an, &k, 0, now), 0);
	}
	for (i = 0; i < 20; i++)
		round_(s.an, seq++, -1);
	an_clock(s.an, 0, now);
	mem1 = an_stats(s.an)->mem_bytes;
	for (i = 0; i < 100; i++) {
		round_(s.an, seq++, -1);
		if (i % 10 == 0)
			an_clock(s.an, 0, now);
	}
	CHECK_INT(an_stats(s.an)->mem_bytes, mem1);
	printf("memory for %d ranks: %zu bytes (%.0f per rank)\n", N, mem1,
	       (double)mem1 / N);
	round_(s.an, seq, 12345);
	for (i = 0; i < 24 && !s.nv; i++) {
		now += SIM_TICK_NS;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		an_clock(s.an, 0, now);
		if (ms_since(&t0) > worst)
			worst = ms_since(&t0);
	}
	printf("slowest tick (incl. locate): %.1f ms, %" PRIu64 " analyses\n",
	       worst, an_stats(s.an)->analyses);
	CHECK_INT(s.nv, 1);
	CHECK_INT(s.v[0].cls, AN_H1);
	CHECK_INT(s.v[0].seq, seq);
	CHECK_STR(sim_culprits(&s.v[0]), "12345");
	CHECK(worst < 1000);
	sim_fini(&s);
	test_mem_max();
	test_mem_slow_state();
	return check_finish("test_an_scale");
}
