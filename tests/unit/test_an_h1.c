// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* H1 not-entered hangs: late rank, exit, SIGSTOP, skipped op, p2p. */
#include "test_an_helpers.h"

#define TP 0x1111222233334444ull
#define DP 0x5555666677778888ull
#define PP 0x9999aaaabbbbccccull

static void warmup(struct sim *s, uint64_t comm, int rounds)
{
	int i;

	for (i = 0; i < rounds; i++) {
		sim_round(s, comm, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_step(s, 10000000);
	}
}

/* ranks 0-2 enter seq 10, rank 3 hangs in CPU code before it */
static void test_late_rank(void)
{
	struct sim s;
	const struct an_verdict *v;
	const struct an_value *val;
	int r;

	sim_init(&s, 10, 300);
	sim_comm(&s, TP, 4, NULL);
	warmup(&s, TP, 10);
	for (r = 0; r < 3; r++)
		sim_call(&s, TP, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_tick(&s, 9.5);
	CHECK_INT(s.nv, 0);
	CHECK_INT(s.nsuspect_on, 1);	/* at stall_s / 2 */
	CHECK(s.suspect_comm == TP);
	sim_tick(&s, 1);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->kind, AN_V_NEW);
	CHECK_INT(v->cls, AN_H1);
	CHECK_INT(v->role, AN_ROOT);
	CHECK(v->comm == TP);
	CHECK_INT(v->seq, 10);
	CHECK_STR(sim_culprits(v), "3");
	CHECK_INT(v->cul[0].pid, 103);
	check_latency(v, 10);
	val = sim_val(v, "culprit_seq");
	CHECK(val && val->i == 9);
	val = sim_val(v, "entered");
	CHECK(val && val->i == 3);
	CHECK(strstr(v->text, "running") != NULL);
	/* printed once per incident */
	sim_tick(&s, 30);
	CHECK_INT(s.nv, 1);
	/* rank 3 arrives: the round completes, recovery */
	{
		struct an_op op = sim_call(&s, TP, 3, CCLD_FN_ALLREDUCE,
					   1 << 20, 7);
		struct an_op o2 = op;

		for (r = 0; r < 4; r++) {
			o2.k = op.k;
			o2.k.rank = r;
			o2.k.pid = 100 + (uint32_t)r;
			sim_complete(&s, &o2);
		}
	}
	sim_tick(&s, 0.5);
	CHECK_INT(s.nv, 2);
	CHECK_INT(s.v[1].kind, AN_V_RECOVERED);
	CHECK(s.v[1].comm == TP);
	CHECK_INT(s.v[1].seq, 10);
	CHECK_INT(s.nsuspect_off, 1);
	sim_tick(&s, 60);
	CHECK_INT(s.nv, 2);
	sim_fini(&s);
}

/* rank 2 exits between rounds; the others wait in seq 5 */
static void test_exit(void)
{
	struct sim s;
	const struct an_verdict *v;

	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 4, NULL);
	warmup(&s, TP, 5);
	an_proc_state(s.an, s.host_id[0], 102, AN_PROC_EXITED, 9, s.now[0]);
	sim_call(&s, TP, 0, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_call(&s, TP, 1, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_call(&s, TP, 3, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H1);
	CHECK_INT(v->seq, 5);
	CHECK_STR(sim_culprits(v), "2");
	CHECK(strstr(v->text, "exited") != NULL);
	check_latency(v, 5);
	sim_fini(&s);
}

/*
 * Rank 2 (pid 102) exits after 5 rounds (its socket at 10.0.0.2:41000 gone
 * with it where ENDPOINT_GONE), the others enter seq 7, and rank 3 (pid
 * 103) warns that its connection to 10.0.0.2<41000> was closed
 */
static void exit_then_peer_warns(struct sim *s, bool endpoint_gone)
{
	warmup(s, TP, 5);
	an_proc_state(s->an, s->host_id[0], 102, AN_PROC_EXITED, 9, s->now[0]);
	if (endpoint_gone)
		an_endpoint(s->an, s->host_id[0], 102, "10.0.0.2", 41000, true);
	sim_call(s, TP, 0, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_call(s, TP, 1, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_call(s, TP, 3, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	an_nccl_warning(s->an, s->host_id[0], 103, "misc/socket.cc", 71,
			"socketProgress: Connection closed by remote peer 10.0.0.2<41000>",
			s->now[0] + SEC);
}

/*
 * NCCL's warnings in the verdict: the exited rank's peer (rank 3, pid 103)
 * found its connection closed and warned; an hour-old warning of rank 0
 * (pid 100) is not this incident's.  With a warning of the culprit's own,
 * that one is cited instead.
 */
static void exit_with_warnings(bool culprit_warns)
{
	struct sim s;
	const struct an_verdict *v;

	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 4, NULL);
	an_nccl_warning(s.an, s.host_id[0], 100, "init.cc", 12, "an old warning", s.now[0]);
	s.now[0] += 3600 * SEC;
	exit_then_peer_warns(&s, false);
	if (culprit_warns)
		an_nccl_warning(s.an, s.host_id[0], 102, "misc/cudawrap.cc", 9,
				"Cuda failure 'an illegal memory access'", s.now[0]);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H1);
	CHECK_STR(sim_culprits(v), "2");
	CHECK(strstr(v->text, "an old warning") == NULL);
	if (culprit_warns) {
		CHECK(strstr(v->text, "; rank 2 (pid 102) logged NCCL WARN 5.2 s before: "
			  "\"Cuda failure 'an illegal memory access'\" (misc/cudawrap.cc:9)") != NULL);
		CHECK_INT(sim_val_i(v, "nccl_warn_rank"), 2);
	} else {
		CHECK(strstr(v->text, "; its peer rank 3 (pid 103) logged NCCL WARN 4.2 s before: "
			  "\"socketProgress: Connection closed by remote peer 10.0.0.2<41000>\" "
			  "(misc/socket.cc:71)") != NULL);
		CHECK_INT(sim_val_i(v, "nccl_warn_rank"), 3);
	}
	CHECK_INT(sim_val_i(v, "nccl_warnings"), 1);
	sim_fini(&s);
}

static void test_exit_peer_warned(void)
{
	exit_with_warnings(false);
}

/*
 * The peer's warning names the exited rank by its address: the agents saw
 * pid 102 with connections at 10.0.0.2:41000 until it exited, so the
 * verdict says which rank that is.  Where two live processes were seen at
 * that address (two networks with the same addresses), it names nobody.
 */
static void warn_names_peer(bool ambiguous)
{
	struct sim s;
	const struct an_verdict *v;

	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 4, NULL);
	an_endpoint(s.an, s.host_id[0], 102, "10.0.0.2", 41000, false);
	an_endpoint(s.an, s.host_id[0], 102, "10.0.0.9", 50000, false);
	an_endpoint(s.an, s.host_id[0], 101, "::ffff:10.0.0.2", 41001, false);
	if (ambiguous)
		an_endpoint(s.an, s.host_id[0], 100, "10.0.0.2", 41000, false);
	exit_then_peer_warns(&s, true);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_STR(sim_culprits(v), "2");
	if (ambiguous) {
		CHECK(strstr(v->text, "<41000> is") == NULL);
		CHECK(sim_val(v, "nccl_warn_peer_pid") == NULL);
	} else {
		CHECK(strstr(v->text, "(misc/socket.cc:71); 10.0.0.2<41000> is rank 2 of this "
			     "comm (pid 102 on h0, exited)") != NULL);
		CHECK_INT(sim_val_i(v, "nccl_warn_peer_rank"), 2);
		CHECK_INT(sim_val_i(v, "nccl_warn_peer_pid"), 102);
	}
	sim_fini(&s);
}

static void test_warn_names_peer(void)
{
	warn_names_peer(false);
	warn_names_peer(true);
}

static void test_exit_culprit_warned(void)
{
	exit_with_warnings(true);
}

/* rank 1 is SIGSTOPped inside seq 7 after entering it: stopped wins */
static void test_stopped(void)
{
	struct sim s;
	const struct an_verdict *v;
	int r;

	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 4, NULL);
	warmup(&s, TP, 7);
	for (r = 0; r < 4; r++)
		sim_call(&s, TP, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	an_proc_state(s.an, s.host_id[0], 101, AN_PROC_STOPPED, 0, s.now[0]);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H1);
	CHECK_INT(v->seq, 7);
	CHECK_STR(sim_culprits(v), "1");
	CHECK(strstr(v->text, "stopped") != NULL);
	/*
	 * SIGCONT alone is not progress: same incident, but rank 1 is no
	 * longer a stopped culprit, so the picture is updated (not recovered)
	 */
	an_proc_state(s.an, s.host_id[0], 101, AN_PROC_RUNNING, 0, s.now[0]);
	sim_tick(&s, 1);
	CHECK_INT(s.nv, 2);
	CHECK_INT(s.v[1].kind, AN_V_UPDATE);
	CHECK_INT(s.v[1].cls, AN_H3);
	CHECK_INT(s.v[1].seq, 7);
	sim_fini(&s);
}

/*
 * Rank 3 skips the TP all-reduce at seq 4 (of 6 per iteration): the others
 * pair its later calls off by one and the job hangs only at the end, with
 * rank 3 one call short on TP (seq 16 vs 17) and gone on to DP, where it
 * completes with rank 7.
 */
static void test_skip(void)
{
	static const int dp_g[2] = { 3, 7 };
	struct sim s;
	const struct an_verdict *v;
	int it, i, r;

	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 4, NULL);
	{
		static const int g[4] = { 4, 5, 6, 7 };

		sim_comm(&s, 0x7777ull, 4, g);	/* the other TP group */
	}
	sim_comm(&s, DP, 2, dp_g);
	for (it = 0; it < 3; it++) {
		for (i = 0; i < 6; i++) {
			for (r = 0; r < 4; r++) {
				uint64_t count = 1000 + (uint64_t)i;

				if (r == 3 && it == 1 && i == 4)
					continue;	/* the skipped call */
				/* shifted after the skip: completes anyway */
				sim_call(&s, TP, r, CCLD_FN_ALLREDUCE, count, 7);
			}
			sim_round(&s, 0x7777ull, CCLD_FN_ALLREDUCE, 1000, 7);
			sim_step(&s, 10000000);
		}
		/* GPU completion of the TP rounds, except the last, unpaired */
		{
			struct sim_comm *c = sim_find(&s, TP);

			for (r = 0; r < 4; r++) {
				struct an_key k = sim_key(&s, c, r);
				int64_t upto = c->next[r] - 1;

				if (it == 2 && r != 3)
					upto--;
				an_complete_upto(s.an, &k, upto, s.now[0]);
			}
		}
		if (it < 2)
			sim_round(&s, DP, CCLD_FN_ALLREDUCE, 1 << 22, 7);
		sim_step(&s, 10000000);
	}
	/* rank 3 enters DP with rank 7 and both complete; ranks 0-2 wait in TP */
	sim_round(&s, DP, CCLD_FN_ALLREDUCE, 1 << 22, 7);
	sim_tick(&s, 6);
	v = sim_find_v(&s, TP, AN_V_NEW);
	CHECK(v != NULL);
	if (v) {
		CHECK_INT(v->cls, AN_H1);
		CHECK_INT(v->role, AN_ROOT);
		CHECK_INT(v->seq, 17);
		CHECK_STR(sim_culprits(v), "3");
		check_latency(v, 5);
	}
	CHECK(sim_find_v(&s, DP, AN_V_NEW) == NULL);
	CHECK_INT(s.nv, 1);
	sim_fini(&s);
}

/* a PP comm of 2 ranks, N rounds of rank 0 sending to rank 1, completed */
static void pp_rounds(struct sim *s, int n)
{
	int i;

	sim_init(s, 5, 300);
	sim_comm(s, PP, 2, NULL);
	for (i = 0; i < n; i++) {
		struct an_op a = sim_p2p(s, PP, 0, 1, 0, 4096, true);
		struct an_op b = sim_p2p(s, PP, 1, 0, 1, 4096, true);

		sim_complete(s, &a);
		sim_complete(s, &b);
		sim_step(s, 10000000);
	}
}

/* PP send/recv: rank 0 sends its 4th microbatch, rank 1 never receives */
static void test_p2p(void)
{
	struct sim s;
	const struct an_verdict *v;

	pp_rounds(&s, 3);
	sim_p2p(&s, PP, 0, 1, 0, 4096, false);	/* blocked inside */
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H1);
	CHECK(v->p2p);
	CHECK_INT(v->seq, 3);
	CHECK_STR(sim_culprits(v), "1");
	CHECK(strstr(v->text, "never returned") != NULL);
	sim_fini(&s);
}

/*
 * Rank STOPPED is SIGSTOPped with its 4th send (rank 0) or receive (rank 1)
 * in flight, its peer's matching op in flight too: no op is unmatched, and
 * the stopped rank holds the pair, whichever rank is met first.  Rank 1
 * stopped: rank 0, met first, waits, and rank 1 did enter its receive
 * (test_hang_scenarios sigstop-any in a CI run: "never entered the Send",
 * where the stopped rank had posted it)
 */
static void p2p_stopped(int32_t stopped)
{
	struct sim s;
	const struct an_verdict *v;
	char want[2] = { (char)('0' + stopped), 0 };
	uint32_t i, n;

	pp_rounds(&s, 3);
	sim_p2p(&s, PP, 0, 1, 0, 4096, true);
	sim_p2p(&s, PP, 1, 0, 1, 4096, true);
	an_proc_state(s.an, s.host_id[0], 100 + (uint32_t)stopped, AN_PROC_STOPPED, 0, s.now[0]);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H1);
	CHECK(v->p2p);
	CHECK_INT(v->seq, 3);
	CHECK_STR(sim_culprits(v), want);
	CHECK_INT(v->fn, stopped ? CCLD_FN_RECV : CCLD_FN_SEND);
	CHECK(strstr(v->text, "process stopped") != NULL);
	CHECK(strstr(v->text, "stopped in") != NULL);
	CHECK(strstr(v->text, "never entered") == NULL);
	CHECK_INT(sim_val_i(v, "peer"), 1 - stopped);
	/* once: a JSON reader keeps the last of two keys alike (the checker of
	 * test_hang_scenarios sigstop-any in a CI run read the culprit's rank) */
	for (i = n = 0; i < v->nval; i++)
		n += !strcmp(v->val[i].key, "peer");
	CHECK_INT(n, 1);
	sim_fini(&s);
}

static void test_p2p_stopped(void)
{
	p2p_stopped(0);
	p2p_stopped(1);
}

/*
 * The same hang seen by tracers attached at different times: rank 0's p2p
 * counter started 5 sends before rank 1's, so its counts run 5 ahead.  Its
 * own sends all finished on the GPU and it posts no more: rank 0 is the one
 * that never entered.  Comparing the counts (8 sends against 4 receives)
 * would blame rank 1 instead.
 */
static void p2p_attach_round(struct sim *s, int r, int peer, int recv, bool done)
{
	struct an_op op = sim_p2p_attach(s, PP, r, peer, recv, 4096);

	if (done)
		sim_complete(s, &op);
}

static void test_p2p_from_attach(void)
{
	struct sim s;
	const struct an_verdict *v;
	int i;

	sim_init(&s, 5, 300);
	sim_comm(&s, PP, 2, NULL);
	for (i = 0; i < 5; i++)		/* before rank 1's tracer attached */
		p2p_attach_round(&s, 0, 1, 0, true);
	for (i = 0; i < 3; i++) {
		p2p_attach_round(&s, 0, 1, 0, true);
		p2p_attach_round(&s, 1, 0, 1, true);
		sim_step(&s, 10000000);
	}
	p2p_attach_round(&s, 1, 0, 1, false);	/* rank 0 never sends it */
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H1);
	CHECK(v->p2p);
	CHECK_STR(sim_culprits(v), "0");
	CHECK(strstr(v->text, "counted from the attach") != NULL);
	CHECK_INT(v->seq, 3);	/* rank 1's own count: its 4th receive */
	sim_fini(&s);
}

/*
 * A pipeline on a comm that has collectives too (PyTorch's p2p on the
 * world comm), counted from the attach: rank 1 posts its receive from
 * rank 0, then enters the comm's all-reduce; rank 0 left that step's send
 * out and entered the all-reduce as well.  Every rank entered the round
 * (no H1, no H2 there), but rank 1's receive, entered before it, waits
 * for a send rank 0 never posted: every send it posted since the attach
 * finished on its GPU, and its CPU is past the pair.  Rank 0 is the
 * culprit, not "no progress data tells which one" of the round.
 */
static void test_p2p_from_attach_before_round(void)
{
	struct sim s;
	const struct an_verdict *v;
	struct an_op a, b;
	int i;

	sim_init(&s, 5, 300);
	sim_comm(&s, PP, 2, NULL);
	for (i = 0; i < 3; i++) {
		p2p_attach_round(&s, 0, 1, 0, true);
		p2p_attach_round(&s, 1, 0, 1, true);
		sim_round(&s, PP, CCLD_FN_ALLREDUCE, 1024, 7);
		sim_step(&s, 10000000);
	}
	p2p_attach_round(&s, 1, 0, 1, false);	/* rank 0 never sends it */
	sim_step(&s, 1000000);
	a = sim_call(&s, PP, 0, CCLD_FN_ALLREDUCE, 1024, 7);
	b = sim_call(&s, PP, 1, CCLD_FN_ALLREDUCE, 1024, 7);
	(void)a;
	(void)b;
	sim_tick(&s, 5.5);
	v = sim_find_v(&s, PP, AN_V_NEW);
	CHECK(v != NULL);
	if (v) {
		CHECK_INT(v->cls, AN_H1);
		CHECK(v->p2p);
		CHECK_STR(sim_culprits(v), "0");
		CHECK(strstr(v->text, "has no Send toward rank 1 open") != NULL);
	}
	sim_fini(&s);
}

/*
 * Counted from the attach, both sides with one op open toward each other:
 * that is the matching pair, and its counts differ (H2), whatever the
 * counters say.
 */
static void test_p2p_from_attach_mismatch(void)
{
	struct sim s;
	const struct an_verdict *v;
	int i;

	sim_init(&s, 5, 300);
	sim_comm(&s, PP, 2, NULL);
	for (i = 0; i < 7; i++)
		p2p_attach_round(&s, 0, 1, 0, true);
	for (i = 0; i < 2; i++)
		p2p_attach_round(&s, 1, 0, 1, true);
	sim_p2p_attach(&s, PP, 0, 1, 0, 4096);
	sim_p2p_attach(&s, PP, 1, 0, 1, 2048);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H2);
	CHECK_STR(sim_culprits(v), "0,1");
	CHECK(strstr(v->text, "count") != NULL);
	sim_fini(&s);
}

/*
 * Collective seqs counted from the attach (NCCL's counter unreadable): rank
 * 0's count runs 5 ahead of rank 1's.  Rank 0 finished everything it
 * entered and enters no more; rank 1 waits in its all-reduce.  By seq,
 * rank 1 (seq 3 against 7) would look behind: it must be rank 0.
 */
static void coll_attach_call(struct sim *s, int r, bool done)
{
	struct sim_comm *c = sim_find(s, TP);
	struct an_op op = sim_op(s, c, r, CCLD_FN_ALLREDUCE, 1024, 7);

	c->next[r]++;
	op.seq_from_attach = true;
	an_op_enter(s->an, &op);
	an_op_return(s->an, &op, 0, op.t_ns + 20000);
	if (done)
		sim_complete(s, &op);
}

static void test_coll_from_attach(void)
{
	struct sim s;
	const struct an_verdict *v;
	int i;

	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 2, NULL);
	for (i = 0; i < 5; i++)
		coll_attach_call(&s, 0, true);
	for (i = 0; i < 3; i++) {
		coll_attach_call(&s, 0, true);
		coll_attach_call(&s, 1, true);
		sim_step(&s, 10000000);
	}
	coll_attach_call(&s, 1, false);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H1);
	CHECK_STR(sim_culprits(v), "0");
	CHECK(strstr(v->text, "counted from the attach") != NULL);
	sim_fini(&s);
}

/*
 * A job with many idle comms (created, used once, quiet since: PyTorch
 * keeps groups that serve only at checkpoints): an evaluation looks at a
 * bounded number of quiet comms, and the stuck one must be among them
 * whatever the hash table's order.
 */
static void test_many_idle_comms(void)
{
	struct sim s;
	int i, r, found = 0;

	sim_init(&s, 10, 300);
	sim_comm(&s, TP, 4, NULL);
	warmup(&s, TP, 5);
	for (i = 0; i < 300; i++) {
		uint64_t hash = 0x1d1e000000000000ull + (uint64_t)i * 0x9e3779b97f4a7c15ull % 1000003;

		for (r = 0; r < 2; r++) {
			struct an_key k = { .host = s.host_id[0], .pid = 100 + (uint32_t)r,
					    .comm = hash, .rank = r, .nranks = 2 };
			struct an_op op = { .k = k, .tid = k.pid, .fn = CCLD_FN_ALLREDUCE,
					    .seq = 0, .count = 1, .dtype = 7, .redop = 0,
					    .root = -1, .peer = -1, .t_ns = s.now[0] };

			CHECK_INT(an_rank(s.an, &k, 0, s.now[0]), 0);
			an_op_enter(s.an, &op);
			an_op_return(s.an, &op, 0, op.t_ns + 1000);
			an_op_complete(s.an, &op, op.t_ns + 2000);
		}
	}
	sim_tick(&s, 60);
	CHECK_INT(s.nv, 0);
	for (r = 0; r < 3; r++)
		sim_call(&s, TP, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_tick(&s, 11);
	for (i = 0; i < s.nv; i++)
		if (s.v[i].comm == TP && s.v[i].cls == AN_H1 && s.v[i].role == AN_ROOT &&
		    !strcmp(sim_culprits(&s.v[i]), "3"))
			found++;
	CHECK_INT(found, 1);
	CHECK_INT(s.nv, 1);
	sim_fini(&s);
}

/*
 * Rank 3's GPU stalls in work queued after its last collective (a copy, a
 * kernel) while its CPU waits for it in cudaStreamSynchronize: it never
 * calls seq 10, and no NCCL op is pending on its GPU.  Not a CPU hang: H3,
 * GPU not ready, naming it; also where the synchronize was found on the
 * thread's stack (entered before the attach: a bound on the wait).  The
 * same without the synchronize stays H1; with a synchronize entered just
 * before the verdict (shorter than the suspicion time) too, but its words
 * name the synchronize, not only the futex it sleeps in.
 */
static void test_gpu_stuck_outside(void)
{
	struct an_thread t = { .tid = 103, .state = 'S', .main = true, .syscall = 202,
			       .name = "python", .wchan = "futex_wait_queue" };
	struct sim s;
	const struct an_verdict *v;
	int r, with;

	/* with 2: entered before the attach, found on its stack; 3: just now */
	for (with = 0; with < 4; with++) {
		sim_init(&s, 10, 300);
		sim_comm(&s, TP, 4, NULL);
		warmup(&s, TP, 10);
		for (r = 0; r < 3; r++)
			sim_call(&s, TP, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		if (with == 3)
			sim_tick(&s, 9.8);
		t.cuda_sync = with ? CCLD_FN_CUDA_STREAM_SYNC : 0;
		t.cuda_since = s.now[0];
		t.cuda_stack = with == 2;
		an_thread_state(s.an, s.host_id[0], 103, &t, s.now[0]);
		sim_tick(&s, with == 3 ? 0.7 : 10.5);
		v = sim_find_v(&s, TP, AN_V_NEW);
		CHECK(v && v->role == AN_ROOT && !strcmp(sim_culprits(v), "3"));
		if (with == 3) {
			CHECK(v && v->cls == AN_H1);
			CHECK(v && strstr(v->text, "sleeping in futex() [futex_wait_queue], inside"
					  " cudaStreamSynchronize(): its CPU waits for its GPU"));
			CHECK(v && sim_val_s(v, "main_cuda_sync") &&
			      !strcmp(sim_val_s(v, "main_cuda_sync"), "cudaStreamSynchronize"));
		} else if (with) {
			CHECK(v && v->cls == AN_H3 && v->t4 == AN_T4_GPU_NOT_READY);
			CHECK(v && strstr(v->text, "waited in cudaStreamSynchronize() for") != NULL);
			CHECK(v && sim_val(v, "cuda_wait_s") != NULL);
			CHECK(v && (strstr(v->text, "or more (entered before the attach") != NULL) ==
			      (with == 2));
		} else {
			CHECK(v && v->cls == AN_H1);
		}
		sim_fini(&s);
	}
}

/* rank R's all-to-all on TP: a send and a receive with each rank, itself included */
static void a2a(struct sim *s, int r, bool done)
{
	struct an_op o;
	int q, d;

	for (q = 0; q < 4; q++)
		for (d = 0; d < 2; d++) {
			o = sim_p2p(s, TP, r, q, d, 4096, true);
			if (done)
				sim_complete(s, &o);
		}
}

/*
 * The same stall where the GPU's place is not known: rank 3 entered two
 * steps of TP (an all-to-all, an all-reduce) and, its CPU blocked in the
 * synchronize since, saw none of them complete; TP has no proxy data to
 * place its GPU by (intra-node).  Its peers completed both steps, which
 * they cannot do without its GPU, and entered the next one, whose
 * all-to-all's Recv rank 3 never enters: no op of this comm holds its
 * GPU, and none of another is known to.  H3, GPU not ready, naming it
 * (random job 298, a moe all-to-all's comm on one host: an H1 "never
 * entered the Recv" before).  Where a peer has not completed the last
 * all-reduce either, the GPU may be in it: not said so.
 */
static void test_gpu_stuck_unplaced(void)
{
	struct an_thread t = { .tid = 103, .state = 'S', .main = true, .syscall = 202,
			       .name = "python", .wchan = "futex_wait_queue" };
	const struct an_verdict *v;
	struct an_op o;
	struct sim s;
	int i, r, past;

	for (past = 0; past < 2; past++) {
		sim_init(&s, 10, 300);
		sim_comm(&s, TP, 4, NULL);
		for (i = 0; i < 9; i++) {
			for (r = 0; r < 4; r++)
				a2a(&s, r, true);
			sim_round(&s, TP, CCLD_FN_ALLREDUCE, 1 << 20, 7);
			sim_step(&s, 10000000);
		}
		/* rank 3 sees nothing of two steps complete: its CPU blocks after them */
		for (i = 0; i < 2; i++) {
			for (r = 0; r < 4; r++) {
				a2a(&s, r, r != 3);
				o = sim_call(&s, TP, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
				if (r != 3 && (r || past || !i))
					sim_complete(&s, &o);
			}
			sim_step(&s, 10000000);
		}
		for (r = 0; r < 3; r++) {
			a2a(&s, r, false);
			sim_call(&s, TP, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		}
		t.cuda_sync = CCLD_FN_CUDA_STREAM_SYNC;
		t.cuda_since = s.now[0];
		an_thread_state(s.an, s.host_id[0], 103, &t, s.now[0]);
		sim_tick(&s, 10.5);
		v = sim_find_v(&s, TP, AN_V_NEW);
		CHECK(v && v->role == AN_ROOT);
		CHECK(v && (strstr(v->text, "its peers completed every one it entered") != NULL) ==
		      (past == 1));
		if (past) {
			CHECK(v && !strcmp(sim_culprits(v), "3"));
			CHECK(v && v->cls == AN_H3 && v->t4 == AN_T4_GPU_NOT_READY);
		}
		sim_fini(&s);
	}
}

/*
 * A node that dies whole (a fleet node's agent and ranks at once): its
 * clock stops with its records.  Rank 0 (host 0) waits in an all-reduce
 * that rank 1 (host 1) never enters.  With host 1's side counted, the comm
 * never looks stalled (its time without progress is the shortest over its
 * hosts): no verdict in 10 s.  Told that host 1 is silent, the analyzer
 * names rank 1 and says its node went silent.
 */
static void test_silent_node(bool told)
{
	const struct an_verdict *v;
	struct sim s;
	int i;

	sim_init_hosts(&s, 3, 30, 2, 1);
	sim_comm(&s, TP, 2, NULL);
	for (i = 0; i < 5; i++) {
		sim_round(&s, TP, CCLD_FN_ALLREDUCE, 1024, 7);
		sim_tick(&s, 0.25);
	}
	sim_call(&s, TP, 0, CCLD_FN_ALLREDUCE, 1024, 7);
	if (told)
		an_host_silent(s.an, s.host_id[1], true);
	for (i = 0; i < 40; i++) {
		s.now[0] += SIM_TICK_NS;
		an_clock(s.an, s.host_id[0], s.now[0]);
	}
	v = s.nv ? &s.v[0] : NULL;
	if (!told) {
		CHECK_INT(s.nv, 0);
	} else {
		CHECK(v != NULL);
		if (v) {
			CHECK_INT(v->role, AN_ROOT);
			CHECK_STR(sim_culprits(v), "1");
			CHECK(sim_val_s(v, "node_silent") != NULL);
			CHECK(strstr(v->text, "sends no records any more") != NULL);
		}
	}
	sim_fini(&s);
}

int main(void)
{
	test_many_idle_comms();
	test_late_rank();
	test_exit();
	test_exit_peer_warned();
	test_warn_names_peer();
	test_exit_culprit_warned();
	test_stopped();
	test_skip();
	test_p2p();
	test_p2p_stopped();
	test_p2p_from_attach();
	test_p2p_from_attach_before_round();
	test_p2p_from_attach_mismatch();
	test_coll_from_attach();
	test_gpu_stuck_outside();
	test_gpu_stuck_unplaced();
	test_silent_node(false);
	test_silent_node(true);
	return check_finish("test_an_h1");
}
