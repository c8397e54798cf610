/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One communicator as a running process's memory holds it (DWARF offsets of
 * its NCCL build): identity, the launched counters and the peer table.
 */
#ifndef CCLD_COMMREAD_H
#define CCLD_COMMREAD_H

#include <linux/types.h>
#include <stdint.h>
#include <sys/types.h>
#include "ccld.h"

struct traced_lib;

/*
 * Fills EV as a CCLD_EV_COMM_STATE record of the comm at COMM in PID
 * (type, version, pid, id, u.cstate; ts_ns is the caller's): identity
 * (hash, rank, nranks), sum(seqNumber[]) in id.nccl_seq (CCLD_F_SEQ) and
 * per function, collOpCount, opCount, cudaDev.  0, or -errno (-ESTALE: the
 * comm's magic no longer checks out, it was freed meanwhile).
 */
int commread_state(const struct traced_lib *lib, pid_t pid, uint64_t comm, uint8_t source,
		   struct ccld_event *ev);

/* one rank of a comm's peer table (comm->peerInfo[r]) */
struct comm_peer {
	uint64_t host_hash;	/* NCCL's getHostHash() of the rank's process */
	uint64_t pid_hash;	/* NCCL's getPidHash() */
	int64_t bus_id;
	int32_t cuda_dev;
};

/* comm->peerInfo[0..NRANKS-1] into OUT: 0, or -errno (-ENOTSUP: no layout) */
int commread_peers(const struct traced_lib *lib, pid_t pid, uint64_t comm, int32_t nranks,
		   struct comm_peer *out);

#endif
