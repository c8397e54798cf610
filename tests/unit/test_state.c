// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* State machines and sequence numbers, fed with synthetic records. */
#include <stdlib.h>
#include "check.h"
#include "output.h"
#include "state.h"

#define MAX_DONE 64

static struct call_rec done[MAX_DONE];
static int ndone;
static int nentered;
static int comm_changes;

static void on_enter(void *ctx, const struct call_rec *c)
{
	nentered++;
}

static void on_done(void *ctx, const struct call_rec *c)
{
	if (ndone < MAX_DONE)
		done[ndone++] = *c;
}

static void on_comm(void *ctx, const struct comm_rank *cr,
		    const struct ccld_event *ev)
{
	comm_changes++;
}

static struct ccld_event ev_base(int type, int fn, unsigned tid, uint64_t ts)
{
	struct ccld_event e;

	memset(&e, 0, sizeof(e));
	e.type = type;
	e.version = CCLD_ABI_VERSION;
	e.fn = fn;
	e.pid = 100;
	e.tid = tid;
	e.ts_ns = ts;
	e.id.rank = -1;
	e.id.nranks = -1;
	return e;
}

static void feed_call(struct state *s, int fn, uint64_t comm, uint64_t ts,
		      bool with_seq, uint64_t nccl_seq)
{
	struct ccld_event e = ev_base(CCLD_EV_CALL, fn, 101, ts);

	e.id.comm = comm;
	if (with_seq) {
		e.flags = CCLD_F_IDENT | CCLD_F_SEQ;
		e.id.hash = 0xabcdef;
		e.id.rank = 3;
		e.id.nranks = 8;
		e.id.nccl_seq = nccl_seq;
	}
	e.u.call.count = 1024;
	e.u.call.dtype = 7; /* float32 */
	e.u.call.redop = 0;
	e.u.call.root_or_peer = ccld_fn_is_p2p(fn) || fn == CCLD_FN_GATHER ||
				fn == CCLD_FN_SCATTER ? 5 : -1;
	state_feed(s, 0, &e);
}

static void feed_ret(struct state *s, int fn, uint64_t ts, int ret)
{
	struct ccld_event e = ev_base(CCLD_EV_RET, fn, 101, ts);

	e.u.ret.ret = ret;
	state_feed(s, 0, &e);
}

static void feed_group(struct state *s, int fn, uint64_t ts)
{
	struct ccld_event e = ev_base(CCLD_EV_GROUP, fn, 101, ts);

	state_feed(s, 0, &e);
	e = ev_base(CCLD_EV_RET, fn, 101, ts + 1);
	state_feed(s, 0, &e);
}

static struct comm_call_rec last_comm_call;

static void on_comm_call(void *ctx, const struct comm_call_rec *c)
{
	last_comm_call = *c;
}

static struct state *fresh(void)
{
	struct state_sink sink = {
		.call_enter = on_enter, .call_done = on_done,
		.comm_change = on_comm, .comm_call = on_comm_call,
	};

	ndone = nentered = comm_changes = 0;
	memset(&last_comm_call, 0, sizeof(last_comm_call));
	return state_new(&sink);
}

/* Without NCCL counters: init seen -> exact local sequence numbers. */
static void test_init_then_local_seq(void)
{
	struct state *s = fresh();
	struct ccld_event e = ev_base(CCLD_EV_COMM, CCLD_FN_INIT_RANK, 101, 10);
	const uint64_t comm = 0x7000;
	int i;

	e.u.comm.id_hash = 0x1234;
	e.u.comm.nranks = 4;
	e.u.comm.rank = 2;
	e.u.comm.newcomm_pp = 0x5000;
	state_feed(s, 0, &e);
	e = ev_base(CCLD_EV_COMM_RET, CCLD_FN_INIT_RANK, 101, 20);
	e.u.ret.newcomm = comm;
	state_feed(s, 0, &e);
	for (i = 0; i < 3; i++) {
		feed_call(s, CCLD_FN_ALLREDUCE, comm, 100 + i * 10, false, 0);
		feed_ret(s, CCLD_FN_ALLREDUCE, 105 + i * 10, 0);
	}
	CHECK_INT(ndone, 3);
	CHECK_INT(done[0].seq, 0);
	CHECK_INT(done[2].seq, 2);
	CHECK_INT(done[2].seq_source, SEQ_LOCAL);
	CHECK_INT(done[1].comm_hash, 0x1234);
	CHECK_INT(done[1].rank, 2);
	CHECK_INT(done[1].nranks, 4);
	CHECK_INT(done[1].bytes, 4096);
	CHECK(done[1].has_ret);
	state_free(s);
}

/*
 * A split whose config names the new comm: the name record comes just
 * before the call's entry on the same thread and goes with that call (its
 * comm call record, the table).  One of another thread, or of another
 * function, does not; nor does one to a later call; bytes a terminal would
 * act on are not shown as they are.
 */
static void test_comm_name(void)
{
	struct state *s = fresh();
	struct ccld_event e;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	/* the parent, known by its calls */
	feed_call(s, CCLD_FN_ALLREDUCE, 0x6000, 5, true, 0);
	feed_ret(s, CCLD_FN_ALLREDUCE, 6, 0);
	e = ev_base(CCLD_EV_COMM_NAME, CCLD_FN_SPLIT, 102, 9);	/* another thread */
	strcpy(e.u.comm_name.name, "other");
	state_feed(s, 0, &e);
	e = ev_base(CCLD_EV_COMM_NAME, CCLD_FN_SPLIT, 101, 9);
	memset(e.u.comm_name.name, 'x', sizeof(e.u.comm_name.name));	/* no NUL */
	memcpy(e.u.comm_name.name, "tp2\033", 4);
	state_feed(s, 0, &e);
	e = ev_base(CCLD_EV_COMM, CCLD_FN_SPLIT, 101, 10);
	e.u.comm.parent = 0x6000;
	e.u.comm.color = 2;
	e.u.comm.key = 3;
	state_feed(s, 0, &e);
	e = ev_base(CCLD_EV_COMM_RET, CCLD_FN_SPLIT, 101, 20);
	e.u.ret.newcomm = 0x7000;
	e.flags = CCLD_F_IDENT;
	e.id.comm = 0x7000;
	e.id.hash = 0x77;
	e.id.rank = 1;
	e.id.nranks = 2;
	state_feed(s, 0, &e);
	CHECK_INT(last_comm_call.fn, CCLD_FN_SPLIT);
	CHECK_INT(last_comm_call.color, 2);
	CHECK_INT(strlen(last_comm_call.name), 63);
	CHECK(!strncmp(last_comm_call.name, "tp2?xxx", 7));
	f = open_memstream(&buf, &len);
	out_comm_table(f, s, false);
	fclose(f);
	printf("%s", buf);
	CHECK(strstr(buf, "COMM             NAME         NRANKS") != NULL);
	CHECK(strstr(buf, "0000000000000077 tp2?xxxxxxxx      2") != NULL);
	CHECK(strstr(buf, "0000000000abcdef -                 8") != NULL);
	free(buf);
	/* a name for another function, then the call: not its name; nor later */
	e = ev_base(CCLD_EV_COMM_NAME, CCLD_FN_INIT_RANK_CONFIG, 101, 30);
	strcpy(e.u.comm_name.name, "other");
	state_feed(s, 0, &e);
	e = ev_base(CCLD_EV_COMM, CCLD_FN_SPLIT, 101, 31);
	e.u.comm.parent = 0x6000;
	state_feed(s, 0, &e);
	e = ev_base(CCLD_EV_COMM_RET, CCLD_FN_SPLIT, 101, 32);
	state_feed(s, 0, &e);
	CHECK_STR(last_comm_call.name, "");
	e = ev_base(CCLD_EV_COMM, CCLD_FN_INIT_RANK_CONFIG, 101, 33);
	state_feed(s, 0, &e);
	e = ev_base(CCLD_EV_COMM_RET, CCLD_FN_INIT_RANK_CONFIG, 101, 34);
	state_feed(s, 0, &e);
	CHECK_STR(last_comm_call.name, "");
	state_free(s);
}

/*
 * Created while no layout was in use, then one comes into use (a table
 * entry confirmed): the comm keeps the name its init call gave it, and
 * takes NCCL's launch count as its sequence.  One created with a layout
 * in use is named by what the probe read.
 */
static void test_ident_kept_from_args(void)
{
	struct state *s = fresh();
	struct ccld_event e = ev_base(CCLD_EV_COMM, CCLD_FN_INIT_RANK, 101, 10);

	e.u.comm.id_hash = 0x1234;
	e.u.comm.nranks = 8;
	e.u.comm.rank = 3;
	state_feed(s, 0, &e);
	e = ev_base(CCLD_EV_COMM_RET, CCLD_FN_INIT_RANK, 101, 20);
	e.u.ret.newcomm = 0x7000;
	state_feed(s, 0, &e);
	feed_call(s, CCLD_FN_ALLREDUCE, 0x7000, 100, false, 0);
	feed_ret(s, CCLD_FN_ALLREDUCE, 105, 0);
	feed_call(s, CCLD_FN_ALLREDUCE, 0x7000, 200, true, 1);
	feed_ret(s, CCLD_FN_ALLREDUCE, 205, 0);
	CHECK_INT(ndone, 2);
	CHECK_INT(done[0].comm_hash, 0x1234);
	CHECK_INT(done[1].comm_hash, 0x1234);
	CHECK_INT(done[1].rank, 3);
	CHECK_INT(done[1].seq, 1);
	CHECK_INT(done[1].seq_source, SEQ_NCCL);

	/* the init's return read through a layout: that name */
	e = ev_base(CCLD_EV_COMM, CCLD_FN_INIT_RANK, 101, 300);
	e.u.comm.id_hash = 0x5678;
	e.u.comm.nranks = 8;
	e.u.comm.rank = 3;
	state_feed(s, 0, &e);
	e = ev_base(CCLD_EV_COMM_RET, CCLD_FN_INIT_RANK, 101, 310);
	e.u.ret.newcomm = 0x8000;
	e.flags = CCLD_F_IDENT;
	e.id.hash = 0xabcdef;
	e.id.rank = 3;
	e.id.nranks = 8;
	state_feed(s, 0, &e);
	feed_call(s, CCLD_FN_ALLREDUCE, 0x8000, 400, true, 0);
	feed_ret(s, CCLD_FN_ALLREDUCE, 405, 0);
	CHECK_INT(ndone, 3);
	CHECK_INT(done[2].comm_hash, 0xabcdef);
	state_free(s);
}

/*
 * The ncclGroupEnd records were lost (a full ring): NCCL's launched count
 * moving says the group was launched, and the next seqs are NCCL's again.
 */
static void test_group_end_lost(void)
{
	struct state *s = fresh();
	const uint64_t comm = 0x9000;

	feed_group(s, CCLD_FN_GROUP_START, 110);
	feed_call(s, CCLD_FN_ALLREDUCE, comm, 120, true, 42);
	feed_ret(s, CCLD_FN_ALLREDUCE, 121, 0);
	feed_call(s, CCLD_FN_ALLREDUCE, comm, 130, true, 42);
	feed_ret(s, CCLD_FN_ALLREDUCE, 131, 0);
	feed_call(s, CCLD_FN_ALLREDUCE, comm, 150, true, 44);
	feed_ret(s, CCLD_FN_ALLREDUCE, 151, 0);
	feed_call(s, CCLD_FN_ALLREDUCE, comm, 160, true, 45);
	feed_ret(s, CCLD_FN_ALLREDUCE, 161, 0);
	CHECK_INT(ndone, 4);
	CHECK_INT(done[0].seq, 42);
	CHECK_INT(done[1].seq, 43);
	CHECK_INT(done[2].seq, 44);	/* was 46: 44 + the two pending */
	CHECK_INT(done[3].seq, 45);
	state_free(s);
}

/* NCCL counters: attach mid-run, seq = sum(seqNumber) + group pending. */
static void test_nccl_seq_in_group(void)
{
	struct state *s = fresh();
	const uint64_t comm = 0x9000;

	feed_call(s, CCLD_FN_ALLREDUCE, comm, 100, true, 41);
	feed_ret(s, CCLD_FN_ALLREDUCE, 101, 0);
	feed_group(s, CCLD_FN_GROUP_START, 110);
	/* NCCL has not launched these yet: seqNumber stays 42 inside */
	feed_call(s, CCLD_FN_ALLREDUCE, comm, 120, true, 42);
	feed_ret(s, CCLD_FN_ALLREDUCE, 121, 0);
	feed_call(s, CCLD_FN_ALLGATHER, comm, 130, true, 42);
	feed_ret(s, CCLD_FN_ALLGATHER, 131, 0);
	feed_call(s, CCLD_FN_SEND, comm, 135, true, 42);
	feed_ret(s, CCLD_FN_SEND, 136, 0);
	feed_group(s, CCLD_FN_GROUP_END, 140);
	feed_call(s, CCLD_FN_REDUCESCATTER, comm, 150, true, 44);
	feed_ret(s, CCLD_FN_REDUCESCATTER, 151, 0);
	CHECK_INT(ndone, 5);
	CHECK_INT(done[0].seq, 41);
	CHECK_INT(done[0].seq_source, SEQ_NCCL);
	CHECK_INT(done[0].group, -1);
	CHECK_INT(done[1].seq, 42);
	CHECK_INT(done[2].seq, 43);
	CHECK_INT(done[1].group, 0);
	CHECK_INT(done[2].group, 0);
	CHECK_INT(done[3].peer, 5);
	CHECK_INT(done[3].seq, 0); /* first send to peer 5 */
	CHECK_INT(done[4].seq, 44);
	CHECK_INT(done[4].group, -1);
	CHECK_INT(done[4].rank, 3);
	CHECK_INT(done[4].comm_hash, 0xabcdef);
	state_free(s);
}

/*
 * AlltoAll and Gather are p2p work in NCCL 2.28: seqNumber[] does not move
 * for them, so the collective after one has the same NCCL count.  Each is
 * fed as its Send/Recv parts (every peer, itself included), with p2p seqs
 * per peer; the collective after it keeps its own seq.
 */
static void test_alltoall_parts(void)
{
	struct state *s = fresh();
	const uint64_t comm = 0x9100;
	int i, sends = 0, recvs = 0;

	feed_call(s, CCLD_FN_ALLTOALL, comm, 100, true, 7);
	CHECK_INT(nentered, 16);	/* rank 3 of 8: a send and a recv per rank */
	feed_ret(s, CCLD_FN_ALLTOALL, 101, 0);
	CHECK_INT(ndone, 17);		/* 16 parts, then the call */
	for (i = 0; i < 16; i++) {
		CHECK_INT(done[i].part_of, CCLD_FN_ALLTOALL);
		CHECK_INT(done[i].seq, 0);
		CHECK_INT(done[i].count, 1024);
		sends += done[i].fn == CCLD_FN_SEND;
		recvs += done[i].fn == CCLD_FN_RECV;
	}
	CHECK_INT(sends, 8);
	CHECK_INT(recvs, 8);
	CHECK_INT(done[6].peer, 3);	/* to itself too */
	CHECK_INT(done[16].fn, CCLD_FN_ALLTOALL);
	CHECK_INT(done[16].part_of, 0);
	CHECK_INT(done[16].seq, -1);
	/* NCCL's count did not move: the all-reduce is seq 7, as it would be */
	feed_call(s, CCLD_FN_ALLREDUCE, comm, 110, true, 7);
	feed_ret(s, CCLD_FN_ALLREDUCE, 111, 0);
	CHECK_INT(done[17].seq, 7);
	/* Gather to root 5 from rank 3: one send, to 5, its second to 5 */
	feed_call(s, CCLD_FN_GATHER, comm, 120, true, 8);
	feed_ret(s, CCLD_FN_GATHER, 121, 0);
	CHECK_INT(ndone, 20);
	CHECK_INT(done[18].fn, CCLD_FN_SEND);
	CHECK_INT(done[18].peer, 5);
	CHECK_INT(done[18].seq, 1);
	CHECK_INT(done[19].fn, CCLD_FN_GATHER);
	state_free(s);
}

/* A call that never returns: blocked after 1 s, reported at flush. */
static void test_blocked_and_flush(void)
{
	struct state *s = fresh();
	struct ccld_event tick = ev_base(CCLD_EV_TICK, 0, 0, 0);
	struct comm_rank *cr;
	size_t it = 0;

	feed_call(s, CCLD_FN_BROADCAST, 0x1000, 1000, true, 7);
	/* blocked once the analyzer would suspect the comm: 15 s by default */
	tick.ts_ns = 1000 + 14500000000ULL;
	state_feed(s, 0, &tick);
	cr = state_next_rank(s, &it);
	CHECK(cr != NULL);
	if (cr)
		CHECK_INT(cr->state, RS_IN_COLLECTIVE);
	tick.ts_ns = 1000 + 15500000000ULL;
	state_feed(s, 0, &tick);
	if (cr)
		CHECK_INT(cr->state, RS_BLOCKED);
	CHECK_INT(ndone, 0);
	state_flush(s);
	CHECK_INT(ndone, 1);
	CHECK(!done[0].has_ret);
	state_free(s);
}

/* Process exit moves its comm ranks to process-exited. */
static void test_exit(void)
{
	struct state *s = fresh();
	struct ccld_event e = ev_base(CCLD_EV_PROC_EXIT, 0, 100, 500);
	struct comm_rank *cr;
	size_t it = 0;

	feed_call(s, CCLD_FN_ALLREDUCE, 0x1000, 100, true, 0);
	feed_ret(s, CCLD_FN_ALLREDUCE, 110, 0);
	state_feed(s, 0, &e);
	cr = state_next_rank(s, &it);
	CHECK(cr != NULL);
	if (cr)
		CHECK_INT(cr->state, RS_EXITED);
	CHECK(comm_changes >= 1);
	CHECK_INT(state_proc(s, 0, 100)->exited, 1);
	state_free(s);
}

/* A return with no matching entry is counted, not invented. */
static void test_unmatched_return(void)
{
	struct state *s = fresh();

	feed_ret(s, CCLD_FN_ALLREDUCE, 10, 0);
	CHECK_INT(ndone, 0);
	CHECK_INT(state_counts(s)->unmatched_returns, 1);
	state_free(s);
}

static int completions;
static int64_t completed_seq;

static void on_complete(void *ctx, const struct comm_rank *cr, int64_t seq,
			uint64_t t)
{
	completions++;
	completed_seq = seq;
}

static void feed_cuda(struct state *s, int fn, uint64_t event, uint64_t stream,
		      uint64_t ts, int ret)
{
	struct ccld_event e = ev_base(CCLD_EV_CUDA, fn, 101, ts);

	e.u.cuda.event = event;
	e.u.cuda.stream = stream;
	e.u.cuda.ret = ret;
	state_feed(s, 0, &e);
}

/* Tier B: an event recorded after collectives completes them when queried. */
static void test_cuda_completion(void)
{
	struct state_sink sink = { .op_complete = on_complete };
	struct state *s = state_new(&sink);
	const uint64_t comm = 0x1000;
	struct comm_rank *cr;
	size_t it = 0;

	completions = 0;
	completed_seq = -1;
	/* stream 0 (the simulated job's default) : feed_call sets stream 0 */
	feed_call(s, CCLD_FN_ALLREDUCE, comm, 100, true, 0);
	feed_ret(s, CCLD_FN_ALLREDUCE, 101, 0);
	feed_call(s, CCLD_FN_ALLREDUCE, comm, 110, true, 1);
	feed_ret(s, CCLD_FN_ALLREDUCE, 111, 0);
	feed_cuda(s, CCLD_FN_CUDA_EVENT_RECORD, 0xe1, 0, 120, 0);
	feed_call(s, CCLD_FN_ALLREDUCE, comm, 130, true, 2);
	feed_ret(s, CCLD_FN_ALLREDUCE, 131, 0);
	CHECK_INT(completions, 0);
	/* a failed query (not ready) completes nothing */
	feed_cuda(s, CCLD_FN_CUDA_EVENT_QUERY, 0xe1, 0, 140, 600);
	CHECK_INT(completions, 0);
	feed_cuda(s, CCLD_FN_CUDA_EVENT_QUERY, 0xe1, 0, 150, 0);
	CHECK_INT(completions, 1);
	CHECK_INT(completed_seq, 1);	/* not seq 2: queued after the record */
	feed_cuda(s, CCLD_FN_CUDA_EVENT_SYNC, 0xe1, 0, 155, 0);
	CHECK_INT(completions, 1);	/* nothing new */
	feed_cuda(s, CCLD_FN_CUDA_STREAM_SYNC, 0, 0, 160, 0);
	CHECK_INT(completions, 2);
	CHECK_INT(completed_seq, 2);
	cr = state_next_rank(s, &it);
	CHECK(cr && cr->completed_seq == 2 && cr->completed_ns == 160);
	/* an unrelated stream completes nothing */
	feed_call(s, CCLD_FN_ALLREDUCE, comm, 170, true, 3);
	feed_ret(s, CCLD_FN_ALLREDUCE, 171, 0);
	feed_cuda(s, CCLD_FN_CUDA_STREAM_SYNC, 0, 0x77, 180, 0);
	CHECK_INT(completions, 2);
	CHECK_INT(state_counts(s)->completions, 2);
	state_free(s);
}

static size_t count_procs(struct state *s)
{
	size_t it = 0, n = 0;

	while (state_next_proc(s, &it))
		n++;
	return n;
}

static size_t count_ranks(struct state *s)
{
	size_t it = 0, n = 0;

	while (state_next_rank(s, &it))
		n++;
	return n;
}

/*
 * Forgetting: an exited process's state is freed on a tick after the
 * delay (a call still inside NCCL reported first); processes that come
 * and go leave nothing behind; a reused pid starts clean.
 */
static void test_forget_exited(void)
{
	const uint64_t sec = 1000000000ULL;
	struct state *s = fresh();
	struct ccld_event e;
	uint64_t t = sec;
	int job;

	state_forget_after(s, 10 * sec);
	for (job = 0; job < 200; job++, t += sec) {
		e = ev_base(CCLD_EV_PROC_ATTACH, 0, 100, t);
		state_feed(s, 0, &e);
		feed_call(s, CCLD_FN_ALLREDUCE, 0x1000 + job, t + 1, true, 0);
		feed_ret(s, CCLD_FN_ALLREDUCE, t + 2, 0);
		feed_cuda(s, CCLD_FN_CUDA_EVENT_RECORD, 0xe1, 0, t + 3, 0);
		/* every other job dies inside its call */
		feed_call(s, CCLD_FN_ALLREDUCE, 0x1000 + job, t + 4, true, 1);
		if (job % 2)
			feed_ret(s, CCLD_FN_ALLREDUCE, t + 5, 0);
		e = ev_base(CCLD_EV_PROC_EXIT, 0, 100, t + 6);
		state_feed(s, 0, &e);
		e = ev_base(CCLD_EV_TICK, 0, 0, t + 7);
		state_feed(s, 0, &e);
		/* pid 100 again: a new process, none of the old one's ranks */
		CHECK_INT(count_ranks(s), 1);
	}
	CHECK_INT(count_procs(s), 1);
	CHECK(state_proc(s, 0, 100)->exited);
	ndone = 0;
	t -= sec;			/* the last job's */
	e = ev_base(CCLD_EV_TICK, 0, 0, t + 6 + 10 * sec);
	state_feed(s, 0, &e);
	CHECK_INT(count_procs(s), 1);	/* not yet: exactly the delay */
	e = ev_base(CCLD_EV_TICK, 0, 0, t + 7 + 10 * sec);
	state_feed(s, 0, &e);
	CHECK_INT(count_procs(s), 0);
	CHECK_INT(count_ranks(s), 0);
	CHECK_INT(ndone, 0);		/* the last job returned */
	CHECK_INT(state_counts(s)->procs_forgotten, 200);
	CHECK_INT(state_counts(s)->comms_forgotten, 200);
	/* 100 died inside a call: each reported once, no return */
	CHECK_INT(state_counts(s)->calls, 400);
	state_free(s);

	/* without forgetting (the default): an exit keeps its state */
	s = fresh();
	feed_call(s, CCLD_FN_ALLREDUCE, 0x1000, 100, true, 0);
	e = ev_base(CCLD_EV_PROC_EXIT, 0, 100, 200);
	state_feed(s, 0, &e);
	e = ev_base(CCLD_EV_TICK, 0, 0, 1000 * sec);
	state_feed(s, 0, &e);
	CHECK_INT(count_procs(s), 1);
	CHECK_INT(count_ranks(s), 1);
	state_free(s);
}

/*
 * The launcher's global rank of a process (its label) is kept, and the
 * per-comm table lists its comms' members by global rank: here one of the
 * 8 ranks of the comm is seen, global rank 5.
 */
static void test_global_ranks_table(void)
{
	struct state *s = fresh();
	struct ccld_event e = ev_base(CCLD_EV_PROC_LABEL, 0, 100, 5);
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	e.u.label.kind = CCLD_LABEL_RANK;
	strcpy(e.u.label.value, "5");
	state_feed(s, 0, &e);
	CHECK_STR(state_proc(s, 0, 100)->global_rank, "5");
	/* not a number: refused, the rank kept */
	strcpy(e.u.label.value, "5x");
	state_feed(s, 0, &e);
	CHECK_STR(state_proc(s, 0, 100)->global_rank, "5");
	feed_call(s, CCLD_FN_ALLREDUCE, 0x7000, 10, true, 0);
	f = open_memstream(&buf, &len);
	out_comm_table(f, s, false);
	fclose(f);
	CHECK(strstr(buf, "GLOBAL RANKS") != NULL);
	CHECK(strstr(buf, "5 (7 unknown)") != NULL);
	free(buf);
	state_free(s);
}

int main(void)
{
	test_global_ranks_table();
	test_comm_name();
	test_forget_exited();
	test_cuda_completion();
	test_init_then_local_seq();
	test_ident_kept_from_args();
	test_nccl_seq_in_group();
	test_alltoall_parts();
	test_group_end_lost();
	test_blocked_and_flush();
	test_exit();
	test_unmatched_return();
	return check_finish("test_state");
}
