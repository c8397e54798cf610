// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Ops and simulated kernels of the NCCL stand-in.  A launch (ncclGroupEnd,
 * or the end of an ungrouped call) turns each task into a sim_op with one
 * proxy sub per (channel, peer) and direction, hands the proxy args to the
 * proxy thread, and queues one kernel per stream on libcudart.  The kernel,
 * like NCCL's, produces send data into posted buffers and consumes received
 * steps (reducing them in rank order, so every rank gets bit-identical
 * results); it finishes when every chunk has been produced and consumed.
 *
 * A message (what one rank sends one peer) is cut into SIM_STEP_BYTES
 * chunks; chunk k travels on channel k % nch as that channel's step k / nch.
 */
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include "sim.h"
#include "sim_cudart.h"

struct sim_plan {
	struct sim_op *ops;
};

static int imin(int a, int b)
{
	return a < b ? a : b;
}

static size_t chunk_len(const struct sim_op *op, int k)
{
	size_t off = (size_t)k * SIM_STEP_BYTES;

	if (off >= op->mbytes)
		return 0;
	return op->mbytes - off < SIM_STEP_BYTES ? op->mbytes - off : SIM_STEP_BYTES;
}

/* what the op's data is, so that mismatched ops never exchange data */
static uint64_t op_sig(int func, size_t count, int dtype, int redop, int root)
{
	uint64_t h = 1469598103934665603ull, v[5] = { (uint64_t)func, count, (uint64_t)dtype,
						      (uint64_t)redop, (uint64_t)root };
	int i;

	for (i = 0; i < 5; i++) {
		h ^= v[i];
		h *= 1099511628211ull;
	}
	return h;
}

static int sends_to(const struct sim_op *op, int me, int p)
{
	if (p == me)
		return 0;
	switch (op->func) {
	case ncclFuncBroadcast: return me == op->root;
	case ncclFuncReduce: return p == op->root;
	case ncclFuncSend: return p == op->root;
	case ncclFuncRecv: return 0;
	default: return 1;
	}
}

static int recvs_from(const struct sim_op *op, int me, int p)
{
	if (p == me)
		return 0;
	switch (op->func) {
	case ncclFuncBroadcast: return p == op->root;
	case ncclFuncReduce: return me == op->root;
	case ncclFuncSend: return 0;
	case ncclFuncRecv: return p == op->root;
	default: return 1;
	}
}

/*
 * args->redOp holds NCCL's device reduction (ncclDevRedOp_t), as in
 * enqueue.cc: sum 0, prod 1, max and min both MinMax 2, avg PreMulSum 3 on
 * floating types and SumPostDiv 4 on integers.
 */
static uint8_t dev_redop(int redop, int dtype)
{
	switch (redop) {
	case ncclProd:
		return 1;
	case ncclMax:
	case ncclMin:
		return 2;
	case ncclAvg:
		return dtype >= ncclFloat16 ? 3 : 4;
	default:
		return 0;
	}
}

static struct ncclProxyArgs *args_new(struct sim_op *op, struct ncclComm *comm, int is_recv)
{
	struct ncclProxyArgs *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->simGeneration = comm->opCount;
	a->op = op;
	a->comm = comm;
	a->sliceSteps = 1;
	a->chunkSteps = 1;
	a->chunkSize = SIM_STEP_BYTES;
	a->dtype = (uint8_t)op->dtype;
	a->redOp = dev_redop(op->redop, op->dtype);
	a->coll = (uint8_t)op->func;
	a->collAPI = (uint8_t)op->api;
	a->protocol = 2;	/* NCCL_PROTO_SIMPLE */
	a->algorithm = 1;	/* NCCL_ALGO_RING */
	a->state = ncclProxyOpReady;
	a->nChannels = op->nch;
	a->simIsRecv = is_recv;
	a->sig = op->sig;
	op->args[op->nargs++] = a;
	return a;
}

/* Adds the sub (channel C, peer P, direction) to OP's current args. */
static int add_sub(struct sim_op *op, struct ncclProxyArgs **cur, int is_recv, int c, int p)
{
	struct ncclComm *comm = op->comm;
	int kind = (op->func == ncclFuncSend || op->func == ncclFuncRecv) ? SIM_CONN_P2P : SIM_CONN_COLL;
	size_t idx = ((size_t)kind * SIM_MAX_CHANNELS + c) * comm->nRanks + p;
	struct ncclProxySubArgs *sub;
	int k, intra = sim_intra_peer(comm, p);

	/*
	 * p2p ids are per channel: one args per channel, as NCCL's ProxyAppend;
	 * intra-node subs never reach the proxy: args of their own
	 */
	if (!*cur || (*cur)->nsubs == NCCL_PROXY_MAX_SUBS || (*cur)->simIntra != intra ||
	    (kind == SIM_CONN_P2P && (*cur)->subs[0].channelId != c)) {
		*cur = args_new(op, comm, is_recv);
		if (!*cur)
			return -1;
		(*cur)->simIntra = intra;
	}
	sub = &(*cur)->subs[(*cur)->nsubs++];
	sub->rank = comm->rank;
	sub->pid = getpid();
	sub->channelId = c;
	sub->peer = p;
	sub->nsteps = (op->nchunks - c + op->nch - 1) / op->nch;
	for (k = c; k < op->nchunks; k += op->nch)
		sub->nbytes += chunk_len(op, k);
	/* an intra-node step wakes the peer's kernels, a network one its proxy */
	sub->peerBell = intra ? comm->peerKbells[p] : comm->peerBells[p];
	sub->simKind = kind;
	if (is_recv) {
		sub->connection = sim_conn(comm, kind, c, p, comm->rank);
		sub->base = comm->recvStep[idx];
		comm->recvStep[idx] += sub->nsteps;
		op->rsub[c * comm->nRanks + p] = sub;
	} else {
		sub->connection = sim_conn(comm, kind, c, comm->rank, p);
		sub->base = comm->sendStep[idx];
		comm->sendStep[idx] += sub->nsteps;
		sub->buff = (uint8_t *)op->sendbuff +
			    (op->func == ncclFuncReduceScatter ? (size_t)p * op->mbytes : 0);
		op->ssub[c * comm->nRanks + p] = sub;
	}
	return 0;
}

static void op_free(struct sim_op *op)
{
	int i;

	for (i = 0; i < op->nargs; i++)
		free(op->args[i]);
	free(op->ssub);
	free(op->rsub);
	free(op);
}

/* Builds an op; assigns its connection steps (in call order, per peer). */
struct sim_op *sim_op_new(struct ncclComm *comm, int func, const void *sendbuff,
			  void *recvbuff, size_t count, int dtype, int redop, int root)
{
	struct sim_op *op = calloc(1, sizeof(*op));
	struct ncclProxyArgs *cur_s = NULL, *cur_r = NULL;
	int n = comm->nRanks, me = comm->rank, c, p;

	if (!op)
		return NULL;
	op->comm = comm;
	op->func = func;
	op->api = func;
	op->sendbuff = sendbuff;
	op->recvbuff = recvbuff;
	op->count = count;
	op->dtype = dtype;
	op->redop = redop;
	op->root = root;
	op->esize = sim_dtype_size(dtype);
	op->mbytes = count * op->esize;
	op->nchunks = op->mbytes ? (int)((op->mbytes + SIM_STEP_BYTES - 1) / SIM_STEP_BYTES) : 1;
	op->nch = imin(comm->nChannels, op->nchunks);
	/* send and recv of one p2p pair must agree: one signature for both */
	op->sig = (func == ncclFuncSend || func == ncclFuncRecv) ?
		  op_sig(ncclFuncSendRecv, count, dtype, -1, -1) :
		  op_sig(func, count, dtype, redop, root);
	op->ssub = calloc((size_t)SIM_MAX_CHANNELS * n, sizeof(*op->ssub));
	op->rsub = calloc((size_t)SIM_MAX_CHANNELS * n, sizeof(*op->rsub));
	if (!op->ssub || !op->rsub)
		goto fail;
	for (c = 0; c < op->nch; c++)
		for (p = 0; p < n; p++)
			if (sends_to(op, me, p) && add_sub(op, &cur_s, 0, c, p))
				goto fail;
	for (c = 0; c < op->nch; c++)
		for (p = 0; p < n; p++)
			if (recvs_from(op, me, p) && add_sub(op, &cur_r, 1, c, p))
				goto fail;
	op->refs = 1;
	for (c = 0; c < op->nargs; c++)
		op->refs += !op->args[c]->simIntra;	/* the proxy's references */
	return op;
fail:
	op_free(op);
	return NULL;
}

void sim_op_unref(struct sim_op *op)
{
	struct ncclComm *comm = op->comm;

	if (__atomic_sub_fetch(&op->refs, 1, __ATOMIC_ACQ_REL))
		return;
	op_free(op);
	__atomic_sub_fetch(&comm->inflight, 1, __ATOMIC_SEQ_CST);
	sim_futex_wake(&comm->inflight);
}

/* data of peer P's chunk k as this rank sees it (own: from user memory) */
static const uint8_t *src_of(const struct sim_op *op, int p, int k, const uint8_t *own)
{
	const struct ncclProxySubArgs *sub;
	int c = k % op->nch, s = k / op->nch;

	if (p == op->comm->rank)
		return own;
	sub = op->rsub[c * op->comm->nRanks + p];
	return sub->connection->data[(sub->base + s) % NCCL_STEPS];
}

static void reduce_chunk(const struct sim_op *op, int k, const uint8_t *own, uint8_t *dst)
{
	static __thread uint8_t tmp[SIM_STEP_BYTES];
	size_t len = chunk_len(op, k), n = len / op->esize;
	int p, nr = op->comm->nRanks;

	/* rank order: bit-identical results on every rank */
	memcpy(tmp, src_of(op, 0, k, own), len);
	for (p = 1; p < nr; p++)
		sim_reduce(tmp, src_of(op, p, k, own), n, op->dtype, op->redop);
	if (op->redop == ncclAvg)
		sim_avg_finish(tmp, n, op->dtype, nr);
	memcpy(dst, tmp, len);
}

static void consume(const struct sim_op *op, int k)
{
	size_t off = (size_t)k * SIM_STEP_BYTES, len = chunk_len(op, k);
	int me = op->comm->rank, p;

	if (!len)
		return;
	switch (op->func) {
	case ncclFuncAllReduce:
		reduce_chunk(op, k, op->sendbuff + off, op->recvbuff + off);
		break;
	case ncclFuncReduce:
		if (me == op->root)
			reduce_chunk(op, k, op->sendbuff + off, op->recvbuff + off);
		break;
	case ncclFuncReduceScatter:
		reduce_chunk(op, k, op->sendbuff + (size_t)me * op->mbytes + off, op->recvbuff + off);
		break;
	case ncclFuncBroadcast:
		memmove(op->recvbuff + off, src_of(op, op->root, k, op->sendbuff + off), len);
		break;
	case ncclFuncAllGather:
		for (p = 0; p < op->comm->nRanks; p++)
			memmove(op->recvbuff + (size_t)p * op->mbytes + off,
				src_of(op, p, k, op->sendbuff + off), len);
		break;
	case ncclFuncRecv:
		if (op->root == me) {	/* from itself: the paired send's buffer */
			if (off < op->self_bytes)
				memcpy(op->recvbuff + off, op->self_src + off,
				       op->self_bytes - off < len ? op->self_bytes - off : len);
			break;
		}
		memcpy(op->recvbuff + off, src_of(op, op->root, k, NULL), len);
		break;
	}
}

/* every sub of OP on chunk K's channel satisfies FIELD > step */
static int chunk_ready(struct ncclProxySubArgs **subs, const struct sim_op *op, int k,
		       size_t field_off)
{
	int c = k % op->nch, s = k / op->nch, n = op->comm->nRanks, p;

	for (p = 0; p < n; p++) {
		struct ncclProxySubArgs *sub = subs[c * n + p];

		if (sub && __atomic_load_n((uint64_t *)((char *)sub + field_off), __ATOMIC_ACQUIRE) <=
			   (uint64_t)s)
			return 0;
	}
	return 1;
}

static void chunk_mark(struct ncclProxySubArgs **subs, const struct sim_op *op, int k)
{
	int c = k % op->nch, s = k / op->nch, n = op->comm->nRanks, p;

	for (p = 0; p < n; p++)
		if (subs[c * n + p])
			__atomic_store_n(&subs[c * n + p]->gpuStep, (uint64_t)s + 1, __ATOMIC_RELEASE);
}

/* Advances OP as far as it can without waiting; returns whether it moved. */
static int op_step(struct sim_op *op)
{
	int moved = 0, i;

	if (__atomic_load_n(&op->comm->abortFlag, __ATOMIC_ACQUIRE)) {
		op->prodK = op->consK = op->nchunks;
		return 1;
	}
	if (op->self_unpaired)
		return 0;	/* NCCL's kernel waits for the other half */
	for (i = 0; i < op->nargs; i++)
		if (op->args[i]->simIntra)
			moved |= sim_intra_progress(op->args[i]);
	/* produce: write into buffers the proxy posted */
	while (op->prodK < op->nchunks &&
	       chunk_ready(op->ssub, op, op->prodK, offsetof(struct ncclProxySubArgs, posted))) {
		chunk_mark(op->ssub, op, op->prodK++);
		moved = 1;
	}
	/* consume: once every peer's chunk is here and ours has left */
	while (op->consK < op->prodK &&
	       chunk_ready(op->ssub, op, op->consK, offsetof(struct ncclProxySubArgs, transmitted)) &&
	       chunk_ready(op->rsub, op, op->consK, offsetof(struct ncclProxySubArgs, transmitted))) {
		consume(op, op->consK);
		chunk_mark(op->rsub, op, op->consK++);
		moved = 1;
	}
	for (i = 0; moved && i < op->nargs; i++)
		if (op->args[i]->simIntra)
			sim_intra_progress(op->args[i]);
	return moved;
}

/*
 * sends delivered: like a ring kernel, which ends after its last chunk went
 * round; an intra-node receive ends once its last step is released
 */
static int sends_done(const struct sim_op *op)
{
	int i, n = op->nch * op->comm->nRanks;

	if (__atomic_load_n(&op->comm->abortFlag, __ATOMIC_ACQUIRE))
		return 1;
	for (i = 0; i < op->nargs; i++) {
		const struct ncclProxyArgs *a = op->args[i];
		int j;

		for (j = 0; a->simIntra && j < a->nsubs; j++)
			if (__atomic_load_n(&a->subs[j].done, __ATOMIC_ACQUIRE) <
			    (uint64_t)a->subs[j].nsteps)
				return 0;
	}
	for (i = 0; i < n; i++) {
		struct ncclProxySubArgs *sub = op->ssub[(i % op->nch) * op->comm->nRanks +
							i / op->nch];

		if (sub && __atomic_load_n(&sub->done, __ATOMIC_ACQUIRE) < (uint64_t)sub->nsteps)
			return 0;
	}
	return 1;
}

static void kernel_run(void *arg)
{
	struct sim_plan *plan = arg;
	struct sim_op *op, *next;
	double bytes = 0;
	int busy;

	for (op = plan->ops; op; op = op->next)
		bytes += (double)op->mbytes * (op->comm->nRanks > 1 ? op->comm->nRanks - 1 : 1);
	ccldsim_gpu_busy(sim_kernel_base_us + bytes / (sim_gpu_gbps * 1e3));
	for (;;) {
		uint32_t seen = sim_kernel_bell_read();
		int moved = 0;

		busy = 0;
		for (op = plan->ops; op; op = op->next) {
			if (op_step(op))
				moved = 1;
			if (op->consK < op->nchunks || !sends_done(op))
				busy = 1;
		}
		if (moved)	/* the plan may span communicators: each has its proxy */
			for (op = plan->ops; op; op = op->next)
				sim_bell_ring(op->comm->proxyState->bell);
		if (!busy)
			break;
		if (!moved) {
			ccldsim_gpu_gate();	/* a GPU stalled mid-kernel stays there */
			sim_kernel_bell_wait(seen);
		}
	}
	for (op = plan->ops; op; op = next) {
		next = op->next;
		sim_op_unref(op);
	}
	free(plan);
}

/* Queues the kernel of OPS (one stream) and hands their args to the proxy. */
ncclResult_t sim_plan_launch(struct sim_op *ops, void *stream)
{
	struct sim_plan *plan = calloc(1, sizeof(*plan));
	struct sim_op *op;
	int i;

	if (!plan)
		return ncclSystemError;
	plan->ops = ops;
	for (op = ops; op; op = op->next) {
		__atomic_add_fetch(&op->comm->inflight, 1, __ATOMIC_SEQ_CST);
		for (i = 0; i < op->nargs; i++)
			if (!op->args[i]->simIntra)
				sim_proxy_post(op->comm->proxyState, op->args[i],
					       op->args[i]->simIsRecv);
	}
	if (ccldsim_stream_launch((cudaStream_t)stream, kernel_run, plan) != cudaSuccess) {
		SIM_WARN("cannot launch on stream %p: invalid stream", stream);
		return ncclUnhandledCudaError;
	}
	return ncclSuccess;
}
