// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Device-level kernel evidence given to the traced processes that use the
 * device: an RDMA port or device event to each process that has it open,
 * a GPU Xid to each process with a comm on that GPU.
 */
#include <stdio.h>
#include <stdint.h>
#include <linux/types.h>
#include "analyzer.h"
#include "kmsg.h"
#include "pipeline.h"
#include "proxy_live.h"
#include "rdma_devs.h"
#include "tracer_int.h"

/*
 * An RDMA record from BPF.  QP and CQ records carry their owner (the BPF
 * side checked the PID filter; --all: only processes traced here count);
 * port and device records (pid 0) become one record for each traced
 * process that has the device open, so captures hold the attribution.
 */
void tr_on_rdma(struct tracer *t, const struct ccld_event *ev)
{
	const struct ccld_rdma *r = &ev->u.rdma;
	struct ccld_event copy;
	char dev[sizeof(r->dev) + 1];
	size_t i, nd = 0;

	snprintf(dev, sizeof(dev), "%.*s", (int)sizeof(r->dev), r->dev);
	if (ev->pid) {
		struct tracked *p = tr_find_tracked(t, ev->pid);

		if (p && !p->gone)
			tr_emit(t, ev);
		else if (t->o->verbose)
			fprintf(stderr, "ccld-trace: RDMA %s QP 0x%x of untraced process %u: "
				"source %u event %u state %u\n", dev, r->qp_num, ev->pid,
				r->source, r->event, r->new_state);
		return;
	}
	for (i = 0; i < t->nprocs; i++) {
		if (t->procs[i].gone || !rdma_dev_in_use("", t->procs[i].pid, dev))
			continue;
		copy = *ev;
		copy.pid = copy.tid = t->procs[i].pid;
		tr_emit(t, &copy);
		nd++;
	}
	if (t->o->verbose || !nd) {
		struct an_nic_event ne = { .source = r->source, .event = r->event,
					   .new_state = r->new_state };

		fprintf(stderr, "ccld-trace: RDMA %s port %u: %s: %zu traced "
			"process(es) use it\n", dev, r->port, an_nic_event_name(&ne), nd);
	}
}

/*
 * An Xid line: one XID record for each traced process with a comm on that
 * GPU (comm->busId, read from its memory), so that captures hold the
 * attribution and replay gives the same verdicts.
 */
void tr_on_xid(void *ctx, const struct xid_line *x)
{
	struct tracer *t = ctx;
	struct comm_rank *cr;
	struct ccld_event ev;
	uint32_t done[64];
	size_t it, nd = 0, i;

	for (it = 0; (cr = state_next_rank(pipeline_state(t->pl), &it));) {
		uint64_t bus;

		if (cr->state == RS_EXITED || proxy_live_comm_bus(t->proxy, cr, &bus) ||
		    bus != x->bus_id)
			continue;
		for (i = 0; i < nd && done[i] != cr->pid; i++)
			;
		if (i < nd || nd == sizeof(done) / sizeof(done[0]))
			continue;
		done[nd++] = cr->pid;
		tr_synth(&ev, CCLD_EV_XID, cr->pid, now_ns());
		ev.u.xid.bus_id = x->bus_id;
		ev.u.xid.xid = x->xid;
		snprintf(ev.u.xid.text, sizeof(ev.u.xid.text), "%s", x->text);
		tr_emit(t, &ev);
	}
	if (t->o->verbose || !nd)
		fprintf(stderr, "ccld-trace: GPU %s reported Xid %u (%s): %zu traced"
			" process(es) use it\n", x->bus, x->xid, x->text, nd);
}
