// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Who the others wait for, from a step sample's arrivals
 * (slow_arrival_culprit), and whether a straggler's GPU was held by a
 * pipeline op it made late itself (slow_p2p_late).  Both came from random
 * job 35 (docs/simjob.md): 8 ranks, TP 1, PP 2, DP 4; rank 4's GPU 4.4x
 * slower; each DP comm does a reduce-scatter then an all-gather back to
 * back, after the pipeline send/recv with the other stage.
 */
#include <math.h>
#include "test_an_helpers.h"
#include "an_int.h"
#include "an_slow_int.h"

#define MS 1e6

/* a comm of 4 whose sample saw ROUNDS rounds, LAST[k] of them last */
static void arrivals(struct an_comm *c, struct an_slow *s, uint32_t rounds,
		     const uint32_t *last, const double *gap_ms)
{
	static uint32_t l[4], held[4], blk[4];
	static double g[4], gmax[4], blk_gap[4];
	static uint64_t holder[4], blk_holder[4];
	static struct blk_ent sort[4];
	int k;

	memset(c, 0, sizeof(*c));
	memset(s, 0, sizeof(*s));
	c->nranks = 4;
	c->slow = s;
	s->arr_rounds = rounds;
	s->arr_last = l;
	s->arr_gap = g;
	s->arr_gmax = gmax;
	s->arr_held = held;
	s->arr_holder = holder;
	s->arr_blk = blk;
	s->arr_blk_gap = blk_gap;
	s->arr_blk_holder = blk_holder;
	s->blk_sort = sort;
	for (k = 0; k < 4; k++) {
		blk[k] = 0;
		blk_gap[k] = 0;
		blk_holder[k] = 0;
		l[k] = last[k];
		g[k] = gap_ms[k] * MS;
		gmax[k] = 0;	/* not known: no trim (arrivals_gmax) */
		held[k] = 0;
		holder[k] = 0;
	}
}

/* ... with each rank's largest wait GMAX_MS[k] */
static void arrivals_gmax(struct an_comm *c, struct an_slow *s, uint32_t rounds,
			  const uint32_t *last, const double *gap_ms, const double *gmax_ms)
{
	int k;

	arrivals(c, s, rounds, last, gap_ms);
	for (k = 0; k < 4; k++)
		s->arr_gmax[k] = gmax_ms[k] * MS;
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

/*
 * test_slow_scenarios ptgpuslow's false root before its fault (a fresh-clone
 * CI run, docs/numbers.md): rank 2's TP comm (CPUs queue ahead of the GPUs,
 * rounds of 11 ms) had 3 rounds of 18-30 ms, CCL-D's onset with
 * --slow-min-s 0; its step sample then saw rounds back to 11 ms, in which
 * rank 2 arrived last in 7 of 12 by 2.2 ms: a quarter of the onset's
 * 8 ms extra, and it was named.  Rounds SAMPLED_MS long (by the starts
 * known without hooks), NITER iterations of one round each.
 */
/*
 * The sample of NITER iterations: rounds of SAMPLED_MS by the starts known
 * without hooks, 25 ms from iteration SLOW_FROM on; returns the first the
 * sample turned at (slow_sample_turned), -1
 */
static int hiccup_sample(struct an_comm *c, struct an_slow *s, double sampled_ms, int niter,
			 int slow_from)
{
	int turned = -1;

	static const uint32_t none[4];
	static const double nogap[4];
	double dur[4], bound[4], after[4];
	uint64_t hold[4] = { 0 };
	struct slow_round rd;
	struct sl_config cfg;
	struct sl_round in;
	int i, k, ev = 0;

	arrivals(c, s, 0, none, nogap);
	sl_config_default(&cfg);
	cfg.min_ns = 0;				/* --slow-min-s 0 */
	s->det = sl_det_new(&cfg, 4);
	CHECK(s->det != NULL);
	if (!s->det)
		return -1;
	in.dur_ns = dur;
	in.rate = NULL;
	in.sig = 7;
	in.unjudged_ns = 0;
	/* 100 rounds of 10.5-11.5 ms learn the baseline, 3 of 25 ms open it */
	for (i = 0; i < 103; i++) {
		for (k = 0; k < 4; k++)
			dur[k] = (i < 100 ? 10.5 + (i + k) % 3 * 0.5 : 25.0 - k) * MS;
		in.iter = i;
		in.t_ns = (uint64_t)(i + 1) * 30 * (uint64_t)MS;
		ev |= sl_det_round(s->det, &in);
	}
	CHECK(ev & SL_EV_ONSET);
	/* the sample: rank 2 last in 7 of 12 rounds by 2.2 ms, the others by 1 */
	s->samp_iter = -1;
	s->njudged = 64;			/* no start known: CPUs run ahead */
	memset(&rd, 0, sizeof(rd));
	rd.sig = 7;
	rd.narr = 4;
	rd.dur = dur;
	rd.dur_bound = bound;
	rd.hold = hold;
	rd.after_hold = after;
	for (i = 0; i < niter; i++) {
		int last = i < 7 ? 2 : i % 2;

		for (k = 0; k < 4; k++) {
			dur[k] = (k == last ? 1.0 : (last == 2 ? 3.2 : 2.0)) * MS;
			bound[k] = ((i < slow_from ? sampled_ms : 25.0) - (k == last ? 0 : 0.2)) * MS;
			after[k] = NAN;
		}
		if (turned < 0 && slow_sample_turned(s, &rd, 103 + i, 3))
			turned = i;
		slow_sampled_round(c, &rd, 103 + i);
	}
	return turned;
}

static void test_sample_after_hiccup(void)
{
	struct an_comm c;
	struct an_slow s;
	int32_t rank;
	double a, b;
	uint64_t held;

	/* rounds back to normal: the arrivals name rank 2, but the slowdown is over */
	CHECK_INT(hiccup_sample(&c, &s, 11.0, 12, 12), -1);
	CHECK_INT(s.samp_iters, 12);
	CHECK_INT(s.samp_slow_iters, 0);
	CHECK_INT(slow_sample_decide(&c, 8 * MS, &rank, &a, &b, &held), AN_S1);
	CHECK_INT(rank, 2);
	CHECK(slow_sample_over(&s, 3));
	sl_det_free(s.det);
	/* still slow in the sample: its arrivals speak */
	CHECK_INT(hiccup_sample(&c, &s, 25.0, 12, 12), -1);
	CHECK_INT(s.samp_slow_iters, 12);
	CHECK(!slow_sample_over(&s, 3));
	sl_det_free(s.det);
	/* too few iterations to tell */
	CHECK_INT(hiccup_sample(&c, &s, 11.0, 2, 2), -1);
	CHECK(!slow_sample_over(&s, 3));
	sl_det_free(s.det);
}

/*
 * A sample that ran on into another slowdown (test_attach_midrun
 * ptcompute's CI failure: a 3-iteration hiccup 0.38 s before the fault,
 * whose sample found the fault): clean iterations, then slow ones
 */
static void test_sample_turns_slow(void)
{
	struct an_comm c;
	struct an_slow s;

	/* 8 clean iterations, slow from the 9th: the sample is about that one */
	CHECK_INT(hiccup_sample(&c, &s, 11.0, 12, 8), 8);
	sl_det_free(s.det);
	/* 2 clean ones are not the end of the first slowdown (CCL-D needs 3) */
	CHECK_INT(hiccup_sample(&c, &s, 11.0, 12, 2), -1);
	CHECK_INT(s.samp_slow_iters, 10);
	sl_det_free(s.det);
	/* exactly 3: it was over */
	CHECK_INT(hiccup_sample(&c, &s, 11.0, 12, 3), 3);
	sl_det_free(s.det);
}

/*
 * Random job 87 (PyTorch pattern, rank 1's compute 5.3x slower): its TP
 * comm's rounds grew on both ranks (16.1 and 14.4 ms against 5.5: P 0.16,
 * the network by CCL-D), but the sample's links were alike (0.95 and 0.86
 * ms per step) and rank 1's GPU reached the op last in 16 of 16 rounds,
 * 10.7 ms ahead: it explains the extra, computation.  A lead under a
 * quarter of the extra explains nothing.
 */
static void test_arrivals_explain(void)
{
	const uint32_t last[4] = { 0, 16, 0, 0 };
	const double gap[4] = { 0, 16 * 10.7, 0, 0 };
	struct an_comm c;
	struct an_slow s;
	double share, lead;

	arrivals(&c, &s, 16, last, gap);
	CHECK_INT(slow_arrival_explains(&c, 16.1 * MS - 5.5 * MS, &share, &lead, NULL), 1);
	CHECK(share > 0.99);
	CHECK(lead > 10.6 * MS && lead < 10.8 * MS);
	CHECK_INT(slow_arrival_explains(&c, 50 * MS, &share, &lead, NULL), -1);
	/* no extra known: the arrivals alone */
	CHECK_INT(slow_arrival_explains(&c, NAN, &share, &lead, NULL), 1);
}

/*
 * Random job 87 before its fault (a busy host; a TP comm of 2, sampled as
 * slower than its comparable comms): rank 0 last in 4 of 8 rounds by 3.33,
 * 18.29, 3.78 and 7.67 ms, rank 1 in 4 by 1.77, 4.41, 2.46 and 1.91: 76%
 * of the wait, rank 0 was named S1.  Without each rank's largest wait (a
 * moment a process was descheduled) 71%: no one.  Job 35's straggler,
 * 27 ms late in each of its 10 rounds, keeps its 99%.
 */
static void test_one_descheduled_round(void)
{
	const uint32_t last87[4] = { 4, 4, 0, 0 }, last35[4] = { 11, 2, 3, 4 };
	const double gap87[4] = { 3.33 + 18.29 + 3.78 + 7.67, 1.77 + 4.41 + 2.46 + 1.91, 0, 0 };
	const double gmax87[4] = { 18.29, 4.41, 0, 0 };
	const double gap35[4] = { 10 * 27 + 0.01, 0.02, 0.03, 0.04 };
	const double gmax35[4] = { 27, 0.01, 0.01, 0.01 };
	struct an_comm c;
	struct an_slow s;
	double share, lead;
	uint64_t held;

	arrivals(&c, &s, 8, last87, gap87);
	c.nranks = 2;
	CHECK_INT(slow_arrival_culprit(&c, &share, &lead, &held), 0);	/* untrimmed: named */
	arrivals_gmax(&c, &s, 8, last87, gap87, gmax87);
	c.nranks = 2;
	CHECK_INT(slow_arrival_culprit(&c, &share, &lead, &held), -1);
	arrivals_gmax(&c, &s, 20, last35, gap35, gmax35);
	CHECK_INT(slow_arrival_culprit(&c, &share, &lead, &held), 0);
	CHECK(share > 0.99);
}

/*
 * Random job 234 (4 ranks, rank 2's link 7.6x slower, attached late, CPUs
 * ahead of their GPUs): its world comm's survey saw rank 2's send steps
 * at 12.08 ms (typical 11.25) against 2.79-3.08 (1.69-1.95), a round
 * every 33.91 ms, and no rank arriving last by a quarter of that: a slow
 * link (S2).  Alike links, a link slow in its mean alone (a proxy thread
 * descheduled once) and one whose cost is under a tenth of the interval
 * are not.
 */
static void link_sample(struct an_comm *c, struct an_slow *s, const double *lat_ms,
			const double *typ_ms, double steps_per_round)
{
	static const uint32_t none[4];
	static const double nogap[4];
	static struct an_rank r[4];
	static double net0[12], srate[4], slat[4], styp[4];
	int k;

	arrivals(c, s, 21, none, nogap);
	c->r = r;
	s->net0 = net0;
	s->srate = srate;
	s->slat = slat;
	s->styp = styp;
	s->have_srate = true;
	s->samp_rounds = 29;
	for (k = 0; k < 4; k++) {
		memset(&r[k], 0, sizeof(r[k]));
		net0[3 * k + 2] = 100;
		r[k].net_steps = 100 + (uint64_t)(steps_per_round * 29);
		slat[k] = lat_ms[k] * MS;
		styp[k] = typ_ms[k] * MS;
		srate[k] = 1e9 / slat[k];	/* bytes per s: a step of 1 byte */
	}
}

static void test_survey_slow_link(void)
{
	const double lat[4] = { 3.08, 2.79, 12.08, 2.97 }, typ[4] = { 1.95, 1.69, 11.25, 1.75 };
	const double alike[4] = { 3.08, 2.79, 3.3, 2.97 }, hic_typ[4] = { 1.95, 1.69, 2.1, 1.75 };
	struct an_comm c;
	struct an_slow s;
	double l, m;

	link_sample(&c, &s, lat, typ, 1);
	CHECK_INT(slow_survey_link(&c, 33.91 * MS, &l, &m), 2);
	CHECK(fabs(l / MS - 12.08) < 1e-6 && fabs(m / MS - 2.97) < 1e-6);
	/* its 9.1 ms per round is under a tenth of a 100 ms interval: no */
	CHECK_INT(slow_survey_link(&c, 100 * MS, &l, &m), -1);
	/* ... but two steps per round are more */
	link_sample(&c, &s, lat, typ, 2);
	CHECK_INT(slow_survey_link(&c, 100 * MS, &l, &m), 2);
	link_sample(&c, &s, alike, alike, 2);
	CHECK_INT(slow_survey_link(&c, 33.91 * MS, &l, &m), -1);
	/* its mean slow, its typical step not: a descheduled proxy thread */
	link_sample(&c, &s, lat, hic_typ, 2);
	CHECK_INT(slow_survey_link(&c, 33.91 * MS, &l, &m), -1);
	/* no interval known */
	link_sample(&c, &s, lat, typ, 2);
	CHECK_INT(slow_survey_link(&c, NAN, &l, &m), -1);
}

/*
 * Random job 87 (PyTorch, rank 1's GPU 5.3x slower): its TP comm, slower
 * than its comparable comms by 11.9 ms a round, was sampled: rank 1's send
 * steps 4.3 ms against 1.9 (typical 3.1 against 1.2, its busy process's
 * proxy thread), and rank 1's GPU last in 8 of 8 rounds by 13.7 ms.  Its
 * lateness explains the extra: S1, not S2.  Where it arrives last by a
 * quarter of the extra only, or another rank does, its link speaks.
 */
static void test_link_and_lead_same_rank(void)
{
	const double lat[4] = { 1.9, 4.3, 1.9, 1.9 }, typ[4] = { 1.15, 3.12, 1.15, 1.15 };
	struct an_comm c;
	struct an_slow s;
	int32_t rank;
	double a, b;
	uint64_t held;

	link_sample(&c, &s, lat, typ, 8);
	s.arr_rounds = 8;
	s.arr_last[1] = 8;
	s.arr_gap[1] = 8 * 13.7 * MS;
	CHECK_INT(slow_sample_decide(&c, 11.9 * MS, &rank, &a, &b, &held), AN_S1);
	CHECK_INT(rank, 1);
	CHECK(fabs(b / MS - 13.7) < 1e-6);
	/* its GPU came late from another comm's op in most rounds: that op's */
	s.arr_held[1] = 8;
	s.arr_holder[1] = 77;
	CHECK_INT(slow_sample_decide(&c, 11.9 * MS, &rank, &a, &b, &held), AN_S2);
	s.arr_held[1] = 0;
	s.arr_holder[1] = 0;
	s.arr_gap[1] = 8 * 3.5 * MS;
	CHECK_INT(slow_sample_decide(&c, 11.9 * MS, &rank, &a, &b, &held), AN_S2);
	CHECK_INT(rank, 1);
	s.arr_last[1] = 0;
	s.arr_gap[1] = 0;
	s.arr_last[2] = 8;
	s.arr_gap[2] = 8 * 13.7 * MS;
	CHECK_INT(slow_sample_decide(&c, 11.9 * MS, &rank, &a, &b, &held), AN_S2);
	CHECK_INT(rank, 1);
}

static double dur8[8];
static uint64_t hold8[8];

/* a comm of 8 with empty block counters, RD a round of it (dur8, hold8) */
static void block_setup(struct an_comm *c, struct an_slow *s, struct slow_round *rd)
{
	static uint32_t blk[8];
	static double blk_gap[8];
	static uint64_t blk_holder[8];
	static struct blk_ent sort[8];

	memset(c, 0, sizeof(*c));
	memset(s, 0, sizeof(*s));
	memset(rd, 0, sizeof(*rd));
	memset(blk, 0, sizeof(blk));
	memset(blk_gap, 0, sizeof(blk_gap));
	memset(blk_holder, 0, sizeof(blk_holder));
	c->nranks = 8;
	c->slow = s;
	s->arr_blk = blk;
	s->arr_blk_gap = blk_gap;
	s->arr_blk_holder = blk_holder;
	s->blk_sort = sort;
	rd->dur = dur8;
	rd->hold = hold8;
}

/* a comm of 8 whose sample saw ROUNDS rounds, LATE(round, rank) ms behind the first */
static void block_sample(struct an_comm *c, struct an_slow *s, uint32_t rounds,
			 double (*late)(uint32_t, int32_t))
{
	double *dur = dur8;
	uint64_t *hold = hold8;
	struct slow_round rd;
	uint32_t i;
	int32_t k;

	block_setup(c, s, &rd);
	for (i = 0; i < rounds; i++) {
		for (k = 0; k < 8; k++) {
			dur[k] = (40 - late(i, k)) * MS;	/* one end, 40 ms after the first */
			hold[k] = k >= 4 ? 0x4360 : 0x1961;
		}
		slow_note_block(s, &rd, 8);
	}
}

/* jitter of +-0.3 ms, the same for every run */
static double jitter(uint32_t i, int32_t k)
{
	return ((int)((i * 5 + (uint32_t)k * 3) % 7) - 3) * 0.1;
}

/*
 * Random job 32 (PyTorch pattern, PP 2 x DP 4, hosts of 4; global rank 6's
 * compute 3.6x slower): stage 1's DP comm of 4 is on one host, its ranks
 * wait for rank 6 there and leave together; the world comm's sample saw
 * ranks 4-7 reach its ops last together, 5 ms after the others, in 29 of
 * 29 rounds, none of them last by much (last 6, 8, 10, 5 times)
 */
static double node_late(uint32_t i, int32_t k)
{
	return (k >= 4 ? 5.0 : 0) + jitter(i, k);
}

static double all_together(uint32_t i, int32_t k)
{
	return jitter(i, k);
}

/* the late half changes every round: no one block */
static double halves_alternate(uint32_t i, int32_t k)
{
	return ((k >= 4) == (i % 2) ? 5.0 : 0) + jitter(i, k);
}

/* rank 0 early, the other 7 late: more than half is the first being early */
static double one_early(uint32_t i, int32_t k)
{
	return (k ? 5.0 : 0) + jitter(i, k);
}

/* one rank last: the straggler rule's, not a block */
static double one_late(uint32_t i, int32_t k)
{
	return (k == 6 ? 5.0 : 0) + jitter(i, k);
}

static void test_block_of_node(void)
{
	struct an_comm c;
	struct an_slow s;
	double lead;
	int32_t k;

	block_sample(&c, &s, 29, node_late);
	CHECK_INT(s.blk_rounds, 29);
	CHECK_INT(slow_arrival_block(&c, 8.05 * MS - 3.24 * MS, &lead), 4);
	for (k = 0; k < 8; k++)
		CHECK_INT(slow_in_block(&s, k), k >= 4);
	CHECK(lead > 4.3 * MS && lead < 5.7 * MS);
	/* a lead under a quarter of the extra explains nothing */
	CHECK_INT(slow_arrival_block(&c, 40 * MS, &lead), 0);
	/* too few rounds */
	block_sample(&c, &s, 3, node_late);
	CHECK_INT(slow_arrival_block(&c, 4.8 * MS, &lead), 0);
}

static void test_block_not(void)
{
	struct an_comm c;
	struct an_slow s;
	double lead;

	block_sample(&c, &s, 29, all_together);
	CHECK_INT(slow_arrival_block(&c, 1 * MS, &lead), 0);
	block_sample(&c, &s, 29, halves_alternate);
	CHECK_INT(slow_arrival_block(&c, 4.8 * MS, &lead), 0);
	block_sample(&c, &s, 29, one_early);
	CHECK_INT(slow_arrival_block(&c, 4.8 * MS, &lead), 0);
	block_sample(&c, &s, 29, one_late);
	CHECK_INT(slow_arrival_block(&c, 4.8 * MS, &lead), 0);
}

/*
 * A comm of 8 sampled in 2 parts of 4 (ranks 0-3, then 4-7), ROUNDS rounds
 * each, rank k waiting WAIT(k) ms in every round (+-0.3 ms), each part's
 * iterations SLOW of 8 slow; the last part is over
 */
static void parts_sample(struct an_comm *c, struct an_slow *s, uint32_t rounds,
			 double (*wait)(int32_t), const uint32_t slow[2])
{
	static double part_wait[8], dur[8];
	static uint32_t part_waitn[8];
	static bool part_blk[8], in[8];
	static struct blk_ent sort[8];
	struct slow_round rd;
	uint32_t part, i;
	int32_t k;

	memset(c, 0, sizeof(*c));
	memset(s, 0, sizeof(*s));
	memset(&rd, 0, sizeof(rd));
	c->nranks = 8;
	c->slow = s;
	s->part_wait = part_wait;
	s->part_waitn = part_waitn;
	s->part_blk = part_blk;
	s->blk_sort = sort;
	s->samp_in = in;
	s->samp_nparts = 2;
	rd.dur = dur;
	slow_parts_reset(s, 8);
	for (part = 0; part < 2; part++) {
		s->samp_part = part;
		for (k = 0; k < 8; k++)
			in[k] = (uint32_t)k / 4 == part;
		for (i = 0; i < rounds; i++) {
			for (k = 0; k < 8; k++)
				dur[k] = in[k] ? (wait(k) + jitter(i, k)) * MS : NAN;
			slow_note_part_waits(s, &rd, 8);
		}
		s->samp_iters = 8;
		s->samp_slow_iters = slow[part];
		slow_part_done(s);
	}
}

/*
 * Random job 61 (PyTorch pattern, TP 4 x PP 2, hosts of 4; global rank 0's
 * compute 4.9x slower from mid run), its world comm of 8 on one VM sampled
 * 4 processes at a time: part 1's ranks 0-3 (rank 0's TP group, which
 * waits for it and leaves its TP op together) waited 0.6-1.2 ms in the
 * world op, part 2's ranks 4-7 about 31 ms, the rounds 28 ms longer than
 * the baseline.  Neither part alone names anyone.
 */
static double tp_group_late(int32_t k)
{
	return k < 4 ? 1.0 : 31.0;
}

/*
 * Random job 121 (rank 0's link 5.9x slower, the world comm of 8 in 2
 * parts): ranks 0-3 waited 15.8 ms at most, 4-7 32.3 ms at least, the
 * extra 33 ms; the last to arrive wait for the slow transfers too
 */
static double net_slow_half(int32_t k)
{
	return k < 4 ? 14.0 : 33.0;
}

static double all_wait(int32_t k)
{
	return 3.0 + 0.2 * k;
}

static double one_waits_little(int32_t k)
{
	return k == 5 ? 1.0 : 31.0;
}

static double most_wait_little(int32_t k)
{
	return k < 6 ? 1.0 : 31.0;
}

static void test_block_across_parts(void)
{
	const uint32_t slow[2] = { 7, 8 }, ended[2] = { 7, 0 };
	struct an_comm c;
	struct an_slow s;
	double lead;
	int32_t k;

	parts_sample(&c, &s, 6, tp_group_late, slow);
	CHECK_INT(slow_parts_block(&c, 28.1 * MS, &lead), 4);
	CHECK(s.blk_parts);
	for (k = 0; k < 8; k++)
		CHECK_INT(slow_in_block(&s, k), k < 4);
	CHECK(lead > 29 * MS && lead < 31 * MS);
	/* the slowdown over while part 2 ran: its ranks wait little too */
	parts_sample(&c, &s, 6, tp_group_late, ended);
	CHECK_INT(slow_parts_block(&c, 28.1 * MS, &lead), 0);
	/* a part not sampled yet */
	parts_sample(&c, &s, 6, tp_group_late, slow);
	s.samp_part = 0;
	CHECK_INT(slow_parts_block(&c, 28.1 * MS, &lead), 0);
	/* too few rounds with every hooked arrival */
	parts_sample(&c, &s, 3, tp_group_late, slow);
	CHECK_INT(slow_parts_block(&c, 28.1 * MS, &lead), 0);
	/* the lead under a quarter of the extra */
	parts_sample(&c, &s, 6, tp_group_late, slow);
	CHECK_INT(slow_parts_block(&c, 150 * MS, &lead), 0);
	/* the block itself waits a quarter of the extra or more: the network's */
	parts_sample(&c, &s, 6, net_slow_half, slow);
	CHECK_INT(slow_parts_block(&c, 33 * MS, &lead), 0);
	/* every rank waits about as long: nobody */
	parts_sample(&c, &s, 6, all_wait, slow);
	CHECK_INT(slow_parts_block(&c, 28.1 * MS, &lead), 0);
	/* one rank (the straggler rule's) or more than half: no block */
	parts_sample(&c, &s, 6, one_waits_little, slow);
	CHECK_INT(slow_parts_block(&c, 28.1 * MS, &lead), 0);
	parts_sample(&c, &s, 6, most_wait_little, slow);
	CHECK_INT(slow_parts_block(&c, 28.1 * MS, &lead), 0);
}

/*
 * Random job 180 (MoE, PP 4 x DP 2; global rank 4's compute slower): the
 * world comm of 8 sampled 4 processes at a time, part 1's ranks 2-3 (the
 * stage before rank 4's, which waits for its gradients) reached the op
 * last together, LEAD ms after ranks 0-1, in 12 of 12 rounds: named as
 * the block, a wrong verdict.  They themselves waited BLOCK_WAIT ms in the
 * op: the op ended that long after they came, waiting for ranks outside
 * the part.  A part's block must be the last of the whole op as the
 * parts' block is: each of it waits under a quarter of the extra (EXTRA
 * ms) and under a quarter of what the part's other ranks wait, else the
 * next part is sampled.
 */
static void part_block(double block_wait, double lead, double extra, uint32_t expect)
{
	static uint32_t part_waitn[8];
	static double part_wait[8];
	static bool in[8];
	double *dur = dur8;
	struct an_comm c;
	struct an_slow s;
	struct slow_round rd;
	double got_lead;
	uint32_t i;
	int32_t k;

	block_setup(&c, &s, &rd);
	s.part_wait = part_wait;
	s.part_waitn = part_waitn;
	s.samp_in = in;
	s.samp_nparts = 2;
	slow_parts_reset(&s, 8);
	for (k = 0; k < 8; k++)
		in[k] = k < 4;
	for (i = 0; i < 12; i++) {
		for (k = 0; k < 8; k++)
			dur[k] = k >= 4 ? NAN : ((k < 2 ? block_wait + lead : block_wait) +
						 jitter(i, k)) * MS;
		slow_note_block(&s, &rd, 8);
		slow_note_part_waits(&s, &rd, 8);
	}
	CHECK_INT(slow_arrival_block(&c, extra * MS, &got_lead), expect);
}

static void test_part_block_waits(void)
{
	/* the first run: 8.4 ms, a third of the extra */
	part_block(8.4, 12, 25.6, 0);
	/* a later one: 7.8 ms, a fifth of the extra, a third of ranks 0-1's wait */
	part_block(7.8, 16.2, 40, 0);
	/* the block last in the whole op: it waits the op's own time */
	part_block(1.0, 12, 25.6, 2);
	part_block(1.0, 16.2, 40, 2);
}

/*
 * The stand-in's GPU acceptance, rank 1's compute 3x for 8 s (2 ranks, the
 * CPUs ahead of their GPUs): the onset's sample saw rank 1's GPU last in
 * 67 of 72 rounds, 95% of the wait, 2.53 ms ahead, against rounds 12.33 ms
 * longer, which run from the calls and count the step's queued GPU work:
 * under a quarter of that extra, nobody was named.  Weighed against the
 * interval between rounds as a survey does (4.5 ms): rank 1.
 */
static void test_runahead_lead(void)
{
	const uint32_t last[4] = { 5, 67, 0, 0 };
	const double gap[4] = { 8.92, 67 * 2.53, 0, 0 };
	struct an_comm c;
	struct an_slow s;
	double share, lead;
	int32_t rank;

	arrivals(&c, &s, 72, last, gap);
	c.nranks = 2;
	CHECK_INT(slow_arrival_explains(&c, 12.33 * MS, &share, &lead, NULL), -1);
	rank = slow_arrival_culprit(&c, &share, &lead, NULL);
	CHECK_INT(rank, 1);
	CHECK(share > 0.94 && share < 0.96);
	CHECK(slow_survey_names(&c, rank, lead, 4.5 * MS));
	/* a lead under a quarter of the interval */
	CHECK(!slow_survey_names(&c, rank, lead, 12 * MS));
	/* no interval known */
	CHECK(!slow_survey_names(&c, rank, lead, NAN));
	/* too few rounds for 2 ranks (chance makes one last in 3/4 of 45) */
	s.arr_rounds = 45;
	CHECK(!slow_survey_names(&c, rank, lead, 4.5 * MS));
	/* last in 50 of 72: under 3/4 */
	s.arr_rounds = 72;
	s.arr_last[1] = 50;
	CHECK(!slow_survey_names(&c, rank, lead, 4.5 * MS));
	/* under 1 ms ahead */
	s.arr_last[1] = 67;
	CHECK(!slow_survey_names(&c, rank, 0.9 * MS, 2 * MS));
}

int main(void)
{
	test_back_to_back_ops();
	test_one_hiccup();
	test_no_straggler();
	test_p2p_late();
	test_sample_after_hiccup();
	test_sample_turns_slow();
	test_arrivals_explain();
	test_survey_slow_link();
	test_one_descheduled_round();
	test_runahead_lead();
	test_link_and_lead_same_rank();
	test_block_of_node();
	test_block_not();
	test_block_across_parts();
	test_part_block_waits();
	return check_finish("test_slow_arrival");
}
