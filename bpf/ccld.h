/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ccld event ABI: the one header shared by the BPF programs, the userspace
 * loader, the capture files and the analyzer.  Fixed-size (128 byte)
 * little-endian records with a type tag, a version and explicit padding.
 * It includes nothing: BPF code gets the __u types from vmlinux.h, userspace
 * from <linux/types.h>.  Changing a layout means bumping CCLD_ABI_VERSION.
 */
#ifndef CCLD_H
#define CCLD_H

#define CCLD_ABI_VERSION	2
#define CCLD_EVENT_SIZE		128
#define CCLD_MAX_LAYOUTS	64	/* distinct NCCL builds traced at once */
#define CCLD_MAX_SEQ_TYPES	8	/* comm->seqNumber[] entries summed */

/* Hooked functions.  The uprobe cookie is (layout_slot << 16) | fn. */
enum ccld_fn {
	CCLD_FN_NONE = 0,
	/* collectives, in this order (ccld_fn_is_coll) */
	CCLD_FN_ALLREDUCE,
	CCLD_FN_ALLGATHER,
	CCLD_FN_REDUCESCATTER,
	CCLD_FN_BROADCAST,
	CCLD_FN_REDUCE,
	CCLD_FN_ALLTOALL,
	CCLD_FN_GATHER,
	CCLD_FN_SCATTER,
	/* point to point */
	CCLD_FN_SEND,
	CCLD_FN_RECV,
	/* groups */
	CCLD_FN_GROUP_START,
	CCLD_FN_GROUP_END,
	/* communicator creation */
	CCLD_FN_INIT_RANK,
	CCLD_FN_INIT_RANK_CONFIG,
	CCLD_FN_INIT_RANK_SCALABLE,
	CCLD_FN_INIT_ALL,
	CCLD_FN_SPLIT,
	CCLD_FN_SHRINK,
	/* teardown */
	CCLD_FN_FINALIZE,
	CCLD_FN_DESTROY,
	CCLD_FN_ABORT,
	/* errors */
	CCLD_FN_GET_ASYNC_ERROR,
	/* tier B: CUDA runtime / driver completion signals */
	CCLD_FN_CUDA_EVENT_RECORD,	/* (event, stream) */
	CCLD_FN_CUDA_EVENT_QUERY,	/* (event) -> 0 when complete */
	CCLD_FN_CUDA_EVENT_SYNC,	/* (event) */
	CCLD_FN_CUDA_STREAM_SYNC,	/* (stream) */
	CCLD_FN_CUDA_STREAM_QUERY,	/* (stream) -> 0 when idle */
	/* tier C: NCCL's proxy profiler hooks (nccl-hooks.md section 3) */
	CCLD_FN_PROXY_OP_START,
	CCLD_FN_PROXY_OP_STOP,
	CCLD_FN_PROXY_OP_STATE,
	CCLD_FN_PROXY_SEND_STEP,	/* buffer posted for a send step */
	CCLD_FN_PROXY_RECV_STEP,	/* buffer posted for a recv step */
	CCLD_FN_PROXY_STEP_STATE,
	CCLD_FN_PROXY_STEP_STOP,
	CCLD_FN_PROXY_SNAPSHOT,		/* tier E: read from memory by the loader */
	CCLD_FN_MAX,
};

/* cookie bit: the hook is on the driver API (libcuda), not the runtime */
#define CCLD_COOKIE_DRIVER	(1u << 15)

#define ccld_fn_is_coll(fn)	((fn) >= CCLD_FN_ALLREDUCE && (fn) <= CCLD_FN_SCATTER)
#define ccld_fn_is_p2p(fn)	((fn) == CCLD_FN_SEND || (fn) == CCLD_FN_RECV)
#define ccld_fn_is_init(fn)	((fn) >= CCLD_FN_INIT_RANK && (fn) <= CCLD_FN_SHRINK)
#define ccld_fn_is_teardown(fn)	((fn) >= CCLD_FN_FINALIZE && (fn) <= CCLD_FN_ABORT)
#define ccld_fn_is_proxy(fn)	((fn) >= CCLD_FN_PROXY_OP_START && (fn) <= CCLD_FN_PROXY_SNAPSHOT)
#define ccld_fn_is_cuda(fn)	((fn) >= CCLD_FN_CUDA_EVENT_RECORD && (fn) <= CCLD_FN_CUDA_STREAM_QUERY)

enum ccld_ev_type {
	CCLD_EV_CALL = 1,	/* collective / p2p entry: arguments */
	CCLD_EV_RET,		/* return of a hooked call: ret code, duration */
	CCLD_EV_GROUP,		/* ncclGroupStart / ncclGroupEnd entry */
	CCLD_EV_COMM,		/* comm creation / teardown entry (rare ring) */
	CCLD_EV_COMM_RET,	/* comm creation / teardown return (rare ring) */
	CCLD_EV_ASYNC_ERR,	/* ncclCommGetAsyncError returned an error (rare) */
	CCLD_EV_CUDA,		/* tier B call returned: u.cuda */
	CCLD_EV_LIB_LOAD,	/* a new process loaded an NCCL library (rare) */
	CCLD_EV_PROXY,		/* tier C proxy hook / tier E snapshot: u.proxy */
	/* written by userspace into the same stream (and capture files) */
	CCLD_EV_PROC_ATTACH = 32, /* a process was attached */
	CCLD_EV_PROC_EXIT,	/* a traced process exited */
	CCLD_EV_LOST,		/* ring buffer drops noticed: u.lost */
	CCLD_EV_TICK,		/* the host's clock, every 250 ms: ts_ns = now */
	CCLD_EV_PROC_STATE,	/* /proc state letter changed: u.proc.state */
	CCLD_EV_PROC_LABEL,	/* where the process runs (Kubernetes): u.label */
	CCLD_EV_XID,		/* a GPU error (NVIDIA Xid) on this process's GPU: u.xid */
	CCLD_EV_TCP,		/* TCP trouble on a traced process's socket (BPF): u.tcp */
	CCLD_EV_RDMA = 40,	/* RDMA verbs control path (tier D, BPF): u.rdma */
	CCLD_EV_COMM_STATE,	/* a comm rank's state read from memory (attach, on demand): u.cstate */
	CCLD_EV_THREAD,		/* a thread of a traced process: state, where it waits: u.thread */
	CCLD_EV_PROC_LOST,	/* records of this process lost (ring full): u.lost, its own */
	CCLD_EV_THREAD_FD,	/* the file its thread's system call is on: u.fd, before that
				 * thread's CCLD_EV_THREAD record */
	CCLD_EV_NCCL_WARN,	/* one part of a warning NCCL logged (BPF, rare): u.warn */
	CCLD_EV_COMM_NAME,	/* the name a creation call's config gives its comm: u.comm_name,
				 * just before that call's CCLD_EV_COMM record (BPF, rare) */
	CCLD_EV_ENDPOINT,	/* a traced process's end of TCP connections: u.endpoint */
	CCLD_EV_SCHED,		/* a proxy thread's CPU and run-queue time while step hooks
				 * are on (tid: the thread): u.sched */
	CCLD_EV_THREAD_STACK,	/* one part of a thread's native stack: u.stack, before that
				 * thread's CCLD_EV_THREAD record */
	CCLD_EV_TYPE_MAX,
};

/* ccld_event.flags */
#define CCLD_F_IDENT	(1u << 0) /* comm magic checked, hash/rank/nranks read */
#define CCLD_F_SEQ	(1u << 1) /* nccl_seq holds sum(comm->seqNumber[]) */
#define CCLD_F_NO_MAGIC	(1u << 2) /* layout has no magic: fields read unchecked */
#define CCLD_F_BAD_COMM	(1u << 3) /* comm pointer failed the magic check */
#define CCLD_F_RETPROBE	(1u << 4) /* produced by a uretprobe */
/* CCLD_EV_PROXY, set by the loader once it mapped the op to its comm */
#define CCLD_F_PROXY_RECV (1u << 5) /* args->progress is a recv progress fn */
#define CCLD_F_PROXY_DIR (1u << 6) /* the send/recv direction is known */
/* CCLD_EV_PROXY snapshot: u.proxy.coll/dtype/redop hold the op's arguments */
#define CCLD_F_PROXY_ARGS (1u << 7)
/* CCLD_EV_LIB_LOAD: the BPF hook stopped the process (--stop-new) */
#define CCLD_F_STOPPED	(1u << 8)

/* Identity of a communicator as read from the target's memory at the probe. */
struct ccld_ident {
	__u64 comm;		/* ncclComm_t address in the target */
	__u64 hash;		/* comm->commHash (0: unknown) */
	__s32 rank;		/* comm->rank (-1: unknown) */
	__s32 nranks;		/* comm->nRanks (-1: unknown) */
	__u64 nccl_seq;		/* sum of comm->seqNumber[] (CCLD_F_SEQ) */
};

struct ccld_call {		/* CCLD_EV_CALL */
	__u64 count;
	__u64 sendbuff;
	__u64 recvbuff;
	__u64 stream;
	__s32 root_or_peer;	/* root (bcast/reduce/gather/scatter), peer (p2p), -1 */
	__u8 dtype;		/* ncclDataType_t */
	__u8 redop;		/* ncclRedOp_t, 0xff: none */
	__u8 pad[2];
	__u32 group_depth;	/* ncclGroupStart nesting at the call */
	__u32 pad2;
};

struct ccld_ret {		/* CCLD_EV_RET, CCLD_EV_COMM_RET */
	__s64 ret;		/* ncclResult_t */
	__u64 entry_ns;		/* ts of the matching entry, 0 if unseen */
	__u64 newcomm;		/* *newcomm at return of a creation call */
	__u64 cuda_dev;		/* comm->cudaDev at a creation return */
	__u64 bus_id;		/* comm->busId at a creation return */
};

struct ccld_group {		/* CCLD_EV_GROUP */
	__u32 depth;		/* nesting before this call */
	__u32 pad;
};

struct ccld_comm_call {		/* CCLD_EV_COMM */
	__u64 id_hash;		/* NCCL's getHash of the by-value ncclUniqueId (InitRank*) */
	__u64 parent;		/* parent comm (Split/Shrink) */
	__u64 newcomm_pp;	/* ncclComm_t* out parameter */
	__s32 nranks;		/* argument (InitRank*, InitAll ndev) */
	__s32 rank;		/* argument (InitRank*) */
	__s32 color;		/* Split */
	__s32 key;		/* Split */
	__u64 parent_hash;	/* parent->commHash (Split/Shrink) */
};

struct ccld_cuda {		/* CCLD_EV_CUDA */
	__u64 event;		/* cudaEvent_t / CUevent, 0 for stream calls */
	__u64 stream;		/* cudaStream_t / CUstream, 0 for event calls */
	__s64 ret;		/* cudaError_t / CUresult */
	__u64 entry_ns;
	__u32 driver;		/* 1: libcuda (cu*), 0: runtime (cuda*) */
	__u32 pad;
};

/*
 * CCLD_EV_PROXY: one sub (channel, peer) of a proxy op, at a tier C hook or
 * (fn CCLD_FN_PROXY_SNAPSHOT) read by the loader from the process's active
 * ops.  Step counters are relative to the sub's base (steps of this op).
 * From BPF, id.comm is the ncclProxyArgs address and ccld_event.thread the
 * proxy thread's pthread_t; the loader maps the thread to its communicator
 * and fills id.hash/rank/nranks (CCLD_F_IDENT) before anything else sees
 * the record.  Snapshot records of one (pid, comm) share ts_ns and carry
 * their index in step and the total in nsnap (total 0: no active op).
 */
struct ccld_proxy {
	__u64 op_count;		/* args->opCount: collOpCount<<1, p2p <<1|1 */
	__u64 progress;		/* args->progress: send or recv progress fn */
	__s64 nbytes;
	__u32 posted;
	__u32 transmitted;
	__u32 received;
	__u32 done;
	__s32 nsteps;
	__s32 peer;
	__s32 rank;		/* sub->rank, -1 unknown */
	__s32 step;		/* step hooks: stepId; snapshot: index */
	__s16 channel;
	__u8 sub;		/* index s in args->subs[] */
	__u8 state;		/* RecordProxy*State: the state argument */
	__u16 slice_steps;
	__u16 nsnap;		/* snapshot: records in this snapshot */
};

/* Where a CCLD_EV_COMM_STATE record's comm was found (ccld_comm_state.source). */
enum ccld_comm_src {
	CCLD_COMM_SRC_ARRAY = 1,	/* NCCL's global ncclComms[] (RAS, 2.24+) */
	CCLD_COMM_SRC_SCAN,		/* found by its magic in the process's memory */
	CCLD_COMM_SRC_PEER,		/* a dead rank, from a live rank's peer table */
	CCLD_COMM_SRC_CALLS,		/* a comm ccld knew from its calls, read again */
};

#define CCLD_SEQ_FNS	5	/* comm->seqNumber[] per ncclFunc_t kept (NCCL_NUM_FUNCTIONS) */

/*
 * CCLD_EV_COMM_STATE: one comm rank as its process's memory holds it, read
 * by the loader when it attaches (and on demand), before any new call is
 * seen.  id: the comm's address and identity; id.nccl_seq the collectives
 * launched, sum(comm->seqNumber[]) (CCLD_F_SEQ).  Source PEER: rank
 * id.rank's process (pid of the record) no longer exists on this host; a
 * live rank's comm->peerInfo[] named it (pidHash), and id.comm is 0.
 */
struct ccld_comm_state {
	__u64 seq_number[CCLD_SEQ_FNS];	/* launched per ncclFunc_t (nseq valid) */
	__u64 coll_op_count;	/* comm->collOpCount: collectives with proxy work */
	__u64 op_count;		/* comm->opCount */
	__u8 nseq;		/* seq_number[] entries read, 0: none */
	__u8 source;		/* enum ccld_comm_src */
	__u8 counts;		/* CCLD_CS_* bits: which counters were read */
	__u8 init_state;	/* comm->initState (CCLD_CS_INIT_READ): 0 done, 7 inside
				 * its ncclCommInitRank* (ncclInProgress), else failed */
	__s32 cuda_dev;		/* comm->cudaDev, -1 unknown */
};

#define CCLD_CS_COLL_OP_COUNT	(1u << 0)
#define CCLD_CS_OP_COUNT	(1u << 1)
/* the peer table was read (CCLD_CS_INTRA_NODE says what it holds) */
#define CCLD_CS_HOSTS_READ	(1u << 2)
/*
 * every rank of the comm has this rank's host hash and the process does not
 * turn NCCL's intra-node transports off: its connections have no proxy ops
 */
#define CCLD_CS_INTRA_NODE	(1u << 3)
/*
 * init_state holds comm->initState: NCCL sets ncclInProgress before its
 * bootstrap and ncclSuccess once the comm is connected, so a comm read in
 * memory with ncclInProgress is one whose ranks are inside their init
 */
#define CCLD_CS_INIT_READ	(1u << 4)
#define CCLD_INIT_IN_PROGRESS	7	/* ncclInProgress */

/*
 * The "entries" map's key and value: a call entered and not returned yet,
 * per thread (pid_tgid) and function (fn, | CCLD_COOKIE_DRIVER for the
 * driver API), saved by its uprobe for its uretprobe.  The loader reads it
 * too: a thread inside a CUDA synchronize (CCLD_EV_THREAD's fn).
 */
struct ccld_entry_key {
	__u64 pid_tgid;
	__u32 fn;
	__u32 pad;
};

struct ccld_entry_val {
	__u64 ts;	/* its entry, CLOCK_MONOTONIC */
	__u64 ptr;	/* out parameter or object saved at entry */
	__u64 comm;	/* the communicator (tier A), the stream (tier B) */
};

/*
 * CCLD_EV_THREAD: one thread of a traced process, from /proc/PID/task/TID
 * (stat, syscall, wchan, comm), when the loader attaches and when it
 * changes while a comm of the process is suspected.  tid: the thread.
 * fn: the CUDA synchronize it is inside (CCLD_FN_CUDA_STREAM_SYNC or
 * CCLD_FN_CUDA_EVENT_SYNC), 0 none; its entry in the event's
 * cuda_since_ns.  cuda_stack: entered before the probes were in, found on
 * the thread's user stack (user/probe/cudawait.h), and cuda_since_ns is
 * when the loader first saw it there (the wait is at least that long).
 */
struct ccld_thread {
	__s32 syscall;		/* system call it is in; -1 running in user space, -2 unknown */
	__u8 state;		/* /proc state letter: R S D T t Z */
	__u8 main;		/* the process's main thread (tid == pid) */
	__u8 cuda_stack;	/* fn found on its stack (see above) */
	__u8 pad;
	__u64 arg0;		/* the system call's first argument (an fd, an address) */
	char name[16];		/* thread name (/proc/.../comm), NUL-terminated */
	char wchan[32];		/* kernel function it sleeps in, "" when running */
};

/*
 * CCLD_EV_THREAD_FD: what the fd a thread's system call works on (its
 * first argument: write, read, fsync...) names, /proc/PID/fd/FD's link:
 * a path, "pipe:[N]", "socket:[N]".  The end of a longer one, after "...".
 */
struct ccld_thread_fd {
	__s32 fd;
	__u32 pad;
	char path[56];		/* NUL-terminated */
};

/*
 * CCLD_EV_NCCL_WARN: NCCL's WARN() goes through ncclDebugLog(NCCL_LOG_WARN,
 * ...), which formats the message into the library's ncclLastError buffer
 * whatever NCCL_DEBUG says.  Its uretprobe sends one warning as NPARTS
 * consecutive records of the calling thread: part 0 the source file (its
 * last bytes), part 1 the format string (its first bytes: the loader checks
 * the message against it, since a NOWARN-wrapped call leaves the buffer
 * untouched), parts 2.. the message in CCLD_WARN_CHUNK-byte pieces.
 */
#define CCLD_WARN_CHUNK		56
#define CCLD_WARN_MSG_PARTS	8	/* message bytes kept: 8 * 56 = 448 */
#define CCLD_WARN_MAX_PARTS	(2 + CCLD_WARN_MSG_PARTS)
#define NCCL_LOG_WARN_LEVEL	2	/* NCCL's ncclDebugLogLevel NCCL_LOG_WARN */

struct ccld_nccl_warn {
	__u32 line;		/* the WARN's source line */
	__u8 part;		/* 0 file, 1 format, 2.. message */
	__u8 nparts;		/* parts of this warning */
	__u8 pad[2];
	char text[CCLD_WARN_CHUNK];	/* NUL-padded; a full chunk has no NUL */
};

/*
 * CCLD_EV_COMM_NAME: ncclConfig_t.commName (NCCL 2.27+) of a creation call
 * (InitRankConfig, InitRankScalable, Split, Shrink), read at its entry:
 * NCCL keeps the caller's pointer, whose string need not outlive the call
 * (PyTorch's split points it at a temporary).
 */
#define CCLD_CONFIG_MAGIC		0xcafebeef
#define CCLD_CONFIG_NAME_VERSION	22700	/* NCCL_VERSION(2, 27, 0) */
#define CCLD_CONFIG_NAME_OFF		48	/* offsetof(ncclConfig_t, commName) */
struct ccld_comm_name {
	char name[64];		/* NUL-terminated, cut at 63 bytes */
};

/*
 * CCLD_EV_ENDPOINT: a local TCP endpoint (address, port) of the process
 * PID's sockets (connected, or listening on that address), from
 * ccld-trace's socket scan (tier D): once when it first has one there,
 * and (gone) when it has none any more.
 * NCCL names a peer by the address of the peer's end of their connection
 * ("... remote peer 10.0.0.2<41000>" in a warning): this turns it into a
 * process, across hosts too.
 */
struct ccld_endpoint {
	char addr[46];		/* numeric, NUL-terminated; IPv4-mapped IPv6 as IPv4 */
	__u16 port;		/* host order */
	__u8 gone;		/* 1: the process has no socket there any more */
	__u8 pad;
	__u32 netns;		/* the socket's network namespace (inode) */
};

/*
 * CCLD_EV_SCHED: /proc/PID/task/TID/schedstat of a thread that sent step
 * records, read every tick while its process's step hooks are on.  A proxy
 * thread that waits for a CPU makes slow steps that are not its link's.
 */
struct ccld_sched {
	__u64 cpu_ns;		/* time on a CPU, cumulative */
	__u64 run_delay_ns;	/* time runnable, waiting on a run queue, cumulative */
	__u64 slices;		/* timeslices run */
};

/*
 * CCLD_EV_THREAD_STACK: a thread's native stack as text, innermost frame
 * first ("write+0x17 < save_checkpoint+0x4e < main+0x210"), read by
 * ccld-trace without stopping the thread (user/probe/ustack.c): NPARTS
 * consecutive records of the thread, CCLD_STACK_CHUNK bytes each, just
 * before its CCLD_EV_THREAD record of the same look.
 */
#define CCLD_STACK_CHUNK	56
#define CCLD_STACK_PARTS	4	/* text kept: 4 * 56 = 224 bytes */

struct ccld_thread_stack {
	__u8 part;		/* 0.. */
	__u8 nparts;		/* parts of this stack */
	__u8 nframes;		/* frames in the text */
	__u8 pad[5];
	char text[CCLD_STACK_CHUNK];	/* NUL-padded; a full chunk has no NUL */
};

struct ccld_async_err {		/* CCLD_EV_ASYNC_ERR */
	__s64 result;		/* the ncclResult_t written to *asyncError */
};

struct ccld_proc {		/* CCLD_EV_PROC_ATTACH / _EXIT / _STATE */
	__u32 ppid;
	__u32 layout_slot;	/* index of the library's layout, or ~0 */
	__s32 exit_code;	/* PROC_EXIT: wait status if known, else -1 */
	__u8 state;		/* /proc/PID/stat state letter ('T': stopped) */
	__u8 pad[3];
	char name[32];		/* /proc/PID/comm */
};

enum ccld_label_kind {
	CCLD_LABEL_POD = 1, CCLD_LABEL_NAMESPACE, CCLD_LABEL_CONTAINER,
	CCLD_LABEL_RANK,	/* the launcher's global rank (RANK, SLURM_PROCID...) */
	CCLD_LABEL_LOCAL_RANK,	/* ... and local rank (LOCAL_RANK, SLURM_LOCALID...) */
	CCLD_LABEL_NCCL_LIB,	/* its NCCL library: "VERSION BUILD-ID" (hex), "" parts unknown */
	CCLD_LABEL_NCCL_ENV,	/* one NCCL_* variable of its environment: "NAME=VALUE" */
	CCLD_LABEL_GPU,		/* its GPU as its comm says: "CUDA_DEV DDDD:BB:DD.F" */
};

struct ccld_label {		/* CCLD_EV_PROC_LABEL, one per kind */
	__u8 kind;		/* enum ccld_label_kind */
	char value[63];		/* NUL-terminated */
};

struct ccld_xid {		/* CCLD_EV_XID, from the kernel log */
	__u64 bus_id;		/* the GPU, as NCCL's comm->busId (0x00001a000) */
	__u32 xid;		/* the Xid number */
	char text[52];		/* the rest of the driver's line, NUL-terminated */
};

enum ccld_tcp_kind {
	CCLD_TCP_RETRANSMIT = 1,	/* tcp_retransmit_skb */
	CCLD_TCP_RESET_RX,		/* tcp_receive_reset: the peer reset it */
	CCLD_TCP_RESET_TX,		/* tcp_send_reset: we reset it */
	CCLD_TCP_STATE,			/* inet_sock_set_state */
};

/*
 * CCLD_EV_TCP.  From BPF ccld_event.pid is the process owning the socket
 * (the loader's socket table: the event fires in softirq context); the
 * loader fills peer_pid before anything else sees the record.
 */
struct ccld_tcp {
	__u8 kind;		/* enum ccld_tcp_kind */
	__u8 family;		/* AF_INET, AF_INET6 */
	__u8 old_state;		/* CCLD_TCP_STATE: TCP_* (TCP_ESTABLISHED = 1) */
	__u8 new_state;
	__u16 lport;		/* host order */
	__u16 rport;
	__u8 laddr[16];		/* IPv4: the first 4 bytes, network order */
	__u8 raddr[16];
	__u32 netns;		/* network namespace inode */
	__u32 total_retrans;	/* tcp_sock.total_retrans after this event */
	__u32 srtt_us;		/* smoothed RTT */
	__u32 peer_pid;		/* the traced process at the other end, 0: none */
};

/* key of the tcp_watch map: a traced process's socket (value: its pid) */
struct ccld_tcp_key {
	__u32 netns;
	__u16 lport;		/* host order */
	__u16 rport;
	__u8 laddr[16];		/* AF_INET: first 4 bytes; AF_INET6: all 16 */
	__u8 raddr[16];
};

/* ccld_rdma.source: where in the verbs control path the record came from */
enum ccld_rdma_src {
	CCLD_RDMA_MODIFY_QP = 1,	/* ib_modify_qp_with_udata to ERR/SQE (process context) */
	CCLD_RDMA_DEV_EVENT,		/* ib_dispatch_event: port/device event (pid 0 from BPF) */
	CCLD_RDMA_QP_EVENT,		/* ib_uverbs_qp_event_handler: QP async event */
	CCLD_RDMA_CQ_EVENT,		/* ib_uverbs_cq_event_handler: CQ async event */
};

#define CCLD_RDMA_NONE		0xff	/* event / old_state / new_state unknown */

struct ccld_rdma {		/* CCLD_EV_RDMA */
	char dev[32];		/* ib_device->name ("mlx5_0"), NUL-terminated */
	__u32 port;		/* port number, 0: unknown / not port-bound */
	__u32 qp_num;		/* QP number, 0: none */
	__u8 source;		/* enum ccld_rdma_src */
	__u8 event;		/* enum ib_event_type (IB_EVENT_*), CCLD_RDMA_NONE */
	__u8 old_state;		/* enum ib_qp_state (IB_QPS_*), CCLD_RDMA_NONE */
	__u8 new_state;		/* enum ib_qp_state, CCLD_RDMA_NONE */
	__u32 pad;
};

struct ccld_lost {		/* CCLD_EV_LOST, CCLD_EV_PROC_LOST (one process's) */
	__u64 main_drops;	/* cumulative, all CPUs */
	__u64 rare_drops;
	/*
	 * CCLD_EV_LOST: step records proxy.bpf.c left out (cumulative)
	 * because the main ring was 3/4 full, so that calls still fit
	 */
	__u64 steps_shed;
};
#define CCLD_DROP_MAIN		0	/* the drops map's indexes */
#define CCLD_DROP_RARE		1
#define CCLD_DROP_STEPS_SHED	2

/*
 * The pid_drops map's value: the records of one process (tgid) that a
 * full ring refused, per ring, and when the latest was refused
 * (bpf_ktime_get_ns).  The process is the one the record was about (a
 * TCP record's: the socket's owner).
 */
struct ccld_pid_drops {
	__u64 drops[2];		/* [0] main ring, [1] rare ring */
	__u64 last_ns;
};
#define CCLD_MAX_DROP_PIDS	16384

/*
 * One record as a BPF program writes it: the kernel/user ABI, fixed size,
 * also the capture file's record.  A call changes shape three times after
 * this, each for a reason: call_rec (user/record/state.h) pairs an entry
 * with its return on one thread and gives it a seq; an_op (analyzer.h) is
 * what the analyzer needs of a call, with no BPF type in it (the analyzer
 * is built without libbpf); an_wire (analyzer/an_wire.h) is an analyzer
 * input as bytes, for the fleet's Redis streams.
 */
struct ccld_event {
	__u16 type;		/* enum ccld_ev_type */
	__u8 version;		/* CCLD_ABI_VERSION */
	__u8 fn;		/* enum ccld_fn */
	__u32 flags;		/* CCLD_F_* */
	__u32 pid;		/* tgid */
	__u32 tid;
	__u64 ts_ns;		/* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	struct ccld_ident id;	/* 32 bytes */
	union {
		struct ccld_call call;
		struct ccld_ret ret;
		struct ccld_group group;
		struct ccld_comm_call comm;
		struct ccld_async_err async_err;
		struct ccld_cuda cuda;
		struct ccld_proxy proxy;
		struct ccld_proc proc;
		struct ccld_lost lost;
		struct ccld_label label;
		struct ccld_xid xid;
		struct ccld_tcp tcp;
		struct ccld_rdma rdma;
		struct ccld_comm_state cstate;
		struct ccld_thread thread;
		struct ccld_thread_fd fd;
		struct ccld_nccl_warn warn;
		struct ccld_comm_name comm_name;
		struct ccld_endpoint endpoint;
		struct ccld_sched sched;
		struct ccld_thread_stack stack;
		__u8 raw[64];
	} u;
	/*
	 * CCLD_EV_PROXY from BPF: the calling thread's pthread_t (x86-64
	 * fsbase).  Snapshot records (CCLD_F_PROXY_ARGS): the op's arguments.
	 */
	union {
		__u64 thread;
		__u64 cuda_since_ns;	/* CCLD_EV_THREAD: see struct ccld_thread */
		struct {
			__u8 coll;	/* args->coll (ncclFunc_t) */
			__u8 dtype;	/* args->dtype */
			__u8 redop;	/* args->redOp */
			__u8 pad[5];
		} args;
	};
};

/*
 * Struct field offsets of one NCCL build, from its DWARF, passed to BPF in
 * the read-only layouts map.  -1: field not found (feature off).
 */
struct ccld_layout {
	__s32 start_magic;
	__s32 end_magic;
	__s32 comm_hash;
	__s32 rank;
	__s32 nranks;
	__s32 cuda_dev;
	__s32 bus_id;
	__s32 seq_number;	/* comm->seqNumber[0] */
	__u32 seq_number_n;	/* elements of seqNumber[] (<= CCLD_MAX_SEQ_TYPES) */
	__s32 op_count;
	__s32 coll_op_count;
	__s32 n_channels;
	__u64 magic;		/* NCCL_MAGIC */
	__u32 valid;		/* nonzero when this slot is filled */
	__s32 init_state;	/* comm->initState (loader only: BPF does not read it) */
};

/*
 * Proxy struct offsets (tier C, nccl-hooks.md section 3), from DWARF.
 * args_* are offsets in struct ncclProxyArgs, sub_* in struct
 * ncclProxySubArgs; args_subs is the offset of subs[0], sub_size its stride.
 */
struct ccld_proxy_layout {
	__s32 args_subs;
	__s32 sub_size;
	__s32 args_nsubs;
	__s32 args_done;
	__s32 args_op_count;
	__s32 args_slice_steps;
	__s32 args_chunk_steps;
	__s32 args_progress;
	__s32 args_coll;
	__s32 args_protocol;
	__s32 args_dtype;
	__s32 args_red_op;
	__s32 sub_channel_id;
	__s32 sub_nsteps;
	__s32 sub_nbytes;
	__s32 sub_peer;
	__s32 sub_posted;
	__s32 sub_received;
	__s32 sub_transmitted;
	__s32 sub_done;
	__s32 sub_flushed;
	__s32 sub_base;		/* step counters are base + steps */
	__s32 sub_rank;
	__u32 valid;
};

/*
 * --stop-new (docs/deploy.md, "Stopping new processes"): the maps that
 * bound a stop.  probed_files holds the NCCL library files the loader has
 * uprobes on (pid -1: a new process's calls are caught without a stop),
 * keyed by the file's inode as the kernel sees it (dev: major << 20 |
 * minor, the kernel's dev_t).  heartbeat[0] is the loader's last sign of
 * life (CLOCK_MONOTONIC ns, bpf_ktime_get_ns's clock): a process is
 * stopped only while it is fresh.  stopped_pids maps each process stopped
 * to its stop time; the loader deletes the entries it continued, the
 * reaper continues the rest.
 */
#define CCLD_MAX_STOPPED	4096
#define CCLD_MAX_PROBED_FILES	256

struct ccld_file_key {
	__u64 dev;
	__u64 ino;
};

#endif /* CCLD_H */
