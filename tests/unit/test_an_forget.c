// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Forgetting finished communicators and exited processes: a node that sees
 * many short jobs keeps a bounded state; a hang in progress, a reused pid
 * and forget_s = 0 keep what they must.
 */
#include "test_an_helpers.h"
#include "splitmix.h"
#include "an_int.h"

#define BASE		0xba5e000000000001ull
#define NJOBS		500
#define STALL_S		5
#define FORGET_S	30

/* two hosts, clocks apart; rank r of a job runs on host r % 2 */
struct churn {
	struct an *an;
	uint32_t host[2];
	uint64_t now[2];
	uint64_t rng;
	int nnew, nupdate, nrecovered;
	int son, soff;
	uint64_t last_comm;		/* of the latest verdict */
	char last_text[AN_TEXT_MAX];
	int32_t last_cul;
	uint32_t last_pid;
};

struct job {
	uint64_t comm[2];	/* the world, and a split of its first half (0: none) */
	int n;
	uint32_t pid[8];
	int64_t seq[2];
};

static void on_verdict(void *ctx, const struct an_verdict *v)
{
	struct churn *ch = ctx;

	ch->nnew += v->kind == AN_V_NEW;
	ch->nupdate += v->kind == AN_V_UPDATE;
	ch->nrecovered += v->kind == AN_V_RECOVERED;
	ch->last_comm = v->comm;
	snprintf(ch->last_text, sizeof(ch->last_text), "%s", v->text);
	ch->last_cul = v->ncul ? v->cul[0].rank : -1;
	ch->last_pid = v->ncul ? v->cul[0].pid : 0;
}

static void on_suspect(void *ctx, const struct an_suspect *s)
{
	struct churn *ch = ctx;

	ch->son += s->on;
	ch->soff += !s->on;
}

static void churn_init(struct churn *ch, double forget_s)
{
	struct an_sink sink = { ch, on_verdict, on_suspect };
	struct an_config cfg;
	int h;

	memset(ch, 0, sizeof(*ch));
	an_config_default(&cfg);
	CHECK(cfg.forget_s == FORGET_S);	/* the default */
	cfg.stall_s = STALL_S;
	cfg.forget_s = forget_s;
	ch->an = an_new(&cfg, &sink);
	CHECK(ch->an != NULL);
	ch->rng = 42;
	for (h = 0; h < 2; h++) {
		char name[16];

		snprintf(name, sizeof(name), "h%d", h);
		ch->host[h] = (uint32_t)an_host(ch->an, name);
		ch->now[h] = (uint64_t)(h + 1) * 7200 * SEC + (uint64_t)h * 777;
		an_clock(ch->an, ch->host[h], ch->now[h]);
	}
}

static void tick(struct churn *ch, double secs)
{
	uint64_t t;
	int h;

	for (t = 0; t < (uint64_t)(secs * 1e9 + 0.5); t += SIM_TICK_NS)
		for (h = 0; h < 2; h++) {
			ch->now[h] += SIM_TICK_NS;
			an_clock(ch->an, ch->host[h], ch->now[h]);
		}
}

static void step(struct churn *ch, uint64_t ns)
{
	ch->now[0] += ns;
	ch->now[1] += ns;
}

static uint32_t host_of(const struct churn *ch, int r)
{
	return ch->host[r % 2];
}

static uint64_t now_of(const struct churn *ch, int r)
{
	return ch->now[r % 2];
}

static int nranks(const struct job *j, int c)
{
	return c ? j->n / 2 : j->n;
}

static struct an_key key(const struct churn *ch, const struct job *j, int c, int r)
{
	struct an_key k = {
		.host = host_of(ch, r), .pid = j->pid[r], .comm = j->comm[c],
		.rank = r, .nranks = nranks(j, c),
	};
	return k;
}

static struct an_op op_of(const struct churn *ch, const struct job *j, int c, int r)
{
	struct an_op op = {
		.k = key(ch, j, c, r), .tid = j->pid[r], .fn = CCLD_FN_ALLREDUCE,
		.seq = j->seq[c], .count = 1 << 20, .dtype = 7, .redop = 0,
		.root = -1, .peer = -1, .t_ns = now_of(ch, r),
	};
	return op;
}

/* a process starts (the tracer's attach record), then its ranks appear */
static void job_start(struct churn *ch, struct job *j)
{
	int c, r;

	for (r = 0; r < j->n; r++)
		an_proc_state(ch->an, host_of(ch, r), j->pid[r], AN_PROC_RUNNING, 0,
			      now_of(ch, r));
	for (c = 0; c < 2; c++)
		for (r = 0; j->comm[c] && r < nranks(j, c); r++) {
			struct an_key k = key(ch, j, c, r);

			CHECK_INT(an_rank(ch->an, &k, c ? j->comm[0] : 0, now_of(ch, r)), 0);
		}
}

/* one healthy round of comm C, GPU completions included */
static void job_round(struct churn *ch, struct job *j, int c)
{
	struct an_op op;
	int r;

	for (r = 0; r < nranks(j, c); r++) {
		op = op_of(ch, j, c, r);
		an_op_enter(ch->an, &op);
		an_op_return(ch->an, &op, 0, op.t_ns + 20000);
	}
	step(ch, 5000000);
	for (r = 0; r < nranks(j, c); r++) {
		op = op_of(ch, j, c, r);
		an_op_complete(ch->an, &op, now_of(ch, r));
	}
	j->seq[c]++;
	step(ch, 5000000);
}

/* rank R enters the next round of comm C and stays in it */
static void job_enter(struct churn *ch, struct job *j, int c, int r)
{
	struct an_op op = op_of(ch, j, c, r);

	an_op_enter(ch->an, &op);
}

static void job_exit(struct churn *ch, const struct job *j, int r, int status)
{
	an_proc_state(ch->an, host_of(ch, r), j->pid[r], AN_PROC_EXITED, status,
		      now_of(ch, r));
}

static void job_destroy(struct churn *ch, const struct job *j, int c, int r)
{
	struct an_key k = key(ch, j, c, r);

	an_rank_gone(ch->an, &k, now_of(ch, r));
}

static uint64_t live_comms(const struct churn *ch)
{
	const struct an_stats *st = an_stats(ch->an);

	CHECK_INT(st->comms - st->comms_forgotten, ch->an->comms.live);
	return ch->an->comms.live;
}

static uint64_t live_procs(const struct churn *ch)
{
	const struct an_stats *st = an_stats(ch->an);
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; i < ch->an->nprocs; i++)
		n += !ch->an->procs[i].unused;
	CHECK_INT(st->procs - st->procs_forgotten, n);
	return n;
}

static const struct an_proc *proc(const struct churn *ch, uint32_t host, uint32_t pid)
{
	return an_proc_find(ch->an, host, pid);
}

/* the long-lived job the churn runs beside: 2 ranks, one on each host */
static void base_start(struct churn *ch, struct job *b)
{
	memset(b, 0, sizeof(*b));
	b->n = 2;
	b->pid[0] = 10;
	b->pid[1] = 11;
	b->comm[0] = BASE;
	job_start(ch, b);
	job_round(ch, b, 0);
}

/*
 * Job I: 2-8 processes, a world comm and (4 ranks or more) a split of it,
 * a few rounds, then one of four ends.  Pids come back every 7 jobs, while
 * the earlier owner's slot may still be known (exited).
 */
static int churn_job(struct churn *ch, int i, uint64_t *ncomms, uint64_t *peak)
{
	struct job j = { 0 };
	int c, r, k, victim;

	j.n = 2 + (int)(u01(&ch->rng) * 7);
	for (r = 0; r < j.n; r++)
		j.pid[r] = 1000 + (uint32_t)(i % 7) * 8 + (uint32_t)r;
	j.comm[0] = 0xc0ffee0000000000ull | (uint64_t)i << 1;
	j.comm[1] = j.n >= 4 ? j.comm[0] | 1 : 0;
	job_start(ch, &j);
	*ncomms += j.comm[1] ? 2 : 1;
	if (live_procs(ch) > *peak)
		*peak = live_procs(ch);
	for (k = 0; k < 3; k++)
		job_round(ch, &j, 0);
	for (k = 0; j.comm[1] && k < 2; k++)
		job_round(ch, &j, 1);
	victim = (int)(u01(&ch->rng) * j.n);
	switch (i % 4) {
	case 0:		/* clean: comms destroyed, then the processes exit */
		for (c = 0; c < 2; c++)
			for (r = 0; j.comm[c] && r < nranks(&j, c); r++)
				job_destroy(ch, &j, c, r);
		step(ch, 50000000);
		for (r = 0; r < j.n; r++)
			job_exit(ch, &j, r, 0);
		break;
	case 1:		/* the processes exit without destroying */
		for (r = 0; r < j.n; r++)
			job_exit(ch, &j, r, 0);
		break;
	case 2:		/* one killed inside a call, the launcher kills the rest */
		for (r = 0; r < j.n; r++)
			job_enter(ch, &j, 0, r);
		job_exit(ch, &j, victim, 9);
		tick(ch, 1);
		for (r = 0; r < j.n; r++)
			if (r != victim)
				job_exit(ch, &j, r, 15);
		break;
	case 3:		/* a hang (H1), then the whole job is killed */
		for (r = 0; r < j.n; r++)
			if (r != victim)
				job_enter(ch, &j, 0, r);
		tick(ch, STALL_S + 1);
		for (r = 0; r < j.n; r++)
			job_exit(ch, &j, r, 9);
		break;
	}
	return j.n;
}

static void test_churn(void)
{
	struct churn ch;
	struct job base;
	uint64_t ncomms = 0, nprocs = 0, peak = 0, mem0, nkilled = 0;
	int i;

	churn_init(&ch, FORGET_S);
	base_start(&ch, &base);
	tick(&ch, 1);
	CHECK_INT(live_comms(&ch), 1);
	CHECK_INT(live_procs(&ch), 2);
	mem0 = an_stats(ch.an)->mem_bytes;
	for (i = 0; i < NJOBS; i++) {
		nprocs += (uint64_t)churn_job(&ch, i, &ncomms, &peak);
		nkilled += i % 4 >= 2;
		job_round(&ch, &base, 0);
		tick(&ch, 1);
		/* the slots array holds what is alive at most: freed slots are reused */
		CHECK(ch.an->nprocs <= peak);
	}
	tick(&ch, FORGET_S + 1);
	printf("churn: %d jobs, %" PRIu64 " comms, %" PRIu64 " processes;"
	       " after: %" PRIu64 " comms, %" PRIu64 " processes (%u slots, peak %" PRIu64
	       " live); forgotten %" PRIu64 " comms, %" PRIu64 " processes;"
	       " memory %zu -> %zu bytes; verdicts %d new %d updates %d recovered\n",
	       NJOBS, ncomms, nprocs, live_comms(&ch), live_procs(&ch), ch.an->nprocs, peak,
	       an_stats(ch.an)->comms_forgotten, an_stats(ch.an)->procs_forgotten,
	       (size_t)mem0, an_stats(ch.an)->mem_bytes, ch.nnew, ch.nupdate, ch.nrecovered);
	CHECK_INT(live_comms(&ch), 1);
	CHECK_INT(live_procs(&ch), 2);
	CHECK_INT(an_stats(ch.an)->comms_forgotten, ncomms);
	CHECK_INT(an_stats(ch.an)->procs_forgotten, nprocs);
	CHECK(ch.an->nprocs < 200);
	CHECK(an_stats(ch.an)->mem_bytes <= mem0 + (size_t)ch.an->cap_procs *
	      (sizeof(struct an_proc) + sizeof(uint32_t)));
	/*
	 * one verdict for each job killed inside a call (its ranks exited
	 * there) or hung, said before it is forgotten; no false recovery
	 */
	CHECK_INT(ch.nnew, nkilled);
	CHECK_INT(ch.nrecovered, 0);
	CHECK_INT(ch.son, ch.soff);
	CHECK_INT(ch.an->nsuspected, 0);
	/* the base job is untouched */
	CHECK(an_comm_get(ch.an, BASE, 0, false) != NULL);
	CHECK(proc(&ch, ch.host[0], 10) && proc(&ch, ch.host[0], 10)->state == AN_PROC_RUNNING);
	an_free(ch.an);
}

/*
 * Rank 1's process is killed while rank 0 waits in the round: a hang in
 * progress, kept past forget_s.  Once rank 0 aborts the comm, the job is
 * over: the comm is forgotten without a "recovered".
 */
static void test_hang_kept(void)
{
	struct churn ch;
	struct job j = { .n = 2, .pid = { 100, 101 }, .comm = { 0xaaaa } };
	int k;

	churn_init(&ch, FORGET_S);
	job_start(&ch, &j);
	for (k = 0; k < 5; k++)
		job_round(&ch, &j, 0);
	an_tcp_event(ch.an, ch.host[1], 101, 100, AN_TCP_RETRANSMIT, 1, 1, "", now_of(&ch, 1));
	job_enter(&ch, &j, 0, 0);
	job_exit(&ch, &j, 1, 9);
	tick(&ch, 2 * FORGET_S);
	CHECK_INT(ch.nnew, 1);
	CHECK(ch.last_comm == 0xaaaa);
	CHECK_INT(ch.last_cul, 1);
	CHECK_INT(ch.last_pid, 101);
	CHECK(strstr(ch.last_text, "exited") != NULL);
	CHECK_INT(live_comms(&ch), 1);
	CHECK_INT(an_stats(ch.an)->comms_forgotten, 0);
	CHECK_INT(an_stats(ch.an)->procs_forgotten, 0);
	CHECK(proc(&ch, ch.host[1], 101) && proc(&ch, ch.host[1], 101)->state == AN_PROC_EXITED);
	/* rank 0 gives up (the watchdog aborts the comm) */
	job_destroy(&ch, &j, 0, 0);
	tick(&ch, FORGET_S - 1);
	CHECK_INT(live_comms(&ch), 1);		/* not before forget_s */
	tick(&ch, 2);
	CHECK_INT(live_comms(&ch), 0);
	CHECK_INT(an_stats(ch.an)->comms_forgotten, 1);
	CHECK_INT(ch.nnew, 1);
	CHECK_INT(ch.nrecovered, 0);
	CHECK_INT(ch.son, ch.soff);
	CHECK_INT(ch.an->nsuspected, 0);
	/* rank 1's slot goes, rank 0's process still runs */
	CHECK_INT(an_stats(ch.an)->procs_forgotten, 1);
	CHECK(proc(&ch, ch.host[1], 101) == NULL);
	CHECK(proc(&ch, ch.host[0], 100) != NULL);
	CHECK_INT(live_procs(&ch), 1);
	CHECK_INT(ch.an->tcp.live, 0);		/* its TCP pair went with it */
	an_free(ch.an);
}

/*
 * Pid 101 exits and comm A ends; a new process with pid 101 joins comm B
 * (ATTACH: it says it runs first, or its rank is the first news of it) and
 * hangs B: B's verdict names the new, running process; A's rank keeps
 * the old, exited one until A is forgotten.
 */
static void pid_reuse(bool attach)
{
	struct churn ch;
	struct job a = { .n = 2, .pid = { 100, 101 }, .comm = { 0xa } };
	struct job b = { .n = 2, .pid = { 100, 101 }, .comm = { 0xb } };
	struct an_comm *ca;
	int k;

	churn_init(&ch, FORGET_S);
	job_start(&ch, &a);
	for (k = 0; k < 3; k++)
		job_round(&ch, &a, 0);
	an_tcp_event(ch.an, ch.host[1], 101, 0, AN_TCP_RESET_RX, 1, 7, "10.0.0.1:1234",
		     now_of(&ch, 1));
	job_exit(&ch, &a, 1, 0);
	job_destroy(&ch, &a, 0, 0);
	tick(&ch, 2);
	CHECK_INT(ch.an->tcp.live, 1);
	if (attach) {
		job_start(&ch, &b);
	} else {
		for (k = 0; k < 2; k++) {
			struct an_key key_ = key(&ch, &b, 0, k);

			CHECK_INT(an_rank(ch.an, &key_, 0, now_of(&ch, k)), 0);
		}
	}
	ca = an_comm_get(ch.an, 0xa, 0, false);
	CHECK(ca && an_proc_of(ch.an, &ca->r[1])->state == AN_PROC_EXITED);
	CHECK(proc(&ch, ch.host[1], 101)->state == AN_PROC_RUNNING);
	CHECK_INT(ch.an->tcp.live, 0);		/* the old process's, not the new one's */
	for (k = 0; k < 3; k++)
		job_round(&ch, &b, 0);
	job_enter(&ch, &b, 0, 0);
	tick(&ch, STALL_S + 0.5);
	CHECK_INT(ch.nnew, 1);
	CHECK(ch.last_comm == 0xb);
	CHECK_INT(ch.last_cul, 1);
	CHECK_INT(ch.last_pid, 101);
	CHECK(strstr(ch.last_text, "running") != NULL);
	CHECK(strstr(ch.last_text, "exited") == NULL);
	/* A: forget_s after its last record; B waits on */
	tick(&ch, FORGET_S);
	CHECK(an_comm_get(ch.an, 0xa, 0, false) == NULL);
	CHECK(an_comm_get(ch.an, 0xb, 0, false) != NULL);
	CHECK_INT(an_stats(ch.an)->comms_forgotten, 1);
	CHECK_INT(an_stats(ch.an)->procs_forgotten, 1);	/* the first pid 101 */
	CHECK_INT(live_procs(&ch), 2);
	CHECK(proc(&ch, ch.host[1], 101)->state == AN_PROC_RUNNING);
	CHECK_INT(ch.nnew, 1);
	CHECK_INT(ch.nrecovered, 0);
	an_free(ch.an);
}

static void test_pid_reuse(void)
{
	pid_reuse(true);
	pid_reuse(false);
}

/*
 * Records that are the exited process's, not a new one's: a running state
 * dated before its exit (a fleet shard that delivers late), and a rank a
 * live peer's table names dead.
 */
static void test_not_new(void)
{
	struct churn ch;
	struct job j = { .n = 3, .pid = { 100, 101, 102 }, .comm = { 0xd } };
	struct an_launch dead = { .ncoll = -1, .dead = true };
	struct an_key k;
	uint64_t t_exit;
	int r;

	churn_init(&ch, FORGET_S);
	/* ranks 0 and 1 appear; pid 102 is known by its pod only */
	for (r = 0; r < 2; r++) {
		k = key(&ch, &j, 0, r);
		CHECK_INT(an_rank(ch.an, &k, 0, now_of(&ch, r)), 0);
	}
	an_proc_label(ch.an, ch.host[0], 102, AN_LABEL_POD, "job-d-2");
	t_exit = now_of(&ch, 1);
	job_exit(&ch, &j, 1, 9);
	job_exit(&ch, &j, 2, 9);
	step(&ch, 1000000);
	an_proc_state(ch.an, ch.host[1], 101, AN_PROC_RUNNING, 0, t_exit - 1);
	CHECK(proc(&ch, ch.host[1], 101)->state == AN_PROC_EXITED);
	CHECK_INT(an_stats(ch.an)->procs, 3);
	/* rank 2 (pid 102, host 0): rank 0's peer table names it dead */
	k = key(&ch, &j, 0, 2);
	an_launched(ch.an, &k, &dead, now_of(&ch, 2));
	CHECK_INT(an_stats(ch.an)->procs, 3);
	CHECK(proc(&ch, ch.host[0], 102)->state == AN_PROC_EXITED);
	CHECK_STR(proc(&ch, ch.host[0], 102)->label[0], "job-d-2");
	/* the job ends: everything goes */
	job_destroy(&ch, &j, 0, 0);
	tick(&ch, FORGET_S + 1);
	CHECK_INT(live_comms(&ch), 0);
	CHECK_INT(live_procs(&ch), 1);		/* pid 100 runs on */
	an_free(ch.an);
}

/* forget_s 0: nothing is ever forgotten */
static void test_never(void)
{
	struct churn ch;
	uint64_t ncomms = 0, nprocs = 0, peak = 0;
	int i;

	churn_init(&ch, 0);
	for (i = 0; i < 20; i++) {
		nprocs += (uint64_t)churn_job(&ch, i, &ncomms, &peak);
		tick(&ch, 1);
	}
	tick(&ch, 4 * FORGET_S);
	CHECK_INT(live_comms(&ch), ncomms);
	CHECK_INT(live_procs(&ch), nprocs);
	CHECK_INT(an_stats(ch.an)->comms_forgotten, 0);
	CHECK_INT(an_stats(ch.an)->procs_forgotten, 0);
	an_free(ch.an);
}

int main(void)
{
	test_churn();
	test_hang_kept();
	test_pid_reuse();
	test_not_new();
	test_never();
	return check_finish("test_an_forget");
}
