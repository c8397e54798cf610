/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Inside the state machines (state.h is their interface): the state and
 * what its files share.  state.c has processes, threads, comm ranks and
 * the record dispatch; state_calls.c calls, groups and tier B
 * completions; state_comms.c comm creation, teardown and errors.
 */
#ifndef CCLD_STATE_INT_H
#define CCLD_STATE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include "hmap.h"
#include "state.h"

struct p2p_counter {
	int32_t peer;
	int32_t dir;		/* 0 send, 1 recv */
	int64_t next;
	int64_t done;		/* ops the GPU finished (tier B) */
	int64_t last_index;	/* its latest op's index in the rank's p2p_issued */
};

/* a comm creation / teardown call seen at entry, completed at return */
struct pending_init {
	bool active;
	uint64_t id_hash;
	uint64_t parent;	/* Split/Shrink: parent comm; teardown: the comm */
	struct comm_call_rec rec;
};

/*
 * Ops per communicator rank known to be queued on a stream, or bound to a
 * CUDA event: completing the stream / event completes them.  Collectives
 * up to seq; p2p ops: the first p2p_mark of the rank's p2p calls.
 */
struct op_ref {
	struct comm_rank *cr;
	int64_t seq;		/* -1: no collective */
	int64_t p2p_mark;	/* 0: no p2p */
};

struct op_list {
	struct op_ref *refs;
	uint32_t n;
	uint32_t cap;
};

struct thread_state {
	uint32_t group_depth;
	int64_t group_id;	/* current outermost group, -1 none */
	int64_t groups;		/* groups opened so far */
	bool has_call;
	struct call_rec call;	/* the API call in progress */
	struct pending_init init;
	/* CCLD_EV_COMM_NAME: the name for this thread's next creation call of fn */
	int name_fn;
	char name[64];
};

struct state {
	struct state_sink sink;
	struct hmap procs;	/* (host, pid, 0) -> proc_info */
	struct hmap threads;	/* (host, pid, tid) -> thread_state */
	struct hmap ranks;	/* (host, pid, comm ptr) -> comm_rank */
	struct hmap streams;	/* (host, pid, stream) -> op_list: issued */
	struct hmap cuda_events;/* (host, pid, event) -> op_list: bound */
	/*
	 * blocked-in-call: inside one NCCL call this long, the analyzer's
	 * suspicion time (an_config_suspect_s): whether the comm hangs is
	 * the analyzer's to say, from the same records
	 */
	uint64_t blocked_ns;
	uint64_t forget_ns;	/* free an exited process this long after; 0: never */
	struct state_counts counts;
};

/* state.c */
struct thread_state *st_get_thread(struct state *s, uint32_t host,
				   uint32_t pid, uint32_t tid);
struct comm_rank *st_find_rank(struct state *s, uint32_t host,
			       uint32_t pid, uint64_t comm);
struct comm_rank *st_new_rank(struct state *s, uint32_t host, uint32_t pid,
			      uint64_t comm, uint64_t t_ns);
/* Takes identity from the record when the probe read it from ncclComm. */
void st_learn_ident(struct state *s, struct comm_rank *cr,
		    const struct ccld_event *ev);
void st_set_state(struct state *s, struct comm_rank *cr,
		  enum rank_state st, const struct ccld_event *ev);

/* state_calls.c */
void st_free_op_list(struct op_list *l);
void st_on_call(struct state *s, uint32_t host, const struct ccld_event *ev);
void st_on_ret(struct state *s, uint32_t host, const struct ccld_event *ev);
void st_on_group(struct state *s, uint32_t host, const struct ccld_event *ev);
/* Tier B: stream and event records */
void st_on_cuda(struct state *s, uint32_t host, const struct ccld_event *ev);

/* state_comms.c */
void st_on_comm(struct state *s, uint32_t host, const struct ccld_event *ev);
void st_on_comm_name(struct state *s, uint32_t host, const struct ccld_event *ev);
void st_on_comm_ret(struct state *s, uint32_t host, const struct ccld_event *ev);
void st_on_async_err(struct state *s, uint32_t host, const struct ccld_event *ev);
/* A comm rank as its process's memory holds it (attach, on demand) */
void st_on_comm_state(struct state *s, uint32_t host, const struct ccld_event *ev);

#endif
