// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ccld-simjob --random SEED (docs/simjob.md, "Random jobs"): draws a job
 * and at most one fault from the seed, with its own generator (splitmix64)
 * so that a seed gives the same job on every machine and libc.
 *
 * The job: a pattern (plain, pytorch, moe), a TP x PP x DP layout of 4 to
 * 16 ranks, hosts of some ranks each or one rank per host, compute time,
 * jitter, buffer sizes from 4 elements to 256 KiB, the compute phase on
 * the CPU or as a kernel, the world comm by InitRank or InitRankConfig.
 * The fault: none, or one of every kind the analyzer names, at a random
 * rank and a random time: H1 (CPU hang, blocked write, exit, SIGSTOP, a
 * call or one send of a group skipped, never calling init), H2 (op, count, dtype or redop of
 * the loss all-reduce), H3 (network or GPU stall), S1 (compute or GPU
 * slow), S2 (network slow).  And how a tracer attaches: at the start, mid
 * run before the fault, or after it (with the exited rank left a zombie).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "simjob_random.h"

struct rng {
	unsigned long long s;
};

static unsigned long long next64(struct rng *r)
{
	unsigned long long z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* uniform in [lo, hi] */
static int pick(struct rng *r, int lo, int hi)
{
	return lo + (int)(next64(r) % (unsigned long long)(hi - lo + 1));
}

/* index drawn by the weights W[0..N-1] */
static int weighted(struct rng *r, const int *w, int n)
{
	int i, total = 0, x;

	for (i = 0; i < n; i++)
		total += w[i];
	x = pick(r, 0, total - 1);
	for (i = 0; i < n - 1 && x >= w[i]; i++)
		x -= w[i];
	return i;
}

/* appends one argv string (printf format) to the draw */
static void arg(struct simjob_draw *d, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (d->argc >= DRAW_MAX_ARGS - 1 || *used >= sizeof(d->store))
		return;
	va_start(ap, fmt);
	n = vsnprintf(d->store + *used, sizeof(d->store) - *used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(d->store) - *used)
		return;
	d->argv[d->argc++] = d->store + *used;
	d->argv[d->argc] = NULL;
	*used += (size_t)n + 1;
}

enum fault {
	F_NONE, F_HANG, F_HANG_WRITE, F_EXIT, F_STOP, F_SKIP, F_MISMATCH,
	F_NETSTALL, F_GPUSTALL, F_SLOW, F_GPUSLOW, F_NETSLOW, F_NKINDS
};
static const char *const fault_name[F_NKINDS] = {
	"none", "hang", "hang-write", "exit", "stop", "skip", "mismatch",
	"netstall", "gpustall", "slow", "gpuslow", "netslow",
};
static const char *const fault_class[F_NKINDS] = {
	"none", "H1", "H1", "H1", "H1", "H1", "H2", "H3", "H3", "S1", "S1", "S2",
};
static const int fault_weight[F_NKINDS] = { 8, 7, 3, 6, 6, 12, 12, 8, 8, 8, 6, 8 };

void simjob_random(unsigned long long seed, struct simjob_draw *d)
{
	static const char *const pat_name[] = { "plain", "pytorch", "moe" };
	static const char *const attach_name[] = { "start", "midrun", "late" };
	static const char *const mm_name[] = { "op", "count", "dtype", "redop" };
	const char *skips[8], *which = "", *comm = "";
	int pat, tp, pp, dp, n, hosts, fault, rank, nskip = 0, attach, zombie = 0;
	int onset_ms, hang_like, gpu_compute = 0, noinit = 0;
	double attach_s, factor = 0;
	struct rng r = { seed * 0x2545f4914f6cdd1dULL + 1 };
	size_t used = 0;

	memset(d, 0, sizeof(*d));
	pat = weighted(&r, (const int[]){ 35, 30, 35 }, 3);
	if (pat == 2) {
		/* moe: the expert all-to-all on each stage's DP comm */
		tp = 1;
		pp = pick(&r, 0, 1) ? 4 : 2;
		dp = pick(&r, 0, 1) ? 4 : 2;
	} else {
		do {
			tp = 1 << pick(&r, 0, 2);
			pp = 1 << pick(&r, 0, 2);
			dp = 1 << pick(&r, 0, 2);
		} while (tp * pp * dp < 4 || tp * pp * dp > 16);
	}
	n = tp * pp * dp;
	hosts = 0;
	if (pick(&r, 0, 1)) {
		/* some ranks per host: the TP group where there is one */
		hosts = tp > 1 && pick(&r, 0, 1) ? tp : pick(&r, 0, 1) ? 2 : 4;
		if (hosts >= n)
			hosts = 0;
	}
	arg(d, &used, "--ranks");
	arg(d, &used, "%d", n);
	arg(d, &used, "--tp");
	arg(d, &used, "%d", tp);
	arg(d, &used, "--pp");
	arg(d, &used, "%d", pp);
	arg(d, &used, "--pattern");
	arg(d, &used, "%s", pat_name[pat]);
	if (hosts) {
		arg(d, &used, "--ranks-per-host");
		arg(d, &used, "%d", hosts);
	}
	arg(d, &used, "--compute-ms");
	arg(d, &used, "%d", pick(&r, pat == 2 ? 5 : 3, 15));
	if (pick(&r, 0, 1)) {
		arg(d, &used, "--jitter");
		arg(d, &used, "%d", pick(&r, 5, 20));
	}
	arg(d, &used, "--size");
	arg(d, &used, "%d", 1 << pick(&r, 2, 16));
	arg(d, &used, "--init");
	arg(d, &used, "%s", pick(&r, 0, 1) ? "rank" : "config");
	arg(d, &used, "--steps");
	arg(d, &used, "1000000");	/* the scorer stops the job */

	fault = weighted(&r, fault_weight, F_NKINDS);
	rank = pick(&r, 0, n - 1);
	hang_like = fault_class[fault][0] == 'H';
	/* a hang a few seconds in; a slowdown once the baselines are learned */
	onset_ms = hang_like ? pick(&r, 1500, 4000) : pick(&r, 6000, 9000);
	attach = weighted(&r, (const int[]){ 40, 35, 25 }, 3);
	if (fault == F_NONE)
		attach = attach == 2 ? 1 : attach;
	/* start: before the first step; midrun: before the onset; late: after */
	if (attach == 1)
		attach_s = pick(&r, 500, onset_ms - 1000) / 1000.0;
	else if (attach == 2)
		attach_s = pick(&r, 1000, 3000) / 1000.0;
	else
		attach_s = 0;
	if (fault == F_SKIP) {
		if (pat == 2) {
			skips[nskip++] = "loss";
			skips[nskip++] = "dp";
			skips[nskip++] = "pp";
			skips[nskip++] = "ppsend";
			skips[nskip++] = "a2a";
		} else {
			skips[nskip++] = "loss";
			if (tp > 1) {
				skips[nskip++] = "tp";
				skips[nskip++] = "tp1";
			}
			if (dp > 1)
				skips[nskip++] = "dp";
			if (pp > 1) {
				skips[nskip++] = "pp";
				skips[nskip++] = "ppsend";
			}
		}
		which = skips[pick(&r, 0, nskip - 1)];
		comm = !strcmp(which, "loss") ? "world" : !strncmp(which, "tp", 2) ? "tp" :
		       !strcmp(which, "dp") || !strcmp(which, "a2a") ? "dp" :
		       pat == 0 ? "pp" : "world";
	} else if (fault == F_MISMATCH) {
		which = mm_name[pick(&r, 0, 3)];
		comm = "world";
	} else if (fault == F_HANG_WRITE) {
		arg(d, &used, "--hang");
		arg(d, &used, "%d:0:write=ckpt.fifo", rank);
	} else if (fault == F_HANG) {
		/* below: a CPU hang, or one that never calls its init */
	} else if (fault == F_EXIT) {
		arg(d, &used, "--exit");
		arg(d, &used, "%d:0", rank);
		zombie = attach == 2 && pick(&r, 0, 1);
	} else if (fault == F_STOP) {
		arg(d, &used, "--stop");
		arg(d, &used, "%d:0", rank);
	} else if (fault == F_SLOW) {
		factor = pick(&r, 30, 60) / 10.0;
		arg(d, &used, "--slow");
		arg(d, &used, "%d:0:%g", rank, factor);
	} else if (fault != F_NONE) {
		/* the stand-in's faults count from the world comm's init, which
		 * a tracer attached at the start precedes by its own start */
		int after = onset_ms + (attach == 0 ? 4000 : 0);

		if (fault == F_GPUSLOW)
			factor = pick(&r, 30, 50) / 10.0;
		else if (fault == F_NETSLOW)
			factor = pick(&r, 40, 80) / 10.0;
		snprintf(d->fault_env, sizeof(d->fault_env), "%s rank=%d after_ms=%d",
			 fault_name[fault], rank, after);
		if (factor > 0)
			snprintf(d->fault_env + strlen(d->fault_env),
				 sizeof(d->fault_env) - strlen(d->fault_env), " factor=%g", factor);
		gpu_compute = fault == F_GPUSLOW;
	}
	if (fault != F_NONE && fault != F_HANG && !d->fault_env[0]) {
		arg(d, &used, "--fault-at-ms");
		arg(d, &used, "%d", onset_ms);
	}
	if (pat == 0 && (gpu_compute || pick(&r, 0, 3) == 0))
		arg(d, &used, "--gpu-compute");
	/*
	 * A slower link must cost the job something: the stand-in's network
	 * steps (20 us and the size over 12.5 GB/s) hide in the compute
	 * phase, and 4-8x of them left the job's pace as it was (seeds 25 and
	 * 67: 99 and 110 calls/s before, 103 and 116 after).  Such a job runs
	 * on a network of 0.5-2 ms steps, as test_slow_scenarios' netslow
	 * does; drawn last, so the rest of every seed's draw stays the same.
	 */
	if (fault == F_NETSLOW)
		d->net_us = pick(&r, 500, 2000);
	/*
	 * A CPU hang in three is a rank that never calls its init, the others
	 * waiting inside theirs (onset: the job's start; a tracer attached mid
	 * run or late finds them there in memory).  Drawn last, as net_us.
	 */
	/*
	 * Seeds from 1000 on: half the plain and pytorch jobs with a DP comm
	 * start each step with DDP's buffer broadcast from its rank 0, and a
	 * skip or a mismatch then hits it one time in three (skip: the
	 * broadcast; mismatch: its root).  Drawn last, so the seeds below
	 * 1000 (the regression seeds, the tables) keep their draws.
	 */
	if (seed >= 1000 && pat != 2 && dp > 1 && pick(&r, 0, 1)) {
		arg(d, &used, "--bcast");
		if ((fault == F_SKIP || fault == F_MISMATCH) && pick(&r, 0, 2) == 0) {
			which = fault == F_SKIP ? "bcast" : "root";
			comm = "dp";
		}
	}
	if (fault == F_SKIP || fault == F_MISMATCH) {
		arg(d, &used, fault == F_SKIP ? "--skip" : "--mismatch");
		arg(d, &used, "%d:0:%s", rank, which);
	}
	if (fault == F_HANG) {
		noinit = pick(&r, 0, 2) == 0;
		if (noinit) {
			arg(d, &used, "--no-init");
			arg(d, &used, "%d", rank);
			comm = "world";
			onset_ms = 0;
		} else {
			arg(d, &used, "--hang");
			arg(d, &used, "%d:0", rank);
			arg(d, &used, "--fault-at-ms");
			arg(d, &used, "%d", onset_ms);
		}
	}

	snprintf(d->json, sizeof(d->json),
		 "{\"seed\":%llu,\"pattern\":\"%s\",\"ranks\":%d,\"tp\":%d,\"pp\":%d,\"dp\":%d,"
		 "\"ranks_per_host\":%d,\"fault\":\"%s\",\"class\":\"%s\",\"culprit\":%d,"
		 "\"which\":\"%s\",\"comm\":\"%s\",\"factor\":%g,\"onset_ms\":%d,"
		 "\"fault_env\":\"%s\",\"net_us\":%d,\"attach\":\"%s\",\"attach_s\":%g,"
		 "\"zombie\":%d}",
		 seed, pat_name[pat], n, tp, pp, dp, hosts, noinit ? "noinit" : fault_name[fault],
		 fault_class[fault],
		 fault == F_NONE ? -1 : rank, which, comm, factor,
		 fault == F_NONE ? -1 : onset_ms, d->fault_env, d->net_us, attach_name[attach],
		 attach_s, zombie);
}
