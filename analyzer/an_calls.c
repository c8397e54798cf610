// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Inputs of tier A and B: a comm rank appeared or was destroyed, calls
 * entered and returned (collective: the rank's signature history by seq;
 * p2p: per peer and direction), and the GPU's completions, which end the
 * rounds' durations for slow diagnosis.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "an_core_int.h"
#include <linux/types.h>
#include "ccld.h"

int an_rank(struct an *an, const struct an_key *k, uint64_t parent,
	    uint64_t t_ns)
{
	struct an_rank *r;
	struct an_comm *c;

	an->stats.records++;
	r = an_rank_get(an, k, true, t_ns);
	if (!r)
		return k->nranks <= 0 ? -EINVAL : -ENOMEM;
	c = an_comm_get(an, k->comm, 0, false);
	if (parent)
		c->parent = parent;
	r->gone = 0;
	r->last_ns = t_ns;
	an_fresh(r, t_ns);
	an_comm_progress(an, c, k->host, t_ns);
	return 0;
}

void an_comm_origin(struct an *an, uint64_t hash, int32_t color, const char *name)
{
	struct an_comm *c = an_comm_get(an, hash, 0, false);

	if (!c)
		return;
	if (color >= 0)
		c->color = color;
	if (name && name[0])
		an_label_copy(c->name, sizeof(c->name), name, AN_LABEL_MAX);
}

void an_label_copy(char *to, size_t size, const char *from, size_t from_max)
{
	size_t i;

	if (!size)
		return;
	for (i = 0; i + 1 < size && i < from_max && from[i]; i++) {
		unsigned char b = (unsigned char)from[i];

		to[i] = b < 0x20 || b == '"' || b == 0x7f ? '?' : (char)b;
	}
	to[i] = 0;
}

void an_rank_gone(struct an *an, const struct an_key *k, uint64_t t_ns)
{
	struct an_rank *r;

	an->stats.records++;
	r = an_rank_get(an, k, false, t_ns);
	if (!r)
		return;
	r->gone = 1;
	r->in_call = 0;
	an_comm_progress(an, an_comm_get(an, k->comm, 0, false), k->host, t_ns);
}

static struct an_p2p *p2p_get(struct an *an, struct an_rank *r, int32_t peer)
{
	struct an_p2p *p = an_p2p_find(r, peer);

	if (p)
		return p;
	p = an_grow(an, r->p2p, &r->cap_p2p, r->np2p + 1, sizeof(*p));
	if (!p)
		return NULL;
	r->p2p = p;
	p = &r->p2p[r->np2p++];
	memset(p, 0, sizeof(*p));
	p->peer = peer;
	p->last[0].seq = p->last[1].seq = -1;
	return p;
}

static void sig_of(struct an_sig *s, const struct an_op *op)
{
	s->seq = op->seq;
	s->t_enter = op->t_ns;
	s->count = op->count;
	s->root = op->root;
	s->fn = (uint8_t)op->fn;
	s->dtype = op->dtype;
	s->redop = op->redop;
	s->flags = 0;
}

static bool op_ok(const struct an_op *op)
{
	return op->seq >= 0 && (ccld_fn_is_coll(op->fn) ||
				(ccld_fn_is_p2p(op->fn) && op->peer >= 0));
}

/* rank R's collective before SEQ was known done by T_NS (tier B or C) */
static bool prior_done(const struct an_rank *r, int64_t seq, uint64_t t_ns)
{
	const struct an_op_done *d = &r->op_done[(uint64_t)(seq - 1) % AN_HIST];

	return seq == 0 || r->completed >= seq - 1 ||
	       (d->seq == seq - 1 && d->t <= t_ns);
}

void an_op_enter(struct an *an, const struct an_op *op)
{
	struct an_proc *p;
	struct an_rank *r;
	struct an_comm *c;
	bool after, known;

	an->stats.records++;
	if (!op_ok(op) || !(r = an_rank_get(an, &op->k, true, op->t_ns))) {
		an->stats.rejected += !op_ok(op);
		return;
	}
	c = an_comm_get(an, op->k.comm, 0, false);
	p = r->proc ? &an->procs[r->proc - 1] : NULL;
	/* without the call order: known, never an opener (alike ops, alike signatures) */
	known = !an->cfg.call_order || (p && p->last_call_comm);
	after = an->cfg.call_order && p && p->last_call_comm &&
		p->last_call_comm != op->k.comm;
	if (p && p->last_call_comm != op->k.comm) {
		p->sw[p->nsw % AN_SWITCH_RING] = (struct an_switch){ op->k.comm, op->t_ns,
								     op->k.rank };
		p->nsw++;
	}
	if (p)
		p->last_call_comm = op->k.comm;
	r->gone = 0;
	r->last_ns = op->t_ns;
	an_fresh(r, op->t_ns);
	r->mem_only = 0;
	r->mem_open = 0;	/* it moves: the look at its proxy is old */
	if (ccld_fn_is_p2p(op->fn)) {
		int d = op->fn == CCLD_FN_RECV;
		struct an_p2p *p = p2p_get(an, r, op->peer);

		if (!p)
			return;
		if (op->seq + 1 > p->n[d])
			p->n[d] = op->seq + 1;
		p->from_attach[d] = op->seq_from_attach;
		sig_of(&p->last[d], op);
		p->t_enter[d] = op->t_ns;
		p->t_hist[d][(uint64_t)op->seq % AN_P2P_HIST] = op->t_ns;
	} else {
		r->seq_from_attach = op->seq_from_attach;
		sig_of(&r->hist[op->seq % AN_HIST], op);
		if (prior_done(r, op->seq, op->t_ns))
			r->hist[op->seq % AN_HIST].flags |= SIG_IDLE;
		if (after)
			r->hist[op->seq % AN_HIST].flags |= SIG_AFTER;
		if (known)
			r->hist[op->seq % AN_HIST].flags |= SIG_AFTER_KNOWN;
		if (op->seq > r->entered)
			r->entered = op->seq;
		r->in_call = 1;
		r->call_seq = op->seq;
		r->call_ns = op->t_ns;
		/* counters of an older op no longer describe the one in flight */
		if (r->nsubs && r->subs[0].seq >= 0 && r->subs[0].seq < op->seq)
			r->nsubs = 0;
	}
	an_comm_progress(an, c, op->k.host, op->t_ns);
}

void an_op_return(struct an *an, const struct an_op *op, int64_t ret,
		  uint64_t t_ns)
{
	struct an_rank *r;

	an->stats.records++;
	if (!op_ok(op) || !(r = an_rank_get(an, &op->k, false, t_ns)))
		return;
	r->last_ns = t_ns;
	if (ccld_fn_is_p2p(op->fn)) {
		int d = op->fn == CCLD_FN_RECV;
		struct an_p2p *p = p2p_get(an, r, op->peer);

		if (!p)
			return;
		if (op->seq + 1 > p->nret[d])
			p->nret[d] = op->seq + 1;
		if (p->last[d].seq == op->seq)
			p->last[d].flags |= SIG_RET;
	} else {
		struct an_sig *s = &r->hist[op->seq % AN_HIST];

		if (s->seq == op->seq)
			s->flags |= SIG_RET;
		if (op->seq > r->returned)
			r->returned = op->seq;
		if (r->call_seq == op->seq)
			r->in_call = 0;
	}
	(void)ret;
	an_comm_progress(an, an_comm_get(an, op->k.comm, 0, false), op->k.host, t_ns);
}

/*
 * When the GPU finished round SG on rank R: tier B completes a whole step at
 * once (one event per step), so the proxy's own end of the round's op where
 * its id maps to the seq (op_done), else where the rank's proxy went idle after an op
 * launched at or after SG's entry (tier C), every op of this comm up to SG
 * was done by then (stream order): that is the round's own end, not the
 * step's (*EXACT).  Else the tier B time T_NS, a bound (*EXACT false).
 */
static uint64_t op_done_at(const struct an_rank *r, const struct an_sig *sg,
			   uint64_t t_ns, bool *exact)
{
	const struct an_op_done *d = &r->op_done[(uint64_t)sg->seq % AN_HIST];

	*exact = true;
	if (d->seq == sg->seq && d->t >= sg->t_enter && d->t <= t_ns)
		return d->t;
	if (r->tierc && r->idle_tf >= sg->t_enter && r->idle_t >= sg->t_enter &&
	    r->idle_t <= t_ns)
		return r->idle_t;
	*exact = false;
	return t_ns;
}

static void complete_coll(struct an *an, struct an_comm *c, struct an_rank *r,
			  int64_t upto, uint32_t host, uint64_t t_ns)
{
	int64_t s;

	r->tierb = 1;
	r->last_ns = t_ns;
	r->mem_open = 0;
	/* each round newly completed: its duration on this rank (slow) */
	for (s = upto - AN_HIST + 1 > r->completed + 1 ? upto - AN_HIST + 1 :
	     r->completed + 1; c && s <= upto; s++)
		if (r->hist[s % AN_HIST].seq == s) {
			bool exact;
			uint64_t end = op_done_at(r, &r->hist[s % AN_HIST], t_ns, &exact);

			an_slow_duration(an, c, (int32_t)(r - c->r),
					 &r->hist[s % AN_HIST], end, exact, host);
		}
	/* a tier B completion of all it entered: its stream idle from here */
	if (upto >= r->entered && upto > r->completed)
		an_note_done(an, c ? c->hash : 0, r, t_ns);
	if (upto > r->completed)
		r->completed = upto;
	if (r->nsubs && r->subs[0].seq >= 0 && r->subs[0].seq <= upto)
		r->nsubs = 0;
	an_comm_progress(an, c, host, t_ns);
}

void an_op_complete(struct an *an, const struct an_op *op, uint64_t t_ns)
{
	struct an_comm *c;
	struct an_rank *r;

	an->stats.records++;
	if (!op_ok(op) || !(r = an_rank_get(an, &op->k, false, t_ns)))
		return;
	c = an_comm_get(an, op->k.comm, 0, false);
	if (ccld_fn_is_p2p(op->fn)) {
		int d = op->fn == CCLD_FN_RECV;
		struct an_p2p *p = p2p_get(an, r, op->peer);

		if (!p)
			return;
		r->tierb = 1;
		if (op->seq + 1 > p->ndone[d])
			p->ndone[d] = op->seq + 1;
		an_comm_progress(an, c, op->k.host, t_ns);
		return;
	}
	/* completion is in stream order: this op done means all before it */
	if (r->hist[op->seq % AN_HIST].seq == op->seq)
		r->hist[op->seq % AN_HIST].flags |= SIG_DONE;
	complete_coll(an, c, r, op->seq, op->k.host, t_ns);
}

void an_complete_upto(struct an *an, const struct an_key *k, int64_t upto,
		      uint64_t t_ns)
{
	struct an_rank *r;

	an->stats.records++;
	if (upto < 0 || !(r = an_rank_get(an, k, false, t_ns)))
		return;
	complete_coll(an, an_comm_get(an, k->comm, 0, false), r, upto,
		      k->host, t_ns);
}
