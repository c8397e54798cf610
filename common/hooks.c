// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The hook table: one row per NCCL symbol ccld attaches to. */
#include <stddef.h>
#include <string.h>
#include "hooks.h"

const struct hook_def nccl_hooks[] = {
	/* tier A: public API (weak ncclX == strong pncclX, one probe each) */
	{ "ncclAllReduce", CCLD_FN_ALLREDUCE, 'A', true, "AllReduce calls", NULL },
	{ "ncclAllGather", CCLD_FN_ALLGATHER, 'A', true, "AllGather calls", NULL },
	{ "ncclReduceScatter", CCLD_FN_REDUCESCATTER, 'A', true, "ReduceScatter calls", NULL },
	/* ncclBcast calls ncclBroadcast: hooking both would count twice */
	{ "ncclBroadcast", CCLD_FN_BROADCAST, 'A', true, "Broadcast/Bcast calls", NULL },
	{ "ncclReduce", CCLD_FN_REDUCE, 'A', true, "Reduce calls", NULL },
	{ "ncclAlltoAll", CCLD_FN_ALLTOALL, 'A', false, "AlltoAll calls (2.28.3+)", NULL },
	{ "ncclGather", CCLD_FN_GATHER, 'A', false, "Gather calls (2.28.3+)", NULL },
	{ "ncclScatter", CCLD_FN_SCATTER, 'A', false, "Scatter calls (2.28.3+)", NULL },
	{ "ncclSend", CCLD_FN_SEND, 'A', true, "Send calls", NULL },
	{ "ncclRecv", CCLD_FN_RECV, 'A', true, "Recv calls", NULL },
	/*
	 * attached in this order: ncclGroupEnd before ncclGroupStart, so that a
	 * thread inside a group while the probes go in is never seen starting
	 * it without ending it (its group depth would stay above 0: every later
	 * collective counted as pending in a group, its seq off by that count)
	 */
	{ "ncclGroupEnd", CCLD_FN_GROUP_END, 'A', true, "group tracking, blocked group launches", NULL },
	{ "ncclGroupStart", CCLD_FN_GROUP_START, 'A', true, "group tracking", NULL },
	{ "ncclCommInitRank", CCLD_FN_INIT_RANK, 'A', true, "comm creation (InitRank)", NULL },
	{ "ncclCommInitRankConfig", CCLD_FN_INIT_RANK_CONFIG, 'A', false, "comm creation (InitRankConfig, 2.14+)", NULL },
	{ "ncclCommInitRankScalable", CCLD_FN_INIT_RANK_SCALABLE, 'A', false, "comm creation (InitRankScalable, 2.23.4+)", NULL },
	{ "ncclCommInitAll", CCLD_FN_INIT_ALL, 'A', true, "comm creation (InitAll)", NULL },
	{ "ncclCommSplit", CCLD_FN_SPLIT, 'A', false, "comm creation (Split, 2.18+)", NULL },
	{ "ncclCommShrink", CCLD_FN_SHRINK, 'A', false, "comm creation (Shrink, 2.27.3+)", NULL },
	{ "ncclCommFinalize", CCLD_FN_FINALIZE, 'A', false, "teardown (Finalize, 2.14+)", NULL },
	{ "ncclCommDestroy", CCLD_FN_DESTROY, 'A', true, "teardown (Destroy)", NULL },
	{ "ncclCommAbort", CCLD_FN_ABORT, 'A', true, "teardown (Abort)", NULL },
	{ "ncclCommGetAsyncError", CCLD_FN_GET_ASYNC_ERROR, 'A', true, "async error reports", NULL },
	/*
	 * tier C: NCCL's profiler entry points, called by the proxy thread
	 * whether or not a profiler plugin is loaded.  C++ functions local to
	 * the library (.symtab): found by demangled name and parameters.
	 */
#define OP_ARGS "(int, ncclProxyArgs*"
	{ "ncclProfilerStartProxyOpEvent", CCLD_FN_PROXY_OP_START, 'C', false, "proxy op start",
	  OP_ARGS ")" },
	{ "ncclProfilerStopProxyOpEvent", CCLD_FN_PROXY_OP_STOP, 'C', false, "proxy op done",
	  OP_ARGS ")" },
	{ "ncclProfilerRecordProxyOpEventState", CCLD_FN_PROXY_OP_STATE, 'C', false, "proxy op state",
	  OP_ARGS ", ncclProfilerEventState_t)" },
	{ "ncclProfilerStartSendProxyStepEvent", CCLD_FN_PROXY_SEND_STEP, 'C', false, "send step posted",
	  OP_ARGS ", int)" },
	{ "ncclProfilerStartRecvProxyStepEvent", CCLD_FN_PROXY_RECV_STEP, 'C', false, "recv step posted",
	  OP_ARGS ", int)" },
	{ "ncclProfilerRecordProxyStepEventState", CCLD_FN_PROXY_STEP_STATE, 'C', false, "step state",
	  OP_ARGS ", int, ncclProfilerEventState_t)" },
	{ "ncclProfilerStopProxyStepEvent", CCLD_FN_PROXY_STEP_STOP, 'C', false, "step done",
	  OP_ARGS ", int)" },
#undef OP_ARGS
	/*
	 * NCCL's WARN(): a C++ function local to the library (2.28:
	 * _Z12ncclDebugLog17ncclDebugLogLevelmPKciS1_z), which also formats
	 * the message into the library's ncclLastError (elfsym.c's objects).
	 */
	{ "ncclDebugLog", 0, 'W', false, "NCCL's warnings",
	  "(ncclDebugLogLevel, unsigned long, char const*, int, char const*, ...)" },
};

const int nccl_hooks_n = sizeof(nccl_hooks) / sizeof(nccl_hooks[0]);

/* _ptsz: the per-thread default stream variants; WithFlags: same arguments */
const struct cuda_hook_def cuda_hooks[] = {
	{ "cudaEventRecord", CCLD_FN_CUDA_EVENT_RECORD, false },
	{ "cudaEventRecord_ptsz", CCLD_FN_CUDA_EVENT_RECORD, false },
	{ "cudaEventRecordWithFlags", CCLD_FN_CUDA_EVENT_RECORD, false },
	{ "cudaEventRecordWithFlags_ptsz", CCLD_FN_CUDA_EVENT_RECORD, false },
	{ "cudaEventQuery", CCLD_FN_CUDA_EVENT_QUERY, false },
	{ "cudaEventSynchronize", CCLD_FN_CUDA_EVENT_SYNC, false },
	{ "cudaStreamSynchronize", CCLD_FN_CUDA_STREAM_SYNC, false },
	{ "cudaStreamSynchronize_ptsz", CCLD_FN_CUDA_STREAM_SYNC, false },
	{ "cudaStreamQuery", CCLD_FN_CUDA_STREAM_QUERY, false },
	{ "cudaStreamQuery_ptsz", CCLD_FN_CUDA_STREAM_QUERY, false },
	{ "cuEventRecord", CCLD_FN_CUDA_EVENT_RECORD, true },
	{ "cuEventRecord_ptsz", CCLD_FN_CUDA_EVENT_RECORD, true },
	{ "cuEventRecordWithFlags", CCLD_FN_CUDA_EVENT_RECORD, true },
	{ "cuEventRecordWithFlags_ptsz", CCLD_FN_CUDA_EVENT_RECORD, true },
	{ "cuEventQuery", CCLD_FN_CUDA_EVENT_QUERY, true },
	{ "cuEventSynchronize", CCLD_FN_CUDA_EVENT_SYNC, true },
	{ "cuStreamSynchronize", CCLD_FN_CUDA_STREAM_SYNC, true },
	{ "cuStreamSynchronize_ptsz", CCLD_FN_CUDA_STREAM_SYNC, true },
	{ "cuStreamQuery", CCLD_FN_CUDA_STREAM_QUERY, true },
	{ "cuStreamQuery_ptsz", CCLD_FN_CUDA_STREAM_QUERY, true },
};

const int cuda_hooks_n = sizeof(cuda_hooks) / sizeof(cuda_hooks[0]);

bool hooks_cuda_file(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strncmp(base, "libcudart.so", 12) == 0 ||
	       strncmp(base, "libcuda.so", 10) == 0;
}

const char *hook_fn_name(int fn)
{
	static const char *const names[CCLD_FN_MAX] = {
		[CCLD_FN_ALLREDUCE] = "AllReduce",
		[CCLD_FN_ALLGATHER] = "AllGather",
		[CCLD_FN_REDUCESCATTER] = "ReduceScatter",
		[CCLD_FN_BROADCAST] = "Broadcast",
		[CCLD_FN_REDUCE] = "Reduce",
		[CCLD_FN_ALLTOALL] = "AlltoAll",
		[CCLD_FN_GATHER] = "Gather",
		[CCLD_FN_SCATTER] = "Scatter",
		[CCLD_FN_SEND] = "Send",
		[CCLD_FN_RECV] = "Recv",
		[CCLD_FN_GROUP_START] = "GroupStart",
		[CCLD_FN_GROUP_END] = "GroupEnd",
		[CCLD_FN_INIT_RANK] = "CommInitRank",
		[CCLD_FN_INIT_RANK_CONFIG] = "CommInitRankConfig",
		[CCLD_FN_INIT_RANK_SCALABLE] = "CommInitRankScalable",
		[CCLD_FN_INIT_ALL] = "CommInitAll",
		[CCLD_FN_SPLIT] = "CommSplit",
		[CCLD_FN_SHRINK] = "CommShrink",
		[CCLD_FN_FINALIZE] = "CommFinalize",
		[CCLD_FN_DESTROY] = "CommDestroy",
		[CCLD_FN_ABORT] = "CommAbort",
		[CCLD_FN_GET_ASYNC_ERROR] = "CommGetAsyncError",
		[CCLD_FN_CUDA_EVENT_RECORD] = "EventRecord",
		[CCLD_FN_CUDA_EVENT_QUERY] = "EventQuery",
		[CCLD_FN_CUDA_EVENT_SYNC] = "EventSynchronize",
		[CCLD_FN_CUDA_STREAM_SYNC] = "StreamSynchronize",
		[CCLD_FN_CUDA_STREAM_QUERY] = "StreamQuery",
		[CCLD_FN_PROXY_OP_START] = "ProxyOpStart",
		[CCLD_FN_PROXY_OP_STOP] = "ProxyOpStop",
		[CCLD_FN_PROXY_OP_STATE] = "ProxyOpState",
		[CCLD_FN_PROXY_SEND_STEP] = "ProxySendStep",
		[CCLD_FN_PROXY_RECV_STEP] = "ProxyRecvStep",
		[CCLD_FN_PROXY_STEP_STATE] = "ProxyStepState",
		[CCLD_FN_PROXY_STEP_STOP] = "ProxyStepStop",
	};

	if (fn <= 0 || fn >= CCLD_FN_MAX || !names[fn])
		return "unknown";
	return names[fn];
}
