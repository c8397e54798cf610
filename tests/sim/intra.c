// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The intra-node transports of the NCCL stand-in (NCCL's P2P and SHM): a
 * peer on the same host (same hostHash) is reached through memory the GPU
 * reads and writes itself.  Like NCCL's, these connections have no proxy
 * progress: the kernel moves the steps (same slot protocol as the network
 * path in proxy.c), no profiler proxy hook is called and nothing of them is
 * in the proxy thread's active ops.  A network fault does not touch them.
 * NCCL_P2P_DISABLE=1 with NCCL_SHM_DISABLE=1 sends same-host peers over the
 * network, as in NCCL.
 */
#include <stdlib.h>
#include <string.h>
#include "sim.h"

static int env_on(const char *name)
{
	const char *v = getenv(name);

	return v && atoi(v) == 1;
}

int sim_intra_peer(const struct ncclComm *comm, int peer)
{
	static int forced_net = -1;

	if (forced_net < 0)
		forced_net = env_on("NCCL_P2P_DISABLE") && env_on("NCCL_SHM_DISABLE");
	return !forced_net && comm->peerInfo && peer != comm->rank &&
	       comm->peerInfo[peer].hostHash == comm->peerInfo[comm->rank].hostHash;
}

static size_t chunk_len(const struct sim_op *op, int k)
{
	size_t off = (size_t)k * SIM_STEP_BYTES;

	if (off >= op->mbytes)
		return 0;
	return op->mbytes - off < SIM_STEP_BYTES ? op->mbytes - off : SIM_STEP_BYTES;
}

static int send_sub(struct ncclProxyArgs *args, struct ncclProxySubArgs *sub)
{
	struct sim_slot *slot;
	uint64_t t;
	int k;

	if (sub->done == (uint64_t)sub->nsteps)
		return 0;
	if (sub->posted < (uint64_t)sub->nsteps && sub->posted < sub->done + NCCL_STEPS) {
		__atomic_store_n(&sub->posted, sub->posted + 1, __ATOMIC_RELEASE);
		return 1;
	}
	if (sub->transmitted >= sub->posted ||
	    sub->transmitted >= __atomic_load_n(&sub->gpuStep, __ATOMIC_ACQUIRE))
		return 0;
	t = sub->base + sub->transmitted;
	slot = &sub->connection->slot[t % NCCL_STEPS];
	if (__atomic_load_n(&slot->posted, __ATOMIC_ACQUIRE) != t + 1)
		return 0;
	k = (int)sub->transmitted * args->nChannels + sub->channelId;
	memcpy(sub->connection->data[t % NCCL_STEPS], sub->buff + (size_t)k * SIM_STEP_BYTES,
	       chunk_len(args->op, k));
	slot->size = (uint32_t)chunk_len(args->op, k);
	slot->sig = args->sig;
	__atomic_store_n(&slot->delivered, t + 1, __ATOMIC_RELEASE);
	sim_bell_ring(sub->peerBell);
	__atomic_store_n(&sub->transmitted, sub->transmitted + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&sub->done, sub->done + 1, __ATOMIC_RELEASE);
	return 1;
}

static int recv_sub(struct ncclProxyArgs *args, struct ncclProxySubArgs *sub)
{
	struct sim_conn *conn = sub->connection;
	struct sim_slot *slot;
	int moved = 0;
	uint64_t t;

	if (sub->done == (uint64_t)sub->nsteps)
		return 0;
	if (sub->posted < (uint64_t)sub->nsteps && sub->posted < sub->done + NCCL_STEPS) {
		sub->posted++;
		moved = 1;
	}
	while ((uint64_t)sub->credited < sub->posted) {
		t = sub->base + sub->credited;
		slot = &conn->slot[t % NCCL_STEPS];
		if (__atomic_load_n(&slot->consumed, __ATOMIC_ACQUIRE) !=
		    (t >= NCCL_STEPS ? t - NCCL_STEPS + 1 : 0))
			break;
		__atomic_store_n(&slot->posted, t + 1, __ATOMIC_RELEASE);
		sub->credited++;
		sim_bell_ring(sub->peerBell);
		moved = 1;
	}
	if (sub->received < (uint64_t)sub->credited) {
		t = sub->base + sub->received;
		slot = &conn->slot[t % NCCL_STEPS];
		/* a mismatched op's data never matches: stuck, as NCCL hangs */
		if (__atomic_load_n(&slot->delivered, __ATOMIC_ACQUIRE) == t + 1 &&
		    slot->sig == args->sig) {
			sub->received++;
			sub->flushed++;
			__atomic_store_n(&sub->transmitted, sub->transmitted + 1, __ATOMIC_RELEASE);
			moved = 1;
		}
	}
	if (sub->done < sub->transmitted &&
	    sub->done < __atomic_load_n(&sub->gpuStep, __ATOMIC_ACQUIRE)) {
		t = sub->base + sub->done;
		__atomic_store_n(&conn->slot[t % NCCL_STEPS].consumed, t + 1, __ATOMIC_RELEASE);
		sim_bell_ring(sub->peerBell);
		__atomic_store_n(&sub->done, sub->done + 1, __ATOMIC_RELEASE);
		moved = 1;
	}
	return moved;
}

/* Moves ARGS (an intra-node connection's steps) as far as it can now. */
int sim_intra_progress(struct ncclProxyArgs *args)
{
	int s, moved = 0;

	for (s = 0; s < args->nsubs; s++)
		moved |= args->simIsRecv ? recv_sub(args, &args->subs[s]) :
					   send_sub(args, &args->subs[s]);
	return moved;
}
