// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Cost of a traced NCCL API call, traced vs untraced, in one process run
 * (uprobe costs vary between runs on VMs: compare within one run).
 * Calls ncclAllReduce with a NULL communicator, which the library rejects
 * at once: what is timed is the call itself plus, when traced, the entry and
 * return probes.  Phase 1 untraced; then it prints "ready" and waits for
 * GOFILE (the tracer attaches meanwhile); phase 2 traced.
 * Usage: bench_calls N GOFILE
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <nccl.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double per_call_ns(long n)
{
	double t0 = now_s();
	long i;

	for (i = 0; i < n; i++)
		ncclAllReduce((void *)0x1000, (void *)0x2000, 1024, ncclFloat32,
			      ncclSum, NULL, NULL);
	return (now_s() - t0) * 1e9 / n;
}

int main(int argc, char **argv)
{
	struct stat st;
	double untraced, traced;
	long n;

	if (argc != 3 || (n = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: %s N GOFILE\n", argv[0]);
		return 2;
	}
	per_call_ns(n / 10);	/* warm up */
	untraced = per_call_ns(n);
	printf("ready pid %d\n", getpid());
	fflush(stdout);
	while (stat(argv[2], &st) != 0)
		usleep(10000);
	traced = per_call_ns(n);
	printf("calls %ld untraced_ns %.1f traced_ns %.1f added_ns %.1f ratio %.2f\n",
	       n, untraced, traced, traced - untraced, traced / untraced);
	return 0;
}
