/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The node agent's side of fleet mode (`ccld-trace daemon`): every analyzer
 * input record of the local pipeline (an_wire.h) goes to Redis Streams,
 * sharded by communicator hash; records that concern no communicator (the
 * node's clock, process states) go to every shard, so that each analyzer
 * replica has them.  The producer buffers while Redis is unreachable; the
 * agent reports the outage and the catch-up once each.  docs/fleet.md.
 */
#ifndef CCLD_FLEET_AGENT_H
#define CCLD_FLEET_AGENT_H

#include <stdint.h>
#include <stdio.h>

struct an_wire;
struct fleet_agent;
struct fs_cred;

#define FLEET_DEFAULT_SHARDS	8

/*
 * Connects with CRED (may be NULL: no AUTH, no record tags); one clear
 * error line in ERR if it cannot; NULL on failure.
 */
struct fleet_agent *fleet_agent_new(const char *url, const struct fs_cred *cred,
				    const char *node,
				    unsigned nshards, char *err, size_t errlen);
void fleet_agent_free(struct fleet_agent *a);

/* pipeline_opts.tap */
void fleet_agent_tap(void *ctx, uint32_t host, const struct an_wire *w);

/* About every 100 ms: flushes, and reports a lost or regained connection. */
void fleet_agent_tick(struct fleet_agent *a, FILE *log);

/* At exit: the last flush (bounded by the producer's I/O timeout), totals. */
void fleet_agent_report(struct fleet_agent *a, FILE *log);

struct fleet_agent_stats {
	uint64_t records, sent, buffered, dropped, encode_errors;
	double gap_s;
	int connected;
};
void fleet_agent_stats(const struct fleet_agent *a, struct fleet_agent_stats *st);

#endif
