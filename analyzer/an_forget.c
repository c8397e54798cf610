// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Forgetting: a communicator whose job is over, and an exited process that
 * no communicator refers to any more, are freed once their host's clock is
 * forget_s past them, so that a node that sees many short jobs holds the
 * state of the live ones only (docs/analyzer.md, "Forgetting finished
 * communicators").
 */
#include <string.h>
#include "an_int.h"

bool an_comm_over(const struct an *an, const struct an_comm *c)
{
	int32_t i;

	if (!c->nknown)
		return false;
	for (i = 0; i < c->nranks; i++) {
		const struct an_rank *r = &c->r[i];

		if (r->proc && !r->gone && !r->dead &&
		    an->procs[r->proc - 1].state != AN_PROC_EXITED)
			return false;
	}
	return true;
}

static void forget_comm(struct an *an, struct an_comm *c)
{
	uint32_t i;
	int32_t r;

	/* a suspicion or a step sample ends here: hooks off, counts right */
	if (c->suspected)
		an_suspect_comm(an, c, false, false, UINT32_MAX, 0);
	if (c->sampling)
		an_suspect_comm(an, c, false, true, UINT32_MAX, 0);
	for (i = 0; i < an->nprocs; i++)
		if (an->procs[i].gpu_comm == c) {
			an->procs[i].gpu_comm = NULL;
			an->procs[i].gpu_known = false;
			an->gpu_gen++;
		}
	for (r = 0; r < c->nranks; r++)
		if (c->r[r].proc)
			an->procs[c->r[r].proc - 1].nrefs--;
	hmap_del(&an->comms, hkey3(c->hash, 0, 0));
	an_comm_free(an, c);
	an->stats.comms_forgotten++;
}

static void forget_proc(struct an *an, uint32_t i)
{
	struct an_proc *p = &an->procs[i];
	struct hkey k = hkey3(p->host, p->pid, 0);
	uint32_t *f;

	f = an_grow(an, an->free_procs, &an->cap_free, an->nfree + 1, sizeof(*f));
	if (!f)
		return;		/* tried again at the next clock */
	an->free_procs = f;
	/* a reused pid's map entry is the new process's */
	if ((uintptr_t)hmap_get(&an->procmap, k) == (uintptr_t)i + 2) {
		hmap_del(&an->procmap, k);
		an_net_forget(an, p->host, p->pid);
		an_endpoint_forget(an, p->host, p->pid);
	}
	memset(p, 0, sizeof(*p));
	p->state = AN_PROC_EXITED;
	p->unused = true;
	f[an->nfree++] = i;
	an->stats.procs_forgotten++;
}

void an_forget(struct an *an, uint32_t host, uint64_t now_ns)
{
	double after = an->cfg.forget_s * 1e9;
	struct hkey k;
	size_t it;
	void *v;
	uint32_t i;

	if (an->cfg.forget_s <= 0)
		return;
	/* a comm's time counts on the clock of the host of its latest input */
	for (it = 0; hmap_next(&an->comms, &it, &k, &v);) {
		struct an_comm *c = v;

		if (c->in_host == host && now_ns >= c->in_t &&
		    (double)(now_ns - c->in_t) >= after &&
		    an_comm_over(an, c))
			forget_comm(an, c);
	}
	for (i = 0; i < an->nprocs; i++) {
		const struct an_proc *p = &an->procs[i];

		if (!p->unused && p->host == host && p->state == AN_PROC_EXITED &&
		    !p->nrefs && now_ns >= p->t_ns &&
		    (double)(now_ns - p->t_ns) >= after)
			forget_proc(an, i);
	}
}
