/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Internals of the GPU-less NCCL stand-in (libnccl.so.2, tests/sim).
 *
 * Structures ccld reads through DWARF carry NCCL 2.28's names for the
 * fields it reads (struct ncclComm, ncclProxyArgs, ncclProxySubArgs), at
 * offsets deliberately different from any real build.  docs/standin.md
 * describes the model: ranks are processes, data moves through per-channel,
 * per-peer shared-memory connections driven by one proxy thread per
 * process; simulated kernels run on the libcudart stream executors.
 */
#ifndef CCLD_SIM_H
#define CCLD_SIM_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include "nccl.h"

#define NCCL_MAGIC		0x0280028002800280ULL
#define NCCL_NUM_FUNCTIONS	5
#define NCCL_STEPS		8	/* slots per connection, as NCCL */
#define SIM_STEP_BYTES		(8 * 1024)
#define SIM_MAX_CHANNELS	2
#define SIM_MAX_RANKS		64
#define NCCL_PROXY_MAX_SUBS	32
#define SIM_ID_MAGIC		"CCLDSIM1"
#define SIM_TAG_LEN		16

/* ncclFunc_t, as NCCL */
enum { ncclFuncBroadcast = 0, ncclFuncReduce = 1, ncclFuncAllGather = 2,
       ncclFuncReduceScatter = 3, ncclFuncAllReduce = 4, ncclFuncSendRecv = 5,
       ncclFuncSend = 6, ncclFuncRecv = 7, ncclFuncAlltoAll = 8, ncclFuncScatter = 9,
       ncclFuncGather = 10 };

/* NCCL's profiler states (plugin/nccl_profiler.h, v4/v5) */
enum {
	ncclProfilerProxyStepSendGPUWait = 8,
	ncclProfilerProxyStepSendWait = 9,
	ncclProfilerProxyStepRecvWait = 10,
	ncclProfilerProxyStepRecvFlushWait = 11,
	ncclProfilerProxyStepRecvGPUWait = 12,
	ncclProfilerProxyOpInProgress_v4 = 19,
};

enum { ncclProxyOpNone = 0, ncclProxyOpReady = 1, ncclProxyOpProgress = 2 };
enum { SIM_CONN_COLL = 0, SIM_CONN_P2P = 1, SIM_CONN_KINDS = 2 };

/* ---- shared memory (one segment per communicator) ---------------------- */

struct sim_slot {
	uint64_t posted;	/* receiver: step+1 whose buffer is posted */
	uint64_t delivered;	/* sender: step+1 whose data is in data[] */
	uint64_t consumed;	/* receiver: step+1 the GPU has consumed */
	uint64_t sig;		/* op signature of the data */
	uint32_t size;
	uint32_t pad;
};

/* one direction src -> dst on one channel: NCCL_STEPS buffers */
struct sim_conn {
	struct sim_slot slot[NCCL_STEPS];
	uint8_t data[NCCL_STEPS][SIM_STEP_BYTES];
};

struct sim_rank_info {
	uint32_t present;	/* set once by the rank at init */
	int32_t pid;
	uint64_t host_hash;	/* NCCL's getHostHash() / getPidHash() */
	uint64_t pid_hash;
	int32_t cuda_dev;
	int32_t pad;
	int64_t bus_id;
	char bell[64];		/* shm name of the process's doorbell */
	char kbell[64];		/* shm name of its kernels' doorbell */
	int32_t split_color[2];	/* split exchange, double-buffered */
	int32_t split_key[2];
	uint32_t net_addr;	/* socket transport: IPv4 listen address */
	uint16_t net_port;	/* and port (network order) */
	uint16_t pad2;
};

struct sim_seg {
	uint64_t magic;
	uint32_t nranks;	/* set by the first rank */
	uint32_t joined;	/* futex: ranks arrived at init */
	uint32_t refs;		/* ranks attached; the last one unlinks */
	uint32_t split_arrive;	/* futex: cumulative split arrivals */
	uint64_t hash;
	struct sim_rank_info ranks[SIM_MAX_RANKS];
	/* then struct sim_conn conns[kinds][channels][nranks][nranks] */
};

/* per-process doorbell (own small segment): wakes the proxy thread */
struct sim_bell {
	uint32_t seq;
	uint32_t sleeping;
};

/* ---- proxy (names and fields as NCCL's proxy.h) ------------------------ */

struct ncclProxyState;
struct ncclProxyArgs;
typedef ncclResult_t (*proxyProgressFunc_t)(struct ncclProxyState *, struct ncclProxyArgs *);

struct ncclProxySubArgs {
	struct sim_conn *connection;	/* shm connection of this sub */
	uint8_t *buff;			/* send: the message in user memory */
	int rank;			/* this rank in the comm */
	int channelId;
	int peer;
	int nsteps;
	ssize_t nbytes;
	uint64_t base;			/* first connection step of this op */
	uint64_t posted;
	uint64_t transmitted;
	uint64_t received;
	uint64_t flushed;
	uint64_t done;
	pid_t pid;
	int credited;			/* recv: steps whose post reached the peer */
	uint64_t gpuStep;		/* send: steps the GPU produced; recv: consumed */
	size_t transSize;
	uint64_t deliverAt[NCCL_STEPS];	/* send: when step i%NCCL_STEPS lands */
	struct sim_bell *peerBell;	/* the peer process's doorbell */
	int simKind;			/* SIM_CONN_COLL or SIM_CONN_P2P */
	uint64_t simWired;		/* socket transport: steps written to the socket */
	int simSendErr;			/* socket transport: failed sends (said once) */
};

struct ncclProxyArgs {
	uint64_t simGeneration;		/* keeps field offsets unlike NCCL's */
	struct sim_op *op;
	struct ncclComm *comm;
	struct ncclProxyArgs *next;
	proxyProgressFunc_t progress;
	int nsubs;
	int done;
	uint64_t opCount;
	int sliceSteps;
	int chunkSteps;
	int chunkSize;
	uint8_t dtype;
	uint8_t redOp;
	uint8_t pattern;
	uint8_t coll;
	uint8_t collAPI;
	uint8_t protocol;
	uint8_t algorithm;
	int state;
	int idle;
	int nChannels;
	int simIsRecv;
	int simIntra;			/* intra-node: moved by the kernel, no proxy */
	uint64_t sig;
	struct ncclProxySubArgs subs[NCCL_PROXY_MAX_SUBS];
};

/*
 * As in NCCL (without NCCL_COMM_SPLIT_SHARE_RESOURCES): one proxy state and
 * one progress thread per communicator.  progressState.thread and .active
 * have NCCL's names: ccld maps a proxy hook's thread to its communicator
 * and walks the active ops from comm->proxyState.
 */
struct ncclProxyProgressState {
	pthread_t thread;		/* the progress thread */
	volatile int stop;
	struct ncclProxyArgs *active;	/* owned by the progress thread */
	uint64_t simNextDeadline;	/* earliest pending network delivery */
	unsigned simDumpSeen;		/* NCCL_PROXY_DUMP_SIGNAL generation handled */
	/* counters of the latest finished op, per sub: what NCCL's recycled args hold */
	struct {
		uint64_t posted, transmitted, received, done;
	} simStale[NCCL_PROXY_MAX_SUBS];
};

struct ncclProxyState {
	pthread_mutex_t mu;
	struct ncclProxyArgs *incoming;	/* handed over by launches */
	struct sim_bell *bell;		/* this comm's proxy doorbell */
	char bellName[64];
	struct ncclProxyProgressState progressState;
	struct ncclProxyState *simNext;	/* every proxy state of the process */
};

/* ---- communicator ------------------------------------------------------ */

#define MAXCHANNELS		64

/*
 * NCCL's comm->sharedRes (comm.h): the proxy op counters.  p2p op ids are
 * counted per channel, so two ranks' ids of one send/recv pair differ
 * whenever the ranks' p2p histories on that channel differ.
 */
struct ncclSharedResources {
	int refCount;
	struct ncclComm *owner;
	uint64_t p2pOpCount[MAXCHANNELS];
	uint64_t collOpCount;
	uint64_t simP2pBump[MAXCHANNELS];	/* of the launch being numbered */
};

/*
 * Every rank's identity, as NCCL's transport.h (comm->peerInfo[nRanks]):
 * NCCL's names; simPad keeps the offsets unlike the real build's.
 */
struct ncclPeerInfo {
	uint64_t simPad;
	int rank;
	int cudaDev;
	int nvmlDev;
	int gdrSupport;
	uint64_t hostHash;
	uint64_t pidHash;
	dev_t shmDev;
	int64_t busId;
	struct ncclComm *comm;
};

struct ncclComm {
	uint64_t startMagic;
	struct sim_seg *seg;		/* shared segment */
	size_t segSize;
	char segName[64];
	char tag[SIM_TAG_LEN + 1];	/* job tag, from the root unique id */
	int simIndex;
	int nChannels;
	int cudaDev;
	int64_t busId;
	int rank;
	int nRanks;
	uint64_t commHash;
	ncclResult_t initState;		/* ncclInProgress until connected, as NCCL */
	int splitCount;
	int destroyed;
	uint64_t opCount;
	uint64_t collOpCount;
	struct ncclSharedResources *sharedRes;
	uint64_t callSeq;		/* collectives called (call log seq) */
	struct ncclProxyState *proxyState;
	int abortFlag;
	ncclResult_t asyncResult;
	uint32_t inflight;		/* ops not yet finished (futex) */
	struct sim_bell **peerBells;	/* per rank: that process's doorbell */
	struct sim_bell **peerKbells;	/* per rank: its kernels' doorbell */
	uint64_t *sendStep;		/* [kind][ch][peer]: next connection step */
	uint64_t *recvStep;
	uint64_t seqNumber[NCCL_NUM_FUNCTIONS];
	struct ncclPeerInfo *peerInfo;	/* [nRanks], filled once every rank joined */
	struct sim_net *simNet;		/* socket transport, else NULL */
	uint64_t endMagic;
};

/* ---- ops --------------------------------------------------------------- */

struct sim_op {
	struct ncclComm *comm;
	int func;			/* ncclFunc_t */
	int api;			/* the call that made it (collAPI): AlltoAll... */
	/*
	 * p2p with itself (peer == rank): no connection; the recv copies from
	 * the send paired with it at launch (self_src), which NCCL requires in
	 * the same group.  A self send or recv left unpaired never completes.
	 */
	const uint8_t *self_src;
	size_t self_bytes;
	int self_unpaired;
	const uint8_t *sendbuff;
	uint8_t *recvbuff;
	size_t count;
	int dtype;
	int redop;
	int root;			/* or the peer for p2p */
	size_t esize;
	size_t mbytes;			/* bytes of one message (per peer) */
	int nchunks;
	int nch;
	uint64_t sig;
	int nargs;
	struct ncclProxyArgs *args[2 * SIM_MAX_CHANNELS * SIM_MAX_RANKS / NCCL_PROXY_MAX_SUBS + 2];
	/* [ch * nranks + peer]: NULL where no such sub */
	struct ncclProxySubArgs **ssub;
	struct ncclProxySubArgs **rsub;
	int prodK;			/* kernel: chunks produced / consumed */
	int consK;
	int refs;			/* kernel + proxy args, atomic */
	struct sim_op *next;		/* in a launch plan */
};

/* ---- helpers shared by the library files ------------------------------- */

uint64_t sim_now_ns(void);
void sim_futex_wait(uint32_t *addr, uint32_t val, int64_t timeout_ns);
void sim_futex_wake(uint32_t *addr);
void sim_bell_ring(struct sim_bell *b);
struct sim_bell *sim_bell_map(const char *name);

/* shm.c */
ncclResult_t sim_seg_join(struct ncclComm *comm, const char *tag, uint64_t hash,
			  int nranks, int rank);
ncclResult_t sim_seg_wait(struct ncclComm *comm, const char *what, int *logged);
void sim_seg_leave(struct ncclComm *comm);
ncclResult_t sim_split_exchange(struct ncclComm *comm, int color, int key,
				int *colors, int *keys, int *logged);
struct sim_conn *sim_conn(struct ncclComm *comm, int kind, int ch, int src, int dst);

/* socket.c: CCLD_SIM_TRANSPORT=socket */
struct sim_net;
int sim_net_socket(void);
int sim_net_check_env(char *err, size_t errlen);
ncclResult_t sim_net_listen(struct ncclComm *comm);
void sim_net_publish(const struct ncclComm *comm, struct sim_rank_info *ri);
ncclResult_t sim_net_start(struct ncclComm *comm);
uint8_t *sim_net_stage(struct ncclComm *comm, int kind, int ch, int peer, uint64_t t);
int sim_net_send(struct ncclComm *comm, int kind, int ch, int peer, uint64_t t, uint64_t sig,
		 const void *data, uint32_t len);
void sim_net_close(struct ncclComm *comm);

/* proxy.c */
ncclResult_t sim_proxy_create(const char *tag, struct ncclProxyState **out);
void sim_proxy_stop(struct ncclProxyState *ps);
void sim_proxy_post(struct ncclProxyState *ps, struct ncclProxyArgs *args, int is_recv);
void sim_kernel_bell_ring(void);
const char *sim_kernel_bell_name(void);
void sim_kernel_bell_wait(uint32_t seen);
uint32_t sim_kernel_bell_read(void);

/* intra.c: same-host peers (P2P/SHM), no proxy progress */
int sim_intra_peer(const struct ncclComm *comm, int peer);
int sim_intra_progress(struct ncclProxyArgs *args);

/* kernel.c */
struct sim_op *sim_op_new(struct ncclComm *comm, int func, const void *sendbuff,
			  void *recvbuff, size_t count, int dtype, int redop, int root);
ncclResult_t sim_plan_launch(struct sim_op *ops, void *stream);
void sim_op_unref(struct sim_op *op);

/* reduce.c */
size_t sim_dtype_size(int dtype);
void sim_reduce(void *acc, const void *in, size_t n, int dtype, int redop);
void sim_avg_finish(void *acc, size_t n, int dtype, int nranks);

/* fault.c */
struct sim_faults {
	int parsed;
	int net_stall;
	int net_slow;
	uint64_t net_at_ms;
	double net_factor;
	int gpu_stall;
	int gpu_slow;
	uint64_t gpu_at_ms;
	double gpu_factor;
	uint64_t net_for_ms, gpu_for_ms;	/* slow kinds: 0 to the end */
	int net_rank, gpu_rank;
	int teardown_hang;	/* Finalize/Destroy/Abort never return */
};
int sim_fault_parse(const char *s, int myrank, struct sim_faults *f, char *err, size_t errlen);
int sim_fault_setup(int myrank, uint64_t t0, char *err, size_t errlen);
void sim_teardown_fault(const char *fn);
int sim_net_stalled(uint64_t now);
double sim_net_factor(uint64_t now);
extern double sim_net_base_us, sim_net_gbps, sim_kernel_base_us, sim_gpu_gbps;

/* calllog.c */
void sim_calllog(const struct ncclComm *comm, const char *op, int is_coll, uint64_t seq,
		 size_t count, int dtype, int redop, int root, int peer, int has_ret,
		 ncclResult_t ret, const char *extra);

/* ras.c: NCCL's global comm array (RAS) and host / process hashes */
void sim_ras_comm_init(struct ncclComm *comm);
void sim_ras_comm_fini(struct ncclComm *comm);
uint64_t sim_host_hash(void);
uint64_t sim_pid_hash(void);

/* api.c */
uint64_t sim_get_hash(const void *bytes, size_t size);	/* NCCL's getHash */
/*
 * NCCL's logger, as NCCL 2.28's src/debug.cc: the same C++ symbol and
 * arguments, and a WARN is formatted into ncclLastError whatever
 * NCCL_DEBUG says (ccld reads it there), printed only with NCCL_DEBUG set.
 * SIM_WARN is NCCL's WARN().
 */
typedef enum {
	NCCL_LOG_NONE = 0, NCCL_LOG_VERSION = 1, NCCL_LOG_WARN = 2, NCCL_LOG_INFO = 3,
	NCCL_LOG_ABORT = 4, NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;
#define SIM_NCCL_ALL	(~0ul)
extern char ncclLastError[1024];
void ncclDebugLog(ncclDebugLogLevel level, unsigned long flags, const char *filefunc, int line,
		  const char *fmt, ...)
	__asm__("_Z12ncclDebugLog17ncclDebugLogLevelmPKciS1_z")
	__attribute__((format(printf, 5, 6), noinline));
#define SIM_WARN(...) ncclDebugLog(NCCL_LOG_WARN, SIM_NCCL_ALL, __FILE__, __LINE__, __VA_ARGS__)

#endif
