// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A comm over NCCL's intra-node transports (P2P, SHM) has no proxy ops: a
 * look at its proxies' memory finds nothing active, which says nothing of
 * its GPUs.  Its verdicts rest on calls and GPU completions and say so.
 */
#include "test_an_helpers.h"

#define TP 0x0a0b0c0d01020304ull

static void look_empty(struct sim *s, int n)
{
	struct sim_comm *c = sim_find(s, TP);
	int r;

	for (r = 0; r < n; r++) {
		struct an_key k = sim_key(s, c, r);

		an_snapshot(s->an, &k, NULL, 0, sim_now(s, c, r));
	}
}

/* the comm's peer table, read at attach: every rank on one host */
static void intra_node(struct sim *s, int n)
{
	struct sim_comm *c = sim_find(s, TP);
	struct an_launch l = { .ncoll = -1, .hosts_known = true, .intra_node = true };
	int r;

	for (r = 0; r < n; r++) {
		struct an_key k = sim_key(s, c, r);

		an_launched(s->an, &k, &l, sim_now(s, c, r));
	}
}

/*
 * rank 2's GPU never finishes seq 4; empty looks at every rank's proxy of
 * a comm whose peer table puts every rank on one host
 */
static void test_gpu_hang(bool look)
{
	const struct an_verdict *v;
	struct sim s;

	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 4, NULL);
	if (look)
		intra_node(&s, 4);
	sim_gpu_hang(&s, TP, 2);
	sim_tick(&s, 3);
	if (look)
		look_empty(&s, 4);
	sim_tick(&s, 2.5);
	v = sim_last_cls(&s, AN_H3);
	CHECK(v != NULL);
	if (v) {
		CHECK_STR(sim_culprits(v), "2");
		CHECK_STR(sim_val_s(v, "evidence_tiers"), "A,B");
		CHECK(strstr(v->text, "from calls and GPU completions") != NULL);
	}
	sim_fini(&s);
}

/* with proxy ops seen on the comm, an empty look does say nothing is open */
static void test_tiers_with_proxy(void)
{
	const struct an_verdict *v;
	struct an_progress p = {
		.seq = -1, .channel = 0, .peer = 1, .dir = AN_SEND, .posted = 1,
		.transmitted = 1, .nsteps = 4, .op = 2 * 9 + 1,
	};
	struct sim s;
	struct an_key k;

	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 4, NULL);
	sim_gpu_hang(&s, TP, 2);
	k = sim_key(&s, sim_find(&s, TP), 0);
	an_progress(s.an, &k, &p, s.now[0]);
	sim_tick(&s, 5.5);
	v = sim_last_cls(&s, AN_H3);
	CHECK(v != NULL);
	if (v) {
		CHECK_STR(sim_val_s(v, "evidence_tiers"), "A,B,C");
		CHECK(strstr(v->text, "no proxy data") == NULL);
	}
	sim_fini(&s);
}

int main(void)
{
	test_gpu_hang(false);
	test_gpu_hang(true);
	test_tiers_with_proxy();
	return check_finish("test_an_intranode");
}
