// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "an_wire.h"
#include "fleet_agent.h"
#include "fleet_stream.h"

struct fleet_agent {
	struct fs_producer *p;
	char *url;
	unsigned nshards;
	uint64_t records, encode_errors;
	bool down;		/* the outage was reported */
	uint64_t peak;		/* most records buffered during it */
	uint8_t buf[AN_WIRE_MAX];
};

struct fleet_agent *fleet_agent_new(const char *url, const struct fs_cred *cred,
				    const char *node,
				    unsigned nshards, char *err, size_t errlen)
{
	struct fleet_agent *a = calloc(1, sizeof(*a));

	if (!a) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	a->nshards = nshards ? nshards : FLEET_DEFAULT_SHARDS;
	a->url = strdup(url);
	a->p = fs_producer_new(url, cred, node, a->nshards, 0, err, errlen);
	if (!a->p || !a->url) {
		fleet_agent_free(a);
		return NULL;
	}
	return a;
}

void fleet_agent_free(struct fleet_agent *a)
{
	if (!a)
		return;
	fs_producer_free(a->p);
	free(a->url);
	free(a);
}

void fleet_agent_tap(void *ctx, uint32_t host, const struct an_wire *w)
{
	struct fleet_agent *a = ctx;
	int len = an_wire_encode(w, a->buf, sizeof(a->buf));
	unsigned s;

	(void)host;	/* one host: this node */
	if (len < 0) {
		a->encode_errors++;
		return;
	}
	a->records++;
	/*
	 * about every comm of the node or of a process: every shard (a
	 * verdict on any of its comms names the process, its labels, what its
	 * threads do, its warnings)
	 */
	if (w->type == AW_CLOCK || w->type == AW_PROC || w->type == AW_LOST ||
	    w->type == AW_LABEL || w->type == AW_THREAD || w->type == AW_NCCL_WARN ||
	    w->type == AW_ENDPOINT || w->type == AW_SCHED) {
		for (s = 0; s < a->nshards; s++)
			fs_send(a->p, s, a->buf, (size_t)len);
		return;
	}
	/* a setup group's records go together: to the shard of the group */
	fs_send(a->p, w->type == AW_SETUP ? w->setup.group : w->k.comm, a->buf, (size_t)len);
}

void fleet_agent_tick(struct fleet_agent *a, FILE *log)
{
	struct fs_producer_stats st;

	fs_flush(a->p);
	fs_producer_stats(a->p, &st);
	if (a->down && st.buffered > a->peak)
		a->peak = st.buffered;
	if (!st.connected && !a->down) {
		a->down = true;
		a->peak = st.buffered;
		fprintf(log, "ccld-trace: %s unreachable (%s): buffering records\n",
			a->url, st.last_error[0] ? st.last_error : "no connection");
	} else if (st.connected && a->down) {
		a->down = false;
		fprintf(log, "ccld-trace: %s reachable again after %.1f s without a"
			" connection: up to %" PRIu64 " records were buffered, %" PRIu64
			" wait now, %" PRIu64 " dropped so far (buffer full)\n", a->url,
			st.gap_seconds, a->peak, st.buffered, st.dropped);
	}
}

void fleet_agent_stats(const struct fleet_agent *a, struct fleet_agent_stats *out)
{
	struct fs_producer_stats st;

	fs_producer_stats(a->p, &st);
	out->records = a->records;
	out->sent = st.sent;
	out->buffered = st.buffered;
	out->dropped = st.dropped;
	out->encode_errors = a->encode_errors;
	out->gap_s = st.gap_seconds;
	out->connected = st.connected;
}

void fleet_agent_report(struct fleet_agent *a, FILE *log)
{
	struct fleet_agent_stats st;

	fs_flush(a->p);
	fleet_agent_stats(a, &st);
	fprintf(log, "ccld-trace: fleet: %" PRIu64 " analyzer records, %" PRIu64
		" sent to Redis, %" PRIu64 " not sent, %" PRIu64 " dropped (buffer full),"
		" longest outage %.1f s\n", st.records, st.sent, st.buffered, st.dropped,
		st.gap_s);
}
