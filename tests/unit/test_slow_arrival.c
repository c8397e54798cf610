// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Who the others wait for, from a step sample's arrivals
 * (slow_arrival_culprit), and whether a straggler's GPU was held by a
 * pipeline op it made late itself (slow_p2p_late).  Both came from random
 * job 35 (docs/simjob.md): 8 ranks, TP 1, PP 2, DP 4; rank 4's GPU 4.4x
 * slower; each DP comm does a reduce-scatter then an all-gather back to
 * back, after the pipeline send/recv with the other stage.
 */
#include "test_an_helpers.h"
#include "an_int.h"
#include "an_slow_int.h"

#define MS 1e6

/* a comm of 4 whose sample saw ROUNDS rounds, LAST[k] of them last */
static void arrivals(struct an_comm *c, struct an_slow *s, uint32_t rounds,
		     const uint32_t *last, const double *gap_ms)
{
	static uint32_t l[4], held[4];
	static double g[4];
	static uint64_t holder[4];
	int k;

	memset(c, 0, sizeof(*c));
	memset(s, 0, sizeof(*s));
	c->nranks = 4;
	c->slow = s;
	s->arr_rounds = rounds;
	s->arr_last = l;
	s->arr_gap = g;
	s->arr_held = held;
	s->arr_holder = holder;
	for (k = 0; k < 4; k++) {
		l[k] = last[k];
		g[k] = gap_ms[k] * MS;
		held[k] = 0;
		holder[k] = 0;
	}
}

/*
 * Job 35's stage-1 DP comm: rank 0 (global 4) is last in the 10
 * reduce-scatters, 27 ms ahead of it each; in the 10 all-gathers that
 * follow at once anyone is last by microseconds.  Counting rounds gave
 * 11 of 20 (under the 75% bar): no one.  Weighed by the lead: rank 0.
 */
static void test_back_to_back_ops(void)
{
	const uint32_t last[4] = { 11, 2, 3, 4 };
	const double gap[4] = { 10 * 27 + 0.01, 0.02, 0.03, 0.04 };
	struct an_comm c;
	struct an_slow s;
	double share, lead;

	arrivals(&c, &s, 20, last, gap);
	CHECK_INT(slow_arrival_culprit(&c, &share, &lead, NULL), 0);
	CHECK(share > 0.99);
	CHECK(lead > 24 * MS && lead < 25 * MS);
}

/* one round in which a descheduled process was 80 ms late: no straggler */
static void test_one_hiccup(void)
{
	const uint32_t last[4] = { 1, 6, 7, 6 };
	const double gap[4] = { 80, 3, 3.5, 3 };
	struct an_comm c;
	struct an_slow s;
	double share, lead;

	arrivals(&c, &s, 20, last, gap);
	CHECK_INT(slow_arrival_culprit(&c, &share, &lead, NULL), -1);
}

/* everyone as often and as much: no one; too few rounds: no one */
static void test_no_straggler(void)
{
	const uint32_t last[4] = { 5, 5, 5, 5 }, few[4] = { 3, 0, 0, 0 };
	const double gap[4] = { 5, 5, 5, 5 }, fgap[4] = { 90, 0, 0, 0 };
	struct an_comm c;
	struct an_slow s;
	double share, lead;

	arrivals(&c, &s, 20, last, gap);
	CHECK_INT(slow_arrival_culprit(&c, &share, &lead, NULL), -1);
	arrivals(&c, &s, 3, few, fgap);
	CHECK_INT(slow_arrival_culprit(&c, &share, &lead, NULL), -1);
}

#define PP 0x00000000000000b1ull
#define DP0 0x00000000000000c1ull
#define DP1 0x00000000000000c2ull

/*
 * The pipeline pair (global ranks 0 and 4) on one host: rank 0 enters its
 * send and receive to 4 at once, rank 4 30 ms later (its compute is slow).
 * Rank 4 made the pipeline op late: in its DP comm it is the straggler
 * itself; rank 0 waited in it: in its DP comm it is a cascade.
 */
static void test_p2p_late(void)
{
	const int g0[4] = { 0, 1, 2, 3 }, g1[4] = { 4, 5, 6, 7 }, pp[2] = { 0, 4 };
	struct an_comm *h, *d0, *d1;
	struct sim s;

	sim_init(&s, 30, 300);
	sim_comm(&s, PP, 2, pp);
	sim_comm(&s, DP0, 4, g0);
	sim_comm(&s, DP1, 4, g1);
	s.now[0] += 10 * (uint64_t)MS;
	sim_p2p(&s, PP, 0, 1, 0, 1024, true);
	sim_p2p(&s, PP, 0, 1, 1, 1024, true);
	s.now[0] += 30 * (uint64_t)MS;
	sim_p2p(&s, PP, 1, 0, 1, 1024, true);
	sim_p2p(&s, PP, 1, 0, 0, 1024, true);
	h = an_comm_get(s.an, PP, 0, false);
	d0 = an_comm_get(s.an, DP0, 0, false);
	d1 = an_comm_get(s.an, DP1, 0, false);
	CHECK(h && d0 && d1);
	if (h && d0 && d1) {
		/* a lead of 27 ms: rank 4 was 30 ms behind, over half of it */
		CHECK(slow_p2p_late(s.an, h, d1, 0, 27 * MS));
		CHECK(!slow_p2p_late(s.an, h, d0, 0, 27 * MS));
		/* a lead of 80 ms: 30 ms behind explains less than half of it */
		CHECK(!slow_p2p_late(s.an, h, d1, 0, 80 * MS));
		/* rank 0 has entered its next send and receive: rank 4 is behind */
		sim_p2p(&s, PP, 0, 1, 0, 1024, true);
		sim_p2p(&s, PP, 0, 1, 1, 1024, true);
		CHECK(slow_p2p_late(s.an, h, d1, 0, 80 * MS));
		CHECK(!slow_p2p_late(s.an, h, d0, 0, 27 * MS));
	}
	sim_fini(&s);
}

int main(void)
{
	test_back_to_back_ops();
	test_one_hiccup();
	test_no_straggler();
	test_p2p_late();
	return check_finish("test_slow_arrival");
}
