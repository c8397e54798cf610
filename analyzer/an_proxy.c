// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Inputs of tier C and E: proxy counters (step or op level), snapshots of
 * the active proxy ops and the launch counts read from NCCL's memory; and
 * the process's stream bookkeeping they feed: when its ops were done, for
 * the GPU-side start of its later ones (an_gpu_start).
 */
#include <stdlib.h>
#include <string.h>
#include "an_core_int.h"

static bool same_sub(const struct an_progress *a, const struct an_progress *b)
{
	return a->channel == b->channel && a->peer == b->peer &&
	       a->dir == b->dir && a->op == b->op;
}

static bool sub_finished(const struct an_progress *p)
{
	return p->nsteps && p->done >= p->nsteps;
}

/* when OP was first seen on rank R (another sub of it), else T_NS */
static uint64_t first_seen(const struct an_progress *subs, uint32_t n,
			   uint64_t op, uint64_t t_ns)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (subs[i].op == op)
			return subs[i].t_first;
	return t_ns;
}

/* OP was first seen in a look at memory (an earlier snapshot) */
static bool seen_in_memory(const struct an_progress *subs, uint32_t n, uint64_t op)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (subs[i].op == op)
			return subs[i].from_mem;
	return false;
}

/*
 * The comm rank's proxy finished everything up to its latest call: remember
 * when, with that call's entry (its launch), for the GPU-side start of the
 * process's later ops (an_gpu_start).
 */
void an_note_done(struct an *an, uint64_t comm, const struct an_rank *r, uint64_t t_ns)
{
	struct an_proc *p = r->proc ? &an->procs[r->proc - 1] : NULL;
	const struct an_sig *sg;
	struct an_done *d;
	uint64_t launch = 0;
	uint32_t i;
	int dir;

	if (!p)
		return;
	if (r->entered >= 0) {
		sg = &r->hist[(uint64_t)r->entered % AN_HIST];
		if (sg->seq == r->entered)
			launch = sg->t_enter;
	}
	/* p2p: the latest send or receive entered */
	for (i = 0; i < r->np2p; i++)
		for (dir = 0; dir < 2; dir++)
			if (r->p2p[i].n[dir] && r->p2p[i].t_enter[dir] > launch)
				launch = r->p2p[i].t_enter[dir];
	if (!launch)
		return;
	d = &p->done[p->ndone++ % AN_DONE_RING];
	d->comm = comm;
	d->t_launch = launch;
	d->t_done = t_ns;
}

/*
 * When the GPU of the process could start round SG of COMM: not before the
 * call, and not before its ops launched earlier were done, in this comm or
 * another (one stream, in launch order: a CPU that queued its whole step
 * ahead of its GPU called long before the GPU got there).  CCL-D's GPU-side
 * start, from op-level proxy records: a rank whose GPU was held elsewhere
 * arrives late here.  *IDLE_SINCE: where the start is the call, since when
 * its earlier ops were known done (0 unknown).
 */
uint64_t an_gpu_start(const struct an *an, uint64_t comm, const struct an_rank *r,
		      const struct an_sig *sg, uint64_t t_done, uint64_t *holder,
		      uint64_t *idle_since, uint64_t *idle_comm)
{
	const struct an_proc *p = an_proc_of(an, r);
	uint64_t t = sg->t_enter, hold_t = 0;
	uint32_t i, n;

	*holder = *idle_since = *idle_comm = 0;
	if (!p)
		return t;
	n = p->ndone < AN_DONE_RING ? p->ndone : AN_DONE_RING;
	for (i = 0; i < n; i++) {
		const struct an_done *d = &p->done[i];

		if (d->t_launch >= sg->t_enter)
			continue;
		if (d->t_done > sg->t_enter && d->t_done <= t_done && d->comm != comm &&
		    d->t_done > hold_t) {
			/* the latest op of another comm that held it (before its
			 * earlier ops of this comm, if one of those ended later) */
			hold_t = d->t_done;
			*holder = d->comm;
		}
		if (d->t_done > t && d->t_done <= t_done) {
			t = d->t_done;
		} else if (d->t_done <= sg->t_enter && d->t_done > *idle_since) {
			*idle_since = d->t_done;
			*idle_comm = d->comm;
		}
	}
	return t;
}

static bool open_subs(const struct an_rank *r)
{
	uint32_t i;

	for (i = 0; i < r->nsubs; i++)
		if (!sub_finished(&r->subs[i]))
			return true;
	return false;
}

/*
 * A send sub of R finished: the op's send rate so far, from the op's first
 * sighting to this completion (bytes of every finished send sub of it).
 */
static void send_done(struct an_rank *r, const struct an_progress *p,
		      uint64_t t_first, uint64_t t_ns)
{
	if (r->rate_op != p->op) {
		r->rate_op = p->op;
		r->rate_bytes = 0;
		r->rate_t0 = t_first;
	}
	r->rate_bytes += p->nbytes;
	r->rate_t1 = t_ns;
	if (r->rate_t1 > r->rate_t0)
		r->send_rate = (double)r->rate_bytes * 1e9 /
			       (double)(r->rate_t1 - r->rate_t0);
}

static bool sent_empty(const struct an_sent *s)
{
	uint32_t i;

	for (i = 0; i < AN_SENT_RING; i++)
		if (s->t[i])
			return false;
	return true;
}

/*
 * R's transmit stamps of P's send sub (channel, peer, op): an entry whose
 * steps are all done is reused, so there are as many as subs in flight
 * (AN_SENT_MAX at most: then the oldest op's); NULL on no memory
 */
static struct an_sent *sent_of(struct an *an, struct an_rank *r, const struct an_progress *p)
{
	struct an_sent *s;
	uint32_t i, free_i = UINT32_MAX, old_i = 0;

	for (i = 0; i < r->nsent; i++) {
		s = &r->sent[i];
		if (s->channel == p->channel && s->peer == p->peer && s->op == p->op)
			return s;
		if (free_i == UINT32_MAX && sent_empty(s))
			free_i = i;
		if (s->op < r->sent[old_i].op)
			old_i = i;
	}
	if (free_i == UINT32_MAX && r->nsent < AN_SENT_MAX) {
		s = an_grow(an, r->sent, &r->cap_sent, r->nsent + 1, sizeof(*s));
		if (!s)
			return NULL;
		r->sent = s;
		free_i = r->nsent++;
	}
	s = &r->sent[free_i == UINT32_MAX ? old_i : free_i];
	memset(s, 0, sizeof(*s));
	s->channel = p->channel;
	s->peer = p->peer;
	s->op = p->op;
	return s;
}

/*
 * Two step-level records of one send sub: the steps transmitted and not yet
 * done were in the network in between.  The integral of that count over
 * time is the sum of the steps' network times (each step's done minus its
 * transmitted), whatever the pipelining; a slow link shows as a longer time
 * per step, while a sender waiting for its GPU or for credits does not.
 * Each completion also gives its steps' own times, from when each was seen
 * transmitted (stamped per send sub, sent_of): the typical step.  The
 * integral since the previous completion would not do: in a pipelined
 * flow the first completion of an op carries every step's wait and the
 * next ones almost none (random jobs 16 and 25: a 6x slower link's
 * typical step 0.32 ms against 0.20, its mean step 11.7 ms against 2.5).
 */
static void net_time(struct an *an, struct an_rank *r, const struct an_progress *o,
		     const struct an_progress *n, uint64_t t_ns)
{
	struct an_sent *st;
	double sum = 0;
	uint32_t timed = 0;
	uint64_t k, end;

	if (n->op != o->op || t_ns < o->t_last || !(st = sent_of(an, r, n)))
		return;
	if (o->transmitted > o->done)
		r->net_ns += (double)(o->transmitted - o->done) * (double)(t_ns - o->t_last);
	if (n->done > o->done && n->done <= n->nsteps && n->nsteps) {
		r->net_steps += n->done - o->done;
		r->net_bytes += (double)(n->done - o->done) * (double)n->nbytes /
				(double)n->nsteps;
		/*
		 * Only the last AN_SENT_RING steps can have a stamp: a step
		 * count from a bad record (or a jump) must not make this loop
		 * run 2^64 times (fuzz_an_wire: 4 s on one record).
		 */
		end = n->done < o->transmitted ? n->done : o->transmitted;
		k = end > o->done && end - o->done > AN_SENT_RING ? end - AN_SENT_RING : o->done;
		for (; k < end; k++) {
			uint64_t *sent = &st->t[k % AN_SENT_RING];

			if (*sent && *sent <= t_ns) {
				sum += (double)(t_ns - *sent);
				timed++;
			}
			*sent = 0;
		}
		if (timed)
			r->net_est[r->net_nest++ % AN_NET_EST] = (float)(sum / timed);
	}
	/* steps seen transmitted now (those done at once as well: unknown) */
	for (k = o->transmitted; k < n->transmitted && k - o->transmitted < AN_SENT_RING; k++)
		st->t[k % AN_SENT_RING] = k < n->done ? 0 : t_ns;
}

/*
 * Every sub of collective proxy op OP finished on rank R: its round's end
 * on that rank (op_done_at), and a completion of the process's stream for
 * the GPU-side start of its later ops (an_gpu_start).  Under run-ahead the
 * proxy holds the later ops of the step already and is never idle between
 * them: this is the only per-op end there is without step hooks.
 */
static void note_op_done(struct an *an, uint64_t comm, struct an_rank *r, uint64_t op,
			 uint64_t t_ns)
{
	struct an_proc *p = r->proc ? &an->procs[r->proc - 1] : NULL;
	const struct an_sig *sg;
	struct an_done *d;
	int64_t seq;
	uint32_t i;

	for (i = 0; i < r->nsubs; i++)
		if (r->subs[i].op == op && !sub_finished(&r->subs[i]))
			return;
	if (!an_coll_op(op)) {
		/*
		 * a p2p op: no seq, but its end holds the stream as well; it
		 * went to the proxy at its launch, after its calls
		 */
		uint64_t tf = first_seen(r->subs, r->nsubs, op, t_ns), launch = 0;
		int dir;

		/* its launch: the latest p2p call of the rank before the proxy saw it */
		for (i = 0; i < r->np2p; i++)
			for (dir = 0; dir < 2; dir++)
				if (r->p2p[i].n[dir] && r->p2p[i].t_enter[dir] <= tf &&
				    r->p2p[i].t_enter[dir] > launch)
					launch = r->p2p[i].t_enter[dir];
		if (p && launch && op != r->p2p_done_op) {
			r->p2p_done_op = op;
			d = &p->done[p->ndone++ % AN_DONE_RING];
			d->comm = comm;
			d->t_launch = launch;
			d->t_done = t_ns;
		}
		return;
	}
	if (r->op_off_ok != 1)
		return;
	seq = an_op_seq(r, op);
	sg = &r->hist[(uint64_t)seq % AN_HIST];
	if (seq < 0 || sg->seq != seq || !sg->t_enter || t_ns < sg->t_enter ||
	    r->op_done[(uint64_t)seq % AN_HIST].seq == seq)
		return;
	r->op_done[(uint64_t)seq % AN_HIST].seq = seq;
	r->op_done[(uint64_t)seq % AN_HIST].t = t_ns;
	if (!p)
		return;
	d = &p->done[p->ndone++ % AN_DONE_RING];
	d->comm = comm;
	d->t_launch = sg->t_enter;
	d->t_done = t_ns;
}

/*
 * Step hooks are on and a send sub of collective op OP transmitted its
 * first step (the record before it showed none): the GPU of rank R had the
 * op's data ready, i.e. had reached the op.  The GPU-side start of the
 * round, exact where the call is not (the CPU queued it long before).
 */
static void note_op_arrival(struct an_rank *r, const struct an_progress *o,
			    const struct an_progress *n, uint64_t t_ns)
{
	struct an_op_done *a;
	int64_t seq;

	if (n->dir != AN_SEND || !n->step || !o->step || o->op != n->op ||
	    o->transmitted || !n->transmitted || !an_coll_op(n->op) || r->op_off_ok != 1)
		return;
	seq = an_op_seq(r, n->op);
	a = &r->op_arr[(uint64_t)seq % AN_HIST];
	if (seq < 0 || (a->seq == seq && a->t <= t_ns))
		return;
	a->seq = seq;
	a->t = t_ns;
}

/*
 * A new proxy op on rank R: the finished subs of other ops say nothing
 * any more (the unfinished ones do: several ops can be in flight).
 */
static void prune_finished(struct an_rank *r, uint64_t op)
{
	uint32_t i, n = 0;

	for (i = 0; i < r->nsubs; i++)
		if (r->subs[i].op == op || !sub_finished(&r->subs[i]))
			r->subs[n++] = r->subs[i];
	r->nsubs = n;
}

static bool advanced(const struct an_progress *o, const struct an_progress *n)
{
	return n->seq != o->seq || n->posted > o->posted ||
	       n->transmitted > o->transmitted ||
	       n->received > o->received || n->done > o->done;
}

/* one more step record of R's process (an_hook_share) */
static void note_hook_record(struct an *an, const struct an_rank *r, uint64_t t_ns)
{
	struct an_proc *p = r->proc ? &an->procs[r->proc - 1] : NULL;

	if (!p)
		return;
	/*
	 * hooks off for a while since the latest: a new period (records of
	 * several threads come a little out of order: counted in this one)
	 */
	if (!p->hook_t0 || t_ns > p->hook_t1 + AN_PERTURB_NS ||
	    t_ns + AN_PERTURB_NS < p->hook_t0) {
		p->hook_t0 = t_ns;
		p->hook_n = 0;
	}
	p->hook_n++;
	if (t_ns > p->hook_t1 || p->hook_n == 1)
		p->hook_t1 = t_ns;
}

/*
 * A p2p sub of R finished (it was not before): the op counts as done
 * toward its peer, once, on the channel kept for that peer and direction.
 */
static void p2p_sub_finished(struct an_rank *r, const struct an_progress *p)
{
	struct an_p2p *q;
	int d = p->dir;

	if (!p->op || an_coll_op(p->op) || p->from_mem || !(q = an_p2p_find(r, p->peer)))
		return;
	if (!q->pch[d])
		q->pch[d] = p->channel + 1;
	if (q->pch[d] != p->channel + 1 || q->pdone_op[d] == p->op)
		return;
	q->pdone[d]++;
	q->pdone_op[d] = p->op;
}

void an_progress(struct an *an, const struct an_key *k,
		 const struct an_progress *p, uint64_t t_ns)
{
	struct an_progress *s;
	struct an_rank *r;
	bool adv = true, fresh = false;
	uint64_t tf;
	uint32_t i;

	an->stats.records++;
	if (!(r = an_rank_get(an, k, false, t_ns)))
		return;
	if (p->step)
		note_hook_record(an, r, t_ns);
	if (r->nsubs && r->subs[0].seq != p->seq)
		r->nsubs = 0;	/* another op: its counters replace these */
	for (i = 0; i < r->nsubs; i++)
		if (same_sub(&r->subs[i], p))
			break;
	if (i == r->nsubs) {
		tf = first_seen(r->subs, r->nsubs, p->op, t_ns);
		if (tf == t_ns)
			prune_finished(r, p->op);
		i = r->nsubs;
		s = an_grow(an, r->subs, &r->cap_subs, r->nsubs + 1, sizeof(*s));
		if (!s)
			return;
		r->subs = s;
		r->nsubs++;
		fresh = true;
	} else {
		adv = advanced(&r->subs[i], p);
		tf = r->subs[i].t_first;
	}
	if (p->dir == AN_SEND && p->op && p->nbytes && sub_finished(p) &&
	    (fresh || !sub_finished(&r->subs[i])))
		send_done(r, p, tf, t_ns);
	if (sub_finished(p) && (fresh || !sub_finished(&r->subs[i])))
		p2p_sub_finished(r, p);
	if (!fresh && p->step && r->subs[i].step && p->dir == AN_SEND)
		net_time(an, r, &r->subs[i], p, t_ns);
	if (!fresh)
		note_op_arrival(r, &r->subs[i], p, t_ns);
	/*
	 * Step hooks are on in this process: its host's rounds are perturbed.
	 * An analyzer that turns hooks on itself knows when (an_suspect_comm);
	 * one that cannot (the fleet's) learns it from the records.
	 */
	if (p->step && !an->sink.suspect && k->host < an->nhosts &&
	    an->hosts[k->host].perturbed_until < t_ns + AN_PERTURB_NS)
		an->hosts[k->host].perturbed_until = t_ns + AN_PERTURB_NS;
	{
		bool mem = !fresh && r->subs[i].from_mem;

		r->subs[i] = *p;
		r->subs[i].from_mem = mem;
	}
	r->subs[i].t_first = tf;
	r->subs[i].t_last = t_ns;
	r->tierc = 1;
	if (sub_finished(p) && p->op)
		note_op_done(an, k->comm, r, p->op, t_ns);
	if (sub_finished(p) && p->op && !open_subs(r)) {
		r->idle_t = t_ns;
		r->idle_tf = tf;
		an_note_done(an, k->comm, r, t_ns);
	}
	if (adv) {
		r->last_ns = t_ns;
		r->mem_open = 0;
		an_comm_progress(an, an_comm_get(an, k->comm, 0, false), k->host, t_ns);
	} else {
		an_comm_get(an, k->comm, 0, false)->version++;
	}
}

bool an_comm_intra_node(const struct an_comm *c)
{
	bool one = false;
	int32_t i;

	for (i = 0; i < c->nranks; i++) {
		if (c->r[i].nsubs)
			return false;
		one |= c->r[i].intra_node;
	}
	return one;
}

void an_snapshot(struct an *an, const struct an_key *k,
		 const struct an_progress *p, size_t n, uint64_t t_ns)
{
	struct an_progress *s;
	struct an_comm *c;
	struct an_rank *r;
	uint64_t *tf;
	bool *mem;
	size_t i;

	an->stats.records++;
	if (!(r = an_rank_get(an, k, false, t_ns)) || n > UINT32_MAX / 2)
		return;
	/* ops already seen keep their first sighting: the stream order */
	tf = calloc(n ? n : 1, sizeof(*tf));
	mem = calloc(n ? n : 1, sizeof(*mem));
	if (!tf || !mem) {
		free(tf);
		free(mem);
		return;
	}
	for (i = 0; i < n; i++) {
		tf[i] = first_seen(r->subs, r->nsubs, p[i].op, t_ns);
		/* first seen in a look at memory (now or by an earlier look) */
		mem[i] = tf[i] == t_ns || seen_in_memory(r->subs, r->nsubs, p[i].op);
	}
	/* nothing active (n 0) is a picture too: an empty array may be NULL */
	s = n ? an_grow(an, r->subs, &r->cap_subs, (uint32_t)n, sizeof(*s)) : r->subs;
	if (n && !s) {
		free(tf);
		free(mem);
		return;
	}
	r->subs = s;
	for (i = 0; i < n; i++) {
		s[i] = p[i];
		/* an op first seen in memory was launched while nobody watched */
		s[i].from_mem = mem[i];
		s[i].t_first = tf[i];
	}
	free(tf);
	free(mem);
	r->nsubs = (uint32_t)n;
	c = an_comm_get(an, k->comm, 0, false);
	/*
	 * Nothing active says "nothing open" unless every rank of the comm is
	 * on one host (its peer table) with NCCL's intra-node transports on
	 * (the process's environment) and none showed a proxy op: NCCL's
	 * intra-node transports (P2P, SHM) have no proxy ops, and an empty
	 * look at such a comm says nothing of its GPUs.
	 */
	r->tierc = r->tierc || n || !c || !an_comm_intra_node(c);
	r->mem_open = open_subs(r);
	/* a snapshot is a look, not progress: only the picture changes */
	if (c)
		c->version++;
}

/*
 * The proxy op id of a collective is collOpCount<<1 when it was launched
 * (NCCL's uploadProxyOps), seq is sum(seqNumber[]): both count launches.
 * While every collective of the comm has proxy work, their difference is
 * constant and maps op ids to seqs; a later look that shows another
 * difference (a collective without proxy work) turns the mapping off.
 */
static void learn_op_offset(struct an_rank *r, const struct an_launch *l)
{
	int64_t off;

	if (!l->has_coll_ops || l->ncoll < 0 || (uint64_t)l->ncoll < l->coll_ops ||
	    r->op_off_ok < 0)
		return;
	off = l->ncoll - (int64_t)l->coll_ops;
	if (r->op_off_ok == 0) {
		r->op_off = off;
		r->op_off_ok = 1;
	} else if (r->op_off != off) {
		r->op_off_ok = -1;
	}
}

void an_launched(struct an *an, const struct an_key *k, const struct an_launch *l,
		 uint64_t t_ns)
{
	struct an_comm *c;
	struct an_rank *r;
	bool first, moved = false;
	uint32_t i;

	an->stats.records++;
	/* a rank a peer's table names is the gone process's, not a new one */
	if (!(r = an_rank_bind(an, k, true, !l->dead, t_ns)))
		return;
	c = an_comm_get(an, k->comm, 0, false);
	first = !r->mem;
	r->mem = 1;
	r->gone = 0;
	if (l->hosts_known)
		r->intra_node = l->intra_node;
	if (l->dead) {
		r->dead = 1;
	} else if (l->ncoll >= 0) {
		int64_t last = l->ncoll - 1;
		struct an_sig *sg;

		/* what it launched, as its memory holds it: no record is missing */
		an_fresh(r, t_ns);
		if (last > r->entered) {
			r->entered = last;
			moved = true;
			/* launched while nobody watched: no time, no arguments */
			r->mem_only = 1;
			sg = &r->hist[(uint64_t)last % AN_HIST];
			if (sg->seq != last) {
				memset(sg, 0, sizeof(*sg));
				sg->seq = last;
				sg->flags = SIG_MEM | SIG_RET;
			}
		}
		if (last > r->returned)
			r->returned = last;
		learn_op_offset(r, l);
		r->nfn = l->nfn < AN_SEQ_FNS ? (uint8_t)l->nfn : AN_SEQ_FNS;
		for (i = 0; i < r->nfn; i++)
			r->fn_launched[i] = l->per_fn[i];
	}
	if (first || moved) {
		an_comm_progress(an, c, k->host, t_ns);
		c->mem_progress = true;
	} else {
		c->version++;
	}
}
