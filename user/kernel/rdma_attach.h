/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Loads and attaches the RDMA verbs programs (bpf/rdma.bpf.c) that this
 * kernel can run (rdma_plan.h), sharing the tracer's ring buffers, drop
 * counters and PID filter.  A kernel without RDMA, kprobes or fentry is
 * not an error: the summary says what attached and why the rest did not.
 */
#ifndef CCLD_RDMA_ATTACH_H
#define CCLD_RDMA_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include "rdma_plan.h"

struct rdma_watch;

/* the tracer's maps (fds) that the RDMA programs write to */
struct rdma_shared_maps {
	int events, rare_events, drops, pid_drops, pid_filter;
};

/*
 * Plans, loads and attaches.  NULL only when out of memory; everything
 * else (nothing to attach, a load or attach failure) is in the summary.
 */
struct rdma_watch *rdma_watch_open(const struct rdma_shared_maps *maps,
				   bool filter_pids);

/* "attached ... (kprobe)" or "not attached: no ib_core in this kernel" */
const char *rdma_watch_summary(const struct rdma_watch *w);
int rdma_watch_attached(const struct rdma_watch *w);

void rdma_watch_free(struct rdma_watch *w);

#endif
