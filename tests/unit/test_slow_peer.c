// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Peer comparison (a persistent straggler with no history) and the network
 * part of rounds (last arrival to completion) against its own level
 * (analyzer/slow_peer.c).
 */
#include <math.h>
#include <stdlib.h>
#include "check.h"
#include "slow.h"
#include "splitmix.h"

#define MS 1000000.0

static struct sl_peer *peer_new(uint32_t nranks, uint64_t min_ns)
{
	struct sl_peer_config c;

	sl_peer_default(&c);
	c.min_ns = min_ns;
	return sl_peer_new(&c, nranks);
}

/*
 * Rounds of a 4-rank comm every 500 ms: everyone's duration is the network
 * part (2 ms) plus the wait for the last arriver; rank LAST arrives GAP ms
 * after the others (jitter +-J ms on each arrival).
 */
static void round_durs(uint64_t *s, int last, double gap, double jit, double *dur)
{
	double arr[4], t_last = 0;
	int k;

	for (k = 0; k < 4; k++) {
		arr[k] = jit * (u01(s) - 0.5) + (k == last ? gap : 0);
		if (arr[k] > t_last)
			t_last = arr[k];
	}
	for (k = 0; k < 4; k++)
		dur[k] = (t_last - arr[k] + 2) * MS;
}

/*
 * A healthy round of a 2-rank comm: both arrive at random within SPREAD ms,
 * then the network part NET ms
 */
static void pair_durs(uint64_t *s, double spread, double net, double *dur)
{
	double a = spread * u01(s), b = spread * u01(s);
	double t_last = a > b ? a : b;

	dur[0] = (t_last - a + net) * MS;
	dur[1] = (t_last - b + net) * MS;
}

/* a straggler 200 ms late every 500 ms step: named once 2 s and 3 iterations passed */
static void test_straggler_named(void)
{
	struct sl_peer *p = peer_new(4, 2000000000ull);
	struct sl_peer_result res;
	uint64_t s = 7;
	double dur[4];
	int i, at = -1;

	CHECK(p != NULL);
	if (!p)
		return;
	for (i = 0; i < 20 && at < 0; i++) {
		round_durs(&s, 2, 200, 4, dur);
		if (sl_peer_round(p, dur, (uint64_t)(i + 1) * 500000000ull, i, &res))
			at = i;
	}
	/* 2 s of wall time spans 5 rounds (4 intervals) */
	CHECK_INT(at, 4);
	CHECK_INT(res.rank, 2);
	CHECK_INT(res.rounds, 5);
	CHECK_INT(res.last, 5);
	CHECK(fabs(res.lost_ns / MS - 5 * 200) < 5 * 4);
	CHECK(fabs(res.gap_ns / MS - 200) < 4);
	sl_peer_free(p);
}

/*
 * Random last arrivers (healthy jitter, +-5% of 300 ms steps; then +-15%
 * with no minimum wall time): never a straggler
 */
static void test_healthy_jitter(void)
{
	struct sl_peer *p = peer_new(4, 2000000000ull), *q = peer_new(4, 0);
	struct sl_peer_result res;
	uint64_t s = 11;
	double dur[4];
	int i, named = 0;

	for (i = 0; i < 2000; i++) {
		round_durs(&s, 0, 0, 30, dur);
		named += sl_peer_round(p, dur, (uint64_t)(i + 1) * 300000000ull, i, &res);
		round_durs(&s, 0, 0, 90, dur);
		named += sl_peer_round(q, dur, (uint64_t)(i + 1) * 300000000ull, i, &res);
	}
	sl_peer_free(q);
	CHECK_INT(named, 0);
	sl_peer_free(p);
}

/*
 * Two ranks, random last arriver every 30 ms round, the gap a real share of
 * the interval (arrivals 0-8 ms: gaps up to 8 ms, a quarter of the interval
 * almost never), no minimum wall time: 20,000 rounds, never a straggler.
 * A run of 10 of 11 rounds (90%) happens by chance 12 times as often as 11
 * of 11: the chance must count the rounds the share lets off, and the run
 * is judged anew every round (34 rounds named when it did not).
 */
static void test_healthy_pair(void)
{
	struct sl_peer *p = peer_new(2, 0);
	struct sl_peer_result res;
	uint64_t s = 31;
	double dur[2];
	int i, named = 0;

	for (i = 0; i < 20000; i++) {
		pair_durs(&s, 8, 2, dur);
		named += sl_peer_round(p, dur, (uint64_t)(i + 1) * 30000000ull, i, &res);
	}
	CHECK_INT(named, 0);
	sl_peer_free(p);
}

/*
 * Two informative rounds per 30 ms iteration (a TP comm's two all-reduces,
 * 13 ms apart), two ranks arriving at random within 7 ms: the mean interval
 * between rounds is 15 ms, so a chance gap of 4-7 ms is a quarter of it, but
 * not of the iteration.  20,000 rounds, never a straggler.
 */
static void test_healthy_two_per_iter(void)
{
	struct sl_peer *p = peer_new(2, 0);
	struct sl_peer_result res;
	uint64_t s = 37, t;
	double dur[2];
	int i, named = 0;

	for (i = 0; i < 20000; i++) {
		pair_durs(&s, 7, 1, dur);
		t = (uint64_t)(i / 2) * 30000000ull + (i % 2) * 13000000ull + 1;
		named += sl_peer_round(p, dur, t, i / 2, &res);
	}
	CHECK_INT(named, 0);
	sl_peer_free(p);
}

/*
 * The same rank always last but by little (0.5 ms in 30 ms steps, 1.7%):
 * it costs nothing worth a verdict
 */
static void test_cheap_straggler(void)
{
	struct sl_peer *p = peer_new(4, 0);
	struct sl_peer_result res;
	uint64_t s = 3;
	double dur[4];
	int i, named = 0;

	for (i = 0; i < 500; i++) {
		round_durs(&s, 1, 0.5, 0.1, dur);
		named += sl_peer_round(p, dur, (uint64_t)(i + 1) * 30000000ull, i, &res);
	}
	CHECK_INT(named, 0);
	sl_peer_free(p);
}

/* last in 3 of 5 rounds, never 3 in a row at 90%: not persistent enough */
static void test_share(void)
{
	struct sl_peer *p = peer_new(4, 0);
	struct sl_peer_result res;
	uint64_t s = 5;
	double dur[4];
	int i, named = 0;

	for (i = 0; i < 200; i++) {
		round_durs(&s, i % 5 == 1 || i % 5 == 3 ? 3 : 2, 100, 1, dur);
		named += sl_peer_round(p, dur, (uint64_t)(i + 1) * 300000000ull, i, &res);
	}
	CHECK_INT(named, 0);
	sl_peer_free(p);
}

/*
 * Two ops per 450 ms iteration (a TP comm's two all-reduces): the first,
 * after the compute, waits 220 ms for straggler rank 1; the second follows
 * 1 ms later, everyone arriving together (who is last is chance, the gap
 * under a millisecond).  Those ties say nothing: named once 2 s passed as
 * if they were not there, and kept while ties come in between.
 */
static void test_ties_ignored(void)
{
	struct sl_peer *p = peer_new(2, 2000000000ull);
	struct sl_peer_result res;
	uint64_t s = 21, t = 0;
	double dur[2];
	int i, at = -1, lost = 0;

	for (i = 0; i < 60; i++) {
		int first = i % 2 == 0;
		bool named;

		t += first ? 449000000ull : 1000000ull;
		if (first) {
			dur[0] = (220 + 5 * u01(&s)) * MS;
			dur[1] = 0.4 * MS;
		} else {
			dur[0] = (0.3 + 0.5 * u01(&s)) * MS;
			dur[1] = (0.3 + 0.5 * u01(&s)) * MS;
		}
		named = sl_peer_round(p, dur, t, i / 2, &res);
		if (named && at < 0)
			at = i;
		if (!named && at >= 0)
			lost++;
	}
	/* 2 s after the first round: the 6th informative round (iteration 5) */
	CHECK(at >= 0 && at <= 12);
	CHECK_INT(lost, 0);
	CHECK_INT(res.rank, 1);
	CHECK(res.gap_ns > 200 * MS);
	CHECK(res.interval_ns > 400 * MS);
	sl_peer_free(p);
}

/* iterations count, not rounds: 5 rounds of one iteration are not enough */
static void test_min_iters(void)
{
	struct sl_peer *p = peer_new(4, 0);
	struct sl_peer_result res;
	uint64_t s = 9;
	double dur[4];
	int i, at = -1;

	for (i = 0; i < 40 && at < 0; i++) {
		round_durs(&s, 1, 50, 1, dur);
		if (sl_peer_round(p, dur, (uint64_t)(i + 1) * 100000000ull, i / 8, &res))
			at = i;
	}
	/* iterations 0, 1, 2: the first round of iteration 2 */
	CHECK_INT(at, 16);
	CHECK_INT(res.iters, 3);
	sl_peer_free(p);
}

/* bad arguments */
static void test_args(void)
{
	struct sl_peer_config c;

	sl_peer_default(&c);
	CHECK(sl_peer_new(&c, 1) == NULL);
	c.share = 0.4;
	CHECK(sl_peer_new(&c, 4) == NULL);
	{
		struct sl_rise_config rc;
		struct sl_rise *r = sl_rise_new(NULL);

		CHECK(r != NULL);
		sl_rise_free(r);
		sl_rise_default(&rc);
		rc.factor = 1;
		CHECK(sl_rise_new(&rc) == NULL);
		sl_rise_default(&rc);
		rc.recent = 0;
		CHECK(sl_rise_new(&rc) == NULL);
	}
}

static struct sl_rise *rise_new(uint64_t min_ns)
{
	struct sl_rise_config c;

	sl_rise_default(&c);
	c.min_ns = min_ns;
	return sl_rise_new(&c);
}

/* level * (1 +- 15%) */
static double noisy(uint64_t *s, double level)
{
	return level * (1 + 0.3 * (u01(s) - 0.5));
}

/*
 * The network part of a comm's rounds 1.4 ms, 4x from round 100 for 200
 * rounds (2 per 54 ms iteration), then back: onset once it lasted 2 s and
 * cost more than 5% of the time (15% here), recovery when it fell back
 */
static void test_rise_and_back(void)
{
	struct sl_rise *r = rise_new(2000000000ull);
	struct sl_rise_result res;
	uint64_t s = 13, t;
	int i, onset = -1, back = -1, ev;

	CHECK(r != NULL);
	if (!r)
		return;
	for (i = 0; i < 600; i++) {
		double lvl = i >= 100 && i < 300 ? 5.6 : 1.4;

		t = (uint64_t)(i + 1) * 27000000ull;
		ev = sl_rise_round(r, noisy(&s, lvl) * MS, t, i / 2, &res);
		if ((ev & SL_RISE_ONSET) && onset < 0) {
			onset = i;
			CHECK(fabs(res.base_ns / MS - 1.4) < 0.1);
			CHECK(fabs(res.level_ns / MS - 5.6) < 0.6);
			CHECK(res.onset_round >= 96 && res.onset_round <= 104);
			CHECK(res.lost_ns > 0.9 * (onset - 100) * 4.2 * MS);
		}
		if ((ev & SL_RISE_RECOVERY) && back < 0)
			back = i;
	}
	/* 2 s after the rise at 27 ms per round: ~74 rounds, +4 for the median */
	CHECK(onset >= 170 && onset <= 182);
	CHECK(back >= 300 && back <= 306);
	sl_rise_free(r);
}

/* CPU-hog bursts: the level doubles for 0.8 s every 3 s, never for 2 s */
static void test_rise_bursts(void)
{
	struct sl_rise *r = rise_new(2000000000ull);
	struct sl_rise_result res;
	uint64_t s = 17;
	int i, named = 0;

	for (i = 0; i < 2000; i++) {
		uint64_t t = (uint64_t)(i + 1) * 27000000ull;
		double lvl = (t / 1000000ull) % 3000 < 800 ? 2.8 : 1.4;

		named += !!(sl_rise_round(r, noisy(&s, lvl) * MS, t, i / 2, &res) &
			    SL_RISE_ONSET);
	}
	CHECK_INT(named, 0);
	sl_rise_free(r);
}

/* 30 us of network part rising to 60 us: a doubling that costs nothing */
static void test_rise_floor(void)
{
	struct sl_rise *r = rise_new(0);
	struct sl_rise_result res;
	uint64_t s = 19;
	int i, named = 0;

	for (i = 0; i < 500; i++)
		named += !!(sl_rise_round(r, noisy(&s, i < 100 ? 0.03 : 0.06) * MS,
					  (uint64_t)(i + 1) * 27000000ull, i, &res) &
			    SL_RISE_ONSET);
	CHECK_INT(named, 0);
	sl_rise_free(r);
}

/*
 * The network part of tiny ops, 0.27 ms, rising to 0.51 ms for 4 s at 100
 * rounds per second: 2.4% of the wall time, under the 5% a verdict needs
 * (a healthy job's checkpoint pause on a 2-core VM did this, and the step
 * sample blamed a descheduled proxy thread)
 */
static void test_rise_small_cost(void)
{
	struct sl_rise *r = rise_new(1000000000ull);
	struct sl_rise_result res;
	uint64_t s = 29;
	int i, named = 0;

	for (i = 0; i < 600; i++)
		named += !!(sl_rise_round(r, noisy(&s, i >= 100 && i < 500 ? 0.51 : 0.27) * MS,
					  (uint64_t)(i + 1) * 10000000ull, i / 2, &res) &
			    SL_RISE_ONSET);
	CHECK_INT(named, 0);
	sl_rise_free(r);
}

/* a lower level later (a slow start) becomes the level */
static void test_rise_base_follows_down(void)
{
	struct sl_rise *r = rise_new(0);
	struct sl_rise_result res;
	uint64_t s = 23;
	int i, onset = -1;

	for (i = 0; i < 400; i++) {
		double lvl = i < 64 ? 3 : i < 300 ? 1 : 3;

		if ((sl_rise_round(r, noisy(&s, lvl) * MS, (uint64_t)(i + 1) * 27000000ull,
				   i, &res) & SL_RISE_ONSET) && onset < 0)
			onset = i;
	}
	CHECK(onset >= 300 && onset <= 310);
	CHECK(fabs(res.base_ns / MS - 1) < 0.1);
	sl_rise_free(r);
}

/*
 * A noisy network part (+-80% every round, its level unchanged): its
 * medians of 8 reach 1.5x now and then, within the noise: nothing; a
 * quieter one (+-30%) rising 2.8x is a rise (0.9 ms more per 10 ms round:
 * 9% of the time, above the cost bar)
 */
static void test_rise_noise(void)
{
	struct sl_rise *r = rise_new(0), *q = rise_new(0);
	uint64_t s = 29;
	int i, noisy_named = 0, quiet_named = 0;

	for (i = 0; i < 600; i++) {
		uint64_t t = (uint64_t)(i + 1) * 10000000ull;
		double u = u01(&s) - 0.5;

		noisy_named += !!(sl_rise_round(r, 0.6 * (1 + 1.6 * u) * MS,
						t, i, NULL) & SL_RISE_ONSET);
		quiet_named += !!(sl_rise_round(q, (i < 200 ? 0.5 : 1.4) * (1 + 0.6 * u) * MS,
						t, i, NULL) & SL_RISE_ONSET);
	}
	CHECK_INT(noisy_named, 0);
	CHECK_INT(quiet_named, 1);
	sl_rise_free(r);
	sl_rise_free(q);
}

/*
 * A 2-rank comm, rounds 90 ms apart, one per iteration.  While the other
 * rank's process has step hooks, the rounds it is last in are unknown
 * (sl_peer_unknown); rank 0 is last by 1 ms in the others.  Then rank 0
 * computes 45 ms longer: named at its third late round, as without the
 * hooks.  The unknown rounds break its run of small gaps; left out, that
 * run would have made the median gap small and the naming late.
 */
static void test_unknown_breaks_run(void)
{
	struct sl_peer *p = peer_new(2, 0);
	struct sl_peer_result res;
	double dur[2];
	uint64_t t = 0;
	int i, named = -1;

	for (i = 0; i < 30; i++) {
		t += 90000000ull;
		if (i % 2) {
			sl_peer_unknown(p, t, i);
			continue;
		}
		dur[0] = 2 * MS;
		dur[1] = 3 * MS;
		CHECK(!sl_peer_round(p, dur, t, i, &res));
	}
	for (i = 30; i < 40 && named < 0; i++) {
		t += 90000000ull;
		dur[0] = 2 * MS;
		dur[1] = 47 * MS;
		if (sl_peer_round(p, dur, t, i, &res))
			named = i;
	}
	CHECK_INT(named, 32);
	CHECK_INT(res.rank, 0);
	sl_peer_free(p);
}

/*
 * Each 17 ms iteration of a 4-rank comm has a large op, in which rank 2
 * arrives 8 ms after the others, then a small op 1 ms later, in which a
 * rank at random is last by 0.2-0.5 ms: more than a tie (2% of the 8.5 ms
 * between rounds), far less than rank 2's gap (random job 457, a 3x slower
 * GPU).  Rank 2 is named once the run spans 1 s: the small rounds count
 * neither for it nor against it (counted, rank 2 was last in 5 of 8 of the
 * rounds), and the run of 120 rounds fits the ring (64 rounds spanned
 * 0.5 s).  Without rank 2 late, every round's last arriver at random:
 * nobody in 4,000 rounds.
 */
static void test_minor_rounds(bool late)
{
	struct sl_peer *p = peer_new(4, 1000000000ull);
	struct sl_peer_result res;
	uint64_t s = 41, t;
	double dur[4];
	int i, k, at = -1, named = 0;

	CHECK(p != NULL);
	if (!p)
		return;
	for (i = 0; i < 4000; i++) {
		if (i % 2 == 0) {
			round_durs(&s, late ? 2 : 0, late ? 8 : 0, late ? 0.3 : 8, dur);
		} else {
			int last = (int)(4 * u01(&s));
			double gap = 0.2 + 0.3 * u01(&s);

			for (k = 0; k < 4; k++)
				dur[k] = (0.3 + (k == last ? 0 : gap + 0.05 * u01(&s))) * MS;
		}
		t = (uint64_t)(i / 2) * 17000000ull + (i % 2) * 1000000ull + 1;
		if (sl_peer_round(p, dur, t, i / 2, &res)) {
			named++;
			if (at < 0)
				at = i;
		}
	}
	if (late) {
		/* 1 s: 59 iterations after the first (118 rounds) */
		CHECK(at >= 118 && at <= 122);
		CHECK_INT(res.rank, 2);
		CHECK(res.gap_ns > 7 * MS);
	} else {
		CHECK_INT(named, 0);
	}
	sl_peer_free(p);
}

int main(void)
{
	test_straggler_named();
	test_healthy_jitter();
	test_healthy_pair();
	test_healthy_two_per_iter();
	test_cheap_straggler();
	test_share();
	test_min_iters();
	test_ties_ignored();
	test_unknown_breaks_run();
	test_minor_rounds(true);
	test_minor_rounds(false);
	test_args();
	test_rise_and_back();
	test_rise_bursts();
	test_rise_floor();
	test_rise_small_cost();
	test_rise_base_follows_down();
	test_rise_noise();
	return check_finish("test_slow_peer");
}
