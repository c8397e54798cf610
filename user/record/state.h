/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Per-process, per-thread and per-communicator-rank state machines.  Fed
 * with decoded ccld_event records (live or replayed, the same way), it
 * assigns per-communicator sequence numbers, resolves communicator identity
 * and hands finished call records to a sink.
 */
#ifndef CCLD_STATE_H
#define CCLD_STATE_H

#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>
#include "ccld.h"

enum rank_state {
	RS_INITIALISING,
	RS_IDLE,
	RS_IN_GROUP,
	RS_IN_COLLECTIVE,
	RS_BLOCKED,		/* inside an NCCL call for more than 1 s */
	RS_ERROR,
	RS_DESTROYED,
	RS_EXITED,
	RS__COUNT,
};

const char *rank_state_name(enum rank_state s);

/* where a call's seq comes from (docs/cli.md, "seq_source") */
enum seq_source {
	SEQ_NCCL,		/* NCCL's own comm->seqNumber[] */
	SEQ_LOCAL,		/* counted by ccld since the comm was created */
	SEQ_ALIGNED,		/* counted since attach, no NCCL counter */
};

const char *seq_source_name(enum seq_source s);

/* One traced collective or p2p call: what a "call" JSON line carries. */
struct call_rec {
	uint32_t host_id;
	uint32_t pid;
	uint32_t tid;
	uint64_t comm;		/* ncclComm_t in the process */
	uint64_t comm_hash;
	int32_t rank;
	int32_t nranks;
	int64_t seq;		/* collectives: per comm; p2p: per (comm, peer, dir) */
	enum seq_source seq_source;
	int fn;			/* enum ccld_fn */
	uint64_t count;
	int dtype;
	int redop;		/* 0xff: none */
	int32_t root;		/* -1: none */
	int32_t peer;		/* -1: none */
	uint64_t bytes;
	uint64_t stream;
	int64_t group;		/* per-thread group id, -1 outside a group */
	/*
	 * A Send or Recv that is a part of this call (AlltoAll, Gather,
	 * Scatter: state_calls.c), fed to the analyzer, never printed; 0 for
	 * a call of its own.
	 */
	int part_of;
	bool has_ret;
	int64_t ret;
	uint64_t t_ns;		/* entry, CLOCK_MONOTONIC of the host */
	uint64_t ret_ns;	/* return (has_ret) */
};

/* One communicator creation or teardown call ("comm" JSON line). */
struct comm_call_rec {
	uint32_t host_id;
	uint32_t pid;
	uint32_t tid;
	int fn;			/* enum ccld_fn: init*, split, shrink, teardown */
	uint64_t comm;		/* the new comm (creation) or the comm torn down */
	uint64_t comm_hash;	/* 0: unknown */
	int32_t rank;
	int32_t nranks;
	int32_t arg_nranks;	/* the call's arguments, -1 where none */
	int32_t arg_rank;
	int32_t color;
	int32_t key;
	uint64_t parent_hash;	/* Split/Shrink: the parent comm's hash ... */
	int32_t parent_rank;	/* ... this rank there, its size (-1 unknown) ... */
	int32_t parent_nranks;
	uint32_t split_index;	/* ... and the parent's splits returned before */
	uint64_t id_hash;	/* InitRank*: NCCL's getHash of the unique id: the comm's commHash */
	char name[64];		/* the config's commName, "" where none */
	bool has_ret;
	int64_t ret;
	uint64_t t_ns;
	uint64_t ret_ns;
};

struct comm_rank {
	struct comm_rank *next_in_proc;
	uint32_t host_id;
	uint32_t pid;
	uint64_t comm;
	uint64_t hash;
	int32_t rank;
	int32_t nranks;
	enum rank_state state;
	bool from_init;		/* created while traced: local counts are exact */
	char name[64];		/* its creation call's config commName, "" where none */
	bool ident_from_memory;	/* hash/rank/nranks read from ncclComm */
	bool ident_from_args;	/* named by its init call with no layout in use: kept */
	bool mem_read;		/* its state was read from memory (CCLD_EV_COMM_STATE) */
	bool peer_named;	/* a dead rank, known from a live rank's peer table */
	/*
	 * read in memory inside its init (initState ncclInProgress), and what
	 * the last read changed: +1 found inside, -1 its init ended, 0 neither
	 */
	bool mem_in_init;
	int8_t mem_init_edge;
	int64_t next_seq;
	uint32_t group_pending;	/* collectives issued in the open group */
	uint64_t group_nccl;	/* NCCL's launched count while they were issued */
	uint32_t split_count;
	uint64_t calls;
	uint64_t bytes;
	uint64_t errors;
	int64_t last_seq;
	int64_t completed_seq;	/* GPU finished up to here (tier B), -1 */
	uint64_t completed_ns;
	uint64_t last_ns;
	uint64_t created_ns;
	struct p2p_counter *p2p;
	int64_t p2p_issued;	/* p2p calls so far (tier B marks) */
	uint32_t p2p_n;
	uint32_t p2p_cap;
};

struct proc_info {
	uint32_t host_id;
	uint32_t pid;
	uint32_t ppid;
	char name[32];
	char state;		/* last /proc state letter seen */
	bool exited;
	int exit_code;
	uint64_t exit_ns;
	uint64_t lost[2];	/* its records lost, main and rare ring (CCLD_EV_PROC_LOST) */
	char global_rank[12];	/* the launcher's (CCLD_LABEL_RANK), "" unknown */
	struct comm_rank *comms;
};

struct state_sink {
	void *ctx;
	/* a collective / p2p call entered (no return code yet) */
	void (*call_enter)(void *ctx, const struct call_rec *c);
	/* the call returned, or the trace ended with it still inside */
	void (*call_done)(void *ctx, const struct call_rec *c);
	/* tier B: the GPU finished this rank's collectives up to SEQ */
	void (*op_complete)(void *ctx, const struct comm_rank *cr, int64_t seq,
			    uint64_t t_ns);
	/* tier B: the GPU finished this rank's p2p FN ops toward PEER up to SEQ */
	void (*p2p_complete)(void *ctx, const struct comm_rank *cr, int32_t peer,
			     int fn, int64_t seq, uint64_t t_ns);
	/* a comm creation / teardown call entered (no return yet) */
	void (*comm_enter)(void *ctx, const struct comm_call_rec *c);
	/* a comm creation / teardown call returned (or never did, at flush) */
	void (*comm_call)(void *ctx, const struct comm_call_rec *c);
	/* a comm rank changed lifecycle state (created, destroyed, error...) */
	void (*comm_change)(void *ctx, const struct comm_rank *cr,
			    const struct ccld_event *ev);
	/* its state read from memory (CCLD_EV_COMM_STATE), after the rank learnt it */
	void (*comm_state)(void *ctx, const struct comm_rank *cr,
			   const struct ccld_event *ev);
	/* tier C / E: a proxy record mapped to its comm rank (CCLD_F_IDENT) */
	void (*proxy)(void *ctx, const struct comm_rank *cr,
		      const struct ccld_event *ev);
	/* a process attached / exited / changed /proc state */
	void (*proc_change)(void *ctx, const struct proc_info *p,
			    const struct ccld_event *ev);
};

struct state;

struct state *state_new(const struct state_sink *sink);
void state_free(struct state *s);

/* Feeds one record of host HOST_ID (events of one host in time order). */
void state_feed(struct state *s, uint32_t host_id, const struct ccld_event *ev);

/*
 * Frees an exited process's state (threads, comm ranks, counters) NS after
 * its exit, on a tick of its host; 0 (the default) keeps it to the end.
 * Pointers to its comm ranks do not survive a tick.  A process that
 * attaches with an exited one's pid replaces it at once, in any case.
 */
void state_forget_after(struct state *s, uint64_t ns);
/* A rank inside one call this long is blocked-in-call (default: the
 * analyzer's default suspicion time, an_config_suspect_s). */
void state_blocked_after(struct state *s, uint64_t ns);

/* Reports calls still inside NCCL (no return seen) through call_done. */
void state_flush(struct state *s);

/* Iterates comm ranks: for (i = 0; (cr = state_next_rank(s, &i)); ) */
struct comm_rank *state_next_rank(const struct state *s, size_t *iter);
struct proc_info *state_next_proc(const struct state *s, size_t *iter);
const struct proc_info *state_proc(const struct state *s, uint32_t host_id,
				   uint32_t pid);
/* the rank of comm COMM (its ncclComm address) in process PID, or NULL */
const struct comm_rank *state_rank(const struct state *s, uint32_t host_id, uint32_t pid,
				   uint64_t comm);

struct state_counts {
	uint64_t events;
	uint64_t calls;
	uint64_t unmatched_returns;
	uint64_t bad_comm;	/* comm pointers that failed the magic check */
	uint64_t completions;	/* tier B completion records applied */
	uint64_t main_drops;	/* from CCLD_EV_LOST */
	uint64_t rare_drops;
	uint64_t steps_shed;	/* step records BPF shed, the ring crowded (CCLD_EV_LOST) */
	uint64_t procs_forgotten;	/* exited processes freed (state_forget_after) */
	uint64_t comms_forgotten;	/* comms whose last rank here was freed */
};

const struct state_counts *state_counts(const struct state *s);

#endif
