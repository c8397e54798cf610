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
	return check_finish("test_an_h2");
}
