// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* No verdict on a healthy job: steady state, checkpoint pause, barrier. */
#include "test_an_helpers.h"

#define TP 0x42ull
#define W  0x77ull

static void healthy(struct sim *s, int rounds)
{
	int i;

	for (i = 0; i < rounds; i++) {
		sim_round(s, TP, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_step(s, 10000000);
		if (i % 25 == 24)
			sim_tick(s, 0.25);
	}
}

static void test_steady(void)
{
	struct sim s;

	sim_init(&s, 1, 300);
	sim_comm(&s, TP, 8, NULL);
	healthy(&s, 2000);
	CHECK_INT(s.nv, 0);
	CHECK_INT(s.nsuspect_on, 0);
	sim_fini(&s);
}

/* 20 s checkpoint on all ranks: idle, returned, completed (tier B) */
static void test_checkpoint(void)
{
	struct sim s;

	sim_init(&s, 10, 300);
	sim_comm(&s, TP, 8, NULL);
	healthy(&s, 100);
	sim_tick(&s, 20);
	healthy(&s, 100);
	sim_tick(&s, 400);	/* even past hang_s: nothing is in flight */
	CHECK_INT(s.nv, 0);
	CHECK_INT(s.nsuspect_on, 0);
	sim_fini(&s);
}

/*
 * No tier B at all: the last op may or may not be in flight; only the
 * long threshold may call it (CCL-D's cut-off), never stall_s.
 */
static void test_checkpoint_no_tier_b(void)
{
	struct sim s;
	int i, r;

	sim_init(&s, 10, 60);
	sim_comm(&s, TP, 8, NULL);
	for (i = 0; i < 50; i++)
		for (r = 0; r < 8; r++)
			sim_call(&s, TP, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_tick(&s, 20);
	CHECK_INT(s.nv, 0);
	for (r = 0; r < 8; r++)
		sim_call(&s, TP, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_tick(&s, 59.5);
	CHECK_INT(s.nv, 0);
	sim_tick(&s, 1);
	CHECK_INT(s.nv, 1);
	CHECK_INT(s.v[0].cls, AN_H3);
	check_latency(&s.v[0], 60);
	sim_fini(&s);
}

/* TP and W of 8 ranks after 50 healthy rounds; stall 10 s, hang 300 s */
static void barrier_job(struct sim *s)
{
	sim_init(s, 10, 300);
	sim_comm(s, TP, 8, NULL);
	sim_comm(s, W, 8, NULL);
	healthy(s, 50);
}

/* rank 5 is 60 s late to a barrier (1-element all-reduce) */
static void test_barrier(void)
{
	struct sim s;
	struct an_op ops[8];
	int r;

	barrier_job(&s);
	for (r = 0; r < 8; r++)
		if (r != 5)
			ops[r] = sim_enter_op(&s, W, r, CCLD_FN_ALLREDUCE, 1, 7);
	sim_tick(&s, 60);
	CHECK_INT(s.nv, 0);
	CHECK_INT(s.nsuspect_on, 0);
	ops[5] = sim_call(&s, W, 5, CCLD_FN_ALLREDUCE, 1, 7);
	for (r = 0; r < 8; r++) {
		if (r != 5)
			an_op_return(s.an, &ops[r], 0, s.now[0]);
		sim_complete(&s, &ops[r]);
	}
	healthy(&s, 50);
	CHECK_INT(s.nv, 0);
	/* but a barrier that never ends is a hang, at hang_s */
	for (r = 0; r < 8; r++)
		if (r != 5)
			sim_enter_op(&s, W, r, CCLD_FN_ALLREDUCE, 1, 7);
	sim_tick(&s, 300.5);
	CHECK_INT(s.nv, 1);
	CHECK_INT(s.v[0].cls, AN_H1);
	CHECK(s.v[0].comm == W);
	CHECK_STR(sim_culprits(&s.v[0]), "5");
	check_latency(&s.v[0], 300);
	sim_fini(&s);
}

/*
 * Every rank entered a barrier-sized all-reduce and it never completes
 * (random job 655: rank 3's GPU stalled in a 1-element TP all-reduce):
 * nobody is late to it, it is stuck like any other op, a hang at
 * stall_s, not hang_s (silent before, 300 s).
 */
static void test_barrier_all_in(void)
{
	struct sim s;
	int r;

	barrier_job(&s);
	for (r = 0; r < 8; r++)
		sim_enter_op(&s, W, r, CCLD_FN_ALLREDUCE, 1, 7);
	sim_tick(&s, 12);
	CHECK_INT(s.nv, 1);
	if (s.nv >= 1) {
		CHECK(s.v[0].comm == W);
		CHECK_INT(s.v[0].cls, AN_H3);
		check_latency(&s.v[0], 10);
	}
	sim_fini(&s);
}

/* a destroyed comm does not wait */
static void test_destroyed(void)
{
	struct sim s;
	struct sim_comm *c;
	int r;

	sim_init(&s, 5, 30);
	sim_comm(&s, TP, 4, NULL);
	for (r = 0; r < 4; r++)
		sim_call(&s, TP, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	c = sim_find(&s, TP);
	for (r = 0; r < 4; r++) {
		struct an_key k = sim_key(&s, c, r);

		an_rank_gone(s.an, &k, s.now[0]);
	}
	sim_tick(&s, 100);
	CHECK_INT(s.nv, 0);
	sim_fini(&s);
}

int main(void)
{
	test_steady();
	test_checkpoint();
	test_checkpoint_no_tier_b();
	test_barrier();
	test_barrier_all_in();
	test_destroyed();
	return check_finish("test_an_nofp");
}
