// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * p2p proxy op ids are each rank's own count per channel (NCCL's
 * sharedRes->p2pOpCount[channel]): the two ranks of a send/recv pair hold
 * different ids for the same transfer.  The analyzer matches p2p flows
 * across ranks by channel, peer and direction, never by id.
 */
#include "test_an_helpers.h"

#define PP 0x2222333344445555ull

/* rank R's p2p sub; OPC is NCCL's opCount (p2p: odd), kept + 1 */
static void p2p_sub(struct sim *s, int r, int ch, enum an_dir dir, uint64_t opc,
		    uint64_t po, uint64_t tr, uint64_t rc, uint64_t dn)
{
	struct sim_comm *c = sim_find(s, PP);
	struct an_key k = sim_key(s, c, r);
	struct an_progress p = {
		.seq = -1, .channel = ch, .peer = 1 - r, .dir = dir,
		.posted = po, .transmitted = tr, .received = rc, .done = dn,
		.nsteps = 4, .op = opc + 1, .nbytes = 16 << 10,
	};

	an_progress(s->an, &k, &p, sim_now(s, c, r));
}

/* both ranks' proxies finished their send and receive of p2p op OPC */
static void exchange_done_at_proxy(struct sim *s, uint64_t opc)
{
	int r;

	for (r = 0; r < 2; r++) {
		p2p_sub(s, r, 0, AN_SEND, opc, 4, 4, 0, 4);
		p2p_sub(s, r, 0, AN_RECV, opc, 4, 0, 4, 4);
	}
}

/*
 * PP's ranks send to and receive from each other; their proxies finish it
 * as p2p op OPC (0: no proxy record), then their GPUs complete it if DONE
 */
static void exchange(struct sim *s, uint64_t opc, bool done)
{
	struct an_op o[4];
	int k;

	o[0] = sim_p2p(s, PP, 0, 1, 0, 4096, true);
	o[1] = sim_p2p(s, PP, 0, 1, 1, 4096, true);
	o[2] = sim_p2p(s, PP, 1, 0, 1, 4096, true);
	o[3] = sim_p2p(s, PP, 1, 0, 0, 4096, true);
	if (opc)
		exchange_done_at_proxy(s, opc);
	for (k = 0; done && k < 4; k++)
		sim_complete(s, &o[k]);
}

/*
 * A pipeline pair exchanging activations and gradients; then rank BAD's
 * send of the next exchange leaves and is never delivered, the other
 * side's send gets no credit, both receives wait.  Rank 0 counts its p2p
 * batches on channel 0 at OPC0, rank 1 at OPC1.
 */
static void netstall_pair(int bad, uint64_t opc0, uint64_t opc1)
{
	const uint64_t opc[2] = { opc0, opc1 };
	const struct an_verdict *v;
	struct sim s;
	int i, r;

	sim_init(&s, 5, 300);
	sim_comm(&s, PP, 2, NULL);
	for (i = 0; i < 3; i++) {
		exchange(&s, 0, true);
		sim_step(&s, 10000000);
	}
	exchange(&s, 0, false);
	for (r = 0; r < 2; r++) {
		/* the exchange before, finished: ids one batch back */
		p2p_sub(&s, r, 0, AN_SEND, opc[r] - 4, 4, 4, 0, 4);
		p2p_sub(&s, r, 0, AN_RECV, opc[r] - 4, 4, 0, 4, 4);
		if (r == bad)
			p2p_sub(&s, r, 0, AN_SEND, opc[r], 1, 1, 0, 0);
		else
			p2p_sub(&s, r, 0, AN_SEND, opc[r], 1, 0, 0, 0);
		p2p_sub(&s, r, 0, AN_RECV, opc[r], 1, 0, 0, 0);
	}
	sim_tick(&s, 5.5);
	v = sim_last_cls(&s, AN_H3);
	CHECK(v != NULL);
	if (v) {
		CHECK(v->p2p);
		CHECK_STR(sim_culprits(v), bad ? "1" : "0");
		CHECK_INT(v->t4, AN_T4_NOT_DELIVERED);
		CHECK(strstr(v->text, "network") != NULL);
	}
	sim_fini(&s);
}

/*
 * Rank 1's GPU stalls in a kernel before its next receive: its call was
 * made, but NCCL posts a p2p op to the proxy when the stream reaches it,
 * so rank 1's proxy has no receive toward rank 0.  Rank 0's send has data
 * from its GPU and no credit (not transmitted).  The cause is the receiver,
 * whose proxy is seen (its earlier exchange): no receive toward the sender
 * is no buffer posted.  (Without a receive to look at, the sender was
 * named: the live gpustall scenario's PP comm got a second root.)
 */
static void receiver_not_posted(void)
{
	const struct an_verdict *v;
	struct sim s;
	int r;

	sim_init(&s, 5, 300);
	sim_comm(&s, PP, 2, NULL);
	for (r = 0; r < 3; r++) {
		struct an_op o[2];

		o[0] = sim_p2p(&s, PP, 0, 1, 0, 4096, true);
		o[1] = sim_p2p(&s, PP, 1, 0, 1, 4096, true);
		sim_complete(&s, &o[0]);
		sim_complete(&s, &o[1]);
		sim_step(&s, 10000000);
	}
	sim_p2p(&s, PP, 0, 1, 0, 4096, true);
	sim_p2p(&s, PP, 1, 0, 1, 4096, true);
	/* the exchange before, finished, then rank 0's send without credit */
	p2p_sub(&s, 0, 0, AN_SEND, 7, 4, 4, 0, 4);
	p2p_sub(&s, 1, 0, AN_RECV, 9, 4, 0, 4, 4);
	p2p_sub(&s, 0, 0, AN_SEND, 9, 1, 0, 0, 0);
	sim_tick(&s, 5.5);
	v = sim_last_cls(&s, AN_H3);
	CHECK(v != NULL);
	if (v) {
		CHECK_STR(sim_culprits(v), "1");
		CHECK(strstr(v->text, "receiver") != NULL);
	}
	sim_fini(&s);
}

/*
 * A pipeline pair's latest exchange finished at both proxies (every sub
 * done) while tier B, one completion per step, has not completed it yet;
 * then rank 1's CPU stops before the DP all-reduce.  The pair's Send/Recv
 * are not in flight: the one verdict is the H1 on the DP comm, and the pair
 * has none (it was a cascade "entered matching Send/Recv ... no progress
 * data tells which one is stuck"; in the live attach_midrun netstall,
 * whose comms did not link, a second root)
 */
#define DP 0x7777888899990000ull

static void pair_passed_at_proxy(void)
{
	const struct an_verdict *v;
	struct sim s;
	int i, roots = 0;

	sim_init(&s, 5, 300);
	sim_comm(&s, PP, 2, NULL);
	sim_comm(&s, DP, 2, NULL);
	for (i = 0; i < 3; i++) {
		exchange(&s, 2 * (uint64_t)i + 1, true);
		sim_round(&s, DP, CCLD_FN_ALLREDUCE, 1024, 7);
		sim_step(&s, 10000000);
	}
	exchange(&s, 7, false);
	sim_call(&s, DP, 0, CCLD_FN_ALLREDUCE, 1024, 7);
	sim_tick(&s, 5.5);
	for (i = 0; i < s.nv; i++) {
		roots += s.v[i].kind == AN_V_NEW && s.v[i].role == AN_ROOT;
		CHECK(s.v[i].comm != PP);
	}
	CHECK_INT(roots, 1);
	v = sim_find_v(&s, DP, AN_V_NEW);
	CHECK(v != NULL);
	if (v) {
		CHECK_INT(v->cls, AN_H1);
		CHECK(v->role == AN_ROOT);
		CHECK_STR(sim_culprits(v), "1");
	}
	sim_fini(&s);
}

/*
 * Pipeline Send/Recv, then the loss all-reduce, on one comm (the moe
 * pattern's world comm); rank 1's GPU stops inside all-reduce seq 3 while
 * its CPU waits for it (a host sync), so it never enters the next step's
 * Send/Recv; rank 0, running ahead, did.  Rank 0's unmatched ops were
 * entered after the round and queue behind it: the round is where the comm
 * is held, an H3 at rank 1 (it was H1 "rank 1 never entered the Recv").
 */
static void gpu_stall_before_pipeline(void)
{
	const struct an_verdict *v;
	struct sim s;
	struct an_op ar;
	int i;

	sim_init(&s, 5, 300);
	sim_comm(&s, PP, 2, NULL);
	for (i = 0; i < 4; i++) {
		exchange(&s, 0, true);
		if (i < 3) {
			sim_round(&s, PP, CCLD_FN_ALLREDUCE, 2, 7);
		} else {
			ar = sim_call(&s, PP, 0, CCLD_FN_ALLREDUCE, 2, 7);
			sim_complete(&s, &ar);
			sim_call(&s, PP, 1, CCLD_FN_ALLREDUCE, 2, 7);
		}
		sim_step(&s, 10000000);
	}
	sim_p2p(&s, PP, 0, 1, 0, 4096, true);
	sim_p2p(&s, PP, 0, 1, 1, 4096, true);
	sim_tick(&s, 5.5);
	v = sim_find_v(&s, PP, AN_V_NEW);
	CHECK(v != NULL);
	if (v) {
		CHECK_INT(v->cls, AN_H3);
		CHECK_STR(sim_culprits(v), "1");
		CHECK_INT(v->seq, 3);
	}
	sim_fini(&s);
}

int main(void)
{
	/* the culprit's id the higher, then the lower, then both equal */
	netstall_pair(0, (7 << 1) + 3, (2 << 1) + 3);
	netstall_pair(0, (2 << 1) + 3, (7 << 1) + 3);
	netstall_pair(1, (7 << 1) + 3, (2 << 1) + 3);
	netstall_pair(1, (2 << 1) + 3, (7 << 1) + 3);
	netstall_pair(1, (4 << 1) + 3, (4 << 1) + 3);
	receiver_not_posted();
	pair_passed_at_proxy();
	gpu_stall_before_pipeline();
	return check_finish("test_an_p2pid");
}
