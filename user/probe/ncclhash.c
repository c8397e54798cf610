// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ncclhash.h"

#define PID_MAX_DEFAULT	4194304	/* when /proc/sys/kernel/pid_max is unreadable */

static void eat_hash(uint64_t acc[2], const void *bytes, size_t size)
{
	const char *ptr = bytes;

	acc[0] ^= size;
	while (size != 0) {
		size_t chunk = size < sizeof(uint64_t) ? size : sizeof(uint64_t);
		uint64_t x = 0;

		acc[0] += acc[1];
		acc[1] ^= acc[0];
		acc[0] ^= acc[0] >> 31;
		acc[0] *= 0x9de62bbc8cef3ce3ull;
		acc[1] ^= acc[1] >> 32;
		acc[1] *= 0x485cd6311b599e79ull;
		memcpy(&x, ptr, chunk);
		ptr += chunk;
		size -= chunk;
		acc[0] += x;
	}
}

static uint64_t digest_hash(const uint64_t acc[2])
{
	uint64_t h = acc[0];

	h ^= h >> 31;
	h *= 0xbac3bd562846de6bull;
	h += acc[1];
	h ^= h >> 32;
	h *= 0x995a187a14e7b445ull;
	return h;
}

uint64_t nccl_get_hash(const void *bytes, size_t size)
{
	uint64_t acc[2] = { 1, 1 };

	eat_hash(acc, bytes, size);
	return digest_hash(acc);
}

uint64_t nccl_pid_hash(long pid, const char *ns_link)
{
	char s[1024];
	int n = snprintf(s, sizeof(s), "%ld%s", pid, ns_link);

	return nccl_get_hash(s, n > 0 && (size_t)n < sizeof(s) ? (size_t)n : strlen(s));
}

static long pid_max(void)
{
	FILE *f = fopen("/proc/sys/kernel/pid_max", "re");
	long v = 0;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v > 0 && v <= PID_MAX_DEFAULT ? v : PID_MAX_DEFAULT;
}

long nccl_pid_of_hash(uint64_t hash, const char *ns_link, const long *candidates, size_t n)
{
	size_t i, ln = strlen(ns_link);
	char s[1024];
	long pid, max;

	for (i = 0; i < n; i++)
		if (nccl_pid_hash(candidates[i], ns_link) == hash)
			return candidates[i];
	if (ln > sizeof(s) - 16)
		return 0;
	/* ~0.1 us a pid: under half a second for the largest pid_max */
	max = pid_max();
	for (pid = 1; pid < max; pid++) {
		int d = snprintf(s, sizeof(s), "%ld", pid);

		memcpy(s + d, ns_link, ln);
		if (nccl_get_hash(s, (size_t)d + ln) == hash)
			return pid;
	}
	return 0;
}
