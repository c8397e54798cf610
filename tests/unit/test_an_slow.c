// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Slow verdicts from the analyzer's own inputs: per-rank durations from
 * call entry to GPU completion (tier B), aligned by (comm, seq), through the
 * CCL-D detector.  4 ranks, one all-reduce per iteration, 10 ms rounds.
 */
#include "test_an_helpers.h"
#include "splitmix.h"

#define W 0x00000000000000a1ull
#define MS 1000000ull

/*
 * One round: rank r enters at t0 + late[r] and every GPU completes it at
 * t0 + max(late) + 10 ms (an all-reduce ends when the last rank arrived).
 */
static void round_at(struct sim *s, uint64_t t0, const uint64_t *late)
{
	struct sim_comm *c = sim_find(s, W);
	struct an_op ops[4];
	uint64_t last = 0;
	int r;

	for (r = 0; r < 4; r++)
		if (late[r] > last)
			last = late[r];
	for (r = 0; r < 4; r++) {
		ops[r] = sim_op(s, c, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		ops[r].seq = c->next[r]++;
		ops[r].t_ns = t0 + late[r];
		an_op_enter(s->an, &ops[r]);
		an_op_return(s->an, &ops[r], 0, ops[r].t_ns + 20000);
	}
	for (r = 0; r < 4; r++)
		an_op_complete(s->an, &ops[r], t0 + last + 10 * MS);
	s->now[0] = t0 + last + 12 * MS;
}

/* N rounds; rank SLOW (-1 none) arrives EXTRA ns late; +-0.5 ms jitter */
static void rounds(struct sim *s, uint64_t *rng, int n, int slow, uint64_t extra)
{
	int i, r;

	for (i = 0; i < n; i++) {
		uint64_t late[4];

		for (r = 0; r < 4; r++)
			late[r] = (uint64_t)(u01(rng) * (double)(MS / 2));
		if (slow >= 0)
			late[slow] += extra;
		round_at(s, s->now[0] + MS, late);
	}
}

static int count_kind(const struct sim *s, enum an_vkind k, enum an_class cls)
{
	int i, n = 0;

	for (i = 0; i < s->nv; i++)
		n += s->v[i].kind == k && s->v[i].cls == cls;
	return n;
}

/* rank 2's compute phase makes it arrive 30 ms late for 10 rounds */
static void test_s1_onset_recovery(void)
{
	uint64_t rng = 42;
	struct sim s;
	const struct an_verdict *v;
	int i;

	sim_init(&s, 30, 300);
	sim_comm(&s, W, 4, NULL);
	rounds(&s, &rng, 110, -1, 0);
	CHECK_INT(s.nv, 0);
	rounds(&s, &rng, 3, 2, 30 * MS);
	/* the third slow iteration opens the incident */
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S1), 1);
	v = NULL;
	for (i = 0; i < s.nv; i++)
		if (s.v[i].kind == AN_V_NEW)
			v = &s.v[i];
	CHECK(v != NULL);
	if (v) {
		CHECK_INT(v->role, AN_ROOT);
		CHECK_STR(sim_culprits(v), "2");
		CHECK(v->comm == W);
		CHECK(strstr(v->text, "arrives last") != NULL);
		CHECK(sim_val(v, "tbase_ms") && sim_val(v, "p"));
		CHECK(sim_val(v, "p")->f > 0.6);
	}
	rounds(&s, &rng, 7, 2, 30 * MS);
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S1), 1);
	rounds(&s, &rng, 2, -1, 0);
	CHECK_INT(count_kind(&s, AN_V_RECOVERED, AN_S1), 0);
	rounds(&s, &rng, 3, -1, 0);
	/* 3 clean iterations close it, known at the next one's first round */
	CHECK_INT(count_kind(&s, AN_V_RECOVERED, AN_S1), 1);
	rounds(&s, &rng, 50, -1, 0);
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S1), 1);
	sim_fini(&s);
}

/* two slow iterations: the jitter filter gives nothing */
static void test_transient(void)
{
	uint64_t rng = 7;
	struct sim s;

	sim_init(&s, 30, 300);
	sim_comm(&s, W, 4, NULL);
	rounds(&s, &rng, 110, -1, 0);
	rounds(&s, &rng, 2, 1, 30 * MS);
	rounds(&s, &rng, 50, -1, 0);
	CHECK_INT(s.nv, 0);
	sim_fini(&s);
}

/* +-20% random arrival on every rank: no verdict */
static void test_jitter_nofp(void)
{
	uint64_t rng = 99;
	struct sim s;
	int i, r;

	sim_init(&s, 30, 300);
	sim_comm(&s, W, 4, NULL);
	for (i = 0; i < 3000; i++) {
		uint64_t late[4];

		for (r = 0; r < 4; r++)
			late[r] = (uint64_t)(u01(&rng) * 4.0 * (double)MS);
		round_at(&s, s.now[0] + MS, late);
	}
	CHECK_INT(s.nv, 0);
	sim_fini(&s);
}

int main(void)
{
	test_s1_onset_recovery();
	test_transient();
	test_jitter_nofp();
	return check_finish("test_an_slow");
}
