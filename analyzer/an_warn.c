// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * NCCL's own warnings as evidence: the latest warning a process logged
 * (an_nccl_warning), cited in a verdict when it is recent.  NCCL warns
 * where it sees a failure (a network completion error, a peer that closed
 * its connection, a CUDA error), and its words often say why the rank
 * stopped: a culprit's own warning first, else the latest of another rank
 * of the verdict's comm (a peer that saw the culprit's connection die).
 */
#include <inttypes.h>
#include <stdio.h>
#include "an_int.h"

/* older warnings are not cited: most likely not this incident's */
#define WARN_CITE_NS	(600ull * 1000000000ull)

/* P's latest warning if recent on its host's clock: its age in *AGE */
static bool recent_warning(const struct an *an, const struct an_proc *p, uint64_t *age)
{
	uint64_t now;

	if (!p || !p->nwarn || p->host >= an->nhosts)
		return false;
	now = an->hosts[p->host].now;
	*age = now > p->warn_t ? now - p->warn_t : 0;
	return *age <= WARN_CITE_NS;
}

static void cite(struct an_verdict *v, int32_t rank, const struct an_proc *p, uint64_t age,
		 const char *whose)
{
	an_text(v, "; %srank %d (pid %u) logged NCCL WARN %.1f s before: \"%.300s\" (%s:%u)",
		whose, rank, p->pid, (double)age / 1e9, p->warn_msg, p->warn_file, p->warn_line);
	an_val_i(v, "nccl_warn_rank", rank);
	an_val_i(v, "nccl_warnings", p->nwarn);
}

void an_warn_note(const struct an *an, struct an_verdict *v)
{
	const struct an_proc *p, *best = NULL;
	const struct an_comm *c;
	int32_t r, best_rank = -1;
	uint64_t age, best_age = 0;
	uint32_t i;

	for (i = 0; i < v->ncul; i++) {
		p = an_proc_find(an, v->cul[i].host, v->cul[i].pid);
		if (recent_warning(an, p, &age)) {
			cite(v, v->cul[i].rank, p, age, "");
			return;		/* one warning per verdict */
		}
	}
	c = hmap_get(&an->comms, hkey3(v->comm, 0, 0));
	for (r = 0; c && r < c->nranks; r++) {
		p = an_proc_of(an, &c->r[r]);
		if (recent_warning(an, p, &age) && (!best || age < best_age)) {
			best = p;
			best_rank = r;
			best_age = age;
		}
	}
	if (best)
		cite(v, best_rank, best, best_age, "its peer ");
}
