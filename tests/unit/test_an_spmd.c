// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A skipped op, told by counts (an_locate_spmd.c): world W of 4 ranks, DP
 * pairs P0 = {0,1} and P1 = {2,3}; each iteration a pair all-reduce, then
 * a world all-reduce, queued without waiting (the CPU runs on, the GPU
 * executes in order).  From random jobs 5, 30 (a rank skips its pair op)
 * and 19 (a rank skips the world op), docs/simjob.md.
 */
#include "test_an_helpers.h"

#define W  0x00000000000000f1ull
#define P0 0x00000000000000e1ull
#define P1 0x00000000000000e2ull

/* W and its two pairs, no round yet */
static void comms(struct sim *s)
{
	static const int p0[2] = { 0, 1 }, p1[2] = { 2, 3 };

	sim_init(s, 5, 300);
	sim_comm(s, W, 4, NULL);
	sim_comm(s, P0, 2, p0);
	sim_comm(s, P1, 2, p1);
}

static void job(struct sim *s)
{
	int i;

	comms(s);
	for (i = 0; i < 3; i++) {
		sim_round(s, P0, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_round(s, P1, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_step(s, 1000000);
		sim_round(s, W, CCLD_FN_ALLREDUCE, 2, 7);
		sim_step(s, 10000000);
	}
}

static const struct an_verdict *first_root(const struct sim *s)
{
	int i;

	for (i = 0; i < s->nv; i++)
		if (s->v[i].kind == AN_V_NEW && s->v[i].role == AN_ROOT)
			return &s->v[i];
	return NULL;
}

/* the culprit's global rank (pid 100 + g in the helpers) */
static int culprit_g(const struct an_verdict *v)
{
	return v && v->ncul == 1 ? (int)v->cul[0].pid - 100 : -1;
}

/*
 * After the stall: the first root an H1 naming global rank G, the one that
 * ran ahead on a comm (it skipped one of the outer comm's ops); S freed
 */
static void check_ran_ahead(struct sim *s, int g)
{
	const struct an_verdict *v;

	sim_tick(s, 6);
	v = first_root(s);
	CHECK(v != NULL);
	if (v) {
		CHECK_INT(v->cls, AN_H1);
		CHECK_INT(culprit_g(v), g);
		CHECK(strstr(v->text, "ran ahead") != NULL);
	}
	sim_fini(s);
}

/*
 * Rank 1 skips its pair all-reduce of iteration 3 and enters the world's;
 * rank 0's GPU waits in the pair op, so the world's op never runs.  Rank 1
 * entered P0's ops up to seq 2 before W's round 3, rank 0 and P1's ranks
 * up to seq 3: rank 1 skipped P0's seq 3.
 */
/* iteration 3 as rank 1 skipping its P0 op shows it (LOST_BEFORE_W: its process lost records) */
static void pair_op_missing(struct sim *s, bool lost_before_w)
{
	int r;

	sim_call(s, P0, 0, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	for (r = 0; r < 2; r++) {
		struct an_op op = sim_call(s, P1, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);

		sim_complete(s, &op);
	}
	if (lost_before_w)
		an_records_lost(s->an, s->host_id[0], 101, 2, s->now[0]);
	sim_step(s, 1000000);
	for (r = 0; r < 4; r++)
		sim_call(s, W, r, CCLD_FN_ALLREDUCE, 2, 7);
}

static void test_skipped_pair_op(void)
{
	const struct an_verdict *v;
	struct sim s;

	job(&s);
	pair_op_missing(&s, false);
	sim_tick(&s, 6);
	v = first_root(&s);
	CHECK(v != NULL);
	if (v) {
		CHECK_INT(v->cls, AN_H1);
		CHECK_INT(culprit_g(v), 1);
		CHECK(v->comm == P0);
		CHECK_INT(v->seq, 3);
		CHECK(strstr(v->text, "skipped seq 3") != NULL);
	}
	sim_fini(&s);
}

/*
 * Rank 0 skips the world all-reduce of iteration 3 and runs on into
 * iteration 4: its pair op (seq 4), then its next world op, which pairs
 * with the others' round 3.  Rank 0 entered P0's ops up to seq 4 before
 * W's round 3, everyone else up to seq 3: rank 0 ran ahead (it skipped one
 * of W's), not rank 1 (which never entered P0's seq 4).
 */
static void test_ran_ahead(void)
{
	struct sim s;
	int r, c;

	job(&s);
	for (c = 0; c < 2; c++)
		for (r = 0; r < 2; r++) {
			struct an_op op = sim_call(&s, c ? P1 : P0, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);

			sim_complete(&s, &op);
		}
	sim_step(&s, 1000000);
	for (r = 1; r < 4; r++)
		sim_call(&s, W, r, CCLD_FN_ALLREDUCE, 2, 7);
	sim_step(&s, 1000000);
	sim_call(&s, P0, 0, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_step(&s, 1000000);
	sim_call(&s, W, 0, CCLD_FN_ALLREDUCE, 2, 7);
	check_ran_ahead(&s, 0);
}

/*
 * Two roles of pair comms in one job (TP pairs T0 = {0,1}, T1 = {2,3}
 * with two all-reduces a step; DP pairs D0 = {0,2}, D1 = {1,3} with one
 * broadcast a step), and a world all-reduce ending each step.  Rank 3
 * skips the world op of step 4 and runs into step 5: D1's broadcast, T1's
 * two ops, then its next world op, which pairs with the others' round 4.
 * The DP pairs' counts (one op a step) are not the TP pairs' (two): only
 * the comms of C's role (T0 for T1) give the count T1's ranks should
 * have.  From random job 1126 (docs/simjob.md): it named the other rank
 * of a pair, each of the comms of C's size having its own count.
 */
#define T0 0x00000000000000c1ull
#define T1 0x00000000000000c2ull
#define D0 0x00000000000000d1ull
#define D1 0x00000000000000d2ull

/* one step; SKIP_WORLD: that rank leaves the world op out, which then never completes */
static void two_roles_step(struct sim *s, int skip_world)
{
	static const uint64_t tp[2] = { T0, T1 }, dp[2] = { D0, D1 };
	int c, r, n;

	for (c = 0; c < 2; c++)
		for (r = 0; r < 2; r++) {
			struct an_op op = sim_call(s, dp[c], r, CCLD_FN_BROADCAST, 16, 7);

			sim_complete(s, &op);
		}
	for (n = 0; n < 2; n++)
		for (c = 0; c < 2; c++)
			for (r = 0; r < 2; r++) {
				struct an_op op = sim_call(s, tp[c], r, CCLD_FN_ALLREDUCE, 1 << 20, 7);

				sim_complete(s, &op);
			}
	sim_step(s, 1000000);
	for (r = 0; r < 4; r++) {
		struct an_op op;

		if (r == skip_world)
			continue;
		op = sim_call(s, W, r, CCLD_FN_ALLREDUCE, 2, 7);
		if (skip_world < 0)
			sim_complete(s, &op);
	}
}

static void test_ran_ahead_two_roles(void)
{
	static const int t0[2] = { 0, 1 }, t1[2] = { 2, 3 }, d0[2] = { 0, 2 }, d1[2] = { 1, 3 };
	struct sim s;
	int i;

	sim_init(&s, 5, 300);
	sim_comm(&s, W, 4, NULL);
	sim_comm(&s, T0, 2, t0);
	sim_comm(&s, T1, 2, t1);
	sim_comm(&s, D0, 2, d0);
	sim_comm(&s, D1, 2, d1);
	for (i = 0; i < 3; i++) {
		two_roles_step(&s, -1);
		sim_step(&s, 10000000);
	}
	/* step 4: rank 3 skips the world op; the others' GPUs wait in it */
	two_roles_step(&s, 3);
	sim_step(&s, 1000000);
	/* step 5 as rank 3 alone makes it (its peers' CPUs wait for their GPUs) */
	sim_call(&s, D1, 1, CCLD_FN_BROADCAST, 16, 7);
	for (i = 0; i < 2; i++)
		sim_call(&s, T1, 1, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_step(&s, 1000000);
	sim_call(&s, W, 3, CCLD_FN_ALLREDUCE, 2, 7);
	check_ran_ahead(&s, 3);
}

/*
 * A DP comm over every rank beside the world (4 ranks, TP 1, DP 4): two
 * comms of one size holding the same processes.  Each step a DP broadcast
 * and all-reduce, then the world's loss all-reduce; rank 1 skips the loss
 * of step 4 and runs into step 5's DP ops.  Random job 1183: the DP
 * comm's H1 named the three ranks that wait in the world op (no bigger
 * comm to count against).
 */
#define DPW 0x00000000000000a4ull

static void test_ran_ahead_same_ranks(void)
{
	struct sim s;
	int i, r;

	sim_init(&s, 5, 300);
	sim_comm(&s, W, 4, NULL);
	sim_comm(&s, DPW, 4, NULL);
	for (i = 0; i < 4; i++) {
		sim_round(&s, DPW, CCLD_FN_BROADCAST, 16, 7);
		sim_round(&s, DPW, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_step(&s, 1000000);
		if (i < 3) {
			sim_round(&s, W, CCLD_FN_ALLREDUCE, 2, 7);
		} else {
			for (r = 0; r < 4; r++)
				if (r != 1)
					sim_call(&s, W, r, CCLD_FN_ALLREDUCE, 2, 7);
		}
		sim_step(&s, 10000000);
	}
	/*
	 * step 5 as rank 1 makes it, its CPU ahead of its GPU: its broadcast
	 * waits for the others, its next loss all-reduce pairs with their
	 * round 4 of the world
	 */
	sim_call(&s, DPW, 1, CCLD_FN_BROADCAST, 16, 7);
	sim_call(&s, DPW, 1, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_step(&s, 1000000);
	sim_call(&s, W, 1, CCLD_FN_ALLREDUCE, 2, 7);
	check_ran_ahead(&s, 1);
}

/* everyone calls in one order and rank 3 stops in CPU code: no count differs */
static void test_plain_hang_unchanged(void)
{
	const struct an_verdict *v;
	struct sim s;
	int r;

	job(&s);
	for (r = 0; r < 2; r++) {
		struct an_op op = sim_call(&s, P0, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);

		sim_complete(&s, &op);
	}
	sim_call(&s, P1, 0, CCLD_FN_ALLREDUCE, 1 << 20, 7);	/* global rank 2 */
	sim_step(&s, 1000000);
	for (r = 0; r < 3; r++)
		sim_call(&s, W, r, CCLD_FN_ALLREDUCE, 2, 7);
	sim_tick(&s, 6);
	v = first_root(&s);
	CHECK(v != NULL);
	if (v) {
		CHECK_INT(v->cls, AN_H1);
		CHECK_INT(culprit_g(v), 3);
		CHECK(strstr(v->text, "skipped") == NULL && strstr(v->text, "ran ahead") == NULL);
	}
	sim_fini(&s);
}

/*
 * The same records as test_skipped_pair_op, but rank 1's process reported
 * lost records (a full ring): its entry into P0's seq 3 may be among them,
 * and a look at its memory then shows it launched seq 3, when is not known:
 * its count before W's round says nothing.  No "skipped" verdict naming it
 * (test_overload, once in CI: an H1 "skipped seq 598" on a rank whose
 * entries were lost).
 */
static void test_lost_entry_not_a_skip(void)
{
	const struct an_verdict *v;
	struct sim s;

	job(&s);
	pair_op_missing(&s, true);
	/* a look at its memory: it launched P0's seq 3 (when is not known) */
	sim_step(&s, 2000000000ull);
	sim_launched(&s, P0, 1, 4);
	sim_tick(&s, 6);
	v = first_root(&s);
	if (v) {
		CHECK(strstr(v->text, "skipped") == NULL);
		CHECK_INT(culprit_g(v) == 1, 0);
	}
	sim_fini(&s);
}

/*
 * A pipeline on W: each iteration ranks 0 and 1 send to 2 and 3 (forward)
 * and receive from them (backward) (pp_pipeline), then the pair
 * all-reduces, then W's (pp_step).
 */
static void pp_pipeline(struct sim *s, int skip_send_of)
{
	struct an_op op;
	int r;

	/* the pair of ranks R and R + 2 completes unless R skipped its send */
	for (r = 0; r < 2; r++) {
		bool done = r != skip_send_of;

		if (done) {
			op = sim_p2p(s, W, r, r + 2, 0, 4096, true);
			sim_complete(s, &op);
		}
		op = sim_p2p(s, W, r + 2, r, 1, 4096, true);
		if (done)
			sim_complete(s, &op);
		op = sim_p2p(s, W, r + 2, r, 0, 4096, true);
		if (done)
			sim_complete(s, &op);
		op = sim_p2p(s, W, r, r + 2, 1, 4096, true);
		if (done)
			sim_complete(s, &op);
	}
}

static void pp_step(struct sim *s, int skip_send_of)
{
	int r;

	pp_pipeline(s, skip_send_of);
	if (skip_send_of < 0) {
		sim_round(s, P0, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_round(s, P1, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_step(s, 1000000);
		sim_round(s, W, CCLD_FN_ALLREDUCE, 2, 7);
		return;
	}
	/* every pair op waits for a GPU stuck in the pipeline ops */
	for (r = 0; r < 2; r++) {
		sim_call(s, P0, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_call(s, P1, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	}
	sim_step(s, 1000000);
	for (r = 0; r < 4; r++)
		sim_call(s, W, r, CCLD_FN_ALLREDUCE, 2, 7);
}

/*
 * Rank 1 leaves its forward send to rank 3 out of iteration 4 and runs on:
 * its backward receive from rank 3, its pair op, W's all-reduce.  Rank 3's
 * receive from it waits for good; every GPU of both pairs is stuck behind
 * the pipeline ops, every rank entered W's round.  Rank 3 entered that
 * receive before W's round, which rank 1 entered too: rank 1 went past its
 * send, it skipped it; the pairs' stalls are its cascades, not roots of
 * their own (random job 424: H3 roots on three pair comms "no progress
 * data tells which one", and the skip a cascade of one of them).
 */
static void test_skipped_pipeline_send(void)
{
	const struct an_verdict *v;
	struct sim s;
	int i, roots = 0;

	comms(&s);
	for (i = 0; i < 3; i++) {
		pp_step(&s, -1);
		sim_step(&s, 10000000);
	}
	pp_step(&s, 1);
	sim_tick(&s, 6);
	v = first_root(&s);
	CHECK(v != NULL);
	if (v) {
		CHECK_INT(v->cls, AN_H1);
		CHECK_INT(culprit_g(v), 1);
		CHECK(v->comm == W);
		CHECK(v->p2p);
		CHECK(strstr(v->text, "skipped it") != NULL);
	}
	for (i = 0; i < s.nv; i++)
		roots += s.v[i].kind == AN_V_NEW && s.v[i].role == AN_ROOT;
	CHECK_INT(roots, 1);
	sim_fini(&s);
}

/*
 * Rank 2 leaves W's all-reduce of iteration 4 out and runs on into
 * iteration 5: its pair op (its GPU waits there for rank 3, which waits in
 * W's round), its backward send to rank 0 (never received: rank 0 waits in
 * W's round too), then its next W op, which pairs with the others' round
 * 3.  Rank 2's send waits unmatched, entered before the W round 3 that
 * rank 0 entered too, so read by rank 2's rounds, rank 0 "went past its
 * receive"; but the counts show rank 2 entered P1's ops up to seq 4 before
 * that round, rank 3 up to 3: rank 2 ran ahead, skipped an op of W, and
 * its round 3 is the others' next.  One root, the count's,
 * naming rank 2; W's p2p H1 its cascade (random job 577: the p2p H1 naming
 * the peer came first, a second root).
 */
static void test_ran_ahead_past_p2p(void)
{
	const struct an_verdict *v;
	struct sim s;
	int i, r, roots = 0;

	comms(&s);
	for (i = 0; i < 3; i++) {
		pp_step(&s, -1);
		sim_step(&s, 10000000);
	}
	/* iteration 4: the pipeline and the pairs complete, W's op without rank 2 */
	pp_pipeline(&s, -1);
	sim_round(&s, P0, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_round(&s, P1, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_step(&s, 1000000);
	for (r = 0; r < 4; r++)
		if (r != 2)
			sim_call(&s, W, r, CCLD_FN_ALLREDUCE, 2, 7);
	sim_step(&s, 1000000);
	/* rank 2's iteration 5: its pair op, its send to rank 0, W's op */
	sim_call(&s, P1, 0, CCLD_FN_ALLREDUCE, 1 << 20, 7);	/* global rank 2 */
	sim_p2p(&s, W, 2, 0, 0, 4096, true);
	sim_step(&s, 1000000);
	sim_call(&s, W, 2, CCLD_FN_ALLREDUCE, 2, 7);
	sim_tick(&s, 6);
	v = first_root(&s);
	CHECK(v != NULL);
	if (v) {
		CHECK_INT(v->cls, AN_H1);
		CHECK_INT(culprit_g(v), 2);
		CHECK(v->comm == P1);
		CHECK(strstr(v->text, "ran ahead") != NULL);
	}
	for (i = 0; i < s.nv; i++) {
		roots += s.v[i].kind == AN_V_NEW && s.v[i].role == AN_ROOT;
		if (s.v[i].kind == AN_V_NEW && s.v[i].comm == W)
			CHECK_INT(s.v[i].role, AN_CASCADE);
	}
	CHECK_INT(roots, 1);
	sim_fini(&s);
}

int main(void)
{
	test_skipped_pair_op();
	test_ran_ahead();
	test_ran_ahead_two_roles();
	test_ran_ahead_same_ranks();
	test_plain_hang_unchanged();
	test_lost_entry_not_a_skip();
	test_skipped_pipeline_send();
	test_ran_ahead_past_p2p();
	return check_finish("test_an_spmd");
}
