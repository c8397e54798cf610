// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Hangs in communicator setup and teardown (an_setup.c): a rank that never
 * calls ncclCommInitRank* (named, with its process where the launcher's
 * ranks tell), a bootstrap that does not complete, a rank stuck in a
 * teardown call; and no verdict for inits and teardowns that return, or a
 * process that exits inside a teardown.
 */
#include "test_an_helpers.h"

#define UID 0xabcdef0123456789ull
#define COMM 0x1111222233334444ull

static void setup(struct sim *s, int g, uint64_t group, enum an_setup_kind kind, int fn,
		  int nranks, bool returned)
{
	struct an_setup st = { .pid = 100 + g, .group = group, .kind = kind, .fn = fn,
			       .nranks = nranks, .rank = g, .returned = returned };
	int h = sim_host(s, g);

	an_setup_call(s->an, s->host_id[h], &st, s->now[h]);
}

static void label_ranks(struct sim *s, int n)
{
	char v[16];
	int g;

	for (g = 0; g < n; g++) {
		snprintf(v, sizeof(v), "%d", g);
		an_proc_label(s->an, s->host_id[sim_host(s, g)], 100 + g, AN_LABEL_RANK, v);
	}
}

/* ranks 0, 1, 3 of 4 wait in init; rank 2 (global rank 2, pid 102) never comes */
static void test_missing_rank(void)
{
	struct sim s;
	const struct an_verdict *v;
	int g;

	sim_init(&s, 5, 300);
	label_ranks(&s, 4);
	for (g = 0; g < 4; g++)
		if (g != 2)
			setup(&s, g, UID, AN_SETUP_INIT, CCLD_FN_INIT_RANK_CONFIG, 4, false);
	sim_tick(&s, 4.5);
	CHECK_INT(s.nv, 0);		/* not before the stall time */
	/* asked to look at them again, from half the stall time on */
	CHECK_INT(s.nsuspect_on, 1);
	CHECK_INT(s.suspect_comm, UID);
	sim_tick(&s, 1);
	CHECK_INT(s.nv, 1);
	CHECK_INT(s.nsuspect_off, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H1);
	CHECK_INT(v->kind, AN_V_NEW);
	CHECK_STR(sim_culprits(v), "2");
	CHECK_INT(v->cul[0].pid, 102);
	CHECK_INT(v->comm, UID);
	CHECK(strstr(v->text, "rank 2 of the 4 ranks never called ncclCommInitRankConfig for "
		     "unique id abcdef0123456789; ranks 0,1,3 wait inside it for") != NULL);
	CHECK(strstr(v->text, "; rank 2 is global rank 2, pid 102: process running") != NULL);
	CHECK_INT(sim_val_i(v, "arrived"), 3);
	/* it comes at last: every rank returns, a recovery */
	setup(&s, 2, UID, AN_SETUP_INIT, CCLD_FN_INIT_RANK_CONFIG, 4, false);
	for (g = 0; g < 4; g++)
		setup(&s, g, UID, AN_SETUP_INIT, CCLD_FN_INIT_RANK_CONFIG, 4, true);
	CHECK_INT(s.nv, 2);
	CHECK_INT(s.v[1].kind, AN_V_RECOVERED);
	sim_tick(&s, 10);
	CHECK_INT(s.nv, 2);
	sim_fini(&s);
}

/*
 * Found inside their init in memory when ccld attached (fn 0: the variant
 * not known): rank 2 named the same way, the wait a bound; rank 2 then
 * seen entering names the variant, and every return is a recovery
 */
static void test_missing_rank_read_inside(void)
{
	struct sim s;
	const struct an_verdict *v;
	int g;

	sim_init(&s, 5, 300);
	label_ranks(&s, 4);
	for (g = 0; g < 4; g++) {
		struct an_setup st = { .pid = 100 + g, .group = UID, .kind = AN_SETUP_INIT,
				       .nranks = 4, .rank = g, .before = true };

		if (g != 2)
			an_setup_call(s.an, s.host_id[sim_host(&s, g)], &st, s.now[sim_host(&s, g)]);
	}
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H1);
	CHECK_STR(sim_culprits(v), "2");
	CHECK_INT(v->cul[0].pid, 102);
	CHECK(strstr(v->text, "rank 2 of the 4 ranks never called ncclCommInitRank* for "
		     "unique id abcdef0123456789; ranks 0,1,3 wait inside it for 5.") != NULL);
	CHECK(strstr(v->text, " s or more (inside it when ccld attached); rank 2 is global "
		     "rank 2, pid 102") != NULL);
	setup(&s, 2, UID, AN_SETUP_INIT, CCLD_FN_INIT_RANK_CONFIG, 4, false);
	for (g = 0; g < 4; g++)
		setup(&s, g, UID, AN_SETUP_INIT, 0, 4, true);
	CHECK_INT(s.nv, 2);
	CHECK_INT(s.v[1].kind, AN_V_RECOVERED);
	CHECK(strstr(s.v[1].text, "ncclCommInitRankConfig returned on every rank") != NULL);
	sim_fini(&s);
}

/* the ranks' launcher numbers are not this comm's: the rank is named, no process */
static void test_missing_rank_unlabelled(void)
{
	struct sim s;
	const struct an_verdict *v;

	sim_init(&s, 5, 300);
	setup(&s, 0, UID, AN_SETUP_INIT, CCLD_FN_INIT_RANK, 2, false);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_STR(sim_culprits(v), "1");
	CHECK_INT(v->cul[0].pid, 0);
	CHECK(strstr(v->text, "no traced process is known as rank 1") != NULL);
	sim_fini(&s);
}

/* all 4 inside init, none returns: the bootstrap */
static void test_bootstrap_stuck(void)
{
	struct sim s;
	const struct an_verdict *v;
	int g;

	sim_init(&s, 5, 300);
	for (g = 0; g < 4; g++)
		setup(&s, g, UID, AN_SETUP_INIT, CCLD_FN_INIT_RANK, 4, false);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H3);
	CHECK_STR(sim_culprits(v), "0,1,2,3");
	CHECK(strstr(v->text, "all 4 ranks entered ncclCommInitRank for unique id") != NULL);
	sim_fini(&s);
}

/*
 * The name the ranks' configs give the comm they create says which one
 * hangs (the unique id alone does not): from the first rank that gave one.
 */
static void test_named_init(void)
{
	struct an_setup st = { .pid = 100, .group = UID, .kind = AN_SETUP_INIT,
			       .fn = CCLD_FN_INIT_RANK_CONFIG, .nranks = 2 };
	struct sim s;

	sim_init(&s, 5, 300);
	an_setup_call(s.an, s.host_id[0], &st, s.now[0]);
	st.pid = 101;
	st.rank = 1;
	snprintf(st.name, sizeof(st.name), "world\"\n");
	an_setup_call(s.an, s.host_id[0], &st, s.now[0]);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	CHECK(strstr(s.v[0].text, "all 2 ranks entered ncclCommInitRankConfig (\"world??\") "
		     "for unique id abcdef0123456789 and none returned") != NULL);
	sim_fini(&s);
}

/* inits that return, teardowns that return: nothing */
static void test_quiet(void)
{
	struct sim s;
	int g;

	sim_init(&s, 5, 300);
	for (g = 0; g < 4; g++)
		setup(&s, g, UID, AN_SETUP_INIT, CCLD_FN_INIT_RANK, 4, false);
	sim_tick(&s, 1);
	for (g = 0; g < 4; g++)
		setup(&s, g, UID, AN_SETUP_INIT, CCLD_FN_INIT_RANK, 4, true);
	/* teardown one rank at a time, each returns */
	for (g = 0; g < 4; g++) {
		setup(&s, g, COMM, AN_SETUP_TEARDOWN, CCLD_FN_DESTROY, 4, false);
		sim_tick(&s, 2);
		setup(&s, g, COMM, AN_SETUP_TEARDOWN, CCLD_FN_DESTROY, 4, true);
	}
	sim_tick(&s, 20);
	CHECK_INT(s.nv, 0);
	/* a bad record is refused */
	setup(&s, 5, COMM, AN_SETUP_TEARDOWN, CCLD_FN_DESTROY, 4, false);
	sim_tick(&s, 20);
	CHECK_INT(s.nv, 0);
	sim_fini(&s);
}

/* rank 1 stays inside ncclCommFinalize; rank 3's process exits inside it */
static void test_teardown_stuck(void)
{
	struct sim s;
	const struct an_verdict *v;
	int g;

	sim_init(&s, 5, 300);
	for (g = 0; g < 4; g++)
		setup(&s, g, COMM, AN_SETUP_TEARDOWN, CCLD_FN_FINALIZE, 4, false);
	for (g = 0; g < 4; g += 2)
		setup(&s, g, COMM, AN_SETUP_TEARDOWN, CCLD_FN_FINALIZE, 4, true);
	an_proc_state(s.an, s.host_id[sim_host(&s, 3)], 103, AN_PROC_EXITED, 0, s.now[0]);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H3);
	CHECK_STR(sim_culprits(v), "1");
	CHECK(strstr(v->text, "rank 1 of comm 1111222233334444 is inside ncclCommFinalize") != NULL);
	sim_fini(&s);
}

/* ITS split (from 0) of comm COMM of 4 ranks, entered by rank G, its config naming NAME */
static void split(struct sim *s, int g, uint32_t its, const char *name, bool returned)
{
	struct an_setup st = { .pid = 100 + g, .group = an_setup_split_group(COMM, its),
			       .comm = COMM, .kind = AN_SETUP_SPLIT, .fn = CCLD_FN_SPLIT,
			       .nranks = 4, .rank = g, .returned = returned };

	snprintf(st.name, sizeof(st.name), "%s", name);
	an_setup_call(s->an, s->host_id[0], &st, s->now[0]);
}

/*
 * Ranks 0, 2, 3 of comm COMM wait in their second ncclCommSplit; rank 1
 * (pid 101) never calls it: an H1 on COMM naming it, from COMM's ranks.
 * Their first split, which all returned, says nothing.
 */
static void test_split_missing(void)
{
	struct sim s;
	const struct an_verdict *v;
	int g;

	sim_init(&s, 5, 300);
	sim_comm(&s, COMM, 4, NULL);
	for (g = 0; g < 4; g++)
		split(&s, g, 0, g < 2 ? "tp0" : "tp1", false);
	for (g = 0; g < 4; g++)
		split(&s, g, 0, "", true);
	for (g = 0; g < 4; g++)
		if (g != 1)
			split(&s, g, 1, "dp", false);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H1);
	CHECK(v->comm == COMM);
	CHECK_STR(sim_culprits(v), "1");
	CHECK_INT(v->cul[0].pid, 101);
	CHECK(strstr(v->text, "rank 1 of the 4 ranks of comm 1111222233334444 never called "
		     "ncclCommSplit (\"dp\"); ranks 0,2,3 wait inside it for") != NULL);
	CHECK(strstr(v->text, "; rank 1 of comm 1111222233334444 is pid 101: ") != NULL);
	/* it comes: every rank returns, a recovery */
	split(&s, 1, 1, "dp", false);
	for (g = 0; g < 4; g++)
		split(&s, g, 1, "", true);
	CHECK_INT(s.nv, 2);
	CHECK_INT(s.v[1].kind, AN_V_RECOVERED);
	sim_fini(&s);
}

/* names that differ (one per color) are not shown; all inside, none back: H3 */
static void test_split_stuck(void)
{
	struct sim s;
	int g;

	sim_init(&s, 5, 300);
	sim_comm(&s, COMM, 4, NULL);
	for (g = 0; g < 4; g++)
		split(&s, g, 0, g < 2 ? "tp0" : "tp1", false);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	CHECK_INT(s.v[0].cls, AN_H3);
	CHECK(strstr(s.v[0].text, "all 4 ranks of comm 1111222233334444 entered ncclCommSplit "
		     "and none returned") != NULL);
	/* a split record without its parent comm is refused */
	{
		struct an_setup st = { .pid = 100, .group = 7, .kind = AN_SETUP_SPLIT,
				       .fn = CCLD_FN_SPLIT, .nranks = 4 };
		uint64_t before = an_stats(s.an)->rejected;

		an_setup_call(s.an, s.host_id[0], &st, s.now[0]);
		CHECK(an_stats(s.an)->rejected == before + 1);
	}
	sim_fini(&s);
}

int main(void)
{
	test_missing_rank();
	test_missing_rank_read_inside();
	test_missing_rank_unlabelled();
	test_bootstrap_stuck();
	test_named_init();
	test_quiet();
	test_teardown_stuck();
	test_split_missing();
	test_split_stuck();
	return check_finish("test_an_setup");
}
