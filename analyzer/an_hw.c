// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Hardware evidence (tier D): GPU errors the driver reported
 * (NVIDIA Xid) for a traced process's GPU.  Each new error gives an "HW"
 * verdict naming the process's rank, and the H3 and slow verdicts that name
 * the process cite it (and its NIC errors, an_nic.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "an_int.h"
#include "names.h"

void an_hw_note(const struct an *an, struct an_verdict *v)
{
	char bus[24];
	uint32_t i;

	for (i = 0; i < v->ncul; i++) {
		const struct an_proc *p = an_proc_find(an, v->cul[i].host, v->cul[i].pid);

		if (!p || !p->xid)
			continue;
		pci_bus_name(p->xid_bus, bus, sizeof(bus));
		an_text(v, "; the GPU of rank %d (%s) reported Xid %u: %s", v->cul[i].rank,
			bus, p->xid, p->xid_text);
		an_val_i(v, "xid", p->xid);
		an_val_s(v, "gpu", bus);
		break;		/* the first culprit's: one Xid per verdict */
	}
	an_nic_note(an, v);
}

bool an_hw_verdict(struct an *an, uint32_t host, uint32_t pid, uint64_t t_ns,
		   struct an_verdict *v)
{
	const struct an_proc *p = an_proc_find(an, host, pid);
	struct an_comm *best = NULL;
	int32_t rank = -1;
	struct hkey key;
	size_t it;
	void *val;

	/* the process's largest comm: the job-wide view of the rank */
	for (it = 0; p && hmap_next(&an->comms, &it, &key, &val);) {
		struct an_comm *c = val;
		int32_t r;

		for (r = 0; r < c->nranks; r++)
			if (an_proc_of(an, &c->r[r]) == p && !c->r[r].gone &&
			    (!best || c->nranks > best->nranks ||
			     (c->nranks == best->nranks && c->hash < best->hash))) {
				best = c;
				rank = r;
			}
	}
	if (!best)
		return false;
	an_verdict_root(v, AN_HW, best->hash, best->r[rank].entered, 0, host, t_ns);
	v->cul[0].rank = rank;
	v->cul[0].host = host;
	v->cul[0].pid = pid;
	v->ncul = v->ncul_total = 1;
	an_val_i(v, "nranks", best->nranks);
	return true;
}

void an_gpu_error(struct an *an, uint32_t host, uint32_t pid, uint64_t bus_id,
		  uint32_t xid, const char *text, uint64_t t_ns)
{
	const struct an_proc *p = an_proc_find(an, host, pid);
	struct an_proc *mp;
	struct an_verdict *v = &an->tmp;
	char bus[24];

	an->stats.records++;
	if (!p || !xid) {
		an->stats.rejected++;
		return;
	}
	mp = &an->procs[p - an->procs];
	/* the same error again (drivers repeat some): already reported */
	if (mp->xid == xid && mp->xid_bus == bus_id)
		return;
	mp->xid = xid;
	mp->xid_bus = bus_id;
	mp->xid_t = t_ns;
	snprintf(mp->xid_text, sizeof(mp->xid_text), "%s", text);
	if (!an_hw_verdict(an, host, pid, t_ns, v))
		return;
	pci_bus_name(bus_id, bus, sizeof(bus));
	an_text(v, "the GPU %s of rank %d (pid %u) reported Xid %u: %s",
		bus, v->cul[0].rank, pid, xid, text);
	an_val_i(v, "xid", xid);
	an_val_s(v, "gpu", bus);
	an_emit(an, v);
}

const char *an_proc_gpu_bus(const struct an_proc *p)
{
	const char *sp = p ? strchr(p->label[AN_LABEL_GPU - 1], ' ') : NULL;

	return sp ? sp + 1 : NULL;
}

bool an_gpu_shared(const struct an *an, const struct an_comm *c, int32_t rank)
{
	const struct an_proc *p = an_proc_of(an, &c->r[rank]);
	const char *bus = an_proc_gpu_bus(p);
	int32_t k;

	for (k = 0; bus && *bus && k < c->nranks; k++) {
		const struct an_proc *q = an_proc_of(an, &c->r[k]);
		const char *qbus = an_proc_gpu_bus(q);

		if (k != rank && q && q != p && q->host == p->host && qbus && !strcmp(qbus, bus))
			return true;
	}
	return false;
}
