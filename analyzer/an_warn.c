// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * NCCL's own warnings as evidence: the latest warning a process logged
 * (an_nccl_warning), cited in a verdict when it is recent.  NCCL warns
 * where it sees a failure (a network completion error, a peer that closed
 * its connection, a CUDA error), and its words often say why the rank
 * stopped: a culprit's own warning first, else the latest of another rank
 * of the verdict's comm (a peer that saw the culprit's connection die).
 * A peer the warning names by its address is named by its rank too.
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

/*
 * The peer a warning names by its address ("... remote peer
 * 10.0.0.2<41000>"), as the process the agents saw at that address: its
 * rank in the verdict's comm C where it has one, else its process.
 */
static void cite_peer(const struct an *an, struct an_verdict *v, const struct an_comm *c,
		      const struct an_proc *p)
{
	const char *msg = p->warn_msg;
	const struct an_proc *q;
	char addr[46];
	uint16_t port;
	int32_t r;

	if (!an_endpoint_in_text(msg, addr, &port) ||
	    !(q = an_endpoint_proc(an, p->host, addr, port)))
		return;
	for (r = 0; c && r < c->nranks; r++)
		if (an_proc_of(an, &c->r[r]) == q)
			break;
	if (c && r < c->nranks) {
		an_text(v, "; %s<%u> is rank %d of this comm", addr, port, r);
		an_val_i(v, "nccl_warn_peer_rank", r);
	} else {
		an_text(v, "; %s<%u> is", addr, port);
	}
	an_text(v, " (%s%s%spid %u on %s%s)", q->label[AN_LABEL_RANK - 1][0] ? "global rank " : "",
		q->label[AN_LABEL_RANK - 1], q->label[AN_LABEL_RANK - 1][0] ? ", " : "", q->pid,
		an_host_name(an, q->host), q->state == AN_PROC_EXITED ? ", exited" : "");
	an_val_i(v, "nccl_warn_peer_pid", q->pid);
}

static void cite(const struct an *an, struct an_verdict *v, const struct an_comm *c,
		 int32_t rank, const struct an_proc *p, uint64_t age, const char *whose)
{
	an_text(v, "; %srank %d (pid %u) logged NCCL WARN %.1f s before: \"%.300s\" (%s:%u)",
		whose, rank, p->pid, (double)age / 1e9, p->warn_msg, p->warn_file, p->warn_line);
	cite_peer(an, v, c, p);
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

	c = hmap_get(&an->comms, hkey3(v->comm, 0, 0));
	for (i = 0; i < v->ncul; i++) {
		p = an_proc_find(an, v->cul[i].host, v->cul[i].pid);
		if (recent_warning(an, p, &age)) {
			cite(an, v, c, v->cul[i].rank, p, age, "");
			return;		/* one warning per verdict */
		}
	}
	for (r = 0; c && r < c->nranks; r++) {
		p = an_proc_of(an, &c->r[r]);
		if (recent_warning(an, p, &age) && (!best || age < best_age)) {
			best = p;
			best_rank = r;
			best_age = age;
		}
	}
	if (best)
		cite(an, v, c, best_rank, best, best_age, "its peer ");
}
