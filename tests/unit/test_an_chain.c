// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A slow cascade followed to its root (an_slow_chain.c).  The job is the
 * stand-in's PyTorch pattern (8 ranks, TP 2, PP 2, DP 2; every call queued
 * ahead of the GPU): rank 2 computes 3x slower, so each of its TP
 * all-reduces waits for its kernel (TP comm {2,3} rounds hardly grow: they
 * include the kernels), and its DP comm {0,2} waits for the whole step's
 * lateness (10x slower: the incident there, whose step sample finds rank
 * 2's GPU arriving last, straight from its TP op).  Numbers from the kept
 * captures of test_slow_scenarios ptcompute and test_attach_midrun
 * ptcompute, docs/numbers.md.
 */
#include <math.h>
#include "test_an_helpers.h"
#include "an_int.h"
#include "an_slow_int.h"

#define MS 1000000ull
#define TP 0x00000000000000a1ull
#define DP 0x00000000000000d1ull
#define W  0x00000000000000f1ull

struct job {
	struct sim s;
	struct an_comm *tp, *dp;
	struct an_slow tps, dps;
	uint64_t dp_holder[2], dp_hcomm[2];
	int64_t dp_hseq[2];
	uint32_t dp_last[2], dp_held[2];
	double dp_gap[2];
	uint64_t dp_arr_holder[2];
	uint64_t t;		/* host 0's clock now */
};

static void job_init(struct job *j)
{
	const int tp[2] = { 2, 3 }, dp[2] = { 0, 2 }, w[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };

	memset(j, 0, sizeof(*j));
	sim_init(&j->s, 30, 300);
	sim_comm(&j->s, TP, 2, tp);
	sim_comm(&j->s, DP, 2, dp);
	sim_comm(&j->s, W, 8, w);
	j->tp = an_comm_get(j->s.an, TP, 0, false);
	j->dp = an_comm_get(j->s.an, DP, 0, false);
	CHECK(j->tp && j->dp && !j->tp->slow && !j->dp->slow);
	/* only what the chain reads: no detector runs here */
	j->tp->slow = &j->tps;
	j->dp->slow = &j->dps;
	j->tps.next = 1056;
	j->dps.holder = j->dp_holder;
	j->dps.pend_hcomm = j->dp_hcomm;
	j->dps.pend_hseq = j->dp_hseq;
	j->dps.arr_last = j->dp_last;
	j->dps.arr_held = j->dp_held;
	j->dps.arr_gap = j->dp_gap;
	j->dps.arr_holder = j->dp_arr_holder;
	j->t = j->s.now[0] + 1000 * MS;
	an_clock(j->s.an, j->s.host_id[0], j->t);
	/* DP's sample began 0.6 s ago; its round 404 ended as TP's 808 was under way */
	j->dps.samp_host = j->s.host_id[0];
	j->dps.samp_t0 = j->t - 600 * MS;
	j->dp_hcomm[1] = TP;
	j->dp_hseq[1] = 808;
	j->dp_hseq[0] = -1;
	/* its sample: rank 1 (global 2) last in 4 of 6 rounds, 54 ms ahead each time */
	j->dps.arr_rounds = 6;
	j->dp_last[1] = 4;
	j->dp_gap[1] = 4 * 54.0 * MS;
	j->dp_last[0] = 2;
	j->dp_gap[0] = 0.2 * MS;
}

static void job_fini(struct job *j)
{
	j->tp->slow = j->dp->slow = NULL;
	sim_fini(&j->s);
}

/* N rounds of TP in the sample, rank LAST arriving GAP_MS ahead, held by HOLDER */
static void tp_rounds(struct job *j, int n, int32_t last, double gap_ms, uint64_t holder)
{
	int i;

	for (i = 0; i < n; i++) {
		struct arr_note *a = &j->tps.notes[j->tps.nnotes++ % ARR_NOTES];

		a->seq = 1060 + (int64_t)j->tps.nnotes;
		a->fn = CCLD_FN_ALLREDUCE;
		a->host = j->s.host_id[0];
		a->t_end = j->t - (uint64_t)(n - i) * 25 * MS;
		a->last = last;
		a->gap = gap_ms * MS;
		a->holder = holder;
	}
}

/* DP's cascade verdict: its rank 1 (global 2) late from TP's op */
static void dp_cascade(struct job *j, struct an_verdict *v)
{
	memset(v, 0, sizeof(*v));
	v->kind = AN_V_NEW;
	v->cls = AN_S1;
	v->role = AN_CASCADE;
	v->comm = DP;
	v->seq = 404;
	v->clock_host = j->s.host_id[0];
	v->detected_ns = j->t;
	v->onset_ns = j->t - 800 * MS;
	v->ncul = v->ncul_total = 1;
	v->cul[0].rank = 1;
	v->cul[0].pid = 102;
}

/* rank 2 last in TP's 12 sampled rounds, 19 ms ahead: TP is the root */
static void test_root_found(void)
{
	struct an_verdict v;
	struct job j;

	job_init(&j);
	tp_rounds(&j, 12, 0, 19, 0);
	dp_cascade(&j, &v);
	slow_hold_chain(j.s.an, &v, TP, false);
	CHECK_INT(j.s.nv, 1);
	if (j.s.nv == 1) {
		const struct an_verdict *r = &j.s.v[0];

		CHECK(r->comm == TP && r->kind == AN_V_NEW && r->role == AN_ROOT);
		CHECK_INT(r->cls, AN_S1);
		CHECK_INT(r->ncul, 1);
		CHECK_INT(r->cul[0].rank, 0);
		CHECK_INT(r->cul[0].pid, 102);
		/* the round under way when DP's onset round ended */
		CHECK_INT(r->seq, 808);
		CHECK(strstr(r->text, "following the cascade") != NULL);
	}
	CHECK(j.tps.active && j.tps.chain_of == DP && j.tp->slow_seq == 808);
	/* a second cascade of TP: TP has its incident, nothing more */
	slow_hold_chain(j.s.an, &v, TP, false);
	CHECK_INT(j.s.nv, 1);
	/* DP back to its baseline: so is TP */
	slow_chain_back(j.s.an, j.dp, j.t + 3000 * MS, j.s.host_id[0]);
	CHECK_INT(j.s.nv, 2);
	if (j.s.nv == 2) {
		CHECK(j.s.v[1].comm == TP && j.s.v[1].kind == AN_V_RECOVERED);
		CHECK_INT(j.s.v[1].cul[0].rank, 0);
	}
	CHECK(!j.tps.active && !j.tps.chain_of);
	job_fini(&j);
}

/*
 * The other stage's TP comm in the same run: rank 3 last in 15 of 20 of
 * its rounds by 1.5 ms (the kernels' jitter), 22 ms in all against the
 * 85 ms its DP comm waited: not what DP waits for
 */
static void test_jitter_is_not_a_root(void)
{
	struct an_verdict v;
	struct job j;

	job_init(&j);
	j.dp_gap[1] = 85.0 * MS;
	tp_rounds(&j, 5, 0, 1.5, 0);
	tp_rounds(&j, 15, 1, 1.5, 0);
	dp_cascade(&j, &v);
	slow_hold_chain(j.s.an, &v, TP, false);
	CHECK_INT(j.s.nv, 0);
	CHECK(!j.tps.active);
	job_fini(&j);
}

/* the straggler in TP came straight from the world's op: not its own lateness */
static void test_held_there_too(void)
{
	struct an_verdict v;
	struct job j;

	job_init(&j);
	tp_rounds(&j, 12, 0, 19, W);
	dp_cascade(&j, &v);
	slow_hold_chain(j.s.an, &v, TP, false);
	CHECK_INT(j.s.nv, 0);
	job_fini(&j);
}

/*
 * DP's straggler (global 2) waited in TP for its peer (global 3, whose GPU
 * is slow): the peer is the root (test_slow_scenarios ptgpuslow's shape)
 */
static void test_peer_in_holder(void)
{
	struct an_verdict v;
	struct job j;

	job_init(&j);
	tp_rounds(&j, 12, 1, 19, 0);
	dp_cascade(&j, &v);
	slow_hold_chain(j.s.an, &v, TP, false);
	CHECK_INT(j.s.nv, 1);
	if (j.s.nv == 1) {
		CHECK_INT(j.s.v[0].cul[0].rank, 1);
		CHECK_INT(j.s.v[0].cul[0].pid, 103);
	}
	job_fini(&j);
}

/*
 * DP's straggler (global 2) did not come straight from TP's op (its own
 * work came between), but its TP rounds show it waiting there for global
 * 3, as long as DP waited for it: TP is what DP is a cascade of (random job
 * 1168's shape: TP 2 x DP 2, a rank computing slower, each DP comm naming
 * its own TP rank).  Not where global 2 is the one last in TP, nor where
 * TP's straggler's lead is jitter.
 */
static void test_waited_elsewhere(void)
{
	struct job j;

	job_init(&j);
	tp_rounds(&j, 12, 1, 19, 0);
	CHECK(slow_waited_elsewhere(j.s.an, j.dp, 1) == TP);
	/* DP's other rank (global 0) is in no comm with notes */
	CHECK(slow_waited_elsewhere(j.s.an, j.dp, 0) == 0);
	job_fini(&j);

	job_init(&j);
	tp_rounds(&j, 12, 0, 19, 0);
	CHECK(slow_waited_elsewhere(j.s.an, j.dp, 1) == 0);
	job_fini(&j);

	job_init(&j);
	j.dp_gap[1] = 85.0 * MS;
	tp_rounds(&j, 20, 1, 1.5, 0);
	CHECK(slow_waited_elsewhere(j.s.an, j.dp, 1) == 0);
	job_fini(&j);
}

/* no arrivals in TP during DP's sample (its processes not hooked), or old ones */
static void test_no_evidence(void)
{
	struct an_verdict v;
	struct job j;

	job_init(&j);
	dp_cascade(&j, &v);
	slow_hold_chain(j.s.an, &v, TP, false);
	CHECK_INT(j.s.nv, 0);
	/* 12 rounds that ended before DP's sample began */
	tp_rounds(&j, 12, 0, 19, 0);
	j.dps.samp_t0 = j.t + MS;
	slow_hold_chain(j.s.an, &v, TP, false);
	CHECK_INT(j.s.nv, 0);
	/* ... or more than 2 s ago */
	j.dps.samp_t0 = 0;
	an_clock(j.s.an, j.s.host_id[0], j.t + 2500 * MS);
	slow_hold_chain(j.s.an, &v, TP, false);
	CHECK_INT(j.s.nv, 0);
	job_fini(&j);
}

/* a class other than S1, or an update: the chain does not run */
static void test_only_new_s1(void)
{
	struct an_verdict v;
	struct job j;

	job_init(&j);
	tp_rounds(&j, 12, 0, 19, 0);
	dp_cascade(&j, &v);
	v.cls = AN_S2;
	slow_hold_chain(j.s.an, &v, TP, false);
	v.cls = AN_S1;
	v.kind = AN_V_UPDATE;
	slow_hold_chain(j.s.an, &v, TP, false);
	CHECK_INT(j.s.nv, 0);
	job_fini(&j);
}

/*
 * The pipeline comm PP {2, 6}: p2p ops only, no rounds to note.  Each of
 * SENDS iterations global 2 (PP rank 0) enters its send and its receive
 * at once, global 6 (PP rank 1) its matching receive and send LATE_MS
 * after (random job 35: the stage whose GPU is slow enters its pipeline
 * ops late; its peer waits there and reaches its DP op late)
 */
#define PP 0x00000000000000b1ull
#define PP2 0x00000000000000b2ull
/* ITERS send/recv pairs on the pipeline comm HASH of global ranks G0, G1 */
static void pair_ops(struct job *j, uint64_t hash, int g0, int g1, int iters, double late_ms)
{
	const int pp[2] = { g0, g1 };
	int i;

	sim_comm(&j->s, hash, 2, pp);
	for (i = 0; i < iters; i++) {
		struct an_op a = sim_p2p(&j->s, hash, 0, 1, 0, 4096, true);
		struct an_op b = sim_p2p(&j->s, hash, 0, 1, 1, 4096, true);
		struct an_op c, d;

		sim_step(&j->s, (uint64_t)(late_ms * MS));
		c = sim_p2p(&j->s, hash, 1, 0, 1, 4096, true);
		d = sim_p2p(&j->s, hash, 1, 0, 0, 4096, true);
		sim_step(&j->s, MS);
		sim_complete(&j->s, &a);
		sim_complete(&j->s, &b);
		sim_complete(&j->s, &c);
		sim_complete(&j->s, &d);
		sim_step(&j->s, 20 * MS);
	}
}

static void pp_ops(struct job *j, int iters, double late_ms)
{
	pair_ops(j, PP, 2, 6, iters, late_ms);
}

/* DP's straggler came late from PP, whose other end entered 30 ms late */
static void test_p2p_root(void)
{
	struct an_verdict v;
	struct job j;

	job_init(&j);
	pp_ops(&j, 6, 30);
	dp_cascade(&j, &v);
	slow_hold_chain(j.s.an, &v, PP, false);
	CHECK_INT(j.s.nv, 1);
	if (j.s.nv == 1) {
		const struct an_verdict *r = &j.s.v[0];

		CHECK(r->comm == PP && r->kind == AN_V_NEW && r->role == AN_ROOT);
		CHECK_INT(r->cls, AN_S1);
		CHECK(r->p2p);
		/* its 6th receive from rank 0 (counted per peer and direction) */
		CHECK_INT(r->seq, 5);
		CHECK_INT(r->fn, CCLD_FN_RECV);
		CHECK_INT(r->ncul, 1);
		CHECK_INT(r->cul[0].rank, 1);
		CHECK_INT(r->cul[0].pid, 106);
		CHECK(strstr(r->text, "30.0 ms after rank 0") != NULL);
	}
	/* PP has its incident now; DP back to its baseline: so is PP */
	slow_hold_chain(j.s.an, &v, PP, false);
	CHECK_INT(j.s.nv, 1);
	slow_chain_back(j.s.an, j.dp, j.t + 3000 * MS, j.s.host_id[0]);
	CHECK_INT(j.s.nv, 2);
	if (j.s.nv == 2)
		CHECK(j.s.v[1].comm == PP && j.s.v[1].kind == AN_V_RECOVERED);
	job_fini(&j);
}

/*
 * Not named: the peer entered 5 ms late, under half of the 36 ms DP waited
 * per round; or too few ops to tell chance from a straggler
 */
static void test_p2p_not_behind(void)
{
	struct an_verdict v;
	struct job j;

	job_init(&j);
	pp_ops(&j, 6, 5);
	dp_cascade(&j, &v);
	slow_hold_chain(j.s.an, &v, PP, false);
	CHECK_INT(j.s.nv, 0);
	job_fini(&j);
	job_init(&j);
	pp_ops(&j, 1, 30);
	dp_cascade(&j, &v);
	slow_hold_chain(j.s.an, &v, PP, false);
	CHECK_INT(j.s.nv, 0);
	job_fini(&j);
}

/*
 * DP's straggler (global 2) came late from PP = {6, 2}, where it entered
 * its own side 30 ms after global 6 entered its: no peer behind, its own
 * lateness: DP's verdict is a root that says so (random job 35: no root at
 * all before).  5 ms late (under half of DP's 36 ms per round): not so.
 */
static void test_p2p_self_late(void)
{
	struct an_verdict v;
	struct job j;

	job_init(&j);
	pair_ops(&j, PP, 6, 2, 6, 30);
	dp_cascade(&j, &v);
	CHECK(slow_hold_chain(j.s.an, &v, PP, true));
	CHECK_INT(j.s.nv, 0);
	CHECK(strstr(v.text, "entered 30.0 ms after that rank entered its own") != NULL);
	CHECK(strstr(v.text, "its own lateness") != NULL);
	job_fini(&j);
	job_init(&j);
	pair_ops(&j, PP, 6, 2, 6, 5);
	dp_cascade(&j, &v);
	CHECK(!slow_hold_chain(j.s.an, &v, PP, true));
	CHECK_INT(j.s.nv, 0);
	job_fini(&j);
}

/*
 * Every rank of the world comm reaches its all-reduce about together, its
 * rounds 32 ms longer: the time went in the pipeline's send/recv before it,
 * where global 6 entered its side 30 ms after global 2 (random job 12, a
 * 4-stage pipeline whose stage 2 computes 3.3x slower: silent before)
 */
static void test_p2p_straggler(void)
{
	struct slow_p2p_found f;
	const struct an_comm *w;
	struct job j;

	job_init(&j);
	w = an_comm_get(j.s.an, W, 0, false);
	CHECK(w != NULL);
	pp_ops(&j, 6, 30);
	CHECK_INT(slow_p2p_straggler(j.s.an, w, 32.0 * MS, &f), 6);
	CHECK(f.comm == PP);
	CHECK_INT(f.rank, 1);
	CHECK_INT(f.peer, 0);
	CHECK_INT(f.pairs, 12);
	CHECK_INT(f.late_pairs, 12);
	CHECK(f.late_ns > 29.9 * MS && f.late_ns < 30.1 * MS);
	/* the rank it kept waiting is not a straggler from its own side */
	CHECK_INT(slow_p2p_straggler(j.s.an, j.tp, 32.0 * MS, &f), -1);
	job_fini(&j);
}

/*
 * Not named: late by 5 ms where the rounds grew by 32 (under half); a
 * single op (chance); two stages each keeping a neighbour waiting (no one
 * straggler: silent rather than a guess)
 */
static void test_p2p_straggler_not(void)
{
	struct slow_p2p_found f;
	const struct an_comm *w;
	struct job j;

	job_init(&j);
	w = an_comm_get(j.s.an, W, 0, false);
	pp_ops(&j, 6, 5);
	CHECK_INT(slow_p2p_straggler(j.s.an, w, 32.0 * MS, &f), -1);
	job_fini(&j);
	job_init(&j);
	w = an_comm_get(j.s.an, W, 0, false);
	pp_ops(&j, 1, 30);
	CHECK_INT(slow_p2p_straggler(j.s.an, w, 32.0 * MS, &f), -1);
	job_fini(&j);
	job_init(&j);
	w = an_comm_get(j.s.an, W, 0, false);
	pp_ops(&j, 6, 30);
	pair_ops(&j, PP2, 1, 5, 6, 30);
	CHECK_INT(slow_p2p_straggler(j.s.an, w, 32.0 * MS, &f), -1);
	job_fini(&j);
}

/*
 * The same pipeline traced from a late attach: each side counts its p2p
 * ops from whatever op it was at (global 2 had entered step -1's pair
 * before the attach, global 6 had not), and both enter the world's
 * all-reduce after each step (ANCHORS): those line the counts up.  Global
 * 6's op k+1 is global 2's op k; the world op after each step says so.
 */
static void pp_ops_attached(struct job *j, int iters, double late_ms, bool anchors,
			    int lose_at)
{
	const int pp[2] = { 2, 6 };
	int i;

	sim_comm(&j->s, PP, 2, pp);
	/* step -1: global 2's side was entered before the attach */
	sim_p2p_attach(&j->s, PP, 1, 0, 1, 4096);
	sim_p2p_attach(&j->s, PP, 1, 0, 0, 4096);
	for (i = 0; i < iters; i++) {
		sim_step(&j->s, MS);
		if (anchors) {
			sim_call(&j->s, W, 2, CCLD_FN_ALLREDUCE, 2, 7);
			sim_call(&j->s, W, 6, CCLD_FN_ALLREDUCE, 2, 7);
		}
		sim_step(&j->s, MS);
		sim_p2p_attach(&j->s, PP, 0, 1, 0, 4096);
		sim_p2p_attach(&j->s, PP, 0, 1, 1, 4096);
		sim_step(&j->s, (uint64_t)(late_ms * MS));
		if (i == lose_at) {
			/* global 6's records of step i-1 lost: its counts are one short */
			sim_find(&j->s, PP)->p2p[1][0][0]--;
			sim_find(&j->s, PP)->p2p[1][0][1]--;
		}
		sim_p2p_attach(&j->s, PP, 1, 0, 1, 4096);
		sim_p2p_attach(&j->s, PP, 1, 0, 0, 4096);
		sim_step(&j->s, 20 * MS);
	}
	if (anchors) {
		sim_call(&j->s, W, 2, CCLD_FN_ALLREDUCE, 2, 7);
		sim_call(&j->s, W, 6, CCLD_FN_ALLREDUCE, 2, 7);
	}
}

/* Lined up by the world's all-reduces: global 6 named, as traced from the start */
static void test_p2p_straggler_attached(void)
{
	struct slow_p2p_found f;
	const struct an_comm *w;
	struct job j;

	job_init(&j);
	w = an_comm_get(j.s.an, W, 0, false);
	pp_ops_attached(&j, 6, 30, true, -1);
	CHECK_INT(slow_p2p_straggler(j.s.an, w, 32.0 * MS, &f), 6);
	CHECK(f.comm == PP);
	CHECK_INT(f.rank, 1);
	CHECK_INT(f.peer, 0);
	/* global 2's ops 0-5 are global 6's 1-6 in each direction */
	CHECK_INT(f.pairs, 12);
	CHECK_INT(f.late_pairs, 12);
	CHECK_INT(f.op, 6);
	CHECK(f.late_ns > 29.9 * MS && f.late_ns < 30.1 * MS);
	job_fini(&j);
}

/*
 * Not lined up: no collective both entered (the k-th ops need not match),
 * or the collectives disagree (records lost between them): nobody named
 */
static void test_p2p_straggler_attached_not(void)
{
	struct slow_p2p_found f;
	const struct an_comm *w;
	struct job j;

	job_init(&j);
	w = an_comm_get(j.s.an, W, 0, false);
	pp_ops_attached(&j, 6, 30, false, -1);
	CHECK_INT(slow_p2p_straggler(j.s.an, w, 32.0 * MS, &f), -1);
	job_fini(&j);
	job_init(&j);
	w = an_comm_get(j.s.an, W, 0, false);
	pp_ops_attached(&j, 6, 30, true, 3);
	CHECK_INT(slow_p2p_straggler(j.s.an, w, 32.0 * MS, &f), -1);
	job_fini(&j);
}

/*
 * A survey of the world comm (it ran before the attach, its CPUs ahead of
 * their GPUs), whose GPUs reach its ops together: rank LATE_RANK's
 * sample is as clean as the others'; a round every 40 ms
 */
struct survey {
	struct an_slow s;
	uint32_t last[8], held[8], blk[8];
	double gap[8], gmax[8], blk_gap[8];
	uint64_t holder[8], blk_holder[8];
};

static struct an_comm *survey_world(struct job *j, struct survey *sv)
{
	struct an_comm *w = an_comm_get(j->s.an, W, 0, false);

	memset(sv, 0, sizeof(*sv));
	CHECK(w && !w->slow);
	if (!w)
		return NULL;
	w->slow = &sv->s;
	sv->s.arr_last = sv->last;
	sv->s.arr_gap = sv->gap;
	sv->s.arr_gmax = sv->gmax;
	sv->s.arr_held = sv->held;
	sv->s.arr_holder = sv->holder;
	sv->s.arr_blk = sv->blk;
	sv->s.arr_blk_gap = sv->blk_gap;
	sv->s.arr_blk_holder = sv->blk_holder;
	sv->s.arr_rounds = sv->s.survey_need = 40;
	sv->s.arr_t1 = j->t;
	sv->s.arr_t0 = j->t - 39 * 40 * MS;
	sv->s.samp_t0 = sv->s.arr_t0;
	sv->s.pend.seq = 100;
	sv->s.pend.fn = CCLD_FN_ALLREDUCE;
	sv->s.pend.host = j->s.host_id[0];
	sv->s.pend.t_end = j->t;
	return w;
}

/* a new job: the world comm surveyed, global 6 30 ms late in every pipeline op */
static struct an_comm *survey_pp_world(struct job *j, struct survey *sv)
{
	job_init(j);
	pp_ops_attached(j, 6, 30, true, -1);
	return survey_world(j, sv);
}

/* N more pipeline steps in which both sides enter their send/recv together */
static void pp_ops_on_time(struct job *j, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		sim_step(&j->s, MS);
		sim_call(&j->s, W, 2, CCLD_FN_ALLREDUCE, 2, 7);
		sim_call(&j->s, W, 6, CCLD_FN_ALLREDUCE, 2, 7);
		sim_step(&j->s, MS);
		sim_p2p_attach(&j->s, PP, 0, 1, 0, 4096);
		sim_p2p_attach(&j->s, PP, 0, 1, 1, 4096);
		sim_p2p_attach(&j->s, PP, 1, 0, 1, 4096);
		sim_p2p_attach(&j->s, PP, 1, 0, 0, 4096);
		sim_step(&j->s, 20 * MS);
	}
	sim_call(&j->s, W, 2, CCLD_FN_ALLREDUCE, 2, 7);
	sim_call(&j->s, W, 6, CCLD_FN_ALLREDUCE, 2, 7);
}

/*
 * Global 6 enters its pipeline send/recv 30 ms after global 2 in every
 * op: the survey's first sample names no one and asks again about it (late
 * CPU entries in one window are also load, or the attach's own work)
 */
static struct an_comm *first_survey(struct job *j, struct survey *sv)
{
	struct an_comm *w;

	w = survey_pp_world(j, sv);
	if (w) {
		slow_survey_sampled(j->s.an, w, j->t);
		CHECK_INT(j->s.nv, 0);
		CHECK_INT(sv->s.survey_p2p, 7);
		CHECK(!sv->s.survey_open);
	}
	return w;
}

/* ... the second sample, global 6 still as late, names it S1 */
static void test_survey_p2p_asked_again(void)
{
	struct survey sv;
	struct an_comm *w;
	struct job j;

	w = first_survey(&j, &sv);
	if (w) {
		sv.s.samp_t0 = j.t + 900 * MS;
		slow_survey_sampled(j.s.an, w, j.t + 1000 * MS);
		CHECK_INT(j.s.nv, 1);
		CHECK_INT(j.s.v[0].cls, AN_S1);
		CHECK_INT(j.s.v[0].ncul, 1);
		CHECK_INT(j.s.v[0].cul[0].rank, 6);
		/* the onset: the first sample's start */
		CHECK(j.s.v[0].onset_ns == j.t - 39 * 40 * MS);
		CHECK(sv.s.survey_open);
		CHECK_INT(sv.s.survey_p2p, 0);
		w->slow = NULL;
	}
	job_fini(&j);
}

/*
 * Late in one window only (the stand-in's GPU acceptance, healthy: rank 1
 * entered its send/recv 2.4 ms after rank 0 in 28 of 32 ops for 0.6 s
 * after the attach): on time when asked again, no one is named
 */
static void test_survey_p2p_burst(void)
{
	struct survey sv;
	struct an_comm *w;
	struct job j;

	w = first_survey(&j, &sv);
	if (w) {
		pp_ops_on_time(&j, 16);
		slow_survey_sampled(j.s.an, w, j.t + 1000 * MS);
		CHECK_INT(j.s.nv, 0);
		CHECK_INT(sv.s.survey_p2p, 0);
		CHECK(!sv.s.survey_open);
		w->slow = NULL;
	}
	job_fini(&j);
}

/*
 * Surveyed with nothing found while its rounds came 20 ms apart (random job
 * 324: attached 1.5 s before a rank's compute slowed, the world comm
 * learned its baseline on the slow job, its rounds 12 -> 31 ms): rounds
 * 35 ms apart for 3 s ask for another survey; the same level, a rise
 * shorter than that, or a rise broken by rounds not judged do not
 */
static void test_survey_rose(void)
{
	struct an_slow s;
	uint64_t t = 1000 * MS;
	int64_t seq = 100;
	bool rose = false;
	int i;

	memset(&s, 0, sizeof(s));
	s.surveyed = true;
	s.survey_iv = 20.0 * MS;
	for (i = 0; i < 100; i++)	/* 2 s at the survey's level */
		CHECK(!slow_survey_rose(&s, seq++, t += 20 * MS, false));
	for (i = 0; i < 80 && !rose; i++)	/* 1.75x: 2.8 s, 1.5x reached after 0.3 s */
		rose = slow_survey_rose(&s, seq++, t += 35 * MS, false);
	CHECK(!rose);
	/* rounds not judged for 2 s (another comm's sample): the hold starts again */
	seq += 60;
	for (i = 0; i < 80 && !rose; i++)
		rose = slow_survey_rose(&s, seq++, t += (i ? 35 : 2000) * MS, false);
	CHECK(!rose);
	for (i = 0; i < 10 && !rose; i++)
		rose = slow_survey_rose(&s, seq++, t += 35 * MS, false);
	CHECK(rose);
	CHECK(s.resurvey_rise > 1.5 && s.resurvey_rise < 1.8);
	/* not while a survey's incident is open, nor while sampling */
	s.survey_open = true;
	for (i = 0; i < 60; i++)
		CHECK(!slow_survey_rose(&s, seq++, t += 35 * MS, false));
	s.survey_open = false;
	for (i = 0; i < 60; i++)
		CHECK(!slow_survey_rose(&s, seq++, t += 35 * MS, true));
}

/*
 * A survey's sample in which no one rank is last (ranks 0 and 1 split the
 * 40 rounds) but the two reach every op together 7 ms after the others (a
 * round every 40 ms): asked for by a rise of 20 ms between rounds, S1
 * naming both, which one undetermined (random job 324); a first survey,
 * with no rise to explain, names nobody (a pipeline stage that always comes
 * last looks the same)
 */
static void survey_block(bool rose)
{
	struct survey sv;
	struct an_comm *w;
	struct job j;
	int g;

	job_init(&j);
	w = survey_world(&j, &sv);
	if (!w) {
		job_fini(&j);
		return;
	}
	for (g = 0; g < 2; g++) {
		sv.last[g] = g ? 22 : 18;
		sv.gap[g] = sv.last[g] * 0.5 * MS;
		sv.gmax[g] = 0.6 * MS;
		sv.blk[g] = 40;
		sv.blk_gap[g] = 40 * 7.0 * MS;
	}
	sv.s.blk_rounds = 40;
	if (rose) {
		sv.s.resurvey_rise = 2.0;
		sv.s.resurvey_extra = 20.0 * MS;
	}
	slow_survey_sampled(j.s.an, w, j.t);
	if (rose) {
		CHECK_INT(j.s.nv, 1);
		CHECK_INT(j.s.v[0].cls, AN_S1);
		CHECK_INT(j.s.v[0].ncul, 2);
		CHECK_INT(j.s.v[0].cul[0].rank, 0);
		CHECK_INT(j.s.v[0].cul[1].rank, 1);
		CHECK(strstr(j.s.v[0].text, "which one is undetermined") != NULL);
		CHECK(sv.s.survey_open && sv.s.survey_block);
	} else {
		CHECK_INT(j.s.nv, 0);
		CHECK(!sv.s.survey_open);
	}
	w->slow = NULL;
	job_fini(&j);
}

static void test_survey_block_after_rise(void)
{
	survey_block(true);
	survey_block(false);
}

/* the survey's sample: global 5's GPU last in 36 of 40 rounds, 12 ms behind */
static void survey_rank5_last(struct survey *sv)
{
	int g;

	for (g = 0; g < 8; g++) {
		sv->last[g] = g == 5 ? 36 : g == 0 ? 4 : 0;
		sv->gap[g] = g == 5 ? 36 * 12.0 * MS : g == 0 ? 4 * 0.1 * MS : 0;
		sv->gmax[g] = g == 5 ? 13.0 * MS : g == 0 ? 0.1 * MS : 0;
	}
}

/* the survey named global 5 S1 and keeps its incident open (NAMED), or nobody */
static void check_survey_named(const struct job *j, const struct survey *sv, bool named)
{
	if (!named) {
		CHECK_INT(j->s.nv, 0);
		CHECK(!sv->s.survey_open);
		return;
	}
	CHECK_INT(j->s.nv, 1);
	CHECK_INT(j->s.v[0].cls, AN_S1);
	CHECK_INT(j->s.v[0].ncul, 1);
	CHECK_INT(j->s.v[0].cul[0].rank, 5);
	CHECK(sv->s.survey_open);
}

/*
 * A survey whose sample shows global 5's GPU last in 36 of 40 rounds, 12 ms
 * behind (a round every 40 ms): S1 where each rank has a GPU of its own;
 * nobody where global 4 runs on the same GPU (the real-GPU acceptance's
 * healthy job, two ranks on one H200: rank 0 last in 56 of 74 rounds,
 * 2.36 ms behind, the GPU's turns between them)
 */
static void survey_gpu(bool shared)
{
	char gpu[32];
	struct survey sv;
	struct an_comm *w;
	struct job j;
	int g;

	job_init(&j);
	for (g = 0; g < 8; g++) {
		snprintf(gpu, sizeof(gpu), "%d 0000:%02x:00.0", g, 0x18 + (shared && g == 5 ? 4 : g));
		an_proc_label(j.s.an, j.s.host_id[0], 100 + (uint32_t)g, AN_LABEL_GPU, gpu);
	}
	w = survey_world(&j, &sv);
	if (w) {
		survey_rank5_last(&sv);
		CHECK_INT(an_gpu_shared(j.s.an, w, 5), shared);
		CHECK(!an_gpu_shared(j.s.an, w, 0));
		slow_survey_sampled(j.s.an, w, j.t);
		check_survey_named(&j, &sv, !shared);
		w->slow = NULL;
	}
	job_fini(&j);
}

static void test_survey_gpu_own(void)
{
	survey_gpu(false);
}

/*
 * The survey's straggler, global 5, last in 36 of 40 rounds, while the
 * kernel's TCP retransmits, on its links to globals 1, 4 and 6, put it at
 * the end of the connections that carry them (at least 20): which GPU comes last is the lossy link's
 * echo, the slowdown the network's (S2, global 5; test_trace_tcp_loss in
 * a CI run: the network part's rise sampled the lossy link's end last in
 * 76% of its rounds and said S1).  A few retransmits: S1 as before.
 */
static void survey_tcp(int nretrans)
{
	struct survey sv;
	struct an_comm *w;
	struct job j;
	int g;

	job_init(&j);
	w = survey_world(&j, &sv);
	if (w) {
		survey_rank5_last(&sv);
		/* on global 5's links to 4, 6 and 1, both ways */
		for (g = 0; g < nretrans; g++) {
			uint32_t peer = g % 3 == 0 ? 104 : g % 3 == 1 ? 106 : 101;

			an_tcp_event(j.s.an, j.s.host_id[0], g % 2 ? 105 : peer,
				     g % 2 ? peer : 105, AN_TCP_RETRANSMIT, 0, 0, "", j.t);
		}
		slow_survey_sampled(j.s.an, w, j.t);
		CHECK_INT(j.s.nv, 1);
		if (j.s.nv) {
			const struct an_verdict *v = &j.s.v[0];

			CHECK_INT(v->cls, nretrans >= 20 ? AN_S2 : AN_S1);
			CHECK_INT(v->ncul, 1);
			CHECK_INT(v->cul[0].rank, 5);
			CHECK(strstr(v->text, "rank 5's GPU reaches the op last") != NULL);
			CHECK((strstr(v->text, "which GPU comes last is an echo") != NULL) ==
			      (nretrans >= 20));
		}
		CHECK(sv.s.survey_open);
		CHECK_INT(sv.s.survey_cls, nretrans >= 20 ? AN_S2 : AN_S1);
		w->slow = NULL;
	}
	job_fini(&j);
}

/*
 * A comm whose rounds' starts are known (its CPUs wait for their GPUs) is
 * surveyed for a slow link only (random job 1281): the peer comparison
 * finds its stragglers with no history, so a sample showing global 5's GPU
 * last in 36 of 40 rounds, or global 6 late in its p2p ops, names no one
 * from the survey
 */
static void test_survey_link_only(void)
{
	struct survey sv;
	struct an_comm *w;
	struct job j;

	w = survey_pp_world(&j, &sv);
	if (w) {
		survey_rank5_last(&sv);
		sv.s.survey_link_only = true;
		slow_survey_sampled(j.s.an, w, j.t);
		CHECK_INT(j.s.nv, 0);
		CHECK_INT(sv.s.survey_p2p, 0);
		CHECK(!sv.s.survey_open);
		w->slow = NULL;
	}
	job_fini(&j);
}

/*
 * By parts, where the CPUs run ahead: global 5's GPU last in 36 of 40
 * rounds names no one (a part's last arriver may wait for another part's
 * straggler), but the pipeline rule, which needs the CPUs' entries only,
 * asks again about global 6 (30 ms late in its send/recv) and names it
 * when found again (a hybrid job whose DP comms sit on one host, no proxy
 * data to sample them, its world comm of 8 on one machine)
 */
static void test_survey_parts_p2p(void)
{
	bool in[8] = { false, false, false, false, true, true, true, true };
	struct survey sv;
	struct an_comm *w;
	struct job j;

	w = survey_pp_world(&j, &sv);
	if (w) {
		survey_rank5_last(&sv);
		/* the last of 2 parts */
		sv.s.samp_in = in;
		sv.s.samp_nparts = 2;
		sv.s.samp_part = 1;
		slow_survey_sampled(j.s.an, w, j.t);
		CHECK_INT(j.s.nv, 0);
		CHECK_INT(sv.s.survey_p2p, 7);
		sv.s.samp_t0 = j.t + 900 * MS;
		slow_survey_sampled(j.s.an, w, j.t + 1000 * MS);
		CHECK_INT(j.s.nv, 1);
		CHECK_INT(j.s.v[0].cls, AN_S1);
		CHECK_INT(j.s.v[0].ncul, 1);
		CHECK_INT(j.s.v[0].cul[0].rank, 6);
		CHECK(sv.s.survey_open);
		CHECK(sv.s.survey_recheck_parts);
		w->slow = NULL;
	}
	job_fini(&j);
}

/*
 * A survey by parts (the world comm of 8 on one machine, 4 hooked at a
 * time: random job 1242, rank 1's link 7x slower, attached late): a part
 * whose send steps are alike asks the next part; the part holding global
 * 5, its steps 4.7x the others', finds it, and a second survey 1 s later
 * that finds it again names it S2 (one that does not: a burst of load on
 * a machine with more processes than cores, random job 323, healthy).
 * Its arrivals (last in 36 of 40 rounds) name no one: a part's last
 * arriver may wait for another part's straggler.  Where no part shows a
 * slow link, nothing is said.
 */
struct parts {
	bool in[8];
	double net0[24], srate[8], slat[8], styp[8];
	bool few_bytes;		/* global 4's steps carry a tenth of the bytes */
};

/* part PART (0, 1) of 2 sampled: its ranks' steps LAT_MS, the others' not timed */
static void survey_part(struct an_comm *w, struct parts *p, uint32_t part, const double *lat_ms)
{
	struct an_slow *s = w->slow;
	int k;

	s->samp_in = p->in;
	s->samp_nparts = 2;
	s->samp_part = part;
	s->net0 = p->net0;
	s->srate = p->srate;
	s->slat = p->slat;
	s->styp = p->styp;
	s->have_srate = true;
	s->samp_rounds = 40;
	for (k = 0; k < 8; k++) {
		p->in[k] = (uint32_t)k / 4 == part;
		p->net0[3 * k + 2] = (double)w->r[k].net_steps;
		w->r[k].net_steps += 40;
		p->slat[k] = p->styp[k] = p->in[k] ? lat_ms[k] * MS : NAN;
		p->srate[k] = p->in[k] ? 1e9 / p->slat[k] : NAN;
		if (k == 4 && p->few_bytes)
			p->srate[k] /= 10;
	}
}

/* one survey of the two parts: the first hands over to the second, which ends it */
static void survey_both_parts(struct job *j, struct an_comm *w, struct parts *p,
			      const double *lat, uint64_t t)
{
	survey_part(w, p, 0, lat);
	CHECK(slow_survey_sampled(j->s.an, w, t));
	survey_part(w, p, 1, lat);
	CHECK(!slow_survey_sampled(j->s.an, w, t + 600 * MS));
}

/*
 * LINK: global 5's steps LINK ms (else 3.2), against 2.8-3.1 for the
 * others, in the first survey; AGAIN: in the second, asked 1 s later, too
 * (else alike: a burst of load).  FEW_BYTES: global 4's steps carry a
 * tenth of the others' bytes, its send rate the lowest (random job 1060).
 * A round every 40 ms: 7.5 ms against 3.0 costs 4.5 ms of it, over a
 * tenth (random job 1038, 21%: silent when a quarter was needed).
 */
static void survey_parts_case(double link, bool again, bool few_bytes)
{
	double slow[8] = { 2.9, 3.1, 3.0, 2.8, 3.0, 3.2, 2.9, 3.1 };
	const double alike[8] = { 2.9, 3.1, 3.0, 2.8, 3.0, 3.2, 2.9, 3.1 };
	struct parts p = { .few_bytes = few_bytes };
	struct survey sv;
	struct an_comm *w;
	struct job j;

	slow[5] = link ? link : 3.2;
	job_init(&j);
	w = survey_world(&j, &sv);
	if (w) {
		survey_rank5_last(&sv);
		sv.s.survey_link_only = true;
		survey_both_parts(&j, w, &p, slow, j.t);
		/* found once: asked about again, nothing said yet */
		CHECK_INT(j.s.nv, 0);
		CHECK_INT(sv.s.survey_link, link ? 6 : 0);
		CHECK(!sv.s.survey_open);
		if (link) {
			survey_both_parts(&j, w, &p, again ? slow : alike, j.t + 1600 * MS);
			CHECK_INT(sv.s.survey_link, 0);
			CHECK_INT(j.s.nv, again);
		}
		if (j.s.nv) {
			const struct an_verdict *v = &j.s.v[0];

			CHECK_INT(v->cls, AN_S2);
			CHECK_INT(v->ncul, 1);
			CHECK_INT(v->cul[0].rank, 5);
			CHECK(strstr(v->text, "part 2 of 2") != NULL);
			/* the onset: the first survey's start */
			CHECK(v->onset_ns == j.t - 39 * 40 * MS);
		}
		CHECK(sv.s.survey_open == (link && again));
		w->slow = NULL;
	}
	job_fini(&j);
}

static void survey_parts(bool link, bool again)
{
	survey_parts_case(link ? 14.0 : 0, again, false);
}

static void test_survey_parts_link(void)
{
	survey_parts(true, true);
}

static void test_survey_parts_link_tenth(void)
{
	survey_parts_case(7.5, true, false);
}

static void test_survey_parts_link_few_bytes(void)
{
	survey_parts_case(14.0, true, true);
}

static void test_survey_parts_burst(void)
{
	survey_parts(true, false);
}

static void test_survey_parts_none(void)
{
	survey_parts(false, false);
}

static void test_survey_tcp_echo(void)
{
	survey_tcp(30);
}

static void test_survey_tcp_few(void)
{
	survey_tcp(4);
}

/*
 * Two ops a step: global 5's GPU last in the first of each by 12 ms (20
 * rounds of 40, a round every 40 ms), the second's last arriver anyone,
 * 0.1 ms ahead.  Last in every round that kept the others waiting a
 * quarter of the interval or more: S1 (random job 1224, silent before).
 * Where global 0 also kept them waiting 10.5 ms in 7 rounds, global 5 is
 * last in 20 of those 27 only, under three quarters: nobody.
 */
static void survey_waits(bool others_wait)
{
	struct survey sv;
	struct an_comm *w;
	struct job j;
	int i;

	job_init(&j);
	w = survey_world(&j, &sv);
	if (w) {
		for (i = 0; i < 40; i++) {
			int last = i % 2 ? i / 2 % 8 : 5;
			double gap = i % 2 ? 0.1 * MS : 12.0 * MS;

			if (i % 2 && last == 5)
				last = 4;
			if (others_wait && i % 2 && i < 14) {
				last = 0;
				gap = 10.5 * MS;
			}
			sv.s.arr_log[i] = (struct arr_ent){ last, (float)gap };
			sv.last[last]++;
			sv.gap[last] += gap;
			if (gap > sv.gmax[last])
				sv.gmax[last] = gap;
		}
		CHECK_INT(sv.last[5], 20);
		slow_survey_sampled(j.s.an, w, j.t);
		check_survey_named(&j, &sv, !others_wait);
		w->slow = NULL;
	}
	job_fini(&j);
}

static void test_survey_last_when_waited(void)
{
	survey_waits(false);
}

static void test_survey_others_waited(void)
{
	survey_waits(true);
}

static void test_survey_gpu_shared(void)
{
	survey_gpu(true);
}

/*
 * TP as an intra-node comm (NVLink: no proxy steps, so no record shows when
 * a GPU left its ops), its CPUs running ahead, called by global 2 during
 * DP's sample: DP's straggler (global 2) may have waited there for global
 * 3, which would reach its own DP comm last alike (random job 724: TP 4 per
 * node, the DP comms naming ranks 5 and 4 for rank 4's slow GPU).  The
 * verdict names TP's ranks, undetermined; not where TP's ops are seen, its
 * starts known, or its latest call came before DP's sample.
 */
static void unseen_tp(struct job *j, bool intra, bool runahead, uint64_t call_ago_ms)
{
	struct an_rank *r = &j->tp->r[0];
	int k;

	for (k = 0; k < 2; k++)
		j->tp->r[k].intra_node = intra;
	j->tps.njudged = 64;
	j->tps.exact_bits = runahead ? 0 : ~0ull;
	j->dps.arr_t0 = j->t - 600 * MS;
	r->entered = 808;
	r->hist[808 % AN_HIST].seq = 808;
	r->hist[808 % AN_HIST].t_enter = j->t - call_ago_ms * MS;
}

static void test_unseen_intranode_wait(void)
{
	struct an_verdict v;
	struct job j;

	job_init(&j);
	unseen_tp(&j, true, true, 20);
	CHECK(slow_unseen_holder(j.s.an, j.dp, 1) == TP);
	/* DP's rank 0 (global 0) is in no intra-node comm */
	CHECK(slow_unseen_holder(j.s.an, j.dp, 0) == 0);
	/* the verdict of DP's sample: global 2 and 3, undetermined */
	dp_cascade(&j, &v);
	v.role = AN_ROOT;
	slow_sampled_cause(j.s.an, j.dp, &v, AN_S1, 1, 0.97, 12.3 * MS, NULL);
	CHECK_INT(v.ncul, 2);
	CHECK_INT(v.cul[0].pid, 102);
	CHECK_INT(v.cul[1].pid, 103);
	CHECK_INT(v.cul[1].rank, -1);	/* not a rank of DP */
	CHECK(sim_val(&v, "undetermined") && sim_val(&v, "undetermined")->i == 1);
	CHECK(strstr(v.text, "which one is undetermined") != NULL);
	CHECK_INT(v.role, AN_ROOT);
	/* its incident open: another comm's straggler in TP is a cascade of it */
	j.dps.active = true;
	j.dps.root_cul = 1;
	{
		struct an_comm *w = an_comm_get(j.s.an, W, 0, false);

		CHECK(w && slow_root_of(j.s.an, w, 3) == j.dp);
		CHECK(w && slow_root_of(j.s.an, w, 0) == NULL);
	}
	job_fini(&j);

	job_init(&j);
	unseen_tp(&j, false, true, 20);
	CHECK(slow_unseen_holder(j.s.an, j.dp, 1) == 0);
	dp_cascade(&j, &v);
	v.role = AN_ROOT;
	slow_sampled_cause(j.s.an, j.dp, &v, AN_S1, 1, 0.97, 12.3 * MS, NULL);
	CHECK_INT(v.ncul, 1);
	CHECK(!sim_val(&v, "undetermined"));
	job_fini(&j);

	job_init(&j);
	unseen_tp(&j, true, false, 20);
	CHECK(slow_unseen_holder(j.s.an, j.dp, 1) == 0);
	job_fini(&j);

	job_init(&j);
	unseen_tp(&j, true, true, 700);
	CHECK(slow_unseen_holder(j.s.an, j.dp, 1) == 0);
	job_fini(&j);
}

int main(void)
{
	test_root_found();
	test_jitter_is_not_a_root();
	test_held_there_too();
	test_peer_in_holder();
	test_waited_elsewhere();
	test_no_evidence();
	test_only_new_s1();
	test_p2p_root();
	test_p2p_not_behind();
	test_p2p_self_late();
	test_p2p_straggler();
	test_p2p_straggler_not();
	test_p2p_straggler_attached();
	test_p2p_straggler_attached_not();
	test_survey_p2p_asked_again();
	test_survey_p2p_burst();
	test_survey_rose();
	test_survey_block_after_rise();
	test_survey_gpu_own();
	test_survey_last_when_waited();
	test_survey_others_waited();
	test_survey_tcp_echo();
	test_survey_tcp_few();
	test_survey_gpu_shared();
	test_survey_link_only();
	test_survey_parts_p2p();
	test_survey_parts_link();
	test_survey_parts_link_tenth();
	test_survey_parts_link_few_bytes();
	test_survey_parts_burst();
	test_survey_parts_none();
	test_unseen_intranode_wait();
	return check_finish("test_an_chain");
}
