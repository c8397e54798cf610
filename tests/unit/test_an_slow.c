// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Slow verdicts from the analyzer's own inputs: per-rank durations from
 * call entry to GPU completion (tier B), aligned by (comm, seq), through the
 * CCL-D detector.  4 ranks, one all-reduce per iteration, 10 ms rounds.
 */
#include <math.h>
#include "test_an_helpers.h"
#include "splitmix.h"

#define W 0x00000000000000a1ull
#define MS 1000000ull

/*
 * One round: rank r enters at t0 + late[r] and every GPU completes it at
 * t0 + max(late) + 10 ms (an all-reduce ends when the last rank arrived).
 */
static void round_comm(struct sim *s, uint64_t hash, uint64_t t0, const uint64_t *late,
		       uint64_t busy)
{
	struct sim_comm *c = sim_find(s, hash);
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
		an_op_complete(s->an, &ops[r], t0 + last + busy);
	s->now[0] = t0 + last + busy + 2 * MS;
}

static void round_busy(struct sim *s, uint64_t t0, const uint64_t *late, uint64_t busy)
{
	round_comm(s, W, t0, late, busy);
}

static void round_at(struct sim *s, uint64_t t0, const uint64_t *late)
{
	round_busy(s, t0, late, 10 * MS);
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

/*
 * The defaults: a slowdown must last 3 iterations and 2 s.  Rounds about
 * 13 ms apart, rank 2 late by 30 ms: a spell of 40 rounds (1.7 s) gives
 * nothing; a lasting one the verdict once 2 s passed since its first slow
 * round, with the time it cost so far.
 */
static void test_min_duration(void)
{
	uint64_t rng = 5;
	struct sim s;
	const struct an_verdict *v;
	int i;

	sim_init(&s, 30, 300);
	an_free(s.an);
	s.cfg.slow_min_s = 2;
	s.an = an_new(&s.cfg, &(struct an_sink){ &s, sim_verdict_cb, sim_suspect_cb });
	s.host_id[0] = (uint32_t)an_host(s.an, "h0");
	sim_comm(&s, W, 4, NULL);
	rounds(&s, &rng, 110, -1, 0);
	rounds(&s, &rng, 40, 2, 30 * MS);
	rounds(&s, &rng, 20, -1, 0);
	CHECK_INT(s.nv, 0);
	for (i = 0; i < 100 && !s.nv; i++)
		rounds(&s, &rng, 1, 2, 30 * MS);
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S1), 1);
	/* 2 s of 43 ms rounds: the 47th slow one */
	CHECK(i >= 45 && i <= 49);
	v = s.nv ? &s.v[0] : NULL;
	if (v) {
		CHECK_STR(sim_culprits(v), "2");
		/* each round ~30 ms over the ~13 ms baseline */
		CHECK(sim_val(v, "lost_s") && sim_val(v, "lost_s")->f > 1.2 &&
		      sim_val(v, "lost_s")->f < 1.6);
		CHECK(strstr(v->text, "s lost so far") != NULL);
	}
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

/*
 * Tier C of one round: each rank's send sub is seen at op level (start and
 * stop); with STEPS, its 8 send steps too, each LAT[r] ns in the network.
 */
static void proxy_round(struct sim *s, uint64_t op, const uint64_t *lat, bool steps)
{
	struct sim_comm *c = sim_find(s, W);
	int r, k;

	for (r = 0; r < 4; r++) {
		struct an_key key = sim_key(s, c, r);
		struct an_progress p = { .seq = -1, .channel = 0, .peer = (r + 1) % 4,
					 .dir = AN_SEND, .nsteps = 8, .op = op,
					 .nbytes = 8 << 20 };
		uint64_t t = s->now[0];

		an_progress(s->an, &key, &p, t);
		for (k = 1; steps && k <= 8; k++) {
			p.step = true;
			p.posted = p.transmitted = (uint64_t)k;
			p.done = (uint64_t)k - 1;
			an_progress(s->an, &key, &p, t);
			t += lat[r];
			p.done = (uint64_t)k;
			an_progress(s->an, &key, &p, t);
		}
		p.step = false;
		p.posted = p.transmitted = p.done = 8;
		an_progress(s->an, &key, &p, t);
	}
}

/*
 * N iterations of one proxy_round (with STEPS: step records too) and one
 * round in which rank SLOW (-1 none) arrives EXTRA ns late
 */
static void proxy_rounds(struct sim *s, uint64_t *rng, uint64_t *op, int n,
			 const uint64_t *lat, bool steps, int slow, uint64_t extra)
{
	while (n--) {
		proxy_round(s, (*op)++, lat, steps);
		rounds(s, rng, 1, slow, extra);
	}
}

/*
 * Rank 1's link is 4x slower: every rank's round takes 30 ms longer (all
 * arrive together, P small: S2).  The verdict waits for a step sample,
 * which names rank 1: 4 ms per step in the network against 1 ms.
 */
static void test_s2_step_sample(void)
{
	const uint64_t fast[4] = { MS, MS, MS, MS }, slow[4] = { MS, 4 * MS, MS, MS };
	const uint64_t zero[4] = { 0, 0, 0, 0 };
	const struct an_verdict *v = NULL;
	uint64_t rng = 5, op = 1;
	struct sim s;
	int i;

	sim_init(&s, 30, 300);
	sim_comm(&s, W, 4, NULL);
	proxy_rounds(&s, &rng, &op, 110, fast, false, -1, 0);
	CHECK_INT(s.nv, 0);
	/* network slow: the rounds end 30 ms later on every rank */
	for (i = 0; i < 3; i++) {
		proxy_round(&s, op++, slow, false);
		round_busy(&s, s.now[0] + MS, zero, 40 * MS);
	}
	/* detected, but the verdict waits for the sample */
	CHECK_INT(s.nv, 0);
	CHECK_INT(s.nsuspect_on, 1);
	for (i = 0; i < 5; i++)
		proxy_round(&s, op++, slow, true);
	sim_tick(&s, 0.75);
	CHECK_INT(s.nsuspect_off, 1);
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S2), 1);
	for (i = 0; i < s.nv; i++)
		if (s.v[i].kind == AN_V_NEW)
			v = &s.v[i];
	CHECK(v != NULL);
	if (v) {
		CHECK_STR(sim_culprits(v), "1");
		CHECK(strstr(v->text, "ms per step in the network") != NULL);
		CHECK(sim_val(v, "s2_step_ms") && fabs(sim_val(v, "s2_step_ms")->f - 4) < 0.01);
		CHECK(sim_val(v, "p") && sim_val(v, "p")->f < 0.4);
	}
	sim_fini(&s);
}

/* the same, but no step record ever comes: after 5 s, a verdict without a rate */
static void test_s2_no_steps(void)
{
	const uint64_t fast[4] = { MS, MS, MS, MS }, zero[4] = { 0, 0, 0, 0 };
	uint64_t rng = 5, op = 1;
	struct sim s;
	int i;

	sim_init(&s, 30, 300);
	sim_comm(&s, W, 4, NULL);
	proxy_rounds(&s, &rng, &op, 110, fast, false, -1, 0);
	for (i = 0; i < 3; i++) {
		proxy_round(&s, op++, fast, false);
		round_busy(&s, s.now[0] + MS, zero, 40 * MS);
	}
	CHECK_INT(s.nsuspect_on, 1);
	sim_tick(&s, 4.5);
	CHECK_INT(s.nv, 0);
	sim_tick(&s, 1);
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S2), 1);
	CHECK(s.nv == 1 && strstr(s.v[0].text, "no rank's send rate is known") != NULL);
	sim_fini(&s);
}

/*
 * Four comms of one shape (4 ranks, the same all-reduce); rank 2 of the
 * first is late: its verdict says it is slower than its comparable group,
 * and the evidence gives the group's size and median.
 */
static void test_comparable_group(void)
{
	const uint64_t comms[4] = { W, W + 1, W + 2, W + 3 };
	const struct an_verdict *v = NULL;
	uint64_t rng = 11, late[4];
	struct sim s;
	int i, j, r;

	sim_init(&s, 30, 300);
	for (j = 0; j < 4; j++)
		sim_comm(&s, comms[j], 4, NULL);
	for (i = 0; i < 113; i++)
		for (j = 0; j < 4; j++) {
			for (r = 0; r < 4; r++)
				late[r] = (uint64_t)(u01(&rng) * (double)(MS / 2));
			if (j == 0 && i >= 110)
				late[2] += 30 * MS;
			round_comm(&s, comms[j], s.now[0] + MS, late, 10 * MS);
		}
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S1), 1);
	for (i = 0; i < s.nv; i++)
		if (s.v[i].kind == AN_V_NEW)
			v = &s.v[i];
	CHECK(v != NULL);
	if (v) {
		CHECK(v->comm == W);
		CHECK(sim_val(v, "group_size") && sim_val(v, "group_size")->i == 4);
		CHECK(sim_val(v, "group_deviant") && sim_val(v, "group_deviant")->i == 1);
		CHECK(strstr(v->text, "slower than its 4 comparable comms") != NULL);
	}
	sim_fini(&s);
}

/* N retransmits on pid FROM's connection to pid TO, now */
static void retransmits(struct sim *s, uint32_t from, uint32_t to, int n)
{
	while (n--)
		an_tcp_event(s->an, s->host_id[0], from, to, AN_TCP_RETRANSMIT, 0, 0, "", s->now[0]);
}

static const struct an_verdict *first_new(const struct sim *s)
{
	int i;

	for (i = 0; i < s->nv; i++)
		if (s->v[i].kind == AN_V_NEW)
			return &s->v[i];
	return NULL;
}

/*
 * Rank 2 arrives last (S1 by the timings) while rank 3's link retransmits
 * in both directions (rank 3 -> 0 and 1 -> 3): with enough retransmits the
 * slowdown is the network's, and its culprit is rank 3, the end common to
 * every retransmitting connection; with a few, S1 and rank 2 stand.
 */
static void test_tcp_link(void)
{
	const struct an_verdict *v;
	uint64_t rng = 42;
	struct sim s;

	sim_init(&s, 30, 300);
	sim_comm(&s, W, 4, NULL);
	rounds(&s, &rng, 110, -1, 0);
	retransmits(&s, 103, 100, 14);
	retransmits(&s, 101, 103, 9);
	rounds(&s, &rng, 4, 2, 30 * MS);
	v = first_new(&s);
	CHECK(v != NULL);
	if (v) {
		CHECK_INT(v->cls, AN_S2);
		CHECK_STR(sim_culprits(v), "3");
		CHECK(sim_val(v, "tcp_rank") && sim_val(v, "tcp_rank")->i == 3);
		CHECK(sim_val(v, "tcp_retransmits") && sim_val(v, "tcp_retransmits")->i == 23);
		CHECK(strstr(v->text, "rank 3 is at one end of each of the 2 connections with"
			     " TCP retransmits (23): its link") != NULL);
		CHECK(strstr(v->text, "network, not computation") != NULL);
		CHECK(strstr(v->text, "(r3->r0 14, r1->r3 9)") != NULL);
	}
	sim_fini(&s);

	rng = 42;
	sim_init(&s, 30, 300);
	sim_comm(&s, W, 4, NULL);
	rounds(&s, &rng, 110, -1, 0);
	retransmits(&s, 103, 100, 3);
	retransmits(&s, 101, 103, 2);
	rounds(&s, &rng, 4, 2, 30 * MS);
	v = first_new(&s);
	CHECK(v != NULL);
	if (v) {
		CHECK_INT(v->cls, AN_S1);
		CHECK_STR(sim_culprits(v), "2");
		CHECK(strstr(v->text, "network, not computation") == NULL);
	}
	sim_fini(&s);
}

/*
 * The fleet analyzer cannot turn step hooks on: its own sample request (an
 * S1 onset on a comm with tier C asks for one) perturbs nothing, so the
 * rounds after it are judged and the recovery comes in time.
 */
static void test_fleet_sample_no_hooks(void)
{
	const uint64_t lat[4] = { MS, MS, MS, MS };
	uint64_t rng = 42, op = 1;
	struct sim s;

	sim_init_sink(&s, 30, 300, 1, 1 << 30, false);
	sim_comm(&s, W, 4, NULL);
	proxy_rounds(&s, &rng, &op, 110, lat, false, -1, 0);
	proxy_rounds(&s, &rng, &op, 10, lat, false, 2, 30 * MS);
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S1), 1);
	proxy_rounds(&s, &rng, &op, 4, lat, false, -1, 0);
	CHECK_INT(count_kind(&s, AN_V_RECOVERED, AN_S1), 1);
	sim_fini(&s);
}

/*
 * Step records say that step hooks were on in the process (an agent's own
 * sample): the fleet analyzer does not judge that host's rounds then, nor
 * for a second after the last one, as a tracer does with its own hooks.
 */
static void test_fleet_step_records_perturb(void)
{
	const uint64_t lat[4] = { MS, MS, MS, MS };
	uint64_t rng = 42, op = 1;
	struct sim s;

	sim_init_sink(&s, 30, 300, 1, 1 << 30, false);
	sim_comm(&s, W, 4, NULL);
	proxy_rounds(&s, &rng, &op, 110, lat, false, -1, 0);
	proxy_rounds(&s, &rng, &op, 6, lat, true, 2, 30 * MS);
	CHECK_INT(s.nv, 0);
	/* ~42 ms rounds: 1 s after the last step record, judged again */
	proxy_rounds(&s, &rng, &op, 20, lat, false, 2, 30 * MS);
	CHECK_INT(s.nv, 0);
	proxy_rounds(&s, &rng, &op, 10, lat, false, 2, 30 * MS);
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S1), 1);
	sim_fini(&s);
}

int main(void)
{
	test_fleet_sample_no_hooks();
	test_fleet_step_records_perturb();
	test_tcp_link();
	test_comparable_group();
	test_s1_onset_recovery();
	test_s2_step_sample();
	test_s2_no_steps();
	test_transient();
	test_min_duration();
	test_jitter_nofp();
	return check_finish("test_an_slow");
}
