// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* H2 inconsistent-op hangs: the differing field, both values, FR-style. */
#include "test_an_helpers.h"

#define TP 0x00000000abcdef01ull

static void warmup(struct sim *s, int n, int rounds)
{
	int i;

	(void)n;
	for (i = 0; i < rounds; i++) {
		sim_round(s, TP, CCLD_FN_ALLREDUCE, 1024, 7);
		sim_step(s, 10000000);
	}
}

struct mm {
	const char *field;
	int fn;
	uint64_t count;
	int dtype;
	int redop;
	int root;
	const char *maj, *min;
};

/* rank 2 of 4 calls something else at seq 6; everyone blocks inside */
static void test_field(const struct mm *m)
{
	struct sim s;
	const struct an_verdict *v;
	const struct an_value *val;
	int r;

	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 4, NULL);
	warmup(&s, 4, 6);
	for (r = 0; r < 4; r++) {
		struct sim_comm *c = sim_find(&s, TP);
		struct an_op op = sim_op(&s, c, r, CCLD_FN_ALLREDUCE, 1024, 7);

		if (r == 2) {
			op.fn = m->fn;
			op.count = m->count;
			op.dtype = (uint8_t)m->dtype;
			op.redop = (uint8_t)m->redop;
			op.root = m->root;
		}
		c->next[r]++;
		an_op_enter(s.an, &op);
	}
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H2);
	CHECK_INT(v->role, AN_ROOT);
	CHECK(v->comm == TP);
	CHECK_INT(v->seq, 6);
	CHECK_STR(sim_culprits(v), "2");
	check_latency(v, 5);
	val = sim_val(v, "field");
	CHECK(val && val->is_str && !strcmp(val->s, m->field));
	val = sim_val(v, "majority");
	CHECK(val && !strcmp(val->is_str ? val->s : "", m->maj));
	val = sim_val(v, "minority");
	CHECK(val && !strcmp(val->is_str ? val->s : "", m->min));
	CHECK(strstr(v->text, m->field) != NULL);
	CHECK(strstr(v->text, "never returned") != NULL);
	sim_fini(&s);
}

/* 2 ranks, no majority: the signature never seen before is the odd one */
static void test_tie(void)
{
	struct sim s;
	const struct an_verdict *v;
	struct sim_comm *c;
	struct an_op op;

	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 2, NULL);
	warmup(&s, 2, 4);
	c = sim_find(&s, TP);
	op = sim_op(&s, c, 0, CCLD_FN_ALLREDUCE, 2048, 7);
	c->next[0]++;
	an_op_enter(s.an, &op);
	op = sim_op(&s, c, 1, CCLD_FN_ALLREDUCE, 1024, 7);
	c->next[1]++;
	an_op_enter(s.an, &op);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H2);
	CHECK_STR(sim_culprits(v), "0");
	sim_fini(&s);
}

/*
 * The odd rank's smaller all-reduce "completes" and it moves on to seq 7;
 * the others stay in seq 6 (tier B says so): H2 at 6, not H1 at 7.
 */
static void test_minority_ahead(void)
{
	struct sim s;
	const struct an_verdict *v;
	struct sim_comm *c;
	struct an_op op;
	int r;

	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 4, NULL);
	warmup(&s, 4, 6);
	c = sim_find(&s, TP);
	for (r = 0; r < 4; r++) {
		op = sim_call(&s, TP, r, CCLD_FN_ALLREDUCE, r == 3 ? 512 : 1024, 7);
		if (r == 3)
			sim_complete(&s, &op);
	}
	sim_call(&s, TP, 3, CCLD_FN_ALLREDUCE, 1024, 7);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H2);
	CHECK_INT(v->seq, 6);
	CHECK_STR(sim_culprits(v), "3");
	CHECK(c->n == 4);
	sim_fini(&s);
}

/*
 * A DP comm's step: a broadcast (DDP's buffers), a reduce-scatter, an
 * all-gather.  Rank 3 leaves the broadcast out and calls the reduce-scatter
 * in its round: H1 naming it, not an H2 of two op types (random job 1340).
 * The same with no broadcast before (nothing says what follows what): the
 * H2 stays.  And in a 2-rank comm, one against one, the order alone says
 * which of the two left an op out (job 1340's DP comm: the seen counts
 * took the reduce-scatter for the norm and named the other rank).
 */
static void test_skipped_op(bool history, int n, int odd)
{
	char want[256], cul[8];
	struct sim s;
	const struct an_verdict *v;
	int i, r;

	sim_init(&s, 5, 300);
	sim_comm(&s, TP, n, NULL);
	for (i = 0; i < 3; i++) {
		if (history)
			sim_round(&s, TP, CCLD_FN_BROADCAST, 16, 7);
		sim_round(&s, TP, CCLD_FN_REDUCESCATTER, 1024, 7);
		sim_round(&s, TP, CCLD_FN_ALLGATHER, 256, 7);
		sim_step(&s, 10000000);
	}
	for (r = 0; r < n; r++)
		sim_call(&s, TP, r, r == odd ? CCLD_FN_REDUCESCATTER : CCLD_FN_BROADCAST,
			 r == odd ? 1024 : 16, 7);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	snprintf(cul, sizeof(cul), "%d", odd);
	CHECK_STR(sim_culprits(v), cul);
	CHECK_INT(v->seq, history ? 9 : 6);
	if (history) {
		CHECK_INT(v->cls, AN_H1);
		snprintf(want, sizeof(want), "rank %d never called Broadcast seq 9 of comm "
			 "00000000abcdef01: its call there is ReduceScatter, the op that comes"
			 " after Broadcast in this comm's order, so it left the Broadcast out;"
			 " %d rank%s in it", odd, n - 1, n - 1 > 1 ? "s wait" : " waits");
		CHECK(strstr(v->text, want) != NULL);
		CHECK(sim_val(v, "skipped") && !strcmp(sim_val(v, "skipped")->s, "Broadcast"));
	} else {
		CHECK_INT(v->cls, AN_H2);
	}
	sim_fini(&s);
}

int main(void)
{
	static const struct mm cases[] = {
		{ "count", CCLD_FN_ALLREDUCE, 1000, 7, 0, -1, "1024", "1000" },
		{ "type", CCLD_FN_ALLGATHER, 1024, 7, 0xff, -1,
		  "AllReduce", "AllGather" },
		{ "dtype", CCLD_FN_ALLREDUCE, 1024, 9, 0, -1,
		  "float32", "bfloat16" },
		{ "redop", CCLD_FN_ALLREDUCE, 1024, 7, 2, -1, "sum", "max" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		test_field(&cases[i]);
	test_tie();
	test_minority_ahead();
	test_skipped_op(true, 4, 3);
	test_skipped_op(false, 4, 3);
	test_skipped_op(true, 2, 0);
	return check_finish("test_an_h2");
}
