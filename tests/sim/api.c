// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Public API of the NCCL stand-in (libnccl.so.2): NCCL 2.28's ABI for the
 * functions ccld hooks.  Every function is a weak ncclX plus a strong pncclX
 * at the same address, as NCCL's NCCL_API macro makes them.  Communicator
 * identity (commHash), sequence counters (seqNumber[], collOpCount) and the
 * group semantics follow NCCL 2.28's source; docs/standin.md says where.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include "sim.h"
#include "sim_cudart.h"

#define NCCL_API(ret, func, ...)					\
	__attribute__((visibility("default"))) __attribute__((alias(#func))) \
	ret p##func(__VA_ARGS__);					\
	__attribute__((visibility("default"))) __attribute__((weak))	\
	ret func(__VA_ARGS__)

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_first_init_done;	/* faults are set up at the first init */
static int g_first_init_failed;

struct pending {
	struct sim_op *op;
	cudaStream_t stream;
	struct pending *next;
};

static __thread int t_group_depth;
static __thread struct pending *t_pending, **t_pending_tail;

char ncclLastError[1024];

void ncclDebugLog(ncclDebugLogLevel level, unsigned long flags, const char *filefunc, int line,
		  const char *fmt, ...)
{
	va_list ap;

	(void)flags;
	if (level != NCCL_LOG_WARN)
		return;
	pthread_mutex_lock(&g_mu);
	va_start(ap, fmt);
	vsnprintf(ncclLastError, sizeof(ncclLastError), fmt, ap);
	va_end(ap);
	if (getenv("NCCL_DEBUG"))
		fprintf(stderr, "%d %s:%d NCCL WARN %s\n", (int)getpid(), filefunc, line,
			ncclLastError);
	pthread_mutex_unlock(&g_mu);
}

/* ---- NCCL's hash (src/include/bitops.h, 2.26+) ------------------------- */

static void eat_hash(uint64_t acc[2], const void *bytes, size_t size)
{
	const char *ptr = bytes;

	acc[0] ^= size;
	while (size != 0) {
		size_t chunk = size < sizeof(uint64_t) ? size : sizeof(uint64_t);
		uint64_t x = 0;

		acc[0] += acc[1];
		acc[1] ^= acc[0];
		acc[0] ^= acc[0] >> 31;
		acc[0] *= 0x9de62bbc8cef3ce3ull;
		acc[1] ^= acc[1] >> 32;
		acc[1] *= 0x485cd6311b599e79ull;
		memcpy(&x, ptr, chunk);
		ptr += chunk;
		size -= chunk;
		acc[0] += x;
	}
}

static uint64_t digest_hash(const uint64_t acc[2])
{
	uint64_t h = acc[0];

	h ^= h >> 31;
	h *= 0xbac3bd562846de6bull;
	h += acc[1];
	h ^= h >> 32;
	h *= 0x995a187a14e7b445ull;
	return h;
}

uint64_t sim_get_hash(const void *bytes, size_t size)
{
	uint64_t acc[2] = { 1, 1 };

	eat_hash(acc, bytes, size);
	return digest_hash(acc);
}

/* ---- helpers ----------------------------------------------------------- */

static int comm_ok(const struct ncclComm *comm)
{
	return comm && comm->startMagic == NCCL_MAGIC && comm->endMagic == NCCL_MAGIC &&
	       !comm->destroyed;
}

#define CHECK_COMM(comm, fn)							\
	do {									\
		if (!comm_ok(comm)) {						\
			SIM_WARN("%s: invalid communicator %p", fn, (void *)(comm));	       \
			return ncclInvalidArgument;				\
		}								\
	} while (0)

/*
 * The PCI bus id of simulated GPU DEV in NCCL's encoding: 0000:18:00.0
 * onwards, in PCI domain NCCL_HOSTID's hash (16 bits) where that is set.
 * Each simulated host has GPUs of its own, so ranks of two simulated hosts
 * on one machine never show one GPU (on a real machine, one bus id is one
 * GPU, which ccld takes as shared between its ranks)
 */
static int64_t sim_bus_id(int dev)
{
	int64_t domain = getenv("NCCL_HOSTID") ? (int64_t)(sim_host_hash() & 0xffff) : 0;

	return domain << 20 | (int64_t)(0x18 + dev) << 12;
}

/* Allocates COMM and joins its segment; the caller waits with sim_seg_wait. */
static ncclResult_t comm_create(struct ncclComm **out, const char *tag, uint64_t hash,
				int nranks, int rank, int dev)
{
	struct ncclComm *comm;
	ncclResult_t res;
	size_t nsteps = (size_t)SIM_CONN_KINDS * SIM_MAX_CHANNELS * nranks;
	char err[256];

	if (nranks < 1 || nranks > SIM_MAX_RANKS) {
		SIM_WARN("invalid nranks %d (the stand-in supports 1..%d)", nranks,
			 SIM_MAX_RANKS);
		return ncclInvalidArgument;
	}
	if (rank < 0 || rank >= nranks) {
		SIM_WARN("invalid rank %d (nranks %d)", rank, nranks);
		return ncclInvalidArgument;
	}
	pthread_mutex_lock(&g_mu);
	if (!g_first_init_done) {
		g_first_init_done = 1;
		if (sim_fault_setup(rank, sim_now_ns(), err, sizeof(err)))
			g_first_init_failed = 1;
		if (sim_net_check_env(err, sizeof(err))) {
			fprintf(stderr, "ccld-sim: %s\n", err);
			g_first_init_failed = 1;
		}
	}
	res = g_first_init_failed ? ncclInvalidArgument : ncclSuccess;
	pthread_mutex_unlock(&g_mu);
	if (res) {
		SIM_WARN("malformed CCLD_SIM_FAULT or CCLD_SIM_TRANSPORT (see stderr)");
		return res;
	}
	comm = calloc(1, sizeof(*comm));
	if (!comm)
		return ncclSystemError;
	comm->startMagic = comm->endMagic = NCCL_MAGIC;
	comm->initState = ncclInProgress;
	comm->commHash = hash;
	comm->rank = rank;
	comm->nRanks = nranks;
	comm->cudaDev = dev;
	comm->busId = sim_bus_id(dev);
	comm->nChannels = SIM_MAX_CHANNELS;
	comm->sendStep = calloc(nsteps, sizeof(uint64_t));
	comm->recvStep = calloc(nsteps, sizeof(uint64_t));
	comm->sharedRes = calloc(1, sizeof(*comm->sharedRes));
	if (!comm->sendStep || !comm->recvStep || !comm->sharedRes) {
		res = ncclSystemError;
		goto fail;
	}
	comm->sharedRes->refCount = 1;
	comm->sharedRes->owner = comm;
	res = sim_proxy_create(tag, &comm->proxyState);
	if (res)
		goto fail;
	if (sim_net_socket()) {
		res = sim_net_listen(comm);
		if (res)
			goto fail;
	}
	res = sim_seg_join(comm, tag, hash, nranks, rank);
	if (res)
		goto fail;
	sim_ras_comm_init(comm);	/* at bootstrap, as NCCL */
	*out = comm;
	return ncclSuccess;
fail:
	sim_net_close(comm);
	free(comm->sendStep);
	free(comm->recvStep);
	free(comm->sharedRes);
	free(comm);
	return res;
}

static void comm_free(struct ncclComm *comm)
{
	sim_ras_comm_fini(comm);
	sim_net_close(comm);	/* its thread reads the segment */
	sim_seg_leave(comm);
	if (comm->proxyState)
		sim_proxy_stop(comm->proxyState);
	comm->destroyed = 1;
	comm->startMagic = comm->endMagic = 0;
	free(comm->peerBells);
	free(comm->peerKbells);
	free(comm->peerInfo);
	free(comm->sendStep);
	free(comm->recvStep);
	free(comm->sharedRes);
	free(comm);
}

static void wait_idle(struct ncclComm *comm)
{
	uint32_t v;

	while ((v = __atomic_load_n(&comm->inflight, __ATOMIC_SEQ_CST)) != 0)
		sim_futex_wait(&comm->inflight, v, -1);
}

static int cur_dev(void)
{
	int dev = 0;

	cudaGetDevice(&dev);
	return dev;
}

static int id_tag(const ncclUniqueId *id, char tag[SIM_TAG_LEN + 1])
{
	int i;

	if (memcmp(id->internal, SIM_ID_MAGIC, 8))
		return -1;
	for (i = 0; i < SIM_TAG_LEN; i++) {
		char c = id->internal[8 + i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return -1;
		tag[i] = c;
	}
	tag[SIM_TAG_LEN] = 0;
	return 0;
}

/* ---- version, ids, errors ---------------------------------------------- */

/* NCCL prints and embeds "NCCL version X+cudaY"; tools find the version by it */
__attribute__((used)) static const char sim_version_string[] =
	"NCCL version 2.28.9+sim (ccld GPU-less stand-in)";

NCCL_API(ncclResult_t, ncclGetVersion, int *version)
{
	if (!version) {
		SIM_WARN("ncclGetVersion: version is NULL");
		return ncclInvalidArgument;
	}
	*version = NCCL_VERSION_CODE;
	return ncclSuccess;
}

/* The id names the job's shared memory: "CCLDSIM1" + tag, then random. */
NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId *uniqueId)
{
	unsigned char rnd[NCCL_UNIQUE_ID_BYTES];
	int i;

	if (!uniqueId) {
		SIM_WARN("ncclGetUniqueId: uniqueId is NULL");
		return ncclInvalidArgument;
	}
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		SIM_WARN("ncclGetUniqueId: getrandom: %s", strerror(errno));
		return ncclSystemError;
	}
	memcpy(uniqueId->internal, rnd, sizeof(rnd));
	memcpy(uniqueId->internal, SIM_ID_MAGIC, 8);
	for (i = 0; i < SIM_TAG_LEN; i++)
		uniqueId->internal[8 + i] = "0123456789abcdef"[rnd[i] & 15];
	uniqueId->internal[8 + SIM_TAG_LEN] = 0;
	return ncclSuccess;
}

NCCL_API(const char *, ncclGetErrorString, ncclResult_t code)
{
	switch (code) {
	case ncclSuccess: return "no error";
	case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
	case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
	case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
	case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	case ncclRemoteError: return "remote process exited or there was a network error";
	case ncclInProgress: return "NCCL operation in progress";
	default: return "unknown result code";
	}
}

NCCL_API(const char *, ncclGetLastError, ncclComm_t comm)
{
	(void)comm;
	return ncclLastError;
}

/* ---- communicator creation --------------------------------------------- */

/*
 * ',"name":"NAME"' for the call log where CONFIG names the comm as NCCL
 * 2.27+ reads it (commName), else "".  Quotes and backslashes become '?'.
 */
static const char *config_name_json(const ncclConfig_t *config, char *buf, size_t n)
{
	size_t i, len;

	buf[0] = '\0';
	if (!config || config->magic != NCCL_CONFIG_MAGIC || config->version < 22700 ||
	    config->size < offsetof(ncclConfig_t, commName) + sizeof(config->commName) ||
	    !config->commName)
		return buf;
	len = (size_t)snprintf(buf, n, ",\"name\":\"%.63s\"", config->commName);
	for (i = 9; i + 1 < len && i + 1 < n; i++)
		if (buf[i] == '"' || buf[i] == '\\' || (unsigned char)buf[i] < 0x20)
			buf[i] = '?';
	return buf;
}

static ncclResult_t init_rank(ncclComm_t *newcomm, int nranks, const ncclUniqueId *id,
			      int rank, ncclConfig_t *config, const char *what)
{
	struct ncclComm *comm = NULL;
	char tag[SIM_TAG_LEN + 1];
	ncclResult_t res;
	int logged = 0;
	char name[80];

	config_name_json(config, name, sizeof(name));
	if (!newcomm) {
		SIM_WARN("%s: newcomm is NULL", what);
		res = ncclInvalidArgument;
		goto out;
	}
	if (config && (config->magic != NCCL_CONFIG_MAGIC || config->size < sizeof(size_t) + 8)) {
		SIM_WARN("%s: config not initialized with NCCL_CONFIG_INITIALIZER", what);
		res = ncclInvalidArgument;
		goto out;
	}
	if (id_tag(id, tag)) {
		SIM_WARN("%s: invalid unique id (not made by this stand-in's ncclGetUniqueId)",
			 what);
		res = ncclInvalidArgument;
		goto out;
	}
	/* root comm: hash of the id bytes, as NCCL 2.26+ (init.cc) */
	res = comm_create(&comm, tag, sim_get_hash(id->internal, NCCL_UNIQUE_ID_BYTES), nranks, rank,
			  cur_dev());
	if (res)
		goto out;
	res = sim_seg_wait(comm, what, &logged);
	if (res) {
		comm_free(comm);
		comm = NULL;
		goto out;
	}
	*newcomm = comm;
out:
	if (!logged) {
		if (comm)
			sim_calllog(comm, what, 0, 0, 0, -1, -1, -1, -1, 1, res,
				    name[0] ? name + 1 : NULL);
		else
			sim_calllog(NULL, what, 0, 0, 0, -1, -1, -1, -1, 1, res,
				    name[0] ? name + 1 : NULL);
	}
	return res;
}

NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t *comm, int nranks, ncclUniqueId commId,
	 int rank)
{
	return init_rank(comm, nranks, &commId, rank, NULL, "CommInitRank");
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t *comm, int nranks,
	 ncclUniqueId commId, int rank, ncclConfig_t *config)
{
	/* nonblocking configs complete before returning: ncclSuccess is valid */
	return init_rank(comm, nranks, &commId, rank, config, "CommInitRankConfig");
}

/*
 * NCCL spreads the bootstrap of a large comm over NID root ids; every rank
 * passes the same ones.  One process of this stand-in's job roots them all:
 * the first id names the comm (its hash, as NCCL's), the others are checked.
 */
NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t *newcomm, int nranks, int myrank,
	 int nId, ncclUniqueId *commIds, ncclConfig_t *config)
{
	char tag[SIM_TAG_LEN + 1];
	int i;

	if (nId < 1 || !commIds) {
		SIM_WARN("ncclCommInitRankScalable: invalid arguments (nId %d, commIds %p)", nId,
			 (void *)commIds);
		sim_calllog(NULL, "CommInitRankScalable", 0, 0, 0, -1, -1, -1, -1, 1,
			    ncclInvalidArgument, NULL);
		return ncclInvalidArgument;
	}
	for (i = 1; i < nId; i++) {
		if (id_tag(&commIds[i], tag)) {
			SIM_WARN("ncclCommInitRankScalable: invalid unique id %d of %d", i, nId);
			sim_calllog(NULL, "CommInitRankScalable", 0, 0, 0, -1, -1, -1, -1, 1,
				    ncclInvalidArgument, NULL);
			return ncclInvalidArgument;
		}
	}
	return init_rank(newcomm, nranks, &commIds[0], myrank, config, "CommInitRankScalable");
}

NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t *comms, int ndev, const int *devlist)
{
	struct ncclComm *c[SIM_MAX_RANKS];
	char tag[SIM_TAG_LEN + 1];
	ncclUniqueId id;
	ncclResult_t res;
	int i, logged = 0;

	if (!comms || ndev < 1 || ndev > SIM_MAX_RANKS) {
		SIM_WARN("ncclCommInitAll: invalid arguments (comms %p, ndev %d)",
			 (void *)comms, ndev);
		sim_calllog(NULL, "CommInitAll", 0, 0, 0, -1, -1, -1, -1, 1, ncclInvalidArgument, NULL);
		return ncclInvalidArgument;
	}
	res = ncclGetUniqueId(&id);
	if (res)
		return res;
	id_tag(&id, tag);
	for (i = 0; i < ndev; i++) {
		res = comm_create(&c[i], tag, sim_get_hash(id.internal, NCCL_UNIQUE_ID_BYTES), ndev, i,
				  devlist ? devlist[i] : i);
		if (res) {
			while (i-- > 0)
				comm_free(c[i]);
			sim_calllog(NULL, "CommInitAll", 0, 0, 0, -1, -1, -1, -1, 1, res, NULL);
			return res;
		}
	}
	for (i = 0; i < ndev; i++) {
		res = sim_seg_wait(c[i], "CommInitAll", &logged);
		if (res)
			return res;
	}
	for (i = 0; i < ndev; i++) {
		comms[i] = c[i];
		sim_calllog(c[i], "CommInitAll", 0, 0, 0, -1, -1, -1, -1, 1, ncclSuccess, NULL);
	}
	return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
	 ncclConfig_t *config)
{
	int colors[SIM_MAX_RANKS], keys[SIM_MAX_RANKS], members[SIM_MAX_RANKS];
	struct ncclComm *child = NULL;
	uint64_t acc[2] = { 1, 1 };
	int n = 0, me = -1, r, i, j, split_count, logged = 0;
	char extra[224], name[80];
	ncclResult_t res;

	CHECK_COMM(comm, "ncclCommSplit");
	if (!newcomm || (color < 0 && color != NCCL_SPLIT_NOCOLOR)) {
		SIM_WARN("ncclCommSplit: invalid arguments (color %d, newcomm %p)", color,
			 (void *)newcomm);
		return ncclInvalidArgument;
	}
	res = sim_split_exchange(comm, color, key, colors, keys, &logged);
	if (res)
		return res;
	split_count = comm->splitCount;
	snprintf(extra, sizeof(extra), "\"parent\":\"%016llx\",\"color\":%d,\"key\":%d%s",
		 (unsigned long long)comm->commHash, color, key,
		 config_name_json(config, name, sizeof(name)));
	if (color == NCCL_SPLIT_NOCOLOR) {
		*newcomm = NULL;
		if (!logged)
			sim_calllog(NULL, "CommSplit", 0, 0, 0, -1, -1, -1, -1, 1, ncclSuccess, extra);
		return ncclSuccess;
	}
	/* members of my color ordered by (key, parent rank), as commGetSplitInfo */
	for (r = 0; r < comm->nRanks; r++) {
		if (colors[r] != color)
			continue;
		for (i = n; i > 0; i--) {
			j = members[i - 1];
			if (keys[j] < keys[r] || (keys[j] == keys[r] && j < r))
				break;
			members[i] = j;
		}
		members[i] = r;
		n++;
	}
	for (i = 0; i < n; i++)
		if (members[i] == comm->rank)
			me = i;
	/* child hash from (parent hash, split count, color), as init.cc */
	eat_hash(acc, &comm->commHash, sizeof(comm->commHash));
	eat_hash(acc, &split_count, sizeof(split_count));
	eat_hash(acc, &color, sizeof(color));
	res = comm_create(&child, comm->tag, digest_hash(acc), n, me, comm->cudaDev);
	if (!res) {
		res = sim_seg_wait(child, "CommSplit", &logged);
		if (res) {
			comm_free(child);
			child = NULL;
		}
	}
	if (!res)
		*newcomm = child;
	if (!logged)
		sim_calllog(child, "CommSplit", 0, 0, 0, -1, -1, -1, -1, 1, res, extra);
	return res;
}

/* ---- teardown ---------------------------------------------------------- */

NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm)
{
	CHECK_COMM(comm, "ncclCommFinalize");
	sim_teardown_fault("ncclCommFinalize");
	wait_idle(comm);	/* blocks while an op hangs, as NCCL does */
	sim_calllog(comm, "CommFinalize", 0, 0, 0, -1, -1, -1, -1, 1, ncclSuccess, NULL);
	return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm)
{
	if (!comm)
		return ncclSuccess;	/* NCCL accepts NULL */
	CHECK_COMM(comm, "ncclCommDestroy");
	sim_teardown_fault("ncclCommDestroy");
	wait_idle(comm);
	sim_calllog(comm, "CommDestroy", 0, 0, 0, -1, -1, -1, -1, 1, ncclSuccess, NULL);
	comm_free(comm);
	return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm)
{
	if (!comm)
		return ncclSuccess;
	CHECK_COMM(comm, "ncclCommAbort");
	sim_teardown_fault("ncclCommAbort");
	/* abort makes in-flight kernels and proxy ops give up */
	__atomic_store_n(&comm->abortFlag, 1, __ATOMIC_RELEASE);
	sim_bell_ring(comm->proxyState->bell);
	sim_kernel_bell_ring();
	wait_idle(comm);
	sim_calllog(comm, "CommAbort", 0, 0, 0, -1, -1, -1, -1, 1, ncclSuccess, NULL);
	comm_free(comm);
	return ncclSuccess;
}

/* ---- queries ----------------------------------------------------------- */

NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t *asyncError)
{
	CHECK_COMM(comm, "ncclCommGetAsyncError");
	if (!asyncError) {
		SIM_WARN("ncclCommGetAsyncError: asyncError is NULL");
		return ncclInvalidArgument;
	}
	/* hangs are never errors: a stuck op stays in flight */
	*asyncError = comm->asyncResult;
	return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int *count)
{
	CHECK_COMM(comm, "ncclCommCount");
	if (!count)
		return ncclInvalidArgument;
	*count = comm->nRanks;
	return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int *device)
{
	CHECK_COMM(comm, "ncclCommCuDevice");
	if (!device)
		return ncclInvalidArgument;
	*device = comm->cudaDev;
	return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int *rank)
{
	CHECK_COMM(comm, "ncclCommUserRank");
	if (!rank)
		return ncclInvalidArgument;
	*rank = comm->rank;
	return ncclSuccess;
}

/* ---- groups and launches ----------------------------------------------- */

static int is_p2p(const struct sim_op *op)
{
	return op->func == ncclFuncSend || op->func == ncclFuncRecv;
}

/* the round of NCCL's p2p schedule that pairs this rank with the op's peer */
static int p2p_round(const struct sim_op *op)
{
	int n = op->comm->nRanks, me = op->comm->rank;

	return op->func == ncclFuncSend ? (op->root - me + n) % n : (me - op->root + n) % n;
}

/*
 * The 1-based index of OP's work batch on channel CH among the launch's
 * p2p ops of its comm: one batch per round of the p2p schedule (a send and
 * a recv of one round share it), as NCCL's scheduleP2pTasksToPlan.
 */
static int p2p_batch(const struct pending *list, const struct sim_op *op, int ch)
{
	uint64_t seen = 0;
	const struct pending *p;
	int i, b = 1, mine = p2p_round(op);

	for (p = list; p; p = p->next) {
		const struct sim_op *o = p->op;
		int r = p2p_round(o);

		if (o->comm != op->comm || !is_p2p(o) || r >= mine || r >= 64 || (seen >> r & 1))
			continue;
		for (i = 0; i < o->nargs; i++)
			if (o->args[i]->subs[0].channelId == ch) {
				seen |= 1ull << r;
				b++;
				break;
			}
	}
	return b;
}

/*
 * Launches the pending ops: counters first (seqNumber[] per launched
 * collective, as NCCL's hostStreamPlanTask; proxy op ids as uploadProxyOps:
 * collOpCount << 1 per collective, and per channel
 * (p2pOpCount[ch] << 1) + (batch << 1 | 1) for p2p, p2pOpCount[ch] then
 * advancing past the launch's last batch on the channel), then one kernel
 * per stream.
 */
/*
 * A launch's p2p with itself: its k-th self recv on a comm takes the data
 * of its k-th self send on that comm (NCCL copies within the kernel).
 */
static void pair_self(struct pending *list)
{
	struct pending *p, *q;

	for (p = list; p; p = p->next) {
		struct sim_op *op = p->op;

		if (!is_p2p(op) || op->root != op->comm->rank)
			continue;
		op->self_unpaired = 1;
	}
	for (p = list; p; p = p->next) {
		struct sim_op *rop = p->op;

		if (rop->func != ncclFuncRecv || !rop->self_unpaired)
			continue;
		for (q = list; q; q = q->next) {
			struct sim_op *sop = q->op;

			if (sop->func == ncclFuncSend && sop->self_unpaired &&
			    sop->comm == rop->comm && sop->root == sop->comm->rank) {
				sop->self_unpaired = rop->self_unpaired = 0;
				rop->self_src = sop->sendbuff;
				rop->self_bytes = sop->mbytes < rop->mbytes ? sop->mbytes :
									     rop->mbytes;
				break;
			}
		}
	}
}

static ncclResult_t launch(struct pending *list)
{
	ncclResult_t res = ncclSuccess, r;
	struct pending *p, *q, *next;
	int i, c;

	pair_self(list);

	for (p = list; p; p = p->next) {
		struct sim_op *op = p->op;
		struct ncclComm *comm = op->comm;
		struct ncclSharedResources *sr = comm->sharedRes;

		for (i = 0; i < op->nargs; i++) {
			struct ncclProxyArgs *a = op->args[i];
			int ch = a->subs[0].channelId, b;

			if (!is_p2p(op)) {
				a->opCount = comm->collOpCount << 1;
				continue;
			}
			b = p2p_batch(list, op, ch);
			a->opCount = (sr->p2pOpCount[ch] << 1) + ((uint64_t)b << 1 | 1);
			if ((uint64_t)b + 1 > sr->simP2pBump[ch])
				sr->simP2pBump[ch] = (uint64_t)b + 1;
		}
		comm->opCount++;
		if (!is_p2p(op)) {
			comm->collOpCount++;
			sr->collOpCount++;
			__atomic_add_fetch(&comm->seqNumber[op->func], 1, __ATOMIC_RELAXED);
		}
	}
	for (p = list; p; p = p->next) {
		struct ncclSharedResources *sr = p->op->comm->sharedRes;

		for (c = 0; c < MAXCHANNELS; c++) {
			sr->p2pOpCount[c] += sr->simP2pBump[c];
			sr->simP2pBump[c] = 0;
		}
	}
	/* group by stream, keeping call order */
	while (list) {
		struct sim_op *ops = NULL, **tail = &ops;
		struct pending **pp = &list;
		cudaStream_t s = list->stream;

		for (q = list; q; q = next) {
			next = q->next;
			if (q->stream == s) {
				*pp = next;
				q->op->next = NULL;
				*tail = q->op;
				tail = &q->op->next;
				free(q);
			} else {
				pp = &q->next;
			}
		}
		r = sim_plan_launch(ops, s);
		if (r && !res)
			res = r;
	}
	return res;
}

NCCL_API(ncclResult_t, ncclGroupStart, void)
{
	t_group_depth++;
	sim_calllog(NULL, "GroupStart", 0, 0, 0, -1, -1, -1, -1, 1, ncclSuccess, NULL);
	return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclGroupEnd, void)
{
	ncclResult_t res = ncclSuccess;
	struct pending *list;

	if (t_group_depth == 0) {
		SIM_WARN("ncclGroupEnd: not in a group");
		res = ncclInvalidUsage;
	} else if (--t_group_depth == 0 && t_pending) {
		list = t_pending;
		t_pending = NULL;
		res = launch(list);
	}
	sim_calllog(NULL, "GroupEnd", 0, 0, 0, -1, -1, -1, -1, 1, res, NULL);
	return res;
}

static const char *func_name(int func)
{
	static const char *const names[] = { "Broadcast", "Reduce", "AllGather", "ReduceScatter",
					     "AllReduce", "SendRecv", "Send", "Recv", "AlltoAll",
					     "Scatter", "Gather" };

	return names[func];
}

static ncclResult_t enqueue_part(int func, int api, const void *sendbuff, void *recvbuff,
				 size_t count, int dtype, int redop, int root, ncclComm_t comm,
				 cudaStream_t stream, int logged);

/* Validates, logs and queues (in a group) or launches one call. */
static ncclResult_t enqueue(int func, const void *sendbuff, void *recvbuff, size_t count,
			    int dtype, int redop, int root, ncclComm_t comm, cudaStream_t stream)
{
	return enqueue_part(func, func, sendbuff, recvbuff, count, dtype, redop, root, comm,
			    stream, 1);
}

/* One task of call API (itself, or a p2p part of an AlltoAll...), logged if LOGGED. */
static ncclResult_t enqueue_part(int func, int api, const void *sendbuff, void *recvbuff,
				 size_t count, int dtype, int redop, int root, ncclComm_t comm,
				 cudaStream_t stream, int logged)
{
	int p2p = func == ncclFuncSend || func == ncclFuncRecv;
	int has_redop = func == ncclFuncAllReduce || func == ncclFuncReduce ||
			func == ncclFuncReduceScatter;
	int has_root = func == ncclFuncBroadcast || func == ncclFuncReduce;
	int needs_send, needs_recv;
	ncclResult_t res = ncclSuccess;
	struct pending *p;
	struct sim_op *op;
	uint64_t seq = 0;

	if (!comm_ok(comm)) {
		SIM_WARN("nccl%s: invalid communicator %p", func_name(func), (void *)comm);
		res = ncclInvalidArgument;
		comm = NULL;
		goto log;
	}
	/* seq: this comm's collective calls so far (invalid ones do not count) */
	seq = comm->callSeq;
	if (dtype < 0 || dtype >= ncclNumTypes) {
		SIM_WARN("nccl%s: invalid type %d", func_name(func), dtype);
		res = ncclInvalidArgument;
	} else if (has_redop && (redop < 0 || redop >= ncclNumOps)) {
		SIM_WARN("nccl%s: invalid reduction operation %d", func_name(func), redop);
		res = ncclInvalidArgument;
	} else if ((has_root || p2p) && (root < 0 || root >= comm->nRanks)) {
		SIM_WARN("nccl%s: invalid %s %d (nranks %d)", func_name(func),
			 p2p ? "peer" : "root", root, comm->nRanks);
		res = ncclInvalidArgument;
	}
	if (res)
		goto log;
	needs_send = func != ncclFuncRecv && !(func == ncclFuncBroadcast && comm->rank != root);
	needs_recv = func != ncclFuncSend && !(func == ncclFuncReduce && comm->rank != root);
	if (count && ((needs_send && !sendbuff) || (needs_recv && !recvbuff))) {
		SIM_WARN("nccl%s: %s is NULL", func_name(func),
			 needs_send && !sendbuff ? "sendbuff" : "recvbuff");
		res = ncclInvalidArgument;
		goto log;
	}
	if (!p2p)
		comm->callSeq++;
	op = sim_op_new(comm, func, sendbuff, recvbuff, count, dtype, redop, root);
	if (!op) {
		res = ncclSystemError;
		goto log;
	}
	op->api = api;
	p = calloc(1, sizeof(*p));
	if (!p) {
		res = ncclSystemError;
		goto log;
	}
	p->op = op;
	p->stream = stream;
	if (t_group_depth > 0) {
		if (!t_pending)
			t_pending_tail = &t_pending;
		*t_pending_tail = p;
		t_pending_tail = &p->next;
	} else {
		res = launch(p);
	}
log:
	if (logged)
		sim_calllog(comm, func_name(func), !p2p, seq, count, dtype,
			    has_redop ? redop : -1, has_root ? root : -1, p2p ? root : -1, 1, res,
			    NULL);
	return res;
}

/*
 * AlltoAll, Gather and Scatter as NCCL 2.28 makes them (enqueue.cc): one
 * p2p send and/or receive per peer, itself included, in an implicit group.
 * They are p2p work: NCCL's per-function collective counts (seqNumber[])
 * do not move, their proxy ops carry p2p ids and collAPI names the call.
 */
static ncclResult_t p2p_coll(int api, const void *sendbuff, void *recvbuff, size_t count,
			     int dtype, int root, ncclComm_t comm, cudaStream_t stream)
{
	ncclResult_t res = ncclSuccess;
	size_t bytes;
	int n, me, r;

	if (!comm_ok(comm)) {
		SIM_WARN("nccl%s: invalid communicator %p", func_name(api), (void *)comm);
		res = ncclInvalidArgument;
		comm = NULL;
		goto log;
	}
	n = comm->nRanks;
	me = comm->rank;
	if (dtype < 0 || dtype >= ncclNumTypes) {
		SIM_WARN("nccl%s: invalid type %d", func_name(api), dtype);
		res = ncclInvalidArgument;
	} else if (api != ncclFuncAlltoAll && (root < 0 || root >= n)) {
		SIM_WARN("nccl%s: invalid root %d (nranks %d)", func_name(api), root, n);
		res = ncclInvalidArgument;
	} else if (count && (!sendbuff && (api != ncclFuncScatter || me == root))) {
		SIM_WARN("nccl%s: sendbuff is NULL", func_name(api));
		res = ncclInvalidArgument;
	} else if (count && (!recvbuff && (api != ncclFuncGather || me == root))) {
		SIM_WARN("nccl%s: recvbuff is NULL", func_name(api));
		res = ncclInvalidArgument;
	}
	if (res || !count)	/* NCCL drops an empty collective */
		goto log;
	bytes = count * sim_dtype_size(dtype);
	t_group_depth++;
	for (r = 0; r < n && !res; r++) {
		const char *sb = (const char *)sendbuff + (size_t)r * bytes;
		char *rb = (char *)recvbuff + (size_t)r * bytes;

		if (api == ncclFuncAlltoAll) {
			res = enqueue_part(ncclFuncSend, api, sb, NULL, count, dtype, -1, r, comm,
					   stream, 0);
			if (!res)
				res = enqueue_part(ncclFuncRecv, api, NULL, rb, count, dtype, -1, r,
						   comm, stream, 0);
		} else if (api == ncclFuncGather) {
			if (r == 0)
				res = enqueue_part(ncclFuncSend, api, sendbuff, NULL, count, dtype,
						   -1, root, comm, stream, 0);
			if (!res && me == root)
				res = enqueue_part(ncclFuncRecv, api, NULL, rb, count, dtype, -1, r,
						   comm, stream, 0);
		} else {
			if (me == root)
				res = enqueue_part(ncclFuncSend, api, sb, NULL, count, dtype, -1, r,
						   comm, stream, 0);
			if (!res && r == n - 1)
				res = enqueue_part(ncclFuncRecv, api, NULL, recvbuff, count, dtype,
						   -1, root, comm, stream, 0);
		}
	}
	if (--t_group_depth == 0 && t_pending) {
		struct pending *list = t_pending;
		ncclResult_t lr;

		t_pending = NULL;
		lr = launch(list);
		if (!res)
			res = lr;
	}
log:
	sim_calllog(comm, func_name(api), 0, 0, count, dtype, -1,
		    api == ncclFuncAlltoAll ? -1 : root, -1, 1, res, NULL);
	return res;
}

NCCL_API(ncclResult_t, ncclAlltoAll, const void *sendbuff, void *recvbuff, size_t count,
	 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	return p2p_coll(ncclFuncAlltoAll, sendbuff, recvbuff, count, datatype, -1, comm, stream);
}

NCCL_API(ncclResult_t, ncclGather, const void *sendbuff, void *recvbuff, size_t count,
	 ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	return p2p_coll(ncclFuncGather, sendbuff, recvbuff, count, datatype, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclScatter, const void *sendbuff, void *recvbuff, size_t count,
	 ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	return p2p_coll(ncclFuncScatter, sendbuff, recvbuff, count, datatype, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclAllReduce, const void *sendbuff, void *recvbuff, size_t count,
	 ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
	return enqueue(ncclFuncAllReduce, sendbuff, recvbuff, count, datatype, op, -1, comm, stream);
}

NCCL_API(ncclResult_t, ncclAllGather, const void *sendbuff, void *recvbuff, size_t sendcount,
	 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	return enqueue(ncclFuncAllGather, sendbuff, recvbuff, sendcount, datatype, -1, -1, comm,
		       stream);
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void *sendbuff, void *recvbuff,
	 size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
	 cudaStream_t stream)
{
	return enqueue(ncclFuncReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, -1, comm,
		       stream);
}

NCCL_API(ncclResult_t, ncclBroadcast, const void *sendbuff, void *recvbuff, size_t count,
	 ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	return enqueue(ncclFuncBroadcast, sendbuff, recvbuff, count, datatype, -1, root, comm,
		       stream);
}

/* through the exported symbol, like NCCL: a hook on ncclBroadcast sees it */
NCCL_API(ncclResult_t, ncclBcast, void *buff, size_t count, ncclDataType_t datatype, int root,
	 ncclComm_t comm, cudaStream_t stream)
{
	return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclReduce, const void *sendbuff, void *recvbuff, size_t count,
	 ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
	return enqueue(ncclFuncReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclSend, const void *sendbuff, size_t count, ncclDataType_t datatype,
	 int peer, ncclComm_t comm, cudaStream_t stream)
{
	return enqueue(ncclFuncSend, sendbuff, NULL, count, datatype, -1, peer, comm, stream);
}

NCCL_API(ncclResult_t, ncclRecv, void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
	 ncclComm_t comm, cudaStream_t stream)
{
	return enqueue(ncclFuncRecv, NULL, recvbuff, count, datatype, -1, peer, comm, stream);
}
