/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one path every record takes, live or replayed: state machines ->
 * outputs (JSON lines, text, table) -> analyzer.  Feeding the same records
 * in the same order gives the same output.
 */
#ifndef CCLD_PIPELINE_H
#define CCLD_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/types.h>
#include "analyzer.h"
#include "ccld.h"
#include "output.h"
#include "state.h"

struct an_suspect;
struct an_wire;

struct pipeline_opts {
	FILE *out;
	bool json;		/* JSON lines instead of text */
	bool events;		/* one line per call */
	bool quiet;		/* text mode: no per-comm lifecycle lines */
	struct an_config an;	/* the analyzer's (an_config_default, then options) */
	/*
	 * live --all: a node's churn of short jobs; an exited process's state
	 * is freed once it cannot matter any more (state_forget_after)
	 */
	bool forget_exited;
	/* live only: the analyzer suspects a comm stuck (step hooks, tier E) */
	void (*suspect)(void *ctx, const struct an_suspect *s);
	void *suspect_ctx;
	/* fleet agent: every analyzer input record, after the local analyzer */
	void (*tap)(void *ctx, uint32_t host, const struct an_wire *w);
	void *tap_ctx;
};

struct pipeline;

struct pipeline *pipeline_new(const struct pipeline_opts *o);
void pipeline_free(struct pipeline *p);

/* Registers a host (live: this one; replay: one per file's host). */
int pipeline_add_host(struct pipeline *p, const char *name,
		      int64_t realtime_offset_ns);
const struct host_info *pipeline_host(const struct pipeline *p, uint32_t id);

void pipeline_feed(struct pipeline *p, uint32_t host, const struct ccld_event *ev);

/* End of input: calls still inside NCCL, then the summary. */
void pipeline_finish(struct pipeline *p, double duration_s);

const struct state *pipeline_state(const struct pipeline *p);

#endif
