// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Slow verdicts from the analyzer's own inputs: per-rank durations from
 * call entry to GPU completion (tier B), aligned by (comm, seq), through the
 * CCL-D detector.  4 ranks, one all-reduce per iteration, 10 ms rounds.
 */
#include <math.h>
#include "test_an_helpers.h"
#include "splitmix.h"
#include "an_int.h"
#include "an_slow_int.h"

#define W 0x00000000000000a1ull
#define MS 1000000ull
#define GROUP_TEST_RATIO 1.5	/* GROUP_RATIO of an_slow_int.h */
#define GROUP_TEST_PAIR_RATIO 2.0	/* GROUP_PAIR_RATIO */

/* the ranks of comm HASH (4 at most) call: rank r at t0 + late[r] */
static void round_enter(struct sim *s, uint64_t hash, uint64_t t0, const uint64_t *late,
			struct an_op *ops)
{
	struct sim_comm *c = sim_find(s, hash);
	int r;

	for (r = 0; r < c->n; r++) {
		ops[r] = sim_op(s, c, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		ops[r].seq = c->next[r]++;
		ops[r].t_ns = t0 + late[r];
		an_op_enter(s->an, &ops[r]);
		an_op_return(s->an, &ops[r], 0, ops[r].t_ns + 20000);
	}
}

/*
 * ... and every GPU completes it BUSY after the last arrival; the record of
 * rank SKIP (-1 none) is left for the caller to deliver
 */
static void round_complete(struct sim *s, uint64_t hash, uint64_t t0, const uint64_t *late,
			   uint64_t busy, const struct an_op *ops, int skip)
{
	struct sim_comm *c = sim_find(s, hash);
	uint64_t last = 0;
	int r;

	for (r = 0; r < c->n; r++)
		if (late[r] > last)
			last = late[r];
	for (r = 0; r < c->n; r++)
		if (r != skip)
			an_op_complete(s->an, &ops[r], t0 + last + busy);
	s->now[0] = t0 + last + busy + 2 * MS;
}

/*
 * One round: rank r enters at t0 + late[r] and every GPU completes it at
 * t0 + max(late) + 10 ms (an all-reduce ends when the last rank arrived).
 */
static void round_comm(struct sim *s, uint64_t hash, uint64_t t0, const uint64_t *late,
		       uint64_t busy)
{
	struct an_op ops[8];

	round_enter(s, hash, t0, late, ops);
	round_complete(s, hash, t0, late, busy, ops, -1);
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
 * Tier C of one round of comm HASH: each rank's send sub is seen at op level
 * (start and stop); with STEPS, its 8 send steps too, each LAT[r] ns in the
 * network.
 */
static void proxy_round_hic(struct sim *s, uint64_t hash, uint64_t op, const uint64_t *lat,
			    bool steps, const uint64_t *hiccup);

static void proxy_round_of(struct sim *s, uint64_t hash, uint64_t op, const uint64_t *lat,
			   bool steps)
{
	proxy_round_hic(s, hash, op, lat, steps, NULL);
}

/*
 * Send steps pipelined: all 8 transmitted at once, the first done LAT[r]
 * later, the others in a burst right after it (10 us apart): each step's
 * own time is about LAT[r], and the first completion carries the wait of
 * all 8 (random jobs 16 and 25 over sockets)
 */
static bool pipelined_steps;

/* ... where rank r's 4th step takes HICCUP[r] ns longer (NULL: none) */
static void proxy_round_hic(struct sim *s, uint64_t hash, uint64_t op, const uint64_t *lat,
			    bool steps, const uint64_t *hiccup)
{
	struct sim_comm *c = sim_find(s, hash);
	int r, k;

	for (r = 0; r < c->n; r++) {
		struct an_key key = sim_key(s, c, r);
		struct an_progress p = { .seq = -1, .channel = 0, .peer = (r + 1) % c->n,
					 .dir = AN_SEND, .nsteps = 8, .op = op,
					 .nbytes = 8 << 20 };
		uint64_t t = s->now[0];

		an_progress(s->an, &key, &p, t);
		if (steps && pipelined_steps) {
			p.step = true;
			p.posted = p.transmitted = 8;
			an_progress(s->an, &key, &p, t);
			t += lat[r];
			for (k = 1; k <= 8; k++, t += 10000) {
				p.done = (uint64_t)k;
				an_progress(s->an, &key, &p, t);
			}
		}
		for (k = 1; steps && !pipelined_steps && k <= 8; k++) {
			p.step = true;
			p.posted = p.transmitted = (uint64_t)k;
			p.done = (uint64_t)k - 1;
			an_progress(s->an, &key, &p, t);
			t += lat[r] + (hiccup && k == 4 ? hiccup[r] : 0);
			p.done = (uint64_t)k;
			an_progress(s->an, &key, &p, t);
		}
		p.step = false;
		p.posted = p.transmitted = p.done = 8;
		an_progress(s->an, &key, &p, t);
	}
}

static void proxy_round(struct sim *s, uint64_t op, const uint64_t *lat, bool steps)
{
	proxy_round_of(s, W, op, lat, steps);
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
 * N rounds of W: tier C with each rank's send steps LAT[r] long (STEPS: with
 * step records), rank r calling LATE[r] after the first, every GPU done
 * BUSY after the last call
 */
static void proxy_busy_rounds(struct sim *s, uint64_t *op, int n, const uint64_t *lat,
			      bool steps, const uint64_t *late, uint64_t busy)
{
	while (n--) {
		proxy_round(s, (*op)++, lat, steps);
		round_busy(s, s->now[0] + MS, late, busy);
	}
}

/*
 * Rank 1's link is 4x slower: every rank's round takes 30 ms longer (all
 * arrive together, P small: S2).  The verdict waits for a step sample,
 * which names rank 1: 4 ms per step in the network against 1 ms.  With
 * PIPELINED steps its typical step (each step's own time) is 4 ms too,
 * where the time since the previous completion was 0.01 ms for 7 of 8.
 */
static void test_s2_step_sample(bool pipelined, bool shed)
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
	/* 100 step records shed before the sample, 500 more while it runs */
	an_steps_shed(s.an, s.host_id[0], 100, s.now[0]);
	/* network slow: the rounds end 30 ms later on every rank */
	proxy_busy_rounds(&s, &op, 3, slow, false, zero, 40 * MS);
	/* detected, but the verdict waits for the sample */
	CHECK_INT(s.nv, 0);
	CHECK_INT(s.nsuspect_on, 1);
	pipelined_steps = pipelined;
	for (i = 0; i < 5; i++) {
		proxy_round(&s, op++, slow, true);
		if (shed && i == 2)
			an_steps_shed(s.an, s.host_id[0], 600, s.now[0]);
	}
	pipelined_steps = false;
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
		/* pipelined: each step's 10 us in the burst after the first */
		CHECK(sim_val(v, "s2_step_ms") &&
		      fabs(sim_val(v, "s2_step_ms")->f - 4) < (pipelined ? 0.05 : 0.01));
		CHECK(sim_val(v, "p") && sim_val(v, "p")->f < 0.4);
		/* the sample says what it missed, and only then */
		CHECK((strstr(v->text, "; 500 step records were shed while the step hooks"
			      " sampled") != NULL) == shed);
		CHECK((sim_val(v, "steps_shed") && sim_val(v, "steps_shed")->i == 500) == shed);
	}
	sim_fini(&s);
}

/* the proxy threads' scheduler accounts now: rank r's waited WAIT[r] of the time */
static void sched_readings(struct sim *s, const double *wait, uint64_t *last)
{
	int r;

	for (r = 0; r < 4; r++) {
		struct an_sched sc = { .tid = 1000 + (uint32_t)r };

		/* cumulative: the share of the time since the previous reading */
		sc.run_delay_ns = (uint64_t)(wait[r] * (double)(s->now[0] - last[0]));
		last[1 + r] += sc.run_delay_ns;
		sc.run_delay_ns = last[1 + r];
		an_sched(s->an, s->host_id[0], 100 + (uint32_t)r, &sc, s->now[0]);
	}
	last[0] = s->now[0];
}

/*
 * Rank 2 computes 30 ms longer: S1, then a step sample looks for a slow
 * link behind it.  HICCUP: rank 1's proxy thread is descheduled for 20 ms
 * once per round (its 4th step), every other step 1 ms like the others':
 * its mean is 3.5x theirs, its typical step is not, and it is no second
 * culprit.  Else rank 1's link is 4x slower on every step: S3, also where
 * its steps are PIPELINED (each one's own time is its typical step's).
 */
static void test_s3_needs_typical_step(bool hiccup, bool pipelined)
{
	const uint64_t fast[4] = { MS, MS, MS, MS }, slow1[4] = { MS, 4 * MS, MS, MS };
	const uint64_t hic[4] = { 0, 20 * MS, 0, 0 };
	uint64_t rng = 11, op = 1;
	struct sim s;
	int i;

	sim_init(&s, 30, 300);
	sim_comm(&s, W, 4, NULL);
	proxy_rounds(&s, &rng, &op, 110, fast, false, -1, 0);
	CHECK_INT(s.nv, 0);
	proxy_rounds(&s, &rng, &op, 4, fast, false, 2, 30 * MS);
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S1), 1);
	CHECK_INT(s.nsuspect_on, 1);
	pipelined_steps = pipelined;
	for (i = 0; i < 6; i++) {
		proxy_round_hic(&s, W, op++, hiccup ? fast : slow1, true, hiccup ? hic : NULL);
		rounds(&s, &rng, 1, 2, 30 * MS);
	}
	pipelined_steps = false;
	sim_tick(&s, 0.75);
	CHECK_INT(s.nsuspect_off, 1);
	CHECK_INT(count_kind(&s, AN_V_UPDATE, AN_S3), hiccup ? 0 : 1);
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S2) + count_kind(&s, AN_V_NEW, AN_S3), 0);
	sim_fini(&s);
}

/*
 * Rank 1's link slower on every send step (LINK_MS against 1 ms): each
 * round takes 15 ms more, and rank 3 calls 10 ms after the others (it
 * came late from the step before, which the slow link delayed), so CCL-D's
 * P is 10 / 15, just over its S1 bound (random job 25: P 0.65).  The
 * verdict waits for the step sample: with a 4x slower link (3 ms more on
 * each of 8 steps: 24 ms a round, the whole extra) the link is the culprit,
 * S2 naming rank 1; with 2.5 ms (12 ms, under the extra) both causes
 * stand, S3 naming ranks 3 and 1.
 */
static const struct an_verdict *first_new(const struct sim *s);

static void test_s1_border_sampled(double link_ms)
{
	const uint64_t fast[4] = { MS, MS, MS, MS };
	const uint64_t link[4] = { MS, (uint64_t)(link_ms * MS), MS, MS };
	const uint64_t late[4] = { 0, 0, 0, 10 * MS };
	const struct an_verdict *v;
	uint64_t rng = 7, op = 1;
	struct sim s;

	sim_init(&s, 30, 300);
	sim_comm(&s, W, 4, NULL);
	proxy_rounds(&s, &rng, &op, 110, fast, false, -1, 0);
	CHECK_INT(s.nv, 0);
	proxy_busy_rounds(&s, &op, 3, link, false, late, 15 * MS);
	/* P under 0.8: no verdict before the sample */
	CHECK_INT(s.nv, 0);
	CHECK_INT(s.nsuspect_on, 1);
	proxy_busy_rounds(&s, &op, 6, link, true, late, 15 * MS);
	sim_tick(&s, 0.75);
	CHECK_INT(s.nsuspect_off, 1);
	v = first_new(&s);
	CHECK(v != NULL);
	if (!v)
		goto out;
	CHECK(sim_val(v, "p") && sim_val(v, "p")->f > 0.6 && sim_val(v, "p")->f < 0.8);
	if (link_ms >= 4) {
		CHECK_INT(v->cls, AN_S2);
		CHECK_STR(sim_culprits(v), "1");
		CHECK(strstr(v->text, "its link alone costs the round's whole extra") != NULL);
	} else {
		CHECK_INT(v->cls, AN_S3);
		CHECK_STR(sim_culprits(v), "3,1");
	}
out:
	sim_fini(&s);
}

/*
 * The detector's result changes while the sample of an onset runs
 * (test_attach_midrun ptcompute's CI failure: CCL-D's class went from S1
 * to S2 two rounds after the onset): nothing was said yet, so there is
 * nothing to update; the verdict comes at the sample's end, and it is the
 * first one (an S2 "update" came 0.5 s before the S1 verdict it updated).
 */
static void test_no_update_before_sampled_onset(void)
{
	const uint64_t fast[4] = { MS, MS, MS, MS };
	const uint64_t link[4] = { MS, 4 * MS, MS, MS };
	const uint64_t late[4] = { 0, 0, 0, 10 * MS };
	uint64_t rng = 7, op = 1;
	struct an_comm *c;
	struct sim s;

	sim_init(&s, 30, 300);
	sim_comm(&s, W, 4, NULL);
	proxy_rounds(&s, &rng, &op, 110, fast, false, -1, 0);
	proxy_busy_rounds(&s, &op, 3, link, false, late, 15 * MS);
	c = an_comm_get(s.an, W, 0, false);
	CHECK(c && c->slow && c->sampling && (c->slow->pend_ev & SL_EV_ONSET));
	if (!c || !c->slow)
		goto out;
	slow_ccld_event(s.an, c, &c->slow->newest, (int64_t)c->slow->niter, SL_EV_UPDATE);
	CHECK_INT(s.nv, 0);
	proxy_busy_rounds(&s, &op, 6, link, true, late, 15 * MS);
	sim_tick(&s, 0.75);
	CHECK(s.nv >= 1);
	if (s.nv >= 1)
		CHECK_INT(s.v[0].kind, AN_V_NEW);
out:
	sim_fini(&s);
}

#define DH 0x00000000000000d1ull
#define PH 0x00000000000000e1ull

/*
 * One step: comm PH's all-reduce (global ranks 1, 2) called at T and done
 * P_MS later; comm DH's (global ranks 0, 1) called by rank 0 at T + D0_MS
 * and rank 1 at T + D1_MS, done at T + DONE_MS.  Events in time order.
 */
static void held_step(struct sim *s, double p_ms, double d0_ms, double d1_ms, double done_ms)
{
	uint64_t t = s->now[0];
	struct an_op p[2], d[2];
	int r;

	for (r = 0; r < 2; r++)
		p[r] = sim_call(s, PH, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	if (p_ms < d0_ms)
		for (r = 0; r < 2; r++)
			an_op_complete(s->an, &p[r], t + (uint64_t)(p_ms * MS));
	s->now[0] = t + (uint64_t)(d0_ms * MS);
	d[0] = sim_call(s, DH, 0, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	s->now[0] = t + (uint64_t)(d1_ms * MS);
	d[1] = sim_call(s, DH, 1, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	if (p_ms >= d0_ms)
		for (r = 0; r < 2; r++)
			an_op_complete(s->an, &p[r], t + (uint64_t)(p_ms * MS));
	for (r = 0; r < 2; r++)
		an_op_complete(s->an, &d[r], t + (uint64_t)(done_ms * MS));
	s->now[0] = t + (uint64_t)((done_ms + 3) * MS);
}

/*
 * The verdict is about its located round, and so is its cascade: in DH's
 * slowest round (the located one) rank 1's GPU was held by its op in PH,
 * which ended 39 ms late; in the two rounds after, rank 1 came 30 ms late
 * by its own CPU, held by nothing.  Taking the holder of the latest round
 * made DH a root naming rank 1 (test_intranode compute: rank 7 named on
 * its DP comm, the located round's holder being its pipeline op).
 */
static void test_cascade_of_located_round(void)
{
	const int dg[2] = { 0, 1 }, pg[2] = { 1, 2 };
	const struct an_verdict *v;
	struct sim s;
	int i;

	sim_init(&s, 30, 300);
	sim_comm(&s, DH, 2, dg);
	sim_comm(&s, PH, 2, pg);
	for (i = 0; i < 110; i++)
		held_step(&s, 2, 3, 3, 5);
	CHECK_INT(s.nv, 0);
	held_step(&s, 40, 1, 1, 42);
	held_step(&s, 2, 3, 33, 35);
	held_step(&s, 2, 3, 33, 35);
	v = first_new(&s);
	CHECK(v != NULL);
	if (v) {
		CHECK(v->comm == DH);
		CHECK_INT(v->cls, AN_S1);
		CHECK_STR(sim_culprits(v), "1");
		CHECK_INT(v->role, AN_CASCADE);
		CHECK(v->blocked_comm == PH);
	}
	sim_fini(&s);
}

/* the same, but no step record ever comes: after 5 s, a verdict without a rate */
static void test_s2_no_steps(void)
{
	const uint64_t fast[4] = { MS, MS, MS, MS }, zero[4] = { 0, 0, 0, 0 };
	uint64_t rng = 5, op = 1;
	struct sim s;

	sim_init(&s, 30, 300);
	sim_comm(&s, W, 4, NULL);
	proxy_rounds(&s, &rng, &op, 110, fast, false, -1, 0);
	proxy_busy_rounds(&s, &op, 3, fast, false, zero, 40 * MS);
	CHECK_INT(s.nsuspect_on, 1);
	sim_tick(&s, 4.5);
	CHECK_INT(s.nv, 0);
	sim_tick(&s, 1);
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S2), 1);
	CHECK(s.nv == 1 && strstr(s.v[0].text, "no rank's send rate is known") != NULL);
	sim_fini(&s);
}

/*
 * ROUNDS rounds of four comms of one shape (4 ranks, the same all-reduce,
 * arrivals jittered by up to half a ms): from round 110 rank 2 of the
 * first is FIRST_LATE late and rank 0 of each of the others OTHERS_LATE.
 */
static void comparable_rounds(struct sim *s, uint64_t rng, int rounds, uint64_t first_late,
			      uint64_t others_late)
{
	const uint64_t comms[4] = { W, W + 1, W + 2, W + 3 };
	uint64_t late[4];
	int i, j, r;

	sim_init(s, 30, 300);
	for (j = 0; j < 4; j++)
		sim_comm(s, comms[j], 4, NULL);
	for (i = 0; i < rounds; i++)
		for (j = 0; j < 4; j++) {
			for (r = 0; r < 4; r++)
				late[r] = (uint64_t)(u01(&rng) * (double)(MS / 2));
			if (i >= 110)
				late[j ? 0 : 2] += j ? others_late : first_late;
			round_comm(s, comms[j], s->now[0] + MS, late, 10 * MS);
		}
}

/*
 * Four comms of one shape (4 ranks, the same all-reduce); rank 2 of the
 * first is late: its verdict says it is slower than its comparable group,
 * and the evidence gives the group's size and median.
 */
static void test_comparable_group(void)
{
	const struct an_verdict *v = NULL;
	struct sim s;
	int i;

	comparable_rounds(&s, 11, 113, 30 * MS, 0);
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

/*
 * Four comms of one shape; from round 110 rank 2 of the first is 60 ms
 * late, and the other three, whose rank 0 waits for data from it (a
 * pipeline's later stages), are 15 ms late behind it.  The first is the
 * root; the others are alike among themselves and well under the first:
 * its echo, held (random job 287: the DP comms of stages 0 and 2 named
 * ranks 0 and 8 as second roots beside the right one, stage 1's rank 4).
 * With ECHO false the others are not slower (no fault reaches them): the
 * same one verdict.
 */
static void comparable_echo(bool echo)
{
	const struct an_verdict *v;
	struct sim s;
	int i, roots = 0;

	comparable_rounds(&s, 13, 140, 60 * MS, echo ? 15 * MS : 0);
	for (i = 0; i < s.nv; i++) {
		v = &s.v[i];
		if (v->kind != AN_V_NEW || v->role != AN_ROOT)
			continue;
		roots++;
		CHECK(v->comm == W);
		CHECK_STR(sim_culprits(v), "2");
	}
	CHECK_INT(roots, 1);
	sim_fini(&s);
}

static void test_comparable_echo(void)
{
	comparable_echo(true);
	comparable_echo(false);
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

#define TP0 0x00000000000000b0ull

/* one host of 8 processes with N 2-rank TP comms: global ranks 0-1, 2-3, ... */
static void tp_pairs_init(struct sim *s, int n)
{
	int i, g[2];

	sim_init_hosts(s, 30, 300, 1, 8);
	for (i = 0; i < n; i++) {
		g[0] = 2 * i;
		g[1] = 2 * i + 1;
		sim_comm(s, TP0 + (uint64_t)i, 2, g);
	}
}

/*
 * One iteration of N 2-rank TP comms (global ranks 0-1, 2-3, ..., one op
 * signature): both ranks call together, every round of comm i takes
 * BUSY[i] after the call, the last comm's rank 1's send steps LINK long
 * (1 ms the others'), with step records while a sample hooks them; then a
 * tick
 */
static void tp_iteration(struct sim *s, int n, uint64_t *op, const uint64_t *busy,
			 uint64_t link)
{
	const uint64_t zero[4] = { 0, 0, 0, 0 };
	const uint64_t fast[2] = { MS, MS }, slow[2] = { MS, link };
	bool hooked = s->nsuspect_on > s->nsuspect_off;
	int i;

	for (i = 0; i < n; i++) {
		proxy_round_of(s, TP0 + (uint64_t)i, op[i]++, i == n - 1 ? slow : fast, hooked);
		round_comm(s, TP0 + (uint64_t)i, s->now[0] + MS, zero, busy[i]);
	}
	an_clock(s->an, s->host_id[0], s->now[0]);
}

/*
 * Attached after rank 1's link in the last of N TP comms became 6x slower:
 * that comm's rounds were RATIO x 5 ms from the first one seen, its ranks
 * arrive together, so neither CCL-D (its baseline learned slow), the peer
 * comparison nor the network part's rise sees anything.  Its comparable
 * comms (the other TP comms, 5 ms) do: a step sample names the link
 * (random job 16's shape: 4 TP comms; job 93's: 2).  Back to 5 ms, it
 * recovers.  A comm 1.3x its group (or 1.8x its one peer) is left alone.
 */
static void test_comparable_group_sample(int n, double ratio)
{
	uint64_t busy[4] = { 5 * MS, 5 * MS, 5 * MS, 5 * MS };
	uint64_t op[4] = { 1, 1, 1, 1 };
	const struct an_verdict *v;
	struct sim s;
	char words[64];
	int i;

	busy[n - 1] = (uint64_t)(ratio * 5 * MS);
	tp_pairs_init(&s, n);
	for (i = 0; i < 80; i++)
		tp_iteration(&s, n, op, busy, ratio > 2 ? 6 * MS : MS);
	v = first_new(&s);
	if (ratio < (n > 2 ? GROUP_TEST_RATIO : GROUP_TEST_PAIR_RATIO)) {
		CHECK(v == NULL);
		CHECK_INT(s.nsuspect_on, 0);
		goto out;
	}
	CHECK_INT(s.nsuspect_on, 1);
	CHECK(v != NULL);
	if (!v)
		goto out;
	CHECK_INT(v->cls, AN_S2);
	CHECK(v->comm == TP0 + (uint64_t)(n - 1));
	CHECK_STR(sim_culprits(v), "1");
	CHECK_STR(sim_val_s(v, "detector"), "comparable group");
	snprintf(words, sizeof(words), "slower than its %d comparable comms", n);
	CHECK(strstr(v->text, words) != NULL);
	CHECK(sim_val(v, "group_median_ms") && fabs(sim_val(v, "group_median_ms")->f - 5) < 1);
	/* back in line: recovered within a few scans (2 s: 120 iterations of 2 comms) */
	busy[n - 1] = 5 * MS;
	for (i = 0; i < 120; i++)
		tp_iteration(&s, n, op, busy, MS);
	CHECK_INT(count_kind(&s, AN_V_RECOVERED, AN_S2), 1);
out:
	sim_fini(&s);
}

/*
 * A comm deviant from its group, then a stall of every comm for 3 s (a rank
 * stopped: test_step_hooks on a busy VM): its medians, frozen, are not
 * deviance that lasts, so no sample starts while nothing moves (one started
 * there, then named a rank of the catch-up).  Once its rounds flow again,
 * still 6x its group, it is sampled and named.
 */
static void test_comparable_group_stall(void)
{
	uint64_t busy[4] = { 5 * MS, 5 * MS, 5 * MS, 30 * MS };
	uint64_t op[4] = { 1, 1, 1, 1 };
	const struct an_verdict *v;
	struct sim s;
	int i;

	tp_pairs_init(&s, 4);
	for (i = 0; i < 12; i++)	/* 0.6 s: deviant in a scan or two */
		tp_iteration(&s, 4, op, busy, 6 * MS);
	CHECK_INT(s.nsuspect_on, 0);
	for (i = 0; i < 30; i++) {	/* 3 s without a round */
		s.now[0] += 100 * MS;
		an_clock(s.an, s.host_id[0], s.now[0]);
	}
	CHECK_INT(s.nsuspect_on, 0);
	for (i = 0; i < 80; i++)
		tp_iteration(&s, 4, op, busy, 6 * MS);
	CHECK_INT(s.nsuspect_on, 1);
	v = first_new(&s);
	CHECK(v != NULL);
	if (v) {
		CHECK_INT(v->cls, AN_S2);
		CHECK(v->comm == TP0 + 3);
	}
	sim_fini(&s);
}

/*
 * Two 2-rank comms that each do one op twice per iteration (one signature):
 * the first waits for the iteration's compute on the GPU stream (BIG), the
 * second does not (SMALL), but comm 1 does them in the other order, and
 * comm 1's rounds are RATIO x comm 0's, its rank 1's send steps LINK long.
 * Random job 45 (the DP comms of two pipeline stages): at every scan the
 * last 5 rounds of comm 0 held 3 small ones and comm 1's 3 big ones, so
 * their medians were 3.0 and 11.2 ms, comm 1 "deviant" for as long as
 * the phase held (a frozen history while another comm was sampled kept
 * it 2.5 s), and its sample named a slow link that was not there.  Alike
 * (RATIO 1), nothing is sampled; 3x slower with a slow link, it is named.
 */
static void test_comparable_group_phase(double ratio, uint64_t link)
{
	const uint64_t zero[2] = { 0, 0 }, fast[2] = { MS, MS }, slow[2] = { MS, link };
	const uint64_t big = 12 * MS, small = 3 * MS;
	uint64_t op[2] = { 1, 1 };
	const struct an_verdict *v;
	struct sim s;
	int i, k;

	tp_pairs_init(&s, 2);
	for (i = 0; i < 120; i++) {
		bool hooked = s.nsuspect_on > s.nsuspect_off;

		for (k = 0; k < 2; k++) {
			proxy_round_of(&s, TP0, op[0]++, fast, hooked);
			round_comm(&s, TP0, s.now[0] + MS, zero, k ? small : big);
			proxy_round_of(&s, TP0 + 1, op[1]++, slow, hooked);
			round_comm(&s, TP0 + 1, s.now[0] + MS, zero,
				   (uint64_t)(ratio * (double)(k ? big : small)));
		}
		an_clock(s.an, s.host_id[0], s.now[0]);
	}
	v = first_new(&s);
	if (ratio < GROUP_TEST_PAIR_RATIO) {
		CHECK(v == NULL);
		CHECK_INT(s.nsuspect_on, 0);
	} else {
		CHECK(v != NULL);
		if (v) {
			CHECK_INT(v->cls, AN_S2);
			CHECK(v->comm == TP0 + 1);
			CHECK_STR(sim_culprits(v), "1");
			CHECK_STR(sim_val_s(v, "detector"), "comparable group");
		}
	}
	sim_fini(&s);
}

/* comm HASH's history of signature SIG: its last GROUP_HIST round maxima (ms) */
static void group_hist(struct sim *s, uint64_t hash, uint64_t sig, const double *ms)
{
	struct an_comm *c = an_comm_get(s->an, hash, 0, false);
	struct sig_hist *h;
	int i;

	CHECK(c && c->slow);
	if (!c || !c->slow)
		return;
	h = &c->slow->gh[0];
	h->sig = sig;
	for (i = 0; i < GROUP_HIST; i++)
		h->tmax[i] = ms[i] * MS;
	h->n = GROUP_HIST;
	h->pos = 0;
}

/*
 * Random job 485 (moe, rank 6's GPU 3x slower, attached mid run, the CPUs
 * a step or two ahead with a host sync every other step): a 2-rank comm
 * pair doing one all-reduce a step, its rounds timed from the calls long
 * or short by the step's parity.  At the scan comm 1's last 5 rounds held
 * 3 long ones (47 ms) and comm 0's 3 short (3 ms): a median 44 ms over its
 * pair's; their short rounds, 10 against 3 ms, differ by the straggler's
 * lead.  The sample saw rank 1 of comm 1 last in 10 of 10 rounds by 6.8
 * ms: a quarter of the fast mode's extra, not of the median's, and it is
 * named (no verdict before).  Where the fast mode is as far above its
 * pair's as the median (FAST_TOO), 6.8 ms explains too little: no one.
 */
static void test_group_fast_mode_extra(bool fast_too)
{
	const double c0[GROUP_HIST] = { 3, 40, 3, 40, 3 };
	const double c1[GROUP_HIST] = { 47, 10, 47, 10, 47 };
	const double c1_slow[GROUP_HIST] = { 47, 47, 47, 47, 47 };
	const uint64_t zero[2] = { 0, 0 };
	struct an_comm *c;
	struct an_slow *sl;
	struct sim s;
	int k;

	tp_pairs_init(&s, 2);
	for (k = 0; k < 2; k++)		/* a round each: their slow state */
		round_comm(&s, TP0 + (uint64_t)k, s.now[0] + MS, zero, MS);
	group_hist(&s, TP0, 0x97cb, c0);
	group_hist(&s, TP0 + 1, 0x97cb, fast_too ? c1_slow : c1);
	/* the first tick starts the scan clock, the next scans */
	s.now[0] += MS;
	an_slow_group_clock(s.an, s.host_id[0], s.now[0]);
	s.now[0] += GROUP_SCAN_NS;
	an_slow_group_clock(s.an, s.host_id[0], s.now[0]);
	c = an_comm_get(s.an, TP0 + 1, 0, false);
	CHECK(c && c->slow);
	if (!c || !c->slow)
		goto out;
	sl = c->slow;
	CHECK(fabs(sl->grp_mine - sl->grp_med - 44 * MS) < MS / 10);
	CHECK(fabs(sl->grp_lo_extra - (fast_too ? 44 : 7) * (double)MS) < MS / 10);
	/* what the sample saw: rank 1 last in 10 of 10 rounds, 6.8 ms ahead */
	sl->arr_rounds = 10;
	for (k = 0; k < 2; k++)
		sl->arr_last[k] = 0, sl->arr_gap[k] = sl->arr_gmax[k] = 0;
	sl->arr_last[1] = 10;
	sl->arr_gap[1] = 10 * 6.8 * MS;
	sl->arr_gmax[1] = 7.2 * MS;
	slow_group_sampled(s.an, c, s.now[0]);
	if (fast_too) {
		CHECK(first_new(&s) == NULL);
	} else {
		const struct an_verdict *v = first_new(&s);

		CHECK(v != NULL);
		if (v) {
			CHECK_INT(v->cls, AN_S1);
			CHECK(v->comm == TP0 + 1);
			CHECK_STR(sim_culprits(v), "1");
			CHECK_STR(sim_val_s(v, "detector"), "comparable group");
		}
	}
out:
	sim_fini(&s);
}

/*
 * One iteration of 4 TP comms (2 ranks, processes of their own), a round
 * each, ~0.3 ms of jitter.  Under NOISE, in every comm one rank (each in
 * turn) arrives 5-10 ms late: a noisy neighbour takes one CPU then another.
 * With LATE, the last comm's rank 1 arrives LATE ns late instead.
 */
static void hostwide_iteration(struct sim *s, uint64_t *rng, uint64_t it, bool noise,
			       uint64_t late)
{
	uint64_t at[2];
	int i, r;

	for (i = 0; i < 4; i++) {
		for (r = 0; r < 2; r++)
			at[r] = (uint64_t)(u01(rng) * 0.3 * MS);
		if (i == 3 && late)
			at[1] += late;
		else if (noise)
			at[(it + (uint64_t)i) % 2] += (uint64_t)((5 + 5 * u01(rng)) * MS);
		round_comm(s, TP0 + (uint64_t)i, s->now[0] + MS, at, MS);
	}
	an_clock(s->an, s->host_id[0], s->now[0]);
}

static int new_verdicts(const struct sim *s)
{
	int i, n = 0;

	for (i = 0; i < s->nv; i++)
		n += s->v[i].kind == AN_V_NEW;
	return n;
}

/*
 * The whole host slowed (test_slow_noise's healthy job, a CI run: a 2-rank
 * comm named "like its 4 comparable comms"): every TP comm's rounds wait
 * for a descheduled rank, no rank is the cause: no verdict, during the
 * noise or after.  With the last comm's rank 1 (global 7) LATE_MS late
 * from the noise's start: 30 ms, 3x the others' slowest, it is named in
 * the noise; 7 ms, as slow as they are, it is not, but it is named once
 * it stays late alone (AFTER), with its onset at the noise's start.
 */
static void test_hostwide_noise(uint64_t late_ms, bool after)
{
	const uint64_t late = late_ms * MS;
	const struct an_verdict *v;
	uint64_t rng = 11, it = 0;
	struct sim s;
	int i, during;

	tp_pairs_init(&s, 4);
	for (i = 0; i < 120; i++)
		hostwide_iteration(&s, &rng, it++, false, 0);
	CHECK_INT(s.nv, 0);
	for (i = 0; i < 60; i++)
		hostwide_iteration(&s, &rng, it++, true, late);
	during = new_verdicts(&s);
	for (i = 0; i < 40; i++)
		hostwide_iteration(&s, &rng, it++, false, after ? late : 0);
	v = first_new(&s);
	if (!late_ms || (!after && late_ms < 15)) {
		CHECK_INT(s.nv, 0);
		goto out;
	}
	CHECK_INT(new_verdicts(&s), 1);
	CHECK_INT(during, late_ms >= 15);
	CHECK(v != NULL);
	if (v) {
		CHECK(v->comm == TP0 + 3);
		CHECK_INT(v->cls, AN_S1);
		CHECK_INT(v->role, AN_ROOT);
		CHECK_STR(sim_culprits(v), "1");
		CHECK(sim_val(v, "onset_iter") && sim_val(v, "onset_iter")->i == 120);
	}
out:
	sim_fini(&s);
}

/*
 * Random job 175 (healthy, 16 ranks on one VM, traced from the start): one
 * TP comm of 2 ran its first rounds fast (0.5 ms) while the job started,
 * then as every comparable comm ran from the start (4-6 ms).  Its baseline
 * kept the fast rounds and left the rest out as a level shift, and the
 * normal rounds were then a slowdown (S3, R 8.6).  The comparable comms'
 * baselines say those rounds are normal: no verdict.  Where every comm
 * started fast and comm 3 alone slowed (FAULT), its onset stands.
 */
static void shift_iteration(struct sim *s, uint64_t *rng, uint64_t it, bool fault)
{
	uint64_t at[2], busy;
	int i, r;

	for (i = 0; i < 4; i++) {
		for (r = 0; r < 2; r++)
			at[r] = (uint64_t)(u01(rng) * 0.3 * MS);
		if (fault)
			busy = it < 12 || i < 3 ? MS / 2 : 4 * MS;
		else
			busy = i == 3 && it < 12 ? MS / 2 : 4 * MS;
		busy += (uint64_t)(u01(rng) * 0.4 * (double)busy);
		round_comm(s, TP0 + (uint64_t)i, s->now[0] + MS, at, busy);
	}
	an_clock(s->an, s->host_id[0], s->now[0]);
}

static void test_shift_below_peers(bool fault)
{
	uint64_t rng = 17, it;
	struct sim s;

	tp_pairs_init(&s, 4);
	for (it = 0; it < 300; it++)
		shift_iteration(&s, &rng, it, fault);
	if (fault) {
		CHECK(new_verdicts(&s) >= 1);
		CHECK(s.nv > 0 && s.v[0].comm == TP0 + 3);
	} else {
		CHECK_INT(s.nv, 0);
	}
	sim_fini(&s);
}

/*
 * A busy host that slows two comms only (test_slow_noise's healthy job, a
 * run here: a hog burst slowed pipeline stage 0's TP comms {2,3} and
 * {0,1} for 1.02 s; {2,3} was named S1 rank 3, P 0.83, by one round; at
 * its onset the other TP comms' last 3 rounds were 0.85, 0.67 and 17.61x
 * their baselines: not the whole host).  In each of the last two comms
 * one rank in turn arrives 5-10 ms late: no rank is the one the slow
 * rounds wait for, no verdict.  A rank late in every round (LATE) is.
 */
static void split_iteration(struct sim *s, uint64_t *rng, uint64_t it, bool noise, bool late)
{
	uint64_t at[2];
	int i, r;

	for (i = 0; i < 4; i++) {
		for (r = 0; r < 2; r++)
			at[r] = (uint64_t)(u01(rng) * 0.3 * MS);
		if (i >= 2 && late)
			at[1] += (uint64_t)((5 + 5 * u01(rng)) * MS);
		else if (i >= 2 && noise)
			at[(it + (uint64_t)i) % 2] += (uint64_t)((5 + 5 * u01(rng)) * MS);
		round_comm(s, TP0 + (uint64_t)i, s->now[0] + MS, at, MS);
	}
	an_clock(s->an, s->host_id[0], s->now[0]);
}

static void test_split_noise(bool late)
{
	uint64_t rng = 13, it = 0;
	struct sim s;
	int i;

	tp_pairs_init(&s, 4);
	for (i = 0; i < 120; i++)
		split_iteration(&s, &rng, it++, false, false);
	CHECK_INT(s.nv, 0);
	for (i = 0; i < 100; i++)
		split_iteration(&s, &rng, it++, !late, late);
	for (i = 0; i < 40; i++)
		split_iteration(&s, &rng, it++, false, false);
	if (!late) {
		CHECK_INT(s.nv, 0);
	} else {
		CHECK_INT(new_verdicts(&s), 2);
		for (i = 0; i < s.nv; i++)
			if (s.v[i].kind == AN_V_NEW)
				CHECK_STR(sim_culprits(&s.v[i]), "1");
	}
	sim_fini(&s);
}

/*
 * A lossy link makes its ends late in turn too (test_trace_tcp_loss: rank
 * 2's link dropping 5% of packets, a 3-rank ring; the slow rounds waited
 * for rank 1 in 33% of their wait, for the others in the rest): the split
 * hold alone kept every onset back, and no verdict came.  With the
 * kernel's retransmits on rank 2's connections to both its peers (TCP),
 * the onset is said, and it names rank 2's link: S2.  Without them, no
 * verdict (the busy host of test_split_noise).
 */
static void test_split_tcp(bool tcp)
{
	const int g[3] = { 0, 1, 2 };
	const uint64_t C3 = TP0 + 7;
	uint64_t rng = 29, at[3];
	struct sim s;
	int i, r;

	sim_init_hosts(&s, 30, 300, 1, 8);
	sim_comm(&s, C3, 3, g);
	for (i = 0; i < 220; i++) {
		for (r = 0; r < 3; r++)
			at[r] = (uint64_t)(u01(&rng) * 0.3 * MS);
		if (i >= 120 && i < 180) {
			at[i % 3] += (uint64_t)((5 + 5 * u01(&rng)) * MS);
			if (tcp) {
				an_tcp_event(s.an, s.host_id[0], 102, 100 + (uint32_t)(i % 2),
					     AN_TCP_RETRANSMIT, 0, 0, "", s.now[0]);
			}
		}
		round_comm(&s, C3, s.now[0] + MS, at, MS);
		an_clock(s.an, s.host_id[0], s.now[0]);
	}
	if (!tcp) {
		CHECK_INT(s.nv, 0);
	} else {
		CHECK(new_verdicts(&s) >= 1);
		for (i = 0; i < s.nv; i++)
			if (s.v[i].kind == AN_V_NEW) {
				CHECK_INT(s.v[i].cls, AN_S2);
				CHECK_STR(sim_culprits(&s.v[i]), "2");
				CHECK(strstr(s.v[i].text, "TCP retransmits") != NULL);
			}
	}
	sim_fini(&s);
}

/*
 * One iteration of TP 4 x DP 2 (8 processes): TP comms {0-3} and {4-7},
 * DP comms {k, k+4}; every rank calls its TP all-reduce and its DP one
 * 0.1 ms later (its CPU runs ahead), and its GPU does them in that order,
 * 1 ms each.  Rank 3 calls LATE ns late.
 */
static void tpdp_iteration(struct sim *s, uint64_t tpa, uint64_t tpb, uint64_t dp0,
			   uint64_t late)
{
	const uint64_t t0 = s->now[0];
	struct an_op tp[8], dp[8];
	int k;

	for (k = 0; k < 8; k++) {
		if (k == 3)
			continue;
		s->now[0] = t0;
		tp[k] = sim_call(s, k < 4 ? tpa : tpb, k % 4, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		s->now[0] = t0 + 100000;
		dp[k] = sim_call(s, dp0 + (uint64_t)(k % 4), k / 4, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	}
	for (k = 4; k < 8; k++)
		an_op_complete(s->an, &tp[k], t0 + MS);
	s->now[0] = t0 + late;
	tp[3] = sim_call(s, tpa, 3, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	s->now[0] = t0 + late + 100000;
	dp[3] = sim_call(s, dp0 + 3, 0, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	for (k = 0; k < 4; k++)
		an_op_complete(s->an, &tp[k], t0 + late + 1200000);
	for (k = 0; k < 8; k++)
		an_op_complete(s->an, &dp[k], t0 + late + 2400000);
	s->now[0] = t0 + late + 3 * MS;
	an_clock(s->an, s->host_id[0], s->now[0]);
}

/*
 * Rank 3 of TP 4 x DP 2 computes 20 ms longer: its TP comm waits for it,
 * and every DP comm waits for a rank late from that TP op (rank 3 too):
 * all 4 DP comms are alike slow, as in a host-wide slowdown, but each
 * waits for a rank that TP op held.  None is held as host-wide: each
 * gives its verdict, a cascade (the TP comm's own rounds end on the DP
 * op's completion where the CPUs run ahead: CCL-D does not judge them;
 * live, its step sample or the chain of holders names rank 3).
 */
static void test_hostwide_not_cascades(void)
{
	const uint64_t TPA = W + 20, TPB = W + 21, DP0 = W + 24;
	const int ga[4] = { 0, 1, 2, 3 }, gb[4] = { 4, 5, 6, 7 };
	const struct an_verdict *v;
	struct sim s;
	int i, g[2], ndp = 0;

	sim_init_hosts(&s, 30, 300, 1, 8);
	sim_comm(&s, TPA, 4, ga);
	sim_comm(&s, TPB, 4, gb);
	for (i = 0; i < 4; i++) {
		g[0] = i;
		g[1] = i + 4;
		sim_comm(&s, DP0 + (uint64_t)i, 2, g);
	}
	for (i = 0; i < 120; i++)
		tpdp_iteration(&s, TPA, TPB, DP0, 0);
	CHECK_INT(s.nv, 0);
	for (i = 0; i < 40; i++)
		tpdp_iteration(&s, TPA, TPB, DP0, 20 * MS);
	for (i = 0; i < 4; i++) {
		v = sim_find_v(&s, DP0 + (uint64_t)i, AN_V_NEW);
		ndp += v != NULL;
		if (v)
			CHECK_INT(v->role, AN_CASCADE);
	}
	CHECK_INT(ndp, 4);
	sim_fini(&s);
}

/*
 * A stream sync per op (the plain pattern): global rank 1 calls comm H's
 * all-reduce with rank 0, which computes 40 ms longer; its CPU waits for
 * H's op to end, then calls comm C's (with rank 2, which waited there since
 * early) 0.3 ms after.  In C rank 1 arrives last by 43 ms each step: the
 * peer comparison names it, but it came straight from waiting in H, whose
 * straggler is rank 0: C's verdict is a cascade of H (random job 18: a
 * second S1 root before).  Its GPU was idle at the call, so no op held it:
 * the wait of its CPU is what says so.
 */
static void test_peer_held_by_synced_op(void)
{
	const uint64_t H = W + 8, C = W + 9;
	const int gh[2] = { 0, 1 }, gc[2] = { 1, 2 };
	const struct an_verdict *vh, *vc;
	struct an_op h[2], c[2];
	struct sim s;
	uint64_t t;
	int i;

	sim_init(&s, 30, 300);
	sim_comm(&s, H, 2, gh);
	sim_comm(&s, C, 2, gc);
	for (i = 0; i < 40; i++) {
		t = s.now[0];
		h[1] = sim_call(&s, H, 1, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		s.now[0] = t + 2 * MS;
		c[1] = sim_call(&s, C, 1, CCLD_FN_ALLREDUCE, 1 << 20, 7);	/* global 2 */
		s.now[0] = t + 40 * MS;
		h[0] = sim_call(&s, H, 0, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		an_op_complete(s.an, &h[0], t + 45 * MS);
		an_op_complete(s.an, &h[1], t + 45 * MS);
		s.now[0] = t + 45 * MS + 300000;
		c[0] = sim_call(&s, C, 0, CCLD_FN_ALLREDUCE, 1 << 20, 7);	/* global 1 */
		an_op_complete(s.an, &c[0], t + 50 * MS + 300000);
		an_op_complete(s.an, &c[1], t + 50 * MS + 300000);
		s.now[0] = t + 55 * MS;
		an_clock(s.an, s.host_id[0], s.now[0]);
	}
	vh = sim_find_v(&s, H, AN_V_NEW);
	vc = sim_find_v(&s, C, AN_V_NEW);
	CHECK(vh != NULL);
	CHECK(vc != NULL);
	if (!vh || !vc)
		goto out;
	CHECK_INT(vh->role, AN_ROOT);
	CHECK_STR(sim_culprits(vh), "0");
	CHECK_STR(sim_val_s(vh, "detector"), "peer");
	CHECK_INT(vc->role, AN_CASCADE);
	CHECK(vc->blocked_comm == H);
	CHECK_STR(sim_culprits(vc), "0");
out:
	sim_fini(&s);
}

/*
 * A slow link in a TP comm, seen from its DP comms (random job 16: TP 2 x
 * DP 4, rank 5's link 6.1x slower, attached late: rank 5 named S1 in its
 * DP comm).  TP comms H {0, 1} and H2 {2,
 * 3}: both ranks call together, H's op takes 30 ms (its link), H2's 5 ms;
 * nobody waits in either.  DP comms C {1, 3} and C2 {0, 2}: each rank's
 * CPU waits for its TP op, then calls at once.  Globals 1 and 0 arrive
 * last in C and C2 by 25 ms each step: H's op held them, and took 25 ms
 * longer than H2's.  Each is a cascade of H; a root before.
 */
static void test_peer_held_by_long_op(void)
{
	const uint64_t H = W + 10, H2 = W + 11, C = W + 12, C2 = W + 13;
	const int gh[2] = { 0, 1 }, gh2[2] = { 2, 3 }, gc[2] = { 1, 3 }, gc2[2] = { 0, 2 };
	const uint64_t hend[4] = { 30 * MS, 30 * MS, 5 * MS, 5 * MS };
	struct an_op h[4], c[4];
	struct sim s;
	uint64_t t;
	int i, g, nroot = 0, ncascade = 0;

	sim_init(&s, 30, 300);
	sim_comm(&s, H, 2, gh);
	sim_comm(&s, H2, 2, gh2);
	sim_comm(&s, C, 2, gc);
	sim_comm(&s, C2, 2, gc2);
	for (i = 0; i < 40; i++) {
		t = s.now[0];
		for (g = 0; g < 4; g++)
			h[g] = sim_call(&s, g < 2 ? H : H2, g % 2, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		for (g = 0; g < 4; g++)
			an_op_complete(s.an, &h[g], t + hend[g]);
		/* each CPU calls its DP op 0.3 ms after its TP op ended */
		for (g = 3; g >= 0; g--) {
			s.now[0] = t + hend[g] + 300000;
			c[g] = sim_call(&s, g % 2 ? C : C2, g / 2, CCLD_FN_ALLREDUCE, 1 << 20, 9);
		}
		for (g = 0; g < 4; g++)
			an_op_complete(s.an, &c[g], t + 32 * MS);
		s.now[0] = t + 40 * MS;
		an_clock(s.an, s.host_id[0], s.now[0]);
	}
	for (i = 0; i < s.nv; i++) {
		if (s.v[i].kind != AN_V_NEW || (s.v[i].comm != C && s.v[i].comm != C2))
			continue;
		nroot += s.v[i].role == AN_ROOT;
		ncascade += s.v[i].role == AN_CASCADE && s.v[i].blocked_comm == H;
	}
	CHECK_INT(nroot, 0);
	CHECK_INT(ncascade, 2);
	sim_fini(&s);
}

/*
 * Rank 2 arrives last (S1 by the timings) while rank 3's link retransmits
 * in both directions (rank 3 -> 0 and 1 -> 3): with enough retransmits the
 * slowdown is the network's, and its culprit is rank 3, the end of the
 * connections that carry them, a stray one between ranks 0 and 1 (a
 * spurious timeout) notwithstanding; with a few, S1 and rank 2 stand.
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
	retransmits(&s, 100, 101, 1);
	rounds(&s, &rng, 4, 2, 30 * MS);
	v = first_new(&s);
	CHECK(v != NULL);
	if (v) {
		CHECK_INT(v->cls, AN_S2);
		CHECK_STR(sim_culprits(v), "3");
		CHECK(sim_val(v, "tcp_rank") && sim_val(v, "tcp_rank")->i == 3);
		CHECK(sim_val(v, "tcp_retransmits") && sim_val(v, "tcp_retransmits")->i == 23);
		CHECK(strstr(v->text, "rank 3 is at one end of the connections with 23 of the"
			     " 24 TCP retransmits on 3 connections of the comm: its link") != NULL);
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

#define V (W + 1)	/* 2 ranks: the processes of W's ranks 0 and 1 */

/* the comms W and V, and 110 healthy iterations of both: W's round, then V's (tier C) */
static void two_comms(struct sim *s, uint64_t *rng, uint64_t *op)
{
	const uint64_t fast[2] = { MS, MS }, zero[2] = { 0, 0 };
	const int vg[2] = { 0, 1 };
	int i;

	sim_init(s, 30, 300);
	sim_comm(s, W, 4, NULL);
	sim_comm(s, V, 2, vg);
	for (i = 0; i < 110; i++) {
		rounds(s, rng, 1, -1, 0);
		proxy_round_of(s, V, (*op)++, fast, false);
		round_comm(s, V, s->now[0] + MS, zero, 10 * MS);
	}
}

/* one round of V whose link to rank 1 is 4x slower (40 ms), step records with STEPS */
static void v_slow_round(struct sim *s, uint64_t *op, bool steps)
{
	const uint64_t slow[2] = { MS, 4 * MS }, zero[2] = { 0, 0 };

	proxy_round_of(s, V, (*op)++, slow, steps);
	round_comm(s, V, s->now[0] + MS, zero, 40 * MS);
}

/* the step sample of V: step records, then its end (S2, rank 1) */
static void v_sample(struct sim *s, uint64_t *op)
{
	int i;

	for (i = 0; i < 5; i++)
		v_slow_round(s, op, true);
	sim_tick(s, 0.75);
	CHECK_INT(s->nsuspect_off, 1);
}

/*
 * V's link slows down (S2: a step sample follows) and W's rank 2 arrives
 * late (S1).  W's first slow round ends before V's sample turns step hooks
 * on in the processes of W's ranks 0 and 1, but rank 0's record of it
 * comes after: that round ran without hooks and is judged.  Two more slow
 * iterations once the hooks are off give W's verdict; taken as perturbed
 * (as it was), it was not judged and they gave none.
 */
static void test_round_before_hooks(void)
{
	uint64_t rng = 3, op = 1, late[4], t0;
	struct an_op ops[4];
	const struct an_verdict *v;
	struct sim s;
	int r;

	two_comms(&s, &rng, &op);
	for (r = 0; r < 2; r++) {
		rounds(&s, &rng, 1, -1, 0);
		v_slow_round(&s, &op, false);
	}
	/* W's round ends first ... */
	for (r = 0; r < 4; r++)
		late[r] = (uint64_t)(u01(&rng) * (double)(MS / 2));
	late[2] += 30 * MS;
	t0 = s.now[0] + MS;
	round_enter(&s, W, t0, late, ops);
	round_complete(&s, W, t0, late, 10 * MS, ops, 0);
	/* ... then V's third slow one: its onset turns hooks on ... */
	v_slow_round(&s, &op, false);
	CHECK_INT(s.nsuspect_on, 1);
	/* ... then rank 0's completion of W's round */
	an_op_complete(s.an, &ops[0], t0 + late[2] + 10 * MS);
	v_sample(&s, &op);
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S2), 1);
	sim_tick(&s, 1.25);		/* the hooks' perturbation is over */
	for (r = 0; r < 2; r++) {
		rounds(&s, &rng, 1, 2, 30 * MS);
		v_slow_round(&s, &op, false);
	}
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S1), 1);
	v = sim_last_cls(&s, AN_S1);
	CHECK(v != NULL);
	if (v) {
		CHECK(v->comm == W);
		CHECK_STR(sim_culprits(v), "2");
	}
	sim_fini(&s);
}

/*
 * W slows down first (rank 2 late), then V (its link).  W's second slow
 * iteration stays under its threshold, so V has three slow iterations in a
 * row first, while W's are still pending.  V's sample would leave W's next
 * rounds unjudged and W's incident, the earlier, would be lost (in a TP x
 * DP job: the TP comm behind a slow link, once its DP comms were sampled).
 * V's sample waits: W's verdict comes with its third slow iteration in a
 * row, V's sample starts with V's next round and names V's slow link.
 */
static void test_sample_waits_for_pending(void)
{
	const struct an_verdict *v;
	uint64_t rng = 3, op = 1;
	struct sim s;
	int i;

	two_comms(&s, &rng, &op);
	for (i = 0; i < 5; i++) {
		rounds(&s, &rng, 1, i == 1 ? -1 : 2, 30 * MS);
		if (i == 4) {
			CHECK_INT(count_kind(&s, AN_V_NEW, AN_S1), 1);
			v = sim_last_cls(&s, AN_S1);
			CHECK(v != NULL && v->comm == W);
		}
		v_slow_round(&s, &op, false);
		if (i == 2) {
			CHECK_INT(s.nsuspect_on, 0);
			CHECK_INT(s.nv, 0);
		}
	}
	CHECK_INT(s.nsuspect_on, 1);
	v_sample(&s, &op);
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S2), 1);
	v = sim_last_cls(&s, AN_S2);
	CHECK(v != NULL);
	if (v) {
		CHECK(v->comm == V);
		CHECK_STR(sim_culprits(v), "1");
		CHECK(strstr(v->text, "ms per step in the network") != NULL);
	}
	sim_fini(&s);
}

/*
 * A TP-like comm T: four alike all-reduces per step, after an op of another
 * comm D of the same processes.  Its rank 1 is late in one of the four each
 * step (a slow layer): every step is slow, though its other rounds are not.
 * The op that follows another comm's starts T's iteration, so the incident
 * opens with the third slow step.  (With alike ops each round was an
 * iteration, and three slow ones in a row never came: no verdict.)
 */
static void test_alike_ops_iteration(void)
{
	const uint64_t T = W + 2, D = W + 3;
	const int g[2] = { 0, 1 };
	const uint64_t zero[2] = { 0, 0 };
	uint64_t rng = 17, late[2];
	const struct an_verdict *v;
	struct sim s;
	int i, j;

	sim_init(&s, 30, 300);
	sim_comm(&s, T, 2, g);
	sim_comm(&s, D, 2, g);
	for (i = 0; i < 113; i++) {
		round_comm(&s, D, s.now[0] + 5 * MS, zero, 5 * MS);
		for (j = 0; j < 4; j++) {
			late[0] = (uint64_t)(u01(&rng) * (double)(MS / 2));
			late[1] = (uint64_t)(u01(&rng) * (double)(MS / 2));
			if (i >= 110 && j == 2)
				late[1] += 30 * MS;
			round_comm(&s, T, s.now[0] + MS, late, 10 * MS);
		}
	}
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S1), 1);
	v = first_new(&s);
	CHECK(v != NULL);
	if (v) {
		CHECK(v->comm == T);
		CHECK_STR(sim_culprits(v), "1");
	}
	sim_fini(&s);
}

/*
 * Attached to a job already slow: W's rank 2 arrives 30 ms late from the
 * first round seen, and each W round follows one of comm D (the same
 * processes).  The peer comparison names rank 2 with no baseline, counting
 * iterations by W's first signature.  A process's first call since the
 * attach has no call before it: its signature (whether it opens a run of
 * W's ops) is unknown, and it must not be that first signature (it never
 * came again: one iteration counted, no verdict).
 */
static void test_peer_from_attach_two_comms(void)
{
	const uint64_t D = W + 4;
	const uint64_t zero[4] = { 0, 0, 0, 0 };
	const struct an_verdict *v;
	uint64_t rng = 21;
	struct sim s;
	int i;

	sim_init(&s, 30, 300);
	sim_comm(&s, W, 4, NULL);
	sim_comm(&s, D, 4, NULL);
	for (i = 0; i < 40 && !s.nv; i++) {
		rounds(&s, &rng, 1, 2, 30 * MS);
		round_comm(&s, D, s.now[0] + 3 * MS, zero, 5 * MS);
	}
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S1), 1);
	v = first_new(&s);
	CHECK(v != NULL);
	if (v) {
		CHECK(v->comm == W);
		CHECK_STR(sim_culprits(v), "2");
		CHECK_STR(sim_val_s(v, "detector"), "peer");
	}
	sim_fini(&s);
}

/*
 * Comm W (global ranks 0-3), no baseline yet; a sample of comm H (global
 * 2 and 4) puts step hooks on global 2's process.  Global LATE_G arrives
 * 30 ms late in W's rounds.  Hooks only delay the processes they are on:
 * global 1 late is named under them (test_intranode compute: a straggler
 * named 23 steps late while other comms were sampled).  Global 2 late is
 * not, even where its step records (RECORDS) show its hooks took 2% of
 * its time: its lateness may be theirs, or a wait in another comm whose
 * hold the rounds under hooks do not show.
 */
static void test_peer_under_others_hooks(int late_g, bool records)
{
	const uint64_t H = W + 5;
	const uint64_t lat[2] = { MS, MS };
	const int gh[2] = { 2, 4 };
	uint64_t rng = 23, op = 1;
	struct sim s;
	int i;

	sim_init_hosts(&s, 30, 300, 1, 8);
	sim_comm(&s, W, 4, NULL);
	sim_comm(&s, H, 2, gh);
	rounds(&s, &rng, 1, -1, 0);
	an_suspect_comm(s.an, an_comm_get(s.an, H, 0, false), true, true, s.host_id[0],
			s.now[0]);
	for (i = 0; i < 10 && !s.nv; i++) {
		if (records)
			proxy_round_of(&s, H, op++, lat, true);
		rounds(&s, &rng, 1, late_g, 30 * MS);
	}
	if (late_g == 2) {
		CHECK_INT(s.nv, 0);
	} else {
		CHECK_INT(count_kind(&s, AN_V_NEW, AN_S1), 1);
		CHECK(s.nv == 1 && s.v[0].comm == W);
		CHECK_STR(sim_culprits(&s.v[0]), "1");
		CHECK_INT(i, 4);	/* 3 rounds with every start known */
	}
	sim_fini(&s);
}

/*
 * The same, counting rounds: each process calls on a GPU idle for 3 ms
 * (it waits for its GPU), so its starts are known after two such calls,
 * not after eight judged calls: the verdict comes with the third slow
 * iteration (the minimum), a step sooner than when the rounds waited for
 * the processes to be decided.
 */
static void test_peer_decided_early(void)
{
	const uint64_t D = W + 4;
	const uint64_t zero[4] = { 0, 0, 0, 0 };
	uint64_t rng = 21;
	struct sim s;
	int i;

	sim_init(&s, 30, 300);
	sim_comm(&s, W, 4, NULL);
	sim_comm(&s, D, 4, NULL);
	for (i = 0; i < 40 && !s.nv; i++) {
		rounds(&s, &rng, 1, 2, 30 * MS);
		round_comm(&s, D, s.now[0] + 3 * MS, zero, 5 * MS);
	}
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S1), 1);
	CHECK_INT(i, 3);
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
 * sample): the fleet analyzer judges that host's rounds then, as a tracer
 * does under its own hooks, by CCL-D only, less the share the hooks can
 * have added (their step-record rate times AN_HOOK_DELAY_NS): a 30 ms
 * straggler on 1 ms rounds is far beyond it and is named under the hooks.
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
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S1), 1);
	sim_fini(&s);
}

/*
 * Ends known only from one CUDA event per step (tier B, no proxy: NCCL's
 * intra-node transports), as the stand-in's plain step does: processes 0-3,
 * TP comms A (0, 1) and B (2, 3), then a world all-reduce, then one event
 * that completes both.  From step 120 process 3 computes 40 ms longer.  A's
 * ranks arrive together, but the event after the world op ends late for
 * them too: A's rounds look 40 ms longer on both ranks (CCL-D: S2 with no
 * culprit, a root), though A is not slow.  Only B is, found from who
 * arrives last; a step's second TP all-reduce, called while the first
 * runs, is no round of its own for that comparison.  Process 3 is back to
 * normal from step 150: B recovers within 5 steps, though which of its two
 * ranks arrives last is then chance.
 */
static void test_end_shared_with_later_op(void)
{
	const uint64_t A = W + 5, B = W + 6, WORLD = W + 7;
	const int ga[2] = { 0, 1 }, gb[2] = { 2, 3 };
	const struct an_verdict *v;
	uint64_t rng = 5, t0, last, end;
	struct an_op tp[4][2], wo[4];
	struct sim s;
	int i, g, l, back = -1;

	sim_init(&s, 30, 300);
	sim_comm(&s, A, 2, ga);
	sim_comm(&s, B, 2, gb);
	sim_comm(&s, WORLD, 4, NULL);
	for (i = 0; i < 180; i++) {
		t0 = s.now[0];
		last = 0;
		for (g = 0; g < 4; g++) {
			struct sim_comm *c = sim_find(&s, g < 2 ? A : B);
			uint64_t at = t0 + 25 * MS + (uint64_t)(u01(&rng) * (double)(MS / 2));

			if (g == 3 && i >= 120 && i < 150)
				at += 40 * MS;
			for (l = 0; l < 2; l++) {
				tp[g][l] = sim_op(&s, c, g % 2, CCLD_FN_ALLREDUCE,
						  l ? 1024 : 4096, 7);
				tp[g][l].seq = c->next[g % 2]++;
				tp[g][l].t_ns = at + (uint64_t)l * 100000;
				an_op_enter(s.an, &tp[g][l]);
				an_op_return(s.an, &tp[g][l], 0, tp[g][l].t_ns + 20000);
			}
			wo[g] = sim_op(&s, sim_find(&s, WORLD), g, CCLD_FN_ALLREDUCE, 2, 7);
			wo[g].seq = sim_find(&s, WORLD)->next[g]++;
			wo[g].t_ns = at + 300000;
			an_op_enter(s.an, &wo[g]);
			an_op_return(s.an, &wo[g], 0, wo[g].t_ns + 20000);
			if (wo[g].t_ns > last)
				last = wo[g].t_ns;
		}
		/* the step's event: everything done once the world op is */
		end = last + 8 * MS;
		for (g = 0; g < 4; g++) {
			an_op_complete(s.an, &tp[g][1], end + (uint64_t)g * 10000);
			an_op_complete(s.an, &wo[g], end + (uint64_t)g * 10000);
		}
		s.now[0] = end + MS;
		an_clock(s.an, s.host_id[0], s.now[0]);
		if (back < 0 && s.nv && s.v[s.nv - 1].kind == AN_V_RECOVERED)
			back = i;
	}
	CHECK(back >= 150 && back <= 155);
	v = first_new(&s);
	CHECK(v != NULL);
	if (v) {
		CHECK(v->comm == B);
		CHECK_INT(v->cls, AN_S1);
		CHECK_STR(sim_culprits(v), "1");
	}
	for (i = 0; i < s.nv; i++)
		CHECK(s.v[i].comm != A);
	sim_fini(&s);
}

/*
 * A verdict said at its onset (rank 2 computes 30 ms longer), then a step
 * sample looks for a slow link behind it, and the slowdown ends while the
 * sample runs.  The sampled rounds are judged for the recovery, by the
 * starts known without the hooks: it comes then, not after the sample
 * (test_slow_scenarios transient: the incident of a one-step hiccup on the
 * busy VM recovered 15 iterations late, after the fault it was not about).
 */
static void test_recovery_while_sampled(void)
{
	const uint64_t fast[4] = { MS, MS, MS, MS };
	uint64_t rng = 11, op = 1;
	struct sim s;
	int i;

	sim_init(&s, 30, 300);
	sim_comm(&s, W, 4, NULL);
	proxy_rounds(&s, &rng, &op, 110, fast, false, -1, 0);
	proxy_rounds(&s, &rng, &op, 4, fast, false, 2, 30 * MS);
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S1), 1);
	CHECK_INT(s.nsuspect_on, 1);
	for (i = 0; i < 5; i++) {
		proxy_round(&s, op++, fast, true);
		rounds(&s, &rng, 1, -1, 0);
	}
	CHECK_INT(s.nsuspect_off, 0);		/* the sample still runs */
	CHECK_INT(count_kind(&s, AN_V_RECOVERED, AN_S1), 1);
	sim_tick(&s, 0.75);
	CHECK_INT(s.nsuspect_off, 1);
	CHECK_INT(s.nv, 2);			/* nothing after the recovery */
	sim_fini(&s);
}

/*
 * W's 4 ranks after 110 healthy rounds with tier C (its baseline learned):
 * its analyzer state, for the tests that set a sample's state by hand
 */
static struct an_comm *learned_comm(struct sim *s, uint64_t seed)
{
	const uint64_t fast[4] = { MS, MS, MS, MS };
	uint64_t rng = seed, op = 1;
	struct an_comm *c;

	sim_init(s, 30, 300);
	sim_comm(s, W, 4, NULL);
	proxy_rounds(s, &rng, &op, 110, fast, false, -1, 0);
	c = an_comm_get(s->an, W, 0, false);
	CHECK(c && c->slow);
	return c;
}

/*
 * Where the CPUs run ahead of their GPUs, an onset's verdict waits for a
 * step sample; a sample that named nobody keeps the hooks off the comm for
 * 30 s.  Once that incident ended, the next one gets its own sample after a
 * short gap (test_slow_scenarios ptcompute: a hiccup's sample 3 s before the
 * fault left the fault's onset waiting on the cooldown, and no root came).
 */
static void test_sample_after_unsaid_incident(void)
{
	struct sim s;
	struct an_comm *c = learned_comm(&s, 3);

	if (c && c->slow) {
		struct an_slow *sl = c->slow;
		struct slow_round rd = sl->r[(uint64_t)(sl->next - 1) % AN_HIST];
		uint64_t now = rd.t_end;

		/* no round's start known: the CPUs run ahead */
		sl->njudged = 64;
		sl->exact_bits = 0;
		CHECK(slow_runahead(sl));
		/* the incident whose sample named nobody ends */
		sl->ccld_unsaid = true;
		sl->samp_next = now + SAMPLE_COOLDOWN_NS;
		slow_ccld_event(s.an, c, &rd, 110, SL_EV_RECOVERY);
		CHECK_INT(s.nv, 0);		/* nothing was said: nothing recovers */
		/* a new onset at once waits ... */
		rd.t_end = now + 100 * MS;
		slow_ccld_event(s.an, c, &rd, 113, SL_EV_ONSET);
		CHECK(!c->sampling);
		slow_ccld_event(s.an, c, &rd, 116, SL_EV_RECOVERY);
		/* ... one 2 s later is sampled */
		rd.t_end = now + 2000 * MS;
		slow_ccld_event(s.an, c, &rd, 170, SL_EV_ONSET);
		CHECK(c->sampling);
		CHECK_INT(s.nsuspect_on, 1);
		CHECK_INT(s.nv, 0);		/* its verdict waits for the sample */
	}
	sim_fini(&s);
}

/*
 * A run-ahead comm's onset, its rounds 300 ms apart (a job slowed to a few
 * steps a second): at SAMPLE_NS its step sample has every send step it
 * wants but 2 rounds, too few to tell who arrives last (ARR_MIN_ROUNDS),
 * and no slow link: it holds on until 4 rounds ended (random job 297: a
 * group sample ended after 2 rounds, no verdict).  With ROUNDS false none
 * ends: it holds on to SAMPLE_MAX_NS, no longer.
 */
/*
 * C (learned_comm's) found to run ahead, and a step sample started on its
 * newest round: a CCL-D onset's (KIND PEND_ARRIVE) or a rise's (PEND_RISE).
 * Returns the sample's start.
 */
static uint64_t runahead_sample(struct sim *s, struct an_comm *c, int kind)
{
	struct an_slow *sl = c->slow;
	struct slow_round rd = sl->r[(uint64_t)(sl->next - 1) % AN_HIST];

	sl->njudged = 64;
	sl->exact_bits = 0;
	rd.t_end = s->now[0];
	if (kind == PEND_RISE)
		slow_start_sample(s->an, c, &rd, -1, PEND_RISE);
	else
		slow_ccld_event(s->an, c, &rd, 110, SL_EV_ONSET);
	CHECK(c->sampling);
	return sl->samp_t0;
}

static void sample_slow_rounds(bool rounds)
{
	const uint64_t fast[4] = { MS, MS, MS, MS }, zero[4] = { 0, 0, 0, 0 };
	struct sim s;
	struct an_comm *c = learned_comm(&s, 5);

	if (c && c->slow) {
		uint64_t op = 200, t0 = runahead_sample(&s, c, PEND_ARRIVE);
		int i;

		proxy_round(&s, op++, fast, true);
		for (i = 0; i < 4; i++) {
			if (rounds)
				round_busy(&s, s.now[0] + MS, zero, 300 * MS);
			else
				s.now[0] += 300 * MS;
			an_clock(s.an, s.host_id[0], s.now[0]);
			CHECK(s.now[0] - t0 > SAMPLE_NS || i == 0);
			/* the 4th round ends it */
			CHECK(c->sampling == !(rounds && i == 3));
		}
		s.now[0] = t0 + SAMPLE_MAX_NS + MS;
		an_clock(s.an, s.host_id[0], s.now[0]);
		CHECK(!c->sampling);
		CHECK_INT(s.nv, 0);	/* no arrival: nobody named */
	}
	sim_fini(&s);
}

/*
 * Step hooks take a few hundred ms to go in (random job 46: none of the
 * sampled comm's rounds had a step record until 0.4 s after its rise's
 * sample began).  Rounds that end before any step record of the sample
 * are not rounds the sample saw: 5 of them in its first 0.5 s, then the
 * send steps, and it holds on until 4 rounds ended with its hooks in.
 * Before, the 5 rounds counted, it ended on the steps' arrival, and the
 * rise's sample judged 2 rounds with arrivals: no verdict.  KIND is the
 * sample's: a CCL-D onset's or a rise's.
 */
static void sample_hooks_late(int kind)
{
	const uint64_t fast[4] = { MS, MS, MS, MS }, zero[4] = { 0, 0, 0, 0 };
	struct sim s;
	struct an_comm *c = learned_comm(&s, 5);

	if (c && c->slow) {
		uint64_t t0 = runahead_sample(&s, c, kind);
		int i;

		for (i = 0; i < 5; i++) {
			round_busy(&s, s.now[0] + MS, zero, 100 * MS);
			an_clock(s.an, s.host_id[0], s.now[0]);
		}
		CHECK(s.now[0] - t0 >= SAMPLE_NS);
		proxy_round(&s, 300, fast, true);
		an_clock(s.an, s.host_id[0], s.now[0]);
		CHECK(c->sampling);
		for (i = 0; i < 4; i++) {
			CHECK(c->sampling);
			round_busy(&s, s.now[0] + MS, zero, 100 * MS);
			an_clock(s.an, s.host_id[0], s.now[0]);
		}
		CHECK(!c->sampling);
	}
	sim_fini(&s);
}

static void test_sample_hooks_late_onset(void)
{
	sample_hooks_late(PEND_ARRIVE);
}

static void test_sample_hooks_late_rise(void)
{
	sample_hooks_late(PEND_RISE);
}

static void test_sample_holds_for_rounds(void)
{
	sample_slow_rounds(true);
}

static void test_sample_holds_to_max(void)
{
	sample_slow_rounds(false);
}

/*
 * A comm of 8 processes on one host, its CPUs running ahead: its onset's
 * verdict waits for a step sample, and 8 processes are more than may be
 * hooked at once (SAMPLE_MAX_LOCAL).  It is sampled 4 processes at a time:
 * ranks 0-3, then, as that part named nobody, ranks 4-7; the last part
 * naming nobody, the onset waits as before (random jobs 256 and 287: the
 * world comm of 8 and 16 processes on the VM, silent before).
 */
static void test_part_sample_wide_comm(void)
{
	const uint64_t W8 = W + 40;
	const uint64_t lat[8] = { MS, MS, MS, MS, MS, MS, MS, MS };
	uint64_t rng = 7, op = 1, late[8];
	struct an_comm *c;
	struct sim s;
	int i, r;

	sim_init_hosts(&s, 30, 300, 1, 8);
	sim_comm(&s, W8, 8, NULL);
	for (i = 0; i < 110; i++) {
		proxy_round_of(&s, W8, op++, lat, false);
		for (r = 0; r < 8; r++)
			late[r] = (uint64_t)(u01(&rng) * (double)(MS / 2));
		round_comm(&s, W8, s.now[0] + MS, late, 10 * MS);
	}
	c = an_comm_get(s.an, W8, 0, false);
	CHECK(c && c->slow);
	if (c && c->slow) {
		struct an_slow *sl = c->slow;
		struct slow_round rd = sl->r[(uint64_t)(sl->next - 1) % AN_HIST];

		rd.t_end = s.now[0];
		rd.host = s.host_id[0];
		sl->njudged = 64;
		sl->exact_bits = 0;
		CHECK(slow_runahead(sl));
		CHECK(slow_sample_refusal(s.an, c, rd.t_end) != NULL);
		slow_ccld_event(s.an, c, &rd, 110, SL_EV_ONSET);
		CHECK(c->sampling);
		CHECK_INT(s.nsuspect_on, 1);
		CHECK_INT((int)s.suspect_nprocs, 4);
		CHECK_INT(s.suspect_rank0, 0);
		CHECK_INT((int)sl->samp_nparts, 2);
		/* no step record: the part times out, the next one goes on */
		s.now[0] = rd.t_end + SAMPLE_MAX_NS + 100 * MS;
		an_clock(s.an, s.host_id[0], s.now[0]);
		CHECK(c->sampling);
		CHECK_INT(s.nsuspect_on, 2);
		CHECK_INT(s.nsuspect_off, 1);
		CHECK_INT((int)s.suspect_nprocs, 4);
		CHECK_INT(s.suspect_rank0, 4);
		CHECK_INT((int)sl->samp_part, 1);
		s.now[0] += SAMPLE_MAX_NS + 100 * MS;
		an_clock(s.an, s.host_id[0], s.now[0]);
		CHECK(!c->sampling);
		CHECK_INT(s.nsuspect_off, 2);
		CHECK(sl->samp_in == NULL);
		CHECK(sl->ccld_unsaid);
		CHECK_INT(s.nv, 0);
	}
	sim_fini(&s);
}

/*
 * The network part of a wide comm's rounds rises (8 processes on one host,
 * more than may be hooked at once), each rank last in turn so that CCL-D
 * stays quiet: its sample goes a part at a time, ranks 0-3 then 4-7, as
 * CCL-D's onset's does.  Before, the rise's sample was refused ("too many
 * of its processes on a host to hook") and nothing was said (random jobs
 * 32 and 133, the world comm of 8 on the VM: silent).  STEPS false: no step
 * record, each part times out with nobody named, and the rise cools down
 * with no verdict.  STEPS true: part 2's send steps, rank 5's 6 ms against
 * 1 ms: it is named S2 (random job 118: judged on its arrivals alone, part
 * 2 named rank 5's stage peer S1).
 */
static void rise_part_sample(bool steps)
{
	const uint64_t W8 = W + 41;
	const uint64_t lat[8] = { MS, MS, MS, MS, MS, 6 * MS, MS, MS };
	uint64_t rng = 11, op = 1, late[8];
	bool parts[2] = { false, false };
	struct an_comm *c = NULL;
	struct sim s;
	int i, r;

	sim_init_hosts(&s, 30, 300, 1, 8);
	sim_comm(&s, W8, 8, NULL);
	for (i = 0; i < 1200 && !s.nv; i++) {
		for (r = 0; r < 8; r++)
			late[r] = (uint64_t)(u01(&rng) * (double)(MS / 2)) +
				  (r == i % 8 ? 15 * MS : 0);
		/* the sim gives every rank's step records: only while part 2 runs */
		proxy_round_of(&s, W8, op++, lat,
			       steps && c && c->sampling && c->slow->samp_part == 1);
		round_comm(&s, W8, s.now[0] + MS, late, i < 150 ? 2 * MS : 6 * MS);
		an_clock(s.an, s.host_id[0], s.now[0]);
		c = c ? c : an_comm_get(s.an, W8, 0, false);
		if (c && c->sampling && c->slow && c->slow->samp_in && s.suspect_nprocs == 4) {
			CHECK_INT((int)c->slow->samp_nparts, 2);
			CHECK_INT(s.suspect_rank0, c->slow->samp_part ? 4 : 0);
			parts[c->slow->samp_part ? 1 : 0] = true;
		}
	}
	CHECK(parts[0]);
	CHECK(parts[1]);
	CHECK_INT(s.nv, steps);
	if (steps && s.nv) {
		CHECK_INT(s.v[0].cls, AN_S2);
		CHECK_STR(sim_culprits(&s.v[0]), "5");
		CHECK(strstr(s.v[0].text, "the network part of its rounds") != NULL);
	} else {
		CHECK(c && !c->sampling && c->slow && !c->slow->samp_in);
	}
	sim_fini(&s);
}

static void test_rise_part_sample(void)
{
	rise_part_sample(false);
}

static void test_rise_part_link(void)
{
	rise_part_sample(true);
}

/*
 * A step of one op whose network part (its rounds' shortest duration) is
 * 2 ms, then 6 ms, and three small ops whose rounds each have a rank whose
 * duration is 0: its end came with its earlier op's (one completion seen
 * for both), which bounds its GPU start.  Fed to the rise as network parts,
 * the newest 8 rounds were 6 zeros and 2 real ones, their median 0: no
 * rise ever (random job 133's world comm, every other round such: its
 * level jumped with the mix, and its rise said "back at 0.00 ms" in the
 * middle of the slowdown).  Those rounds measure nothing and are left out:
 * the rise is seen.
 */
static void test_rise_zero_rounds(void)
{
	double dur[4], bound[4], rate[4], after[4];
	uint64_t hold[4] = { 0 }, synced[4] = { 0 };
	struct slow_round rd = { .dur = dur, .dur_bound = bound, .rate = rate,
				 .after_hold = after, .hold = hold, .synced = synced };
	struct an_comm *c;
	struct sim s;
	int i, k, r;

	sim_init(&s, 30, 300);
	sim_comm(&s, W, 4, NULL);
	c = an_comm_get(s.an, W, 0, false);
	CHECK(c && slow_state(s.an, c));
	for (i = 0; c && c->slow && i < 300; i++) {
		for (k = 0; k < 4; k++) {
			for (r = 0; r < 4; r++) {
				dur[r] = k ? (r == i % 4 ? 0 : 5 * MS) :
					 r == i % 4 ? (i < 150 ? 2 * MS : 6 * MS) : 17 * MS;
				bound[r] = dur[r];
				rate[r] = after[r] = NAN;
			}
			rd.seq = 4 * i + k;
			rd.n = 4;
			rd.host = s.host_id[0];
			rd.t_end = s.now[0] + (uint64_t)(20 * MS * (double)i + k * 100000.0);
			rd.sig = 1 + (uint64_t)(k > 0);
			rd.sig_known = true;
			rd.fn = CCLD_FN_ALLREDUCE;
			slow_nohist_round(s.an, c, &rd, true);
		}
	}
	CHECK(c && c->slow && c->slow->rise_wait);
	sim_fini(&s);
}

/*
 * A lossy link slows the sends that cross it: rank 1 sends to rank 2, whose
 * link loses packets, and its steps are 3x the others'.  The network part
 * of the rounds rises (below CCL-D's threshold), and the rise's step sample
 * finds rank 1 the slowest sender; the kernel's retransmits put rank 2 at
 * the end of every link carrying them: rank 2 is the culprit, the sample's
 * sender cited as the link's echo (test_trace_tcp_loss in a fresh-clone CI
 * run: S2 named the sender, rank 0, while TCP named rank 2).  Without the
 * retransmits the sample's sender is named.
 */
/*
 * The rise's job: each rank last in turn, 15 ms after the others (the
 * network part a small share of the rounds, and no straggler), the
 * network part 2 ms, then 4 ms with rank 1's send steps 3x the others'.
 * TCP: retransmits name rank 2's link.  WAIT (NULL: no readings): the
 * share of the time each rank's proxy thread waits for a CPU, read every
 * round.  The first new verdict, or NULL.
 */
static const struct an_verdict *rise_job_of(struct sim *s, bool tcp, const double *wait,
					     bool slow_sender)
{
	const uint64_t fast[4] = { MS, MS, MS, MS }, slow[4] = { MS, 3 * MS, MS, MS };
	const struct an_verdict *v = NULL;
	uint64_t rng = 9, op = 1, last[5] = { 0 };
	struct an_comm *c;
	int i, r;

	sim_init(s, 30, 300);
	sim_comm(s, W, 4, NULL);
	c = an_comm_get(s->an, W, 0, false);
	last[0] = s->now[0];
	for (i = 0; i < 800 && !(v = first_new(s)); i++) {
		uint64_t late[4];

		for (r = 0; r < 4; r++)
			late[r] = (uint64_t)(u01(&rng) * (double)(MS / 2)) +
				  (r == i % 4 ? 15 * MS : 0);
		if (i == 150 && tcp) {
			retransmits(s, 101, 102, 40);
			retransmits(s, 102, 103, 25);
			retransmits(s, 103, 102, 5);
		}
		c = c ? c : an_comm_get(s->an, W, 0, false);
		proxy_round(s, op++, i < 150 || !slow_sender ? fast : slow, c && c->sampling);
		round_busy(s, s->now[0] + MS, late, i < 150 ? 2 * MS : 4 * MS);
		if (wait)
			sched_readings(s, wait, last);
		an_clock(s->an, s->host_id[0], s->now[0]);
	}
	return v;
}

static const struct an_verdict *rise_job(struct sim *s, bool tcp, const double *wait)
{
	return rise_job_of(s, tcp, wait, true);
}

/*
 * The same rise with no slow sender: the sample shows nothing (no sender
 * stands out, the last arrival in turn): no verdict, as before; with the
 * kernel's retransmits at rank 2's link, S2 naming rank 2 (a run of
 * test_trace_tcp_loss under tests/noise.py: no verdict before)
 */
static void test_rise_tcp_only(bool tcp)
{
	struct sim s;
	const struct an_verdict *v = rise_job_of(&s, tcp, NULL, false);

	CHECK((v != NULL) == tcp);
	if (v) {
		CHECK_INT(v->cls, AN_S2);
		CHECK_STR(sim_culprits(v), "2");
		CHECK(strstr(v->text, "the network part of its rounds") != NULL);
		CHECK(strstr(v->text, "no rank's sends stand out") != NULL);
		CHECK(strstr(v->text, "rank 2 is at one end of the connections with 70 of the"
			     " 70 TCP retransmits") != NULL);
		CHECK(sim_val(v, "tcp_rank") && sim_val(v, "tcp_rank")->i == 2);
		CHECK(!sim_val(v, "s2_rank"));
	}
	sim_fini(&s);
}

static void test_rise_tcp_end(bool tcp)
{
	struct sim s;
	const struct an_verdict *v = rise_job(&s, tcp, NULL);

	CHECK(v != NULL);
	if (v) {
		CHECK_INT(v->cls, AN_S2);
		CHECK_STR(sim_culprits(v), tcp ? "2" : "1");
		CHECK(strstr(v->text, "the network part of its rounds") != NULL);
		CHECK(strstr(v->text, "rank 1's send steps spend 3.00 ms") != NULL);
		CHECK((strstr(v->text, "rank 2 is at one end of the connections with 70 of the"
			      " 70 TCP retransmits") != NULL) == tcp);
		CHECK((strstr(v->text, "rank 1's slow sends are its echo") != NULL) == tcp);
		CHECK(sim_val(v, "s2_rank") && sim_val(v, "s2_rank")->i == 1);
	}
	sim_fini(&s);
}

/*
 * The same rise on a busy host: rank 1's proxy thread waited for a CPU
 * through 45% of the time, the others' 5%: its slow steps are the host's,
 * not its link's, and nothing names it (test_hang_nofalse barrier under
 * load: a false S2 at 0.30 ms a step against 0.15).  Where every proxy
 * thread waited alike, or rank 1's only 10%, the link is named as before.
 */
static void test_rise_starved(double wait1, double wait_others)
{
	const double wait[4] = { wait_others, wait1, wait_others, wait_others };
	bool starved = wait1 >= 0.2 && wait1 >= 2 * wait_others;
	struct sim s;
	const struct an_verdict *v = rise_job(&s, false, wait);

	CHECK((v != NULL) == !starved);
	if (v) {
		CHECK_INT(v->cls, AN_S2);
		CHECK_STR(sim_culprits(v), "1");
	}
	sim_fini(&s);
}

/*
 * The same for a rise of the network part whose sample named nobody: once
 * the rise fell back, the cooldown ends with it (the stand-in's GPU bundle
 * acceptance, a fresh-clone CI run: a rise 5 s before rank 1's 3x compute
 * took the sample, the fault's own rise then waited on the cooldown and no
 * S1 came); not while another unnamed incident of the comm is open.
 */
static void test_cooldown_after_unnamed_rise(void)
{
	struct sim s;
	struct an_comm *c = learned_comm(&s, 4);

	if (c && c->slow) {
		struct an_slow *sl = c->slow;
		uint64_t now = s.now[0];

		/* a rise still open: the cooldown holds */
		sl->samp_next = now + SAMPLE_COOLDOWN_NS;
		sl->rise_wait = true;
		slow_unnamed_ended(c, now);
		CHECK(sl->samp_next == now + SAMPLE_COOLDOWN_NS);
		/* none open: it ends SAMPLE_GAP_NS after */
		sl->rise_wait = false;
		slow_unnamed_ended(c, now);
		CHECK(sl->samp_next == now + SAMPLE_GAP_NS);
		/* a cooldown already shorter is kept */
		sl->samp_next = now + 10;
		slow_unnamed_ended(c, now);
		CHECK(sl->samp_next == now + 10);
	}
	sim_fini(&s);
}

/*
 * Random job 759 (healthy, moe, 8 ranks on this 2-core VM, attached mid
 * run): a comm's network part rose 13.6 -> 24.0 ms for 71 iterations, and
 * its sample, 4 rounds with every arrival, had rank 0 last in 2 of them:
 * 80% of the wait, 3.9 ms ahead.  A GPU slower at every step is last in
 * (nearly) every round; a rise a busy host makes has a last arriver by
 * chance.  Here rank 1 last in 2 of 4 rounds by 15 ms, ranks 2 and 3 in
 * one each by 4 ms: 79% of the wait, and no verdict (S1 naming rank 1
 * before).  ALL: rank 1 last in 4 of 4, named S1.
 */
static void test_rise_arrivals_share(bool all)
{
	struct sim s;
	struct an_comm *c = learned_comm(&s, 6);

	if (c && c->slow) {
		struct an_slow *sl = c->slow;
		const struct an_verdict *v;
		int k;

		runahead_sample(&s, c, PEND_RISE);
		sl->rise_wait = true;
		sl->rres.base_ns = 14 * MS;
		sl->rres.level_ns = 24 * MS;
		sl->arr_rounds = 4;
		for (k = 0; k < 4; k++)
			sl->arr_last[k] = 0, sl->arr_gap[k] = sl->arr_gmax[k] = 0;
		sl->arr_last[1] = all ? 4 : 2;
		sl->arr_gap[1] = (all ? 4 : 2) * 15 * (double)MS;
		sl->arr_gmax[1] = 15 * MS;
		for (k = 2; !all && k < 4; k++) {
			sl->arr_last[k] = 1;
			sl->arr_gap[k] = sl->arr_gmax[k] = 4 * MS;
		}
		slow_rise_sampled(s.an, c, s.now[0]);
		v = first_new(&s);
		CHECK((v != NULL) == all);
		if (v) {
			CHECK_INT(v->cls, AN_S1);
			CHECK_STR(sim_culprits(v), "1");
			CHECK(strstr(v->text, "the network part of its rounds") != NULL);
		}
	}
	sim_fini(&s);
}

/*
 * Hostile seqs (fuzz_an_wire, 2026-12-06): a rank whose next completed op
 * is 2^40 seqs past the rounds the comm holds.  The rounds in between can
 * never complete; each held one is judged or dropped, and the rest are
 * skipped at once (before: one step per seq, a hang).  Rounds are judged
 * again from the jump on.
 */
static void test_seq_jump(void)
{
	struct sim s;
	struct an_comm *c = learned_comm(&s, 5);
	struct sim_comm *sc = sim_find(&s, W);
	struct an_op op;
	int r;

	if (c && c->slow) {
		int64_t before = c->slow->next;

		sc->next[0] += 1LL << 40;
		op = sim_call(&s, W, 0, CCLD_FN_ALLREDUCE, 1024, 7);
		sim_complete(&s, &op);
		CHECK(c->slow->next == op.seq - AN_HIST + 1);
		CHECK(c->slow->next > before);
		for (r = 1; r < 4; r++)
			sc->next[r] = op.seq;
		for (r = 1; r < 4; r++) {
			op = sim_call(&s, W, r, CCLD_FN_ALLREDUCE, 1024, 7);
			sim_complete(&s, &op);
		}
		/* 7 rounds on, the skipped ones are dropped and the rest judged */
		for (r = 0; r < AN_HIST - 1; r++)
			sim_round(&s, W, CCLD_FN_ALLREDUCE, 1024, 7);
		CHECK(c->slow->next == op.seq + AN_HIST);
	}
	sim_fini(&s);
}

/*
 * A baseline learned on a busy host: each round's GPU part takes 4-34 ms,
 * heavy-tailed (4 + 30 u^3 ms: cv about 0.7, so CCL-D's threshold is R 4
 * or so).  From round 200 rank 2 arrives EXTRA late every round: 15 ms is
 * more than half of Tbase (about 12 ms) but R stays about 1, under that
 * threshold, so CCL-D never reports it, and the peer comparison names it
 * after the baseline (random job 457: a 3x slower GPU, silent).  3 ms late
 * costs less than CCL-D's floor (r_floor x Tbase): nothing, as with nobody
 * late.  Where CCL-D reports a straggler itself, the peer comparison does
 * not (test_s1_onset_recovery, test_min_duration).
 */
static void test_peer_after_noisy_baseline(uint64_t extra)
{
	const struct an_verdict *v;
	uint64_t rng = 31;
	struct sim s;
	int i, r;

	sim_init(&s, 30, 300);
	sim_comm(&s, W, 4, NULL);
	for (i = 0; i < 600; i++) {
		double u = u01(&rng);
		uint64_t late[4];

		for (r = 0; r < 4; r++)
			late[r] = (uint64_t)(u01(&rng) * (double)(MS / 2));
		if (i >= 200)
			late[2] += extra;
		round_busy(&s, s.now[0] + MS, late, (uint64_t)((4 + 30 * u * u * u) * (double)MS));
		if (i == 199) {
			const struct sl_base *b = sl_det_base(an_comm_get(s.an, W, 0, false)->slow->det);

			/* the premise: a learned baseline whose threshold is far above R 1 */
			CHECK(b->learned && b->thr > 3);
			CHECK_INT(s.nv, 0);
		}
	}
	if (extra < 10 * MS) {
		CHECK_INT(s.nv, 0);
	} else {
		CHECK_INT(count_kind(&s, AN_V_NEW, AN_S1), 1);
		v = first_new(&s);
		CHECK(v != NULL);
		if (v) {
			CHECK_INT(v->role, AN_ROOT);
			CHECK_STR(sim_culprits(v), "2");
			CHECK_STR(sim_val_s(v, "detector"), "peer");
			CHECK(sim_val(v, "after_baseline") && sim_val(v, "after_baseline")->i == 1);
		}
	}
	sim_fini(&s);
}

/*
 * Rank 2 named 20 ms late (no baseline yet, the peer comparison), then
 * late by 8 ms in every other round and on time in the others (a sample's
 * step hooks shrinking its gap, random job 106): still the straggler, no
 * recovery and no second verdict (late by under half its named gap, those
 * rounds were clean, and it recovered and was named again).  Then on time
 * in every round: back after 5 rounds, and not named again by the rounds
 * of the incident that just ended (the on-time rounds are ties, which
 * answer as the round before them: it was named again at once).
 */
static void test_peer_recovery_quarter(void)
{
	uint64_t rng = 43;
	struct sim s;
	int i;

	sim_init(&s, 30, 300);
	sim_comm(&s, W, 4, NULL);
	rounds(&s, &rng, 8, 2, 20 * MS);
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S1), 1);
	for (i = 0; i < 20; i++) {
		rounds(&s, &rng, 1, 2, 8 * MS);
		rounds(&s, &rng, 1, -1, 0);
	}
	CHECK_INT(count_kind(&s, AN_V_RECOVERED, AN_S1), 0);
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S1), 1);
	rounds(&s, &rng, 6, -1, 0);
	CHECK_INT(count_kind(&s, AN_V_RECOVERED, AN_S1), 1);
	CHECK_INT(count_kind(&s, AN_V_NEW, AN_S1), 1);
	sim_fini(&s);
}

int main(void)
{
	test_seq_jump();
	test_rise_tcp_end(true);
	test_rise_tcp_end(false);
	test_rise_tcp_only(true);
	test_rise_tcp_only(false);
	test_rise_starved(0.45, 0.05);
	test_rise_starved(0.45, 0.4);
	test_rise_starved(0.1, 0.0);
	test_cooldown_after_unnamed_rise();
	test_rise_arrivals_share(false);
	test_rise_arrivals_share(true);
	test_sample_holds_for_rounds();
	test_sample_holds_to_max();
	test_recovery_while_sampled();
	test_sample_after_unsaid_incident();
	test_part_sample_wide_comm();
	test_rise_part_sample();
	test_rise_part_link();
	test_sample_hooks_late_onset();
	test_sample_hooks_late_rise();
	test_rise_zero_rounds();
	test_comparable_echo();
	test_end_shared_with_later_op();
	test_fleet_sample_no_hooks();
	test_fleet_step_records_perturb();
	test_tcp_link();
	test_comparable_group();
	test_s1_onset_recovery();
	test_s2_step_sample(false, false);
	test_s2_step_sample(false, true);
	test_s2_step_sample(true, false);
	test_s2_no_steps();
	test_s1_border_sampled(4);
	test_no_update_before_sampled_onset();
	test_peer_held_by_synced_op();
	test_peer_held_by_long_op();
	test_comparable_group_sample(4, 5);
	test_comparable_group_sample(4, 1.3);
	test_comparable_group_sample(2, 5);
	test_comparable_group_sample(2, 1.8);
	test_comparable_group_stall();
	test_comparable_group_phase(1, MS);
	test_comparable_group_phase(3, 6 * MS);
	test_group_fast_mode_extra(false);
	test_group_fast_mode_extra(true);
	test_hostwide_noise(0, false);
	test_hostwide_noise(7, false);
	test_hostwide_noise(7, true);
	test_hostwide_noise(30, false);
	test_hostwide_not_cascades();
	test_shift_below_peers(false);
	test_shift_below_peers(true);
	test_split_noise(false);
	test_split_noise(true);
	test_split_tcp(false);
	test_split_tcp(true);
	test_peer_under_others_hooks(1, false);
	test_peer_under_others_hooks(2, false);
	test_peer_under_others_hooks(2, true);
	test_cascade_of_located_round();
	test_s1_border_sampled(2.5);
	test_s3_needs_typical_step(true, false);
	test_s3_needs_typical_step(false, false);
	test_s3_needs_typical_step(false, true);
	test_round_before_hooks();
	test_sample_waits_for_pending();
	test_alike_ops_iteration();
	test_peer_from_attach_two_comms();
	test_peer_decided_early();
	test_transient();
	test_min_duration();
	test_jitter_nofp();
	test_peer_recovery_quarter();
	test_peer_after_noisy_baseline(0);
	test_peer_after_noisy_baseline(3 * MS);
	test_peer_after_noisy_baseline(15 * MS);
	return check_finish("test_an_slow");
}
