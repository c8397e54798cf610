/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ccld-analyzer's Prometheus metrics (docs/fleet.md section 7): records,
 * duplicates, gaps, lag per shard, verdicts by class.
 */
#ifndef CCLD_ANALYZER_METRICS_H
#define CCLD_ANALYZER_METRICS_H

#include <stddef.h>

struct analyzer_metrics;
struct fleet_analyzer;
struct fs_consumer;

/* Declares the families and serves ADDR; NULL with ERR on failure. */
struct analyzer_metrics *analyzer_metrics_new(const char *addr, unsigned nshards,
					      char *err, size_t errlen);
/* Copies the current numbers (about once a second). */
void analyzer_metrics_update(struct analyzer_metrics *am,
			     const struct fleet_analyzer *fa, struct fs_consumer *c);
void analyzer_metrics_free(struct analyzer_metrics *am);

#endif
