// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A job that is already hung (or moving) when ccld attaches: the analyzer
 * gets nothing but what memory holds (an_launched: NCCL's launch counters,
 * an_snapshot: the proxies' active ops with their arguments,
 * an_thread_state: the threads) and must name the culprit once the stall
 * threshold passed with no progress, saying the state came from memory.
 */
#include <sys/syscall.h>
#include "test_an_helpers.h"
#include "an_int.h"
#include "an_wire.h"

#define W 0x00000000000c0ffeull	/* 4 ranks */


static void mem_fn(struct sim *s, uint64_t hash, int r, const uint64_t per_fn[5])
{
	struct sim_comm *c = sim_find(s, hash);
	struct an_key k = sim_key(s, c, r);
	struct an_launch l = { .has_coll_ops = true, .nfn = 5 };
	int i;

	for (i = 0; i < 5; i++) {
		l.per_fn[i] = per_fn[i];
		l.ncoll += (int64_t)per_fn[i];
	}
	l.coll_ops = (uint64_t)l.ncoll;
	an_launched(s->an, &k, &l, sim_now(s, c, r));
}

/* one proxy sub of collective op SEQ (op id = seq << 1, kept + 1) */
static struct an_progress sub(int peer, enum an_dir dir, uint64_t posted, uint64_t tr,
			      uint64_t rc, uint64_t done, int64_t seq)
{
	struct an_progress p = {
		.seq = -1, .channel = 0, .peer = peer, .dir = dir, .posted = posted,
		.transmitted = tr, .received = rc, .done = done, .nsteps = 4,
		.op = ((uint64_t)seq << 1) + 1, .nbytes = 8 << 10,
		.has_args = true, .coll = 4, .dtype = 7, .redop = 0,
	};
	return p;
}

static void snap(struct sim *s, uint64_t hash, int r, const struct an_progress *p, size_t n)
{
	struct sim_comm *c = sim_find(s, hash);
	struct an_key k = sim_key(s, c, r);

	an_snapshot(s->an, &k, p, n, sim_now(s, c, r));
}

/*
 * Everyone but LATE launched 21 (seq 0..20), LATE 20: the 3 others wait
 * in seq 20 for LATE's data (their recv from it posted, nothing came).
 */
static void late_rank(struct sim *s, int late)
{
	int r;

	sim_comm(s, W, 4, NULL);
	for (r = 0; r < 4; r++) {
		struct an_progress p[2];

		sim_launched(s, W, r, r == late ? 20 : 21);
		if (r == late) {
			snap(s, W, r, NULL, 0);
			continue;
		}
		p[0] = sub((r + 1) % 4, AN_SEND, 4, 4, 0, 4, 20);
		p[1] = sub(late, AN_RECV, 4, 0, 0, 0, 20);
		snap(s, W, r, p, 2);
	}
}

static void test_h1_from_counts(void)
{
	struct sim s;
	const struct an_verdict *v;

	sim_init(&s, 3, 300);
	late_rank(&s, 2);
	sim_tick(&s, 2.5);
	CHECK_INT(s.nv, 0);		/* not before the stall threshold */
	sim_tick(&s, 1);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H1);
	CHECK_INT(v->role, AN_ROOT);
	CHECK_INT(v->seq, 20);
	CHECK_STR(sim_culprits(v), "2");
	CHECK(strstr(v->text, "launched up to seq 19, when is not known") != NULL);
	CHECK(strstr(v->text, "state read from memory at attach") != NULL);
	CHECK_STR(sim_val_s(v, "source"), "memory");
	check_latency(v, 3);
	sim_fini(&s);
}

/* the culprit's main thread as /proc showed it is cited */
static void test_thread_evidence(void)
{
	struct an_thread t = { .tid = 102, .state = 'S', .main = true, .syscall = 34,
			       .name = "python", .wchan = "__do_sys_pause" };
	struct sim s;
	const struct an_verdict *v;

	sim_init(&s, 3, 300);
	late_rank(&s, 2);
	an_thread_state(s.an, s.host_id[0], 102, &t, s.now[0]);
	sim_tick(&s, 3.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK(strstr(v->text, "its main thread is sleeping in pause() [__do_sys_pause]") != NULL);
	CHECK_STR(sim_val_s(v, "main_state"), "S");
	CHECK_STR(sim_val_s(v, "main_syscall"), "pause");
	sim_fini(&s);
}

/*
 * A rank in a checkpoint write that does not end: the file its write()
 * works on and how long, at least, it has been in it (since the first
 * look that found it there) are cited.
 */
static void test_thread_fd_evidence(void)
{
	struct an_thread t = { .tid = 102, .state = 'S', .main = true, .syscall = SYS_write,
			       .arg0 = 7, .name = "python", .wchan = "pipe_write",
			       .path = "/ckpt/step1200.pt" };
	struct sim s;
	const struct an_verdict *v;

	sim_init(&s, 3, 300);
	late_rank(&s, 2);
	an_thread_state(s.an, s.host_id[0], 102, &t, s.now[0]);
	sim_tick(&s, 1.0);
	/* the same place a second later: still since the first look */
	an_thread_state(s.an, s.host_id[0], 102, &t, s.now[0]);
	sim_tick(&s, 2.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK(strstr(v->text, "its main thread is sleeping in write() on /ckpt/step1200.pt"
			      " [pipe_write] for 3 s or more") != NULL);
	CHECK_STR(sim_val_s(v, "main_fd_path"), "/ckpt/step1200.pt");
	sim_fini(&s);
}

/* a look at memory is progress once; a job that then moves is healthy */
static void test_moving_after_attach(void)
{
	struct sim s;
	int i, r;

	sim_init(&s, 3, 300);
	late_rank(&s, 2);		/* caught between two launches */
	sim_call(&s, W, 2, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	for (r = 0; r < 4; r++)
		sim_find(&s, W)->next[r] = 21;
	for (i = 0; i < 40; i++) {
		sim_round(&s, W, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_tick(&s, 0.25);
	}
	CHECK_INT(s.nv, 0);
	/* the same look again, nothing new: no progress, no verdict either */
	sim_tick(&s, 1);
	CHECK_INT(s.nv, 0);
	sim_fini(&s);
}

/* all launched 21; rank 3's open op has other arguments */
static void args_case(uint8_t dtype3, uint64_t nbytes3, const char *field)
{
	struct sim s;
	const struct an_verdict *v;
	int r;

	sim_init(&s, 3, 300);
	sim_comm(&s, W, 4, NULL);
	for (r = 0; r < 4; r++) {
		struct an_progress p[2];

		sim_launched(&s, W, r, 21);
		p[0] = sub((r + 1) % 4, AN_SEND, 4, 4, 0, 2, 20);
		p[1] = sub((r + 3) % 4, AN_RECV, 4, 0, 2, 0, 20);
		if (r == 3) {
			p[0].dtype = p[1].dtype = dtype3;
			p[0].nbytes = p[1].nbytes = nbytes3;
		}
		snap(&s, W, r, p, 2);
	}
	sim_tick(&s, 3.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H2);
	CHECK_INT(v->seq, 20);
	CHECK_STR(sim_culprits(v), "3");
	CHECK_STR(sim_val_s(v, "field"), field);
	CHECK_STR(sim_val_s(v, "source"), "memory");
	CHECK(strstr(v->text, "as its process's memory holds it") != NULL);
	sim_fini(&s);
}

static void test_h2_from_args(void)
{
	args_case(8, 8 << 10, "dtype");		/* float64 where the others float32 */
	args_case(7, 12 << 10, "count");	/* more bytes: another count */
}

/*
 * Two channels; rank 1's send on channel 1 already finished (it left the
 * proxy), so rank 1 holds fewer bytes than the others but no other count:
 * never an H2.  Rank 3 with other bytes on both channels still is one.
 */
static void partial_case(bool other_count)
{
	struct sim s;
	const struct an_verdict *v;
	int r, i, n;

	sim_init(&s, 3, 300);
	sim_comm(&s, W, 4, NULL);
	for (r = 0; r < 4; r++) {
		struct an_progress p[4];

		sim_launched(&s, W, r, 21);
		for (n = 0, i = 0; i < 2; i++) {
			p[n] = sub((r + 1) % 4, AN_SEND, 4, 4, 0, 2, 20);
			p[n++].channel = i;
			p[n] = sub((r + 3) % 4, AN_RECV, 4, 0, 2, 0, 20);
			p[n++].channel = i;
		}
		if (r == 1)
			p[2] = p[--n];	/* channel 1's send is gone */
		for (i = 0; r == 3 && other_count && i < n; i++)
			p[i].nbytes = 12 << 10;
		snap(&s, W, r, p, (size_t)n);
	}
	sim_tick(&s, 3.5);
	for (i = 0; i < s.nv && s.v[i].cls != AN_H2; i++)
		;
	if (!other_count) {
		CHECK(i == s.nv);
	} else {
		CHECK(i < s.nv);
		v = &s.v[i < s.nv ? i : 0];
		CHECK_STR(sim_culprits(v), "3");
		CHECK_STR(sim_val_s(v, "field"), "count");
	}
	sim_fini(&s);
}

static void test_h2_partial_channels(void)
{
	partial_case(false);
	partial_case(true);
}

/*
 * Every rank launched 21 collectives, but rank 1 launched a Reduce where
 * the others launched only AllReduce: at some seq it called another type.
 */
static void test_h2_from_counts(void)
{
	const uint64_t same[5] = { 0, 0, 0, 0, 21 }, other[5] = { 0, 1, 0, 0, 20 };
	struct sim s;
	const struct an_verdict *v;
	int r;

	sim_init(&s, 3, 300);
	sim_comm(&s, W, 4, NULL);
	for (r = 0; r < 4; r++)
		mem_fn(&s, W, r, r == 1 ? other : same);
	sim_tick(&s, 3.5);
	/* counts alone do not say the job is stuck: nothing is open */
	CHECK_INT(s.nv, 0);
	for (r = 0; r < 4; r++) {
		struct an_progress p = sub((r + 3) % 4, AN_RECV, 4, 0, 0, 0, 20);

		snap(&s, W, r, &p, 1);
	}
	sim_tick(&s, 3.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H2);
	CHECK_STR(sim_culprits(v), "1");
	CHECK_STR(sim_val_s(v, "field"), "type");
	CHECK_STR(sim_val_s(v, "minority"), "Reduce");
	sim_fini(&s);
}

/*
 * All launched; a ring 0 -> 1 -> 2 -> 3 -> 0 where rank 2's GPU stalled:
 * it holds the 4 steps rank 1 sent and produced nothing; rank 3 got
 * nothing from it, so it forwarded only 2 steps, and so did rank 0.
 */
static void test_h3_gpu_from_memory(void)
{
	static const uint64_t sent[4] = { 2, 4, 0, 2 };	/* to rank r + 1 */
	struct sim s;
	const struct an_verdict *v;
	int r;

	sim_init(&s, 3, 300);
	sim_comm(&s, W, 4, NULL);
	for (r = 0; r < 4; r++) {
		int from = (r + 3) % 4;
		uint64_t got = sent[from];
		struct an_progress p[2];

		sim_launched(&s, W, r, 21);
		p[0] = sub((r + 1) % 4, AN_SEND, 4, sent[r], 0, sent[r], 20);
		p[1] = sub(from, AN_RECV, 4, 0, got, r == 2 ? 0 : got, 20);
		snap(&s, W, r, p, 2);
	}
	sim_tick(&s, 3.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H3);
	CHECK_STR(sim_culprits(v), "2");
	CHECK_INT(v->t4, AN_T4_GPU_NOT_READY);
	sim_fini(&s);
}

/* rank 3's process is gone: a live rank's peer table named its pid */
static void test_dead_peer(void)
{
	struct an_launch dead = { .ncoll = -1, .dead = true };
	struct sim s;
	const struct an_verdict *v;
	struct an_key k;
	int r;

	sim_init(&s, 3, 300);
	sim_comm(&s, W, 4, NULL);
	for (r = 0; r < 3; r++) {
		struct an_progress p = sub(3, AN_RECV, 4, 0, 0, 0, 20);

		sim_launched(&s, W, r, 21);
		snap(&s, W, r, &p, 1);
	}
	k = sim_key(&s, sim_find(&s, W), 3);
	an_launched(s.an, &k, &dead, s.now[0]);
	an_proc_state(s.an, s.host_id[0], 103, AN_PROC_EXITED, -1, s.now[0]);
	sim_tick(&s, 3.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H1);
	CHECK_INT(v->seq, 20);		/* the dead rank's unknown count is not the round */
	CHECK_STR(sim_culprits(v), "3");
	CHECK_INT(v->cul[0].pid, 103);
	CHECK(strstr(v->text, "exited before ccld attached") != NULL);
	sim_fini(&s);
}

/* a rank no traced process holds is said, not named */
static void test_untraced_said(void)
{
	struct sim s;
	const struct an_verdict *v;
	struct an_key k;
	int r;

	sim_init(&s, 3, 300);
	for (r = 0; r < 3; r++) {
		struct an_progress p = sub((r + 1) % 3, AN_RECV, 4, 0, 0, 0, 20);
		struct an_launch l = { .ncoll = 21, .has_coll_ops = true, .coll_ops = 21 };

		/* a 4-rank comm; rank 3's process is not traced */
		k = (struct an_key){ .host = s.host_id[0], .pid = 100 + (uint32_t)r,
				     .comm = W, .rank = r, .nranks = 4 };
		an_launched(s.an, &k, &l, s.now[0]);
		an_snapshot(s.an, &k, &p, 1, s.now[0]);
	}
	sim_tick(&s, 3.5);
	CHECK(s.nv >= 1);
	v = &s.v[0];
	CHECK(strstr(v->text, "1 of 4 ranks are not traced (rank 3)") != NULL);
	CHECK_INT(sim_val_i(v, "untraced"), 1);
	CHECK(v->ncul < 4 || v->cul[3].rank != 3);
	sim_fini(&s);
}

/*
 * The real-NCCL pairing of same-size calls (live, after the attach read
 * NCCL's counters): rank 1 skipped one of four same-size all-reduces of a
 * step.  Its three pair with rank 0's first three; rank 0's fourth waits
 * forever while both CPUs ran ahead and tier B completes per step only.
 * The proxy's op ids, mapped to seqs through collOpCount, show rank 0's
 * GPU on its fourth call: rank 1 never entered it (H1), not an H3.
 */
static void test_skip_under_runahead(void)
{
	static const int g[2] = { 0, 1 };
	struct sim s;
	const struct an_verdict *v;
	struct an_op ops[2][8];
	struct an_progress p;
	int r, i, n;

	sim_init(&s, 3, 300);
	sim_comm(&s, W, 2, g);
	for (r = 0; r < 2; r++)
		sim_launched(&s, W, r, 0);	/* read at attach: collOpCount = seq */
	for (i = 0; i < 4; i++)
		sim_round(&s, W, CCLD_FN_ALLREDUCE, 1024, 7);
	/* step: rank 0 calls 4, rank 1 calls 3; no completion (one event per step) */
	for (r = 0; r < 2; r++) {
		n = r ? 3 : 4;
		for (i = 0; i < n; i++)
			ops[r][i] = sim_call(&s, W, r, CCLD_FN_ALLREDUCE, 1024, 7);
	}
	/* tier C: the first three ops finished on both ranks, rank 0's 4th open */
	for (r = 0; r < 2; r++)
		for (i = 0; i < 3; i++) {
			struct an_key k = ops[r][i].k;

			p = sub(1 - r, AN_SEND, 4, 4, 0, 4, 4 + i);
			an_progress(s.an, &k, &p, s.now[0]);
		}
	p = sub(1, AN_RECV, 4, 0, 0, 0, 7);
	an_progress(s.an, &ops[0][3].k, &p, s.now[0]);
	sim_tick(&s, 3.5);
	v = sim_last_cls(&s, AN_H1);
	CHECK(v != NULL);
	if (v) {
		CHECK_INT(v->seq, 7);
		CHECK_STR(sim_culprits(v), "1");
	}
	CHECK(sim_last_cls(&s, AN_H3) == NULL);
	sim_fini(&s);
}

#define D0 0x00000000000e0001ull	/* the DP comms of random job 184 */
#define D1 0x00000000000e0002ull

/* W of ranks 0-3, the DP pairs D0 {0,1} and D1 {2,3} */
static void skip_comms(struct sim *s)
{
	static const int g0[2] = { 0, 1 }, g1[2] = { 2, 3 };

	sim_init(s, 3, 300);
	sim_comm(s, W, 4, NULL);
	sim_comm(s, D0, 2, g0);
	sim_comm(s, D1, 2, g1);
}

/* W seq SEQ: rank 1's sends wait for its GPU; the others' recv from it starves */
static void w_waits_for_rank1(struct sim *s, int64_t seq)
{
	struct an_progress p[6];
	int r, q, n;

	for (r = 0; r < 4; r++) {
		for (n = 0, q = 0; q < 4; q++) {
			if (q == r)
				continue;
			if (r == 1)
				p[n++] = sub(q, AN_SEND, 4, 0, 0, 0, seq);
			p[n++] = q == 1 ? sub(q, AN_RECV, 4, 0, 0, 0, seq) :
					  sub(q, AN_RECV, 4, 4, 4, 0, seq);
		}
		snap(s, W, r, p, (size_t)n);
	}
}

/*
 * Random job 184, attached late: ranks 0-3 share W (the loss all-reduce),
 * pairs {0,1} and {2,3} a DP comm each.  Rank 1 left out W's all-reduce of
 * a step and its CPU ran on: it launched 183 of W's collectives where the
 * others launched 184, and as many as its DP peer (184).  Its next
 * all-reduce is the one the others wait in (seq 182, their recv from it
 * starving), queued on its GPU behind a DP p2p op that waits for rank 0,
 * whose GPU is in W: everyone entered seq 182, yet rank 1 skipped a call.
 * CONFIRM false: its DP comm is not known, nothing shows its CPU stopped
 * where the others' did (a CPU a step behind has fewer launches too).
 */
static void skip_case(bool confirm)
{
	struct sim s;
	const struct an_verdict *v;
	struct an_progress p[6];
	int r, n;

	skip_comms(&s);
	for (r = 0; r < 4; r++) {
		sim_launched(&s, W, r, r == 1 ? 183 : 184);
		if (confirm || r != 1)
			sim_launched(&s, r < 2 ? D0 : D1, r % 2, 184);
	}
	w_waits_for_rank1(&s, 182);
	/* the DP comms: seq 183 open everywhere; rank 1's GPU in a p2p op before it */
	for (r = 0; r < 4; r++) {
		uint64_t d = r < 2 ? D0 : D1;

		n = 0;
		p[n++] = sub(1 - r % 2, AN_SEND, 4, 0, 0, 0, 183);
		p[n++] = sub(1 - r % 2, AN_RECV, 4, 0, 0, 0, 183);
		p[n] = sub(1 - r % 2, r == 1 ? AN_RECV : AN_SEND, 4, 0, 0, 0, 0);
		p[n++].op = 0x5bc;	/* a p2p op id is even */
		if (confirm || r != 1)
			snap(&s, d, r % 2, p, (size_t)n);
	}
	sim_tick(&s, 3.5);
	v = sim_find_v(&s, W, AN_V_NEW);
	CHECK(v != NULL);
	if (v && confirm) {
		CHECK_INT(v->cls, AN_H1);
		CHECK_INT(v->role, AN_ROOT);
		CHECK_STR(sim_culprits(v), "1");
		CHECK(strstr(v->text, "left out 1 call of this comm") != NULL);
		CHECK_INT(sim_val_i(v, "skipped"), 1);
		CHECK_STR(sim_val_s(v, "source"), "memory");
	} else if (v) {
		CHECK(v->cls != AN_H1);
	}
	sim_fini(&s);
}

static void test_skip_seen_from_counts(void)
{
	skip_case(true);
	skip_case(false);
}

/*
 * Random job 184 again (1 run in 11 here): rank 1's CPU ran on past the
 * host sync the others stopped at, so it launched more than each of them:
 * 185 of W's collectives against 184, and 186 of its DP comm's against
 * rank 0's 184.  The others wait in W seq 183, whose round rank 1's GPU
 * never reaches: it is in DP seq 184, which rank 0, whose CPU waits for
 * its GPU in W, never entered.  W names rank 1 (before: the DP comm's H1
 * named rank 0, W a cascade of it).  BEHIND: the same counts but rank 1
 * behind its DP peer (a CPU stopped by its own GPU): nobody named H1 on
 * W from the counts.
 */
static void skip_past_case(bool behind)
{
	struct sim s;
	const struct an_verdict *v;
	struct an_progress p[6];
	int r, n;

	skip_comms(&s);
	for (r = 0; r < 4; r++) {
		sim_launched(&s, W, r, r == 1 ? 185 : 184);
		sim_launched(&s, r < 2 ? D0 : D1, r % 2, r != 1 ? 184 : behind ? 183 : 186);
	}
	w_waits_for_rank1(&s, 183);
	/* DP: rank 1's GPU in seq 184 toward rank 0, which never entered it */
	for (r = 0; r < 4; r++) {
		n = 0;
		if (r == 1 && !behind) {
			p[n++] = sub(0, AN_SEND, 4, 0, 0, 0, 184);
			p[n++] = sub(0, AN_RECV, 4, 0, 0, 0, 184);
		}
		snap(&s, r < 2 ? D0 : D1, r % 2, p, (size_t)n);
	}
	sim_tick(&s, 3.5);
	v = sim_find_v(&s, W, AN_V_NEW);
	CHECK(v != NULL);
	if (v && !behind) {
		CHECK_INT(v->cls, AN_H1);
		CHECK_INT(v->role, AN_ROOT);
		CHECK_STR(sim_culprits(v), "1");
		CHECK(strstr(v->text, "its CPU ran past the host sync") != NULL);
		CHECK_INT(sim_val_i(v, "launched_past"), 1);
	} else if (v) {
		CHECK(v->cls != AN_H1 || strcmp(sim_culprits(v), "1") != 0);
	}
	sim_fini(&s);
}

static void test_skip_past_from_counts(void)
{
	skip_past_case(false);
	skip_past_case(true);
}

/*
 * Random job 549 (moe, 4 ranks, PP 2 x DP 2, attached late): rank 3 left a
 * step's DP all-reduce out and its CPU ran on.  Its pair D1 {2,3} holds
 * two counts, 171 (rank 3) and 172 (rank 2), and two ranks alone cannot
 * say which is off; D0 {0,1}, a comm of its size, launched 172 on each
 * rank: rank 3 is the one short, and on W it launched as many as its
 * peers.  Both D1 ranks wait in seq 170, rank 3's receive from rank 2
 * received and not consumed.  H1 naming rank 3 (before: H3 "GPU not
 * ready" at rank 3).  REFERENCE false: D0's counts not known, nothing
 * tells which of the pair is off: no H1.
 */
static void skip_pair_case(bool reference)
{
	struct sim s;
	const struct an_verdict *v;
	struct an_progress p[2];
	int r;

	skip_comms(&s);
	for (r = 0; r < 4; r++) {
		sim_launched(&s, W, r, 172);
		if (r >= 2)
			sim_launched(&s, D1, r - 2, r == 3 ? 171 : 172);
		else if (reference)
			sim_launched(&s, D0, r, 172);
	}
	for (r = 0; r < 2; r++) {
		p[0] = sub(1 - r, AN_SEND, 4, 0, 0, 0, 170);
		p[1] = sub(1 - r, AN_RECV, 4, r ? 4 : 0, r ? 4 : 0, 0, 170);
		snap(&s, D1, r, p, 2);
	}
	sim_tick(&s, 3.5);
	v = sim_find_v(&s, D1, AN_V_NEW);
	CHECK(v != NULL);
	if (v && reference) {
		CHECK_INT(v->cls, AN_H1);
		CHECK_INT(v->role, AN_ROOT);
		CHECK(v->ncul == 1 && v->cul[0].pid == 103);	/* global rank 3 */
		CHECK(strstr(v->text, "left out 1 call of this comm") != NULL);
		CHECK(strstr(v->text, "like each rank of the comms of its size") != NULL);
		CHECK_INT(sim_val_i(v, "skipped"), 1);
	} else if (v) {
		CHECK(v->cls != AN_H1);
	}
	sim_fini(&s);
}

static void test_skip_in_pair_from_counts(void)
{
	skip_pair_case(true);
	skip_pair_case(false);
}

#define E0 0x00000000000e0011ull	/* the DP comms of random job 888, in small */
#define E1 0x00000000000e0012ull

/*
 * Random job 888 (PyTorch, 16 ranks, PP 4 x DP 4, attached late), in
 * small: W of 8 ranks, DP comms E0 {0-3} and E1 {4-7}.  Rank 1 left W's
 * loss all-reduce of a step out and its CPU ran on into the next step: it
 * launched 290 of E0's collectives where ranks 0, 2 and 3 launched 288
 * (E1's ranks 288 too), and 144 of W's like every rank.  Its GPU waits in
 * E0 seq 288 for peers that never entered it: their CPUs wait for their
 * GPUs in cudaEventSynchronize, their GPUs in W seq 143, which waits for
 * rank 1.  H1 naming rank 1 (before: H1 naming ranks 0, 2 and 3, "never
 * entered").  CPU_STUCK: ranks 0, 2 and 3 stopped in their own code (no
 * CUDA sync): the H1 names them, as before.  MISMATCH: rank 1's W op is
 * another type (a Reduce for the others' AllReduce: it finishes its part
 * and runs on, random jobs 838 and 898): the H2 on W is the root, E0's H1
 * its cascade.
 */
enum ran_past { RP_SKIP, RP_CPU_STUCK, RP_MISMATCH };

static void ran_past_alone_case(enum ran_past mode)
{
	bool cpu_stuck = mode == RP_CPU_STUCK;
	static const int g0[4] = { 0, 1, 2, 3 }, g1[4] = { 4, 5, 6, 7 };
	struct an_progress p[16];
	const struct an_verdict *v;
	struct an_comm *w;
	struct sim s;
	int r, q, n;

	sim_init(&s, 3, 300);
	sim_comm(&s, W, 8, NULL);
	sim_comm(&s, E0, 4, g0);
	sim_comm(&s, E1, 4, g1);
	for (r = 0; r < 8; r++) {
		sim_launched(&s, W, r, 144);
		sim_launched(&s, r < 4 ? E0 : E1, r % 4, r == 1 ? 290 : 288);
	}
	/* W seq 143: rank 1's sends wait for its GPU, the others' receives from it starve */
	for (r = 0; r < 8; r++) {
		for (n = 0, q = 0; q < 8; q++) {
			if (q == r)
				continue;
			if (r == 1)
				p[n++] = sub(q, AN_SEND, 4, 0, 0, 0, 143);
			p[n++] = q == 1 ? sub(q, AN_RECV, 4, 0, 0, 0, 143) :
					  sub(q, AN_RECV, 4, 4, 4, 0, 143);
		}
		if (mode == RP_MISMATCH && r == 1)
			for (q = 0; q < n; q++)
				p[q].coll = 1;	/* ncclFuncReduce */
		snap(&s, W, r, p, (size_t)n);
	}
	/* E0: rank 1's GPU in seq 288, toward peers that never entered it */
	for (r = 0; r < 4; r++) {
		n = 0;
		if (r == 1)
			for (q = 0; q < 4; q++)
				if (q != 1) {
					p[n++] = sub(q, AN_SEND, 4, 0, 0, 0, 288);
					p[n++] = sub(q, AN_RECV, 4, 0, 0, 0, 288);
				}
		snap(&s, E0, r, p, (size_t)n);
		snap(&s, E1, r, NULL, 0);
	}
	w = an_comm_get(s.an, W, 0, false);
	for (r = 0; w && r < 8; r++) {
		struct an_proc *pr = w->r[r].proc ? &s.an->procs[w->r[r].proc - 1] : NULL;

		CHECK(pr != NULL);
		if (pr && (!cpu_stuck || r == 1 || r >= 4))
			pr->main_thread.cuda_sync = CCLD_FN_CUDA_EVENT_SYNC;
	}
	sim_tick(&s, 3.5);
	v = sim_find_v(&s, E0, AN_V_NEW);
	CHECK(v != NULL);
	if (v && mode == RP_MISMATCH) {
		const struct an_verdict *vw = sim_find_v(&s, W, AN_V_NEW);

		CHECK_INT(v->cls, AN_H1);
		CHECK_STR(sim_culprits(v), "1");
		CHECK_INT(v->role, AN_CASCADE);
		CHECK(vw != NULL);
		if (vw) {
			CHECK_INT(vw->cls, AN_H2);
			CHECK_INT(vw->role, AN_ROOT);
			CHECK_STR(sim_culprits(vw), "1");
		}
	} else if (v && !cpu_stuck) {
		CHECK_INT(v->cls, AN_H1);
		CHECK_INT(v->role, AN_ROOT);
		CHECK_STR(sim_culprits(v), "1");
		CHECK(strstr(v->text, "its CPU ran past the host sync") != NULL);
		CHECK(strstr(v->text, "which they never entered") != NULL);
		CHECK_INT(sim_val_i(v, "launched_past"), 2);
		CHECK_STR(sim_val_s(v, "source"), "memory");
	} else if (v) {
		CHECK_INT(v->cls, AN_H1);
		CHECK_STR(sim_culprits(v), "0,2,3");
	}
	sim_fini(&s);
}

#define X1 0x00000000000e0013ull	/* a DP comm of random job 1042, in small */

/*
 * Random job 1042 (16 ranks, TP 4 x DP 4, attached late), in small: W of
 * 4 ranks, X = {1,3}.  Rank 3's CPU stopped in its own code (pause)
 * before X's seq 177 and W's seq 59.  Rank 1 launched X's seq 177 and
 * waits for its GPU in cudaStreamSynchronize, its GPU in that op, which
 * waits for rank 3: it never entered W's seq 59 either.  W's "never
 * entered" lists ranks 1 and 3; rank 1 enters once X completes, which
 * waits for rank 3 alone: the incident's one culprit is rank 3 (before:
 * the root H1 named ranks 1 and 3).
 */
static void test_h1_culprit_held(void)
{
	static const int gx[2] = { 1, 3 };
	struct an_progress p[6];
	const struct an_verdict *v;
	struct an_comm *w;
	struct sim s;
	int r, q, n, roots = 0, i;

	sim_init(&s, 3, 300);
	sim_comm(&s, W, 4, NULL);
	sim_comm(&s, X1, 2, gx);
	for (r = 0; r < 4; r++)
		sim_launched(&s, W, r, r == 1 || r == 3 ? 59 : 60);
	sim_launched(&s, X1, 0, 178);
	sim_launched(&s, X1, 1, 177);
	/* W seq 59: ranks 0 and 2 wait for data from ranks 1 and 3 */
	for (r = 0; r < 4; r++) {
		n = 0;
		if (r == 0 || r == 2)
			for (q = 0; q < 4; q++)
				if (q != r) {
					p[n++] = sub(q, AN_SEND, 4, q & 1 ? 0 : 4, 0, q & 1 ? 0 : 4, 59);
					p[n++] = sub(q, AN_RECV, 4, q & 1 ? 0 : 4, q & 1 ? 0 : 4,
						     q & 1 ? 0 : 4, 59);
				}
		snap(&s, W, r, p, (size_t)n);
	}
	/* X seq 177: rank 1's GPU in it, nothing from rank 3 */
	p[0] = sub(1, AN_SEND, 4, 0, 0, 0, 177);
	p[1] = sub(1, AN_RECV, 4, 0, 0, 0, 177);
	snap(&s, X1, 0, p, 2);
	snap(&s, X1, 1, NULL, 0);
	w = an_comm_get(s.an, W, 0, false);
	CHECK(w && w->r[1].proc);
	if (w && w->r[1].proc)
		s.an->procs[w->r[1].proc - 1].main_thread.cuda_sync = CCLD_FN_CUDA_STREAM_SYNC;
	sim_tick(&s, 3.5);
	for (i = 0; i < s.nv; i++) {
		v = &s.v[i];
		if (v->kind != AN_V_NEW || v->role != AN_ROOT)
			continue;
		roots++;
		CHECK_INT(v->cls, AN_H1);
		CHECK_STR(sim_culprits(v), v->comm == W ? "3" : "1");
	}
	CHECK_INT(roots, 1);
	v = sim_find_v(&s, W, AN_V_NEW);
	CHECK(v && v->cls == AN_H1 && !strcmp(sim_culprits(v), "3"));
	sim_fini(&s);
}

static void test_ran_past_alone(void)
{
	ran_past_alone_case(RP_SKIP);
	ran_past_alone_case(RP_CPU_STUCK);
	ran_past_alone_case(RP_MISMATCH);
}

/*
 * Random job 185, attached late: W is the world comm of a 2-stage
 * pipeline, ranks 0,1 the first stage, 2,3 the second; every rank launched
 * 21 collectives and the 4 wait in seq 20 (the loss all-reduce).
 * NS_SKIP: rank 1 left its pipeline send to rank 3 out of a step's group
 * and ran on.  Rank 3's GPU is in that group's receive (p2p op 0x3c: its
 * send left, its receive from rank 1 starving), while rank 1's data of
 * seq 20, which rank 3's GPU has not reached, has arrived: rank 1's GPU
 * went past where that send belongs.  NS_SKIP_INTRA: the same with an
 * intra-node comm D of ranks 2 and 3 (no proxy data), which leaves their
 * GPUs' places unknown, as in job 185.  NS_STALL: no skip, rank 3's GPU
 * stalled before the group (its next group's send and receive both wait
 * for it, as the other ranks' do): nobody is named H1.  NS_TWO: both
 * second-stage ranks show such a receive, each from its own sender (a
 * later group whose sends the snapshot does not show, behind an intra-node
 * op): no H1 either.  NS_SKIP_LIVE: NS_SKIP_INTRA where the proxy's
 * records came live (step hooks, attached before the skip) rather than
 * from a look at memory: the same flows, the same H1 (random job 878:
 * moe, PP 2 x DP 4 on hosts of 4, rank 4 left its send to rank 0 out,
 * attached mid run; the intra-node DP comm's H3 naming ranks 0-3 was the
 * root before).
 */
enum never_sent { NS_SKIP, NS_SKIP_INTRA, NS_SKIP_LIVE, NS_STALL, NS_TWO };

static void never_sent_case(enum never_sent mode)
{
	const uint64_t D = 0x00000000000f0001ull;
	static const int gd[2] = { 2, 3 };
	bool skip = mode == NS_SKIP || mode == NS_SKIP_INTRA || mode == NS_SKIP_LIVE;
	struct sim s;
	const struct an_verdict *v;
	struct an_progress p[8];
	int r, n;

	sim_init(&s, 3, 300);
	sim_comm(&s, W, 4, NULL);
	if (mode != NS_SKIP && mode != NS_STALL) {
		sim_comm(&s, D, 2, gd);
		sim_launched(&s, D, 0, 30);
		sim_launched(&s, D, 1, 30);
	}
	for (r = 0; r < 4; r++) {
		int peer = r < 2 ? r + 2 : r - 2;

		sim_launched(&s, W, r, 21);
		n = 0;
		if (r < 2) {
			/* stage 0: its seq 20 data left; nothing from stage 1 */
			p[n++] = sub(2, AN_RECV, 4, 0, 0, 0, 20);
			p[n++] = sub(3, AN_RECV, 4, 0, 0, 0, 20);
		} else {
			/* stage 1: stage 0's data came, its own GPU not there */
			p[n++] = sub(0, AN_SEND, 4, 0, 0, 0, 20);
			p[n++] = sub(1, AN_SEND, 4, 0, 0, 0, 20);
			p[n++] = sub(0, AN_RECV, 4, 4, 4, 0, 20);
			p[n++] = sub(1, AN_RECV, 4, 4, 4, 0, 20);
		}
		if ((skip && r == 3) || (mode == NS_TWO && r >= 2)) {
			p[n] = sub(skip ? 1 : peer, AN_RECV, 4, 0, 0, 0, 0);
			p[n++].op = 0x3c;
		} else {
			/* the next step's group: nothing produced yet */
			p[n] = sub(peer, AN_SEND, 4, 0, 0, 0, 0);
			p[n++].op = 0x40;
			p[n] = sub(peer, AN_RECV, 4, 0, 0, 0, 0);
			p[n++].op = 0x40;
		}
		if (mode == NS_SKIP_LIVE) {
			struct an_key k = sim_key(&s, sim_find(&s, W), r);
			int i;

			for (i = 0; i < n; i++)
				an_progress(s.an, &k, &p[i], sim_now(&s, sim_find(&s, W), r));
		} else {
			snap(&s, W, r, p, (size_t)n);
		}
	}
	sim_tick(&s, 3.5);
	v = sim_find_v(&s, W, AN_V_NEW);
	CHECK(v != NULL);
	if (v && skip) {
		CHECK_INT(v->cls, AN_H1);
		CHECK_INT(v->role, AN_ROOT);
		CHECK_STR(sim_culprits(v), "1");
		CHECK(strstr(v->text, "rank 1 did not send to rank 3 before the collective") != NULL);
		CHECK_INT(sim_val_i(v, "peer"), 3);
		CHECK((strstr(v->text, "its intra-node ops is not known") != NULL) ==
		      (mode != NS_SKIP));
	} else if (v) {
		CHECK(v->cls != AN_H1);
	}
	sim_fini(&s);
}

static void test_send_never_posted(void)
{
	never_sent_case(NS_SKIP);
	never_sent_case(NS_SKIP_INTRA);
	never_sent_case(NS_SKIP_LIVE);
	never_sent_case(NS_STALL);
	never_sent_case(NS_TWO);
}

/* the version-2 records round-trip; version 1 still decodes */
static void test_wire(void)
{
	struct an_wire w, d;
	uint8_t buf[AN_WIRE_MAX];
	char err[128];
	int n;

	memset(&w, 0, sizeof(w));
	w.type = AW_LAUNCHED;
	w.t_ns = 42;
	w.k.pid = 7;
	w.k.comm = W;
	w.k.rank = 1;
	w.k.nranks = 4;
	w.launch.ncoll = 21;
	w.launch.has_coll_ops = true;
	w.launch.coll_ops = 20;
	w.launch.nfn = 5;
	w.launch.per_fn[1] = 1;
	w.launch.per_fn[4] = 20;
	n = an_wire_encode(&w, buf, sizeof(buf));
	CHECK(n > 0);
	CHECK_INT(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)), 0);
	CHECK_INT(d.type, AW_LAUNCHED);
	CHECK_INT(d.launch.ncoll, 21);
	CHECK_INT(d.launch.coll_ops, 20);
	CHECK_INT(d.launch.per_fn[1], 1);
	CHECK(d.launch.has_coll_ops && !d.launch.dead);
	CHECK(!d.launch.hosts_known && !d.launch.intra_node);
	/* version 4: the peer table's hosts */
	w.launch.hosts_known = w.launch.intra_node = true;
	n = an_wire_encode(&w, buf, sizeof(buf));
	CHECK_INT(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)), 0);
	CHECK(d.launch.hosts_known && d.launch.intra_node);
	/* those flags in a version-3 record are malformed */
	buf[0] = 3;
	CHECK(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)) < 0);

	memset(&w, 0, sizeof(w));
	w.type = AW_THREAD;
	w.k.pid = 7;
	w.thread.tid = 9;
	w.thread.state = 'D';
	w.thread.syscall = 74;
	snprintf(w.thread.name, sizeof(w.thread.name), "ckpt_writer");
	snprintf(w.thread.wchan, sizeof(w.thread.wchan), "io_schedule");
	n = an_wire_encode(&w, buf, sizeof(buf));
	CHECK(n > 0);
	CHECK_INT(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)), 0);
	CHECK_INT(d.thread.state, 'D');
	CHECK_INT(d.thread.syscall, 74);
	CHECK_STR(d.thread.wchan, "io_schedule");
	CHECK_STR(d.thread.path, "");
	CHECK_INT(d.thread.cuda_sync, 0);
	/* an older agent's record (version 5): no path text after wchan */
	buf[0] = 5;
	CHECK_INT(an_wire_decode(buf, (size_t)n - 1 - 9 - 1 - 1, &d, err, sizeof(err)), 0);
	CHECK_STR(d.thread.wchan, "io_schedule");
	CHECK_STR(d.thread.path, "");
	/* version 6: no CUDA synchronize after the path */
	buf[0] = 6;
	CHECK_INT(an_wire_decode(buf, (size_t)n - 9 - 1 - 1, &d, err, sizeof(err)), 0);
	CHECK_STR(d.thread.wchan, "io_schedule");
	/* version 7: no stack flag after it */
	buf[0] = 7;
	CHECK_INT(an_wire_decode(buf, (size_t)n - 1 - 1, &d, err, sizeof(err)), 0);
	CHECK_INT(d.thread.cuda_stack, 0);
	/* version 13: no native stack text at its end */
	buf[0] = 13;
	CHECK_INT(an_wire_decode(buf, (size_t)n - 1, &d, err, sizeof(err)), 0);
	CHECK_STR(d.thread.stack, "");
	buf[0] = AN_WIRE_VERSION;
	/* a thread state that is not a letter is refused */
	buf[2 + 8 + 8] = 0;
	CHECK(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)) < 0);
	/* version 6: what the call's fd names */
	snprintf(w.thread.path, sizeof(w.thread.path), "/ckpt/step1200.pt");
	n = an_wire_encode(&w, buf, sizeof(buf));
	CHECK_INT(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)), 0);
	CHECK_STR(d.thread.path, "/ckpt/step1200.pt");
	/* version 7: the CUDA synchronize the thread is inside; no other fn */
	w.thread.cuda_sync = CCLD_FN_CUDA_STREAM_SYNC;
	w.thread.cuda_since = 123456789;
	n = an_wire_encode(&w, buf, sizeof(buf));
	CHECK_INT(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)), 0);
	CHECK_INT(d.thread.cuda_sync, CCLD_FN_CUDA_STREAM_SYNC);
	CHECK(d.thread.cuda_since == 123456789);
	CHECK_INT(d.thread.cuda_stack, 0);
	buf[n - 11] = CCLD_FN_ALLREDUCE;
	CHECK(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)) < 0);
	/* version 8: found on the thread's stack; a flag that is not 0/1, or
	 * one without a synchronize, is refused */
	w.thread.cuda_stack = 1;
	n = an_wire_encode(&w, buf, sizeof(buf));
	CHECK_INT(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)), 0);
	CHECK_INT(d.thread.cuda_stack, 1);
	buf[n - 2] = 2;
	CHECK(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)) < 0);
	/* version 14: its native stack; a text as long as the field is refused */
	snprintf(w.thread.stack, sizeof(w.thread.stack), "write+0x17 < main+0x2f5");
	n = an_wire_encode(&w, buf, sizeof(buf));
	CHECK_INT(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)), 0);
	CHECK_STR(d.thread.stack, "write+0x17 < main+0x2f5");
	memset(w.thread.stack, 'x', sizeof(w.thread.stack));
	CHECK(an_wire_encode(&w, buf, sizeof(buf)) < 0);
	w.thread.stack[0] = '\0';
	w.thread.cuda_sync = 0;
	n = an_wire_encode(&w, buf, sizeof(buf));
	CHECK(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)) < 0);
	/* a version-1 clock record still decodes; a v1 AW_LAUNCHED does not exist */
	memset(&w, 0, sizeof(w));
	w.type = AW_CLOCK;
	n = an_wire_encode(&w, buf, sizeof(buf));
	buf[0] = 1;
	CHECK_INT(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)), 0);
	buf[1] = AW_LAUNCHED;
	CHECK(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)) < 0);

	/* version 10: a rank record's split color and comm name */
	memset(&w, 0, sizeof(w));
	w.type = AW_RANK;
	w.k.pid = 7;
	w.k.comm = W;
	w.k.rank = 1;
	w.k.nranks = 4;
	w.parent = 0xabc;
	w.color = 3;
	snprintf(w.comm_name, sizeof(w.comm_name), "tp3");
	n = an_wire_encode(&w, buf, sizeof(buf));
	CHECK(n > 0);
	CHECK_INT(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)), 0);
	CHECK(d.parent == 0xabc);
	CHECK_INT(d.color, 3);
	CHECK_STR(d.comm_name, "tp3");
	/* version 9: the parent ends it; no color, no name */
	buf[0] = 9;
	CHECK_INT(an_wire_decode(buf, (size_t)n - 4 - 1 - 3, &d, err, sizeof(err)), 0);
	CHECK(d.parent == 0xabc);
	CHECK_INT(d.color, -1);
	CHECK_STR(d.comm_name, "");
	/* a name with a NUL in it is refused */
	buf[0] = AN_WIRE_VERSION;
	buf[n - 2] = 0;
	CHECK(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)) < 0);

	/* version 10: a process's TCP endpoint */
	memset(&w, 0, sizeof(w));
	w.type = AW_ENDPOINT;
	w.k.pid = 7;
	snprintf(w.label, sizeof(w.label), "fd00::2");
	w.port = 41000;
	w.gone = true;
	n = an_wire_encode(&w, buf, sizeof(buf));
	CHECK(n > 0);
	CHECK_INT(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)), 0);
	CHECK_STR(d.label, "fd00::2");
	CHECK_INT(d.port, 41000);
	CHECK(d.gone);
	/* a gone flag that is not 0/1, a version-9 record of the type: refused */
	buf[n - 1] = 2;
	CHECK(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)) < 0);
	buf[n - 1] = 1;
	buf[0] = 9;
	CHECK(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)) < 0);
	/* an address as long as no numeric one is cannot be sent */
	memset(w.label, '1', 46);
	w.label[46] = '\0';
	CHECK(an_wire_encode(&w, buf, sizeof(buf)) < 0);
}

/*
 * Attached after a network stall on rank 0, memory only: P = {0,1} carries
 * the pipeline's p2p, C = {0,1} a collective after it in both streams.
 * Rank 1 sent its P data (its op done and freed: memory holds none of it)
 * and went on into C, where it waits for rank 0; rank 0's receive in P
 * never got the data.  C reads "rank 1 waits for rank 0, whose GPU is in
 * P"; P reads "rank 0 waits for rank 1, whose GPU is in C": a cycle.  The
 * flow misread is P's (its sender shows no side of the op): P is the
 * root and names rank 0 (before: C, the comm more ranks wait in, named
 * rank 1).
 */
static void test_cycle_sender_unseen(void)
{
	const uint64_t P = 0x00000000000d0001ull, C = 0x00000000000d0002ull;
	struct sim s;
	const struct an_verdict *v;
	struct an_progress p[2];

	sim_init(&s, 3, 300);
	sim_comm(&s, P, 2, NULL);
	sim_comm(&s, C, 2, NULL);
	sim_launched(&s, C, 0, 21);
	sim_launched(&s, C, 1, 21);
	/* rank 0: P's receive from rank 1 starving (a p2p op id is even) */
	p[0] = sub(1, AN_RECV, 4, 0, 0, 0, 20);
	p[0].op = 6;
	snap(&s, P, 0, p, 1);
	snap(&s, P, 1, NULL, 0);
	/* C: rank 0's send not transmitted (its GPU is in P); rank 1's left */
	p[0] = sub(1, AN_SEND, 4, 0, 0, 0, 20);
	p[1] = sub(1, AN_RECV, 4, 0, 0, 0, 20);
	snap(&s, C, 0, p, 2);
	p[0] = sub(0, AN_SEND, 4, 4, 0, 4, 20);
	p[1] = sub(0, AN_RECV, 4, 0, 0, 0, 20);
	snap(&s, C, 1, p, 2);
	sim_tick(&s, 3.5);
	v = sim_find_v(&s, P, AN_V_NEW);
	CHECK(v && v->role == AN_ROOT && v->cls == AN_H3);
	CHECK(v && !strcmp(sim_culprits(v), "0"));
	CHECK(v && strstr(v->text, "shows no side of the op") != NULL);
	v = sim_find_v(&s, C, AN_V_NEW);
	CHECK(v && v->role == AN_CASCADE && v->blocked_comm == P);
	sim_fini(&s);
}

/*
 * Attached after rank 1's GPU stalled, memory only.  E = {0,1,2,3} runs
 * an all-to-all, W = {0..7} the op after it in each stream, each op
 * exchanging with every peer.  Ranks 0, 2 and 3 sent their E data (their
 * send subs done and freed: rank 1 holds it, unconsumed) and wait for
 * rank 1's; data from the others waits unconsumed until all came, as a
 * GPU that takes a round's data at once leaves it.  Rank 1 produced
 * nothing in E or W.  In W, ranks 0-3 all read "GPU not ready": three of
 * those GPUs are in E (their E data reached a peer), so W waits for E and
 * E names rank 1 (before: W, the comm more ranks wait in, named 0-3).
 */
static void test_gpu_stall_behind_exchange(void)
{
	const uint64_t E = 0x00000000000f0001ull, W8 = 0x00000000000f0002ull;
	struct sim s;
	const struct an_verdict *v;
	struct an_progress p[16];
	int r, q, n;

	sim_init(&s, 3, 300);
	sim_comm(&s, W8, 8, NULL);
	sim_comm(&s, E, 4, NULL);
	for (r = 0; r < 4; r++) {
		sim_launched(&s, E, r, 21);
		for (n = 0, q = 0; q < 4; q++) {
			if (q == r)
				continue;
			if (r == 1)
				p[n++] = sub(q, AN_SEND, 4, 0, 0, 0, 20);
			p[n++] = sub(q, AN_RECV, 4, 0, q == 1 ? 0 : 4, 0, 20);
		}
		snap(&s, E, r, p, (size_t)n);
	}
	for (r = 0; r < 8; r++) {
		sim_launched(&s, W8, r, 21);
		for (n = 0, q = 0; q < 8; q++) {
			if (q == r)
				continue;
			if (r < 4)
				p[n++] = sub(q, AN_SEND, 4, 0, 0, 0, 20);
			p[n++] = sub(q, AN_RECV, 4, 0, q < 4 ? 0 : 4, 0, 20);
		}
		snap(&s, W8, r, p, (size_t)n);
	}
	sim_tick(&s, 3.5);
	v = sim_find_v(&s, E, AN_V_NEW);
	CHECK(v && v->role == AN_ROOT && v->cls == AN_H3);
	CHECK(v && !strcmp(sim_culprits(v), "1"));
	CHECK(v && v->t4 == AN_T4_GPU_NOT_READY);
	v = sim_find_v(&s, W8, AN_V_NEW);
	CHECK(v && v->role == AN_CASCADE && v->blocked_comm == E);
	sim_fini(&s);
}

/*
 * Random jobs 1336 and 1352 (pytorch, a 4-stage pipeline on the world comm
 * W, attached 1.3-1.5 s after rank 0's GPU stopped): every rank launched
 * 21 collectives.  Rank 0's memory holds two open ops of W, of the two id
 * sequences: its pipeline send to rank 1 (p2p op 0x3c) and the loss
 * all-reduce (seq 20), nothing of either produced, the data of ranks 2
 * and 3 waiting unconsumed.  Rank 1's GPU waits in the matching receive;
 * ranks 2 and 3 are in seq 20 (their data reached ranks 0 and 1).  Which
 * of its two ops rank 0's GPU is at, memory cannot say: an op id of one
 * sequence is no order against the other.  Placed in the all-reduce (the
 * one comm it waits in), the streams' orders looked crossed and rank 0
 * "did not send" (H1); its GPU not ready is what the flows show (H3).
 */
static void test_gpu_stall_two_sequences(void)
{
	struct sim s;
	const struct an_verdict *v;
	struct an_progress p[8];
	int r, q, n;

	sim_init(&s, 3, 300);
	sim_comm(&s, W, 4, NULL);
	for (r = 0; r < 4; r++) {
		sim_launched(&s, W, r, 21);
		n = 0;
		if (r < 2) {
			/* the pipeline op: rank 0's send, rank 1's receive */
			p[n] = sub(1 - r, r == 0 ? AN_SEND : AN_RECV, 4, 0, 0, 0, 0);
			p[n++].op = 0x3c;
		}
		for (q = 0; q < 4; q++) {
			if (q == r)
				continue;
			if (r < 2)
				p[n++] = sub(q, AN_SEND, 4, 0, 0, 0, 20);
			/* ranks 2 and 3 sent theirs; 0 and 1 nothing */
			p[n++] = q < 2 ? sub(q, AN_RECV, 4, 0, 0, 0, 20) :
					 sub(q, AN_RECV, 4, 4, 4, 0, 20);
		}
		snap(&s, W, r, p, (size_t)n);
	}
	sim_tick(&s, 3.5);
	v = sim_find_v(&s, W, AN_V_NEW);
	CHECK(v && v->role == AN_ROOT && v->cls == AN_H3);
	CHECK(v && !strcmp(sim_culprits(v), "0"));
	CHECK(v && v->t4 == AN_T4_GPU_NOT_READY);
	sim_fini(&s);
}

/*
 * Rank 2's process was SIGSTOPped before the attach: the tracer says so
 * (its state at attach) before any record of its ranks.  H1, "process
 * stopped", not the "GPU not ready" its frozen proxy counters read as.
 */
static void test_stopped_before_attach(void)
{
	struct sim s;
	const struct an_verdict *v;

	sim_init(&s, 3, 300);
	an_proc_state(s.an, s.host_id[0], 102, AN_PROC_STOPPED, 0, s.now[0]);
	late_rank(&s, 2);
	sim_tick(&s, 3.5);
	v = sim_find_v(&s, W, AN_V_NEW);
	CHECK(v && v->cls == AN_H1 && !strcmp(sim_culprits(v), "2"));
	CHECK(v && strstr(v->text, "process stopped") != NULL);
	sim_fini(&s);
}

/*
 * Hostile launch counters and op ids (fuzz_an_wire, a fresh-clone CI run):
 * an offset of op ids to seqs near INT64_MAX and an op id near 2^64 add up
 * past int64 (UBSan: signed overflow in an_op_seq).  Such an op has no
 * seq (-1), and nothing overflows.
 */
static void test_op_seq_overflow(void)
{
	struct an_launch l = { .ncoll = INT64_MAX - 2, .has_coll_ops = true, .coll_ops = 0 };
	struct an_progress p = sub(1, AN_RECV, 1, 0, 0, 0, 0);
	struct sim s;
	struct sim_comm *c;
	struct an_key k;
	int r;

	sim_init(&s, 5, 300);
	sim_comm(&s, W, 4, NULL);
	c = sim_find(&s, W);
	p.op = UINT64_MAX;
	for (r = 0; r < 4; r++) {
		k = sim_key(&s, c, r);
		an_launched(s.an, &k, &l, sim_now(&s, c, r));
		p.peer = (r + 1) % 4;
		snap(&s, W, r, &p, 1);
	}
	sim_tick(&s, 8);
	/* whatever it says (a look at memory, nothing moving), no seq it made up */
	CHECK(s.nv == 0 || strstr(s.v[0].text, "seq -1") == NULL);
	sim_fini(&s);
	{
		struct an_rank rk = { .op_off = INT64_MAX - 2, .op_off_ok = 1 };

		CHECK_INT(an_op_seq(&rk, UINT64_MAX), -1);
		CHECK_INT(an_op_seq(&rk, 5), INT64_MAX);
		CHECK_INT(an_op_seq(&rk, 7), -1);
	}
}

int main(void)
{
	test_op_seq_overflow();
	test_h1_from_counts();
	test_thread_evidence();
	test_thread_fd_evidence();
	test_moving_after_attach();
	test_h2_from_args();
	test_h2_partial_channels();
	test_h2_from_counts();
	test_h3_gpu_from_memory();
	test_dead_peer();
	test_untraced_said();
	test_skip_under_runahead();
	test_skip_seen_from_counts();
	test_skip_past_from_counts();
	test_skip_in_pair_from_counts();
	test_ran_past_alone();
	test_h1_culprit_held();
	test_send_never_posted();
	test_cycle_sender_unseen();
	test_gpu_stall_behind_exchange();
	test_gpu_stall_two_sequences();
	test_stopped_before_attach();
	test_wire();
	return check_finish("test_an_attach");
}
