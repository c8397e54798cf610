// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "agent_metrics.h"
#include "fleet_agent.h"
#include "metrics.h"
#include "state.h"

struct agent_metrics {
	struct metrics *m;
};

static const struct metric_family families[] = {
	{ "ccld_collectives_total", METRIC_COUNTER,
	  "Collective and p2p calls per communicator and rank." },
	{ "ccld_bytes_total", METRIC_COUNTER,
	  "Bytes of those calls per communicator and rank." },
	{ "ccld_inflight_age_seconds", METRIC_GAUGE,
	  "Seconds since the rank's last GPU completion while it has ops in flight (0: none in flight)." },
	{ "ccld_agent_processes", METRIC_GAUGE, "NCCL processes traced now." },
	{ "ccld_agent_events_total", METRIC_COUNTER, "Events read from the ring buffers." },
	{ "ccld_agent_drops_total", METRIC_COUNTER,
	  "Events the kernel could not put in a ring buffer, by ring." },
	{ "ccld_agent_step_hook_hits_total", METRIC_COUNTER,
	  "Tier C step hook hits (probe cost: hooks are on only when needed)." },
	{ "ccld_agent_step_hook_bpf_seconds_total", METRIC_COUNTER,
	  "BPF run time of those hits." },
	{ "ccld_agent_fleet_records_total", METRIC_COUNTER,
	  "Analyzer records produced for Redis." },
	{ "ccld_agent_fleet_buffered", METRIC_GAUGE,
	  "Records waiting for Redis (an outage shows here)." },
	{ "ccld_agent_fleet_dropped_total", METRIC_COUNTER,
	  "Records dropped because the buffer was full." },
	{ "ccld_agent_redis_connected", METRIC_GAUGE, "1 while Redis is reachable." },
};

struct agent_metrics *agent_metrics_new(const char *addr, char *err, size_t errlen)
{
	struct agent_metrics *am = calloc(1, sizeof(*am));
	if (!am || !(am->m = metrics_new())) {
		snprintf(err, errlen, "metrics: out of memory");
		agent_metrics_free(am);
		return NULL;
	}
	if (metrics_declare_all(am->m, families, sizeof(families) / sizeof(families[0]),
				err, errlen)) {
		agent_metrics_free(am);
		return NULL;
	}
	if (metrics_start(am->m, addr, err, errlen)) {
		agent_metrics_free(am);
		return NULL;
	}
	return am;
}

void agent_metrics_update(struct agent_metrics *am, const struct state *st,
			  const struct fleet_agent *fa, const struct agent_numbers *n,
			  uint64_t now_ns)
{
	const struct state_counts *sc = state_counts(st);
	struct comm_rank *cr;
	char comm[17], rank[16];
	size_t it;

	for (it = 0; (cr = state_next_rank(st, &it));) {
		const char *const kv[] = { "comm", comm, "rank", rank, NULL };
		double age = 0;

		if (!cr->hash || cr->rank < 0)
			continue;
		snprintf(comm, sizeof(comm), "%016" PRIx64, cr->hash);
		snprintf(rank, sizeof(rank), "%d", cr->rank);
		if (cr->last_seq > cr->completed_seq && now_ns > cr->completed_ns &&
		    cr->completed_ns)
			age = (double)(now_ns - cr->completed_ns) / 1e9;
		metrics_set_l(am->m, "ccld_collectives_total", (double)cr->calls, kv);
		metrics_set_l(am->m, "ccld_bytes_total", (double)cr->bytes, kv);
		metrics_set_l(am->m, "ccld_inflight_age_seconds", age, kv);
	}
	metrics_set(am->m, "ccld_agent_processes", NULL, (double)n->processes);
	metrics_set(am->m, "ccld_agent_events_total", NULL, (double)sc->events);
	metrics_set(am->m, "ccld_agent_drops_total", "ring=\"main\"", (double)sc->main_drops);
	metrics_set(am->m, "ccld_agent_drops_total", "ring=\"rare\"", (double)sc->rare_drops);
	metrics_set(am->m, "ccld_agent_step_hook_hits_total", NULL, (double)n->step_hook_hits);
	metrics_set(am->m, "ccld_agent_step_hook_bpf_seconds_total", NULL, n->step_hook_bpf_s);
	if (fa) {
		struct fleet_agent_stats fs;

		fleet_agent_stats(fa, &fs);
		metrics_set(am->m, "ccld_agent_fleet_records_total", NULL, (double)fs.records);
		metrics_set(am->m, "ccld_agent_fleet_buffered", NULL, (double)fs.buffered);
		metrics_set(am->m, "ccld_agent_fleet_dropped_total", NULL, (double)fs.dropped);
		metrics_set(am->m, "ccld_agent_redis_connected", NULL, fs.connected);
	}
}

void agent_metrics_free(struct agent_metrics *am)
{
	if (!am)
		return;
	metrics_free(am->m);
	free(am);
}
