// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Fleet load generator (docs/numbers.md): AGENTS synthetic node
 * agents, each a thread with its own Redis producer (node "load-N") and
 * RANKS simulated ranks, send the records a real agent would (an_wire.h):
 * per rank and round an all-reduce entered, returned and completed by its
 * GPU, ROUNDS per second per rank, plus the node's clock every 250 ms.
 * Comms: each node's ranks in comms of 8, and a world comm of all ranks
 * (one world all-reduce every 8 rounds).  After HANG_AT seconds rank 5 of
 * node 0 stops entering: every other rank enters the next world round and
 * waits (H1, culprit load-0 rank 5); the clocks go on.  Prints the
 * monotonic time of the fault ("hang_ns N") on stdout.
 *
 * usage: fleet_load URL AGENTS RANKS ROUNDS SECONDS HANG_AT SHARDS
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include "an_wire.h"
#include "ccld.h"
#include "fleet_agent.h"
#include "fleet_cred.h"
#include "fleet_stream.h"

static const char *url;
static int nagents, nranks, rounds_per_s, shards;
static double seconds, hang_at;
static uint64_t t_start;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int64_t realtime_offset(void)
{
	struct timespec r, m;

	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	return ((int64_t)r.tv_sec - m.tv_sec) * 1000000000ll + (r.tv_nsec - m.tv_nsec);
}

static void put(struct fleet_agent *fa, struct an_wire *w)
{
	fleet_agent_tap(fa, 0, w);
}

static void rank_op(struct fleet_agent *fa, uint32_t pid, uint64_t comm, int rank, int n,
		    int64_t seq, uint64_t t, bool complete)
{
	struct an_wire w;

	memset(&w, 0, offsetof(struct an_wire, subs));
	w.k = (struct an_key){ .pid = pid, .comm = comm, .rank = rank, .nranks = n };
	w.op = (struct an_op){ .k = w.k, .tid = pid, .fn = CCLD_FN_ALLREDUCE, .seq = seq,
			       .count = 1 << 20, .dtype = 7, .redop = 0, .root = -1,
			       .peer = -1, .t_ns = t };
	w.type = AW_ENTER;
	w.t_ns = t;
	put(fa, &w);
	w.type = AW_RETURN;
	w.t_ns = t + 20000;
	put(fa, &w);
	if (!complete)
		return;
	w.type = AW_COMPLETE_UPTO;
	w.upto = seq;
	w.t_ns = t + 1000000;
	put(fa, &w);
}

static void *agent(void *arg)
{
	int a = (int)(intptr_t)arg, r, world = nagents * nranks;
	char node[32], err[512];
	struct fleet_agent *fa;
	uint64_t period = 1000000000ull / (uint64_t)rounds_per_s, next, next_clock;
	int64_t round = 0, wseq = 0, lseq = 0;
	int64_t hang_seq = (int64_t)(hang_at * rounds_per_s / 8);
	bool hung = false, world_round, inject;
	struct an_wire w;
	struct fs_cred cred;

	snprintf(node, sizeof(node), "load-%d", a);
	/* $CCLD_REDIS_AUTH_FILE, $CCLD_HMAC_KEY_FILE: measure with tags too */
	if (fleet_cred_load(&cred, NULL, NULL, err, sizeof(err))) {
		fprintf(stderr, "fleet_load: %s\n", err);
		exit(1);
	}
	fa = fleet_agent_new(url, &cred, node, (unsigned)shards, err, sizeof(err));
	if (!fa) {
		fprintf(stderr, "fleet_load: %s\n", err);
		exit(1);
	}
	for (r = 0; r < nranks; r++) {
		memset(&w, 0, offsetof(struct an_wire, subs));
		w.type = AW_RANK;
		w.t_ns = now_ns();
		w.k = (struct an_key){ .pid = (uint32_t)(1000 * (a + 1) + r),
				       .comm = 0x1000 + (uint64_t)(a * 1000 + r / 8),
				       .rank = r % 8, .nranks = 8 };
		put(fa, &w);
		w.k.comm = 0xffff;
		w.k.rank = a * nranks + r;
		w.k.nranks = world;
		put(fa, &w);
	}
	next = next_clock = now_ns();
	while (now_ns() - t_start < (uint64_t)(seconds * 1e9)) {
		uint64_t t = now_ns();

		if (t >= next_clock) {
			memset(&w, 0, offsetof(struct an_wire, subs));
			w.type = AW_CLOCK;
			w.t_ns = t;
			w.realtime_offset_ns = realtime_offset();
			put(fa, &w);
			fleet_agent_tick(fa, stderr);
			next_clock = t + 250000000ull;
		}
		if (t < next) {
			uint64_t d = next < next_clock ? next - t : next_clock - t;
			struct timespec ts = { 0, (long)(d < 1000000 ? d : 1000000) };

			nanosleep(&ts, NULL);
			continue;
		}
		next += period;
		if (hung)
			continue;	/* everyone waits in world round wseq */
		world_round = round % 8 == 7;
		/* the hang: rank 5 of node 0 never enters world round hang_seq */
		inject = world_round && wseq == hang_seq;
		for (r = 0; r < nranks; r++) {
			uint32_t pid = (uint32_t)(1000 * (a + 1) + r);

			if (world_round && !(inject && a == 0 && r == 5))
				rank_op(fa, pid, 0xffff, a * nranks + r, world, wseq, t, !inject);
			else if (!world_round)
				rank_op(fa, pid, 0x1000 + (uint64_t)(a * 1000 + r / 8), r % 8, 8,
					lseq, t, true);
		}
		if (inject) {
			hung = true;
			if (a == 0)
				printf("hang_ns %" PRIu64 "\n", t);
			continue;
		}
		if (world_round)
			wseq++;
		else
			lseq++;
		round++;
	}
	fleet_agent_report(fa, stderr);
	fleet_agent_free(fa);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t *th;
	int i;

	if (argc != 8) {
		fprintf(stderr, "usage: fleet_load URL AGENTS RANKS ROUNDS SECONDS HANG_AT SHARDS\n");
		return 2;
	}
	url = argv[1];
	nagents = atoi(argv[2]);
	nranks = atoi(argv[3]);
	rounds_per_s = atoi(argv[4]);
	seconds = atof(argv[5]);
	hang_at = atof(argv[6]);
	shards = atoi(argv[7]);
	if (nagents < 1 || nranks < 8 || nranks % 8 || rounds_per_s < 1 || shards < 1) {
		fprintf(stderr, "fleet_load: bad arguments\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	t_start = now_ns();
	th = calloc((size_t)nagents, sizeof(*th));
	for (i = 0; i < nagents; i++)
		pthread_create(&th[i], NULL, agent, (void *)(intptr_t)i);
	for (i = 0; i < nagents; i++)
		pthread_join(th[i], NULL);
	free(th);
	return 0;
}
