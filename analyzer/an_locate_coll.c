// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A collective comm's stuck round (docs/analyzer.md "Detection"): how sure
 * it is that an op is in flight, which round is stuck, its op, the ranks
 * that wait in it, and H1, the ranks that never entered it (or whose
 * process stopped or exited).  All entered: H2 (an_locate_h2.c), else H3
 * (an_locate_h3.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "an_locate_int.h"
#include <linux/types.h>
#include "ccld.h"
#include "names.h"

static uint64_t sig_bytes(const struct an_sig *s)
{
	size_t sz = dtype_size(s->dtype);

	return s->count * (sz ? sz : 1);
}

/* any sub not finished, op id known or not */
static bool any_open(const struct an_rank *rk)
{
	uint32_t i;

	for (i = 0; i < rk->nsubs; i++)
		if (!rk->subs[i].nsteps || rk->subs[i].done < rk->subs[i].nsteps)
			return true;
	return false;
}

/* ---- proxy ops read through NCCL's counters ----------------------------- */

/*
 * Where rank R's GPU is from its proxy (tier C/E), when NCCL's op counter
 * maps op ids to seqs (an_proxy.c: every collective of the comm had proxy
 * work): the round before its oldest open collective op, or everything it
 * entered when none is open.  -2: not known this way.
 */
static int64_t ops_done(const struct an_rank *r)
{
	int64_t lo = INT64_MAX;
	uint32_t i;

	if (!r->tierc || r->op_off_ok != 1)
		return -2;
	for (i = 0; i < r->nsubs; i++) {
		const struct an_progress *p = &r->subs[i];

		if (!an_coll_op(p->op) || (p->nsteps && p->done >= p->nsteps))
			continue;
		if (an_op_seq(r, p->op) < lo)
			lo = an_op_seq(r, p->op);
	}
	return lo == INT64_MAX ? r->entered : lo - 1;
}

/* the args of the comm's open op on some rank (read from memory), or NULL */
static const struct an_progress *open_args(const struct an_comm *c)
{
	int32_t r;
	uint32_t i;

	for (r = 0; r < c->nranks; r++)
		for (i = 0; live(&c->r[r]) && i < c->r[r].nsubs; i++)
			if (c->r[r].subs[i].op == c->st.open_op && c->r[r].subs[i].has_args)
				return &c->r[r].subs[i];
	return NULL;
}

/* the largest sub of the comm's open op: a barrier all-reduce moves a few bytes */
static uint64_t open_op_max_bytes(const struct an_comm *c)
{
	uint64_t m = 0;
	int32_t r;
	uint32_t i;

	for (r = 0; r < c->nranks; r++)
		for (i = 0; live(&c->r[r]) && i < c->r[r].nsubs; i++)
			if (c->r[r].subs[i].op == c->st.open_op && c->r[r].subs[i].nbytes > m)
				m = c->r[r].subs[i].nbytes;
	return m;
}

/* ---- collectives ---------------------------------------------------- */

/*
 * Collective seqs counted from the attach (NCCL's seqNumber[] unreadable):
 * each rank's count started at whatever op it was at, so seqs are never
 * compared.  A collective cannot finish before every rank entered it:
 * ranks whose GPU (tier B) finished all they entered and that are in no
 * call have not entered the one the others wait in (H1).  Otherwise the
 * waiting ranks are listed (H3).
 */
static bool coll_seq_from_attach(const struct an_comm *c)
{
	int32_t i;

	for (i = 0; i < c->nranks; i++)
		if (live(&c->r[i]) && c->r[i].seq_from_attach)
			return true;
	return false;
}

static void locate_coll_unaligned(struct an *an, struct an_comm *c,
				  struct an_status *st)
{
	const struct an_rank *w = NULL;
	char buf[LOC_PROC_WORDS_MAX];
	int32_t i;

	for (i = 0; i < c->nranks; i++) {
		const struct an_rank *r = &c->r[i];

		if (!live(r) || r->entered < 0)
			continue;
		if (!proc_down(an, r) &&
		    (r->in_call || r->mem_open || !r->tierb || r->completed < r->entered)) {
			add_wait(an, st, i);
			if (!w)
				w = r;
		}
	}
	if (!w)
		return;
	for (i = 0; i < c->nranks; i++) {
		const struct an_rank *r = &c->r[i];

		if (live(r) && (proc_down(an, r) ||
				(r->tierb && !r->in_call && !r->mem_open &&
				 r->completed >= r->entered)))
			add_cul(an, st, i);
	}
	st->strength = ST_STRONG;
	st->seq = w->entered;
	st->fn = w->hist[w->entered % AN_HIST].seq == w->entered ?
		 w->hist[w->entered % AN_HIST].fn : CCLD_FN_ALLREDUCE;
	if (st->ncul) {
		st->cls = AN_H1;
		loc_rank_list(st, st->cul, st->ncul);
		an_text(st, " %s nothing open on comm %016" PRIx64 " (every"
			" collective entered since the attach finished on the GPU;"
			" %s) while %u rank%s wait in %s", st->ncul == 1 ? "has" : "have",
			c->hash, loc_proc_words(an, &c->r[st->cul[0]], buf, sizeof(buf)),
			st->nwait, st->nwait == 1 ? "" : "s", an_fn_name(st->fn));
	} else {
		st->cls = AN_H3;
		for (i = 0; i < (int32_t)st->nwait; i++)
			add_cul(an, st, st->wait[i]);
		loc_rank_list(st, st->cul, st->ncul);
		an_text(st, " wait in %s of comm %016" PRIx64 "; no progress data"
			" tells which one is stuck: all are listed", an_fn_name(st->fn),
			c->hash);
	}
	an_text(st, " (seqs counted from the attach: not compared across ranks)");
	an_val_s(st, "seq_from", "attach");
	an_val_i(st, "nranks", c->nranks);
}

/* ---- a call left out under run-ahead, from launch counts -------------- */

/* RANK's collectives launched as memory holds them, -1 where not known so */
static int64_t mem_launched(const struct an_rank *r)
{
	return live(r) && r->mem_only && !r->dead && r->entered >= 0 ? r->entered + 1 : -1;
}

/*
 * How PROC's launches on each other comm compare with its peers', all
 * known from memory: *SAME those where it launched as many as the most any
 * peer did (*EXAMPLE one of them), *AHEAD those where it launched more
 * (*EXAMPLE then, if none was the same), the return value those where it
 * launched fewer
 */
static uint32_t other_comms_behind(const struct an *an, const struct an_comm *c,
				   uint32_t proc, uint32_t *same, uint32_t *ahead,
				   const struct an_comm **example)
{
	uint32_t behind = 0;
	struct hkey key;
	size_t it;
	void *v;

	*same = *ahead = 0;
	for (it = 0; hmap_next(&an->comms, &it, &key, &v);) {
		const struct an_comm *o = v;
		int64_t mine = -1, most = -1;
		uint32_t known = 0;
		int32_t k;

		if (o == c || !an_comm_has_proc(o, proc))
			continue;
		for (k = 0; k < o->nranks; k++) {
			int64_t n = mem_launched(&o->r[k]);

			if (n < 0)
				continue;
			known++;
			if (o->r[k].proc == proc)
				mine = n;
			else if (n > most)
				most = n;
		}
		if (mine < 0 || most < 0 || known < 2 || !mine)
			continue;
		if (mine == most) {
			(*same)++;
			*example = o;
		} else if (mine > most) {
			if (!(*ahead)++ && !*same)
				*example = o;
		} else {
			behind++;
		}
	}
	return behind;
}

/*
 * Of C's two launch counts A < B, the one every rank of the other comms of
 * C's size launched (each such comm all alike, all known from memory): B
 * where some such comm has B and none A, A the other way round, else -1.
 * Two ranks alone cannot say which of them is off; the comms of their
 * role, a step's calls alike, can (random job 549: DP pairs {0,1} and
 * {2,3}, rank 3 left a step's all-reduce out, its pair 171 against 172,
 * the other pair 172 and 172).
 */
static int64_t role_count(const struct an *an, const struct an_comm *c, int64_t a, int64_t b)
{
	uint32_t na = 0, nb = 0;
	struct hkey key;
	size_t it;
	void *v;

	for (it = 0; hmap_next(&an->comms, &it, &key, &v);) {
		const struct an_comm *o = v;
		int64_t n = -1;
		int32_t k;

		if (o == c || o->nranks != c->nranks)
			continue;
		for (k = 0; k < o->nranks; k++) {
			int64_t m = mem_launched(&o->r[k]);

			if (m < 0 || (n >= 0 && m != n))
				break;
			n = m;
		}
		if (k < o->nranks)
			continue;	/* a count not known, or not all alike */
		na += n == a;
		nb += n == b;
	}
	return nb && !na ? b : na && !nb ? a : -1;
}

/* what skipped_call_find found: rank X's count MINE where the others' is THEIRS */
struct skip_found {
	int32_t x;
	int64_t mine, theirs;
	uint32_t nknown, same, ahead;
	bool past;			/* it launched more: its CPU ran past the host sync */
	const struct an_comm *o;	/* a comm where it launched as many as its peers */
};

/*
 * A rank that left out a collective of C while its CPU ran on (PyTorch
 * queues a whole step or two): attached late, memory holds launch counts
 * only.  Its next call of C pairs with the one the others wait in, so it
 * launched the stuck round too, and its GPU, behind an op of another comm
 * that waits for a GPU stuck in C, never reaches it: every proxy reads
 * "GPU not ready" somewhere.  What names it: it launched fewer of C's
 * collectives than each other rank (all of them as many; of two ranks, the
 * one off the count of the comms of their role, role_count), while on every
 * other comm it shares it launched as many as its peers, so its CPU
 * stopped where theirs did, a call of C short.  A CPU a step behind
 * (its GPU stalled) is behind on its other comms too.  Random job 184:
 * rank 1 left out a step's loss all-reduce; H3 named rank 0 before.
 *
 * Its CPU may also run on to a later host sync than theirs (where the
 * step it left the call out of ends with one): then it launched more of
 * C's collectives than each other rank, all of them as many, and on no
 * other comm fewer than its peers.  A CPU stopped by its own GPU, or by
 * a peer's, stops at the same host sync as the others; only a rank whose
 * calls no longer pair with theirs gets past it (random job 184 again,
 * once in 11 runs here: world 173 against 172, its DP comm 174 against
 * 172; the DP comm's H1 named rank 0 there).
 */
static bool skipped_call_find(const struct an *an, const struct an_comm *c,
			      const struct an_status *st, struct skip_found *f)
{
	int64_t most = -1, least = INT64_MAX;
	uint32_t nmost = 0, nleast = 0;
	int32_t i;

	memset(f, 0, sizeof(*f));
	f->x = -1;
	f->mine = -1;
	for (i = 0; i < c->nranks; i++) {
		int64_t n = mem_launched(&c->r[i]);

		if (!live(&c->r[i]))
			continue;
		if (n < 0 || proc_down(an, &c->r[i]))
			return false;	/* counts not all from memory, or a rank cannot run */
		f->nknown++;
		if (n > most) {
			most = n;
			nmost = 0;
		}
		nmost += n == most;
		if (n < least) {
			least = n;
			nleast = 0;
		}
		nleast += n == least;
	}
	if (f->nknown < 2 || most == least)
		return false;
	if (f->nknown == 2) {
		/* which of two is off: the comms of their role say */
		if ((f->theirs = role_count(an, c, least, most)) < 0)
			return false;
		f->past = f->theirs == least;
	} else {
		/* one rank short of the others (its CPU stopped where theirs did), or past them */
		f->past = nleast == f->nknown - 1;
		if (nmost != f->nknown - 1 && !f->past)
			return false;
		f->theirs = f->past ? least : most;
	}
	for (i = 0; i < c->nranks; i++)
		if (live(&c->r[i]) && mem_launched(&c->r[i]) != f->theirs) {
			f->x = i;
			f->mine = mem_launched(&c->r[i]);
		}
	/* it launched the stuck round: else H1 "never entered" named it */
	return f->x >= 0 && f->mine > st->seq &&
	       !other_comms_behind(an, c, c->r[f->x].proc, &f->same, &f->ahead, &f->o) &&
	       (f->past ? f->same || f->ahead : !f->ahead && f->same);
}

/*
 * F's rank as an H1.  ALONE: the others never entered the round it waits
 * in (their GPUs are in another comm's op, their CPUs in a CUDA sync)
 */
static void skipped_call_verdict(struct an *an, struct an_comm *c, struct an_status *st,
				 const struct skip_found *f, bool alone)
{
	char buf[LOC_PROC_WORDS_MAX], others[64];
	int32_t i;

	st->cls = AN_H1;
	st->ncul = st->nwait = 0;
	for (i = 0; i < c->nranks; i++)
		if (live(&c->r[i]) && i != f->x)
			add_wait(an, st, i);
	add_cul(an, st, f->x);
	loc_rank_list(st, st->cul, st->ncul);
	if (f->nknown == 2)
		snprintf(others, sizeof(others), "its peer, like each rank of the comms of"
			 " its size,");
	else
		snprintf(others, sizeof(others), "the %u other ranks", f->nknown - 1);
	if (f->past) {
		an_text(st, " launched %" PRId64 " of comm %016" PRIx64 "'s collectives"
			" where %s launched %" PRId64 ", and on comm %016"
			PRIx64 "%s at least as many as its peers (NCCL's counts, read from"
			" memory): its CPU ran past the host sync theirs stopped at, so its"
			" calls no longer pair with theirs: it left a call out, its later"
			" calls pair with their earlier ones, and ", f->mine, c->hash, others,
			f->theirs, f->o->hash, f->same + f->ahead > 1 ? " and others" : "");
		if (alone)
			an_text(st, "its GPU waits in %s seq %" PRId64 ", which they never"
				" entered: their CPUs wait for their GPUs at that sync, in"
				" another comm's op (%s)", an_fn_name(st->fn), st->seq,
				loc_proc_words(an, &c->r[f->x], buf, sizeof(buf)));
		else
			an_text(st, "they wait in %s seq %" PRId64 " (%s)", an_fn_name(st->fn),
				st->seq, loc_proc_words(an, &c->r[f->x], buf, sizeof(buf)));
	} else {
		an_text(st, " left out %" PRId64 " call%s of this comm: it launched %" PRId64
			" of comm %016" PRIx64 "'s collectives where %s"
			" launched %" PRId64 ", while on comm %016" PRIx64 "%s it launched"
			" as many as its peers (NCCL's counts, read from memory), so its"
			" CPU stopped where theirs did; its later calls pair with their"
			" earlier ones, and they wait in %s seq %" PRId64 " (%s)",
			f->theirs - f->mine, f->theirs - f->mine == 1 ? "" : "s", f->mine,
			c->hash, others, f->theirs, f->o->hash, f->same > 1 ? " and others" : "",
			an_fn_name(st->fn), st->seq,
			loc_proc_words(an, &c->r[f->x], buf, sizeof(buf)));
	}
	an_val_i(st, "nranks", c->nranks);
	/* how many more it launched, or how many calls it left out */
	an_val_i(st, f->past ? "launched_past" : "skipped",
		 f->past ? f->mine - f->theirs : f->theirs - f->mine);
	an_val_i(st, "culprit_seq", f->mine - 1);
	an_val_s(st, "source", "memory");
	loc_thread_vals(an, &c->r[f->x], st);
}

static bool loc_skipped_call(struct an *an, struct an_comm *c, struct an_status *st)
{
	struct skip_found f;

	if (!skipped_call_find(an, c, st, &f))
		return false;
	skipped_call_verdict(an, c, st, &f, false);
	return true;
}

/*
 * The same CPU past the host sync, where the others never entered the
 * round it waits in: its skipped op was another comm's (the world's loss
 * all-reduce), so on that comm it launched as many as they did, and on
 * this one a step more.  Read round by round it is the one rank that
 * entered, and the H1 "never entered" named the others, whose CPUs wait
 * for their GPUs at the step's host sync, in the op of the comm it
 * skipped (random job 888: PyTorch, 16 ranks, PP 4 x DP 4, attached late:
 * rank 9 launched 290 of its DP comm's collectives, its 3 peers 288, all
 * 144 of the world's; random job 894 alike with a TP comm of 4).  Only
 * where it is the one rank in the round and each rank named never entered
 * is in a CUDA synchronize: a CPU stopped in its own code is an H1 itself.
 */
static bool ran_past_alone(struct an *an, struct an_comm *c, struct an_status *st)
{
	struct skip_found f;
	uint32_t i;

	if (st->nwait != 1)
		return false;
	for (i = 0; i < st->ncul; i++) {
		const struct an_proc *p = an_proc_of(an, &c->r[st->cul[i]]);

		if (!p || p->state != AN_PROC_RUNNING || !p->main_thread.cuda_sync)
			return false;
	}
	if (!skipped_call_find(an, c, st, &f) || !f.past || f.x != st->wait[0])
		return false;
	skipped_call_verdict(an, c, st, &f, true);
	/* where the hang began: the comms holding it are its cascades (spmd_roots) */
	st->spmd = true;
	st->spmd_skipped = f.o->hash;
	return true;
}

void loc_coll(struct an *an, struct an_comm *c, struct an_status *st)
{
	int64_t lo = INT64_MAX, hi = -1, sb = INT64_MAX;
	bool known_all = true, in_call = false, incomplete = false, mem = false;
	uint32_t nlive = 0, down = 0;
	const struct an_sig *ref = NULL;
	const struct an_progress *args;
	char buf[LOC_PROC_WORDS_MAX];
	int32_t i;

	if (coll_seq_from_attach(c)) {
		locate_coll_unaligned(an, c, st);
		return;
	}
	for (i = 0; i < c->nranks; i++) {
		struct an_rank *r = &c->r[i];
		int64_t done = -2;

		if (!live(r))
			continue;
		nlive++;
		down += proc_down(an, r);
		mem |= r->mem_only;
		/* a rank known only from a peer's table: what it launched is unknown */
		if (r->dead && r->entered < 0)
			continue;
		if (r->entered < lo)
			lo = r->entered;
		if (r->entered > hi)
			hi = r->entered;
		in_call |= r->in_call;
		if (r->tierb) {
			done = r->completed;
			/*
			 * Tier B completes a whole step's ops at once (one event
			 * per step); a proxy with nothing open (tier C/E) has
			 * finished every op the rank entered in this comm.
			 */
			if (r->tierc && done < r->entered && !any_open(r))
				done = r->entered;
		}
		/* finer than tier B: the proxy's own op, through NCCL's counter */
		if (ops_done(r) >= -1)
			done = ops_done(r);
		if (done >= -1) {
			if (done + 1 < sb)
				sb = done + 1;
			incomplete |= done < r->entered;
		} else {
			known_all = false;
		}
		/* a look at its memory found an op still active in its proxy */
		incomplete |= r->mem_open;
	}
	if (!nlive || hi < 0)
		return;
	st->seq = lo < hi ? lo + 1 : hi;
	if (sb < st->seq)
		st->seq = sb;
	if (lo < hi || in_call || incomplete)
		st->strength = ST_STRONG;
	else if (!known_all)
		st->strength = ST_WEAK;
	else if (down && sb <= hi)
		st->strength = ST_STRONG;
	else
		return;
	if (st->seq < 0)
		st->seq = 0;

	/* the round's op as the ranks that entered it called it */
	for (i = 0; i < c->nranks; i++) {
		const struct an_sig *s = &c->r[i].hist[st->seq % AN_HIST];

		if (live(&c->r[i]) && s->seq == st->seq && !(s->flags & SIG_MEM)) {
			ref = s;
			break;
		}
	}
	args = ref ? NULL : open_args(c);
	if (ref) {
		st->fn = ref->fn;
		st->barrier = ref->fn == CCLD_FN_ALLREDUCE &&
			      sig_bytes(ref) <= an->cfg.barrier_bytes;
	} else if (args) {
		/* known from memory only: the open op's arguments in its proxy */
		st->fn = loc_fn_of_nccl_func(args->coll);
		st->barrier = st->fn == CCLD_FN_ALLREDUCE &&
			      open_op_max_bytes(c) <= an->cfg.barrier_bytes;
	} else {
		st->fn = mem ? 0 : CCLD_FN_ALLREDUCE;
	}

	for (i = 0; i < c->nranks; i++) {
		struct an_rank *r = &c->r[i];

		if (!live(r))
			continue;
		if (r->entered >= st->seq && !proc_down(an, r))
			add_wait(an, st, i);
		if (r->entered < st->seq || proc_down(an, r))
			add_cul(an, st, i);
	}
	/*
	 * A barrier may wait long for a rank that has not reached it (a
	 * checkpoint on rank 0 while the others wait): hang_s.  Once every
	 * rank entered it, nothing is late to it: a barrier-sized op that
	 * does not complete is stuck like any other (random job 655: a GPU
	 * stalled in a 1-element TP all-reduce every rank had entered waited
	 * for hang_s, silent).
	 */
	if (!st->ncul)
		st->barrier = false;

	if (st->ncul && mem && ran_past_alone(an, c, st))
		return;
	if (st->ncul) {
		struct an_rank *r = &c->r[st->cul[0]];

		st->cls = AN_H1;
		loc_rank_list(st, st->cul, st->ncul);
		if (r->dead && r->entered < 0)
			an_text(st, " never entered %s seq %" PRId64 " of comm %016" PRIx64
				" (%s)", an_fn_name(st->fn), st->seq, c->hash,
				loc_proc_words(an, r, buf, sizeof(buf)));
		else if (r->entered >= st->seq)
			an_text(st, " stopped in %s seq %" PRId64 " of comm %016"
				PRIx64 " (%s)", an_fn_name(st->fn), st->seq,
				c->hash, loc_proc_words(an, r, buf, sizeof(buf)));
		else if (r->mem_only)
			an_text(st, " never entered %s seq %" PRId64 " of comm %016"
				PRIx64 " (it launched up to seq %" PRId64 ", when is not"
				" known; %s)", an_fn_name(st->fn), st->seq, c->hash,
				r->entered, loc_proc_words(an, r, buf, sizeof(buf)));
		else
			an_text(st, " never entered %s seq %" PRId64 " of comm %016"
				PRIx64 " (last entered seq %" PRId64 ", %.1f s ago;"
				" %s)", an_fn_name(st->fn), st->seq, c->hash,
				r->entered, secs(age(an, an_rank_host(an, r), r->last_ns)),
				loc_proc_words(an, r, buf, sizeof(buf)));
		an_text(st, "; %u of %d ranks wait in it", st->nwait, c->nranks);
		loc_blocked_inside(an, c, st);
		an_val_i(st, "nranks", c->nranks);
		an_val_i(st, "entered", st->nwait);
		an_val_i(st, "culprit_seq", r->entered);
		loc_thread_vals(an, r, st);
		return;
	}
	if (loc_h2(an, c, st)) {
		loc_blocked_inside(an, c, st);
		return;
	}
	if (loc_skipped_call(an, c, st))
		return;
	loc_h3(an, c, st);
}
