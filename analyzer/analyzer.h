/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The hang analyzer (docs/analyzer.md): cross-rank detection and location
 * of H1 (not entered), H2 (inconsistent op) and H3 (all entered, no progress)
 * hangs, with cascades across communicators (Mycroft 5.2).
 *
 * Pure library: no BPF, no I/O, no global state, no clock of its own.  The
 * caller (live tracer, replay, fleet service) feeds observations in one
 * order; the same order gives the same verdicts.  All times are the source
 * host's CLOCK_MONOTONIC ns; times of two hosts are never subtracted, only
 * durations are compared.  Detection runs in an_clock(), which the caller
 * calls for each host every ~250 ms with that host's current time.
 *
 * docs/analyzer.md describes the rules and the evidence behind each class.
 */
#ifndef CCLD_ANALYZER_H
#define CCLD_ANALYZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AN_MAX_CULPRITS		64	/* listed in a verdict; the count is exact */
#define AN_MAX_EVIDENCE		32	/* named values in a verdict's evidence */
#define AN_TEXT_MAX		1024
#define AN_LABEL_MAX		64	/* a label's, a comm name's bytes, NUL included */

struct an;

struct an_config {
	double stall_s;		/* no progress on an op in flight: default 30 */
	double hang_s;		/* in flight this long, any op: default 300 */
	double suspect_frac;	/* suspect() at stall_s * this: default 0.5 */
	uint32_t barrier_bytes;	/* all-reduce this size or less: hang_s only (4) */
	double slow_window_s;	/* CCL-D's detection window: default 60 */
	/*
	 * A slow verdict only for a slowdown that costs something: slow
	 * rounds in this many consecutive iterations (default 3) and for at
	 * least this long (default 2 s; docs/slow.md).
	 */
	uint32_t slow_min_iters;
	double slow_min_s;
	/*
	 * Each process's calls come in the order it made them (one tracer's
	 * ring buffer, a capture; default true): a call tells whether it
	 * opens a run of its comm's ops (SIG_AFTER, docs/slow.md).  The fleet
	 * analyzer's shards do not keep that order across comms.
	 */
	bool call_order;
	/*
	 * A communicator whose every known rank is gone (destroyed, or its
	 * process exited), with no input for this long, is forgotten, and so
	 * is an exited process no rank refers to: default 30 s, 0 never
	 * (docs/analyzer.md, "Forgetting finished communicators").
	 */
	double forget_s;
	/*
	 * The heap its comm and rank state may hold (an_stats.mem_bytes):
	 * a record that would make a comm or grow a rank's arrays past it
	 * is refused, counted (mem_refused) and said once on stderr; the
	 * node agent's memory limit must never be what stops it.  Default
	 * 512 MiB (docs/analyzer.md, "Memory").
	 */
	size_t mem_max;
};

/* The one comm rank that a record is about. */
struct an_key {
	uint32_t host;		/* id from an_host() */
	uint32_t pid;
	uint64_t comm;		/* commHash */
	int32_t rank;
	int32_t nranks;		/* 0 where the caller does not know it here */
};

/* A collective or p2p call. */
struct an_op {
	struct an_key k;
	uint32_t tid;
	int fn;			/* enum ccld_fn: collective, CCLD_FN_SEND or _RECV */
	int64_t seq;		/* collectives: per comm; p2p: per (comm, peer, fn) */
	/*
	 * seq was counted from ccld's attach, not from the comm's creation:
	 * another rank's count may have started at another op, so the two
	 * are never compared as if they named the same op.
	 */
	bool seq_from_attach;
	uint64_t count;
	uint8_t dtype;		/* ncclDataType_t */
	uint8_t redop;		/* ncclRedOp_t, 0xff none */
	int32_t root;		/* -1 none */
	int32_t peer;		/* p2p peer rank, -1 for collectives */
	uint64_t t_ns;
};

/* Tier C / E progress of one (channel, peer, direction) of the op in flight. */
enum an_dir { AN_SEND = 0, AN_RECV = 1 };

struct an_progress {
	int64_t seq;		/* ccld seq of the op, -1: the op in flight */
	int32_t channel;
	int32_t peer;
	enum an_dir dir;
	/*
	 * Steps (Mycroft's chunks).  Send: posted = ready from the GPU (1),
	 * transmitted (2), done (3).  Recv: posted = buffers posted, received
	 * = arrived from the network, done = consumed by the GPU.
	 */
	uint64_t posted;
	uint64_t transmitted;
	uint64_t received;
	uint64_t done;
	uint64_t nsteps;	/* steps of the whole op, 0 unknown */
	uint64_t op;		/* the proxy op's id (NCCL opCount), 0 unknown */
	uint64_t nbytes;	/* bytes of this sub, 0 unknown */
	uint64_t t_first;	/* set by the analyzer: op first seen (host clock) */
	uint64_t t_last;	/* set by the analyzer: this sub's latest record */
	bool step;		/* from a step-level hook (every step change seen) */
	bool from_mem;		/* set by the analyzer: op known from a tier E look only */
	bool has_args;		/* coll, dtype, redop hold the op's arguments */
	uint8_t coll;		/* ncclFunc_t (args->coll) */
	uint8_t dtype;		/* ncclDataType_t */
	uint8_t redop;		/* args->redOp */
};

/*
 * A comm rank's counters read from its process's memory (the attach
 * snapshot, or a later look): NCCL's own numbers, so ncoll is ccld's seq
 * of the next collective.  A rank whose process is gone (a live rank's
 * peer table named it) comes with dead set and nothing else known.
 */
#define AN_SEQ_FNS	5	/* launched per ncclFunc_t (Broadcast..AllReduce) */
struct an_launch {
	int64_t ncoll;		/* collectives launched, sum(seqNumber[]); -1 unknown */
	bool has_coll_ops;
	uint64_t coll_ops;	/* collOpCount: collectives that had proxy (network) work */
	uint32_t nfn;		/* per_fn entries known (0..AN_SEQ_FNS) */
	uint64_t per_fn[AN_SEQ_FNS];	/* seqNumber[ncclFunc_t] */
	bool dead;		/* its process exited: named by a peer's table */
	bool hosts_known;	/* its peer table was read: intra_node holds */
	bool intra_node;	/* one host, over intra-node transports (no proxy) */
};

/* a thread's native stack as text, with its NUL (CCLD_STACK_PARTS x CCLD_STACK_CHUNK + 1) */
#define AN_STACK_MAX	225

/* One thread of a traced process, as /proc shows it (CCLD_EV_THREAD). */
struct an_thread {
	uint32_t tid;
	char state;		/* R S D T t Z */
	bool main;		/* tid == pid */
	int32_t syscall;	/* -1 running in user space, -2 unknown */
	uint64_t arg0;		/* its first argument */
	char name[16];
	char wchan[32];
	char path[56];		/* what the fd ARG0 names, where the call takes one; "" */
	uint8_t cuda_sync;	/* the CUDA synchronize it is inside (CCLD_FN_CUDA_*_SYNC), 0 */
	uint64_t cuda_since;	/* its entry, on the host's clock */
	/* entered before the probes, found on its stack: cuda_since is a bound */
	uint8_t cuda_stack;
	/* its native stack, innermost frame first ("write+0x17 < main+0x2e"); "" */
	char stack[AN_STACK_MAX];
};

enum an_proc_state { AN_PROC_RUNNING, AN_PROC_STOPPED, AN_PROC_EXITED };

/* A proxy thread's scheduler account (an_sched): cumulative ns */
struct an_sched {
	uint32_t tid;
	uint64_t cpu_ns;	/* on a CPU */
	uint64_t run_delay_ns;	/* runnable, waiting on a run queue */
};

/* ENV: the ranks of a comm run different NCCL libraries (an_env.c) */
enum an_class { AN_H1 = 1, AN_H2, AN_H3, AN_S1, AN_S2, AN_S3, AN_HW, AN_ENV };
#define AN_CLASS_LAST	AN_ENV
enum an_role { AN_ROOT, AN_CASCADE };
enum an_vkind { AN_V_NEW, AN_V_UPDATE, AN_V_RECOVERED };

/* Mycroft Table 4 */
enum an_t4 {
	AN_T4_NONE = 0,
	AN_T4_NOT_STARTED,
	AN_T4_NOT_TRANSMITTED,
	AN_T4_NOT_DELIVERED,
	AN_T4_GPU_NOT_READY,
};

struct an_culprit {
	int32_t rank;
	uint32_t host;
	uint32_t pid;
};

struct an_value {
	const char *key;	/* static string */
	bool is_str;
	bool is_float;
	int64_t i;
	double f;
	char s[32];
};

struct an_verdict {
	enum an_vkind kind;
	enum an_class cls;
	enum an_role role;
	uint64_t comm;
	int64_t seq;		/* the stuck round (p2p: the waiter's p2p seq) */
	bool p2p;
	int fn;			/* op of the stuck round (majority), enum ccld_fn */
	uint32_t ncul;		/* culprits listed (<= AN_MAX_CULPRITS) */
	uint32_t ncul_total;	/* culprits in all */
	struct an_culprit cul[AN_MAX_CULPRITS];
	uint32_t clock_host;	/* detected_ns and onset_ns are on this host */
	uint64_t detected_ns;
	uint64_t onset_ns;	/* last progress of the comm */
	uint64_t blocked_comm;	/* cascades: the comm that blocks this one */
	int64_t blocked_seq;
	enum an_t4 t4;		/* H3 with tier C/E data */
	bool t4_remote;		/* the cause is at the peer, not local */
	char text[AN_TEXT_MAX];	/* the evidence sentence */
	uint32_t nval;
	struct an_value val[AN_MAX_EVIDENCE];
};

/* Asks the caller to turn on (on=true) or off step hooks / take a tier E
 * snapshot for the processes of a communicator that is suspected stuck, or
 * (slow) to sample its step hooks for a slow verdict's rates. */
struct an_suspect {
	bool on;
	bool slow;		/* a step sample for a slow verdict, no snapshot */
	uint64_t comm;
	uint32_t nprocs;
	const struct an_culprit *procs;	/* rank, host, pid of each rank */
};

struct an_sink {
	void *ctx;
	void (*verdict)(void *ctx, const struct an_verdict *v);
	void (*suspect)(void *ctx, const struct an_suspect *s);	/* optional */
};

void an_config_default(struct an_config *c);

struct an *an_new(const struct an_config *c, const struct an_sink *sink);
void an_free(struct an *an);

/* Registers a host by name (idempotent): returns its id, or -1 on ENOMEM. */
int an_host(struct an *an, const char *name);
/*
 * HOST's records stopped coming (SILENT: a fleet node whose agent, or the
 * node itself, went quiet while others still send), or come again.  A
 * silent host's side of a comm says nothing about its progress: a comm's
 * time without progress is taken over its other hosts, and a verdict
 * naming a rank there says its node went silent.
 */
void an_host_silent(struct an *an, uint32_t host, bool silent);
const char *an_host_name(const struct an *an, uint32_t host);

/* The host's current time: runs detection. */
void an_clock(struct an *an, uint32_t host, uint64_t now_ns);

/* A comm rank appeared (init, split, attach).  parent: 0 none. */
int an_rank(struct an *an, const struct an_key *k, uint64_t parent,
	    uint64_t t_ns);
/*
 * The application's bytes FROM (FROM_MAX at most, NUL-ended or not) as a
 * label printable in a verdict line, tables and JSON: into TO (SIZE bytes,
 * NUL-ended), control bytes, '"' and DEL each made '?'
 */
void an_label_copy(char *to, size_t size, const char *from, size_t from_max);
/*
 * What the application called comm HASH, as its creation call said: the
 * ncclCommSplit COLOR (-1: none) and the config's commName NAME ("": none).
 * Known ranks' comms only (after an_rank).
 */
void an_comm_origin(struct an *an, uint64_t hash, int32_t color, const char *name);
/* The comm rank was destroyed/finalized/aborted: it no longer waits. */
void an_rank_gone(struct an *an, const struct an_key *k, uint64_t t_ns);

void an_op_enter(struct an *an, const struct an_op *op);
/* The API call returned (enqueued, not completed).  op: same as at entry. */
void an_op_return(struct an *an, const struct an_op *op, int64_t ret,
		  uint64_t t_ns);
/* Tier B: the GPU finished this op (op->seq), or all up to UPTO. */
void an_op_complete(struct an *an, const struct an_op *op, uint64_t t_ns);
void an_complete_upto(struct an *an, const struct an_key *k, int64_t upto,
		      uint64_t t_ns);

/*
 * A comm rank's launched counters read from memory (attach snapshot):
 * creates the rank if needed; the first look at a rank (and a look that
 * shows launches no call was seen for) is progress, a look that shows
 * nothing new is not.  Entries known only from memory have no time.
 */
void an_launched(struct an *an, const struct an_key *k, const struct an_launch *l,
		 uint64_t t_ns);

/* A thread of process PID: kept for its process's evidence in verdicts. */
void an_thread_state(struct an *an, uint32_t host, uint32_t pid, const struct an_thread *t,
		     uint64_t t_ns);

/* Tier C: counters of one sub of the op in flight. */
void an_progress(struct an *an, const struct an_key *k,
		 const struct an_progress *p, uint64_t t_ns);
/* Tier E: the rank's active proxy ops, replacing what was known. */
void an_snapshot(struct an *an, const struct an_key *k,
		 const struct an_progress *p, size_t n, uint64_t t_ns);

void an_proc_state(struct an *an, uint32_t host, uint32_t pid,
		   enum an_proc_state st, int exit_status, uint64_t t_ns);

/*
 * Process PID has lost TOTAL records so far (a full ring buffer; both
 * rings, cumulative: a repeat changes nothing), the latest at T_NS.  Until
 * a rank of it shows which calls it entered again (an entry or a look at
 * its launch counters, made after T_NS), no hang
 * verdict rests on that rank's comm before hang_s, and its slow rounds
 * near T_NS are not judged (docs/analyzer.md, "Lost records").
 */
void an_records_lost(struct an *an, uint32_t host, uint32_t pid, uint64_t total,
		     uint64_t t_ns);

/*
 * A thread of process PID that sends step records (a proxy thread), its
 * scheduler account S at T_NS (read every tick while step hooks are on).
 * A step sample's slow sender whose proxy thread waited for a CPU much
 * more than the others' is a busy host's, not a slow link (an_slow_sample.c).
 */
void an_sched(struct an *an, uint32_t host, uint32_t pid, const struct an_sched *s,
	      uint64_t t_ns);

/*
 * HOST's tracer has shed TOTAL step records so far (cumulative): its ring
 * buffer was 3/4 full, and step records, sampling data, gave way to calls.
 * A slow verdict from a step sample that ran meanwhile says its evidence is
 * incomplete (value steps_shed).
 */
void an_steps_shed(struct an *an, uint32_t host, uint64_t total, uint64_t t_ns);

/*
 * Tier D: the driver reported a GPU error (NVIDIA Xid) for the GPU BUS_ID
 * that process PID uses.  Gives an "HW" verdict for the process's rank, and
 * is cited in H3 and S2 verdicts that name it.  TEXT: the driver's words.
 */
void an_gpu_error(struct an *an, uint32_t host, uint32_t pid, uint64_t bus_id,
		  uint32_t xid, const char *text, uint64_t t_ns);

/*
 * Tier D: the RDMA verbs control path reported trouble on a NIC that
 * process PID uses (a QP moved to error, a QP/CQ async error, a port down,
 * a fatal device error).  Errors give an "HW" verdict naming the NIC and
 * port for the process's rank and are cited in its H3 and slow verdicts;
 * a port coming back (port active) is noted, not a verdict.
 */
struct an_nic_event {
	char dev[32];		/* IB device name ("mlx5_0"), NUL-terminated */
	uint32_t port;		/* 0: unknown */
	uint32_t qp_num;	/* 0: none */
	uint8_t source;		/* enum ccld_rdma_src (1..4) */
	uint8_t event;		/* IB_EVENT_*, 0xff: none (QP modify) */
	uint8_t old_state;	/* IB_QPS_*, 0xff: unknown */
	uint8_t new_state;
};
void an_nic_error(struct an *an, uint32_t host, uint32_t pid,
		  const struct an_nic_event *e, uint64_t t_ns);
/* "port error", "QP fatal", "QP to error", ...: what E says, in words */
const char *an_nic_event_name(const struct an_nic_event *e);
/* true when E is trouble (a verdict), false for news (port active, ...) */
bool an_nic_event_is_error(const struct an_nic_event *e);

/*
 * Tier D: TCP trouble on a connection of process PID (NCCL's socket
 * transport): PEER_PID is the traced process at the other end (0: not
 * traced; REMOTE "addr:port" says where).  Cited in S2/S3/H3 verdicts, and
 * the rank at one end of every retransmitting connection is the S2 culprit.
 */
enum an_tcp_kind { AN_TCP_RETRANSMIT = 1, AN_TCP_RESET_RX, AN_TCP_RESET_TX, AN_TCP_STATE };
/*
 * Process PID of HOST has sockets whose local end is ADDR (numeric IPv4
 * or IPv6) and PORT, or (GONE) has none there any more: NCCL names peers
 * by such addresses in its warnings, which verdicts then cite with the
 * peer's rank.
 */
void an_endpoint(struct an *an, uint32_t host, uint32_t pid, const char *addr, uint16_t port,
		 bool gone);
void an_tcp_event(struct an *an, uint32_t host, uint32_t pid, uint32_t peer_pid,
		  enum an_tcp_kind kind, int old_state, int new_state, const char *remote,
		  uint64_t t_ns);

/*
 * NCCL warned in process PID (its WARN(), read live whatever NCCL_DEBUG
 * says): FILE (the source file's last bytes, < AN_LABEL_MAX), LINE, MSG (<
 * AN_WARN_MAX bytes).  Cited in the verdicts that name the process.
 */
#define AN_WARN_MAX	449
void an_nccl_warning(struct an *an, uint32_t host, uint32_t pid, const char *file,
		     uint32_t line, const char *msg, uint64_t t_ns);

/*
 * Communicator setup and teardown (an_setup.c): a call entered or returned
 * by one rank.  Init (ncclCommInitRank*): GROUP is the unique id's hash,
 * which every rank of the new comm passes, and no rank returns before all
 * arrived: a rank that never calls it holds the others (H1 at init), all
 * inside and none back is a bootstrap that does not complete (H3).
 * Teardown (ncclCommFinalize/Destroy/Abort): GROUP is the comm's hash; a
 * rank inside one for the stall time is stuck there (H3, naming it).
 * Split (ncclCommSplit): every rank of the parent comm COMM calls it, the
 * k-th split of each rank with the others' k-th, and none returns before
 * all arrived (NCCL's allgather on the parent): as init, NRANKS and RANK
 * the parent's, GROUP the parent's hash and the split's index mixed
 * (an_setup_split_group).
 */
enum an_setup_kind { AN_SETUP_INIT = 1, AN_SETUP_TEARDOWN, AN_SETUP_SPLIT };
struct an_setup {
	uint32_t pid;
	uint64_t group;
	uint64_t comm;		/* split: the parent comm's hash; else 0 */
	enum an_setup_kind kind;
	int fn;			/* enum ccld_fn; init: 0 where the variant is not known */
	int32_t nranks, rank;
	bool returned;		/* false: entered */
	/*
	 * entered before T: found inside the call when ccld attached (an init
	 * read in memory, its comm's initState ncclInProgress; GROUP its
	 * commHash, which NCCL makes from the unique id as ccld hashes it)
	 */
	bool before;
	int64_t ret;		/* returned: NCCL's result */
	char name[AN_LABEL_MAX];	/* init: the comm's name in the call's config, "" none */
};
void an_setup_call(struct an *an, uint32_t host, const struct an_setup *s, uint64_t t_ns);
/* the GROUP of the INDEX-th split (from 0) of parent comm PARENT */
uint64_t an_setup_split_group(uint64_t parent, uint32_t index);

/* Where a process runs (Kubernetes pod, namespace, container): shown with
 * it in verdicts.  VALUE: at most AN_LABEL_MAX - 1 bytes. */
enum an_label {
	AN_LABEL_POD = 1, AN_LABEL_NAMESPACE, AN_LABEL_CONTAINER,
	AN_LABEL_RANK,		/* the launcher's global rank, decimal */
	AN_LABEL_LOCAL_RANK,	/* its local rank */
	AN_LABEL_NCCL_LIB,	/* its NCCL library, "VERSION BUILD-ID" */
	AN_LABEL_NCCL_ENV,	/* one of its NCCL_* variables, "NAME=VALUE" (many) */
	AN_LABEL_GPU,		/* its GPU: "CUDA_DEV DDDD:BB:DD.F" (comm->cudaDev, busId) */
	AN_LABEL_MAX_KIND = AN_LABEL_GPU
};
void an_proc_label(struct an *an, uint32_t host, uint32_t pid, enum an_label kind,
		   const char *value);

struct an_stats {
	uint64_t records;	/* inputs fed */
	uint64_t rejected;	/* inputs that named nothing known or were bad */
	uint64_t comms;
	uint64_t ranks;
	uint64_t verdicts;	/* new + updates */
	uint64_t recoveries;
	uint64_t analyses;	/* per-comm locate runs */
	uint64_t procs;		/* process slots made (a reused pid: another) */
	uint64_t comms_forgotten;	/* finished: their state freed */
	uint64_t procs_forgotten;
	size_t mem_bytes;	/* heap held for comm and rank state */
	uint64_t mem_refused;	/* records refused: mem_bytes would pass mem_max */
};

const struct an_stats *an_stats(const struct an *an);

/* Names */
const char *an_class_name(enum an_class c);	/* "H1" */
/* RANKS (N, ascending) as "0,2,4-7" into OUT, cut at LEN */
void an_rank_list(const int32_t *ranks, uint32_t n, char *out, size_t len);
/* the same for RANKS in any order: sorts them first (in place) */
void an_rank_list_sort(int32_t *ranks, uint32_t n, char *out, size_t len);
const char *an_t4_name(enum an_t4 s);		/* "not delivered" */

struct json_buf;

/*
 * The verdict as one JSON line (docs/cli.md), no newline; times are
 * written as ns + time_offset_ns (the caller's realtime offset of
 * v->clock_host, or 0 to keep CLOCK_MONOTONIC).  Returns 0 or -ENOMEM.
 */
int an_verdict_json(const struct an *an, const struct an_verdict *v,
		    int64_t time_offset_ns, struct json_buf *b);
/* One human sentence, no newline. */
int an_verdict_text(const struct an *an, const struct an_verdict *v,
		    struct json_buf *b);
/*
 * A cascade's short line, no newline: "cascade: H1 in comm .. seq 2 is
 * blocked by comm .. seq 5" (on a terminal its root's verdict is the news).
 */
int an_cascade_text(const struct an *an, const struct an_verdict *v,
		    struct json_buf *b);
/*
 * The verdict as every program prints it, no newline: JSON the JSON line;
 * else "VERDICT " and the sentence for a root, and "  cascade: ..." for a
 * cascade (the root is the news).  Returns 0 or -ENOMEM.
 */
int an_verdict_line(const struct an *an, const struct an_verdict *v, bool json,
		    int64_t time_offset_ns, struct json_buf *b);

#endif
