// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The state machines' calls: an API call enters (its seq, state.c's first
 * comment says how), returns, opens and closes groups; tier B's stream and
 * event records complete the ops queued before them.
 */
#include <stdlib.h>
#include <string.h>
#include "hmap.h"
#include "names.h"
#include "state.h"
#include "state_int.h"

void st_free_op_list(struct op_list *l)
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

/* Keeps one entry per comm rank: the highest seq and p2p mark. */
static void op_list_set(struct op_list *l, struct comm_rank *cr, int64_t seq,
			int64_t p2p_mark)
{
	uint32_t i;

	for (i = 0; i < l->n; i++) {
		if (l->refs[i].cr == cr) {
			if (seq > l->refs[i].seq)
				l->refs[i].seq = seq;
			if (p2p_mark > l->refs[i].p2p_mark)
				l->refs[i].p2p_mark = p2p_mark;
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
	l->refs[l->n].seq = seq;
	l->refs[l->n++].p2p_mark = p2p_mark;
}

static struct p2p_counter *p2p_slot(struct comm_rank *cr, int32_t peer,
				     int32_t dir)
{
	uint32_t i;

	for (i = 0; i < cr->p2p_n; i++) {
		if (cr->p2p[i].peer == peer && cr->p2p[i].dir == dir)
			return &cr->p2p[i];
	}
	if (cr->p2p_n == cr->p2p_cap) {
		uint32_t ncap = cr->p2p_cap ? cr->p2p_cap * 2 : 8;
		struct p2p_counter *n = realloc(cr->p2p, ncap * sizeof(*n));

		if (!n)
			return NULL;
		cr->p2p = n;
		cr->p2p_cap = ncap;
	}
	memset(&cr->p2p[cr->p2p_n], 0, sizeof(cr->p2p[0]));
	cr->p2p[cr->p2p_n].peer = peer;
	cr->p2p[cr->p2p_n].dir = dir;
	return &cr->p2p[cr->p2p_n++];
}

static void track_on_stream(struct state *s, uint32_t host, uint32_t pid,
			    uint64_t stream, struct comm_rank *cr, int64_t seq,
			    int64_t p2p_mark)
{
	struct op_list *l = get_op_list(&s->streams, hkey3(host, pid, stream));

	if (l)
		op_list_set(l, cr, seq, p2p_mark);
}

/*
 * One p2p op of CR toward PEER in direction DIR issued on STREAM: its seq
 * (the pair's count so far), -1 without memory for the counter.
 */
static int64_t p2p_issue(struct state *s, uint32_t host, uint32_t pid, uint64_t stream,
			 struct comm_rank *cr, int32_t peer, int dir)
{
	struct p2p_counter *slot = p2p_slot(cr, peer, dir);

	if (!slot)
		return -1;
	slot->last_index = cr->p2p_issued++;
	track_on_stream(s, host, pid, stream, cr, -1, cr->p2p_issued);
	return slot->next++;
}

/*
 * Tier B for p2p: the rank's p2p calls before MARK are finished.  Per
 * (peer, direction) that is known only where its latest op came before
 * MARK (then all of them are); a counter still in use waits for a later
 * completion rather than guess.
 */
static void complete_p2p(struct state *s, struct comm_rank *cr, int64_t mark,
			 uint64_t t_ns)
{
	uint32_t i;

	for (i = 0; i < cr->p2p_n; i++) {
		struct p2p_counter *p = &cr->p2p[i];

		if (p->last_index >= mark || p->done >= p->next)
			continue;
		p->done = p->next;
		if (s->sink.p2p_complete)
			s->sink.p2p_complete(s->sink.ctx, cr, p->peer,
					     p->dir ? CCLD_FN_RECV : CCLD_FN_SEND,
					     p->done - 1, t_ns);
	}
}

static void complete(struct state *s, struct comm_rank *cr, int64_t seq,
		     uint64_t t_ns)
{
	if (seq < 0 || seq <= cr->completed_seq)
		return;
	cr->completed_seq = seq;
	cr->completed_ns = t_ns;
	s->counts.completions++;
	if (s->sink.op_complete)
		s->sink.op_complete(s->sink.ctx, cr, seq, t_ns);
}

static void complete_ref(struct state *s, const struct op_ref *r, uint64_t t_ns)
{
	complete(s, r->cr, r->seq, t_ns);
	if (r->p2p_mark)
		complete_p2p(s, r->cr, r->p2p_mark, t_ns);
}

/*
 * Tier B.  cudaEventRecord(ev, stream) binds ev to what was queued on the
 * stream so far; the event's completion (query success, synchronize)
 * completes those ops; a stream synchronize completes the whole stream.
 */
void st_on_cuda(struct state *s, uint32_t host, const struct ccld_event *ev)
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
			st_free_op_list(el);
		if (!sl || !sl->n)
			return;
		el = get_op_list(&s->cuda_events, ek);
		for (i = 0; el && i < sl->n; i++)
			op_list_set(el, sl->refs[i].cr, sl->refs[i].seq,
				    sl->refs[i].p2p_mark);
		return;
	case CCLD_FN_CUDA_EVENT_QUERY:
	case CCLD_FN_CUDA_EVENT_SYNC:
		el = hmap_get(&s->cuda_events, ek);
		for (i = 0; el && i < el->n; i++)
			complete_ref(s, &el->refs[i], ev->ts_ns);
		return;
	case CCLD_FN_CUDA_STREAM_SYNC:
	case CCLD_FN_CUDA_STREAM_QUERY:
		sl = hmap_get(&s->streams, sk);
		for (i = 0; sl && i < sl->n; i++)
			complete_ref(s, &sl->refs[i], ev->ts_ns);
		return;
	}
}

/*
 * AlltoAll, Gather and Scatter are p2p work in NCCL 2.28 (enqueue.cc): one
 * send and/or receive per peer, itself included, with p2p proxy ops, and
 * NCCL's per-function collective counts (seqNumber[], CCLD_F_SEQ) do not
 * move.  ccld counts and analyses them as those parts: the call's own
 * record is printed, its parts feed the analyzer as Send/Recv.
 */
static bool p2p_collective(int fn)
{
	return fn == CCLD_FN_ALLTOALL || fn == CCLD_FN_GATHER || fn == CCLD_FN_SCATTER;
}

/* call C has a part toward PEER in direction DIR (0 send, 1 recv) */
static bool has_part(const struct call_rec *c, int32_t peer, int dir)
{
	switch (c->fn) {
	case CCLD_FN_ALLTOALL:
		return true;
	case CCLD_FN_GATHER:
		return dir ? c->rank == c->root : peer == c->root;
	default:	/* Scatter */
		return dir ? peer == c->root : c->rank == c->root;
	}
}

/* part PEER/DIR of C, with its p2p seq */
static void part_of(struct call_rec *part, const struct call_rec *c, int32_t peer,
		    int dir, int64_t seq)
{
	*part = *c;
	part->part_of = c->fn;
	part->fn = dir ? CCLD_FN_RECV : CCLD_FN_SEND;
	part->peer = peer;
	part->root = -1;
	part->redop = 0xff;
	part->bytes = c->count * dtype_size(c->dtype);
	part->seq = seq;
}

static void enter_parts(struct state *s, uint32_t host, struct comm_rank *cr,
			const struct call_rec *c)
{
	struct call_rec part;
	int32_t r;
	int d;

	for (r = 0; r < c->nranks; r++)
		for (d = 0; d < 2; d++) {
			int64_t seq;

			if (!has_part(c, r, d) ||
			    (seq = p2p_issue(s, host, c->pid, c->stream, cr, r, d)) < 0)
				continue;
			part_of(&part, c, r, d, seq);
			if (s->sink.call_enter)
				s->sink.call_enter(s->sink.ctx, &part);
		}
}

/* the parts of C returned with it (their seqs: each slot's latest) */
static void return_parts(struct state *s, struct comm_rank *cr, const struct call_rec *c)
{
	struct call_rec part;
	int32_t r;
	int d;

	for (r = 0; r < c->nranks && s->sink.call_done; r++)
		for (d = 0; d < 2; d++) {
			struct p2p_counter *slot;

			if (!has_part(c, r, d) || !(slot = p2p_slot(cr, r, d)) || !slot->next)
				continue;
			part_of(&part, c, r, d, slot->next - 1);
			s->sink.call_done(s->sink.ctx, &part);
		}
}

void st_on_call(struct state *s, uint32_t host, const struct ccld_event *ev)
{
	struct thread_state *t = st_get_thread(s, host, ev->pid, ev->tid);
	struct comm_rank *cr = st_find_rank(s, host, ev->pid, ev->id.comm);
	struct call_rec *c;

	if (!t)
		return;
	if (!cr) {
		cr = st_new_rank(s, host, ev->pid, ev->id.comm, ev->ts_ns);
		if (!cr)
			return;
	}
	st_learn_ident(s, cr, ev);
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

	if (p2p_collective(ev->fn)) {
		c->seq = -1;	/* its parts have theirs */
		c->seq_source = cr->from_init ? SEQ_LOCAL : SEQ_ALIGNED;
		enter_parts(s, host, cr, c);
	} else if (ccld_fn_is_coll(ev->fn)) {
		if (ev->flags & CCLD_F_SEQ) {
			/*
			 * NCCL's count moved: the open group was launched,
			 * though its ncclGroupEnd record was lost (a full ring)
			 */
			if (cr->group_pending && ev->id.nccl_seq != cr->group_nccl)
				cr->group_pending = 0;
			c->seq = (int64_t)ev->id.nccl_seq + cr->group_pending;
			c->seq_source = SEQ_NCCL;
		} else {
			c->seq = cr->next_seq;
			c->seq_source = cr->from_init ? SEQ_LOCAL : SEQ_ALIGNED;
		}
		cr->next_seq = c->seq + 1;
		cr->last_seq = c->seq;
		track_on_stream(s, host, ev->pid, c->stream, cr, c->seq, 0);
		if (t->group_depth && !cr->group_pending++)
			cr->group_nccl = ev->id.nccl_seq;
	} else {
		/* NCCL keeps no per-peer p2p counter: ccld's count is exact
		 * only when it saw the comm created */
		c->seq = p2p_issue(s, host, ev->pid, c->stream, cr, c->peer,
				   ev->fn == CCLD_FN_RECV);
		c->seq_source = cr->from_init ? SEQ_LOCAL : SEQ_ALIGNED;
	}
	cr->calls++;
	cr->bytes += c->bytes;
	cr->last_ns = ev->ts_ns;
	s->counts.calls++;
	st_set_state(s, cr, t->group_depth ? RS_IN_GROUP : RS_IN_COLLECTIVE, ev);
	if (s->sink.call_enter && !p2p_collective(c->fn))
		s->sink.call_enter(s->sink.ctx, c);
}

static void finish_call(struct state *s, struct thread_state *t,
			const struct ccld_event *ev)
{
	struct call_rec *c = &t->call;
	struct comm_rank *cr = st_find_rank(s, c->host_id, c->pid, c->comm);

	c->has_ret = true;
	c->ret = ev->u.ret.ret;
	c->ret_ns = ev->ts_ns;
	t->has_call = false;
	if (cr) {
		if (c->ret != 0 && c->ret != 7 /* ncclInProgress */)
			cr->errors++;
		if (cr->state == RS_IN_COLLECTIVE || cr->state == RS_BLOCKED ||
		    cr->state == RS_IN_GROUP)
			st_set_state(s, cr, t->group_depth ? RS_IN_GROUP : RS_IDLE,
				     ev);
	}
	if (cr && p2p_collective(c->fn))
		return_parts(s, cr, c);
	if (s->sink.call_done)
		s->sink.call_done(s->sink.ctx, c);
}

void st_on_group(struct state *s, uint32_t host, const struct ccld_event *ev)
{
	struct thread_state *t = st_get_thread(s, host, ev->pid, ev->tid);

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

void st_on_ret(struct state *s, uint32_t host, const struct ccld_event *ev)
{
	struct thread_state *t = st_get_thread(s, host, ev->pid, ev->tid);

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
