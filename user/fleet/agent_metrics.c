// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include "agent_metrics.h"
#include "fleet_agent.h"
#include "hmap.h"
#include "metrics.h"
#include "state.h"

struct agent_metrics {
	struct metrics *m;
	/*
	 * (comm hash, rank) -> the update that last exported it: a series
	 * whose comm rank the state no longer holds is deleted, so that a
	 * node's churn of jobs does not grow /metrics without end
	 */
	struct hmap shown;
	uint64_t gen;
};

static const char *const rank_families[] = {
	"ccld_collectives_total", "ccld_bytes_total", "ccld_inflight_age_seconds",
};

static const struct metric_family families[] = {
	{ "ccld_collectives_total", METRIC_COUNTER,
	  "Collective and p2p calls per communicator and rank." },
	{ "ccld_bytes_total", METRIC_COUNTER,
	  "Bytes of those calls per communicator and rank." },
	{ "ccld_inflight_age_seconds", METRIC_GAUGE,
	  "Seconds since the rank's last GPU completion while it has ops in flight (0: none in flight)." },
	{ "ccld_agent_processes", METRIC_GAUGE, "NCCL processes traced now." },
	{ "ccld_agent_heap_bytes", METRIC_GAUGE,
	  "The agent's heap (malloc): in use, and free but still held from the system." },
	{ "ccld_agent_events_total", METRIC_COUNTER, "Events read from the ring buffers." },
	{ "ccld_agent_drops_total", METRIC_COUNTER,
	  "Events the kernel could not put in a ring buffer, by ring." },
	{ "ccld_agent_step_records_shed_total", METRIC_COUNTER,
	  "Step records BPF shed so that calls fit, the main ring over 3/4 full (not lost: a step sample says so)." },
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

	if (am)
		hmap_init(&am->shown);
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

/* marks (HASH, RANK) exported by this update */
static void mark_shown(struct agent_metrics *am, uint64_t hash, int32_t rank)
{
	struct hkey k = hkey3(hash, (uint32_t)rank, 0);
	uint64_t *gen = hmap_get(&am->shown, k);

	if (!gen) {
		gen = malloc(sizeof(*gen));
		if (!gen || hmap_put(&am->shown, k, gen)) {
			free(gen);
			return;
		}
	}
	*gen = am->gen;
}

/* deletes the series of comm ranks this update did not export */
static void drop_stale(struct agent_metrics *am)
{
	char labels[64];
	struct hkey k;
	size_t it, f;
	void *v;

	for (it = 0; hmap_next(&am->shown, &it, &k, &v);) {
		if (*(uint64_t *)v == am->gen)
			continue;
		snprintf(labels, sizeof(labels), "comm=\"%016" PRIx64 "\",rank=\"%d\"",
			 k.a, (int32_t)k.b);
		for (f = 0; f < sizeof(rank_families) / sizeof(rank_families[0]); f++)
			metrics_del(am->m, rank_families[f], labels);
		hmap_del(&am->shown, k);
		free(v);
	}
}

void agent_metrics_update(struct agent_metrics *am, const struct state *st,
			  const struct fleet_agent *fa, const struct agent_numbers *n,
			  uint64_t now_ns)
{
	const struct state_counts *sc = state_counts(st);
	struct mallinfo2 heap;
	struct comm_rank *cr;
	char comm[17], rank[16];
	size_t it;

	am->gen++;
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
		mark_shown(am, cr->hash, cr->rank);
	}
	drop_stale(am);
	metrics_set(am->m, "ccld_agent_processes", NULL, (double)n->processes);
	heap = mallinfo2();
	metrics_set(am->m, "ccld_agent_heap_bytes", "state=\"in_use\"",
		    (double)(heap.uordblks + heap.hblkhd));
	metrics_set(am->m, "ccld_agent_heap_bytes", "state=\"free\"", (double)heap.fordblks);
	metrics_set(am->m, "ccld_agent_events_total", NULL, (double)sc->events);
	metrics_set(am->m, "ccld_agent_drops_total", "ring=\"main\"", (double)sc->main_drops);
	metrics_set(am->m, "ccld_agent_drops_total", "ring=\"rare\"", (double)sc->rare_drops);
	metrics_set(am->m, "ccld_agent_step_records_shed_total", NULL, (double)sc->steps_shed);
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
	struct hkey k;
	size_t it;
	void *v;

	if (!am)
		return;
	for (it = 0; hmap_next(&am->shown, &it, &k, &v);)
		free(v);
	hmap_free(&am->shown);
	metrics_free(am->m);
	free(am);
}
