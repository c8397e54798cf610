// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Ground-truth call log for tests: with CCLD_SIM_CALLLOG=DIR every API call
 * appends one JSON line to DIR/calls.<pid>.jsonl at its return, with the
 * fields of ccld's "call" records (docs/cli.md) and "t_ns", the
 * return's CLOCK_MONOTONIC time.  A call that blocks
 * for more than 2 s (init or split waiting for peers) is logged while it
 * waits, with "ret":null, and not again.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "sim.h"

static const char *const dtype_names[ncclNumTypes] = {
	"int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32",
	"float64", "bfloat16", "fp8e4m3", "fp8e5m2",
};
static const char *const redop_names[ncclNumOps] = { "sum", "prod", "max", "min", "avg" };

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_fd = -1;
static pid_t g_pid;

static int log_fd(void)
{
	const char *dir = getenv("CCLD_SIM_CALLLOG");
	char path[4096];

	if (!dir || !*dir)
		return -1;
	if (g_fd >= 0 && g_pid == getpid())
		return g_fd;
	if (g_fd >= 0)
		close(g_fd);	/* inherited over fork */
	g_pid = getpid();
	snprintf(path, sizeof(path), "%s/calls.%d.jsonl", dir, (int)g_pid);
	g_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (g_fd < 0)
		fprintf(stderr, "ccld-sim: cannot open call log %s: %m\n", path);
	return g_fd;
}

#define NUM_OR_NULL(buf, cond, fmt, v) \
	((cond) ? (snprintf(buf, sizeof(buf), fmt, v), buf) : "null")

void sim_calllog(const struct ncclComm *comm, const char *op, int is_coll, uint64_t seq,
		 size_t count, int dtype, int redop, int root, int peer, int has_ret,
		 ncclResult_t ret, const char *extra)
{
	char line[1024], c[32], r[16], n[16], s[32], cnt[32], dt[24], ro[16], rt[16], pe[16], rc[16];
	int fd, len;

	pthread_mutex_lock(&g_mu);
	fd = log_fd();
	if (fd < 0) {
		pthread_mutex_unlock(&g_mu);
		return;
	}
	len = snprintf(line, sizeof(line),
		       "{\"pid\":%d,\"tid\":%ld,\"comm\":%s,\"rank\":%s,\"nranks\":%s,\"seq\":%s,"
		       "\"op\":\"%s\",\"count\":%s,\"dtype\":%s,\"redop\":%s,\"root\":%s,"
		       "\"peer\":%s,\"ret\":%s,\"t_ns\":%llu%s%s}\n",
		       (int)getpid(), (long)syscall(SYS_gettid),
		       comm ? (snprintf(c, sizeof(c), "\"%016llx\"",
					(unsigned long long)comm->commHash), c) : "null",
		       NUM_OR_NULL(r, comm, "%d", comm ? comm->rank : 0),
		       NUM_OR_NULL(n, comm, "%d", comm ? comm->nRanks : 0),
		       NUM_OR_NULL(s, is_coll, "%llu", (unsigned long long)seq),
		       op,
		       NUM_OR_NULL(cnt, dtype >= 0, "%zu", count),
		       dtype >= 0 && dtype < ncclNumTypes ?
		       (snprintf(dt, sizeof(dt), "\"%s\"", dtype_names[dtype]), dt) : "null",
		       redop >= 0 && redop < ncclNumOps ?
		       (snprintf(ro, sizeof(ro), "\"%s\"", redop_names[redop]), ro) : "null",
		       NUM_OR_NULL(rt, root >= 0, "%d", root),
		       NUM_OR_NULL(pe, peer >= 0, "%d", peer),
		       NUM_OR_NULL(rc, has_ret, "%d", (int)ret),
		       (unsigned long long)sim_now_ns(),
		       extra ? "," : "", extra ? extra : "");
	if (len > 0 && write(fd, line, (size_t)len) != len)
		fprintf(stderr, "ccld-sim: short write to the call log: %m\n");
	pthread_mutex_unlock(&g_mu);
}
