// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Cascades (Mycroft 5.2): 8 ranks, TP groups A={0..3} B={4..7}, DP pairs
 * Dk={k,k+4}.  A hang that starts in one comm is the root; the DP stalls
 * it causes are cascades that name it in blocked_by.
 */
#include "test_an_helpers.h"

#define A  0xa000000000000001ull
#define B  0xb000000000000002ull
#define D(k) (0xd000000000000000ull + (uint64_t)(k))

static void job(struct sim *s)
{
	static const int ga[4] = { 0, 1, 2, 3 }, gb[4] = { 4, 5, 6, 7 };
	int k;

	sim_init(s, 5, 300);
	sim_comm(s, A, 4, ga);
	sim_comm(s, B, 4, gb);
	for (k = 0; k < 4; k++) {
		int g[2] = { k, k + 4 };

		sim_comm(s, D(k), 2, g);
	}
}

static void iteration(struct sim *s)
{
	int i, k;

	for (i = 0; i < 3; i++) {
		sim_round(s, A, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_round(s, B, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_step(s, 10000000);
	}
	for (k = 0; k < 4; k++)
		sim_round(s, D(k), CCLD_FN_ALLREDUCE, 1 << 22, 7);
	sim_step(s, 10000000);
}

static void check_cascades(struct sim *s, uint64_t root, int64_t root_seq,
			   int expect_total)
{
	int i, roots = 0;

	CHECK_INT(sim_count(s, AN_V_NEW), expect_total);
	for (i = 0; i < s->nv; i++) {
		const struct an_verdict *v = &s->v[i];

		if (v->kind != AN_V_NEW)
			continue;
		if (v->comm == root) {
			CHECK_INT(v->role, AN_ROOT);
			roots++;
		} else {
			CHECK_INT(v->role, AN_CASCADE);
			CHECK(v->blocked_comm == root);
			CHECK_INT(v->blocked_seq, root_seq);
		}
	}
	CHECK_INT(roots, 1);
}

/* rank 1 is SIGSTOPped before its TP call: A is the root, D0..D3 cascade */
static void test_stop_tp(void)
{
	struct sim s;
	const struct an_verdict *v;
	int r, k;

	job(&s);
	iteration(&s);
	iteration(&s);
	an_proc_state(s.an, s.host_id[0], 101, AN_PROC_STOPPED, 0, s.now[0]);
	for (r = 0; r < 4; r++)
		if (r != 1)
			sim_call(&s, A, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_step(&s, 20000000);
	/* B goes on through its TP rounds and enters DP */
	for (r = 0; r < 3; r++) {
		sim_round(&s, B, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_step(&s, 10000000);
	}
	for (k = 0; k < 4; k++)
		sim_call(&s, D(k), 1, CCLD_FN_ALLREDUCE, 1 << 22, 7);
	sim_tick(&s, 6);
	v = sim_find_v(&s, A, AN_V_NEW);
	CHECK(v != NULL);
	if (v) {
		CHECK_INT(v->cls, AN_H1);
		CHECK_INT(v->seq, 6);
		CHECK_STR(sim_culprits(v), "1");
	}
	check_cascades(&s, A, 6, 5);
	v = sim_find_v(&s, D(0), AN_V_NEW);
	CHECK(v && strstr(v->text, "blocked") != NULL);
	sim_tick(&s, 20);
	CHECK_INT(s.nv, 5);
	sim_fini(&s);
}

/* rank 5 stops completing network steps in B (tier B shows it): B root */
static void test_net_tp(void)
{
	struct sim s;
	const struct an_verdict *v;
	int r, k;

	job(&s);
	iteration(&s);
	for (r = 0; r < 4; r++)
		sim_call(&s, B, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_step(&s, 20000000);
	for (r = 0; r < 3; r++) {
		sim_round(&s, A, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_step(&s, 10000000);
	}
	for (k = 0; k < 4; k++)
		sim_call(&s, D(k), 0, CCLD_FN_ALLREDUCE, 1 << 22, 7);
	sim_tick(&s, 6);
	v = sim_find_v(&s, B, AN_V_NEW);
	CHECK(v != NULL);
	if (v) {
		CHECK_INT(v->cls, AN_H3);
		CHECK_INT(v->seq, 3);
	}
	check_cascades(&s, B, 3, 5);
	sim_fini(&s);
}

/*
 * Ordering deadlock on ranks {0,4}: rank 4 skipped one A-like call, so in
 * comm X rank 0 waits at seq 2 for rank 4, which waits in comm Y at seq 1
 * for rank 0.  The comm that stalled first (X) is the root.
 */
static void test_cycle(void)
{
	static const int g[2] = { 0, 4 };
	struct sim s;
	const struct an_verdict *v;
	int i;

	sim_init(&s, 5, 300);
	sim_comm(&s, 0x10ull, 2, g);
	sim_comm(&s, 0x20ull, 2, g);
	for (i = 0; i < 2; i++) {
		sim_round(&s, 0x10ull, CCLD_FN_ALLREDUCE, 1024, 7);
		sim_round(&s, 0x20ull, CCLD_FN_ALLREDUCE, 1024, 7);
		sim_step(&s, 10000000);
	}
	sim_round(&s, 0x20ull, CCLD_FN_ALLREDUCE, 1024, 7);
	sim_call(&s, 0x10ull, 0, CCLD_FN_ALLREDUCE, 1024, 7);
	sim_step(&s, 30000000);
	sim_call(&s, 0x20ull, 1, CCLD_FN_ALLREDUCE, 1024, 7);
	sim_tick(&s, 6);
	CHECK_INT(s.nv, 2);
	v = sim_find_v(&s, 0x10ull, AN_V_NEW);
	CHECK(v && v->role == AN_ROOT && v->cls == AN_H1 && v->seq == 2);
	CHECK(v && !strcmp(sim_culprits(v), "1"));
	v = sim_find_v(&s, 0x20ull, AN_V_NEW);
	CHECK(v && v->role == AN_CASCADE && v->blocked_comm == 0x10ull &&
	      v->blocked_seq == 2);
	sim_fini(&s);
}

/* the same as test_stop_tp with ranks on 2 hosts whose clocks differ */
static void test_two_hosts(void)
{
	static const int ga[4] = { 0, 1, 2, 3 }, gb[4] = { 4, 5, 6, 7 };
	struct sim s;
	int r, k;

	sim_init_hosts(&s, 5, 300, 2, 4);
	sim_comm(&s, A, 4, ga);
	sim_comm(&s, B, 4, gb);
	for (k = 0; k < 4; k++) {
		int g[2] = { k, k + 4 };

		sim_comm(&s, D(k), 2, g);
	}
	iteration(&s);
	an_proc_state(s.an, s.host_id[0], 101, AN_PROC_STOPPED, 0, s.now[0]);
	for (r = 0; r < 4; r++)
		if (r != 1)
			sim_call(&s, A, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_step(&s, 20000000);
	for (r = 0; r < 3; r++) {
		sim_round(&s, B, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_step(&s, 10000000);
	}
	for (k = 0; k < 4; k++)
		sim_call(&s, D(k), 1, CCLD_FN_ALLREDUCE, 1 << 22, 7);
	sim_tick(&s, 6);
	check_cascades(&s, A, 3, 5);
	sim_fini(&s);
}

int main(void)
{
	test_stop_tp();
	test_net_tp();
	test_cycle();
	test_two_hosts();
	return check_finish("test_an_cascade");
}
