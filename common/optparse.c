// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "optparse.h"

int opt_seconds(const char *s, bool zero_ok, double *out)
{
	char *end;
	double v;

	/* strtod also takes "nan", "inf" and 1e300: none is a duration */
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0 || (!zero_ok && v == 0) ||
	    v > OPT_SECONDS_MAX)
		return -1;
	*out = v;
	return 0;
}

int opt_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	unsigned long v;
	char *end;

	/* strtoul takes blanks, a sign and wraps "-1" around: digits only */
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int opt_pids(const char *s, pid_t *pids, int *n, int max)
{
	const char *p = s;

	if (!*s)
		return -1;
	for (;;) {
		size_t len = strcspn(p, ",");
		unsigned long v;
		char tok[16];

		if (len && len < sizeof(tok)) {
			memcpy(tok, p, len);
			tok[len] = '\0';
		}
		if (len && (len >= sizeof(tok) || opt_uint(tok, 1, 0x3fffffff, &v) || *n >= max))
			return -1;
		if (len)
			pids[(*n)++] = (pid_t)v;
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

int opt_replica(const char *s, unsigned *part, unsigned *nparts)
{
	const char *slash = strchr(s, '/');
	unsigned long i, n;
	char tok[16];

	if (!slash || (size_t)(slash - s) >= sizeof(tok))
		return -1;
	memcpy(tok, s, (size_t)(slash - s));
	tok[slash - s] = '\0';
	if (opt_uint(tok, 0, UINT_MAX - 1, &i) || opt_uint(slash + 1, 1, UINT_MAX, &n) || i >= n)
		return -1;
	*part = (unsigned)i;
	*nparts = (unsigned)n;
	return 0;
}

int opt_size(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	unsigned long long v, mul = 1;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end == 'K' || *end == 'k')
		mul = 1ULL << 10;
	else if (*end == 'M' || *end == 'm')
		mul = 1ULL << 20;
	else if (*end == 'G' || *end == 'g')
		mul = 1ULL << 30;
	if (mul > 1)
		end++;
	if (*end || v > max / mul)
		return -1;
	v *= mul;
	if (v < min)
		return -1;
	*out = (unsigned long)v;
	return 0;
}

int opt_pow2_size(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	unsigned long v;

	if (opt_size(s, min, max, &v) || (v & (v - 1)))
		return -1;
	*out = v;
	return 0;
}
