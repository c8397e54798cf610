/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * NCCL's warnings, put back together from their CCLD_EV_NCCL_WARN parts
 * (ccld.h): the file and line of the WARN, its format and the message
 * NCCL formatted into ncclLastError.  A message that does not fit its
 * format is not this WARN's (NCCL's NOWARN leaves the buffer as it was):
 * dropped and counted.
 */
#ifndef CCLD_NCCLWARN_H
#define CCLD_NCCLWARN_H

#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>
#include "ccld.h"

#define NCCL_WARN_MSG_MAX	(CCLD_WARN_MSG_PARTS * CCLD_WARN_CHUNK + 1)
#define WARN_ASM_SLOTS		32	/* threads with a warning half sent */

struct nccl_warning {
	uint32_t host, pid, tid;
	uint64_t ts_ns;		/* its last part's */
	uint32_t line;
	char file[CCLD_WARN_CHUNK + 1];	/* the source file's last bytes */
	char fmt[CCLD_WARN_CHUNK + 1];	/* the format's first bytes */
	char msg[NCCL_WARN_MSG_MAX];
	bool truncated;		/* as long as BPF reads: it may go on */
};

struct warn_asm {
	struct warn_slot {
		bool used;
		bool broken;	/* a part is missing: dropped at its end (counted) */
		uint8_t nparts, next;
		uint64_t age;	/* for reuse: the oldest goes first */
		struct nccl_warning w;
	} slot[WARN_ASM_SLOTS];
	uint64_t clock;
	uint64_t incomplete;	/* warnings missing a part (lost, or cut short) */
	uint64_t not_this_warn;	/* messages that do not fit their format */
};

enum warn_feed {
	WARN_MORE,		/* a part taken, more to come */
	WARN_DONE,		/* *OUT holds a whole warning */
	WARN_DROPPED,		/* a warning that is not one (counted in A) */
};

/* Takes one CCLD_EV_NCCL_WARN record of HOST. */
enum warn_feed warn_asm_feed(struct warn_asm *a, uint32_t host, const struct ccld_event *ev,
			     struct nccl_warning *out);

/*
 * True when MSG can be what printf made of FMT.  FMT may be cut short
 * (FMT_CUT: its first bytes only) and so may MSG (MSG_CUT).
 */
bool warn_fits_format(const char *fmt, bool fmt_cut, const char *msg, bool msg_cut);

#endif
