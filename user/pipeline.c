// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "hooks.h"
#include "pipeline.h"

#define MAX_HOSTS 4096

struct pipeline {
	struct pipeline_opts o;
	struct state *st;
	struct host_info *hosts;
	uint32_t nhosts;
	uint64_t verdicts;
};

static void sink_call_done(void *ctx, const struct call_rec *c)
{
	struct pipeline *p = ctx;
	const struct host_info *h = pipeline_host(p, c->host_id);

	if (!p->o.events)
		return;
	if (p->o.json)
		out_call_json(p->o.out, h, c);
	else
		out_call_text(p->o.out, h, c);
}

static void sink_comm_call(void *ctx, const struct comm_call_rec *c)
{
	struct pipeline *p = ctx;
	const struct host_info *h = pipeline_host(p, c->host_id);

	if (!p->o.events)
		return;
	if (p->o.json)
		out_comm_json(p->o.out, h, c);
	else
		out_comm_text(p->o.out, h, c);
}

static void sink_comm_change(void *ctx, const struct comm_rank *cr,
			     const struct ccld_event *ev)
{
	struct pipeline *p = ctx;
	const struct host_info *h = pipeline_host(p, cr->host_id);

	if (p->o.json || p->o.quiet)
		return;
	fprintf(p->o.out, "%s pid %u comm %016" PRIx64 " rank %d/%d: %s (%s)\n",
		h->name, cr->pid, cr->hash, cr->rank, cr->nranks,
		rank_state_name(cr->state), hook_fn_name(ev->fn));
}

static void sink_proc_change(void *ctx, const struct proc_info *pi,
			     const struct ccld_event *ev)
{
	struct pipeline *p = ctx;
	const struct host_info *h = pipeline_host(p, pi->host_id);

	if (p->o.json || p->o.quiet)
		return;
	switch (ev->type) {
	case CCLD_EV_PROC_ATTACH:
		fprintf(p->o.out, "%s pid %u (%s): attached\n", h->name,
			pi->pid, pi->name);
		break;
	case CCLD_EV_PROC_EXIT:
		fprintf(p->o.out, "%s pid %u (%s): exited\n", h->name, pi->pid,
			pi->name);
		break;
	case CCLD_EV_PROC_STATE:
		fprintf(p->o.out, "%s pid %u (%s): state %c\n", h->name,
			pi->pid, pi->name, pi->state ? pi->state : '?');
		break;
	}
}

struct pipeline *pipeline_new(const struct pipeline_opts *o)
{
	struct pipeline *p = calloc(1, sizeof(*p));
	struct state_sink sink = {
		.call_done = sink_call_done,
		.comm_call = sink_comm_call,
		.comm_change = sink_comm_change,
		.proc_change = sink_proc_change,
	};

	if (!p)
		return NULL;
	p->o = *o;
	sink.ctx = p;
	p->st = state_new(&sink);
	p->hosts = calloc(MAX_HOSTS, sizeof(*p->hosts));
	if (!p->st || !p->hosts) {
		pipeline_free(p);
		return NULL;
	}
	return p;
}

void pipeline_free(struct pipeline *p)
{
	if (!p)
		return;
	state_free(p->st);
	free(p->hosts);
	free(p);
}

int pipeline_add_host(struct pipeline *p, const char *name,
		      int64_t realtime_offset_ns)
{
	struct host_info *h;

	if (p->nhosts >= MAX_HOSTS)
		return -1;
	h = &p->hosts[p->nhosts];
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->realtime_offset_ns = realtime_offset_ns;
	return p->nhosts++;
}

const struct host_info *pipeline_host(const struct pipeline *p, uint32_t id)
{
	static const struct host_info unknown = { .name = "?" };

	return id < p->nhosts ? &p->hosts[id] : &unknown;
}

void pipeline_feed(struct pipeline *p, uint32_t host, const struct ccld_event *ev)
{
	state_feed(p->st, host, ev);
}

void pipeline_finish(struct pipeline *p, double duration_s)
{
	const struct state_counts *c = state_counts(p->st);
	struct summary s = { 0 };
	struct comm_rank *cr;
	uint64_t *hashes = NULL;
	size_t it, n = 0, cap = 0, i;

	state_flush(p->st);
	for (it = 0; state_next_proc(p->st, &it);)
		s.processes++;
	for (it = 0; (cr = state_next_rank(p->st, &it));) {
		if (!cr->hash)
			continue;
		for (i = 0; i < n && hashes[i] != cr->hash; i++)
			;
		if (i < n)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			uint64_t *nh = realloc(hashes, ncap * sizeof(*nh));

			if (!nh)
				break;
			hashes = nh;
			cap = ncap;
		}
		hashes[n++] = cr->hash;
	}
	free(hashes);
	s.comms = n;
	s.events = c->events;
	s.calls = c->calls;
	s.main_drops = c->main_drops;
	s.rare_drops = c->rare_drops;
	s.verdicts = p->verdicts;
	s.duration_s = duration_s;
	if (p->o.json) {
		out_summary_json(p->o.out, &s);
	} else {
		if (!p->o.events)
			out_comm_table(p->o.out, p->st, false);
		out_summary_text(p->o.out, &s);
	}
	fflush(p->o.out);
}

const struct state *pipeline_state(const struct pipeline *p)
{
	return p->st;
}
