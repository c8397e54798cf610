// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "an_config.h"
#include "an_wire.h"
#include "analyzer.h"
#include "hooks.h"
#include "json.h"
#include "ncclwarn.h"
#include "pipeline.h"
#include "stackasm.h"

#define MAX_HOSTS 4096

#define SNAP_MAX 256	/* proxy subs of one process's snapshot */

/* a tier E snapshot of one comm rank being reassembled */
struct snap_buf {
	uint32_t host, pid;
	uint64_t comm;
	uint32_t want, have;
	uint64_t seen[SNAP_MAX / 64];
	struct an_progress p[SNAP_MAX];
};

struct pipeline {
	struct pipeline_opts o;
	struct snap_buf snap;
	uint64_t snaps_incomplete;
	uint64_t proxy_unattributed;	/* proxy records of unknown direction */
	struct state *st;
	struct an *an;
	int *an_hosts;		/* pipeline host id -> analyzer host id */
	struct host_info *hosts;
	uint32_t nhosts;
	uint64_t verdicts;
	struct an_wire w;	/* the record being fed (snapshots: large) */
	struct warn_asm warn;	/* NCCL's warnings, part by part */
	uint64_t nwarn;		/* ... put together */
	/* the latest CCLD_EV_THREAD_FD, for the thread record after it */
	uint32_t fd_host, fd_pid, fd_tid;
	uint64_t fd_ts;
	char fd_path[sizeof(((struct ccld_thread_fd *)0)->path)];
	struct stack_asm stack;	/* ... and its native stack's parts */
};

_Static_assert(AN_STACK_MAX == STACK_TEXT_MAX, "a thread's stack fits the analyzer's record");

/*
 * Every analyzer input goes through one record (an_wire.h): the same
 * record feeds this analyzer and, in fleet mode, the node agent's tap.
 */
static void feed_an(struct pipeline *p, uint32_t host)
{
	an_wire_apply(p->an, (uint32_t)p->an_hosts[host], &p->w);
	if (p->o.tap)
		p->o.tap(p->o.tap_ctx, host, &p->w);
}

static struct an_wire *wire(struct pipeline *p, enum an_wire_type type, uint64_t t_ns)
{
	memset(&p->w, 0, offsetof(struct an_wire, subs));
	p->w.type = type;
	p->w.t_ns = t_ns;
	return &p->w;
}

/* ---- the analyzer's view of state records ------------------------------ */

static struct an_key an_key_of(const struct pipeline *p, uint32_t host,
			       uint32_t pid, uint64_t hash, int32_t rank,
			       int32_t nranks)
{
	struct an_key k = {
		.host = p->an_hosts[host], .pid = pid, .comm = hash,
		.rank = rank, .nranks = nranks > 0 ? nranks : 0,
	};

	return k;
}

/* Calls of a communicator ccld could not identify stay out of the analysis. */
static bool an_op_of(const struct pipeline *p, const struct call_rec *c,
		     struct an_op *op)
{
	if (!c->comm_hash || c->rank < 0)
		return false;
	memset(op, 0, sizeof(*op));
	op->k = an_key_of(p, c->host_id, c->pid, c->comm_hash, c->rank,
			  c->nranks);
	op->tid = c->tid;
	op->fn = c->fn;
	op->seq = c->seq;
	op->seq_from_attach = c->seq_source == SEQ_ALIGNED;
	op->count = c->count;
	op->dtype = c->dtype;
	op->redop = c->redop;
	op->root = c->root;
	op->peer = c->peer;
	op->t_ns = c->t_ns;
	return true;
}

static void sink_call_enter(void *ctx, const struct call_rec *c)
{
	struct pipeline *p = ctx;
	struct an_op op;

	struct an_wire *w;

	if (!an_op_of(p, c, &op))
		return;
	w = wire(p, AW_ENTER, op.t_ns);
	w->k = op.k;
	w->op = op;
	feed_an(p, c->host_id);
}

static void sink_op_complete(void *ctx, const struct comm_rank *cr,
			     int64_t seq, uint64_t t_ns)
{
	struct pipeline *p = ctx;
	struct an_key k;

	if (!cr->hash || cr->rank < 0)
		return;
	k = an_key_of(p, cr->host_id, cr->pid, cr->hash, cr->rank, cr->nranks);
	wire(p, AW_COMPLETE_UPTO, t_ns)->k = k;
	p->w.upto = seq;
	feed_an(p, cr->host_id);
}

static void sink_p2p_complete(void *ctx, const struct comm_rank *cr,
			      int32_t peer, int fn, int64_t seq, uint64_t t_ns)
{
	struct pipeline *p = ctx;
	struct an_wire *w;

	if (!cr->hash || cr->rank < 0)
		return;
	w = wire(p, AW_OP_DONE, t_ns);
	w->k = an_key_of(p, cr->host_id, cr->pid, cr->hash, cr->rank, cr->nranks);
	w->op.k = w->k;
	w->op.fn = fn;
	w->op.peer = peer;
	w->op.seq = seq;
	w->op.seq_from_attach = !cr->from_init;
	w->op.root = -1;
	w->op.t_ns = t_ns;
	feed_an(p, cr->host_id);
}

static void progress_of(const struct ccld_event *ev, struct an_progress *p)
{
	const struct ccld_proxy *x = &ev->u.proxy;

	memset(p, 0, sizeof(*p));
	p->seq = -1;
	p->channel = x->channel;
	p->peer = x->peer;
	p->dir = (ev->flags & CCLD_F_PROXY_RECV) ? AN_RECV : AN_SEND;
	p->posted = x->posted;
	p->transmitted = x->transmitted;
	p->received = x->received;
	p->done = x->done;
	p->nsteps = x->nsteps > 0 ? (uint64_t)x->nsteps : 0;
	if (ev->flags & CCLD_F_PROXY_ARGS) {
		p->has_args = true;
		p->coll = ev->args.coll;
		p->dtype = ev->args.dtype;
		p->redop = ev->args.redop;
	}
	p->nbytes = x->nbytes > 0 ? (uint64_t)x->nbytes : 0;
	/* +1: opCount 0 is a real op; 0 here means "unknown" */
	p->op = x->op_count + 1;
	p->step = ev->fn >= CCLD_FN_PROXY_SEND_STEP && ev->fn <= CCLD_FN_PROXY_STEP_STOP;
	/*
	 * Real NCCL appends an op to a recycled ncclProxyArgs and calls
	 * StartProxyOpEvent before its progress function resets the subs'
	 * counters: they still say the op before was done.  Read as such
	 * they ended each round at its call (on an H200: 3 of the 4
	 * collectives of a step), so they are 0 here, for the analyzer and
	 * the fleet wire alike.
	 */
	if (ev->fn == CCLD_FN_PROXY_OP_START)
		p->posted = p->transmitted = p->received = p->done = 0;
}

/*
 * Tier C records go to the analyzer one by one; a tier E snapshot's
 * records (consecutive, same ts, index in step, total in nsnap) are
 * gathered and handed over whole, replacing what was known.
 */
static void sink_proxy(void *ctx, const struct comm_rank *cr,
		       const struct ccld_event *ev)
{
	struct pipeline *p = ctx;
	struct snap_buf *sb = &p->snap;
	const struct ccld_proxy *x = &ev->u.proxy;
	struct an_progress prog;
	struct an_key k;
	uint32_t i;

	if (!cr->hash || cr->rank < 0)
		return;
	if (!(ev->flags & CCLD_F_PROXY_DIR)) {
		/* counted and reported: a silent drop would read as "no progress" */
		p->proxy_unattributed++;
		return;
	}
	k = an_key_of(p, cr->host_id, cr->pid, cr->hash, cr->rank, cr->nranks);
	if (ev->fn != CCLD_FN_PROXY_SNAPSHOT) {
		progress_of(ev, &prog);
		wire(p, AW_PROGRESS, ev->ts_ns)->k = k;
		p->w.nsubs = 1;
		p->w.subs[0] = prog;
		feed_an(p, cr->host_id);
		return;
	}
	if (sb->host != cr->host_id || sb->pid != cr->pid || sb->comm != cr->comm ||
	    sb->want != x->nsnap || sb->have == 0) {
		if (sb->have && sb->have < sb->want)
			p->snaps_incomplete++;
		memset(sb->seen, 0, sizeof(sb->seen));
		sb->host = cr->host_id;
		sb->pid = cr->pid;
		sb->comm = cr->comm;
		sb->want = x->nsnap < SNAP_MAX ? x->nsnap : SNAP_MAX;
		sb->have = 0;
	}
	if (sb->want == 0) {	/* nothing active in the proxy */
		wire(p, AW_SNAPSHOT, ev->ts_ns)->k = k;
		feed_an(p, cr->host_id);
		return;
	}
	i = (uint32_t)x->step;
	if (i >= sb->want || (sb->seen[i / 64] >> (i % 64) & 1))
		return;
	sb->seen[i / 64] |= 1ull << (i % 64);
	progress_of(ev, &sb->p[i]);
	if (++sb->have == sb->want) {
		wire(p, AW_SNAPSHOT, ev->ts_ns)->k = k;
		p->w.nsubs = sb->want;
		memcpy(p->w.subs, sb->p, sb->want * sizeof(sb->p[0]));
		feed_an(p, cr->host_id);
		sb->have = 0;
	}
}

/*
 * A comm rank found inside its init in memory (an init the analyzer follows
 * as one entered before the read: which ncclCommInitRank* is not known), or
 * whose init ended since: its return, with what initState says
 */
static void init_read(struct pipeline *p, const struct comm_rank *cr,
		      const struct ccld_event *ev)
{
	struct an_setup s = {
		.pid = cr->pid,
		.group = cr->hash,
		.kind = AN_SETUP_INIT,
		.nranks = cr->nranks,
		.rank = cr->rank,
		.returned = cr->mem_init_edge < 0,
		.before = cr->mem_init_edge > 0,
		.ret = cr->mem_init_edge < 0 ? ev->u.cstate.init_state : 0,
	};

	snprintf(s.name, sizeof(s.name), "%s", cr->name);
	wire(p, AW_SETUP, ev->ts_ns)->setup = s;
	feed_an(p, cr->host_id);
}

/* a comm rank's state read from memory: its launch counters to the analyzer */
static void sink_comm_state(void *ctx, const struct comm_rank *cr,
			    const struct ccld_event *ev)
{
	struct pipeline *p = ctx;
	const struct ccld_comm_state *cs = &ev->u.cstate;
	struct an_launch *l;
	uint32_t i;

	if (p->o.events)
		out_comm_state(p->o.out, pipeline_host(p, cr->host_id), cr, ev, p->o.json);
	if (!cr->hash || cr->rank < 0)
		return;
	if (cr->mem_init_edge)
		init_read(p, cr, ev);
	if (cr->mem_in_init)
		return;		/* nothing launched: its counters once it is connected */
	wire(p, AW_LAUNCHED, ev->ts_ns)->k = an_key_of(p, cr->host_id, cr->pid, cr->hash,
						       cr->rank, cr->nranks);
	l = &p->w.launch;
	memset(l, 0, sizeof(*l));
	l->dead = cs->source == CCLD_COMM_SRC_PEER;
	l->ncoll = !l->dead && (ev->flags & CCLD_F_SEQ) ? (int64_t)ev->id.nccl_seq : -1;
	l->has_coll_ops = !l->dead && (cs->counts & CCLD_CS_COLL_OP_COUNT);
	l->coll_ops = cs->coll_op_count;
	l->hosts_known = !l->dead && (cs->counts & CCLD_CS_HOSTS_READ);
	l->intra_node = l->hosts_known && (cs->counts & CCLD_CS_INTRA_NODE);
	l->nfn = l->dead ? 0 : cs->nseq < AN_SEQ_FNS ? cs->nseq : AN_SEQ_FNS;
	for (i = 0; i < l->nfn; i++)
		l->per_fn[i] = cs->seq_number[i];
	feed_an(p, cr->host_id);
}

static void on_suspect(void *ctx, const struct an_suspect *s)
{
	struct pipeline *p = ctx;

	if (p->o.suspect)
		p->o.suspect(p->o.suspect_ctx, s);
}

static void print_verdict(void *ctx, const struct an_verdict *v)
{
	struct pipeline *p = ctx;
	struct json_buf b;
	uint32_t i;
	int64_t off = 0;

	p->verdicts++;
	json_init(&b);
	for (i = 0; i < p->nhosts; i++) {
		if ((uint32_t)p->an_hosts[i] == v->clock_host)
			off = p->hosts[i].realtime_offset_ns;
	}
	if (an_verdict_line(p->an, v, p->o.json, off, &b)) {
		fprintf(stderr, "ccld-trace: out of memory formatting a verdict\n");
	} else {
		fprintf(p->o.out, "%s\n", json_str(&b));
		fflush(p->o.out);
	}
	json_free(&b);
}

static void sink_call_done(void *ctx, const struct call_rec *c)
{
	struct pipeline *p = ctx;
	const struct host_info *h = pipeline_host(p, c->host_id);
	struct an_op op;

	if (c->has_ret && an_op_of(p, c, &op)) {
		struct an_wire *w = wire(p, AW_RETURN, c->ret_ns);

		w->k = op.k;
		w->op = op;
		w->ret = c->ret;
		feed_an(p, c->host_id);
	}

	if (!p->o.events || c->part_of)	/* a part: its call is printed */
		return;
	if (p->o.json)
		out_call_json(p->o.out, h, c);
	else
		out_call_text(p->o.out, h, c);
}

/*
 * An init (the group: its unique id), a split (the parent and the split's
 * index) or a teardown (the group: the comm) as the analyzer follows them
 * (an_setup_call); false for other calls.
 */
static bool setup_of(const struct comm_call_rec *c, struct an_setup *s)
{
	bool init = c->fn == CCLD_FN_INIT_RANK || c->fn == CCLD_FN_INIT_RANK_CONFIG ||
		    c->fn == CCLD_FN_INIT_RANK_SCALABLE;

	memset(s, 0, sizeof(*s));
	s->pid = c->pid;
	s->fn = c->fn;
	if (init && c->id_hash && c->arg_nranks > 0 && c->arg_rank >= 0) {
		s->kind = AN_SETUP_INIT;
		s->group = c->id_hash;
		s->nranks = c->arg_nranks;
		s->rank = c->arg_rank;
		snprintf(s->name, sizeof(s->name), "%s", c->name);
		return true;
	}
	/* every rank of the parent calls it, the k-th split with the others' k-th */
	if (c->fn == CCLD_FN_SPLIT && c->parent_hash && c->parent_nranks > 0 &&
	    c->parent_rank >= 0 && c->parent_rank < c->parent_nranks) {
		s->kind = AN_SETUP_SPLIT;
		s->group = an_setup_split_group(c->parent_hash, c->split_index);
		s->comm = c->parent_hash;
		s->nranks = c->parent_nranks;
		s->rank = c->parent_rank;
		snprintf(s->name, sizeof(s->name), "%s", c->name);
		return true;
	}
	if (ccld_fn_is_teardown(c->fn) && c->comm_hash && c->nranks > 0 && c->rank >= 0) {
		s->kind = AN_SETUP_TEARDOWN;
		s->group = c->comm_hash;
		s->nranks = c->nranks;
		s->rank = c->rank;
		return true;
	}
	return false;
}

static void sink_comm_enter(void *ctx, const struct comm_call_rec *c)
{
	struct pipeline *p = ctx;
	struct an_setup s;

	if (!setup_of(c, &s))
		return;
	wire(p, AW_SETUP, c->t_ns)->setup = s;
	feed_an(p, c->host_id);
}

static void sink_comm_call(void *ctx, const struct comm_call_rec *c)
{
	struct pipeline *p = ctx;
	const struct host_info *h = pipeline_host(p, c->host_id);
	bool ok = c->has_ret && (c->ret == 0 || c->ret == 7 /* InProgress */);
	struct an_setup s;

	/* a return (not the flush of one still inside at the end) */
	if (c->has_ret && setup_of(c, &s)) {
		s.returned = true;
		s.ret = c->ret;
		wire(p, AW_SETUP, c->ret_ns)->setup = s;
		feed_an(p, c->host_id);
	}

	if (ok && c->comm_hash && c->rank >= 0) {
		struct an_key k = an_key_of(p, c->host_id, c->pid, c->comm_hash,
					    c->rank, c->nranks);

		wire(p, ccld_fn_is_teardown(c->fn) ? AW_RANK_GONE : AW_RANK, c->ret_ns)->k = k;
		p->w.parent = c->parent_hash;
		p->w.color = c->fn == CCLD_FN_SPLIT ? c->color : -1;
		snprintf(p->w.comm_name, sizeof(p->w.comm_name), "%s", c->name);
		feed_an(p, c->host_id);
	}

	if (!p->o.events)
		return;
	if (p->o.json)
		out_comm_json(p->o.out, h, c);
	else
		out_comm_text(p->o.out, h, c);
}

static void sink_comm_change(void *ctx, const struct comm_rank *cr,
			     const struct ccld_event *ev)
{
	struct pipeline *p = ctx;
	const struct host_info *h = pipeline_host(p, cr->host_id);

	if (p->o.json || p->o.quiet)
		return;
	fprintf(p->o.out, "%s pid %u comm %016" PRIx64 " rank %d/%d: %s (%s)\n",
		h->name, cr->pid, cr->hash, cr->rank, cr->nranks,
		rank_state_name(cr->state), hook_fn_name(ev->fn));
}

static void sink_proc_change(void *ctx, const struct proc_info *pi,
			     const struct ccld_event *ev)
{
	struct pipeline *p = ctx;
	const struct host_info *h = pipeline_host(p, pi->host_id);
	bool stopped = pi->state == 'T' || pi->state == 't';

	wire(p, AW_PROC, ev->ts_ns)->k.pid = pi->pid;
	p->w.proc_state = ev->type == CCLD_EV_PROC_EXIT ? AN_PROC_EXITED :
			  stopped ? AN_PROC_STOPPED : AN_PROC_RUNNING;
	p->w.exit_status = ev->type == CCLD_EV_PROC_EXIT ? pi->exit_code : 0;
	feed_an(p, pi->host_id);

	if (p->o.json || p->o.quiet)
		return;
	switch (ev->type) {
	case CCLD_EV_PROC_ATTACH:
		fprintf(p->o.out, "%s pid %u (%s): attached\n", h->name,
			pi->pid, pi->name);
		break;
	case CCLD_EV_PROC_EXIT:
		fprintf(p->o.out, "%s pid %u (%s): exited\n", h->name, pi->pid,
			pi->name);
		break;
	case CCLD_EV_PROC_STATE:
		fprintf(p->o.out, "%s pid %u (%s): state %c\n", h->name,
			pi->pid, pi->name, pi->state ? pi->state : '?');
		break;
	}
}

struct pipeline *pipeline_new(const struct pipeline_opts *o)
{
	struct pipeline *p = calloc(1, sizeof(*p));
	struct an_sink asink = { .verdict = print_verdict, .suspect = on_suspect };
	struct an_config ac;
	struct state_sink sink = {
		.call_enter = sink_call_enter,
		.op_complete = sink_op_complete,
		.p2p_complete = sink_p2p_complete,
		.call_done = sink_call_done,
		.comm_enter = sink_comm_enter,
		.comm_call = sink_comm_call,
		.comm_change = sink_comm_change,
		.proc_change = sink_proc_change,
		.proxy = sink_proxy,
		.comm_state = sink_comm_state,
	};

	if (!p)
		return NULL;
	p->o = *o;
	sink.ctx = p;
	asink.ctx = p;
	ac = o->an;
	p->st = state_new(&sink);
	if (p->st)
		state_blocked_after(p->st, (uint64_t)(an_config_suspect_s(&ac) * 1e9));
	/* the state lets go of an exited process when the analyzer does */
	if (p->st && o->forget_exited)
		state_forget_after(p->st, (uint64_t)(ac.forget_s * 1e9));
	p->an = an_new(&ac, &asink);
	p->hosts = calloc(MAX_HOSTS, sizeof(*p->hosts));
	p->an_hosts = calloc(MAX_HOSTS, sizeof(*p->an_hosts));
	if (!p->st || !p->an || !p->hosts || !p->an_hosts) {
		pipeline_free(p);
		return NULL;
	}
	return p;
}

void pipeline_free(struct pipeline *p)
{
	if (!p)
		return;
	state_free(p->st);
	an_free(p->an);
	free(p->hosts);
	free(p->an_hosts);
	free(p);
}

int pipeline_add_host(struct pipeline *p, const char *name,
		      int64_t realtime_offset_ns)
{
	struct host_info *h;

	if (p->nhosts >= MAX_HOSTS)
		return -1;
	h = &p->hosts[p->nhosts];
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->realtime_offset_ns = realtime_offset_ns;
	p->an_hosts[p->nhosts] = an_host(p->an, h->name);
	if (p->an_hosts[p->nhosts] < 0)
		return -1;
	return p->nhosts++;
}

const struct host_info *pipeline_host(const struct pipeline *p, uint32_t id)
{
	static const struct host_info unknown = { .name = "?" };

	return id < p->nhosts ? &p->hosts[id] : &unknown;
}

/* "addr:port" of a TCP record's other end */
static void tcp_remote(const struct ccld_tcp *t, char *out, size_t n)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (t->family == AF_INET6)
		inet_ntop(AF_INET6, t->raddr, a, sizeof(a));
	else
		inet_ntop(AF_INET, t->raddr, a, sizeof(a));
	snprintf(out, n, t->family == AF_INET6 ? "[%s]:%u" : "%s:%u", a, t->rport);
}

_Static_assert(AN_WARN_MAX >= NCCL_WARN_MSG_MAX, "a warning fits the analyzer's record");

/* A part of one of NCCL's warnings; the whole is shown and analyzed. */
static void pipeline_warn_part(struct pipeline *p, uint32_t host, const struct ccld_event *ev)
{
	const struct proc_info *pi;
	struct nccl_warning nw;
	struct an_wire *w;

	if (warn_asm_feed(&p->warn, host, ev, &nw) != WARN_DONE)
		return;
	p->nwarn++;
	pi = state_proc(p->st, host, nw.pid);
	out_nccl_warning(p->o.out, pipeline_host(p, host), &nw, pi ? pi->global_rank : "",
			 p->o.json);
	w = wire(p, AW_NCCL_WARN, nw.ts_ns);
	w->k.pid = nw.pid;
	w->warn_line = nw.line;
	snprintf(w->label, sizeof(w->label), "%s", nw.file);
	snprintf(w->warn_msg, sizeof(w->warn_msg), "%s", nw.msg);
	feed_an(p, host);
}

void pipeline_feed(struct pipeline *p, uint32_t host, const struct ccld_event *ev)
{
	state_feed(p->st, host, ev);
	if (ev->type == CCLD_EV_XID) {
		struct an_wire *w = wire(p, AW_XID, ev->ts_ns);

		w->k.pid = ev->pid;
		w->bus_id = ev->u.xid.bus_id;
		w->xid = ev->u.xid.xid;
		snprintf(w->label, sizeof(w->label), "%.*s", (int)sizeof(ev->u.xid.text),
			 ev->u.xid.text);
		feed_an(p, host);
	}
	if (ev->type == CCLD_EV_TCP) {
		struct an_wire *w = wire(p, AW_TCP, ev->ts_ns);

		w->k.pid = ev->pid;
		w->peer_pid = ev->u.tcp.peer_pid;
		w->tcp_kind = (enum an_tcp_kind)ev->u.tcp.kind;
		w->tcp_old = ev->u.tcp.old_state;
		w->tcp_new = ev->u.tcp.new_state;
		tcp_remote(&ev->u.tcp, w->label, sizeof(w->label));
		feed_an(p, host);
	}
	if (ev->type == CCLD_EV_RDMA && ev->pid && ev->u.rdma.dev[0]) {
		struct an_wire *w = wire(p, AW_RDMA, ev->ts_ns);

		w->k.pid = ev->pid;
		memcpy(w->nic.dev, ev->u.rdma.dev, sizeof(w->nic.dev));
		w->nic.dev[sizeof(w->nic.dev) - 1] = '\0';
		w->nic.port = ev->u.rdma.port;
		w->nic.qp_num = ev->u.rdma.qp_num;
		w->nic.source = ev->u.rdma.source;
		w->nic.event = ev->u.rdma.event;
		w->nic.old_state = ev->u.rdma.old_state;
		w->nic.new_state = ev->u.rdma.new_state;
		feed_an(p, host);
	}
	if (ev->type == CCLD_EV_THREAD_FD) {
		p->fd_host = host;
		p->fd_pid = ev->pid;
		p->fd_tid = ev->tid;
		p->fd_ts = ev->ts_ns;
		snprintf(p->fd_path, sizeof(p->fd_path), "%.*s",
			 (int)sizeof(ev->u.fd.path) - 1, ev->u.fd.path);
	}
	if (ev->type == CCLD_EV_THREAD_STACK)
		stack_asm_part(&p->stack, host, ev);
	if (ev->type == CCLD_EV_THREAD && ((ev->u.thread.state >= 'A' && ev->u.thread.state <= 'Z') ||
					   (ev->u.thread.state >= 'a' && ev->u.thread.state <= 'z'))) {
		struct an_wire *w = wire(p, AW_THREAD, ev->ts_ns);
		const struct ccld_thread *t = &ev->u.thread;

		w->k.pid = ev->pid;
		w->thread.tid = ev->tid;
		w->thread.state = (char)t->state;
		w->thread.main = t->main;
		w->thread.syscall = t->syscall;
		w->thread.arg0 = t->arg0;
		snprintf(w->thread.name, sizeof(w->thread.name), "%.*s",
			 (int)sizeof(t->name) - 1, t->name);
		snprintf(w->thread.wchan, sizeof(w->thread.wchan), "%.*s",
			 (int)sizeof(t->wchan) - 1, t->wchan);
		if (ev->fn == CCLD_FN_CUDA_STREAM_SYNC || ev->fn == CCLD_FN_CUDA_EVENT_SYNC) {
			w->thread.cuda_sync = ev->fn;
			w->thread.cuda_since = ev->cuda_since_ns;
			w->thread.cuda_stack = ev->u.thread.cuda_stack;
		}
		/* its fd record, just before it in the same look */
		if (p->fd_tid == ev->tid && p->fd_pid == ev->pid && p->fd_host == host &&
		    p->fd_ts == ev->ts_ns)
			snprintf(w->thread.path, sizeof(w->thread.path), "%s", p->fd_path);
		p->fd_tid = 0;
		/* its stack, every part of it just before it in the same look */
		stack_asm_take(&p->stack, host, ev, w->thread.stack, sizeof(w->thread.stack));
		feed_an(p, host);
		if (p->o.events)
			out_thread(p->o.out, pipeline_host(p, host), ev, w->thread.path,
				   w->thread.stack, p->o.json);
	}
	if (ev->type == CCLD_EV_NCCL_WARN)
		pipeline_warn_part(p, host, ev);
	if (ev->type == CCLD_EV_ENDPOINT && ev->pid) {
		struct an_wire *w = wire(p, AW_ENDPOINT, ev->ts_ns);

		w->k.pid = ev->pid;
		snprintf(w->label, sizeof(w->label), "%.*s", (int)sizeof(ev->u.endpoint.addr) - 1,
			 ev->u.endpoint.addr);
		w->port = ev->u.endpoint.port;
		w->gone = ev->u.endpoint.gone != 0;
		feed_an(p, host);
	}
	if (ev->type == CCLD_EV_SCHED && ev->pid) {
		struct an_wire *w = wire(p, AW_SCHED, ev->ts_ns);

		w->k.pid = ev->pid;
		w->sched.tid = ev->tid;
		w->sched.cpu_ns = ev->u.sched.cpu_ns;
		w->sched.run_delay_ns = ev->u.sched.run_delay_ns;
		feed_an(p, host);
	}
	/* the host's step records shed: AW_LOST of no process */
	if (ev->type == CCLD_EV_LOST && ev->u.lost.steps_shed) {
		struct an_wire *w = wire(p, AW_LOST, ev->ts_ns);

		w->k.pid = 0;
		w->lost = ev->u.lost.steps_shed;
		feed_an(p, host);
	}
	if (ev->type == CCLD_EV_PROC_LOST && ev->pid) {
		struct an_wire *w = wire(p, AW_LOST, ev->ts_ns);

		w->k.pid = ev->pid;
		w->lost = ev->u.lost.main_drops + ev->u.lost.rare_drops;
		feed_an(p, host);
	}
	if (ev->type == CCLD_EV_PROC_LABEL) {
		struct an_wire *w = wire(p, AW_LABEL, ev->ts_ns);

		w->k.pid = ev->pid;
		w->label_kind = (enum an_label)ev->u.label.kind;
		snprintf(w->label, sizeof(w->label), "%.*s", (int)sizeof(ev->u.label.value),
			 ev->u.label.value);
		feed_an(p, host);
	}
	/* the analyzer's clock is the records' clock: replay == live */
	if (ev->type == CCLD_EV_TICK) {
		wire(p, AW_CLOCK, ev->ts_ns)->realtime_offset_ns =
			pipeline_host(p, host)->realtime_offset_ns;
		feed_an(p, host);
	}
}

void pipeline_finish(struct pipeline *p, double duration_s)
{
	const struct state_counts *c = state_counts(p->st);
	struct summary s = { 0 };
	struct comm_rank *cr;
	uint64_t *hashes = NULL;
	size_t it, n = 0, cap = 0, i;

	state_flush(p->st);
	/* forgotten ones included: the summary covers the whole run */
	s.processes = c->procs_forgotten;
	for (it = 0; state_next_proc(p->st, &it);)
		s.processes++;
	for (it = 0; (cr = state_next_rank(p->st, &it));) {
		if (!cr->hash)
			continue;
		for (i = 0; i < n && hashes[i] != cr->hash; i++)
			;
		if (i < n)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			uint64_t *nh = realloc(hashes, ncap * sizeof(*nh));

			if (!nh)
				break;
			hashes = nh;
			cap = ncap;
		}
		hashes[n++] = cr->hash;
	}
	free(hashes);
	s.comms = n + c->comms_forgotten;
	s.events = c->events;
	s.calls = c->calls;
	s.main_drops = c->main_drops;
	s.rare_drops = c->rare_drops;
	s.steps_shed = c->steps_shed;
	s.verdicts = p->verdicts;
	s.proxy_unattributed = p->proxy_unattributed;
	s.nccl_warnings = p->nwarn;
	s.nccl_warnings_dropped = p->warn.incomplete + p->warn.not_this_warn;
	s.mem_refused = an_stats(p->an)->mem_refused;
	s.duration_s = duration_s;
	s.st = p->st;
	if (p->o.json) {
		out_summary_json(p->o.out, &s);
	} else {
		if (!p->o.events)
			out_comm_table(p->o.out, p->st, false);
		out_summary_text(p->o.out, &s);
	}
	fflush(p->o.out);
}

const struct state *pipeline_state(const struct pipeline *p)
{
	return p->st;
}
