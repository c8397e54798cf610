/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The fleet analyzer's core (`ccld-analyzer`, docs/fleet.md section 6):
 * records from the node agents (an_wire.h), deduplicated per producer, fed
 * to one analyzer with one analyzer host per node; each verdict is claimed
 * in Redis (SET NX) so that replicas and restarts print and publish it
 * once, then written to OUT and to the verdict stream.
 */
#ifndef CCLD_FLEET_ANALYZER_H
#define CCLD_FLEET_ANALYZER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "analyzer.h"

struct fs_cred;
struct fs_record;
struct fleet_analyzer;

struct fleet_analyzer_opts {
	const char *url;	/* Redis, for claims and the verdict stream */
	const struct fs_cred *cred;	/* its AUTH (may be NULL) */
	FILE *out;
	bool json;
	unsigned nshards;	/* shard streams read: a node's clock is the
				 * oldest tick it delivered on any of them */
	struct an_config an;
};

struct fleet_analyzer_stats {
	uint64_t records;	/* applied to the analyzer */
	uint64_t dups;		/* refused: already applied */
	uint64_t gaps;		/* producer seqs never seen */
	uint64_t bad;		/* records that did not decode */
	uint64_t verdicts;	/* printed and published by this replica */
	uint64_t verdicts_other;	/* claimed before (another replica, a restart) */
	uint64_t publish_errors;
	uint64_t by_class[AN_CLASS_LAST + 1];	/* printed verdicts per class */
};

/* NULL with a reason in ERR (cannot connect to url, out of memory). */
struct fleet_analyzer *fleet_analyzer_new(const struct fleet_analyzer_opts *o,
					  char *err, size_t errlen);
void fleet_analyzer_free(struct fleet_analyzer *fa);

/* Between reads: a node that went quiet stops holding the others' clocks. */
void fleet_analyzer_idle(struct fleet_analyzer *fa);

/* fs_record_fn: applies one record (FS_ACK), or -1 on out of memory. */
int fleet_analyzer_record(void *ctx, const struct fs_record *r);

void fleet_analyzer_stats(const struct fleet_analyzer *fa,
			  struct fleet_analyzer_stats *st);

/* The latest verdict this replica printed per communicator. */
struct fleet_last {
	uint64_t comm;
	enum an_class cls;
	bool recovered;
	double t_s;		/* detected, realtime seconds */
};
const struct fleet_last *fleet_analyzer_last(const struct fleet_analyzer *fa, uint32_t *n);

#endif
