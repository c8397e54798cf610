// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Live tracing's records: the rings' records into a batch, the batch in
 * time order through the handlers (attach on a library load, RDMA
 * attribution, TCP and proxy resolution), and every record, read or made
 * here, into the capture file and the pipeline (tr_emit).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "capture.h"
#include "nccl_api.skel.h"
#include "pipeline.h"
#include "proxy_live.h"
#include "tcpwatch.h"
#include "tracer_int.h"

/* Libraries attached since last time, as capture metadata (docs/formats.md). */
void tr_describe_libs(struct tracer *t)
{
	char text[PATH_MAX + 256];
	int i;

	for (i = 0; i < t->att.nlibs; i++) {
		struct traced_lib *l = t->att.libs[i];

		/* a slot released and taken again is described again */
		if (!l || l->described || !t->cap)
			continue;
		l->described = true;
		/* layout as at attach: "table-unconfirmed" until a live comm confirms it */
		snprintf(text, sizeof(text),
			 "lib slot=%d kind=%s build_id=%s version=%s layout=%s "
			 "probes=%d missing=%d path=%s\n", l->slot,
			 l->cuda ? "cuda" : l->ldso ? "ldso" : "nccl",
			 l->build_id[0] ? l->build_id : "-",
			 l->version[0] ? l->version : "-",
			 l->table_state == TABLE_PENDING ? "table-unconfirmed" :
			 layout_source_name(l->layouts.source), l->nlinks,
			 l->nmissing, l->path);
		if (capture_write_meta(t->cap, text) && !t->err) {
			fprintf(stderr, "ccld-trace: writing %s: %s\n",
				t->o->output, capture_error(t->cap));
			t->err = 1;
			tr_stop = 1;
		}
	}
}

/* Attaches to PID's NCCL / CUDA libraries; new ones become capture metadata. */
int tr_attach_pid(struct tracer *t, pid_t pid, char *err, size_t errlen)
{
	int ret = attacher_add_pid(&t->att, pid, err, errlen);

	tr_describe_libs(t);
	return ret;
}

/* One record into the capture file and the pipeline, in that order. */
void tr_emit(struct tracer *t, const struct ccld_event *ev)
{
	if (t->cap && capture_write_event(t->cap, ev) && !t->err) {
		fprintf(stderr, "ccld-trace: writing %s: %s\n", t->o->output,
			capture_error(t->cap));
		t->err = 1;
		tr_stop = 1;
	}
	pipeline_feed(t->pl, t->host, ev);
}

void tr_emit_cb(void *ctx, const struct ccld_event *ev)
{
	tr_emit(ctx, ev);
}

void tr_synth(struct ccld_event *ev, __u16 type, pid_t pid, uint64_t ts)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->version = CCLD_ABI_VERSION;
	ev->pid = pid;
	ev->tid = pid;
	ev->ts_ns = ts;
	ev->id.rank = -1;
	ev->id.nranks = -1;
}

int tr_on_ring_event(void *ctx, void *data, size_t size)
{
	struct tracer *t = ctx;

	if (size < sizeof(struct ccld_event))
		return 0;
	if (t->nbatch == t->capbatch) {
		size_t ncap = t->capbatch ? t->capbatch * 2 : 1024;
		struct ccld_event *n = realloc(t->batch, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->batch = n;
		t->capbatch = ncap;
	}
	memcpy(&t->batch[t->nbatch++], data, sizeof(struct ccld_event));
	return 0;
}

/*
 * A new process mapped an NCCL library; with --stop-new the BPF hook may
 * have stopped it (SIGSTOP, CCLD_F_STOPPED) so that its probes are in
 * place before its first call: continue it, then take it off the
 * reaper's list (in that order: if we die in between, the reaper
 * continues it again, which does no harm).
 */
static void on_lib_load(struct tracer *t, const struct ccld_event *ev)
{
	__u32 pid = ev->pid;
	char err[256];
	int ret;

	ret = tr_attach_pid(t, ev->pid, err, sizeof(err));
	if (ret < 0 && ret != -ENOENT && ret != -EAGAIN)
		fprintf(stderr, "ccld-trace: process %u: %s\n", ev->pid, err);
	if (!(ev->flags & CCLD_F_STOPPED))
		return;
	if (kill(ev->pid, SIGCONT) && errno != ESRCH) {
		fprintf(stderr, "ccld-trace: cannot resume process %u: %s "
			"(the reaper continues it within %g s)\n", ev->pid,
			strerror(errno), t->o->stop_timeout_s);
		return;
	}
	if (bpf_map_delete_elem(bpf_map__fd(t->skel->maps.stopped_pids), &pid) &&
	    errno != ENOENT)
		fprintf(stderr, "ccld-trace: process %u: cannot take it off the "
			"stopped list: %s\n", ev->pid, strerror(errno));
	else if (t->o->verbose)
		fprintf(stderr, "ccld-trace: process %u: stopped at its NCCL load, "
			"continued after %.1f ms\n", ev->pid, (now_ns() - ev->ts_ns) / 1e6);
}

static int ts_cmp(const void *a, const void *b)
{
	const struct ccld_event *x = a, *y = b;

	return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}

/*
 * The two rings are drained one after the other: order the batch by time
 * so a comm's creation (rare ring) precedes its first collective (main).
 */
void tr_drain_batch(struct tracer *t)
{
	size_t i;

	if (t->nbatch > 1)
		qsort(t->batch, t->nbatch, sizeof(*t->batch), ts_cmp);
	for (i = 0; i < t->nbatch; i++) {
		struct ccld_event *ev = &t->batch[i];

		if (ev->type == CCLD_EV_LIB_LOAD)
			on_lib_load(t, ev);
		if (ev->type == CCLD_EV_RDMA) {
			tr_on_rdma(t, ev);		/* attributed, then emitted */
			continue;
		}
		if (ev->type == CCLD_EV_TCP && t->tcp) {
			tcpwatch_resolve(t->tcp, ev);
			t->tcp_records++;
		}
		/* a proxy record without its comm is of no use to anyone */
		if (ev->type == CCLD_EV_PROXY &&
		    !proxy_live_resolve(t->proxy, ev, tr_emit_cb, t))
			continue;
		if (!tr_current_tracked(t, ev->pid)) {
			char err[256];

			/*
			 * --all: it counts as a user of its libraries while it
			 * lives; one whose NCCL is being detached is attached
			 * afresh by a later rescan (its calls counted from there)
			 */
			if (t->o->all &&
			    tr_attach_pid(t, ev->pid, err, sizeof(err)) == -EAGAIN)
				continue;
			tr_track(t, ev->pid, ev->ts_ns);
		}
		if (ev->type == CCLD_EV_PROC_LOST) {
			struct tracked *p = tr_find_tracked(t, ev->pid);

			if (p) {
				p->drops[0] = ev->u.lost.main_drops;
				p->drops[1] = ev->u.lost.rare_drops;
			}
		}
		tr_emit(t, ev);
	}
	t->nbatch = 0;
}
