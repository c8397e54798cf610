// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Communicator/rank state machines and sequence numbers.
 *
 * Sequence numbers (DESIGN.md section 4): when the probe could read NCCL's
 * comm->seqNumber[] (CCLD_F_SEQ), seq = sum(seqNumber[]) + collectives of
 * this comm already issued in the thread's open group (NCCL counts an op when
 * it launches, at the outermost ncclGroupEnd).  That is equal on every rank
 * even when ccld attached mid-run.  Otherwise ccld counts calls itself: exact
 * ("local") when it saw the comm being created, relative ("aligned" label is
 * not claimed) when it attached later.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hmap.h"
#include "names.h"
#include "state.h"

#define BLOCKED_AFTER_NS	1000000000ULL

struct p2p_counter {
	int32_t peer;
	int32_t dir;		/* 0 send, 1 recv */
	int64_t next;
};

/* a comm creation / teardown call seen at entry, completed at return */
struct pending_init {
	bool active;
	uint64_t id_hash;
	uint64_t parent;	/* Split/Shrink: parent comm; teardown: the comm */
	struct comm_call_rec rec;
};

/*
 * Collectives per communicator rank known to be queued on a stream, or
 * bound to a CUDA event: completing the stream / event completes them.
 */
struct op_ref {
	struct comm_rank *cr;
	int64_t seq;
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
};

struct state {
	struct state_sink sink;
	struct hmap procs;	/* (host, pid, 0) -> proc_info */
	struct hmap threads;	/* (host, pid, tid) -> thread_state */
	struct hmap ranks;	/* (host, pid, comm ptr) -> comm_rank */
	struct hmap streams;	/* (host, pid, stream) -> op_list: issued */
	struct hmap cuda_events;/* (host, pid, event) -> op_list: bound */
	struct state_counts counts;
};

static const char *const rank_state_names[RS__COUNT] = {
	[RS_INITIALISING] = "initialising",
	[RS_IDLE] = "idle",
	[RS_IN_GROUP] = "in-group",
	[RS_IN_COLLECTIVE] = "in-collective",
	[RS_BLOCKED] = "blocked-in-call",
	[RS_ERROR] = "error",
	[RS_DESTROYED] = "destroyed",
	[RS_EXITED] = "process-exited",
};

const char *rank_state_name(enum rank_state s)
{
	return (s >= 0 && s < RS__COUNT) ? rank_state_names[s] : "unknown";
}

const char *seq_source_name(enum seq_source s)
{
	switch (s) {
	case SEQ_NCCL:
		return "nccl";
	case SEQ_LOCAL:
		return "local";
	case SEQ_ALIGNED:
		return "aligned";
	}
	return "local";
}

static void free_op_list(struct op_list *l)
{
	free(l->refs);
	free(l);
}

static struct op_list *get_op_list(struct hmap *m, struct hkey k)
{
	struct op_list *l = hmap_get(m, k);

	if (l)
		return l;
	l = calloc(1, sizeof(*l));
	if (l && hmap_put(m, k, l)) {
		free(l);
		return NULL;
	}
	return l;
}

/* Keeps one entry per comm rank: the highest seq. */
static void op_list_set(struct op_list *l, struct comm_rank *cr, int64_t seq)
{
	uint32_t i;

	for (i = 0; i < l->n; i++) {
		if (l->refs[i].cr == cr) {
			if (seq > l->refs[i].seq)
				l->refs[i].seq = seq;
			return;
		}
	}
	if (l->n == l->cap) {
		uint32_t ncap = l->cap ? l->cap * 2 : 4;
		struct op_ref *n = realloc(l->refs, ncap * sizeof(*n));

		if (!n)
			return;
		l->refs = n;
		l->cap = ncap;
	}
	l->refs[l->n].cr = cr;
	l->refs[l->n++].seq = seq;
}

struct state *state_new(const struct state_sink *sink)
{
	struct state *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->sink = *sink;
	hmap_init(&s->procs);
	hmap_init(&s->threads);
	hmap_init(&s->ranks);
	hmap_init(&s->streams);
	hmap_init(&s->cuda_events);
	return s;
}

void state_free(struct state *s)
{
	struct hkey k;
	void *v;
	size_t i;

	if (!s)
		return;
	for (i = 0; hmap_next(&s->ranks, &i, &k, &v);) {
		struct comm_rank *cr = v;

		free(cr->p2p);
		free(cr);
	}
	for (i = 0; hmap_next(&s->threads, &i, &k, &v);)
		free(v);
	for (i = 0; hmap_next(&s->procs, &i, &k, &v);)
		free(v);
	for (i = 0; hmap_next(&s->streams, &i, &k, &v);)
		free_op_list(v);
	for (i = 0; hmap_next(&s->cuda_events, &i, &k, &v);)
		free_op_list(v);
	hmap_free(&s->streams);
	hmap_free(&s->cuda_events);
	hmap_free(&s->ranks);
	hmap_free(&s->threads);
	hmap_free(&s->procs);
	free(s);
}

const struct state_counts *state_counts(const struct state *s)
{
	return &s->counts;
}

static struct proc_info *get_proc(struct state *s, uint32_t host, uint32_t pid)
{
	struct hkey k = hkey3(host, pid, 0);
	struct proc_info *p = hmap_get(&s->procs, k);

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->host_id = host;
	p->pid = pid;
	p->exit_code = -1;
	if (hmap_put(&s->procs, k, p)) {
		free(p);
		return NULL;
	}
	return p;
}

const struct proc_info *state_proc(const struct state *s, uint32_t host_id,
				   uint32_t pid)
{
	return hmap_get(&s->procs, hkey3(host_id, pid, 0));
}

const struct comm_rank *state_rank(const struct state *s, uint32_t host_id, uint32_t pid,
				   uint64_t comm)
{
	return hmap_get(&s->ranks, hkey3(host_id, pid, comm));
}

static struct thread_state *get_thread(struct state *s, uint32_t host,
				       uint32_t pid, uint32_t tid)
{
	struct hkey k = hkey3(host, pid, tid);
	struct thread_state *t = hmap_get(&s->threads, k);

	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->group_id = -1;
	if (hmap_put(&s->threads, k, t)) {
		free(t);
		return NULL;
	}
	return t;
}

static struct comm_rank *find_rank(struct state *s, uint32_t host,
				   uint32_t pid, uint64_t comm)
{
	return hmap_get(&s->ranks, hkey3(host, pid, comm));
}

static struct comm_rank *new_rank(struct state *s, uint32_t host, uint32_t pid,
				  uint64_t comm, uint64_t t_ns)
{
	struct comm_rank *cr = calloc(1, sizeof(*cr));
	struct proc_info *p = get_proc(s, host, pid);

	if (!cr || !p) {
		free(cr);
		return NULL;
	}
	cr->host_id = host;
	cr->pid = pid;
	cr->comm = comm;
	cr->rank = -1;
	cr->nranks = -1;
	cr->last_seq = -1;
	cr->completed_seq = -1;
	cr->created_ns = t_ns;
	cr->state = RS_IDLE;
	if (hmap_put(&s->ranks, hkey3(host, pid, comm), cr)) {
		free(cr);
		return NULL;
	}
	cr->next_in_proc = p->comms;
	p->comms = cr;
	return cr;
}

/* Takes identity from the record when the probe read it from ncclComm. */
static void learn_ident(struct state *s, struct comm_rank *cr,
			const struct ccld_event *ev)
{
	if (ev->flags & CCLD_F_BAD_COMM)
		s->counts.bad_comm++;
	if (!(ev->flags & CCLD_F_IDENT) || !ev->id.hash)
		return;
	cr->hash = ev->id.hash;
	cr->rank = ev->id.rank;
	cr->nranks = ev->id.nranks;
	cr->ident_from_memory = true;
}

static void set_state(struct state *s, struct comm_rank *cr,
		      enum rank_state st, const struct ccld_event *ev)
{
	bool lifecycle = st == RS_ERROR || st == RS_DESTROYED ||
			 st == RS_EXITED || cr->state == RS_INITIALISING;

	if (cr->state == st)
		return;
	cr->state = st;
	if (lifecycle && s->sink.comm_change)
		s->sink.comm_change(s->sink.ctx, cr, ev);
}

static int64_t *p2p_slot(struct comm_rank *cr, int32_t peer, int32_t dir)
{
	uint32_t i;

	for (i = 0; i < cr->p2p_n; i++) {
		if (cr->p2p[i].peer == peer && cr->p2p[i].dir == dir)
			return &cr->p2p[i].next;
	}
	if (cr->p2p_n == cr->p2p_cap) {
		uint32_t ncap = cr->p2p_cap ? cr->p2p_cap * 2 : 8;
		struct p2p_counter *n = realloc(cr->p2p, ncap * sizeof(*n));

		if (!n)
			return NULL;
		cr->p2p = n;
		cr->p2p_cap = ncap;
	}
	cr->p2p[cr->p2p_n].peer = peer;
	cr->p2p[cr->p2p_n].dir = dir;
	cr->p2p[cr->p2p_n].next = 0;
	return &cr->p2p[cr->p2p_n++].next;
}

static void track_on_stream(struct state *s, uint32_t host, uint32_t pid,
			    uint64_t stream, struct comm_rank *cr, int64_t seq)
{
	struct op_list *l = get_op_list(&s->streams, hkey3(host, pid, stream));

	if (l)
		op_list_set(l, cr, seq);
}

static void complete(struct state *s, struct comm_rank *cr, int64_t seq,
		     uint64_t t_ns)
{
	if (seq <= cr->completed_seq)
		return;
	cr->completed_seq = seq;
	cr->completed_ns = t_ns;
	s->counts.completions++;
	if (s->sink.op_complete)
		s->sink.op_complete(s->sink.ctx, cr, seq, t_ns);
}

/*
 * Tier B.  cudaEventRecord(ev, stream) binds ev to what was queued on the
 * stream so far; the event's completion (query success, synchronize)
 * completes those ops; a stream synchronize completes the whole stream.
 */
static void on_cuda(struct state *s, uint32_t host, const struct ccld_event *ev)
{
	struct hkey sk = hkey3(host, ev->pid, ev->u.cuda.stream);
	struct hkey ek = hkey3(host, ev->pid, ev->u.cuda.event);
	struct op_list *sl, *el;
	uint32_t i;

	if (ev->u.cuda.ret != 0)
		return;
	switch (ev->fn) {
	case CCLD_FN_CUDA_EVENT_RECORD:
		sl = hmap_get(&s->streams, sk);
		/* re-recording an event rebinds it */
		el = hmap_del(&s->cuda_events, ek);
		if (el)
			free_op_list(el);
		if (!sl || !sl->n)
			return;
		el = get_op_list(&s->cuda_events, ek);
		for (i = 0; el && i < sl->n; i++)
			op_list_set(el, sl->refs[i].cr, sl->refs[i].seq);
		return;
	case CCLD_FN_CUDA_EVENT_QUERY:
	case CCLD_FN_CUDA_EVENT_SYNC:
		el = hmap_get(&s->cuda_events, ek);
		for (i = 0; el && i < el->n; i++)
			complete(s, el->refs[i].cr, el->refs[i].seq, ev->ts_ns);
		return;
	case CCLD_FN_CUDA_STREAM_SYNC:
	case CCLD_FN_CUDA_STREAM_QUERY:
		sl = hmap_get(&s->streams, sk);
		for (i = 0; sl && i < sl->n; i++)
			complete(s, sl->refs[i].cr, sl->refs[i].seq, ev->ts_ns);
		return;
	}
}

static void on_call(struct state *s, uint32_t host, const struct ccld_event *ev)
{
	struct thread_state *t = get_thread(s, host, ev->pid, ev->tid);
	struct comm_rank *cr = find_rank(s, host, ev->pid, ev->id.comm);
	struct call_rec *c;

	if (!t)
		return;
	if (!cr) {
		cr = new_rank(s, host, ev->pid, ev->id.comm, ev->ts_ns);
		if (!cr)
			return;
	}
	learn_ident(s, cr, ev);
	c = &t->call;
	memset(c, 0, sizeof(*c));
	t->has_call = true;
	c->host_id = host;
	c->pid = ev->pid;
	c->tid = ev->tid;
	c->comm = ev->id.comm;
	c->comm_hash = cr->hash;
	c->rank = cr->rank;
	c->nranks = cr->nranks;
	c->fn = ev->fn;
	c->count = ev->u.call.count;
	c->dtype = ev->u.call.dtype;
	c->redop = ccld_fn_is_p2p(ev->fn) ? 0xff : ev->u.call.redop;
	c->root = -1;
	c->peer = -1;
	if (ccld_fn_is_p2p(ev->fn))
		c->peer = ev->u.call.root_or_peer;
	else if (ev->fn == CCLD_FN_BROADCAST || ev->fn == CCLD_FN_REDUCE ||
		 ev->fn == CCLD_FN_GATHER || ev->fn == CCLD_FN_SCATTER)
		c->root = ev->u.call.root_or_peer;
	c->bytes = c->count * dtype_size(c->dtype);
	c->stream = ev->u.call.stream;
	c->group = t->group_depth ? t->group_id : -1;
	c->t_ns = ev->ts_ns;

	if (ccld_fn_is_coll(ev->fn)) {
		if (ev->flags & CCLD_F_SEQ) {
			c->seq = (int64_t)ev->id.nccl_seq + cr->group_pending;
			c->seq_source = SEQ_NCCL;
		} else {
			c->seq = cr->next_seq;
			c->seq_source = cr->from_init ? SEQ_LOCAL : SEQ_ALIGNED;
		}
		cr->next_seq = c->seq + 1;
		cr->last_seq = c->seq;
		track_on_stream(s, host, ev->pid, c->stream, cr, c->seq);
		if (t->group_depth)
			cr->group_pending++;
	} else {
		int64_t *next = p2p_slot(cr, c->peer, ev->fn == CCLD_FN_RECV);

		c->seq = next ? (*next)++ : -1;
		c->seq_source = cr->from_init || (ev->flags & CCLD_F_SEQ) ?
				SEQ_LOCAL : SEQ_ALIGNED;
	}
	cr->calls++;
	cr->bytes += c->bytes;
	cr->last_ns = ev->ts_ns;
	s->counts.calls++;
	set_state(s, cr, t->group_depth ? RS_IN_GROUP : RS_IN_COLLECTIVE, ev);
	if (s->sink.call_enter)
		s->sink.call_enter(s->sink.ctx, c);
}

static void finish_call(struct state *s, struct thread_state *t,
			const struct ccld_event *ev)
{
	struct call_rec *c = &t->call;
	struct comm_rank *cr = find_rank(s, c->host_id, c->pid, c->comm);

	c->has_ret = true;
	c->ret = ev->u.ret.ret;
	c->ret_ns = ev->ts_ns;
	t->has_call = false;
	if (cr) {
		if (c->ret != 0 && c->ret != 7 /* ncclInProgress */)
			cr->errors++;
		if (cr->state == RS_IN_COLLECTIVE || cr->state == RS_BLOCKED ||
		    cr->state == RS_IN_GROUP)
			set_state(s, cr, t->group_depth ? RS_IN_GROUP : RS_IDLE,
				  ev);
	}
	if (s->sink.call_done)
		s->sink.call_done(s->sink.ctx, c);
}

static void on_group(struct state *s, uint32_t host, const struct ccld_event *ev)
{
	struct thread_state *t = get_thread(s, host, ev->pid, ev->tid);

	if (!t)
		return;
	if (ev->fn == CCLD_FN_GROUP_START) {
		if (t->group_depth++ == 0)
			t->group_id = t->groups++;
	} else if (t->group_depth > 0) {
		t->group_depth--;
	}
}

/* The outermost ncclGroupEnd returned: its collectives were launched. */
static void group_launched(struct state *s, uint32_t host, uint32_t pid)
{
	const struct proc_info *p = state_proc(s, host, pid);
	struct comm_rank *cr;

	if (!p)
		return;
	for (cr = p->comms; cr; cr = cr->next_in_proc) {
		cr->group_pending = 0;
		if (cr->state == RS_IN_GROUP || cr->state == RS_BLOCKED)
			cr->state = RS_IDLE;
	}
}

static void on_ret(struct state *s, uint32_t host, const struct ccld_event *ev)
{
	struct thread_state *t = get_thread(s, host, ev->pid, ev->tid);

	if (!t)
		return;
	if (ev->fn == CCLD_FN_GROUP_START || ev->fn == CCLD_FN_GROUP_END) {
		if (ev->fn == CCLD_FN_GROUP_END && t->group_depth == 0)
			group_launched(s, host, ev->pid);
		return;
	}
	if (!t->has_call || t->call.fn != ev->fn) {
		s->counts.unmatched_returns++;
		return;
	}
	finish_call(s, t, ev);
}

/* Split without DWARF: derive a hash equal on all ranks of the new comm. */
static uint64_t derived_split_hash(uint64_t parent, uint32_t split, int32_t color)
{
	uint64_t h = parent ^ 0x9e3779b97f4a7c15ULL;

	h = (h ^ split) * 0x100000001b3ULL;
	h = (h ^ (uint32_t)color) * 0x100000001b3ULL;
	return h ? h : 1;
}

static void on_comm(struct state *s, uint32_t host, const struct ccld_event *ev)
{
	struct thread_state *t = get_thread(s, host, ev->pid, ev->tid);
	struct pending_init *pi;
	struct comm_rank *cr = NULL;
	uint64_t comm = ev->u.comm.parent;

	if (!t)
		return;
	pi = &t->init;
	memset(pi, 0, sizeof(*pi));
	pi->active = true;
	pi->id_hash = ev->u.comm.id_hash;
	pi->parent = comm;
	pi->rec.host_id = host;
	pi->rec.pid = ev->pid;
	pi->rec.tid = ev->tid;
	pi->rec.fn = ev->fn;
	pi->rec.rank = -1;
	pi->rec.nranks = -1;
	pi->rec.arg_nranks = ev->u.comm.nranks;
	pi->rec.arg_rank = ev->u.comm.rank;
	pi->rec.color = ev->u.comm.color;
	pi->rec.key = ev->u.comm.key;
	pi->rec.t_ns = ev->ts_ns;
	/* Split/Shrink parent, or the comm being torn down */
	if (comm) {
		cr = find_rank(s, host, ev->pid, comm);
		if (!cr)
			cr = new_rank(s, host, ev->pid, comm, ev->ts_ns);
		if (cr)
			learn_ident(s, cr, ev);
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
	}
}

/* Creation returned: the new comm rank, identity from memory or arguments. */
static void comm_created(struct state *s, uint32_t host, struct pending_init *pi,
			 const struct ccld_event *ev, bool ok)
{
	struct comm_rank *cr, *parent;

	cr = find_rank(s, host, ev->pid, ev->u.ret.newcomm);
	if (!cr)
		cr = new_rank(s, host, ev->pid, ev->u.ret.newcomm, ev->ts_ns);
	if (!cr)
		return;
	cr->from_init = true;
	cr->next_seq = 0;
	cr->state = RS_INITIALISING;
	parent = pi->parent ? find_rank(s, host, ev->pid, pi->parent) : NULL;
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
	learn_ident(s, cr, ev);
	pi->rec.comm = cr->comm;
	pi->rec.comm_hash = cr->hash;
	pi->rec.rank = cr->rank;
	pi->rec.nranks = cr->nranks;
	set_state(s, cr, ok ? RS_IDLE : RS_ERROR, ev);
}

static void on_comm_ret(struct state *s, uint32_t host,
			const struct ccld_event *ev)
{
	struct thread_state *t = get_thread(s, host, ev->pid, ev->tid);
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
		cr = find_rank(s, host, ev->pid, pi->parent);
		if (cr)
			set_state(s, cr, ok ? RS_DESTROYED : RS_ERROR, ev);
	} else if (ok && ev->u.ret.newcomm && ev->fn != CCLD_FN_INIT_ALL) {
		comm_created(s, host, pi, ev, ok);
	}
	if (s->sink.comm_call)
		s->sink.comm_call(s->sink.ctx, &pi->rec);
}

static void on_async_err(struct state *s, uint32_t host,
			 const struct ccld_event *ev)
{
	struct comm_rank *cr = find_rank(s, host, ev->pid, ev->id.comm);

	if (!cr)
		cr = new_rank(s, host, ev->pid, ev->id.comm, ev->ts_ns);
	if (!cr)
		return;
	learn_ident(s, cr, ev);
	cr->errors++;
	set_state(s, cr, RS_ERROR, ev);
}

static void on_proc(struct state *s, uint32_t host, const struct ccld_event *ev)
{
	struct proc_info *p = get_proc(s, host, ev->pid);
	struct comm_rank *cr;

	if (!p)
		return;
	switch (ev->type) {
	case CCLD_EV_PROC_ATTACH:
		p->ppid = ev->u.proc.ppid;
		memcpy(p->name, ev->u.proc.name, sizeof(p->name));
		p->name[sizeof(p->name) - 1] = '\0';
		p->state = ev->u.proc.state;
		break;
	case CCLD_EV_PROC_EXIT:
		p->exited = true;
		p->exit_code = ev->u.proc.exit_code;
		for (cr = p->comms; cr; cr = cr->next_in_proc)
			set_state(s, cr, RS_EXITED, ev);
		break;
	case CCLD_EV_PROC_STATE:
		p->state = ev->u.proc.state;
		break;
	}
	if (s->sink.proc_change)
		s->sink.proc_change(s->sink.ctx, p, ev);
}

/* On the host's clock tick: calls inside NCCL for over 1 s are blocked. */
static void on_tick(struct state *s, uint32_t host, const struct ccld_event *ev)
{
	struct hkey k;
	void *v;
	size_t i;

	for (i = 0; hmap_next(&s->threads, &i, &k, &v);) {
		struct thread_state *t = v;
		struct comm_rank *cr;

		if (k.a != host || !t->has_call ||
		    ev->ts_ns < t->call.t_ns + BLOCKED_AFTER_NS)
			continue;
		cr = find_rank(s, host, t->call.pid, t->call.comm);
		if (cr && cr->state != RS_EXITED)
			set_state(s, cr, RS_BLOCKED, ev);
	}
}

/*
 * A comm rank as its process's memory holds it (attach, on demand): the
 * identity, and NCCL's launch count as the next seq (a call that comes
 * later carries the same numbering).  Source PEER: a rank whose process is
 * gone, named by a live rank's peer table; its process is marked exited
 * by the PROC_EXIT record that follows.
 */
static void on_comm_state(struct state *s, uint32_t host, const struct ccld_event *ev)
{
	struct comm_rank *cr = find_rank(s, host, ev->pid, ev->id.comm);

	if (!cr) {
		cr = new_rank(s, host, ev->pid, ev->id.comm, ev->ts_ns);
		if (!cr)
			return;
	}
	learn_ident(s, cr, ev);
	if (ev->flags & CCLD_F_SEQ) {
		int64_t next = (int64_t)ev->id.nccl_seq;

		if (next > cr->next_seq)
			cr->next_seq = next;
		if (next - 1 > cr->last_seq)
			cr->last_seq = next - 1;
	}
	cr->mem_read = true;
	cr->peer_named = ev->u.cstate.source == CCLD_COMM_SRC_PEER;
	if (s->sink.comm_state)
		s->sink.comm_state(s->sink.ctx, cr, ev);
}

/* the loader mapped the record to a comm (id.comm = the ncclComm) */
static void on_proxy(struct state *s, uint32_t host, const struct ccld_event *ev)
{
	struct comm_rank *cr;

	if (!(ev->flags & CCLD_F_IDENT))
		return;
	cr = find_rank(s, host, ev->pid, ev->id.comm);
	if (cr && s->sink.proxy)
		s->sink.proxy(s->sink.ctx, cr, ev);
}

void state_feed(struct state *s, uint32_t host_id, const struct ccld_event *ev)
{
	if (ev->type < CCLD_EV_PROC_ATTACH)
		s->counts.events++;
	switch (ev->type) {
	case CCLD_EV_CALL:
		on_call(s, host_id, ev);
		break;
	case CCLD_EV_RET:
		on_ret(s, host_id, ev);
		break;
	case CCLD_EV_GROUP:
		on_group(s, host_id, ev);
		break;
	case CCLD_EV_COMM:
		on_comm(s, host_id, ev);
		break;
	case CCLD_EV_COMM_RET:
		on_comm_ret(s, host_id, ev);
		break;
	case CCLD_EV_ASYNC_ERR:
		on_async_err(s, host_id, ev);
		break;
	case CCLD_EV_CUDA:
		on_cuda(s, host_id, ev);
		break;
	case CCLD_EV_PROXY:
		on_proxy(s, host_id, ev);
		break;
	case CCLD_EV_COMM_STATE:
		on_comm_state(s, host_id, ev);
		break;
	case CCLD_EV_PROC_ATTACH:
	case CCLD_EV_PROC_EXIT:
	case CCLD_EV_PROC_STATE:
		on_proc(s, host_id, ev);
		break;
	case CCLD_EV_LOST:
		s->counts.main_drops = ev->u.lost.main_drops;
		s->counts.rare_drops = ev->u.lost.rare_drops;
		break;
	case CCLD_EV_TICK:
		on_tick(s, host_id, ev);
		break;
	default:
		break;
	}
}

void state_flush(struct state *s)
{
	struct hkey k;
	void *v;
	size_t i;

	for (i = 0; hmap_next(&s->threads, &i, &k, &v);) {
		struct thread_state *t = v;

		if (t->init.active) {
			t->init.active = false;
			if (s->sink.comm_call)
				s->sink.comm_call(s->sink.ctx, &t->init.rec);
		}
		if (!t->has_call)
			continue;
		t->has_call = false;
		if (s->sink.call_done)
			s->sink.call_done(s->sink.ctx, &t->call);
	}
}

struct comm_rank *state_next_rank(const struct state *s, size_t *iter)
{
	void *v;

	return hmap_next(&s->ranks, iter, NULL, &v) ? v : NULL;
}

struct proc_info *state_next_proc(const struct state *s, size_t *iter)
{
	void *v;

	return hmap_next(&s->procs, iter, NULL, &v) ? v : NULL;
}
