// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Encoding and decoding of the analyzer's input records (an_wire.h).  The
 * decoder takes records from the network: every length and value is
 * checked, nothing is read past the end.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <linux/types.h>
#include "an_wire.h"
#include "ccld.h"

struct wbuf {
	uint8_t *p;
	size_t len, off;
	bool bad;
};

struct rbuf {
	const uint8_t *p;
	size_t len, off;
	bool bad;
};

static void put(struct wbuf *b, uint64_t v, unsigned n)
{
	unsigned i;

	if (b->off + n > b->len) {
		b->bad = true;
		return;
	}
	for (i = 0; i < n; i++)
		b->p[b->off++] = (uint8_t)(v >> (8 * i));
}

static uint64_t get(struct rbuf *b, unsigned n)
{
	uint64_t v = 0;
	unsigned i;

	if (b->bad || b->off + n > b->len) {
		b->bad = true;
		return 0;
	}
	for (i = 0; i < n; i++)
		v |= (uint64_t)b->p[b->off++] << (8 * i);
	return v;
}

#define put8(b, v)	put(b, (uint64_t)(v), 1)
#define put32(b, v)	put(b, (uint64_t)(uint32_t)(v), 4)
#define put64(b, v)	put(b, (uint64_t)(v), 8)
#define get8(b)		((uint8_t)get(b, 1))
#define get32(b)	((uint32_t)get(b, 4))
#define get64(b)	(get(b, 8))

/* a text: its length in LENB bytes, then its bytes (no NUL; < MAX) */
static int put_text_n(struct wbuf *b, const char *s, size_t max, unsigned lenb)
{
	size_t n = strnlen(s, max), i;

	if (n >= max)
		return -EINVAL;
	put(b, n, lenb);
	for (i = 0; i < n; i++)
		put8(b, (uint8_t)s[i]);
	return 0;
}

static void get_text_n(struct rbuf *b, char *s, size_t max, unsigned lenb)
{
	size_t n = (size_t)get(b, lenb), i;

	if (n >= max)
		b->bad = true;
	for (i = 0; i < n && !b->bad; i++) {
		s[i] = (char)get8(b);
		if (!s[i])
			b->bad = true;
	}
	s[b->bad ? 0 : n] = '\0';
}

/* a short text (u8 length, < AN_LABEL_MAX); a warning's (u16, < AN_WARN_MAX) */
#define put_text(b, s)		put_text_n(b, s, AN_LABEL_MAX, 1)
#define get_text(b, s)		get_text_n(b, s, AN_LABEL_MAX, 1)
#define put_long_text(b, s)	put_text_n(b, s, AN_WARN_MAX, 2)
#define get_long_text(b, s)	get_text_n(b, s, AN_WARN_MAX, 2)

static void put_key(struct wbuf *b, const struct an_key *k)
{
	put32(b, k->pid);
	put64(b, k->comm);
	put32(b, k->rank);
	put32(b, k->nranks);
}

static void get_key(struct rbuf *b, struct an_key *k)
{
	k->host = 0;
	k->pid = get32(b);
	k->comm = get64(b);
	k->rank = (int32_t)get32(b);
	k->nranks = (int32_t)get32(b);
	if (k->rank < 0 || k->nranks < 0 || (k->nranks && k->rank >= k->nranks))
		b->bad = true;
}

static void put_op(struct wbuf *b, const struct an_op *op)
{
	put32(b, op->tid);
	put8(b, op->fn);
	put64(b, op->seq);
	put64(b, op->count);
	put8(b, op->dtype);
	put8(b, op->redop);
	put32(b, op->root);
	put32(b, op->peer);
	put64(b, op->t_ns);
	put8(b, op->seq_from_attach ? AN_OPF_SEQ_FROM_ATTACH : 0);
}

static void get_op(struct rbuf *b, struct an_op *op, uint8_t ver)
{
	uint8_t flags;

	op->tid = get32(b);
	op->fn = get8(b);
	op->seq = (int64_t)get64(b);
	op->count = get64(b);
	op->dtype = get8(b);
	op->redop = get8(b);
	op->root = (int32_t)get32(b);
	op->peer = (int32_t)get32(b);
	op->t_ns = get64(b);
	flags = ver >= 3 ? get8(b) : 0;
	op->seq_from_attach = flags & AN_OPF_SEQ_FROM_ATTACH;
	if (op->fn == 0 || (flags & ~AN_OPF_SEQ_FROM_ATTACH))
		b->bad = true;
}

static void put_prog(struct wbuf *b, const struct an_progress *p)
{
	put64(b, p->seq);
	put32(b, p->channel);
	put32(b, p->peer);
	put8(b, p->dir);
	put8(b, p->step);
	put64(b, p->posted);
	put64(b, p->transmitted);
	put64(b, p->received);
	put64(b, p->done);
	put64(b, p->nsteps);
	put64(b, p->op);
	put64(b, p->nbytes);
	put8(b, p->has_args);
	put8(b, p->coll);
	put8(b, p->dtype);
	put8(b, p->redop);
}

static void get_prog(struct rbuf *b, struct an_progress *p, uint8_t ver)
{
	uint8_t dir, step, has_args = 0;

	memset(p, 0, sizeof(*p));
	p->seq = (int64_t)get64(b);
	p->channel = (int32_t)get32(b);
	p->peer = (int32_t)get32(b);
	dir = get8(b);
	step = get8(b);
	p->posted = get64(b);
	p->transmitted = get64(b);
	p->received = get64(b);
	p->done = get64(b);
	p->nsteps = get64(b);
	p->op = get64(b);
	p->nbytes = get64(b);
	if (ver >= 2) {
		has_args = get8(b);
		p->coll = get8(b);
		p->dtype = get8(b);
		p->redop = get8(b);
	}
	if (dir > AN_RECV || step > 1 || has_args > 1)
		b->bad = true;
	p->has_args = has_args;
	p->dir = dir == AN_RECV ? AN_RECV : AN_SEND;
	p->step = step;
}

/* AW_RDMA: device name (text), port, QP, source (1..4), event, states */
static int put_nic(struct wbuf *b, const struct an_nic_event *e)
{
	char dev[sizeof(e->dev) + 1];

	if (e->source < 1 || e->source > 4 || !e->dev[0])
		return -EINVAL;
	snprintf(dev, sizeof(dev), "%.*s", (int)sizeof(e->dev), e->dev);
	if (put_text(b, dev))
		return -EINVAL;
	put32(b, e->port);
	put32(b, e->qp_num);
	put8(b, e->source);
	put8(b, e->event);
	put8(b, e->old_state);
	put8(b, e->new_state);
	return 0;
}

static void get_nic(struct rbuf *b, struct an_nic_event *e)
{
	char dev[AN_LABEL_MAX];

	get_text(b, dev);
	if (strlen(dev) >= sizeof(e->dev) || !dev[0])
		b->bad = true;
	snprintf(e->dev, sizeof(e->dev), "%.*s", (int)sizeof(e->dev) - 1, dev);
	e->port = get32(b);
	e->qp_num = get32(b);
	e->source = get8(b);
	e->event = get8(b);
	e->old_state = get8(b);
	e->new_state = get8(b);
	if (e->source < 1 || e->source > 4)
		b->bad = true;
}

/*
 * AW_THREAD: pid, tid, state, main, syscall, arg0, name and wchan texts;
 * version 6: the fd's path text; version 7: the CUDA synchronize it is
 * inside and its entry; version 14: its native stack's text
 */
static int put_thread(struct wbuf *b, uint32_t pid, const struct an_thread *t)
{
	char name[sizeof(t->name) + 1], wchan[sizeof(t->wchan) + 1];
	char path[sizeof(t->path) + 1];

	snprintf(name, sizeof(name), "%.*s", (int)sizeof(t->name), t->name);
	snprintf(wchan, sizeof(wchan), "%.*s", (int)sizeof(t->wchan), t->wchan);
	snprintf(path, sizeof(path), "%.*s", (int)sizeof(t->path), t->path);
	put32(b, pid);
	put32(b, t->tid);
	put8(b, t->state);
	put8(b, t->main);
	put32(b, t->syscall);
	put64(b, t->arg0);
	if (put_text(b, name) || put_text(b, wchan) || put_text(b, path))
		return -EINVAL;
	put8(b, t->cuda_sync);
	put64(b, t->cuda_since);
	put8(b, t->cuda_stack);
	return put_text_n(b, t->stack, AN_STACK_MAX, 1);
}

static void get_thread(struct rbuf *b, uint32_t *pid, struct an_thread *t, uint8_t ver)
{
	char txt[AN_LABEL_MAX];
	uint8_t main;

	memset(t, 0, sizeof(*t));
	*pid = get32(b);
	t->tid = get32(b);
	t->state = (char)get8(b);
	main = get8(b);
	t->syscall = (int32_t)get32(b);
	t->arg0 = get64(b);
	get_text(b, txt);
	if (strlen(txt) >= sizeof(t->name))
		b->bad = true;
	snprintf(t->name, sizeof(t->name), "%.*s", (int)sizeof(t->name) - 1, txt);
	get_text(b, txt);
	if (strlen(txt) >= sizeof(t->wchan))
		b->bad = true;
	snprintf(t->wchan, sizeof(t->wchan), "%.*s", (int)sizeof(t->wchan) - 1, txt);
	if (ver >= 6) {
		get_text(b, txt);
		if (strlen(txt) >= sizeof(t->path))
			b->bad = true;
		snprintf(t->path, sizeof(t->path), "%.*s", (int)sizeof(t->path) - 1, txt);
	}
	if (ver >= 7) {
		t->cuda_sync = get8(b);
		t->cuda_since = get64(b);
		if (t->cuda_sync && t->cuda_sync != CCLD_FN_CUDA_STREAM_SYNC &&
		    t->cuda_sync != CCLD_FN_CUDA_EVENT_SYNC)
			b->bad = true;
	}
	if (ver >= 8) {
		t->cuda_stack = get8(b);
		if (t->cuda_stack > 1 || (t->cuda_stack && !t->cuda_sync))
			b->bad = true;
	}
	if (ver >= 14)
		get_text_n(b, t->stack, AN_STACK_MAX, 1);
	if (main > 1 || t->syscall < -2 ||
	    !((t->state >= 'A' && t->state <= 'Z') || (t->state >= 'a' && t->state <= 'z')))
		b->bad = true;
	t->main = main;
}

/*
 * AW_LAUNCHED: ncoll, flags (1 coll_ops known, 2 dead, 4 hosts known, 8 one
 * host), coll_ops, nfn, per_fn
 */
static int put_launch(struct wbuf *b, const struct an_launch *l)
{
	uint32_t i;

	if (l->nfn > AN_SEQ_FNS || l->ncoll < -1)
		return -EINVAL;
	put64(b, l->ncoll);
	put8(b, (l->has_coll_ops ? 1 : 0) | (l->dead ? 2 : 0) | (l->hosts_known ? 4 : 0) |
		(l->intra_node ? 8 : 0));
	put64(b, l->coll_ops);
	put8(b, l->nfn);
	for (i = 0; i < l->nfn; i++)
		put64(b, l->per_fn[i]);
	return 0;
}

static void get_launch(struct rbuf *b, struct an_launch *l, uint8_t ver)
{
	uint8_t flags;
	uint32_t i;

	memset(l, 0, sizeof(*l));
	l->ncoll = (int64_t)get64(b);
	flags = get8(b);
	l->coll_ops = get64(b);
	l->nfn = get8(b);
	if (flags > (ver >= 4 ? 15 : 3) || l->nfn > AN_SEQ_FNS || l->ncoll < -1) {
		b->bad = true;
		l->nfn = 0;
	}
	l->has_coll_ops = flags & 1;
	l->dead = flags & 2;
	l->hosts_known = flags & 4;
	l->intra_node = flags & 8;
	for (i = 0; i < l->nfn; i++)
		l->per_fn[i] = get64(b);
}

int an_wire_encode(const struct an_wire *w, uint8_t *buf, size_t len)
{
	struct wbuf b = { .p = buf, .len = len };
	uint32_t i;

	put8(&b, AN_WIRE_VERSION);
	put8(&b, w->type);
	put64(&b, w->t_ns);
	switch (w->type) {
	case AW_CLOCK:
		put64(&b, w->realtime_offset_ns);
		break;
	case AW_RANK:
		put_key(&b, &w->k);
		put64(&b, w->parent);
		put32(&b, (uint32_t)w->color);
		if (put_text(&b, w->comm_name))
			return -EINVAL;
		break;
	case AW_RANK_GONE:
		put_key(&b, &w->k);
		break;
	case AW_ENTER:
	case AW_RETURN:
	case AW_OP_DONE:
		put_key(&b, &w->k);
		put_op(&b, &w->op);
		if (w->type == AW_RETURN)
			put64(&b, w->ret);
		break;
	case AW_COMPLETE_UPTO:
		put_key(&b, &w->k);
		put64(&b, w->upto);
		break;
	case AW_PROGRESS:
	case AW_SNAPSHOT:
		if (w->nsubs > AN_WIRE_MAX_SUBS || (w->type == AW_PROGRESS && w->nsubs != 1))
			return -EINVAL;
		put_key(&b, &w->k);
		put(&b, w->nsubs, 2);
		for (i = 0; i < w->nsubs; i++)
			put_prog(&b, &w->subs[i]);
		break;
	case AW_PROC:
		put32(&b, w->k.pid);
		put8(&b, w->proc_state);
		put32(&b, w->exit_status);
		break;
	case AW_LABEL:
		if (w->label_kind < AN_LABEL_POD || w->label_kind > AN_LABEL_MAX_KIND)
			return -EINVAL;
		put32(&b, w->k.pid);
		put8(&b, w->label_kind);
		if (put_text(&b, w->label))
			return -EINVAL;
		break;
	case AW_XID:
		if (!w->xid)
			return -EINVAL;
		put32(&b, w->k.pid);
		put64(&b, w->bus_id);
		put32(&b, w->xid);
		if (put_text(&b, w->label))
			return -EINVAL;
		break;
	case AW_TCP:
		if (w->tcp_kind < AN_TCP_RETRANSMIT || w->tcp_kind > AN_TCP_STATE)
			return -EINVAL;
		put32(&b, w->k.pid);
		put32(&b, w->peer_pid);
		put8(&b, w->tcp_kind);
		put8(&b, w->tcp_old);
		put8(&b, w->tcp_new);
		if (put_text(&b, w->label))
			return -EINVAL;
		break;
	case AW_RDMA:
		if (put_nic(&b, &w->nic))
			return -EINVAL;
		put32(&b, w->k.pid);
		break;
	case AW_LAUNCHED:
		put_key(&b, &w->k);
		if (put_launch(&b, &w->launch))
			return -EINVAL;
		break;
	case AW_THREAD:
		if (put_thread(&b, w->k.pid, &w->thread))
			return -EINVAL;
		break;
	case AW_LOST:
		put32(&b, w->k.pid);
		put64(&b, w->lost);
		break;
	case AW_SETUP:
		if (w->setup.kind != AN_SETUP_INIT && w->setup.kind != AN_SETUP_TEARDOWN &&
		    w->setup.kind != AN_SETUP_SPLIT)
			return -EINVAL;
		put32(&b, w->setup.pid);
		put64(&b, w->setup.group);
		put8(&b, w->setup.kind);
		put8(&b, (uint8_t)w->setup.fn);
		put32(&b, (uint32_t)w->setup.nranks);
		put32(&b, (uint32_t)w->setup.rank);
		put8(&b, (uint8_t)(w->setup.returned | w->setup.before << 1));
		put64(&b, (uint64_t)w->setup.ret);
		if (put_text(&b, w->setup.name))
			return -EINVAL;
		put64(&b, w->setup.comm);
		break;
	case AW_ENDPOINT:
		put32(&b, w->k.pid);
		if (strnlen(w->label, sizeof(w->label)) >= 46 || put_text(&b, w->label))
			return -EINVAL;
		put(&b, w->port, 2);
		put8(&b, w->gone);
		break;
	case AW_SCHED:
		put32(&b, w->k.pid);
		put32(&b, w->sched.tid);
		put64(&b, w->sched.cpu_ns);
		put64(&b, w->sched.run_delay_ns);
		break;
	case AW_NCCL_WARN:
		put32(&b, w->k.pid);
		put32(&b, w->warn_line);
		if (put_text(&b, w->label) || put_long_text(&b, w->warn_msg))
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	return b.bad ? -EINVAL : (int)b.off;
}

int an_wire_decode(const uint8_t *buf, size_t len, struct an_wire *w,
		   char *err, size_t errlen)
{
	struct rbuf b = { .p = buf, .len = len };
	uint8_t ver, type, st;
	uint32_t i;

	memset(w, 0, offsetof(struct an_wire, subs));
	ver = get8(&b);
	type = get8(&b);
	w->t_ns = get64(&b);
	if (b.bad) {
		snprintf(err, errlen, "record of %zu bytes: too short", len);
		return -EINVAL;
	}
	if (ver < 1 || ver > AN_WIRE_VERSION || (ver < 2 && type >= AW_LAUNCHED) ||
	    (ver < 3 && type >= AW_OP_DONE) || (ver < 5 && type >= AW_LOST) ||
	    (ver < 9 && type >= AW_NCCL_WARN) || (ver < 10 && type >= AW_ENDPOINT) ||
	    (ver < 12 && type >= AW_SCHED)) {
		snprintf(err, errlen, "record version %u, this analyzer reads 1 to %u", ver,
			 AN_WIRE_VERSION);
		return -EINVAL;
	}
	w->type = (enum an_wire_type)type;
	switch (type) {
	case AW_CLOCK:
		w->realtime_offset_ns = (int64_t)get64(&b);
		break;
	case AW_RANK:
		get_key(&b, &w->k);
		w->parent = get64(&b);
		w->color = -1;
		if (ver >= 10) {
			w->color = (int32_t)get32(&b);
			get_text(&b, w->comm_name);
		}
		break;
	case AW_RANK_GONE:
		get_key(&b, &w->k);
		break;
	case AW_ENTER:
	case AW_RETURN:
	case AW_OP_DONE:
		get_key(&b, &w->k);
		get_op(&b, &w->op, ver);
		w->op.k = w->k;
		if (type == AW_RETURN)
			w->ret = (int64_t)get64(&b);
		break;
	case AW_COMPLETE_UPTO:
		get_key(&b, &w->k);
		w->upto = (int64_t)get64(&b);
		break;
	case AW_PROGRESS:
	case AW_SNAPSHOT:
		get_key(&b, &w->k);
		w->nsubs = (uint32_t)get(&b, 2);
		if (w->nsubs > AN_WIRE_MAX_SUBS || (type == AW_PROGRESS && w->nsubs != 1)) {
			snprintf(err, errlen, "%u proxy subs in a %s record", w->nsubs,
				 type == AW_PROGRESS ? "progress" : "snapshot");
			return -EINVAL;
		}
		for (i = 0; i < w->nsubs && !b.bad; i++)
			get_prog(&b, &w->subs[i], ver);
		break;
	case AW_PROC:
		w->k.pid = get32(&b);
		st = get8(&b);
		w->exit_status = (int32_t)get32(&b);
		if (st > AN_PROC_EXITED)
			b.bad = true;
		w->proc_state = (enum an_proc_state)st;
		break;
	case AW_LABEL:
		w->k.pid = get32(&b);
		st = get8(&b);
		/* the ranks came with version 6, the NCCL library and settings with 9 */
		if (st < AN_LABEL_POD || st > (ver < 6 ? AN_LABEL_CONTAINER :
					       ver < 9 ? AN_LABEL_LOCAL_RANK : AN_LABEL_MAX_KIND))
			b.bad = true;
		w->label_kind = (enum an_label)st;
		get_text(&b, w->label);
		break;
	case AW_XID:
		w->k.pid = get32(&b);
		w->bus_id = get64(&b);
		w->xid = get32(&b);
		if (!w->xid)
			b.bad = true;
		get_text(&b, w->label);
		break;
	case AW_TCP:
		w->k.pid = get32(&b);
		w->peer_pid = get32(&b);
		st = get8(&b);
		if (st < AN_TCP_RETRANSMIT || st > AN_TCP_STATE)
			b.bad = true;
		w->tcp_kind = (enum an_tcp_kind)st;
		w->tcp_old = get8(&b);
		w->tcp_new = get8(&b);
		get_text(&b, w->label);
		break;
	case AW_RDMA:
		get_nic(&b, &w->nic);
		w->k.pid = get32(&b);
		break;
	case AW_LAUNCHED:
		get_key(&b, &w->k);
		get_launch(&b, &w->launch, ver);
		break;
	case AW_THREAD:
		get_thread(&b, &w->k.pid, &w->thread, ver);
		break;
	case AW_LOST:
		w->k.pid = get32(&b);
		w->lost = get64(&b);
		break;
	case AW_SETUP:
		w->setup.pid = get32(&b);
		w->setup.group = get64(&b);
		st = get8(&b);
		if (st != AN_SETUP_INIT && st != AN_SETUP_TEARDOWN &&
		    (st != AN_SETUP_SPLIT || ver < 11))
			b.bad = true;
		w->setup.kind = (enum an_setup_kind)st;
		w->setup.fn = get8(&b);
		w->setup.nranks = (int32_t)get32(&b);
		w->setup.rank = (int32_t)get32(&b);
		st = get8(&b);
		if (st > (ver >= 13 ? 3 : 1))
			b.bad = true;
		w->setup.returned = st & 1;
		w->setup.before = st >> 1 & 1;
		w->setup.ret = (int64_t)get64(&b);
		if (ver >= 10)
			get_text(&b, w->setup.name);
		if (ver >= 11)
			w->setup.comm = get64(&b);
		break;
	case AW_ENDPOINT:
		w->k.pid = get32(&b);
		get_text(&b, w->label);
		if (strlen(w->label) >= 46)
			b.bad = true;
		w->port = (uint16_t)get(&b, 2);
		st = get8(&b);
		if (st > 1)
			b.bad = true;
		w->gone = st;
		break;
	case AW_SCHED:
		w->k.pid = get32(&b);
		w->sched.tid = get32(&b);
		w->sched.cpu_ns = get64(&b);
		w->sched.run_delay_ns = get64(&b);
		break;
	case AW_NCCL_WARN:
		w->k.pid = get32(&b);
		w->warn_line = get32(&b);
		get_text(&b, w->label);
		get_long_text(&b, w->warn_msg);
		break;
	default:
		snprintf(err, errlen, "unknown record type %u", type);
		return -EINVAL;
	}
	if (b.bad) {
		snprintf(err, errlen, "record type %u of %zu bytes: truncated or a value"
			 " out of range", type, len);
		return -EINVAL;
	}
	if (b.off != len) {
		snprintf(err, errlen, "record type %u: %zu bytes left over", type,
			 len - b.off);
		return -EINVAL;
	}
	return 0;
}

void an_wire_apply(struct an *an, uint32_t host, const struct an_wire *w)
{
	struct an_key k = w->k;
	struct an_op op = w->op;

	k.host = host;
	op.k = k;
	switch (w->type) {
	case AW_CLOCK:
		an_clock(an, host, w->t_ns);
		break;
	case AW_RANK:
		if (!an_rank(an, &k, w->parent, w->t_ns))
			an_comm_origin(an, k.comm, w->parent ? w->color : -1, w->comm_name);
		break;
	case AW_RANK_GONE:
		an_rank_gone(an, &k, w->t_ns);
		break;
	case AW_ENTER:
		an_op_enter(an, &op);
		break;
	case AW_RETURN:
		an_op_return(an, &op, w->ret, w->t_ns);
		break;
	case AW_COMPLETE_UPTO:
		an_complete_upto(an, &k, w->upto, w->t_ns);
		break;
	case AW_OP_DONE:
		an_op_complete(an, &op, w->t_ns);
		break;
	case AW_PROGRESS:
		an_progress(an, &k, &w->subs[0], w->t_ns);
		break;
	case AW_SNAPSHOT:
		an_snapshot(an, &k, w->subs, w->nsubs, w->t_ns);
		break;
	case AW_PROC:
		an_proc_state(an, host, w->k.pid, w->proc_state, w->exit_status, w->t_ns);
		break;
	case AW_LABEL:
		an_proc_label(an, host, w->k.pid, w->label_kind, w->label);
		break;
	case AW_XID:
		an_gpu_error(an, host, w->k.pid, w->bus_id, w->xid, w->label, w->t_ns);
		break;
	case AW_TCP:
		an_tcp_event(an, host, w->k.pid, w->peer_pid, w->tcp_kind, w->tcp_old, w->tcp_new,
			     w->label, w->t_ns);
		break;
	case AW_RDMA:
		an_nic_error(an, host, w->k.pid, &w->nic, w->t_ns);
		break;
	case AW_LAUNCHED:
		an_launched(an, &k, &w->launch, w->t_ns);
		break;
	case AW_THREAD:
		an_thread_state(an, host, w->k.pid, &w->thread, w->t_ns);
		break;
	case AW_LOST:
		if (w->k.pid)
			an_records_lost(an, host, w->k.pid, w->lost, w->t_ns);
		else
			an_steps_shed(an, host, w->lost, w->t_ns);
		break;
	case AW_NCCL_WARN:
		an_nccl_warning(an, host, w->k.pid, w->label, w->warn_line, w->warn_msg, w->t_ns);
		break;
	case AW_SETUP:
		an_setup_call(an, host, &w->setup, w->t_ns);
		break;
	case AW_ENDPOINT:
		an_endpoint(an, host, w->k.pid, w->label, w->port, w->gone);
		break;
	case AW_SCHED:
		an_sched(an, host, w->k.pid, &w->sched, w->t_ns);
		break;
	case AW_TYPE_MAX:
		break;
	}
}
