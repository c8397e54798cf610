// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * p2p ops counted from the attach, lined up with their peer's (docs/
 * analyzer.md, "p2p counts from the attach").  NCCL keeps no per-peer p2p
 * counter, so where ccld attached to a running comm each side counts its
 * sends and receives from whatever op it was at: the k-th send of one side
 * need not be the peer's k-th receive.  A collective both processes
 * entered, whose seq is NCCL's own (the same op on both), lines them up:
 * an SPMD job issues a step's send and the matching receive on the same
 * side of the step's collectives, so the ops each side had entered toward
 * the other before that collective differ by the offset between the two
 * counts.  Two such collectives at least, with ops between them, must give
 * the same offset, and none another (a lost record moves one count).
 */
#include "an_int.h"

/*
 * How many of P's ops of direction D were entered before T on its own
 * host's clock (its latest AN_P2P_HIST entries), -1 unknown: the oldest op
 * kept came after T, or an entry is missing
 */
static int64_t ops_before(const struct an_p2p *p, int d, uint64_t t)
{
	int64_t lo = p->n[d] > AN_P2P_HIST ? p->n[d] - AN_P2P_HIST : 0, k;

	for (k = p->n[d] - 1; k >= lo; k--) {
		uint64_t te = p->t_hist[d][(uint64_t)k % AN_P2P_HIST];

		if (!te)
			return -1;
		if (te < t)
			return k + 1;
	}
	return lo ? -1 : 0;
}

struct align_acc {
	int64_t off;
	int64_t first_ops;	/* A's count at the first anchor */
	uint32_t n;
	bool spans;		/* two anchors with ops between them */
	bool conflict;
};

/*
 * Collective rounds of W entered by A's rank XA and B's rank XB (both in
 * NCCL's own seqs): each gives one offset between A's count and B's
 */
static void anchor_comm(const struct an_comm *w, int32_t xa, int32_t xb,
			const struct an_p2p *a, const struct an_p2p *b, int d,
			struct align_acc *acc)
{
	const struct an_rank *ra, *rb;
	uint32_t i;

	if (xa < 0 || xb < 0 || xa >= w->nranks || xb >= w->nranks || xa == xb)
		return;
	ra = &w->r[xa];
	rb = &w->r[xb];
	if (ra->seq_from_attach || rb->seq_from_attach)
		return;
	for (i = 0; i < AN_HIST; i++) {
		const struct an_sig *sa = &ra->hist[i], *sb;
		int64_t ca, cb;

		if (sa->seq < 0 || !sa->t_enter || (sa->flags & SIG_MEM))
			continue;
		sb = &rb->hist[(uint64_t)sa->seq % AN_HIST];
		if (sb->seq != sa->seq || !sb->t_enter || (sb->flags & SIG_MEM))
			continue;
		ca = ops_before(a, d, sa->t_enter);
		cb = ops_before(b, !d, sb->t_enter);
		if (ca < 0 || cb < 0)
			continue;
		if (!acc->n) {
			acc->off = ca - cb;
			acc->first_ops = ca;
		} else if (ca - cb != acc->off) {
			acc->conflict = true;
		} else if (ca != acc->first_ops) {
			acc->spans = true;
		}
		acc->n++;
	}
}

bool an_p2p_align(const struct an *an, const struct an_comm *h, int32_t x,
		  const struct an_p2p *a, const struct an_p2p *b, int d, int64_t *off)
{
	const struct an_proc *pa, *pb;
	struct align_acc acc = { 0 };
	uint32_t i, j, na, nb;

	*off = 0;
	if (!a->from_attach[d] && !b->from_attach[!d])
		return true;
	if (a->peer < 0 || a->peer >= h->nranks || a->peer == x)
		return false;
	pa = an_proc_of(an, &h->r[x]);
	pb = an_proc_of(an, &h->r[a->peer]);
	if (!pa || !pb || pa == pb)
		return false;
	anchor_comm(h, x, a->peer, a, b, d, &acc);
	/* the other comms both processes called lately (their switch rings) */
	na = pa->nsw < AN_SWITCH_RING ? pa->nsw : AN_SWITCH_RING;
	nb = pb->nsw < AN_SWITCH_RING ? pb->nsw : AN_SWITCH_RING;
	for (i = 0; i < na && !acc.conflict; i++) {
		const struct an_switch *sa = &pa->sw[i];
		const struct an_comm *w;
		bool dup = sa->comm == h->hash;

		for (j = 0; j < i && !dup; j++)
			dup = pa->sw[j].comm == sa->comm;
		if (dup || !(w = hmap_get(&an->comms, hkey3(sa->comm, 0, 0))))
			continue;
		for (j = 0; j < nb; j++)
			if (pb->sw[j].comm == sa->comm) {
				anchor_comm(w, sa->rank, pb->sw[j].rank, a, b, d, &acc);
				break;
			}
	}
	if (acc.conflict || acc.n < 2 || !acc.spans)
		return false;
	*off = acc.off;
	return true;
}
