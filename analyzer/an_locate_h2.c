// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * H2, an inconsistent op: every rank entered the stuck round, and some
 * called it with other arguments (type, count, dtype, redop, root) than the
 * majority, as their calls say, or, known from memory only, as the open
 * op's arguments in their proxies or NCCL's per-function launch counts say.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "an_locate_int.h"
#include <linux/types.h>
#include "ccld.h"

static bool sig_eq(const struct an_sig *a, const struct an_sig *b)
{
	return a->fn == b->fn && a->count == b->count && a->dtype == b->dtype &&
	       a->redop == b->redop && a->root == b->root;
}

/* the first differing field, with both values as text (FR-style) */
const char *loc_sig_diff(const struct an_sig *a, const struct an_sig *b,
			 char *va, char *vb, size_t n)
{
	char t1[16], t2[16];

	if (a->fn != b->fn) {
		snprintf(va, n, "%s", an_fn_name(a->fn));
		snprintf(vb, n, "%s", an_fn_name(b->fn));
		return "type";
	}
	if (a->count != b->count) {
		snprintf(va, n, "%" PRIu64, a->count);
		snprintf(vb, n, "%" PRIu64, b->count);
		return "count";
	}
	if (a->dtype != b->dtype) {
		snprintf(va, n, "%s", an_dtype_name(a->dtype, t1, sizeof(t1)));
		snprintf(vb, n, "%s", an_dtype_name(b->dtype, t2, sizeof(t2)));
		return "dtype";
	}
	if (a->redop != b->redop) {
		snprintf(va, n, "%s", an_redop_name(a->redop, t1, sizeof(t1)));
		snprintf(vb, n, "%s", an_redop_name(b->redop, t2, sizeof(t2)));
		return "redop";
	}
	snprintf(va, n, "%d", a->root);
	snprintf(vb, n, "%d", b->root);
	return "root";
}

/* ncclFunc_t (proxy args, seqNumber[] index) -> enum ccld_fn */
int loc_fn_of_nccl_func(int f)
{
	static const int map[] = { CCLD_FN_BROADCAST, CCLD_FN_REDUCE, CCLD_FN_ALLGATHER,
				   CCLD_FN_REDUCESCATTER, CCLD_FN_ALLREDUCE };

	if (f >= 0 && f < (int)(sizeof(map) / sizeof(map[0])))
		return map[f];
	return f == 8 ? CCLD_FN_ALLTOALL : f == 9 ? CCLD_FN_SCATTER :
	       f == 10 ? CCLD_FN_GATHER : 0;
}

/* ---- H2: signatures of the ranks that entered round S ---------------- */

/* rank RK's call at seq SEQ as its calls give it (not read in memory), or NULL */
static const struct an_sig *sig_at(const struct an_rank *rk, int64_t seq)
{
	const struct an_sig *s = hist_at(rk, seq);

	return s && !(s->flags & SIG_MEM) ? s : NULL;
}

/*
 * Does an op like MIN follow one like MAJ in C's order: a rank's calls at
 * seq k and k + 1, both before SEQ, or a majority rank's own call after
 * SEQ?  Then a rank that called MIN at SEQ where the
 * others called MAJ left MAJ out and went on to the next op (seed 1340:
 * DDP's buffer broadcast skipped, its reduce-scatter in the broadcast's
 * round), an H1, not two ranks calling different ops.
 */
static bool follows_in_order(const struct an_comm *c, int64_t seq, const struct an_sig *maj,
			     const struct an_sig *min)
{
	int32_t r;
	int64_t k;

	for (r = 0; r < c->nranks; r++) {
		const struct an_rank *rk = &c->r[r];
		const struct an_sig *a, *b;

		/* the rounds before, both of them done with */
		for (k = seq - AN_HIST + 1; k + 1 < seq; k++)
			if ((a = sig_at(rk, k)) && (b = sig_at(rk, k + 1)) && sig_eq(a, maj) &&
			    sig_eq(b, min))
				return true;
		/* a rank of the majority already called its next op */
		if ((a = sig_at(rk, seq)) && (b = sig_at(rk, seq + 1)) && sig_eq(a, maj) &&
		    sig_eq(b, min))
			return true;
	}
	return false;
}

#define MAX_GROUPS 8

struct group {
	struct an_sig sig;
	uint32_t n;
	uint32_t seen;		/* in the ranks' history before S */
};

/*
 * H1: the ranks that called MIN at the stuck round, MAJ's successor in the
 * comm's order, left MAJ out; NMAJ ranks wait in it
 */
static bool skipped_op(struct an *an, struct an_comm *c, struct an_status *st,
		       const struct an_sig *maj, const struct an_sig *min, uint32_t nmaj)
{
	int32_t r;

	st->cls = AN_H1;
	st->fn = maj->fn;
	for (r = 0; r < c->nranks; r++) {
		const struct an_sig *s = sig_at(&c->r[r], st->seq);

		if (live(&c->r[r]) && s && sig_eq(s, min))
			add_cul(an, st, r);
	}
	loc_rank_list(st, st->cul, st->ncul);
	an_text(st, " never called %s seq %" PRId64 " of comm %016" PRIx64 ": %s call there"
		" is %s, the op that comes after %s in this comm's order, so %s left the %s"
		" out; %u rank%s wait%s in it", an_fn_name(maj->fn), st->seq, c->hash,
		st->ncul > 1 ? "their" : "its", an_fn_name(min->fn), an_fn_name(maj->fn),
		st->ncul > 1 ? "they" : "it", an_fn_name(maj->fn), nmaj, nmaj == 1 ? "" : "s",
		nmaj == 1 ? "s" : "");
	an_val_s(st, "skipped", an_fn_name(maj->fn));
	an_val_s(st, "called_instead", an_fn_name(min->fn));
	an_val_i(st, "waiting_ranks", nmaj);
	return true;
}

static bool check_h2(struct an *an, struct an_comm *c, struct an_status *st)
{
	struct group g[MAX_GROUPS];
	uint32_t ng = 0, i, maj = 0;
	char va[32], vb[32];
	const char *field;
	bool tie = false;
	int32_t r;
	int j;

	for (r = 0; r < c->nranks; r++) {
		/* launched as read from memory: its arguments are not known */
		const struct an_sig *s = sig_at(&c->r[r], st->seq);

		if (!live(&c->r[r]) || !s)
			continue;
		for (i = 0; i < ng && !sig_eq(&g[i].sig, s); i++)
			;
		if (i == ng) {
			if (ng == MAX_GROUPS)
				continue;
			g[ng].sig = *s;
			g[ng].n = 0;
			g[ng].seen = 0;
			ng++;
		}
		g[i].n++;
	}
	if (ng < 2)
		return false;
	for (i = 1; i < ng; i++)
		if (g[i].n > g[maj].n)
			maj = i;
	for (i = 0; i < ng; i++)
		tie |= i != maj && g[i].n == g[maj].n;
	/* two op types, one the other's successor: who left an op out (a tie too) */
	if (ng == 2 && g[0].sig.fn != g[1].sig.fn) {
		bool f01 = follows_in_order(c, st->seq, &g[0].sig, &g[1].sig);
		bool f10 = follows_in_order(c, st->seq, &g[1].sig, &g[0].sig);

		uint32_t left = f01 ? 0 : 1;	/* the op left out */

		if (f01 != f10 && (tie || left == maj))
			return skipped_op(an, c, st, &g[left].sig, &g[!left].sig, g[left].n);
	}
	if (tie) {
		/* no majority: the signature the job used before is the norm */
		for (r = 0; r < c->nranks; r++)
			for (j = 0; j < AN_HIST; j++) {
				const struct an_sig *s = &c->r[r].hist[j];

				if (s->seq < 0 || s->seq >= st->seq || (s->flags & SIG_MEM))
					continue;
				for (i = 0; i < ng; i++)
					g[i].seen += sig_eq(&g[i].sig, s);
			}
		maj = 0;
		for (i = 1; i < ng; i++)
			if (g[i].seen > g[maj].seen)
				maj = i;
		tie = false;
		for (i = 0; i < ng; i++)
			tie |= i != maj && g[i].seen == g[maj].seen &&
			       g[i].n == g[maj].n;
	}
	st->cls = AN_H2;
	st->fn = g[maj].sig.fn;
	for (r = 0; r < c->nranks; r++) {
		const struct an_sig *s = sig_at(&c->r[r], st->seq);

		if (!live(&c->r[r]) || !s)
			continue;
		/* a true tie names both sides: never guess */
		if (tie || !sig_eq(s, &g[maj].sig))
			add_cul(an, st, r);
	}
	for (i = 0; i < ng && i == maj; i++)
		;
	field = loc_sig_diff(&g[maj].sig, &g[i].sig, va, vb, sizeof(va));
	loc_rank_list(st, st->cul, st->ncul);
	an_text(st, " called %s seq %" PRId64 " of comm %016" PRIx64
		" with %s %s where %u rank%s used %s", an_fn_name(g[i].sig.fn),
		st->seq, c->hash, field, vb, g[maj].n, g[maj].n == 1 ? "" : "s", va);
	if (tie)
		an_text(st, " (no majority, and neither was used before)");
	an_val_s(st, "field", field);
	an_val_s(st, "majority", va);
	an_val_s(st, "minority", vb);
	an_val_i(st, "majority_ranks", g[maj].n);
	an_val_i(st, "minority_ranks", st->ncul);
	return true;
}

/* ---- H2 from memory: the open op's arguments, the launch counts ------ */

/* NCCL's ncclDevRedOp_t, what a proxy op carries (args->redOp) */
static const char *dev_redop_name(int op, char *buf, size_t n)
{
	static const char *const names[] = { "sum", "prod", "min/max", "premulsum",
					     "sumpostdiv" };

	if (op >= 0 && op < (int)(sizeof(names) / sizeof(names[0])))
		return names[op];
	snprintf(buf, n, "redop%d", op);
	return buf;
}

/* all-gather, reduce-scatter, all-reduce: every rank sends as much */
static bool symmetric_coll(int coll)
{
	return coll == 2 || coll == 3 || coll == 4;
}

struct op_args {
	uint8_t coll, dtype, redop;
};

/* rank RK's view of proxy op OP (tier E with arguments): false if none */
static bool rank_op_args(const struct an_rank *rk, uint64_t op, struct op_args *a)
{
	uint32_t i;

	memset(a, 0, sizeof(*a));
	for (i = 0; i < rk->nsubs; i++) {
		const struct an_progress *p = &rk->subs[i];

		if (p->op != op || !p->has_args)
			continue;
		a->coll = p->coll;
		a->dtype = p->dtype;
		a->redop = p->redop;
		return true;
	}
	return false;
}

static bool op_kind_eq(const struct op_args *a, const struct op_args *b)
{
	return a->coll == b->coll && a->dtype == b->dtype && a->redop == b->redop;
}

/* does rank RK hold a sub of OP on channel CH, direction DIR, of NBYTES (0: any)? */
static bool rank_has_sub(const struct an_rank *rk, uint64_t op, int32_t ch, int dir,
			 uint64_t nbytes)
{
	uint32_t i;

	for (i = 0; i < rk->nsubs; i++) {
		const struct an_progress *p = &rk->subs[i];

		if (p->op == op && p->has_args && p->nbytes && p->channel == ch &&
		    (int)p->dir == dir && (!nbytes || p->nbytes == nbytes))
			return true;
	}
	return false;
}

/*
 * In a symmetric collective every rank's sub on one channel and direction
 * moves as many bytes (the channel's share of the data).  Sub by sub, not
 * summed per rank: a rank whose other channels already finished (they
 * leave the proxy) holds fewer subs, not another count.  The value most of
 * the ranks holding a sub on (CH, DIR) show, and how many; 0 when no value
 * has a strict majority of two or more.
 */
static uint64_t majority_sub_bytes(const struct an_comm *c, int32_t ch, int dir,
				   uint32_t *nmaj)
{
	uint32_t best = 0, known = 0, n;
	uint64_t op = c->st.open_op, v = 0;
	const struct an_progress *p;
	int32_t r, q;
	uint32_t i;

	for (r = 0; r < c->nranks; r++)
		known += live(&c->r[r]) && rank_has_sub(&c->r[r], op, ch, dir, 0);
	for (r = 0; r < c->nranks; r++) {
		if (!live(&c->r[r]))
			continue;
		for (i = 0; i < c->r[r].nsubs; i++) {
			p = &c->r[r].subs[i];
			if (p->op != op || !p->has_args || !p->nbytes || p->channel != ch ||
			    (int)p->dir != dir || p->nbytes == v)
				continue;
			for (n = 0, q = 0; q < c->nranks; q++)
				n += live(&c->r[q]) &&
				     rank_has_sub(&c->r[q], op, ch, dir, p->nbytes);
			if (n > best) {
				best = n;
				v = p->nbytes;
			}
		}
	}
	*nmaj = best;
	return best >= 2 && 2 * best > known ? v : 0;
}

/*
 * Ranks with a sub of the open op whose bytes differ from the majority of
 * its channel and direction: culprits; their bytes and the majority's in
 * *BAD and *MB, the channel in *CH
 */
#define MAJ_CHANNELS	64	/* NCCL's MAXCHANNELS: majorities kept per (channel, dir) */

struct maj_memo {
	uint64_t v;
	uint32_t n;
	bool known;
};

static void subs_other_count(struct an *an, struct an_comm *c, struct an_status *st,
			     uint64_t *mb, uint64_t *bad, uint32_t *nmaj, int32_t *ch)
{
	/* each (channel, direction)'s majority once, not once per sub */
	struct maj_memo memo[MAJ_CHANNELS][2] = {};
	uint64_t op = c->st.open_op, maj;
	const struct an_progress *p;
	uint32_t i, n;
	int32_t r;

	for (r = 0; r < c->nranks; r++) {
		if (!live(&c->r[r]))
			continue;
		for (i = 0; i < c->r[r].nsubs; i++) {
			p = &c->r[r].subs[i];
			if (p->op != op || !p->has_args || !p->nbytes)
				continue;
			if (p->channel >= 0 && p->channel < MAJ_CHANNELS) {
				struct maj_memo *m = &memo[p->channel][p->dir == AN_RECV];

				if (!m->known) {
					m->v = majority_sub_bytes(c, p->channel, (int)p->dir, &m->n);
					m->known = true;
				}
				maj = m->v;
				n = m->n;
			} else {
				maj = majority_sub_bytes(c, p->channel, (int)p->dir, &n);
			}
			if (!maj || p->nbytes == maj)
				continue;
			if (!st->ncul) {
				*mb = maj;
				*bad = p->nbytes;
				*nmaj = n;
				*ch = p->channel;
			}
			add_cul(an, st, r);
			break;
		}
	}
}

/*
 * H2 from memory: the comm's open op as each rank's proxy holds it (tier E
 * snapshot with CCLD_F_PROXY_ARGS).  The same op id on every rank is the
 * same collective (NCCL numbers a comm's ops alike); ranks whose op has
 * another function, dtype or reduction, or moves other byte counts in a
 * symmetric collective (another count), called something else.
 */
static bool check_h2_args(struct an *an, struct an_comm *c, struct an_status *st)
{
	struct { struct op_args a; uint32_t n; } g[MAX_GROUPS];
	uint32_t ng = 0, i, maj = 0, nmaj = 0;
	char va[32], vb[32], t1[16], t2[16];
	const struct op_args *A, *B = NULL;
	uint64_t mb = 0, bad_bytes = 0;
	const char *field = NULL;
	struct op_args a;
	bool tie = false;
	int32_t r, ch = -1;

	if (!c->st.open_op || !an_coll_op(c->st.open_op))
		return false;
	for (r = 0; r < c->nranks; r++) {
		if (!live(&c->r[r]) || !rank_op_args(&c->r[r], c->st.open_op, &a))
			continue;
		for (i = 0; i < ng && !op_kind_eq(&g[i].a, &a); i++)
			;
		if (i == ng) {
			if (ng == MAX_GROUPS)
				continue;
			g[ng].a = a;
			g[ng++].n = 0;
		}
		g[i].n++;
	}
	if (!ng)
		return false;
	for (i = 1; i < ng; i++)
		if (g[i].n > g[maj].n)
			maj = i;
	for (i = 0; i < ng; i++)
		tie |= i != maj && g[i].n == g[maj].n;
	A = &g[maj].a;
	if (ng >= 2) {
		for (r = 0; r < c->nranks; r++)
			if (live(&c->r[r]) && rank_op_args(&c->r[r], c->st.open_op, &a) &&
			    (tie || !op_kind_eq(&a, A)))
				add_cul(an, st, r);
		B = &g[maj ? 0 : 1].a;
		nmaj = g[maj].n;
	} else if (symmetric_coll(A->coll)) {
		/* one kind: another count shows as other byte counts */
		subs_other_count(an, c, st, &mb, &bad_bytes, &nmaj, &ch);
		if (!st->ncul)
			return false;
		B = A;
		field = "count";
	} else {
		return false;
	}
	st->cls = AN_H2;
	st->fn = loc_fn_of_nccl_func(A->coll);
	if (field) {
		snprintf(va, sizeof(va), "%" PRIu64 " bytes", mb);
		snprintf(vb, sizeof(vb), "%" PRIu64 " bytes", bad_bytes);
	} else if (A->coll != B->coll) {
		field = "type";
		snprintf(va, sizeof(va), "%s", an_fn_name(loc_fn_of_nccl_func(A->coll)));
		snprintf(vb, sizeof(vb), "%s", an_fn_name(loc_fn_of_nccl_func(B->coll)));
	} else if (A->dtype != B->dtype) {
		field = "dtype";
		snprintf(va, sizeof(va), "%s", an_dtype_name(A->dtype, t1, sizeof(t1)));
		snprintf(vb, sizeof(vb), "%s", an_dtype_name(B->dtype, t2, sizeof(t2)));
	} else {
		field = "redop";
		snprintf(va, sizeof(va), "%s", dev_redop_name(A->redop, t1, sizeof(t1)));
		snprintf(vb, sizeof(vb), "%s", dev_redop_name(B->redop, t2, sizeof(t2)));
	}
	loc_rank_list(st, st->cul, st->ncul);
	an_text(st, ": %s seq %" PRId64 " of comm %016" PRIx64 " (proxy op 0x%" PRIx64
		", as its process's memory holds it) ", an_fn_name(loc_fn_of_nccl_func(B->coll)),
		st->seq, c->hash, c->st.open_op - 1);
	if (!strcmp(field, "count"))
		an_text(st, "moves %s on channel %d where %u rank%s %s: another count", vb, ch,
			nmaj, nmaj == 1 ? " moves" : "s move", va);
	else
		an_text(st, "has %s %s where %u rank%s %s", field, vb, nmaj,
			nmaj == 1 ? " has" : "s have", va);
	if (tie)
		an_text(st, " (no majority: all are listed)");
	an_val_s(st, "field", field);
	an_val_s(st, "majority", va);
	an_val_s(st, "minority", vb);
	an_val_i(st, "majority_ranks", nmaj);
	an_val_i(st, "minority_ranks", st->ncul);
	an_val_s(st, "source", "memory");
	return true;
}

static uint64_t launched_total(const struct an_rank *r)
{
	uint64_t t = 0;
	uint32_t i;

	for (i = 0; i < r->nfn; i++)
		t += r->fn_launched[i];
	return t;
}

static bool same_counts(const struct an_rank *a, const struct an_rank *b)
{
	return a->nfn == b->nfn &&
	       !memcmp(a->fn_launched, b->fn_launched, a->nfn * sizeof(a->fn_launched[0]));
}

/* a rank of the majority waits in the open op for data rank M sent and finished */
static bool waits_for_finished(const struct an_comm *c, int32_t m)
{
	const struct an_rank *mr = &c->r[m];
	int32_t q;
	uint32_t i;

	for (i = 0; i < mr->nsubs; i++)
		if (mr->subs[i].op == c->st.open_op &&
		    !(mr->subs[i].nsteps && mr->subs[i].done >= mr->subs[i].nsteps))
			return false;	/* M's side of the op is still open */
	for (q = 0; q < c->nranks; q++)
		for (i = 0; q != m && live(&c->r[q]) && i < c->r[q].nsubs; i++) {
			const struct an_progress *p = &c->r[q].subs[i];

			if (p->op == c->st.open_op && p->dir == AN_RECV && p->peer == m &&
			    p->posted > p->received)
				return true;
		}
	return false;
}

/*
 * H2 from NCCL's per-function launch counts (comm->seqNumber[], read from
 * memory).  Every rank of a comm launches the same sequence of
 * collectives: a rank that launched as many as the majority but not as
 * many of each function called another function; so did a rank that
 * launched a function the majority never launched while the majority
 * waits in the stuck round for data that rank's side already finished (it
 * went on after its op of another kind completed without them).
 */
static bool check_h2_counts(struct an *an, struct an_comm *c, struct an_status *st)
{
	const struct an_rank *mj = NULL;
	uint32_t nk = 0, nmaj = 0, f;
	int32_t r, q, mfn = -1, xfn = -1;
	char va[32], vb[32];

	for (r = 0; r < c->nranks; r++) {
		uint32_t n = 0;

		if (!live(&c->r[r]) || c->r[r].dead || !c->r[r].nfn)
			continue;
		nk++;
		for (q = 0; q < c->nranks; q++)
			n += live(&c->r[q]) && !c->r[q].dead && c->r[q].nfn &&
			     same_counts(&c->r[r], &c->r[q]);
		if (n > nmaj) {
			nmaj = n;
			mj = &c->r[r];
		}
	}
	if (nk < 2 || !mj || 2 * nmaj <= nk || nmaj == nk)
		return false;
	for (r = 0; r < c->nranks; r++) {
		const struct an_rank *rk = &c->r[r];
		bool bad = false;

		if (!live(rk) || rk->dead || !rk->nfn || same_counts(rk, mj))
			continue;
		for (f = 0; f < rk->nfn && f < mj->nfn; f++) {
			if (launched_total(rk) == launched_total(mj) &&
			    rk->fn_launched[f] > mj->fn_launched[f])
				bad = true;
			else if (rk->fn_launched[f] && !mj->fn_launched[f] &&
				 waits_for_finished(c, r))
				bad = true;
			if (bad && xfn < 0)
				xfn = (int32_t)f;
		}
		if (bad)
			add_cul(an, st, r);
	}
	if (!st->ncul)
		return false;
	for (f = 0; f < mj->nfn; f++)
		if (mj->fn_launched[f] > c->r[st->cul[0]].fn_launched[f])
			mfn = (int32_t)f;
	st->cls = AN_H2;
	snprintf(va, sizeof(va), "%s", st->fn ? an_fn_name(st->fn) :
		 mfn >= 0 ? an_fn_name(loc_fn_of_nccl_func(mfn)) : "op");
	snprintf(vb, sizeof(vb), "%s", an_fn_name(loc_fn_of_nccl_func(xfn)));
	loc_rank_list(st, st->cul, st->ncul);
	an_text(st, " launched %" PRIu64 " %s in comm %016" PRIx64 " where the %u other rank%s"
		" launched %" PRIu64 " (NCCL's per-function counts, read from memory);"
		" they wait in %s seq %" PRId64, c->r[st->cul[0]].fn_launched[xfn],
		vb, c->hash, nmaj, nmaj == 1 ? "" : "s", mj->fn_launched[xfn], va, st->seq);
	an_val_s(st, "field", "type");
	an_val_s(st, "majority", va);
	an_val_s(st, "minority", vb);
	an_val_i(st, "majority_ranks", nmaj);
	an_val_i(st, "minority_ranks", st->ncul);
	an_val_s(st, "source", "memory");
	return true;
}

/*
 * H2: ranks that called another op than the others in the stuck round, by
 * their calls' signatures, else by the open op's arguments or the launch
 * counts their memory holds.
 */
bool loc_h2(struct an *an, struct an_comm *c, struct an_status *st)
{
	return check_h2(an, c, st) || check_h2_args(an, c, st) || check_h2_counts(an, c, st);
}
