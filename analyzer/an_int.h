/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Analyzer internals shared by an_core.c, an_locate.c, an_detect.c, an_format.c. */
#ifndef CCLD_AN_INT_H
#define CCLD_AN_INT_H

#include "analyzer.h"
#include "hmap.h"

/*
 * Signatures kept per rank, indexed by seq % AN_HIST: the rounds a rank can
 * be ahead of the slowest one and still be compared (NCCL's own queue of
 * pending collectives is of this order).  Steady-state memory per rank is
 * constant: rounds older than this are dropped.
 */
#define AN_HIST		8
#define AN_MAX_NODES	64	/* stalled comms related per evaluation */
#define AN_EDGE_MAX_CUL	256	/* larger culprit sets are not chased */
#define AN_DONE_RING	64	/* op completions kept per process (a step of ops) */
/* rounds this long after step hooks were on are not judged slow */
#define AN_PERTURB_NS	1000000000ull

/*
 * SIG_MEM: launched as read from memory; its arguments and entry time unknown.
 * SIG_IDLE: when it was called, the rank's earlier op of the comm was known
 * done (the CPU did not run ahead of its GPU there: the call is the start).
 */
enum { SIG_RET = 1, SIG_DONE = 2, SIG_MEM = 4, SIG_IDLE = 8 };

struct an_sig {
	int64_t seq;		/* -1: empty slot */
	uint64_t t_enter;	/* entry on the rank's host clock */
	uint64_t count;
	int32_t root;
	uint8_t fn, dtype, redop, flags;
};

struct an_p2p {
	int32_t peer;
	int64_t n[2];		/* ops entered per direction (send, recv) */
	int64_t nret[2];	/* ops returned */
	int64_t ndone[2];	/* ops the GPU completed */
	struct an_sig last[2];
	uint64_t t_enter[2];
};

struct an_rank {
	uint32_t proc;		/* index + 1 in an->procs, 0: not seen */
	uint8_t gone;		/* destroyed / finalized */
	uint8_t tierb;		/* tier B completions seen for this rank */
	uint8_t in_call;	/* inside a collective that has not returned */
	uint8_t tierc;		/* tier C/E counters seen for this rank */
	int64_t entered;	/* highest collective seq entered, -1 */
	int64_t returned;
	int64_t completed;	/* GPU completed up to here (tier B), -1 */
	int64_t call_seq;	/* collective seq of the call in progress */
	uint64_t call_ns;	/* its entry */
	uint64_t last_ns;	/* last activity on this rank (own host clock) */
	struct an_sig hist[AN_HIST];
	struct an_p2p *p2p;
	uint32_t np2p, cap_p2p;
	struct an_progress *subs;	/* tier C/E: the op in flight */
	uint32_t nsubs, cap_subs;
	/* send rate of its latest proxy op (tier C), for slow diagnosis */
	uint64_t rate_op, rate_bytes, rate_t0, rate_t1;
	double send_rate;	/* bytes/s, 0 unknown */
	/* step-level records only: send steps' time in the network, summed */
	double net_ns;		/* integral of steps in flight over time */
	double net_bytes;	/* bytes of the steps that completed */
	uint64_t net_steps;	/* send steps that completed */
	/* its proxy last went idle (tier C): when, and when that op was first seen */
	uint64_t idle_t, idle_tf;
	/* state read from its process's memory (an_launched, an_snapshot) */
	uint8_t mem;		/* counters were read */
	uint8_t mem_only;	/* no call of it seen since: entries have no time */
	uint8_t dead;		/* a rank whose process is gone (peer table): counts unknown */
	uint8_t mem_open;	/* its latest tier E snapshot holds an unfinished op */
	int8_t op_off_ok;	/* op_off: 1 valid, 0 unknown, -1 inconsistent */
	uint8_t nfn;		/* fn_launched[] entries known */
	int64_t op_off;		/* seq of collective proxy op id X = X/2 + op_off */
	uint64_t fn_launched[AN_SEQ_FNS];	/* launched per ncclFunc_t */
	/* when its proxy finished collective SEQ (every sub of the op), by seq % AN_HIST */
	struct an_op_done { int64_t seq; uint64_t t; } op_done[AN_HIST];
	/*
	 * when its GPU reached collective SEQ: the first step record of a send
	 * sub of the op that shows a step transmitted (step hooks on: the data
	 * was ready), the record before showing none
	 */
	struct an_op_done op_arr[AN_HIST];
	uint64_t p2p_done_op;	/* its latest p2p proxy op whose end was noted */
};

/* a collective's proxy op id (NCCL opCount << 1, kept +1 here), not a p2p one */
static inline bool an_coll_op(uint64_t op)
{
	return op && !((op - 1) & 1);
}

/* the seq of collective proxy op OP on rank R (op_off_ok 1) */
static inline int64_t an_op_seq(const struct an_rank *r, uint64_t op)
{
	return (int64_t)((op - 1) >> 1) + r->op_off;
}

enum an_strength { ST_NONE, ST_WEAK, ST_STRONG };

/* the result of locating one comm (an_locate.c) */
struct an_status {
	enum an_strength strength;
	bool barrier;
	bool p2p;
	int64_t seq;
	int fn;
	enum an_class cls;
	int32_t *cul;		/* culprit ranks, ascending */
	uint32_t ncul, cap_cul;
	int32_t *wait;		/* ranks that entered the stuck round */
	uint32_t nwait, cap_wait;
	enum an_t4 t4;
	bool t4_remote;
	bool net_global;	/* narrowed by the cross-comm network rule */
	bool untouched;		/* H3 whose stuck op moved on no rank at all: queued */
	uint64_t open_op;	/* the comm's oldest open proxy op, 0 none */
	char text[AN_TEXT_MAX];
	uint32_t nval;
	struct an_value val[AN_MAX_EVIDENCE];
	uint64_t max_call_age_ns;	/* longest call in progress at the round */
};

struct an_comm {
	uint64_t hash;
	uint64_t parent;
	int32_t nranks;
	uint32_t nknown;
	struct an_rank *r;
	uint64_t *host_last;	/* per host id: last progress, 0: none */
	uint32_t nhost_last;
	uint64_t version;	/* bumped by every input */
	bool mem_progress;	/* its latest progress is a look at memory (no timing) */
	uint64_t analyzed;	/* version of st */
	uint64_t gpu_gen;	/* an->gpu_gen st was located with */
	struct an_status st;
	/* incident */
	bool suspected;
	bool sampling;		/* step hooks sampled for a slow verdict */
	bool declared;
	int64_t decl_seq;
	bool decl_p2p;
	uint64_t decl_onset;
	uint32_t decl_host;
	struct an_verdict *last;	/* last verdict emitted */
	/* per evaluation */
	int node;		/* index in the node list, -1 */
	/* slow diagnosis (an_slow.c) */
	struct an_slow *slow;
	bool slow_cascade;	/* its open incident is another comm's cascade */
	int64_t slow_seq;	/* round of its open incident's first verdict */
};

struct an_proc {
	uint32_t host;
	uint32_t pid;
	enum an_proc_state state;
	int exit_status;
	uint64_t t_ns;
	uint64_t wmask;		/* per evaluation: nodes it waits in */
	/* its proxies' recent "op done" times, for GPU-side start (slow) */
	struct an_done { uint64_t comm, t_launch, t_done; } done[AN_DONE_RING];
	uint32_t ndone;
	/*
	 * its latest judged collective calls (bit 0 newest): made on a GPU idle
	 * for a while (the CPU waits for its GPU before it calls, at least at
	 * the start of a step), or not (it queues its calls ahead: PyTorch)
	 */
	uint64_t idle_calls;
	uint32_t ncalls;
	/* step hooks on it for this many suspected or sampled comms (live) ... */
	uint32_t hooked;
	uint64_t perturbed_until;	/* ... and until about here (its host clock) */
	/* per evaluation: the stalled comm and proxy op its GPU executes */
	char label[3][AN_LABEL_MAX];	/* pod, namespace, container; "" */
	/* the latest GPU error the driver reported for it (tier D) */
	uint32_t xid;			/* 0: none */
	uint64_t xid_bus, xid_t;
	char xid_text[52];
	/* the latest RDMA error on a NIC it uses (tier D, an_nic.c) */
	struct an_nic_event nic;	/* nic.source 0: none */
	uint64_t nic_t;
	bool nic_up_again;		/* its port came back (port active) since */
	/*
	 * Its threads as /proc showed them (CCLD_EV_THREAD; one look = the
	 * records of one time): the main thread, one in D state (blocked in
	 * I/O), and how many there were.
	 */
	bool has_main, has_d;
	struct an_thread main_thread, d_thread;
	uint32_t nthreads, nthreads_d;
	uint64_t threads_t;		/* the latest look */
	struct an_comm *gpu_comm;	/* NULL: idle, or unknown */
	uint64_t gpu_op;
	bool gpu_known;
	uint64_t cmask;		/* per evaluation: nodes naming it culprit */
};

struct an_host_st {
	char *name;
	uint64_t now;
	uint64_t perturbed_until;	/* step hooks were on until about here,
					 * + AN_PERTURB_NS */
	bool have_now;
};

struct an {
	struct an_config cfg;
	struct an_sink sink;
	struct an_host_st *hosts;
	uint32_t nhosts;
	struct hmap comms;	/* hash -> struct an_comm */
	struct hmap procmap;	/* (host, pid) -> index + 1 */
	struct hmap tcp;	/* (host<<32|pid, peer pid, remote) -> an_tcp_pair */
	struct an_proc *procs;
	uint32_t nprocs, cap_procs;
	struct an_stats stats;
	struct an_verdict tmp;
	uint64_t gpu_gen;	/* bumped when a process's GPU position changes */
	bool debug;		/* CCLD_AN_DEBUG set */
	uint32_t nsuspected;	/* comms suspected now (step hooks on, live) */
};

/* an_core.c */
struct an_comm *an_comm_get(struct an *an, uint64_t hash, int32_t nranks,
			    bool create);
struct an_rank *an_rank_get(struct an *an, const struct an_key *k, bool create);
const struct an_proc *an_proc_of(const struct an *an, const struct an_rank *r);
const struct an_proc *an_proc_find(const struct an *an, uint32_t host, uint32_t pid);
uint32_t an_rank_host(const struct an *an, const struct an_rank *r);
void *an_grow(struct an *an, void *p, uint32_t *cap, uint32_t need,
	      size_t elem);

/* an_slow.c: a rank's duration of round SG (entry to GPU completion) */
struct an_slow;
void an_slow_duration(struct an *an, struct an_comm *c, int32_t rank,
		      const struct an_sig *sg, uint64_t t_done, uint32_t host);
void an_slow_free(struct an_slow *s);
/* the host's clock: ends step samples (an_slow.c) */
void an_slow_clock(struct an *an, uint32_t host, uint64_t now_ns);
/* an_format.c: named values appended to a verdict's evidence */
void an_verdict_val_i(struct an_verdict *v, const char *key, int64_t i);
void an_verdict_val_f(struct an_verdict *v, const char *key, double f);
void an_verdict_val_s(struct an_verdict *v, const char *key, const char *s);
/* an_hw.c: the culprits' GPU and NIC errors appended to V's evidence */
void an_hw_note(const struct an *an, struct an_verdict *v);
/* an_hw.c: an HW verdict about PID's rank in its largest comm; false: none */
bool an_hw_verdict(struct an *an, uint32_t host, uint32_t pid, uint64_t t_ns,
		   struct an_verdict *v);
/* an_nic.c: the culprits' NIC errors appended to V's evidence */
void an_nic_note(const struct an *an, struct an_verdict *v);
/* an_net.c: TCP evidence (tier D) */
void an_net_note(const struct an *an, const struct an_comm *c, struct an_verdict *v);
int32_t an_net_common_rank(const struct an *an, const struct an_comm *c, uint32_t *nlinks,
			   uint32_t *nretrans);
/* retransmits on a rank's links that make its link the cause of a slowdown */
#define AN_NET_MIN_RETRANS	20
void an_net_free(struct an *an);
/* step hooks on/off for C's processes: hang suspicion or slow sample */
void an_suspect_comm(struct an *an, struct an_comm *c, bool on, bool slow);
uint64_t an_gpu_start(const struct an *an, uint64_t comm, const struct an_rank *r,
		      const struct an_sig *sg, uint64_t t_done, uint64_t *holder,
		      uint64_t *idle_since);

/* an_locate.c: fills c->st (ages use each host's latest clock) */
void an_locate(struct an *an, struct an_comm *c);
/*
 * AN_HOLD_MEM: an open op known from a look at memory only (the attach
 * snapshot): which of several comms' ops a GPU runs first is not known.
 */
/* AN_HOLD_MEM_AT: the same, and the op's flows show its GPU executes it */
enum an_hold { AN_HOLD_NONE, AN_HOLD_OPEN, AN_HOLD_UNKNOWN, AN_HOLD_MEM, AN_HOLD_MEM_AT };
enum an_hold an_rank_pending(const struct an_comm *c, int32_t r, uint64_t *op,
			     uint64_t *t);
typedef void (*an_flow_fn)(void *ctx, struct an_comm *c, int32_t owner,
			   const struct an_progress *p, enum an_t4 t4);
void an_stuck_flows(const struct an *an, struct an_comm *c, an_flow_fn fn,
		    void *ctx);
bool an_locate_net(struct an *an, struct an_comm *c, int32_t r,
		   uint32_t nflows, uint32_t ncomms);
void an_val_i(struct an_status *st, const char *key, int64_t v);
void an_val_f(struct an_status *st, const char *key, double v);
void an_val_s(struct an_status *st, const char *key, const char *v);
const char *an_fn_name(int fn);
const char *an_dtype_name(int dtype, char *buf, size_t n);
const char *an_redop_name(int redop, char *buf, size_t n);

#endif
