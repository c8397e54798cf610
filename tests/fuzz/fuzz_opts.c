// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the option value parsers (common/optparse.c) of
 * ccld-trace and ccld-analyzer: durations, counts, PID lists, I/N.  The
 * first byte picks the parser, the rest is the value.  An accepted
 * duration must convert to nanoseconds as the tracer and analyzer do
 * (UBSan checks the conversion); accepted numbers must be in range and
 * spelled with digits only.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "optparse.h"

#define check(c) do { if (!(c)) __builtin_trap(); } while (0)

static void seconds(const char *s, bool zero_ok)
{
	volatile uint64_t ns;
	double v;

	if (opt_seconds(s, zero_ok, &v))
		return;
	check(isfinite(v) && v >= 0 && (zero_ok || v > 0) && v <= OPT_SECONDS_MAX);
	ns = (uint64_t)(v * 1e9);
	(void)ns;
}

static void number(const char *s)
{
	unsigned long v;

	if (opt_uint(s, 1, 4096, &v))
		return;
	check(v >= 1 && v <= 4096 && strspn(s, "0123456789") == strlen(s));
}

static void pids(const char *s)
{
	pid_t p[8];
	int n = 0, i;

	if (opt_pids(s, p, &n, 8))
		return;
	check(n >= 0 && n <= 8);
	for (i = 0; i < n; i++)
		check(p[i] >= 1 && p[i] <= 0x3fffffff);
}

static void replica(const char *s)
{
	unsigned i, n;
	char back[32];

	if (opt_replica(s, &i, &n))
		return;
	check(i < n);
	snprintf(back, sizeof(back), "%u/%u", i, n);
	check(strspn(s, "0123456789/") == strlen(s));
}

static void pow2_size(const char *s)
{
	unsigned long v;

	if (opt_pow2_size(s, OPT_RING_MIN, OPT_RING_MAX, &v))
		return;
	check(v >= OPT_RING_MIN && v <= OPT_RING_MAX && !(v & (v - 1)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (!size)
		return 0;
	s = strndup((const char *)data + 1, size - 1);
	if (!s)
		return 0;
	switch (data[0] % 6) {
	case 0:
		seconds(s, true);
		break;
	case 1:
		seconds(s, false);
		break;
	case 2:
		number(s);
		break;
	case 3:
		pids(s);
		break;
	case 4:
		replica(s);
		break;
	default:
		pow2_size(s);
		break;
	}
	free(s);
	return 0;
}
