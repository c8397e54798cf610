/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Struct layouts of the target NCCL from its DWARF (libdw), in the file or
 * in separate debuginfo: struct ncclComm fields for identity and sequence
 * numbers, struct ncclProxyArgs / ncclProxySubArgs fields for proxy
 * progress.  Results are cached by build-id in $CCLD_CACHE_DIR (default
 * /var/cache/ccld; no cache if not writable).
 */
#ifndef CCLD_DWARF_LAYOUT_H
#define CCLD_DWARF_LAYOUT_H

#include <limits.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include "ccld.h"

/*
 * Userspace-only offsets for the tier E walk and the proxy thread map:
 * comm->proxyState->progressState.{thread,active}, then args->next.
 */
struct proxy_walk_layout {
	__s32 comm_proxy_state;		/* ncclComm.proxyState (a pointer) */
	__s32 state_progress;		/* ncclProxyState.progressState (embedded) */
	__s32 progress_thread;		/* ncclProxyProgressState.thread (pthread_t) */
	__s32 progress_active;		/* ncclProxyProgressState.active */
	__s32 args_next;		/* ncclProxyArgs.next */
};

/*
 * Userspace-only offsets for reading a comm's peer table from memory
 * (attach snapshot): comm->peerInfo[r] of struct ncclPeerInfo.
 */
struct peer_layout {
	__s32 comm_peer_info;		/* ncclComm.peerInfo (a pointer to nRanks entries) */
	__s32 size;			/* sizeof(struct ncclPeerInfo), -1 unknown */
	__s32 host_hash;		/* ncclPeerInfo.hostHash: NCCL's getHostHash() */
	__s32 pid_hash;			/* ncclPeerInfo.pidHash: NCCL's getPidHash() */
	__s32 bus_id;			/* ncclPeerInfo.busId */
	__s32 cuda_dev;			/* ncclPeerInfo.cudaDev */
};

/* where a library's layout came from, in the order attach tries them */
enum layout_source {
	LAYOUT_NONE,		/* none: identity from init arguments only */
	LAYOUT_DWARF,		/* the library's own DWARF */
	LAYOUT_DEBUGINFO,	/* separate debuginfo found by build-id */
	LAYOUT_TABLE,		/* ccld's table for the library's NCCL version */
};

struct nccl_layouts {
	enum layout_source source;
	bool from_cache;	/* DWARF or DEBUGINFO: read from the build-id cache */
	char origin[PATH_MAX];	/* the file read (DEBUGINFO), the version (TABLE) */
	struct ccld_layout comm;
	struct ccld_proxy_layout proxy;
	struct proxy_walk_layout walk;
	struct peer_layout peer;
	long comm_size;		/* sizeof(struct ncclComm), -1 unknown */
};

/*
 * Fills L from PATH's DWARF, else from its separate debuginfo found by
 * BUILD_ID (debuginfo.h; BUILD_ID also keys the cache; may be "").  Fields
 * not found are -1.  Returns 0 (also when there is no DWARF at all:
 * l->source LAYOUT_NONE), -1 on an I/O or libdw error with ERR filled.
 */
int dwarf_layout_read(const char *path, const char *build_id,
		      struct nccl_layouts *l, char *err, size_t errlen);

/* Sets every offset of L to -1 (no layout). */
void dwarf_layout_clear(struct nccl_layouts *l);

/* "dwarf", "debuginfo", "table", "none" */
const char *layout_source_name(enum layout_source s);

/*
 * What follows from the offsets, wherever they came from: the comm magic
 * (both magics present), comm.valid, proxy.valid (subs and the sub size).
 */
void layout_derive(struct nccl_layouts *l);

/*
 * The struct members ccld reads, for tables and the cache: STRUCT_NAME's
 * MEMBER goes to the __s32 at byte OFF of struct nccl_layouts.
 */
struct layout_field {
	const char *struct_name;	/* "ncclComm", "ncclProxyArgs"... */
	const char *member;
	size_t off;
};

extern const struct layout_field layout_fields[];
extern const int layout_fields_n;

/* The offset L holds for F (-1: missing). */
__s32 layout_field_get(const struct nccl_layouts *l,
		       const struct layout_field *f);

#endif
