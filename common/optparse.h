/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The values of command-line options, for ccld-trace and ccld-analyzer
 * alike: strict (no sign, blank or junk where the option takes digits),
 * bounded, and each returns 0 or -1 leaving *OUT untouched on -1.
 */
#ifndef CCLD_OPTPARSE_H
#define CCLD_OPTPARSE_H

#include <stdbool.h>
#include <sys/types.h>

#define OPT_SECONDS_MAX	1e9	/* ~31 years: any duration, in ns, fits a u64 */

/* SEC: a finite number of seconds, > 0 (>= 0 when ZERO_OK), at most OPT_SECONDS_MAX */
int opt_seconds(const char *s, bool zero_ok, double *out);

/* N: decimal digits only, MIN..MAX */
int opt_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out);

/* PID[,PID..]: each 1..0x3fffffff, appended to PIDS[*N..MAX-1] (on -1 some
 * may have been) */
int opt_pids(const char *s, pid_t *pids, int *n, int max);

/* I/N with 0 <= I < N (a replica among N) */
int opt_replica(const char *s, unsigned *part, unsigned *nparts);

/* the main ring buffer's bounds: a page, the kernel's smallest ring; 1 GiB */
#define OPT_RING_MIN	4096UL
#define OPT_RING_MAX	(1UL << 30)

/* BYTES: digits with an optional K, M or G (x1024^n), MIN..MAX */
int opt_size(const char *s, unsigned long min, unsigned long max, unsigned long *out);

/* the same, a power of two */
int opt_pow2_size(const char *s, unsigned long min, unsigned long max, unsigned long *out);

#endif
