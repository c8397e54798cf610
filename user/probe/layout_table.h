/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Struct layouts of NCCL releases for a library without DWARF, keyed by
 * the version string in the library.  The table (nccl_layout_table.c) is
 * generated from NCCL's headers at each release tag by
 * tools/gen-layout-table.sh.  A build may differ from the release's
 * headers (other flags, a patched NCCL): an entry is only a candidate
 * until a live communicator confirms it (commread_check(), attach.h).
 */
#ifndef CCLD_LAYOUT_TABLE_H
#define CCLD_LAYOUT_TABLE_H

#include <linux/types.h>
#include "dwarf_layout.h"

struct layout_table_entry {
	const char *version;		/* "2.28.9" */
	long comm_size;			/* sizeof(struct ncclComm) */
	__s32 sub_size;			/* sizeof(struct ncclProxySubArgs) */
	__s32 peer_size;		/* sizeof(struct ncclPeerInfo) */
	__u32 seq_number_n;		/* elements of ncclComm.seqNumber[] */
	const __s32 *off;		/* per layout_table_fields[], -1: no such member */
};

/* "ncclComm.startMagic"...: the members the table was generated for */
extern const char *const layout_table_fields[];
extern const int layout_table_nfields;
extern const struct layout_table_entry layout_table[];
extern const int layout_table_n;

/* The entry of NCCL VERSION ("2.28.9", as the library says it), or NULL. */
const struct layout_table_entry *layout_table_find(const char *version);

/*
 * L from E (source LAYOUT_TABLE): every member of layout_fields[] the
 * table has, the sizes, and what is derived from them as from DWARF.
 */
void layout_table_fill(const struct layout_table_entry *e, struct nccl_layouts *l);

#endif
