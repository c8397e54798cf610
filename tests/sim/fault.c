// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CCLD_SIM_FAULT (docs/standin.md): injected hardware faults, parsed by
 * the stand-in in every process at its first communicator init.  "Rank R"
 * is the rank the process has in that first communicator (its world rank);
 * after_ms counts from that init.  Also the timing model's knobs.
 *
 *   netstall rank=R after_ms=T            network steps stop completing
 *   netslow  rank=R after_ms=T factor=F [for_ms=D]  network steps take F
 *                                         times longer (for D ms; default:
 *                                         to the end)
 *   gpustall rank=R after_ms=T            the simulated GPU stops
 *   gpuslow  rank=R after_ms=T factor=F [for_ms=D]  simulated kernels F
 *                                         times slower
 *   teardownhang rank=R                   ncclCommFinalize, Destroy and
 *                                         Abort never return (as NCCL's
 *                                         when its proxy thread is stuck
 *                                         in the network)
 *
 * Several faults are separated by ';'.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sim.h"
#include "sim_cudart.h"

/* timing model (docs/standin.md): per network step and per kernel */
double sim_net_base_us = 20.0, sim_net_gbps = 12.5;
double sim_kernel_base_us = 10.0, sim_gpu_gbps = 200.0;

static struct sim_faults g_f;
static uint64_t g_net_at = UINT64_MAX, g_net_until = UINT64_MAX;

static int parse_num(const char *v, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(v, &end);
	return errno || end == v || *end || *out < 0 ? -1 : 0;
}

static int parse_one(char *spec, int myrank, struct sim_faults *f, char *err, size_t errlen)
{
	double rank = -1, after = 0, factor = -1, dur = 0, v;
	char *save, *tok, *kind;
	int is_slow, is_net, is_teardown = 0;

	kind = strtok_r(spec, " \t", &save);
	if (!kind)
		return 0;	/* empty element, e.g. a trailing ';' */
	if (!strcmp(kind, "teardownhang")) {
		is_teardown = 1;
		is_net = is_slow = 0;
	} else if (!strcmp(kind, "netstall") || !strcmp(kind, "netslow") ||
	    !strcmp(kind, "gpustall") || !strcmp(kind, "gpuslow")) {
		is_net = kind[0] == 'n';
		is_slow = strstr(kind, "slow") != NULL;
	} else {
		snprintf(err, errlen, "unknown fault kind '%s' (netstall, netslow, gpustall,"
			 " gpuslow, teardownhang)", kind);
		return -1;
	}
	while ((tok = strtok_r(NULL, " \t", &save))) {
		char *eq = strchr(tok, '=');

		if (!eq) {
			snprintf(err, errlen, "%s: '%s' is not key=value", kind, tok);
			return -1;
		}
		*eq = 0;
		if (parse_num(eq + 1, &v)) {
			snprintf(err, errlen, "%s: %s='%s' is not a non-negative number", kind, tok,
				 eq + 1);
			return -1;
		}
		if (!strcmp(tok, "rank") && v == (int)v)
			rank = v;
		else if (!strcmp(tok, "after_ms") && !is_teardown)
			after = v;
		else if (!strcmp(tok, "factor") && is_slow)
			factor = v;
		else if (!strcmp(tok, "for_ms") && is_slow && v > 0)
			dur = v;
		else if (!strcmp(tok, "for_ms") && is_slow) {
			snprintf(err, errlen, "%s: for_ms must be > 0", kind);
			return -1;
		}
		else {
			snprintf(err, errlen, "%s: unexpected key '%s'", kind, tok);
			return -1;
		}
	}
	if (rank < 0) {
		snprintf(err, errlen, "%s: rank=R is required", kind);
		return -1;
	}
	if (is_slow && factor <= 0) {
		snprintf(err, errlen, "%s: factor=F (> 0) is required", kind);
		return -1;
	}
	if ((int)rank != myrank)
		return 0;
	if (is_teardown) {
		f->teardown_hang = 1;
		return 0;
	}
	if (is_net) {
		f->net_stall = !is_slow;
		f->net_slow = is_slow;
		f->net_at_ms = (uint64_t)after;
		f->net_factor = is_slow ? factor : 1.0;
		f->net_for_ms = (uint64_t)dur;
		f->net_rank = (int)rank;
	} else {
		f->gpu_stall = !is_slow;
		f->gpu_slow = is_slow;
		f->gpu_at_ms = (uint64_t)after;
		f->gpu_factor = is_slow ? factor : 1.0;
		f->gpu_for_ms = (uint64_t)dur;
		f->gpu_rank = (int)rank;
	}
	return 0;
}

int sim_fault_parse(const char *s, int myrank, struct sim_faults *f, char *err, size_t errlen)
{
	char *copy, *save, *one;
	int ret = 0;

	memset(f, 0, sizeof(*f));
	f->parsed = 1;
	if (!s || !*s)
		return 0;
	copy = strdup(s);
	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (one = strtok_r(copy, ";", &save); one && !ret; one = strtok_r(NULL, ";", &save))
		ret = parse_one(one, myrank, f, err, errlen);
	free(copy);
	return ret;
}

static void env_double(const char *name, double *v)
{
	const char *s = getenv(name);
	double d;

	if (s && !parse_num(s, &d) && d > 0)
		*v = d;
}

/*
 * Parses CCLD_SIM_FAULT for MYRANK and arms it from T0.  Returns -1 with a
 * message on stderr (and in ERR) for a malformed value.
 */
int sim_fault_setup(int myrank, uint64_t t0, char *err, size_t errlen)
{
	const char *s = getenv("CCLD_SIM_FAULT");

	env_double("CCLD_SIM_NET_US", &sim_net_base_us);
	env_double("CCLD_SIM_NET_GBPS", &sim_net_gbps);
	env_double("CCLD_SIM_KERNEL_US", &sim_kernel_base_us);
	env_double("CCLD_SIM_GPU_GBPS", &sim_gpu_gbps);
	if (sim_fault_parse(s, myrank, &g_f, err, errlen)) {
		fprintf(stderr, "ccld-sim: malformed CCLD_SIM_FAULT='%s': %s\n", s, err);
		return -1;
	}
	if (g_f.net_stall || g_f.net_slow) {
		g_net_at = t0 + g_f.net_at_ms * 1000000ull;
		if (g_f.net_for_ms)
			g_net_until = g_net_at + g_f.net_for_ms * 1000000ull;
	}
	if (g_f.gpu_stall || g_f.gpu_slow) {
		uint64_t at = t0 + g_f.gpu_at_ms * 1000000ull;

		ccldsim_gpu_fault_set(at, g_f.gpu_for_ms ? at + g_f.gpu_for_ms * 1000000ull :
				      UINT64_MAX, g_f.gpu_stall, g_f.gpu_factor);
	}
	if (g_f.net_stall || g_f.net_slow || g_f.gpu_stall || g_f.gpu_slow) {
		char extra[128];
		uint64_t at_ms = g_f.net_stall || g_f.net_slow ? g_f.net_at_ms : g_f.gpu_at_ms;
		uint64_t for_ms = g_f.net_stall || g_f.net_slow ? g_f.net_for_ms : g_f.gpu_for_ms;

		fprintf(stderr, "ccld-sim: pid %d rank %d: fault armed: %s\n", (int)getpid(),
			myrank, s);
		/* ground truth for tests: when it takes effect, on this clock */
		snprintf(extra, sizeof(extra), "\"fault_at_ns\":%llu,\"fault_until_ns\":%llu",
			 (unsigned long long)(t0 + at_ms * 1000000ull),
			 for_ms ? (unsigned long long)(t0 + (at_ms + for_ms) * 1000000ull) : 0ull);
		sim_calllog(NULL, "Fault", 0, 0, 0, -1, -1, -1, -1, 0, ncclSuccess, extra);
	}
	return 0;
}

/* The teardownhang fault: teardown call FN never returns (said on stderr). */
void sim_teardown_fault(const char *fn)
{
	if (!g_f.teardown_hang)
		return;
	fprintf(stderr, "ccld-sim: pid %d: teardownhang: %s never returns\n", (int)getpid(), fn);
	for (;;)
		pause();
}

int sim_net_stalled(uint64_t now)
{
	return g_f.net_stall && now >= g_net_at;
}

double sim_net_factor(uint64_t now)
{
	return g_f.net_slow && now >= g_net_at && now < g_net_until ? g_f.net_factor : 1.0;
}
