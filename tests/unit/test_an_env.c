// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Mismatched environments (an_env.c): ranks of one comm on different NCCL
 * builds get an ENV verdict of their own, once; a hang verdict cites the
 * NCCL_* variables its comm's ranks disagree on, not those that differ per
 * host by design.
 */
#include "test_an_helpers.h"

#define WORLD 0x1111222233334444ull
#define LIB_A "2.28.9 3f2a1c0b9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f40"
#define LIB_B "2.28.9 77aa1c0b9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f41"

static void lib(struct sim *s, int g, const char *value)
{
	an_proc_label(s->an, s->host_id[sim_host(s, g)], 100 + g, AN_LABEL_NCCL_LIB, value);
}

static void env(struct sim *s, int g, const char *name_value)
{
	an_proc_label(s->an, s->host_id[sim_host(s, g)], 100 + g, AN_LABEL_NCCL_ENV, name_value);
}

/* ranks 3 and 5 of 8 run another build of the same version */
static void test_mixed_builds(void)
{
	struct sim s;
	const struct an_verdict *v;
	int g;

	sim_init(&s, 5, 300);
	sim_comm(&s, WORLD, 8, NULL);
	for (g = 0; g < 8; g++)
		lib(&s, g, g == 3 || g == 5 ? LIB_B : LIB_A);
	sim_round(&s, WORLD, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_tick(&s, 1);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_ENV);
	CHECK_INT(v->role, AN_ROOT);
	CHECK_STR(sim_culprits(v), "3,5");
	CHECK(strstr(v->text, "run different NCCL libraries (version, build id): " LIB_A
		     " on ranks 0-2,4,6,7; " LIB_B " on ranks 3,5") != NULL);
	CHECK_INT(sim_val_i(&s.v[0], "nccl_libs"), 2);
	/* said once, not at every tick or label */
	lib(&s, 5, LIB_B);
	sim_tick(&s, 2);
	CHECK_INT(s.nv, 1);
	sim_fini(&s);
}

/* a 2-rank comm, one rank on each build: no majority, both named */
static void test_mixed_pair(void)
{
	struct sim s;

	sim_init(&s, 5, 300);
	sim_comm(&s, WORLD, 2, NULL);
	lib(&s, 0, LIB_A);
	lib(&s, 1, LIB_B);
	sim_round(&s, WORLD, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_tick(&s, 1);
	CHECK_INT(s.nv, 1);
	CHECK_STR(sim_culprits(&s.v[0]), "0,1");
	CHECK(strstr(s.v[0].text, "(no build runs on most: all are named)") != NULL);
	sim_fini(&s);
}

/* one build everywhere; a rank whose library is not known yet: nothing */
static void test_same_build(void)
{
	struct sim s;
	int g;

	sim_init(&s, 5, 300);
	sim_comm(&s, WORLD, 4, NULL);
	for (g = 0; g < 3; g++)
		lib(&s, g, LIB_A);
	sim_round(&s, WORLD, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_tick(&s, 1);
	CHECK_INT(s.nv, 0);
	sim_fini(&s);
}

/*
 * Rank 3 of 8 has NCCL_ALGO=Tree, the others Ring (rank 7: unset); every
 * rank has its own NCCL_HOSTID and NCCL_SOCKET_IFNAME (per host: not
 * compared).  Rank 2 hangs in CPU code: its H1 cites NCCL_ALGO.
 */
static void test_env_cited(void)
{
	struct sim s;
	const struct an_verdict *v;
	char hostid[32];
	int g;

	sim_init(&s, 5, 300);
	sim_comm(&s, WORLD, 8, NULL);
	for (g = 0; g < 8; g++) {
		lib(&s, g, LIB_A);
		snprintf(hostid, sizeof(hostid), "NCCL_HOSTID=node%d", g);
		env(&s, g, hostid);
		env(&s, g, g & 1 ? "NCCL_SOCKET_IFNAME=eth0" : "NCCL_SOCKET_IFNAME=eth1");
		if (g != 7)
			env(&s, g, g == 3 ? "NCCL_ALGO=Tree" : "NCCL_ALGO=Ring");
		env(&s, g, "NCCL_PROTO=Simple");
	}
	/* a label again replaces the variable of that name */
	env(&s, 3, "NCCL_ALGO=Tree");
	for (g = 0; g < 3; g++) {
		sim_round(&s, WORLD, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_step(&s, 10000000);
	}
	for (g = 0; g < 8; g++)
		if (g != 2)
			sim_call(&s, WORLD, g, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H1);
	CHECK_STR(sim_culprits(v), "2");
	CHECK(strstr(v->text, "; NCCL_ALGO differs across the comm's ranks: Ring on ranks 0-2,4-6; "
		     "Tree on rank 3; unset on rank 7") != NULL);
	CHECK(strstr(v->text, "NCCL_HOSTID") == NULL);
	CHECK(strstr(v->text, "NCCL_SOCKET_IFNAME") == NULL);
	CHECK(strstr(v->text, "NCCL_PROTO") == NULL);
	CHECK(strstr(v->text, "different NCCL libraries") == NULL);
	CHECK_INT(sim_val_i(v, "nccl_env_diffs"), 1);
	sim_fini(&s);
}

/* a label that is not NAME=VALUE of an NCCL_ variable is refused */
static void test_bad_env_label(void)
{
	struct sim s;
	const struct an_verdict *v;
	int g;

	sim_init(&s, 5, 300);
	sim_comm(&s, WORLD, 2, NULL);
	for (g = 0; g < 2; g++)
		lib(&s, g, LIB_A);
	env(&s, 0, "PATH=/bin");
	env(&s, 0, "NCCL_ALGO");
	sim_round(&s, WORLD, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_call(&s, WORLD, 0, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK(strstr(v->text, "differs") == NULL);
	sim_fini(&s);
}

int main(void)
{
	test_mixed_builds();
	test_mixed_pair();
	test_same_build();
	test_env_cited();
	test_bad_env_label();
	return check_finish("test_an_env");
}
