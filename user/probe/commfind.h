/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where a running process keeps its NCCL communicators, read from its
 * memory when ccld attaches: no call has to happen first.  NCCL 2.24+
 * keeps every live comm in the global array ncclComms[nNcclComms] (RAS,
 * src/ras/ras.cc; filled while RAS is enabled, the default); older builds
 * and NCCL_RAS_ENABLE=0 leave it empty or without it, and the comms are
 * found by a bounded scan of the process's writable private memory for
 * ncclComm's startMagic and endMagic at the library's layout offsets.
 */
#ifndef CCLD_COMMFIND_H
#define CCLD_COMMFIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct traced_lib;
struct nccl_layouts;

struct comm_addr {
	uint64_t addr;		/* the ncclComm in the process */
	uint8_t source;		/* enum ccld_comm_src: ARRAY or SCAN */
};

/* what the search saw and what the memory scan cost (when it ran) */
struct commfind_stats {
	bool scanned;		/* the array gave nothing: memory was scanned */
	bool cut;		/* the scan stopped at its byte or time budget */
	uint64_t bytes;		/* bytes read by the scan */
	double seconds;
	size_t misfits;		/* NCCL's startMagic where the layout did not fit */
	char misfit[160];	/* what did not fit, for the first one */
};

/*
 * The comms of PID's NCCL library LIB into *OUT (malloc'ed, *N entries),
 * each checked under layout L (commread_check: its magics, rank and size).
 * L is LIB's layout in use, or a table entry to be confirmed.  Returns 0
 * (also with none found), or -errno with ERR filled (no such process,
 * memory unreadable, no layout to recognise a comm by).
 */
int commfind(const struct traced_lib *lib, const struct nccl_layouts *l, pid_t pid,
	     struct comm_addr **out, size_t *n, struct commfind_stats *st, char *err,
	     size_t errlen);

/*
 * The scan on its own (tests, and the fallback above): at most MAX_BYTES
 * of writable private mappings, each at most 4 GiB, within MAX_S seconds.
 */
int commfind_scan(const struct traced_lib *lib, const struct nccl_layouts *l, pid_t pid,
		  uint64_t max_bytes, double max_s, struct comm_addr **out, size_t *n,
		  struct commfind_stats *st, char *err, size_t errlen);

#endif
