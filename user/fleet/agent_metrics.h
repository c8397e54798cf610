/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The node agent's Prometheus metrics (`ccld-trace daemon --metrics`,
 * docs/fleet.md section 7): per comm rank collectives, bytes and the age
 * of the op in flight; per agent processes, events, drops, fleet records
 * and Redis state.
 */
#ifndef CCLD_AGENT_METRICS_H
#define CCLD_AGENT_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct agent_metrics;
struct state;
struct fleet_agent;

struct agent_numbers {
	uint64_t processes;	/* traced and alive */
	uint64_t step_hook_hits;	/* tier C step hooks, since start */
	double step_hook_bpf_s;	/* their BPF run time */
};

struct agent_metrics *agent_metrics_new(const char *addr, char *err, size_t errlen);
/* Copies the numbers (about once a second); NOW_NS: the records' clock. */
void agent_metrics_update(struct agent_metrics *am, const struct state *st,
			  const struct fleet_agent *fa, const struct agent_numbers *n,
			  uint64_t now_ns);
void agent_metrics_free(struct agent_metrics *am);

#endif
