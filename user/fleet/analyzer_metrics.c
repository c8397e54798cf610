// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "analyzer_metrics.h"
#include "fleet_analyzer.h"
#include "fleet_stream.h"
#include "metrics.h"

struct analyzer_metrics {
	struct metrics *m;
	unsigned nshards;
	struct fs_lag *lag;
};

static const struct metric_family families[] = {
	{ "ccld_analyzer_records_total", METRIC_COUNTER,
	  "Agent records applied to the analyzer." },
	{ "ccld_analyzer_duplicates_total", METRIC_COUNTER,
	  "Records delivered again (redelivery, resend) and dropped." },
	{ "ccld_analyzer_gaps_total", METRIC_COUNTER,
	  "Producer sequence numbers never received (dropped by a full agent buffer)." },
	{ "ccld_analyzer_undecodable_total", METRIC_COUNTER,
	  "Records that did not decode." },
	{ "ccld_analyzer_rejected_total", METRIC_COUNTER,
	  "Entries dropped for a missing (reason untagged) or wrong (bad_tag) record tag." },
	{ "ccld_analyzer_verdicts_total", METRIC_COUNTER,
	  "Verdicts printed and published by this replica, by class." },
	{ "ccld_analyzer_verdicts_claimed_elsewhere_total", METRIC_COUNTER,
	  "Verdicts another replica (or an earlier run) had printed." },
	{ "ccld_last_verdict_timestamp_seconds", METRIC_GAUGE,
	  "When the latest verdict on a communicator was detected, by class and kind." },
	{ "ccld_analyzer_lag_entries", METRIC_GAUGE,
	  "Entries of a shard stream not yet delivered to the group (-1 unknown)." },
	{ "ccld_analyzer_pending_entries", METRIC_GAUGE,
	  "Entries of a shard delivered and not acknowledged." },
};

struct analyzer_metrics *analyzer_metrics_new(const char *addr, unsigned nshards,
					      char *err, size_t errlen)
{
	struct analyzer_metrics *am = calloc(1, sizeof(*am));
	if (!am || !(am->m = metrics_new()) ||
	    !(am->lag = calloc(nshards, sizeof(*am->lag)))) {
		snprintf(err, errlen, "metrics: out of memory");
		analyzer_metrics_free(am);
		return NULL;
	}
	am->nshards = nshards;
	if (metrics_declare_all(am->m, families, sizeof(families) / sizeof(families[0]),
				err, errlen)) {
		analyzer_metrics_free(am);
		return NULL;
	}
	if (metrics_start(am->m, addr, err, errlen)) {
		analyzer_metrics_free(am);
		return NULL;
	}
	return am;
}

void analyzer_metrics_update(struct analyzer_metrics *am,
			     const struct fleet_analyzer *fa, struct fs_consumer *c)
{
	static const char *const cls[] = { "", "H1", "H2", "H3", "S1", "S2", "S3", "HW", "ENV" };
	struct fleet_analyzer_stats st;
	struct fs_consumer_stats cs;
	char shard[16];
	unsigned i;

	fleet_analyzer_stats(fa, &st);
	metrics_set(am->m, "ccld_analyzer_records_total", NULL, (double)st.records);
	metrics_set(am->m, "ccld_analyzer_duplicates_total", NULL, (double)st.dups);
	metrics_set(am->m, "ccld_analyzer_gaps_total", NULL, (double)st.gaps);
	metrics_set(am->m, "ccld_analyzer_undecodable_total", NULL, (double)st.bad);
	fs_consumer_stats(c, &cs);
	metrics_set_l(am->m, "ccld_analyzer_rejected_total", (double)cs.untagged,
		      (const char *const[]){ "reason", "untagged", NULL });
	metrics_set_l(am->m, "ccld_analyzer_rejected_total", (double)cs.bad_tag,
		      (const char *const[]){ "reason", "bad_tag", NULL });
	metrics_set(am->m, "ccld_analyzer_verdicts_claimed_elsewhere_total", NULL,
		    (double)st.verdicts_other);
	for (i = 1; i < sizeof(cls) / sizeof(cls[0]); i++)
		metrics_set_l(am->m, "ccld_analyzer_verdicts_total", (double)st.by_class[i],
			      (const char *const[]){ "class", cls[i], NULL });
	{
		const struct fleet_last *l;
		uint32_t nl, k;
		char comm[17];

		l = fleet_analyzer_last(fa, &nl);
		for (k = 0; k < nl; k++) {
			snprintf(comm, sizeof(comm), "%016" PRIx64, l[k].comm);
			metrics_set_l(am->m, "ccld_last_verdict_timestamp_seconds", l[k].t_s,
				      (const char *const[]){ "comm", comm, "class",
					cls[l[k].cls <= AN_CLASS_LAST ? l[k].cls : 0], "kind",
					l[k].recovered ? "recovery" : "verdict", NULL });
		}
	}
	if (fs_consumer_lag(c, am->lag))
		return;
	for (i = 0; i < am->nshards; i++) {
		snprintf(shard, sizeof(shard), "%u", fs_consumer_shard(c, i));
		metrics_set_l(am->m, "ccld_analyzer_lag_entries", (double)am->lag[i].lag,
			      (const char *const[]){ "shard", shard, NULL });
		metrics_set_l(am->m, "ccld_analyzer_pending_entries",
			      (double)am->lag[i].pending,
			      (const char *const[]){ "shard", shard, NULL });
	}
}

void analyzer_metrics_free(struct analyzer_metrics *am)
{
	if (!am)
		return;
	metrics_free(am->m);
	free(am->lag);
	free(am);
}
