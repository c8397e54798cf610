// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* H3: all ranks entered, consistent; located from tier B, C or E data. */
#include "test_an_helpers.h"

#define TP 0x0123456789abcdefull

/* 4 ranks: warm rounds 0..4, then everyone enters seq 5; GPU done up to 4 */
static struct sim_comm *setup(struct sim *s, double stall)
{
	int i, r;

	sim_init(s, stall, 300);
	sim_comm(s, TP, 4, NULL);
	for (i = 0; i < 5; i++) {
		sim_round(s, TP, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_step(s, 10000000);
	}
	for (r = 0; r < 4; r++)
		sim_call(s, TP, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	return sim_find(s, TP);
}

static void test_no_data(void)
{
	struct sim s;
	const struct an_verdict *v;

	setup(&s, 5);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H3);
	CHECK_INT(v->seq, 5);
	CHECK_STR(sim_culprits(v), "0,1,2,3");
	CHECK(strstr(v->text, "no progress data") != NULL);
	CHECK_INT(v->t4, AN_T4_NONE);
	check_latency(v, 5);
	sim_fini(&s);
}

/* rank 2's GPU never finished seq 4; the others did and entered seq 5 */
static void test_tier_b(void)
{
	struct sim s;
	const struct an_verdict *v;
	struct sim_comm *c;
	int i, r;

	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 4, NULL);
	c = sim_find(&s, TP);
	for (i = 0; i < 4; i++) {
		sim_round(&s, TP, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_step(&s, 10000000);
	}
	for (r = 0; r < 4; r++) {
		struct an_op op = sim_call(&s, TP, r, CCLD_FN_ALLREDUCE,
					   1 << 20, 7);

		if (r != 2)
			sim_complete(&s, &op);
	}
	for (r = 0; r < 4; r++)
		sim_call(&s, TP, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H3);
	CHECK_INT(v->seq, 4);
	CHECK_STR(sim_culprits(v), "2");
	CHECK(strstr(v->text, "GPU") != NULL);
	CHECK(c->n == 4);
	sim_fini(&s);
}

static void prog(struct an_progress *p, int ch, int peer, enum an_dir dir,
		 uint64_t po, uint64_t tr, uint64_t rc, uint64_t dn)
{
	memset(p, 0, sizeof(*p));
	p->seq = 5;
	p->channel = ch;
	p->peer = peer;
	p->dir = dir;
	p->posted = po;
	p->transmitted = tr;
	p->received = rc;
	p->done = dn;
	p->nsteps = 16;
}

/*
 * Ring 0->1->2->3->0.  netstall on rank 1: 0->1 sent but never delivered,
 * 1->2 ready from the GPU but never transmitted; downstream ranks starve.
 */
static void netstall(struct an_progress p[4][2])
{
	prog(&p[0][0], 0, 1, AN_SEND, 10, 10, 0, 8);
	prog(&p[0][1], 0, 3, AN_RECV, 12, 0, 8, 8);
	prog(&p[1][0], 0, 2, AN_SEND, 9, 8, 0, 8);
	prog(&p[1][1], 0, 0, AN_RECV, 12, 0, 8, 8);
	prog(&p[2][0], 0, 3, AN_SEND, 8, 8, 0, 8);
	prog(&p[2][1], 0, 1, AN_RECV, 12, 0, 8, 8);
	prog(&p[3][0], 0, 0, AN_SEND, 8, 8, 0, 8);
	prog(&p[3][1], 0, 2, AN_RECV, 12, 0, 8, 8);
}

/* gpustall on rank 2: data from rank 1 arrived and sits unconsumed */
static void gpustall(struct an_progress p[4][2])
{
	prog(&p[0][0], 0, 1, AN_SEND, 10, 10, 0, 10);
	prog(&p[0][1], 0, 3, AN_RECV, 12, 0, 10, 10);
	prog(&p[1][0], 0, 2, AN_SEND, 10, 10, 0, 10);
	prog(&p[1][1], 0, 0, AN_RECV, 12, 0, 10, 10);
	prog(&p[2][0], 0, 3, AN_SEND, 8, 8, 0, 8);
	prog(&p[2][1], 0, 1, AN_RECV, 12, 0, 10, 8);
	prog(&p[3][0], 0, 0, AN_SEND, 8, 8, 0, 8);
	prog(&p[3][1], 0, 2, AN_RECV, 12, 0, 8, 8);
}

/*
 * The stand-in's netstall on rank 1 of a pair (ranks 2, 3 done): rank 1's
 * send left and is never delivered; rank 0's send gets no credit from
 * rank 1 (not transmitted); both receives wait.  Both ranks are ends of
 * both stuck flows: the one whose own data never arrived is the cause.
 */
static void netstall_pair(struct an_progress p[4][2])
{
	prog(&p[0][0], 0, 1, AN_SEND, 1, 0, 0, 0);
	prog(&p[0][1], 0, 1, AN_RECV, 1, 0, 0, 0);
	prog(&p[1][0], 0, 0, AN_SEND, 1, 1, 0, 0);
	prog(&p[1][1], 0, 0, AN_RECV, 1, 0, 0, 0);
	prog(&p[2][0], 0, 3, AN_SEND, 16, 16, 0, 16);
	prog(&p[2][1], 0, 3, AN_RECV, 16, 16, 16, 16);
	prog(&p[3][0], 0, 2, AN_SEND, 16, 16, 0, 16);
	prog(&p[3][1], 0, 2, AN_RECV, 16, 16, 16, 16);
}

/*
 * Random seed 24 (a moe job, netstall on rank 3): ranks 0, 1 on one host,
 * 2, 3 on another.  Rank 3's send to rank 1 left and never arrived; ranks
 * 0 and 2 made nothing of their sends to the other host (their GPUs wait
 * for their host peers, which wait for rank 3), so they are the ends of
 * the most stuck flows.  A send not transmitted may only wait for its
 * GPU: the faulty NIC is an end of the flow whose data never arrived.
 * Before, ranks 0 and 2 were named.
 */
static void netstall_unsent_others(struct an_progress p[4][2])
{
	prog(&p[0][0], 0, 2, AN_SEND, 1, 0, 0, 0);
	prog(&p[0][1], 0, 3, AN_SEND, 1, 0, 0, 0);
	prog(&p[1][0], 0, 3, AN_RECV, 1, 0, 0, 0);
	prog(&p[1][1], 0, 2, AN_RECV, 1, 0, 0, 0);
	prog(&p[2][0], 0, 0, AN_SEND, 1, 0, 0, 0);
	prog(&p[2][1], 0, 1, AN_SEND, 1, 0, 0, 0);
	prog(&p[3][0], 0, 1, AN_SEND, 1, 1, 0, 0);
	prog(&p[3][1], 0, 0, AN_RECV, 1, 0, 0, 0);
	for (int r = 0; r < 4; r++)
		p[r][0].nsteps = p[r][1].nsteps = 1;
}

/*
 * Ranks 0, 1 on one host, 2, 3 on another; each sends to and receives
 * from its counterpart on the other host (ranks of a host talk over
 * intra-node links, which have no proxy counters).  Rank 2's GPU stalled,
 * and rank 3's waits for it over such a link: both hold data from the other
 * host unconsumed and made nothing of their own sends; nothing here tells
 * them apart.
 */
static void gpustall_host(struct an_progress p[4][2])
{
	prog(&p[0][0], 0, 2, AN_SEND, 1, 1, 0, 1);
	prog(&p[0][1], 0, 2, AN_RECV, 1, 0, 0, 0);
	prog(&p[1][0], 0, 3, AN_SEND, 1, 1, 0, 1);
	prog(&p[1][1], 0, 3, AN_RECV, 1, 0, 0, 0);
	prog(&p[2][0], 0, 0, AN_SEND, 1, 0, 0, 0);
	prog(&p[2][1], 0, 0, AN_RECV, 1, 0, 1, 0);
	prog(&p[3][0], 0, 1, AN_SEND, 1, 0, 0, 0);
	prog(&p[3][1], 0, 1, AN_RECV, 1, 0, 1, 0);
	for (int r = 0; r < 4; r++)
		p[r][0].nsteps = p[r][1].nsteps = 1;
}

/*
 * Ring 0->1->2->3->0, rank 2's GPU stalled in a long op: rank 1's GPU,
 * blocked in its send to rank 2 (no credit: rank 2 holds its data), no
 * longer consumes rank 0's data either.  Rank 1 waits for rank 2.
 */
static void gpustall_backpressure(struct an_progress p[4][2])
{
	prog(&p[0][0], 0, 1, AN_SEND, 12, 12, 0, 10);
	prog(&p[0][1], 0, 3, AN_RECV, 12, 0, 8, 8);
	prog(&p[1][0], 0, 2, AN_SEND, 12, 10, 0, 10);
	prog(&p[1][1], 0, 0, AN_RECV, 12, 0, 12, 10);
	prog(&p[2][0], 0, 3, AN_SEND, 12, 8, 0, 8);
	prog(&p[2][1], 0, 1, AN_RECV, 12, 0, 10, 8);
	prog(&p[3][0], 0, 0, AN_SEND, 8, 8, 0, 8);
	prog(&p[3][1], 0, 2, AN_RECV, 12, 0, 8, 8);
}

/*
 * Random job 1103 (a netstall at rank 2, attached late), in small: rank 0
 * sends the op's data to ranks 1 and 2 (a broadcast's tree).  Its send to
 * rank 1 left and finished; its send to rank 2 gets no credit (not
 * transmitted) though rank 2 posted its receive.  The one stuck flow's
 * sender delivers to its other peer: the fault is at the receiver's end
 * (before: rank 0 named, "local cause: network").
 */
static void netstall_receiver_end(struct an_progress p[4][2])
{
	prog(&p[0][0], 0, 1, AN_SEND, 1, 1, 0, 1);
	prog(&p[0][1], 0, 2, AN_SEND, 1, 0, 0, 0);
	prog(&p[1][0], 0, 0, AN_RECV, 1, 1, 1, 1);
	prog(&p[1][1], 0, 3, AN_SEND, 1, 1, 0, 1);
	prog(&p[2][0], 0, 0, AN_RECV, 1, 0, 0, 0);
	prog(&p[2][1], 0, 0, AN_RECV, 1, 0, 0, 0);
	prog(&p[3][0], 0, 1, AN_RECV, 1, 1, 1, 1);
	prog(&p[3][1], 0, 1, AN_RECV, 1, 1, 1, 1);
	for (int r = 0; r < 4; r++)
		p[r][0].nsteps = p[r][1].nsteps = 1;
}

/*
 * Tier C counters streamed while the step hooks are on (FILL's), then the
 * stall: the one H3 verdict, NULL if there is not exactly one
 */
static const struct an_verdict *tier_c_verdict(struct sim *s,
					       void (*fill)(struct an_progress[4][2]))
{
	struct an_progress p[4][2];
	struct sim_comm *c = setup(s, 5);
	int r;

	fill(p);
	for (r = 0; r < 4; r++) {
		struct an_key k = sim_key(s, c, r);

		an_progress(s->an, &k, &p[r][0], s->now[0]);
		an_progress(s->an, &k, &p[r][1], s->now[0]);
	}
	sim_tick(s, 5.5);
	CHECK_INT(s->nv, 1);
	if (s->nv != 1)
		return NULL;
	CHECK_INT(s->v[0].cls, AN_H3);
	return &s->v[0];
}

/* GPU not ready; CULPRITS the ranks named, in order */
static void test_tier_c_names(void (*fill)(struct an_progress[4][2]),
			      const char *culprits, const char *word)
{
	struct sim s;
	const struct an_verdict *v = tier_c_verdict(&s, fill);

	if (v) {
		CHECK_STR(sim_culprits(v), culprits);
		CHECK_INT(v->t4, AN_T4_GPU_NOT_READY);
		CHECK(strstr(v->text, word) != NULL);
	}
	sim_fini(&s);
}

/* one culprit, its local cause T4 */
static void test_tier_c(void (*fill)(struct an_progress[4][2]), int culprit,
			enum an_t4 t4, const char *word)
{
	struct sim s;
	const struct an_verdict *v = tier_c_verdict(&s, fill);

	if (v) {
		CHECK_INT(v->seq, 5);
		CHECK_INT(v->cul[0].rank, culprit);
		CHECK_INT(v->ncul_total, 1);
		CHECK_INT(v->t4, t4);
		CHECK(!v->t4_remote);
		CHECK(strstr(v->text, word) != NULL);
		CHECK(sim_val(v, "channel") != NULL);
	}
	sim_fini(&s);
}

/* the receiver's end: rank 2 named for a remote cause, rank 0's other send said */
static void test_receiver_end(void)
{
	struct sim s;
	const struct an_verdict *v = tier_c_verdict(&s, netstall_receiver_end);

	if (v) {
		CHECK_STR(sim_culprits(v), "2");
		CHECK_INT(v->t4, AN_T4_NOT_TRANSMITTED);
		CHECK(v->t4_remote);
		CHECK(strstr(v->text, "rank 0's sends of the op to 1 other peer left") != NULL);
	}
	sim_fini(&s);
}

/* tier E: a snapshot taken when suspect() fires, before the verdict */
static void test_snapshot(bool late)
{
	struct an_progress p[4][2];
	struct sim s;
	struct sim_comm *c = setup(&s, 6);
	const struct an_verdict *v;
	int r;

	netstall(p);
	sim_tick(&s, late ? 6.5 : 3.25);
	CHECK_INT(s.nsuspect_on, 1);
	CHECK_INT(s.nv, late ? 1 : 0);
	for (r = 0; r < 4; r++) {
		struct an_key k = sim_key(&s, c, r);

		an_snapshot(s.an, &k, p[r], 2, s.now[0]);
	}
	sim_tick(&s, late ? 0.5 : 3.25);
	if (late) {
		/* no data at first: every rank; then the update names rank 1 */
		CHECK_INT(s.nv, 2);
		CHECK_STR(sim_culprits(&s.v[0]), "0,1,2,3");
		CHECK_INT(s.v[1].kind, AN_V_UPDATE);
		v = &s.v[1];
	} else {
		CHECK_INT(s.nv, 1);
		v = &s.v[0];
		check_latency(v, 6);
	}
	CHECK_INT(v->cls, AN_H3);
	CHECK_STR(sim_culprits(v), "1");
	CHECK_INT(v->t4, AN_T4_NOT_TRANSMITTED);
	sim_tick(&s, 10);
	CHECK_INT(s.nv, late ? 2 : 1);
	sim_fini(&s);
}

/* counters advancing are progress: no verdict while data keeps flowing */
static void test_counters_progress(void)
{
	struct an_progress p;
	struct sim s;
	struct sim_comm *c = setup(&s, 5);
	int i;

	for (i = 0; i < 40; i++) {
		struct an_key k = sim_key(&s, c, 0);

		prog(&p, 0, 1, AN_SEND, 1000 + (uint64_t)i, 1000 + (uint64_t)i, 0,
		     999 + (uint64_t)i);
		p.nsteps = 100000;
		an_progress(s.an, &k, &p, s.now[0]);
		sim_tick(&s, 0.5);
	}
	CHECK_INT(s.nv, 0);
	sim_tick(&s, 5.5);
	CHECK_INT(s.nv, 1);
	sim_fini(&s);
}

/* the one verdict is an H3 naming CULPRITS */
static void v_h3_names(const struct sim *s, const char *culprits)
{
	CHECK_INT(s->nv, 1);
	if (s->nv == 1) {
		CHECK_INT(s->v[0].cls, AN_H3);
		CHECK_STR(sim_culprits(&s->v[0]), culprits);
	}
}

/* rank R's sub of proxy op OP (seq 3) toward PEER, seen at the host's now */
static void sub_at(struct sim *s, int r, uint64_t op, int peer, enum an_dir dir,
		   uint64_t po, uint64_t tr, uint64_t rc, uint64_t dn)
{
	struct sim_comm *c = sim_find(s, TP);
	struct an_key k = sim_key(s, c, r);
	struct an_progress p;

	prog(&p, 0, peer, dir, po, tr, rc, dn);
	p.seq = 3;
	p.nsteps = 1;
	p.op = op;
	an_progress(s->an, &k, &p, sim_now(s, c, r));
}

/*
 * A pipeline send/recv and then an all-reduce on one comm (a 4-stage
 * pipeline's world comm), every step.  Rank 1's GPU stalls before it
 * produces its send to rank 2: ranks 1 and 2 stay in that pair while
 * ranks 0 and 3 went on into the all-reduce, whose flows (toward ranks not
 * in it, data not produced) are stuck too.  The pair, launched before,
 * holds the comm: rank 1 (its end where the data never left) is named,
 * not the all-reduce's ends (random job 1233 named ranks 0 and 2).
 */
static void test_pair_before_round(void)
{
	const uint64_t ar = (3 << 1) + 1, pp = (5 << 1) + 2;
	struct an_op o;
	struct sim s;
	int i, r;

	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 4, NULL);
	for (i = 0; i < 3; i++) {
		o = sim_p2p(&s, TP, 1, 2, 0, 4096, true);
		sim_complete(&s, &o);
		o = sim_p2p(&s, TP, 2, 1, 1, 4096, true);
		sim_complete(&s, &o);
		sim_round(&s, TP, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_step(&s, 10000000);
	}
	sim_p2p(&s, TP, 1, 2, 0, 4096, true);
	sim_p2p(&s, TP, 2, 1, 1, 4096, true);
	sub_at(&s, 1, pp, 2, AN_SEND, 1, 0, 0, 0);
	sub_at(&s, 2, pp, 1, AN_RECV, 1, 0, 0, 0);
	sim_step(&s, 1000000);
	for (r = 0; r < 4; r++)
		sim_call(&s, TP, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_step(&s, 1000000);
	for (r = 0; r < 3; r++) {
		sub_at(&s, r, ar, (r + 2) % 4, AN_SEND, 1, 0, 0, 0);
		sub_at(&s, r, ar, 3, AN_SEND, 1, 0, 0, 0);
		sub_at(&s, r, ar, (r + 2) % 4, AN_RECV, 1, 0, 0, 0);
		sub_at(&s, r, ar, 3, AN_RECV, 1, 1, 1, 0);
	}
	sub_at(&s, 3, ar, 0, AN_RECV, 1, 0, 0, 0);
	sub_at(&s, 3, ar, 1, AN_RECV, 1, 0, 0, 0);
	sim_tick(&s, 5.5);
	v_h3_names(&s, "1");
	sim_fini(&s);
}

/*
 * The other way round: rank 1's GPU stalls inside the all-reduce (its
 * data left, its peers' came, it consumes none), ranks 0, 2 and 3 finished it and
 * ranks 0 and 2 went on into the next step's pair.  Their pair was
 * launched after the round (nothing of the round open on them): the round
 * holds the comm, and rank 1 is named (random job 1217: the pair's flows
 * were read alone, and its receiver named, until the pair had to be
 * launched before the round).
 */
static void test_round_before_pair(void)
{
	const uint64_t ar = (3 << 1) + 1, pp = (5 << 1) + 2;
	struct an_op o, rd[4];
	struct sim s;
	int i, r;

	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 4, NULL);
	for (i = 0; i < 3; i++) {
		sim_round(&s, TP, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		o = sim_p2p(&s, TP, 0, 2, 0, 4096, true);
		sim_complete(&s, &o);
		o = sim_p2p(&s, TP, 2, 0, 1, 4096, true);
		sim_complete(&s, &o);
		sim_step(&s, 10000000);
	}
	for (r = 0; r < 4; r++)
		rd[r] = sim_call(&s, TP, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	for (r = 0; r < 4; r++) {
		sub_at(&s, r, ar, (r + 1) % 4, AN_SEND, 1, 1, 0, 1);
		sub_at(&s, r, ar, (r + 3) % 4, AN_RECV, 1, 1, 1, r == 1 ? 0 : 1);
	}
	sim_step(&s, 1000000);
	for (r = 0; r < 4; r++)
		if (r != 1)
			sim_complete(&s, &rd[r]);
	sim_p2p(&s, TP, 0, 2, 0, 4096, true);
	sim_p2p(&s, TP, 2, 0, 1, 4096, true);
	sub_at(&s, 0, pp, 2, AN_SEND, 1, 0, 0, 0);
	sub_at(&s, 2, pp, 0, AN_RECV, 1, 0, 0, 0);
	sim_tick(&s, 5.5);
	v_h3_names(&s, "1");
	sim_fini(&s);
}

int main(void)
{
	test_no_data();
	test_tier_b();
	test_tier_c(netstall, 1, AN_T4_NOT_TRANSMITTED, "network");
	test_tier_c(gpustall, 2, AN_T4_GPU_NOT_READY, "GPU");
	test_tier_c(netstall_pair, 1, AN_T4_NOT_DELIVERED, "network");
	test_tier_c(netstall_unsent_others, 3, AN_T4_NOT_DELIVERED, "network");
	test_tier_c_names(gpustall_host, "2,3", "rank 3 alike");
	test_tier_c_names(gpustall_backpressure, "2", "GPU");
	test_receiver_end();
	test_pair_before_round();
	test_round_before_pair();
	test_snapshot(false);
	test_snapshot(true);
	test_counters_progress();
	return check_finish("test_an_h3");
}
