// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Communicator/rank state machines and sequence numbers.
 *
 * Sequence numbers (docs/cli.md, "seq_source"): when the probe could read NCCL's
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
#include "an_config.h"
#include "hmap.h"
#include "state.h"
#include "state_int.h"


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

struct state *state_new(const struct state_sink *sink)
{
	struct state *s = calloc(1, sizeof(*s));
	struct an_config d;

	if (!s)
		return NULL;
	s->sink = *sink;
	an_config_default(&d);
	s->blocked_ns = (uint64_t)(an_config_suspect_s(&d) * 1e9);
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
		st_free_op_list(v);
	for (i = 0; hmap_next(&s->cuda_events, &i, &k, &v);)
		st_free_op_list(v);
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

void state_blocked_after(struct state *s, uint64_t ns)
{
	s->blocked_ns = ns;
}

void state_forget_after(struct state *s, uint64_t ns)
{
	s->forget_ns = ns;
}

/* Deletes the entries of M keyed (HOST, PID, *), freeing them with FREE_FN. */
static void del_of_proc(struct hmap *m, uint32_t host, uint32_t pid,
			void (*free_fn)(void *))
{
	struct hkey k;
	size_t i;
	void *v;

	for (i = 0; hmap_next(m, &i, &k, &v);) {
		if (k.a != host || k.b != pid)
			continue;
		hmap_del(m, k);
		free_fn(v);
	}
}

static void free_op_list_v(void *v)
{
	st_free_op_list(v);
}

static bool hash_held(const struct state *s, uint64_t hash)
{
	struct hkey k;
	size_t i;
	void *v;

	for (i = 0; hmap_next(&s->ranks, &i, &k, &v);)
		if (((struct comm_rank *)v)->hash == hash)
			return true;
	return false;
}

/*
 * Frees process P and all it holds: its threads (a call still inside NCCL
 * is reported first, as at the end of a trace), comm ranks and stream and
 * event bindings.  Op lists of a process only name its own comm ranks.
 */
static void forget_proc(struct state *s, struct proc_info *p)
{
	struct comm_rank *cr, *next;
	struct hkey k;
	size_t i;
	void *v;

	for (i = 0; hmap_next(&s->threads, &i, &k, &v);) {
		struct thread_state *t = v;

		if (k.a != p->host_id || k.b != p->pid)
			continue;
		if (t->init.active && s->sink.comm_call)
			s->sink.comm_call(s->sink.ctx, &t->init.rec);
		if (t->has_call && s->sink.call_done)
			s->sink.call_done(s->sink.ctx, &t->call);
		hmap_del(&s->threads, k);
		free(t);
	}
	del_of_proc(&s->streams, p->host_id, p->pid, free_op_list_v);
	del_of_proc(&s->cuda_events, p->host_id, p->pid, free_op_list_v);
	for (cr = p->comms; cr; cr = next) {
		next = cr->next_in_proc;
		hmap_del(&s->ranks, hkey3(cr->host_id, cr->pid, cr->comm));
		if (cr->hash && !hash_held(s, cr->hash))
			s->counts.comms_forgotten++;
		free(cr->p2p);
		free(cr);
	}
	hmap_del(&s->procs, hkey3(p->host_id, p->pid, 0));
	free(p);
	s->counts.procs_forgotten++;
}

/* HOST's processes that exited more than forget_ns before NOW */
static void forget_exited(struct state *s, uint32_t host, uint64_t now)
{
	struct hkey k;
	size_t i;
	void *v;

	if (!s->forget_ns)
		return;
	for (i = 0; hmap_next(&s->procs, &i, &k, &v);) {
		struct proc_info *p = v;

		if (p->host_id == host && p->exited && now - p->exit_ns > s->forget_ns)
			forget_proc(s, p);
	}
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

struct thread_state *st_get_thread(struct state *s, uint32_t host,
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

struct comm_rank *st_find_rank(struct state *s, uint32_t host,
			       uint32_t pid, uint64_t comm)
{
	return hmap_get(&s->ranks, hkey3(host, pid, comm));
}

struct comm_rank *st_new_rank(struct state *s, uint32_t host, uint32_t pid,
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

/*
 * Takes identity from the record when the probe read it from ncclComm.  A
 * comm named by its init call before any layout was in use keeps that
 * name when one comes into use later (a table entry confirmed): the
 * records already out, and the other hosts, know it by it.
 */
void st_learn_ident(struct state *s, struct comm_rank *cr,
		    const struct ccld_event *ev)
{
	if (ev->flags & CCLD_F_BAD_COMM)
		s->counts.bad_comm++;
	if (!(ev->flags & CCLD_F_IDENT) || !ev->id.hash || cr->ident_from_args)
		return;
	cr->hash = ev->id.hash;
	cr->rank = ev->id.rank;
	cr->nranks = ev->id.nranks;
	cr->ident_from_memory = true;
}

void st_set_state(struct state *s, struct comm_rank *cr,
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

static void on_proc(struct state *s, uint32_t host, const struct ccld_event *ev)
{
	struct proc_info *p = get_proc(s, host, ev->pid);
	struct comm_rank *cr;

	if (!p)
		return;
	switch (ev->type) {
	case CCLD_EV_PROC_ATTACH:
		/* a new process with an exited one's pid: it starts clean */
		if (p->exited) {
			forget_proc(s, p);
			p = get_proc(s, host, ev->pid);
			if (!p)
				return;
		}
		p->ppid = ev->u.proc.ppid;
		memcpy(p->name, ev->u.proc.name, sizeof(p->name));
		p->name[sizeof(p->name) - 1] = '\0';
		p->state = ev->u.proc.state;
		break;
	case CCLD_EV_PROC_EXIT:
		p->exited = true;
		p->exit_ns = ev->ts_ns;
		p->exit_code = ev->u.proc.exit_code;
		for (cr = p->comms; cr; cr = cr->next_in_proc)
			st_set_state(s, cr, RS_EXITED, ev);
		break;
	case CCLD_EV_PROC_STATE:
		p->state = ev->u.proc.state;
		break;
	}
	if (s->sink.proc_change)
		s->sink.proc_change(s->sink.ctx, p, ev);
}

/* the launcher's global rank of the process, for what is shown of it */
static void on_proc_label(struct state *s, uint32_t host, const struct ccld_event *ev)
{
	struct proc_info *p;
	size_t n;

	if (ev->u.label.kind != CCLD_LABEL_RANK)
		return;
	n = strnlen(ev->u.label.value, sizeof(ev->u.label.value));
	/* a decimal number that fits, as the analyzer takes it */
	if (!n || n >= sizeof(p->global_rank) || strspn(ev->u.label.value, "0123456789") != n)
		return;
	p = get_proc(s, host, ev->pid);
	if (p)
		snprintf(p->global_rank, sizeof(p->global_rank), "%.*s", (int)n,
			 ev->u.label.value);
}

/* the process's records lost so far (cumulative counts: the largest wins) */
static void on_proc_lost(struct state *s, uint32_t host, const struct ccld_event *ev)
{
	struct proc_info *p = get_proc(s, host, ev->pid);

	if (!p)
		return;
	if (ev->u.lost.main_drops > p->lost[0])
		p->lost[0] = ev->u.lost.main_drops;
	if (ev->u.lost.rare_drops > p->lost[1])
		p->lost[1] = ev->u.lost.rare_drops;
}

/* On the host's clock tick: calls inside NCCL for over blocked_ns are blocked. */
static void on_tick(struct state *s, uint32_t host, const struct ccld_event *ev)
{
	struct hkey k;
	void *v;
	size_t i;

	for (i = 0; hmap_next(&s->threads, &i, &k, &v);) {
		struct thread_state *t = v;
		struct comm_rank *cr;

		if (k.a != host || !t->has_call ||
		    ev->ts_ns < t->call.t_ns + s->blocked_ns)
			continue;
		cr = st_find_rank(s, host, t->call.pid, t->call.comm);
		if (cr && cr->state != RS_EXITED)
			st_set_state(s, cr, RS_BLOCKED, ev);
	}
	forget_exited(s, host, ev->ts_ns);
}

/* the loader mapped the record to a comm (id.comm = the ncclComm) */
static void on_proxy(struct state *s, uint32_t host, const struct ccld_event *ev)
{
	struct comm_rank *cr;

	if (!(ev->flags & CCLD_F_IDENT))
		return;
	cr = st_find_rank(s, host, ev->pid, ev->id.comm);
	if (cr && s->sink.proxy)
		s->sink.proxy(s->sink.ctx, cr, ev);
}

void state_feed(struct state *s, uint32_t host_id, const struct ccld_event *ev)
{
	if (ev->type < CCLD_EV_PROC_ATTACH)
		s->counts.events++;
	switch (ev->type) {
	case CCLD_EV_CALL:
		st_on_call(s, host_id, ev);
		break;
	case CCLD_EV_RET:
		st_on_ret(s, host_id, ev);
		break;
	case CCLD_EV_GROUP:
		st_on_group(s, host_id, ev);
		break;
	case CCLD_EV_COMM:
		st_on_comm(s, host_id, ev);
		break;
	case CCLD_EV_COMM_NAME:
		st_on_comm_name(s, host_id, ev);
		break;
	case CCLD_EV_COMM_RET:
		st_on_comm_ret(s, host_id, ev);
		break;
	case CCLD_EV_ASYNC_ERR:
		st_on_async_err(s, host_id, ev);
		break;
	case CCLD_EV_CUDA:
		st_on_cuda(s, host_id, ev);
		break;
	case CCLD_EV_PROXY:
		on_proxy(s, host_id, ev);
		break;
	case CCLD_EV_COMM_STATE:
		st_on_comm_state(s, host_id, ev);
		break;
	case CCLD_EV_PROC_ATTACH:
	case CCLD_EV_PROC_EXIT:
	case CCLD_EV_PROC_STATE:
		on_proc(s, host_id, ev);
		break;
	case CCLD_EV_LOST:
		s->counts.main_drops = ev->u.lost.main_drops;
		s->counts.rare_drops = ev->u.lost.rare_drops;
		s->counts.steps_shed = ev->u.lost.steps_shed;
		break;
	case CCLD_EV_PROC_LOST:
		on_proc_lost(s, host_id, ev);
		break;
	case CCLD_EV_PROC_LABEL:
		on_proc_label(s, host_id, ev);
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
