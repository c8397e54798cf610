/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One communicator as a running process's memory holds it (offsets of its
 * NCCL build): whether a layout fits it, identity, the launched counters and
 * the peer table.
 */
#ifndef CCLD_COMMREAD_H
#define CCLD_COMMREAD_H

#include <linux/types.h>
#include <stdint.h>
#include <sys/types.h>
#include "ccld.h"

struct traced_lib;
struct nccl_layouts;

/* what memory says of a comm pointer under a layout */
enum comm_check {
	COMM_NONE,	/* no live comm there (or unreadable): no verdict */
	COMM_FITS,	/* a live ncclComm laid out as the layout says */
	COMM_MISFIT,	/* NCCL's startMagic is there, the rest does not fit */
};

/*
 * The comm at COMM of PID under L.  With L's magics: startMagic must hold
 * NCCL's magic (else COMM_NONE), then endMagic too and 0 <= rank < nRanks
 * <= 2^20.  WANT_NRANKS > 0 (the comm's init call was seen): rank and
 * nRanks must be WANT_RANK and WANT_NRANKS; a layout without magics is
 * judged only so, and only for a comm of 2 ranks or more.  WHY (COMM_MISFIT)
 * says what did not fit.
 */
enum comm_check commread_check(const struct nccl_layouts *l, pid_t pid, uint64_t comm,
			       int32_t want_rank, int32_t want_nranks, char *why,
			       size_t whylen);

/*
 * Fills EV as a CCLD_EV_COMM_STATE record of the comm at COMM in PID
 * (type, version, pid, id, u.cstate; ts_ns is the caller's): identity
 * (hash, rank, nranks), sum(seqNumber[]) in id.nccl_seq (CCLD_F_SEQ) and
 * per function, collOpCount, opCount, cudaDev, initState (CCLD_CS_INIT_READ).
 * 0, or -errno (-ESTALE: the comm's magic no longer checks out, it was
 * freed meanwhile).
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
