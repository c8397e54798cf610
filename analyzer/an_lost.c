// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Lost records (a full ring buffer, an_records_lost): the evidence of a
 * rank whose process lost records after the rank's latest record that says
 * where its calls are is incomplete.  The lost record may have been its
 * entry into the round the others wait in (it would look as if it never
 * entered: a false H1), a completion (a GPU that looks unfinished: H3, or
 * a round that looks long: slow), or anything else.  A hang verdict on
 * such a comm waits (an_detect.c) until a record or a look at the rank's
 * memory made after the loss fills the gap, or hang_s passes; slow rounds
 * that end near a loss are not judged (an_slow.c).  So does a root that
 * rests on a GPU not ready whose holder's entry may be the lost record.
 */
#include <stdio.h>
#include "an_int.h"

/* slow rounds ending this close to a loss (either side) are not judged */
#define LOST_ROUND_NS	2000000000ull

static bool rank_lost(const struct an *an, const struct an_rank *r)
{
	const struct an_proc *p = an_proc_of(an, r);

	return p && p->lost_t && !r->gone && p->state == AN_PROC_RUNNING &&
	       r->fresh_ns <= p->lost_t;
}

uint32_t an_comm_lost(const struct an *an, const struct an_comm *c, int32_t *rank,
		      uint64_t *nlost)
{
	uint32_t n = 0, seen[AN_MAX_CULPRITS];
	uint32_t ns = 0, k;
	int32_t i;

	*rank = -1;
	*nlost = 0;
	for (i = 0; i < c->nranks; i++) {
		const struct an_rank *r = &c->r[i];

		if (!rank_lost(an, r))
			continue;
		if (!n++)
			*rank = i;
		/* a process with several ranks here counts its losses once */
		for (k = 0; k < ns && seen[k] != r->proc; k++)
			;
		if (k < ns)
			continue;
		if (ns < AN_MAX_CULPRITS)
			seen[ns++] = r->proc;
		*nlost += an->procs[r->proc - 1].nlost;
	}
	return n;
}

/*
 * Entry of the latest op of RK whose completion by its GPU was seen (tier
 * B), 0 none: the ops its process launched before it ran before it.
 */
static uint64_t last_done_entry(const struct an_rank *rk)
{
	uint64_t t = 0;
	uint32_t i;
	int d;

	if (rk->tierb && rk->completed >= 0) {
		const struct an_sig *sg = &rk->hist[(uint64_t)rk->completed % AN_HIST];

		if (sg->seq == rk->completed)
			t = sg->t_enter;
	}
	for (i = 0; i < rk->np2p; i++)
		for (d = 0; d < 2; d++) {
			const struct an_p2p *q = &rk->p2p[i];
			int64_t k = q->ndone[d] - 1;

			if (k >= 0 && q->n[d] - k <= AN_P2P_HIST &&
			    q->t_hist[d][(uint64_t)k % AN_P2P_HIST] > t)
				t = q->t_hist[d][(uint64_t)k % AN_P2P_HIST];
		}
	return t;
}

/*
 * A GPU not ready is held by an op its process launched before this one
 * (the stream's order), in another comm.  Where the process lost records
 * after its GPU completed an op of C, and after its latest record of a
 * comm D, the lost record may be its entry into the op of D that holds
 * the GPU: C alone would then name the GPU as the cause.
 */
const struct an_comm *an_gpu_holder_lost(const struct an *an, const struct an_comm *c)
{
	const struct an_status *st = &c->st;
	int32_t r = an_h3_focus(st);
	const struct an_rank *rk;
	const struct an_proc *p;
	struct hkey key;
	size_t it;
	void *v;
	int32_t i;

	if (!an_h3_weak(st) || r < 0 || r >= c->nranks)
		return NULL;
	rk = &c->r[r];
	p = an_proc_of(an, rk);
	if (!p || !p->lost_t || p->state != AN_PROC_RUNNING ||
	    p->lost_t <= last_done_entry(rk))
		return NULL;
	for (it = 0; hmap_next(&an->comms, &it, &key, &v);) {
		const struct an_comm *d = v;

		if (d == c)
			continue;
		for (i = 0; i < d->nranks; i++)
			if (d->r[i].proc == rk->proc && rank_lost(an, &d->r[i]))
				return d;
	}
	return NULL;
}

void an_lost_note(const struct an *an, const struct an_comm *c, struct an_verdict *v)
{
	const struct an_comm *held;
	uint64_t nlost;
	int32_t rank;
	uint32_t n = an_comm_lost(an, c, &rank, &nlost);

	if (!n && (held = an_gpu_holder_lost(an, c))) {
		int32_t r = an_h3_focus(&c->st);
		uint64_t nl = an_proc_of(an, &c->r[r])->nlost;

		an_text(v, "; evidence incomplete: the process of rank %d, whose GPU"
			" this rests on, lost records since its latest record of comm"
			" %016llx (%llu records lost by it), so its GPU may be held by an"
			" op there whose entry was lost",
			r, (unsigned long long)held->hash, (unsigned long long)nl);
		an_val_s(v, "evidence", "incomplete");
		an_val_i(v, "records_lost", (int64_t)nl);
		return;
	}
	if (!n)
		return;
	an_text(v, "; evidence incomplete: %u rank(s) of"
		" this comm (rank %d first) lost records since their latest call seen"
		" (%llu records lost by their processes), so a culprit may have entered",
		n, rank, (unsigned long long)nlost);
	an_val_s(v, "evidence", "incomplete");
	an_val_i(v, "lost_ranks", n);
	an_val_i(v, "records_lost", (int64_t)nlost);
}

bool an_lost_round(const struct an *an, const struct an_comm *c, uint32_t host,
		   uint64_t t_ns)
{
	int32_t i;

	for (i = 0; i < c->nranks; i++) {
		const struct an_proc *p = an_proc_of(an, &c->r[i]);
		uint64_t ref;

		if (!p || !p->lost_t)
			continue;
		/* another host's loss: by its own clock, recent or not */
		ref = p->host == host ? t_ns : p->host < an->nhosts ? an->hosts[p->host].now : 0;
		if (ref + LOST_ROUND_NS >= p->lost_t && ref < p->lost_t + LOST_ROUND_NS)
			return true;
	}
	return false;
}
