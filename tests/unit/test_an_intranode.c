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

#define DP 0x0d0d0e0e0f0f1010ull
#define PP 0x0f0f0a0a0b0b0c0cull

/* rank R of comm HASH's proxy sub toward PEER (tier C) */
static void sub(struct sim *s, uint64_t hash, int r, int peer, enum an_dir dir, uint64_t op,
		uint64_t po, uint64_t tr, uint64_t rc, uint64_t dn)
{
	struct sim_comm *c = sim_find(s, hash);
	struct an_key k = sim_key(s, c, r);
	struct an_progress p = {
		.seq = -1, .channel = 0, .peer = peer, .dir = dir, .posted = po,
		.transmitted = tr, .received = rc, .done = dn, .nsteps = 1, .op = op,
		.nbytes = 1 << 20,
	};

	an_progress(s->an, &k, &p, sim_now(s, c, r));
}

/*
 * Global ranks 2 and 3 share a host: their TP comm is intra-node (no proxy
 * ops; tier B completes a step at its end).  Rank 3's DP comm with rank 7
 * crosses hosts: in step 5 its data from rank 7 never arrives (rank 7's
 * send completed).  Rank 3 entered TP seq 5 before DP seq 5, and its step
 * never completes, so tier B leaves TP seq 5 open on it; rank 2 runs on
 * into TP seq 6, which rank 3 never enters (its CPU waits for its GPU).
 * The one root is the DP comm's H3; the TP comm (its round 5 not
 * completed on rank 3's GPU) is its cascade.  The shape of the live
 * test_intranode netstall, whose H1 root in 1 of 6 runs this does not
 * reproduce (that cause is not found yet: tests/quarantine.txt).
 */
static void test_netstall_behind_tp(void)
{
	static const int tpg[2] = { 2, 3 }, dpg[2] = { 3, 7 };
	const struct an_verdict *v;
	struct an_op o[4];
	struct sim s;
	int i, roots = 0;

	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 2, tpg);
	sim_comm(&s, DP, 2, dpg);
	intra_node(&s, 2);
	for (i = 0; i < 6; i++) {
		o[0] = sim_call(&s, TP, 0, CCLD_FN_REDUCESCATTER, 1 << 20, 7);
		o[1] = sim_call(&s, TP, 1, CCLD_FN_REDUCESCATTER, 1 << 20, 7);
		o[2] = sim_call(&s, DP, 0, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		o[3] = sim_call(&s, DP, 1, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_step(&s, 1000000);
		if (i < 5) {
			int r;

			for (r = 0; r < 2; r++) {
				sub(&s, DP, r, 1 - r, AN_SEND, 2 * (uint64_t)i, 1, 1, 0, 1);
				sub(&s, DP, r, 1 - r, AN_RECV, 2 * (uint64_t)i, 1, 0, 1, 1);
			}
			for (r = 0; r < 4; r++)
				sim_complete(&s, &o[r]);
		} else {
			/* rank 7's side done, rank 3's receive starves */
			sub(&s, DP, 1, 0, AN_SEND, 10, 1, 1, 0, 1);
			sub(&s, DP, 1, 0, AN_RECV, 10, 1, 0, 1, 1);
			sub(&s, DP, 0, 1, AN_SEND, 10, 1, 1, 0, 1);
			sub(&s, DP, 0, 1, AN_RECV, 10, 1, 0, 0, 0);
			sim_complete(&s, &o[0]);
			sim_complete(&s, &o[3]);
		}
		sim_step(&s, 10000000);
	}
	sim_call(&s, TP, 0, CCLD_FN_REDUCESCATTER, 1 << 20, 7);
	sim_tick(&s, 5.5);
	for (i = 0; i < s.nv; i++)
		roots += s.v[i].kind == AN_V_NEW && s.v[i].role == AN_ROOT;
	CHECK_INT(roots, 1);
	v = sim_find_v(&s, DP, AN_V_NEW);
	CHECK(v != NULL);
	if (v) {
		CHECK(v->role == AN_ROOT);
		CHECK_INT(v->cls, AN_H3);
		CHECK_STR(sim_culprits(v), "0");
	}
	v = sim_find_v(&s, TP, AN_V_NEW);
	CHECK(v != NULL);
	if (v) {
		CHECK(v->role == AN_CASCADE);
		CHECK_STR(sim_culprits(v), "1");
	}
	sim_fini(&s);
}

/*
 * test_intranode netstall as it failed live (1 of 5 runs on 3259d4f, its
 * capture replayed): TP {2,3} intra-node, DP {3,7} and PP {3,7} across
 * hosts.  In the last step rank 7 enters its pipeline send to rank 3 (its
 * GPU there, no credit from rank 3), then DP; rank 3 enters TP (its GPU
 * not placed: tier B only), then DP, whose send left and is never
 * delivered (rank 3's network stopped); rank 3 never posts the pipeline
 * receive (its CPU waits for its GPU).  PP: an H1 naming rank 3 by the
 * counts.  DP: an H3, rank 3's data never arrived, held by PP through rank
 * 7's GPU.  The H1 was the root; the network fault holds rank 3's process,
 * so the H1 is no cause of its own: DP is the root, PP its cascade.
 */
static void test_netstall_p2p_h1(void)
{
	static const int tpg[2] = { 2, 3 }, pair[2] = { 3, 7 };
	const struct an_verdict *v;
	struct an_op o[4];
	struct sim s;
	int i, r, roots = 0;

	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 2, tpg);
	sim_comm(&s, DP, 2, pair);
	sim_comm(&s, PP, 2, pair);
	intra_node(&s, 2);
	for (i = 0; i < 5; i++) {
		uint64_t op = 2 * (uint64_t)i + 1;	/* a collective's: odd */

		o[0] = sim_p2p(&s, PP, 1, 0, 0, 4096, true);
		o[1] = sim_p2p(&s, PP, 0, 1, 1, 4096, true);
		sim_complete(&s, &o[0]);
		sim_complete(&s, &o[1]);
		o[0] = sim_call(&s, TP, 0, CCLD_FN_REDUCESCATTER, 1 << 20, 7);
		o[1] = sim_call(&s, TP, 1, CCLD_FN_REDUCESCATTER, 1 << 20, 7);
		o[2] = sim_call(&s, DP, 0, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		o[3] = sim_call(&s, DP, 1, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_step(&s, 1000000);
		for (r = 0; r < 2; r++) {
			sub(&s, DP, r, 1 - r, AN_SEND, op, 1, 1, 0, 1);
			sub(&s, DP, r, 1 - r, AN_RECV, op, 1, 0, 1, 1);
		}
		for (r = 0; r < 4; r++)
			sim_complete(&s, &o[r]);
		sim_step(&s, 10000000);
	}
	/* the last step: rank 7's pipeline send first, its GPU held there */
	sim_p2p(&s, PP, 1, 0, 0, 4096, true);
	sub(&s, PP, 1, 0, AN_SEND, 2, 1, 0, 0, 0);
	sim_step(&s, 1000000);
	o[0] = sim_call(&s, TP, 0, CCLD_FN_REDUCESCATTER, 1 << 20, 7);
	sim_call(&s, TP, 1, CCLD_FN_REDUCESCATTER, 1 << 20, 7);
	sim_call(&s, DP, 0, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_call(&s, DP, 1, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_step(&s, 1000000);
	sub(&s, DP, 0, 1, AN_SEND, 11, 1, 1, 0, 0);
	sub(&s, DP, 0, 1, AN_RECV, 11, 1, 0, 0, 0);
	sub(&s, DP, 1, 0, AN_SEND, 11, 1, 0, 0, 0);
	sub(&s, DP, 1, 0, AN_RECV, 11, 1, 0, 0, 0);
	sim_complete(&s, &o[0]);
	sim_tick(&s, 5.5);
	for (i = 0; i < s.nv; i++)
		roots += s.v[i].kind == AN_V_NEW && s.v[i].role == AN_ROOT;
	CHECK_INT(roots, 1);
	v = sim_find_v(&s, DP, AN_V_NEW);
	CHECK(v != NULL);
	if (v) {
		CHECK(v->role == AN_ROOT);
		CHECK_INT(v->cls, AN_H3);
		CHECK_STR(sim_culprits(v), "0");
		CHECK_INT(v->t4, AN_T4_NOT_DELIVERED);
	}
	v = sim_find_v(&s, PP, AN_V_NEW);
	CHECK(v != NULL);
	if (v) {
		CHECK_INT(v->cls, AN_H1);
		CHECK(v->role == AN_CASCADE && v->blocked_comm == DP);
		CHECK_STR(sim_culprits(v), "0");
	}
	sim_fini(&s);
}

int main(void)
{
	test_gpu_hang(false);
	test_gpu_hang(true);
	test_tiers_with_proxy();
	test_netstall_behind_tp();
	test_netstall_p2p_h1();
	return check_finish("test_an_intranode");
}
