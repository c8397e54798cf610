/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Analyzer internals shared by its files (docs/analyzer.md lists them).
 * What only a rule's own files share is in a header of its own:
 * an_core_int.h (inputs), an_locate_int.h (location), an_detect_int.h
 * (detection, cascades), an_slow_int.h (slow diagnosis).
 */
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
#define AN_SAMP_EXTRA	8	/* processes a slow sample hooks beyond its comm's */
#define AN_NET_EST	64	/* per-completion network times kept per rank */
#define AN_SENT_RING	8	/* NCCL_STEPS: a connection's steps in flight, at most */
#define AN_SENT_MAX	64	/* send subs with steps in flight kept per rank */

/* a send sub's steps in flight, from step-level records (an_proxy.c) */
struct an_sent {
	int32_t channel, peer;
	uint64_t op;
	uint64_t t[AN_SENT_RING];	/* step % AN_SENT_RING seen transmitted; 0 unknown */
};
#define AN_MAX_NODES	64	/* stalled comms related per evaluation */
#define AN_EDGE_MAX_CUL	256	/* larger culprit sets are not chased */
#define AN_DONE_RING	64	/* op completions kept per process (a step of ops) */
#define AN_SWITCH_RING	16	/* a process's latest calls into another comm */
/* rounds this long after step hooks were on are not judged slow */
#define AN_PERTURB_NS	1000000000ull
/*
 * The most a step hook can delay a step, per step record: a uprobe hit
 * costs 7-22 us on the VMs measured, and the proxy thread's poll loop,
 * slower by a hit or two, sees each step that much later.
 */
#define AN_HOOK_DELAY_NS	50000.0
#define AN_HOOK_RATE_NS		50000000ull	/* a rate from this much of records */
#define AN_HOOK_SHARE_MAX	0.5		/* rounds hooks can make 2x longer: not judged */

/*
 * SIG_MEM: launched as read from memory; its arguments and entry time unknown.
 * SIG_IDLE: when it was called, the rank's earlier op of the comm was known
 * done (the CPU did not run ahead of its GPU there: the call is the start).
 * SIG_AFTER: the process's call before it was in another comm: it opens a
 * run of this comm's ops (a TP comm's alike all-reduces: the step's first).
 * SIG_AFTER_KNOWN: that call was seen (not the process's first since the
 * attach), so SIG_AFTER says something.
 */
enum { SIG_RET = 1, SIG_DONE = 2, SIG_MEM = 4, SIG_IDLE = 8, SIG_AFTER = 16,
       SIG_AFTER_KNOWN = 32 };

struct an_sig {
	int64_t seq;		/* -1: empty slot */
	uint64_t t_enter;	/* entry on the rank's host clock */
	uint64_t count;
	int32_t root;
	uint8_t fn, dtype, redop, flags;
};

/* entries of a rank's latest p2p ops kept per peer and direction */
#define AN_P2P_HIST	16

struct an_p2p {
	int32_t peer;
	int64_t n[2];		/* ops entered per direction (send, recv) */
	int64_t nret[2];	/* ops returned */
	int64_t ndone[2];	/* ops the GPU completed */
	struct an_sig last[2];
	uint64_t t_enter[2];
	/*
	 * entry of op seq at [seq % AN_P2P_HIST]: where the GPU is follows
	 * the first op it did not complete, not the latest entered (a CPU
	 * that runs steps ahead has entered later ones)
	 */
	uint64_t t_hist[2][AN_P2P_HIST];
	/*
	 * ops toward the peer that finished at the rank's proxy (tier C), on
	 * the channel of the first one seen (pch + 1; 0 none yet): a call's
	 * parts on other channels are the same op.  A connection's ops end in
	 * order, so the oldest open op there is the pdone-th one.
	 */
	int64_t pdone[2];
	uint64_t pdone_op[2];
	int32_t pch[2];
	bool from_attach[2];	/* n[] counted from the attach (an_op) */
};

struct an_rank {
	uint32_t proc;		/* index + 1 in an->procs, 0: not seen */
	uint8_t gone;		/* destroyed / finalized */
	uint8_t tierb;		/* tier B completions seen for this rank */
	uint8_t in_call;	/* inside a collective that has not returned */
	uint8_t tierc;		/* tier C/E counters seen for this rank */
	uint8_t seq_from_attach; /* its collective seqs count from the attach */
	int64_t entered;	/* highest collective seq entered, -1 */
	int64_t returned;
	int64_t completed;	/* GPU completed up to here (tier B), -1 */
	int64_t call_seq;	/* collective seq of the call in progress */
	uint64_t call_ns;	/* its entry */
	uint64_t last_ns;	/* last activity on this rank (own host clock) */
	/*
	 * its latest record that says which calls it entered (an entry, a
	 * look at its launch counters; a return or a completion does not:
	 * its entry may be the record lost): a loss of its process's
	 * records before this one hides no entry here
	 */
	uint64_t fresh_ns;
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
	/*
	 * ... and at each completion, the mean network time of the steps it
	 * completed, each from its own transmit (a ring of the latest;
	 * sample_go empties it)
	 */
	float net_est[AN_NET_EST];
	uint32_t net_nest;
	struct an_sent *sent;	/* per send sub in flight (step records only) */
	uint32_t nsent, cap_sent;
	/* its proxy last went idle (tier C): when, and when that op was first seen */
	uint64_t idle_t, idle_tf;
	/* state read from its process's memory (an_launched, an_snapshot) */
	uint8_t mem;		/* counters were read */
	uint8_t mem_only;	/* no call of it seen since: entries have no time */
	uint8_t dead;		/* a rank whose process is gone (peer table): counts unknown */
	uint8_t intra_node;	/* its comm: one host, intra-node transports */
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

/* rank R's p2p counters toward PEER, NULL if it has none */
static inline struct an_p2p *an_p2p_find(const struct an_rank *r, int32_t peer)
{
	uint32_t i;

	for (i = 0; i < r->np2p; i++)
		if (r->p2p[i].peer == peer)
			return &r->p2p[i];
	return NULL;
}

/* a collective's proxy op id (NCCL opCount << 1, kept +1 here), not a p2p one */
static inline bool an_coll_op(uint64_t op)
{
	return op && !((op - 1) & 1);
}

/*
 * The seq of collective proxy op OP on rank R (op_off_ok 1); -1 where a
 * hostile id and offset add up past int64 (the fuzzer's: no such seq)
 */
static inline int64_t an_op_seq(const struct an_rank *r, uint64_t op)
{
	int64_t seq;

	if (__builtin_add_overflow((int64_t)((op - 1) >> 1), r->op_off, &seq))
		return -1;
	return seq;
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
	int32_t t4_rank, t4_peer;	/* the located flow's rank and peer, -1 none */
	/*
	 * the located flow is a receive starving from a sender that shows no
	 * side of the op: it may have sent it all (its finished subs pruned,
	 * or finished before the attach), the data lost at the receiver
	 */
	bool t4_sender_unseen;
	/* the same receive, whose sender's GPU is in an op it launched before */
	bool t4_sender_behind;
	/* an H1 from p2p and collective stream orders that cross (an_locate_h3.c) */
	bool p2p_cross;
	bool net_global;	/* narrowed by the cross-comm network rule */
	bool untouched;		/* H3 whose stuck op moved on no rank at all: queued */
	/*
	 * H1 by the counts of a skipped op (an_locate_spmd.c), or a p2p op
	 * whose peer went past its side (an_locate_p2p.c): where the hang
	 * began, whatever its culprit waits in now
	 */
	bool spmd;
	/* the comm whose op that H1's culprit skipped, by the counts; 0 none */
	uint64_t spmd_skipped;
	/* the rank of C whose unmatched p2p op the H1 or H3 reads, -1 none */
	int32_t p2p_waiter;
	uint64_t open_op;	/* the comm's oldest open proxy op, 0 none */
	char text[AN_TEXT_MAX];
	uint32_t nval;
	struct an_value val[AN_MAX_EVIDENCE];
	uint64_t max_call_age_ns;	/* longest call in progress at the round */
};

/*
 * Evidence (an_evidence.c): every rule adds to a verdict's evidence, or to
 * a located comm's status (its verdicts copy it), through these.  X is a
 * struct an_verdict * or a struct an_status *: both hold the sentence
 * (text, AN_TEXT_MAX bytes) and the named values (nval, val).  an_text
 * appends to the sentence, cut at AN_TEXT_MAX; an_val_i/f/s append a value
 * under KEY, a static string (AN_MAX_EVIDENCE at most: the rest are
 * dropped, as is a float that is not finite); an_has_val: KEY is there;
 * an_evidence_clear empties both; an_evidence_copy appends FROM's sentence
 * and values to TO's.
 */
struct an_ev {
	char *text;
	uint32_t *nval;
	struct an_value *val;
};
#define AN_EV(x)		((struct an_ev){ (x)->text, &(x)->nval, (x)->val })
#define an_text(x, ...)		an_ev_text(AN_EV(x), __VA_ARGS__)
#define an_val_i(x, key, i)	an_ev_i(AN_EV(x), key, i)
#define an_val_f(x, key, f)	an_ev_f(AN_EV(x), key, f)
#define an_val_s(x, key, s)	an_ev_s(AN_EV(x), key, s)
#define an_has_val(x, key)	an_ev_has(AN_EV(x), key)
#define an_evidence_clear(x)	an_ev_clear(AN_EV(x))
#define an_evidence_copy(to, from) \
	an_ev_copy(AN_EV(to), (from)->text, (from)->nval, (from)->val)
__attribute__((format(printf, 2, 3)))
void an_ev_text(struct an_ev e, const char *fmt, ...);
void an_ev_i(struct an_ev e, const char *key, int64_t i);
void an_ev_f(struct an_ev e, const char *key, double f);
void an_ev_s(struct an_ev e, const char *key, const char *s);
bool an_ev_has(struct an_ev e, const char *key);
void an_ev_clear(struct an_ev e);
void an_ev_copy(struct an_ev to, const char *text, uint32_t nval, const struct an_value *val);

struct an_comm {
	uint64_t hash;
	uint64_t parent;
	int32_t color;		/* its ncclCommSplit color, -1: not split, or not seen */
	char name[AN_LABEL_MAX];	/* ncclConfig_t.commName, "" where none */
	int32_t nranks;
	uint32_t nknown;
	struct an_rank *r;
	uint64_t *host_last;	/* per host id: last progress, 0: none */
	uint32_t nhost_last;
	uint64_t version;	/* bumped by every input */
	uint32_t in_host;	/* its latest input: on this host's clock ... */
	uint64_t in_t;		/* ... at this time (forgetting) */
	bool mem_progress;	/* its latest progress is a look at memory (no timing) */
	bool env_said;		/* an ENV verdict on its mixed libraries was given */
	uint64_t analyzed;	/* version of st */
	uint64_t gpu_gen;	/* an->gpu_gen st was located with */
	struct an_status st;
	/* incident */
	bool suspected;
	bool sampling;		/* step hooks sampled for a slow verdict */
	/*
	 * ... on these processes too (index in an->procs + 1): those of the
	 * comms whose ops hold its ranks' GPUs, so that their rounds show
	 * every arrival as well (an_slow_sample.c, an_slow_chain.c)
	 */
	uint32_t samp_extra[AN_SAMP_EXTRA];
	uint32_t nsamp_extra;
	bool declared;
	int64_t decl_seq;
	bool decl_p2p;
	uint64_t decl_onset;
	uint32_t decl_host;
	struct an_verdict *last;	/* last verdict emitted */
	/*
	 * its quiet time (s) when it last waited behind a barrier that was not
	 * a hang yet; 0: none since its last progress.  Its own stall counts
	 * from there: when the barrier ends, its ops need a moment to move.
	 */
	double held_quiet;
	/* per evaluation */
	int node;		/* index in the node list, -1 */
	/* slow diagnosis (an_slow.c) */
	struct an_slow *slow;
	bool slow_cascade;	/* its open incident is another comm's cascade */
	int64_t slow_seq;	/* round of its open incident's first verdict */
};

#define AN_ENV_MAX	32	/* NCCL_* variables kept per process */

#define AN_SCHED_THREADS	4	/* proxy threads of a process followed */
#define AN_SCHED_HIST		16	/* readings of each kept (a tick apart) */

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
	uint64_t last_call_comm;	/* the comm of its latest call, 0 */
	/*
	 * its latest calls into another comm than the call before (the comm,
	 * the entry, its rank there): a tier B completion after one of them
	 * completed that later op too, so it only bounds the end of an
	 * earlier op; an_p2p_align finds the comms two processes share there
	 */
	struct an_switch { uint64_t comm, t; int32_t rank; } sw[AN_SWITCH_RING];
	uint32_t nsw;
	/* step hooks on it for this many suspected or sampled comms (live) ... */
	uint32_t hooked;
	uint64_t hooked_since;		/* ... since about here (its host clock) */
	uint64_t perturbed_until;	/* ... and until about here */
	/*
	 * its step-level records (step hooks on) since HOOK_T0, the latest at
	 * HOOK_T1 (its host clock): their rate bounds what the hooks cost it
	 */
	uint64_t hook_t0, hook_t1, hook_n;
	/*
	 * its proxy threads' scheduler accounts (an_sched), the latest
	 * AN_SCHED_HIST readings of each: how long they waited for a CPU
	 */
	struct an_sched_thread {
		uint32_t tid;
		uint32_t n;		/* readings so far */
		struct { uint64_t t, delay; } h[AN_SCHED_HIST];
	} sched[AN_SCHED_THREADS];
	/* per evaluation: the stalled comm and proxy op its GPU executes */
	char label[AN_LABEL_MAX_KIND][AN_LABEL_MAX];	/* pod, namespace, container,
							 * global and local rank; "" */
	/* the latest GPU error the driver reported for it (tier D) */
	uint32_t xid;			/* 0: none */
	uint64_t xid_bus, xid_t;
	char xid_text[52];
	/* the latest warning NCCL logged in it, and how many (an_warn.c) */
	uint64_t warn_t;
	uint32_t nwarn, warn_line;
	char warn_file[AN_LABEL_MAX];
	char warn_msg[AN_WARN_MAX];
	/* its NCCL_* variables, "NAME=VALUE" (label[AN_LABEL_NCCL_LIB - 1] set: read) */
	char env[AN_ENV_MAX][AN_LABEL_MAX];
	uint32_t nenv;
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
	uint64_t main_since;		/* main_thread first seen where it is (state,
					 * system call, its first argument) */
	uint32_t nthreads, nthreads_d;
	uint64_t threads_t;		/* the latest look */
	struct an_comm *gpu_comm;	/* NULL: idle, or unknown */
	uint64_t gpu_op;
	uint64_t gpu_t;		/* entry of the call behind gpu_op, 0 not known */
	bool gpu_known;
	uint64_t cmask;		/* per evaluation: nodes naming it culprit */
	/* its records a full ring lost (an_records_lost): how many, the latest when */
	uint64_t nlost;
	uint64_t lost_t;
	uint32_t nrefs;			/* comm ranks bound to this slot */
	bool unused;			/* forgotten: on the free list */
};

struct an_host_st {
	char *name;
	uint64_t now;
	uint64_t perturbed_until;	/* step hooks were on until about here,
					 * + AN_PERTURB_NS */
	bool have_now;
	bool silent;		/* its records stopped: an_host_silent */
	uint64_t steps_shed;	/* its step records shed so far (an_steps_shed) */
};

struct an {
	struct an_config cfg;
	struct an_sink sink;
	struct an_host_st *hosts;
	uint32_t nhosts;
	struct hmap comms;	/* hash -> struct an_comm */
	struct hmap setups;	/* (group, kind) -> struct an_setup_grp (an_setup.c) */
	struct hmap procmap;	/* (host, pid) -> index + 1 */
	struct hmap tcp;	/* (host<<32|pid, peer pid, remote) -> an_tcp_pair */
	struct hmap endpoints;	/* (address, port) -> its process (an_endpoint.c) */
	struct an_proc *procs;
	uint32_t nprocs, cap_procs;
	uint32_t *free_procs;	/* indexes of unused slots, reused first */
	uint32_t nfree, cap_free;
	struct an_stats stats;
	struct an_verdict tmp;
	uint64_t gpu_gen;	/* bumped when a process's GPU position changes */
	bool debug;		/* CCLD_AN_DEBUG set */
	uint32_t nsuspected;	/* comms suspected now (step hooks on, live) */
	uint64_t steps_shed;	/* the hosts' steps_shed summed */
	bool env_dirty;		/* an NCCL library label came: an_env_check looks */
	/* the comparable-group scans: paced by host GRP_HOST's clock */
	bool grp_have;
	uint32_t grp_host;
	uint64_t grp_next;
};

static inline void an_fresh(struct an_rank *r, uint64_t t_ns)
{
	if (t_ns > r->fresh_ns)
		r->fresh_ns = t_ns;
}

/*
 * an_lost.c: ranks whose evidence is incomplete, their process having lost
 * records after the rank's latest fresh one.  an_comm_lost: how many of
 * C's ranks (running processes; one that exited or stopped is judged by
 * /proc), *RANK the first, *NLOST the records their processes lost.
 */
uint32_t an_comm_lost(const struct an *an, const struct an_comm *c, int32_t *rank,
		      uint64_t *nlost);
/*
 * an_gpu_holder_lost: C is an H3 whose located GPU is not ready (held by
 * an op launched before, in another comm) and that GPU's process lost
 * records since: the first comm where the lost record may be its entry
 * into that op, NULL if none
 */
const struct an_comm *an_gpu_holder_lost(const struct an *an, const struct an_comm *c);
/* V waits no longer for it: says so in its text and evidence */
void an_lost_note(const struct an *an, const struct an_comm *c, struct an_verdict *v);
/* a slow round of C ending at T_NS on HOST's clock, near a loss: not judged */
bool an_lost_round(const struct an *an, const struct an_comm *c, uint32_t host,
		   uint64_t t_ns);

/*
 * an_cascade.c: an H3 located by a state that backpressure from elsewhere
 * also produces (a GPU not ready, a send not transmitted)
 */
bool an_h3_weak(const struct an_status *st);
/* the rank whose GPU or network a located H3 flow rests on: its rank, or its peer's where remote */
int32_t an_h3_focus(const struct an_status *st);

/* an_core.c */
struct an_comm *an_comm_get(struct an *an, uint64_t hash, int32_t nranks,
			    bool create);
/* the rank K names, for an input at T_NS (creates what CREATE allows) */
struct an_rank *an_rank_get(struct an *an, const struct an_key *k, bool create,
			    uint64_t t_ns);
void an_comm_free(struct an *an, struct an_comm *c);
const struct an_proc *an_proc_of(const struct an *an, const struct an_rank *r);

/* an_sched.c: a proxy thread's scheduler account S at T_NS into P */
void an_sched_note(struct an_proc *p, const struct an_sched *s, uint64_t t_ns);
/*
 * The largest share of [T0, T1] one of P's proxy threads spent runnable,
 * waiting for a CPU (0..1 about; NaN: no readings span the window)
 */
double an_proc_run_wait(const struct an_proc *p, uint64_t t0, uint64_t t1);
/*
 * C runs over intra-node transports (one host by a rank's peer table and
 * environment) and no proxy op was seen on any rank: no record shows when
 * a GPU reached or left its ops
 */
bool an_comm_intra_node(const struct an_comm *c);
/* has a rank of C process PROC (an->procs index + 1; 0: none has)? */
bool an_comm_has_proc(const struct an_comm *c, uint32_t proc);
const struct an_proc *an_proc_find(const struct an *an, uint32_t host, uint32_t pid);

/*
 * an_p2p_align.c: op k of direction D of rank X's counter A (toward its
 * peer in H) is op k - *OFF of the peer's counter B toward X (direction
 * !D).  0 where both count from the comm's creation; counts from the
 * attach are lined up by collectives both processes entered.  False:
 * which op matches which is not known.
 */
bool an_p2p_align(const struct an *an, const struct an_comm *h, int32_t x,
		  const struct an_p2p *a, const struct an_p2p *b, int d, int64_t *off);
/* the process (HOST, PID), made known if it was not (NULL: no memory) */
struct an_proc *an_proc_add(struct an *an, uint32_t host, uint32_t pid);
uint32_t an_rank_host(const struct an *an, const struct an_rank *r);
void *an_grow(struct an *an, void *p, uint32_t *cap, uint32_t need,
	      size_t elem);
/*
 * Counts N more bytes of state against --mem-max; false (counted as a
 * refusal, said once on stderr) where they would exceed it
 */
bool an_mem_take(struct an *an, size_t n);

/* an_slow.c: a rank's duration of round SG (entry to GPU completion) */
struct an_slow;
void an_slow_duration(struct an *an, struct an_comm *c, int32_t rank,
		      const struct an_sig *sg, uint64_t t_done, bool end_exact,
		      uint32_t host);
void an_slow_free(struct an_slow *s);
/* the bytes S holds, counted against --mem-max (0 for NULL) */
size_t an_slow_bytes(const struct an_slow *s);
/* the host's clock: ends step samples (an_slow_sample.c) */
void an_slow_clock(struct an *an, uint32_t host, uint64_t now_ns);
/* the comparable-group scan, each GROUP_SCAN_NS (an_slow_group.c) */
void an_slow_group_clock(struct an *an, uint32_t host, uint64_t now_ns);
/* an_hw.c: the culprits' GPU and NIC errors appended to V's evidence */
void an_hw_note(const struct an *an, struct an_verdict *v);
/* an_hw.c: the PCI bus id in P's GPU label ("CUDA_DEV DDDD:BB:DD.F"), NULL where not read */
const char *an_proc_gpu_bus(const struct an_proc *p);
/*
 * an_hw.c: rank RANK of C runs on the GPU of another rank of C (the same
 * host and PCI bus id; both read): the GPU time-slices their kernels, so
 * which of them reaches an op first is its scheduler's order
 */
bool an_gpu_shared(const struct an *an, const struct an_comm *c, int32_t rank);
/* an_setup.c: init / teardown calls that do not return (verdicts); freeing */
void an_setup_clock(struct an *an, uint32_t host, uint64_t now_ns);
/* an_detect.c: V to the sink, counted as a verdict or a recovery */
void an_emit(struct an *an, const struct an_verdict *v);
/*
 * an_core.c: V cleared and framed as a new root verdict of class CLS on
 * COMM (seq SEQ, op FN), detected at T_NS on HOST's clock, its onset then
 */
void an_verdict_root(struct an_verdict *v, enum an_class cls, uint64_t comm, int64_t seq,
		     int fn, uint32_t host, uint64_t t_ns);
void an_setup_free(struct an *an);
/* an_warn.c: the culprits' recent NCCL warning appended to V's evidence */
void an_warn_note(const struct an *an, struct an_verdict *v);
/* an_env.c: where V's comm's ranks run different NCCL libraries or settings */
void an_env_note(const struct an *an, struct an_verdict *v);
/* an_env.c: an ENV verdict for each comm found with mixed NCCL libraries */
void an_env_check(struct an *an, uint32_t host, uint64_t now_ns);
/* an_env.c: P's NCCL_* variable NAME=VALUE (replaces one of that name) */
void an_env_set(struct an *an, struct an_proc *p, const char *name_value);
/* an_hw.c: an HW verdict about PID's rank in its largest comm; false: none */
bool an_hw_verdict(struct an *an, uint32_t host, uint32_t pid, uint64_t t_ns,
		   struct an_verdict *v);
/* an_nic.c: the culprits' NIC errors appended to V's evidence */
void an_nic_note(const struct an *an, struct an_verdict *v);
/* an_net.c: TCP evidence (tier D) */
void an_net_note(const struct an *an, const struct an_comm *c, struct an_verdict *v);
int32_t an_net_common_rank(const struct an *an, const struct an_comm *c, uint32_t *nlinks,
			   uint32_t *nretrans, uint32_t *nmine);
/* retransmits on a rank's links that make its link the cause of a slowdown */
#define AN_NET_MIN_RETRANS	20
void an_net_free(struct an *an);
/* the TCP pairs of process (HOST, PID) are dropped */
void an_net_forget(struct an *an, uint32_t host, uint32_t pid);

/* an_endpoint.c: the process at a TCP address and port as HOST sees it (NULL: none known) */
const struct an_proc *an_endpoint_proc(const struct an *an, uint32_t host, const char *addr,
					uint16_t port);
/* the first "ADDR<PORT>" of MSG (NCCL's way of printing one); ADDR: 46 bytes */
bool an_endpoint_in_text(const char *msg, char *addr, uint16_t *port);
void an_endpoint_forget(struct an *an, uint32_t host, uint32_t pid);
void an_endpoint_free(struct an *an);
/* an_forget.c: every rank C knows is gone (destroyed, or its process exited) */
bool an_comm_over(const struct an *an, const struct an_comm *c);
/* finished comms and exited processes whose time on HOST's clock is up */
void an_forget(struct an *an, uint32_t host, uint64_t now_ns);
/*
 * an_detect.c: step hooks on (ON) or off for comm C's processes, for a hang
 * suspicion or (SLOW) a step sample; hooks go on no earlier than T_NS on
 * HOST's clock (the record that asked for them; 0: the host's latest clock
 * tick).
 */
/* rank K of C is hooked by C's slow sample (all are but in a part sample) */
bool an_slow_rank_sampled(const struct an_comm *c, int32_t k);
void an_suspect_comm(struct an *an, struct an_comm *c, bool on, bool slow, uint32_t host,
		     uint64_t t_ns);
/*
 * an_proxy.c: when the GPU of R's process could start round SG of COMM,
 * completed at T_DONE: the call, or the end of an op launched before it
 * (*HOLDER: that op's comm if another one, 0); *IDLE_SINCE: where the
 * start is the call, since when its earlier ops were known done (0
 * unknown), *IDLE_COMM the comm of the op done then
 */
uint64_t an_gpu_start(const struct an *an, uint64_t comm, const struct an_rank *r,
		      const struct an_sig *sg, uint64_t t_done, uint64_t *holder,
		      uint64_t *idle_since, uint64_t *idle_comm);

/* an_format.c: names of ops, data types and reductions ("op", "type9", "op7" unknown) */
const char *an_fn_name(int fn);
const char *an_dtype_name(int dtype, char *buf, size_t n);
const char *an_redop_name(int redop, char *buf, size_t n);

/* an_locate.c: fills c->st (ages use each host's latest clock) */
void an_locate(struct an *an, struct an_comm *c);
/*
 * an_locate_gpu.c: what rank R of C has pending, for its process's GPU
 * position (*OP, and *T its first sighting or its call's entry).
 * AN_HOLD_MEM: an open op known from a look at memory only (the attach
 * snapshot): which of several comms' ops a GPU runs first is not known.
 */
/*
 * AN_HOLD_MEM_AT: the same, and the op's flows show its GPU executes it;
 * AN_HOLD_MEM_SENT: its data of the op reached a peer and the op waits
 * for more: its GPU is there, whatever other comms hold (stream order)
 */
enum an_hold { AN_HOLD_NONE, AN_HOLD_OPEN, AN_HOLD_UNKNOWN, AN_HOLD_MEM, AN_HOLD_MEM_AT,
	       AN_HOLD_MEM_SENT };
enum an_hold an_rank_pending(const struct an_comm *c, int32_t r, uint64_t *op,
			     uint64_t *t);
/* how many of RK's open ops (distinct) its flows show its GPU executing; *OP the first */
uint32_t an_ops_executing(const struct an_rank *rk, uint64_t *op);
/*
 * an_locate_gpu.c: where the GPU of each process of the N comms CS is
 * (an_proc.gpu_known, gpu_comm, gpu_op); bumps an->gpu_gen on a change
 */
void an_locate_gpus(struct an *an, struct an_comm **cs, int n);
/* an_locate_h3.c: the network-stuck send flows of C's stuck round, each to FN */
typedef void (*an_flow_fn)(void *ctx, struct an_comm *c, int32_t owner,
			   const struct an_progress *p, enum an_t4 t4);
void an_stuck_flows(const struct an *an, struct an_comm *c, an_flow_fn fn,
		    void *ctx);
/* rank R, the common end of stuck flows in NCOMMS comms, is C's culprit */
bool an_locate_net(struct an *an, struct an_comm *c, int32_t r,
		   uint32_t nflows, uint32_t ncomms);

#endif
