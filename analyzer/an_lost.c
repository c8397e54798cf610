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
 * that end near a loss are not judged (an_slow.c).
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

void an_lost_note(const struct an *an, const struct an_comm *c, struct an_verdict *v)
{
	uint64_t nlost;
	int32_t rank;
	uint32_t n = an_comm_lost(an, c, &rank, &nlost);

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
