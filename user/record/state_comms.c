// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The state machines' communicators: creation and teardown calls (entry,
 * then return), asynchronous errors, and a comm as its process's memory
 * holds it.
 */
#include <stdio.h>
#include <string.h>
#include "analyzer.h"
#include "hmap.h"
#include "state.h"
#include "state_int.h"

/* Split without DWARF: derive a hash equal on all ranks of the new comm. */
static uint64_t derived_split_hash(uint64_t parent, uint32_t split, int32_t color)
{
	uint64_t h = parent ^ 0x9e3779b97f4a7c15ULL;

	h = (h ^ split) * 0x100000001b3ULL;
	h = (h ^ (uint32_t)color) * 0x100000001b3ULL;
	return h ? h : 1;
}

/*
 * The name a creation call's config gives its comm: BPF sends it just
 * before the call's CCLD_EV_COMM record, on the same thread.
 */
void st_on_comm_name(struct state *s, uint32_t host, const struct ccld_event *ev)
{
	struct thread_state *t = st_get_thread(s, host, ev->pid, ev->tid);

	if (!t)
		return;
	t->name_fn = ev->fn;
	/* BPF ends it with a NUL; a capture from elsewhere need not */
	an_label_copy(t->name, sizeof(t->name), ev->u.comm_name.name,
		      sizeof(ev->u.comm_name.name) - 1);
}

void st_on_comm(struct state *s, uint32_t host, const struct ccld_event *ev)
{
	struct thread_state *t = st_get_thread(s, host, ev->pid, ev->tid);
	struct pending_init *pi;
	struct comm_rank *cr = NULL;
	uint64_t comm = ev->u.comm.parent;

	if (!t)
		return;
	pi = &t->init;
	memset(pi, 0, sizeof(*pi));
	pi->active = true;
	pi->id_hash = ev->u.comm.id_hash;
	pi->rec.id_hash = ev->u.comm.id_hash;
	pi->parent = comm;
	pi->rec.host_id = host;
	pi->rec.pid = ev->pid;
	pi->rec.tid = ev->tid;
	pi->rec.fn = ev->fn;
	pi->rec.rank = -1;
	pi->rec.nranks = -1;
	pi->rec.parent_rank = -1;
	pi->rec.parent_nranks = -1;
	pi->rec.arg_nranks = ev->u.comm.nranks;
	pi->rec.arg_rank = ev->u.comm.rank;
	pi->rec.color = ev->u.comm.color;
	pi->rec.key = ev->u.comm.key;
	pi->rec.t_ns = ev->ts_ns;
	/* a name is for the call right after it, of the same function */
	if (t->name_fn == ev->fn)
		memcpy(pi->rec.name, t->name, sizeof(pi->rec.name));
	t->name_fn = 0;
	t->name[0] = '\0';
	/* Split/Shrink parent, or the comm being torn down */
	if (comm) {
		cr = st_find_rank(s, host, ev->pid, comm);
		if (!cr)
			cr = st_new_rank(s, host, ev->pid, comm, ev->ts_ns);
		if (cr)
			st_learn_ident(s, cr, ev);
	}
	if (ccld_fn_is_teardown(ev->fn)) {
		pi->rec.comm = comm;
		if (cr) {
			pi->rec.comm_hash = cr->hash;
			pi->rec.rank = cr->rank;
			pi->rec.nranks = cr->nranks;
		}
	} else if (cr) {
		pi->rec.parent_hash = cr->hash;
		pi->rec.parent_rank = cr->rank;
		pi->rec.parent_nranks = cr->nranks;
		pi->rec.split_index = cr->split_count;
	}
	if (s->sink.comm_enter)
		s->sink.comm_enter(s->sink.ctx, &pi->rec);
}

/* Creation returned: the new comm rank, identity from memory or arguments. */
static void comm_created(struct state *s, uint32_t host, struct pending_init *pi,
			 const struct ccld_event *ev, bool ok)
{
	struct comm_rank *cr, *parent;

	cr = st_find_rank(s, host, ev->pid, ev->u.ret.newcomm);
	if (!cr)
		cr = st_new_rank(s, host, ev->pid, ev->u.ret.newcomm, ev->ts_ns);
	if (!cr)
		return;
	cr->from_init = true;
	cr->next_seq = 0;
	cr->state = RS_INITIALISING;
	parent = pi->parent ? st_find_rank(s, host, ev->pid, pi->parent) : NULL;
	if (parent) {
		cr->hash = parent->hash ?
			   derived_split_hash(parent->hash, parent->split_count,
					      pi->rec.color) : 0;
		parent->split_count++;
	} else {
		cr->hash = pi->id_hash;
		cr->rank = pi->rec.arg_rank;
		cr->nranks = pi->rec.arg_nranks;
	}
	st_learn_ident(s, cr, ev);
	/* the probe had no layout to read the new comm by */
	cr->ident_from_args = !(ev->flags & (CCLD_F_IDENT | CCLD_F_BAD_COMM)) && cr->hash;
	memcpy(cr->name, pi->rec.name, sizeof(cr->name));
	pi->rec.comm = cr->comm;
	pi->rec.comm_hash = cr->hash;
	pi->rec.rank = cr->rank;
	pi->rec.nranks = cr->nranks;
	st_set_state(s, cr, ok ? RS_IDLE : RS_ERROR, ev);
}

void st_on_comm_ret(struct state *s, uint32_t host,
		    const struct ccld_event *ev)
{
	struct thread_state *t = st_get_thread(s, host, ev->pid, ev->tid);
	bool ok = ev->u.ret.ret == 0 || ev->u.ret.ret == 7; /* InProgress */
	struct pending_init *pi;
	struct comm_rank *cr;

	if (!t)
		return;
	pi = &t->init;
	if (!pi->active || pi->rec.fn != ev->fn) {
		s->counts.unmatched_returns++;
		return;
	}
	pi->active = false;
	pi->rec.has_ret = true;
	pi->rec.ret = ev->u.ret.ret;
	pi->rec.ret_ns = ev->ts_ns;
	if (ccld_fn_is_teardown(ev->fn)) {
		cr = st_find_rank(s, host, ev->pid, pi->parent);
		if (cr)
			st_set_state(s, cr, ok ? RS_DESTROYED : RS_ERROR, ev);
	} else if (ok && ev->u.ret.newcomm && ev->fn != CCLD_FN_INIT_ALL) {
		comm_created(s, host, pi, ev, ok);
	}
	if (s->sink.comm_call)
		s->sink.comm_call(s->sink.ctx, &pi->rec);
}

void st_on_async_err(struct state *s, uint32_t host,
		     const struct ccld_event *ev)
{
	struct comm_rank *cr = st_find_rank(s, host, ev->pid, ev->id.comm);

	if (!cr)
		cr = st_new_rank(s, host, ev->pid, ev->id.comm, ev->ts_ns);
	if (!cr)
		return;
	st_learn_ident(s, cr, ev);
	cr->errors++;
	st_set_state(s, cr, RS_ERROR, ev);
}

/*
 * A comm rank as its process's memory holds it (attach, on demand): the
 * identity, and NCCL's launch count as the next seq (a call that comes
 * later carries the same numbering).  Source PEER: a rank whose process is
 * gone, named by a live rank's peer table; its process is marked exited
 * by the PROC_EXIT record that follows.
 */
void st_on_comm_state(struct state *s, uint32_t host, const struct ccld_event *ev)
{
	struct comm_rank *cr = st_find_rank(s, host, ev->pid, ev->id.comm);

	if (!cr) {
		cr = st_new_rank(s, host, ev->pid, ev->id.comm, ev->ts_ns);
		if (!cr)
			return;
	}
	st_learn_ident(s, cr, ev);
	if (ev->flags & CCLD_F_SEQ) {
		int64_t next = (int64_t)ev->id.nccl_seq;

		if (next > cr->next_seq)
			cr->next_seq = next;
		if (next - 1 > cr->last_seq)
			cr->last_seq = next - 1;
	}
	/*
	 * Read before any call of it was seen, with nothing launched on it yet
	 * (NCCL's launch counter at 0: attached between the comm's creation
	 * and its first op, as a tracer started with the job is): ccld's own
	 * counts from here, p2p ones included, are counts from the creation.
	 * A call made but not yet launched (inside an open group) at that
	 * moment would escape this; NCCL keeps no counter of those.
	 */
	if (!cr->calls && (ev->u.cstate.counts & CCLD_CS_OP_COUNT) && !ev->u.cstate.op_count &&
	    (ev->flags & CCLD_F_SEQ) && !ev->id.nccl_seq)
		cr->from_init = true;
	cr->mem_read = true;
	cr->peer_named = ev->u.cstate.source == CCLD_COMM_SRC_PEER;
	cr->mem_init_edge = 0;
	if (ev->u.cstate.counts & CCLD_CS_INIT_READ) {
		bool inside = ev->u.cstate.init_state == CCLD_INIT_IN_PROGRESS;

		if (inside != cr->mem_in_init)
			cr->mem_init_edge = inside ? 1 : -1;
		cr->mem_in_init = inside;
	}
	if (s->sink.comm_state)
		s->sink.comm_state(s->sink.ctx, cr, ev);
}
