/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Tier C / E control while tracing live: maps proxy records to comms, and
 * when the analyzer suspects a comm stuck, attaches the step hooks to its
 * processes and reads their active proxy ops every tick (tier E) until the
 * comm moves again; then detaches and reports what the step hooks cost.
 */
#ifndef CCLD_PROXY_LIVE_H
#define CCLD_PROXY_LIVE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "ccld.h"

struct attacher;
struct state;
struct an_suspect;
struct comm_rank;
struct proxy_live;

typedef void (*proxy_emit_fn)(void *ctx, const struct ccld_event *ev);

struct proxy_live *proxy_live_new(struct attacher *a, const struct state *st,
				  uint32_t host, bool verbose);
void proxy_live_free(struct proxy_live *pl);

/*
 * A tier C record from BPF: false when it cannot be given a comm (drop
 * it).  A step record's thread is watched from then on (schedwatch.h),
 * its first reading through EMIT.
 */
bool proxy_live_resolve(struct proxy_live *pl, struct ccld_event *ev, proxy_emit_fn emit,
			void *ctx);

/* The analyzer's request (called from inside the pipeline: only noted). */
void proxy_live_suspect(struct proxy_live *pl, const struct an_suspect *s);

/* Acts on the requests: step hooks on/off, snapshots through EMIT. */
void proxy_live_tick(struct proxy_live *pl, uint64_t now_ns, proxy_emit_fn emit,
		     void *ctx);

/* Tier E now for one comm rank (the attach snapshot): subs through EMIT. */
int proxy_live_snapshot(struct proxy_live *pl, const struct comm_rank *cr, uint64_t now_ns,
			proxy_emit_fn emit, void *ctx);

/* The comms suspected stuck now (not slow samples): at most MAX hashes into OUT. */
size_t proxy_live_suspected(const struct proxy_live *pl, uint64_t *out, size_t max);
/* The processes of suspected (not slow) COMM, at most MAX into OUT; how many. */
size_t proxy_live_suspect_pids(const struct proxy_live *pl, uint64_t comm, uint32_t *out,
			       size_t max);

/* A process exited. */
void proxy_live_forget(struct proxy_live *pl, uint32_t pid);

/* One line per period the step hooks were on, and totals, to F. */
void proxy_live_report(struct proxy_live *pl, uint64_t now_ns, FILE *f);

/* Step hook hits and their BPF run time over the periods that ended. */
void proxy_live_cost(const struct proxy_live *pl, uint64_t *hits, uint64_t *bpf_ns);

/* comm->busId of CR (proxymap_comm_bus): 0 or -errno. */
int proxy_live_comm_bus(struct proxy_live *pl, const struct comm_rank *cr, uint64_t *bus);

#endif
