/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Proxy ops -> communicators, live only (replay reads the result from the
 * capture).  NCCL runs one progress thread per proxy state, named by
 * comm->proxyState->progressState.thread; a tier C record carries its
 * thread's pthread_t, so reading that field of each comm the process has
 * (process_vm_readv, DWARF offsets) maps the record to its comm.  The same
 * pointers lead to the comm's active proxy ops: the tier E snapshot.
 */
#ifndef CCLD_PROXYMAP_H
#define CCLD_PROXYMAP_H

#include <stdbool.h>
#include <stdint.h>
#include "ccld.h"
#include "nccl_fns.h"

struct attacher;
struct state;
struct comm_rank;
struct proxymap;

struct proxymap_stats {
	uint64_t mapped;	/* tier C records given a comm */
	uint64_t unmapped;	/* records of a thread no known comm names */
	uint64_t snapshots;	/* tier E snapshots taken */
	uint64_t snapshot_errors; /* process memory unreadable */
	/* records and snapshot subs whose progress function ccld does not know */
	uint64_t no_direction;
	uint64_t by_transport[NCCL_TR_MAX];	/* the others, by transport */
};

struct proxymap *proxymap_new(struct attacher *a, const struct state *st,
			      uint32_t host);
void proxymap_free(struct proxymap *m);

/*
 * Maps a tier C record from BPF to its comm: id.comm becomes the ncclComm
 * address, id.hash/rank/nranks its identity, flags CCLD_F_IDENT and the
 * direction (CCLD_F_PROXY_DIR, CCLD_F_PROXY_RECV).  False: not mapped.
 */
bool proxymap_resolve(struct proxymap *m, struct ccld_event *ev);

/*
 * Tier E: reads CR's active proxy ops from its process and passes one
 * record per sub (fn CCLD_FN_PROXY_SNAPSHOT) to EMIT, or one record with
 * nsnap 0 when none is active.  Returns the number of subs or -errno.
 */
int proxymap_snapshot(struct proxymap *m, const struct comm_rank *cr,
		      uint64_t now_ns,
		      void (*emit)(void *ctx, const struct ccld_event *ev),
		      void *ctx);

/* The process exited: forget its cached pointers. */
void proxymap_forget(struct proxymap *m, uint32_t pid);

const struct proxymap_stats *proxymap_stats(const struct proxymap *m);

/* comm->busId of a comm rank of a traced process (DWARF layout): 0 or -errno. */
int proxymap_comm_bus(struct proxymap *m, const struct comm_rank *cr, uint64_t *bus);

#endif
