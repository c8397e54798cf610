// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "attach.h"
#include "commread.h"
#include "procmem.h"

#define NCCL_MAGIC	0x0280028002800280ULL
#define MAX_NRANKS	(1 << 20)

enum comm_check commread_check(const struct nccl_layouts *lay, pid_t pid, uint64_t comm,
			       int32_t want_rank, int32_t want_nranks, char *why,
			       size_t whylen)
{
	const struct ccld_layout *l = &lay->comm;
	bool magics = l->start_magic >= 0 && l->end_magic >= 0;
	int32_t rank = -1, nranks = -1;
	uint64_t m = 0;
	int ret;

	why[0] = '\0';
	if (l->rank < 0 || l->nranks < 0)
		return COMM_NONE;
	if (magics) {
		if (procmem_u64(pid, comm, l->start_magic, &m) || m != NCCL_MAGIC)
			return COMM_NONE;
		/* a comm this layout fits is mapped up to its endMagic */
		ret = procmem_u64(pid, comm, l->end_magic, &m);
		if (ret && ret != -EFAULT)
			return COMM_NONE;	/* gone meanwhile */
		if (ret || m != NCCL_MAGIC) {
			if (ret)
				snprintf(why, whylen, "endMagic at offset %d unreadable (%s)",
					 l->end_magic, strerror(-ret));
			else
				snprintf(why, whylen, "endMagic at offset %d holds %#llx",
					 l->end_magic, (unsigned long long)m);
			return COMM_MISFIT;
		}
	} else if (want_nranks < 2) {
		return COMM_NONE;	/* nothing to judge by */
	}
	if (procmem_s32(pid, comm, l->rank, &rank) || procmem_s32(pid, comm, l->nranks, &nranks)) {
		if (!magics)
			return COMM_NONE;
		snprintf(why, whylen, "rank/nRanks at offsets %d/%d unreadable", l->rank,
			 l->nranks);
		return COMM_MISFIT;
	}
	if (nranks <= 0 || nranks > MAX_NRANKS || rank < 0 || rank >= nranks) {
		snprintf(why, whylen, "rank %d of nRanks %d at offsets %d/%d", rank, nranks,
			 l->rank, l->nranks);
		return COMM_MISFIT;
	}
	if (want_nranks > 0 && (rank != want_rank || nranks != want_nranks)) {
		snprintf(why, whylen, "rank %d of nRanks %d at offsets %d/%d, its init call "
			 "said %d of %d", rank, nranks, l->rank, l->nranks, want_rank,
			 want_nranks);
		return COMM_MISFIT;
	}
	return COMM_FITS;
}

int commread_state(const struct traced_lib *lib, pid_t pid, uint64_t comm, uint8_t source,
		   struct ccld_event *ev)
{
	const struct ccld_layout *l = &lib->layouts.comm;
	struct ccld_comm_state *cs = &ev->u.cstate;
	uint64_t m1 = 0, m2 = 0, sum = 0, seq[CCLD_MAX_SEQ_TYPES], hash = 0, v;
	int32_t cuda_dev = -1, init_state = -1;
	uint32_t i, nseq;
	int ret;

	memset(ev, 0, sizeof(*ev));
	ev->type = CCLD_EV_COMM_STATE;
	ev->version = CCLD_ABI_VERSION;
	ev->pid = ev->tid = (uint32_t)pid;
	ev->id.comm = comm;
	ev->id.rank = ev->id.nranks = -1;
	cs->source = source;
	cs->cuda_dev = -1;
	if ((ret = procmem_u64(pid, comm, l->start_magic, &m1)) ||
	    (ret = procmem_u64(pid, comm, l->end_magic, &m2)))
		return ret;
	if (m1 != NCCL_MAGIC || m2 != NCCL_MAGIC)
		return -ESTALE;
	if ((ret = procmem_u64(pid, comm, l->comm_hash, &hash)) ||
	    (ret = procmem_s32(pid, comm, l->rank, &ev->id.rank)) ||
	    (ret = procmem_s32(pid, comm, l->nranks, &ev->id.nranks)))
		return ret;
	ev->id.hash = hash;
	ev->flags |= CCLD_F_IDENT;
	nseq = l->seq_number >= 0 ? l->seq_number_n : 0;
	if (nseq && !procmem_read(pid, comm + (uint64_t)l->seq_number, seq,
				  nseq * sizeof(seq[0]))) {
		for (i = 0; i < nseq; i++) {
			sum += seq[i];
			if (i < CCLD_SEQ_FNS)
				cs->seq_number[i] = seq[i];
		}
		cs->nseq = (uint8_t)(nseq < CCLD_SEQ_FNS ? nseq : CCLD_SEQ_FNS);
		ev->id.nccl_seq = sum;
		ev->flags |= CCLD_F_SEQ;
	}
	if (!procmem_u64(pid, comm, l->coll_op_count, &v)) {
		cs->coll_op_count = v;
		cs->counts |= CCLD_CS_COLL_OP_COUNT;
	}
	if (!procmem_u64(pid, comm, l->op_count, &v)) {
		cs->op_count = v;
		cs->counts |= CCLD_CS_OP_COUNT;
	}
	if (!procmem_s32(pid, comm, l->cuda_dev, &cuda_dev))
		cs->cuda_dev = cuda_dev;
	/* ncclInProgress from before the bootstrap until the comm is connected */
	if (!procmem_s32(pid, comm, l->init_state, &init_state) && init_state >= 0 &&
	    init_state <= UINT8_MAX) {
		cs->init_state = (uint8_t)init_state;
		cs->counts |= CCLD_CS_INIT_READ;
	}
	return 0;
}

int commread_peers(const struct traced_lib *lib, pid_t pid, uint64_t comm, int32_t nranks,
		   struct comm_peer *out)
{
	const struct peer_layout *pl = &lib->layouts.peer;
	uint64_t table = 0;
	uint8_t *buf;
	int32_t r;
	int ret;

	if (pl->comm_peer_info < 0 || pl->size <= 0 || pl->host_hash < 0 || pl->pid_hash < 0 ||
	    pl->host_hash + 8 > pl->size || pl->pid_hash + 8 > pl->size || nranks <= 0)
		return -ENOTSUP;
	if ((ret = procmem_u64(pid, comm, pl->comm_peer_info, &table)))
		return ret;
	if (!table)
		return -ENOENT;	/* not filled yet: the comm is still initialising */
	buf = malloc((size_t)nranks * (size_t)pl->size);
	if (!buf)
		return -ENOMEM;
	ret = procmem_read(pid, table, buf, (size_t)nranks * (size_t)pl->size);
	for (r = 0; !ret && r < nranks; r++) {
		const uint8_t *e = buf + (size_t)r * (size_t)pl->size;

		memset(&out[r], 0, sizeof(out[r]));
		memcpy(&out[r].host_hash, e + pl->host_hash, 8);
		memcpy(&out[r].pid_hash, e + pl->pid_hash, 8);
		out[r].bus_id = -1;
		out[r].cuda_dev = -1;
		if (pl->bus_id >= 0 && pl->bus_id + 8 <= pl->size)
			memcpy(&out[r].bus_id, e + pl->bus_id, 8);
		if (pl->cuda_dev >= 0 && pl->cuda_dev + 4 <= pl->size)
			memcpy(&out[r].cuda_dev, e + pl->cuda_dev, 4);
	}
	free(buf);
	return ret;
}
