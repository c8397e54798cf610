// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Locating one communicator's stall (DESIGN.md section 5, CCL-D Fig. 7):
 * the stuck round, then H1 (ranks that did not enter it), H2 (ranks whose
 * arguments differ), H3 (all entered and consistent: located from tier C/E
 * counters per Mycroft Table 4, else tier B, else every rank is listed).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "an_int.h"
#include <linux/types.h>
#include "ccld.h"
#include "hooks.h"
#include "names.h"

const char *an_fn_name(int fn)
{
	const char *s = hook_fn_name(fn);

	return s ? s : "op";
}

const char *an_dtype_name(int dtype, char *buf, size_t n)
{
	const char *s = dtype_name(dtype);

	if (s)
		return s;
	snprintf(buf, n, "type%d", dtype);
	return buf;
}

const char *an_redop_name(int redop, char *buf, size_t n)
{
	const char *s = redop_name(redop);

	if (s)
		return s;
	if (redop == 0xff)
		return "none";
	snprintf(buf, n, "op%d", redop);
	return buf;
}

static struct an_value *val_new(struct an_status *st, const char *key)
{
	struct an_value *v;

	if (st->nval >= AN_MAX_EVIDENCE)
		return NULL;
	v = &st->val[st->nval++];
	memset(v, 0, sizeof(*v));
	v->key = key;
	return v;
}

void an_val_i(struct an_status *st, const char *key, int64_t i)
{
	struct an_value *v = val_new(st, key);

	if (v)
		v->i = i;
}

void an_val_f(struct an_status *st, const char *key, double f)
{
	struct an_value *v = val_new(st, key);

	if (v) {
		v->is_float = true;
		v->f = f;
	}
}

void an_val_s(struct an_status *st, const char *key, const char *s)
{
	struct an_value *v = val_new(st, key);

	if (v) {
		v->is_str = true;
		snprintf(v->s, sizeof(v->s), "%s", s);
	}
}

static __attribute__((format(printf, 2, 3)))
void text(struct an_status *st, const char *fmt, ...)
{
	size_t n = strlen(st->text);
	va_list ap;

	if (n >= sizeof(st->text) - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(st->text + n, sizeof(st->text) - n, fmt, ap);
	va_end(ap);
}

static void add(struct an *an, int32_t **a, uint32_t *n, uint32_t *cap,
		int32_t rank)
{
	int32_t *p = an_grow(an, *a, cap, *n + 1, sizeof(**a));

	if (!p)
		return;
	*a = p;
	p[(*n)++] = rank;
}

static void add_cul(struct an *an, struct an_status *st, int32_t rank)
{
	add(an, &st->cul, &st->ncul, &st->cap_cul, rank);
}

static void add_wait(struct an *an, struct an_status *st, int32_t rank)
{
	add(an, &st->wait, &st->nwait, &st->cap_wait, rank);
}

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

/* age of T on HOST's clock */
static uint64_t age(const struct an *an, uint32_t host, uint64_t t)
{
	uint64_t now = host < an->nhosts ? an->hosts[host].now : 0;

	return now > t ? now - t : 0;
}

static bool live(const struct an_rank *r)
{
	return r->proc && !r->gone;
}

static bool proc_down(const struct an *an, const struct an_rank *r)
{
	const struct an_proc *p = an_proc_of(an, r);

	return p && p->state != AN_PROC_RUNNING;
}

/* "sleeping in pause()", "running", "in I/O (D) in fsync() [wchan]" */
static void thread_words(const struct an_thread *t, char *buf, size_t n)
{
	const char *sc = t->syscall >= 0 ? syscall_name(t->syscall) : NULL;
	const char *st = t->state == 'R' ? "running" : t->state == 'S' ? "sleeping" :
			 t->state == 'D' ? "blocked in I/O (D)" :
			 t->state == 'T' || t->state == 't' ? "stopped" : "in state";
	int k;

	k = snprintf(buf, n, "%s", st);
	if (t->state != 'R' && t->state != 'S' && t->state != 'D' && t->state != 'T' &&
	    t->state != 't' && k >= 0 && (size_t)k < n)
		k += snprintf(buf + k, n - (size_t)k, " %c", t->state);
	if (k >= 0 && (size_t)k < n && t->syscall >= 0) {
		if (sc)
			k += snprintf(buf + k, n - (size_t)k, " in %s()", sc);
		else
			k += snprintf(buf + k, n - (size_t)k, " in system call %d", t->syscall);
	}
	if (k >= 0 && (size_t)k < n && t->wchan[0] && t->state != 'R')
		snprintf(buf + k, n - (size_t)k, " [%s]", t->wchan);
}

/* the process's state, with its main thread as /proc last showed it */
static const char *proc_words(const struct an *an, const struct an_rank *r,
			      char *buf, size_t n)
{
	const struct an_proc *p = an_proc_of(an, r);
	char tw[96];

	if (p && p->state == AN_PROC_EXITED) {
		if (r->dead)
			snprintf(buf, n, "process %u exited before ccld attached: NCCL's peer"
				 " table names it", p->pid);
		else
			snprintf(buf, n, "process exited, status %d", p->exit_status);
		return buf;
	}
	if (p && p->state == AN_PROC_STOPPED)
		return "process stopped (state T)";
	if (!p || !p->has_main)
		return "process running";
	thread_words(&p->main_thread, tw, sizeof(tw));
	snprintf(buf, n, "process running; its main thread is %s%s", tw,
		 p->nthreads_d > (p->main_thread.state == 'D') ? ", another in I/O (D)" : "");
	return buf;
}

/* the culprit's main thread as evidence values (what /proc last showed) */
static void thread_vals(const struct an *an, const struct an_rank *r, struct an_status *st)
{
	const struct an_proc *p = an_proc_of(an, r);
	const char *sc;
	char s[2];

	if (!p || !p->has_main || p->state != AN_PROC_RUNNING)
		return;
	s[0] = p->main_thread.state;
	s[1] = '\0';
	an_val_s(st, "main_state", s);
	sc = p->main_thread.syscall >= 0 ? syscall_name(p->main_thread.syscall) : NULL;
	if (sc)
		an_val_s(st, "main_syscall", sc);
	else if (p->main_thread.syscall >= 0)
		an_val_i(st, "main_syscall", p->main_thread.syscall);
	if (p->main_thread.wchan[0] && p->main_thread.state != 'R')
		an_val_s(st, "main_wchan", p->main_thread.wchan);
}

static bool sig_eq(const struct an_sig *a, const struct an_sig *b)
{
	return a->fn == b->fn && a->count == b->count && a->dtype == b->dtype &&
	       a->redop == b->redop && a->root == b->root;
}

/* the first differing field, with both values as text (FR-style) */
static const char *sig_diff(const struct an_sig *a, const struct an_sig *b,
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

static uint64_t sig_bytes(const struct an_sig *s)
{
	size_t sz = dtype_size(s->dtype);

	return s->count * (sz ? sz : 1);
}

static void reset(struct an_status *st)
{
	st->strength = ST_NONE;
	st->barrier = st->p2p = false;
	st->seq = -1;
	st->fn = 0;
	st->cls = 0;
	st->ncul = st->nwait = 0;
	st->t4 = AN_T4_NONE;
	st->t4_remote = false;
	st->net_global = false;
	st->untouched = false;
	st->text[0] = '\0';
	st->nval = 0;
	st->max_call_age_ns = 0;
}

/* "ranks 1,2,3" or "rank 1" (the first few) */
static void rank_list(struct an_status *st, const int32_t *a, uint32_t n)
{
	uint32_t i;

	text(st, "%s ", n == 1 ? "rank" : "ranks");
	for (i = 0; i < n && i < 8; i++)
		text(st, "%s%d", i ? "," : "", a[i]);
	if (n > 8)
		text(st, ",... (%u)", n);
}

/* calls that never returned: evidence "blocked inside an NCCL call" */
static void blocked_inside(struct an *an, struct an_comm *c,
			   struct an_status *st)
{
	uint32_t n = 0;
	int32_t i;

	for (i = 0; i < c->nranks; i++) {
		struct an_rank *r = &c->r[i];
		uint64_t a;

		if (!live(r) || !r->in_call || r->call_seq != st->seq)
			continue;
		a = age(an, an_rank_host(an, r), r->call_ns);
		if (a > st->max_call_age_ns)
			st->max_call_age_ns = a;
		n++;
	}
	if (n) {
		text(st, "; %u rank%s blocked inside %s seq %" PRId64
		     ", a call that never returned (%.1f s)", n,
		     n == 1 ? "" : "s", an_fn_name(st->fn), st->seq,
		     secs(st->max_call_age_ns));
		an_val_i(st, "blocked_in_call", n);
	}
}

/* ---- H2: signatures of the ranks that entered round S ---------------- */

#define MAX_GROUPS 8

struct group {
	struct an_sig sig;
	uint32_t n;
	uint32_t seen;		/* in the ranks' history before S */
};

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
		const struct an_sig *s = &c->r[r].hist[st->seq % AN_HIST];

		/* launched as read from memory: its arguments are not known */
		if (!live(&c->r[r]) || s->seq != st->seq || (s->flags & SIG_MEM))
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
		const struct an_sig *s = &c->r[r].hist[st->seq % AN_HIST];

		if (!live(&c->r[r]) || s->seq != st->seq || (s->flags & SIG_MEM))
			continue;
		/* a true tie names both sides: never guess */
		if (tie || !sig_eq(s, &g[maj].sig))
			add_cul(an, st, r);
	}
	for (i = 0; i < ng && i == maj; i++)
		;
	field = sig_diff(&g[maj].sig, &g[i].sig, va, vb, sizeof(va));
	rank_list(st, st->cul, st->ncul);
	text(st, " called %s seq %" PRId64 " of comm %016" PRIx64
	     " with %s %s where %u rank%s used %s", an_fn_name(g[i].sig.fn),
	     st->seq, c->hash, field, vb, g[maj].n, g[maj].n == 1 ? "" : "s", va);
	if (tie)
		text(st, " (no majority, and neither was used before)");
	an_val_s(st, "field", field);
	an_val_s(st, "majority", va);
	an_val_s(st, "minority", vb);
	an_val_i(st, "majority_ranks", g[maj].n);
	an_val_i(st, "minority_ranks", st->ncul);
	return true;
}

/* ---- proxy ops read through NCCL's counters ----------------------------- */

/*
 * Where rank R's GPU is from its proxy (tier C/E), when NCCL's op counter
 * maps op ids to seqs (an_core.c: every collective of the comm had proxy
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

/* ncclFunc_t (proxy args, seqNumber[] index) -> enum ccld_fn */
static int fn_of_nccl_func(int f)
{
	static const int map[] = { CCLD_FN_BROADCAST, CCLD_FN_REDUCE, CCLD_FN_ALLGATHER,
				   CCLD_FN_REDUCESCATTER, CCLD_FN_ALLREDUCE };

	if (f >= 0 && f < (int)(sizeof(map) / sizeof(map[0])))
		return map[f];
	return f == 8 ? CCLD_FN_ALLTOALL : f == 9 ? CCLD_FN_SCATTER :
	       f == 10 ? CCLD_FN_GATHER : 0;
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
	/* bytes of its send / recv subs of the op; 0: no such sub open */
	uint64_t bytes[2];
};

/* rank RK's view of proxy op OP (tier E with arguments): false if none */
static bool rank_op_args(const struct an_rank *rk, uint64_t op, struct op_args *a)
{
	bool found = false;
	uint32_t i;

	memset(a, 0, sizeof(*a));
	for (i = 0; i < rk->nsubs; i++) {
		const struct an_progress *p = &rk->subs[i];

		if (p->op != op || !p->has_args)
			continue;
		a->coll = p->coll;
		a->dtype = p->dtype;
		a->redop = p->redop;
		a->bytes[p->dir] += p->nbytes;
		found = true;
	}
	return found;
}

static bool op_kind_eq(const struct op_args *a, const struct op_args *b)
{
	return a->coll == b->coll && a->dtype == b->dtype && a->redop == b->redop;
}

/*
 * In a symmetric collective every rank sends and receives as many bytes:
 * the value most ranks show for direction DIR (of those whose subs of that
 * direction are still open: a finished side leaves the proxy), and how
 * many show it; 0 when no value has a strict majority of two or more.
 */
static uint64_t majority_bytes(const struct an_comm *c, int dir, uint32_t *nmaj)
{
	struct op_args a, b;
	uint32_t best = 0, known = 0, n;
	uint64_t v = 0;
	int32_t r, q;

	for (r = 0; r < c->nranks; r++) {
		if (!live(&c->r[r]) || !rank_op_args(&c->r[r], c->st.open_op, &a) || !a.bytes[dir])
			continue;
		known++;
		for (n = 0, q = 0; q < c->nranks; q++)
			n += live(&c->r[q]) && rank_op_args(&c->r[q], c->st.open_op, &b) &&
			     b.bytes[dir] == a.bytes[dir];
		if (n > best) {
			best = n;
			v = a.bytes[dir];
		}
	}
	*nmaj = best;
	return best >= 2 && 2 * best > known ? v : 0;
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
	int32_t r;
	int dir;

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
		for (dir = 0; dir < 2 && !st->ncul; dir++) {
			if (!(mb = majority_bytes(c, dir, &nmaj)))
				continue;
			for (r = 0; r < c->nranks; r++)
				if (live(&c->r[r]) && rank_op_args(&c->r[r], c->st.open_op, &a) &&
				    a.bytes[dir] && a.bytes[dir] != mb) {
					add_cul(an, st, r);
					bad_bytes = a.bytes[dir];
				}
		}
		if (!st->ncul)
			return false;
		B = A;
		field = "count";
	} else {
		return false;
	}
	st->cls = AN_H2;
	st->fn = fn_of_nccl_func(A->coll);
	if (field) {
		snprintf(va, sizeof(va), "%" PRIu64 " bytes", mb);
		snprintf(vb, sizeof(vb), "%" PRIu64 " bytes", bad_bytes);
	} else if (A->coll != B->coll) {
		field = "type";
		snprintf(va, sizeof(va), "%s", an_fn_name(fn_of_nccl_func(A->coll)));
		snprintf(vb, sizeof(vb), "%s", an_fn_name(fn_of_nccl_func(B->coll)));
	} else if (A->dtype != B->dtype) {
		field = "dtype";
		snprintf(va, sizeof(va), "%s", an_dtype_name(A->dtype, t1, sizeof(t1)));
		snprintf(vb, sizeof(vb), "%s", an_dtype_name(B->dtype, t2, sizeof(t2)));
	} else {
		field = "redop";
		snprintf(va, sizeof(va), "%s", dev_redop_name(A->redop, t1, sizeof(t1)));
		snprintf(vb, sizeof(vb), "%s", dev_redop_name(B->redop, t2, sizeof(t2)));
	}
	rank_list(st, st->cul, st->ncul);
	text(st, ": %s seq %" PRId64 " of comm %016" PRIx64 " (proxy op 0x%" PRIx64
	     ", as its process's memory holds it) ", an_fn_name(fn_of_nccl_func(B->coll)),
	     st->seq, c->hash, c->st.open_op - 1);
	if (!strcmp(field, "count"))
		text(st, "moves %s where %u rank%s %s: another count", vb, nmaj,
		     nmaj == 1 ? " moves" : "s move", va);
	else
		text(st, "has %s %s where %u rank%s %s", field, vb, nmaj,
		     nmaj == 1 ? " has" : "s have", va);
	if (tie)
		text(st, " (no majority: all are listed)");
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
		 mfn >= 0 ? an_fn_name(fn_of_nccl_func(mfn)) : "op");
	snprintf(vb, sizeof(vb), "%s", an_fn_name(fn_of_nccl_func(xfn)));
	rank_list(st, st->cul, st->ncul);
	text(st, " launched %" PRIu64 " %s in comm %016" PRIx64 " where the %u other rank%s"
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

/* ---- H3 with tier C/E counters (Mycroft Table 4) ---------------------- */

enum sub_state { SS_FINISHED, SS_STARVING, SS_T4 };

static enum sub_state classify(const struct an_progress *p, enum an_t4 *t4)
{
	*t4 = AN_T4_NONE;
	if (p->nsteps && p->done >= p->nsteps)
		return SS_FINISHED;
	if (p->dir == AN_SEND) {
		if (!p->posted && !p->transmitted && !p->done)
			*t4 = AN_T4_NOT_STARTED;
		else if (p->posted > p->transmitted)
			*t4 = AN_T4_NOT_TRANSMITTED;
		else if (p->transmitted > p->done)
			*t4 = AN_T4_NOT_DELIVERED;
		else
			*t4 = AN_T4_GPU_NOT_READY;
		return SS_T4;
	}
	if (!p->posted && !p->received && !p->done) {
		*t4 = AN_T4_NOT_STARTED;
		return SS_T4;
	}
	if (p->received > p->done) {
		*t4 = AN_T4_GPU_NOT_READY;	/* data waits for the GPU */
		return SS_T4;
	}
	return SS_STARVING;	/* waiting for data from the peer */
}

static bool sub_current(const struct an_progress *p, int64_t seq)
{
	return p->seq < 0 || p->seq == seq;
}

/*
 * The rank's oldest proxy op with an unfinished sub (first seen first, then
 * the lower id): the one its GPU works on; 0 if none or ids are unknown.
 */
static uint64_t open_op(const struct an_rank *rk, uint64_t *t_first)
{
	uint64_t op = 0, tf = 0;
	uint32_t i;

	for (i = 0; i < rk->nsubs; i++) {
		const struct an_progress *p = &rk->subs[i];

		if (!p->op || (p->nsteps && p->done >= p->nsteps))
			continue;
		if (!op || p->t_first < tf || (p->t_first == tf && p->op < op)) {
			op = p->op;
			tf = p->t_first;
		}
	}
	if (t_first)
		*t_first = tf;
	return op;
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

/* the comm's oldest proxy op still open on some rank, 0 if none known */
static uint64_t comm_open_op(const struct an_comm *c)
{
	uint64_t best = 0, op;
	int32_t r;

	for (r = 0; r < c->nranks; r++)
		if (live(&c->r[r]) && (op = open_op(&c->r[r], NULL)) &&
		    (!best || op < best))
			best = op;
	return best;
}

/*
 * A sub that is evidence for the round SEQ of C: of the op the process's
 * GPU executes where that is known (an_detect.c: ops queued behind it are
 * not late, they wait their turn; a send not yet produced by a GPU that is
 * elsewhere is no network fault), else of the rank's oldest open op.
 */
static bool sub_live(const struct an *an, const struct an_comm *c,
		     const struct an_rank *rk, const struct an_progress *p,
		     int64_t seq)
{
	const struct an_proc *pr = an_proc_of(an, rk);
	uint64_t op;

	if (!sub_current(p, seq))
		return false;
	if (!p->op)
		return true;
	/* NCCL numbers a comm's ops alike on every rank: the oldest one open
	 * anywhere is the stuck one; later ones only queue behind it */
	if (p->op != c->st.open_op)
		return false;
	if (pr && pr->gpu_known && pr->gpu_comm)
		return pr->gpu_comm == c && pr->gpu_op == p->op;
	op = open_op(rk, NULL);
	return !op || p->op == op;
}

struct pick {
	int32_t rank;
	const struct an_progress *p;
	enum an_t4 t4;
	bool remote;
};

static void describe_sub(struct an_status *st, const struct pick *k)
{
	const struct an_progress *p = k->p;
	static const char *const cause[] = {
		[AN_T4_NOT_STARTED] = "not initialised or blocked",
		[AN_T4_NOT_TRANSMITTED] = "network/RDMA issue",
		[AN_T4_NOT_DELIVERED] = "network/RDMA issue",
		[AN_T4_GPU_NOT_READY] = "GPU issue",
	};
	static const char *const rcause[] = {
		[AN_T4_NOT_STARTED] = "the peer is blocked",
		[AN_T4_NOT_TRANSMITTED] = "network: the receiver is not ready",
		[AN_T4_NOT_DELIVERED] = "network: the receiver failed",
		[AN_T4_GPU_NOT_READY] = "GPU issue at the peer",
	};

	text(st, "rank %d channel %d %s peer %d: ", k->rank, p->channel,
	     p->dir == AN_SEND ? "send to" : "recv from", p->peer);
	if (p->dir == AN_SEND)
		text(st, "%" PRIu64 " steps ready from the GPU, %" PRIu64
		     " transmitted, %" PRIu64 " done", p->posted,
		     p->transmitted, p->done);
	else
		text(st, "%" PRIu64 " posted, %" PRIu64 " received, %" PRIu64
		     " consumed by the GPU", p->posted, p->received, p->done);
	if (p->nsteps)
		text(st, " of %" PRIu64, p->nsteps);
	text(st, ": %s (%s cause: %s)", an_t4_name(k->t4),
	     k->remote ? "remote" : "local",
	     k->remote ? rcause[k->t4] : cause[k->t4]);
	an_val_i(st, "channel", p->channel);
	an_val_i(st, "peer", p->peer);
	an_val_s(st, "dir", p->dir == AN_SEND ? "send" : "recv");
	an_val_i(st, "posted", (int64_t)p->posted);
	an_val_i(st, "transmitted", (int64_t)p->transmitted);
	an_val_i(st, "received", (int64_t)p->received);
	an_val_i(st, "done", (int64_t)p->done);
	an_val_i(st, "nsteps", (int64_t)p->nsteps);
	an_val_s(st, "state", an_t4_name(k->t4));
	an_val_s(st, "cause", k->remote ? "remote" : "local");
	st->t4 = k->t4;
	st->t4_remote = k->remote;
}

/* the peer's sub facing rank R in the other direction */
static const struct an_progress *peer_sub(struct an_comm *c, const struct an_progress *p,
					  int32_t r, enum an_dir dir, int64_t seq)
{
	struct an_rank *pr;
	uint32_t i;

	if (p->peer < 0 || p->peer >= c->nranks)
		return NULL;
	pr = &c->r[p->peer];
	for (i = 0; i < pr->nsubs; i++) {
		const struct an_progress *q = &pr->subs[i];

		/* the same op: NCCL numbers a comm's ops alike on every rank */
		if (q->peer == r && q->dir == dir && q->channel == p->channel &&
		    (p->op && q->op ? q->op == p->op : sub_current(q, seq)))
			return q;
	}
	return NULL;
}

/* rank R of C holds received data of the round that its GPU did not consume */
static bool holds_data(const struct an *an, const struct an_comm *c, int32_t r, int64_t seq)
{
	const struct an_rank *rk = &c->r[r];
	uint32_t i;

	for (i = 0; i < rk->nsubs; i++) {
		const struct an_progress *p = &rk->subs[i];
		enum an_t4 t4;

		if (p->dir == AN_RECV && sub_live(an, c, rk, p, seq) &&
		    classify(p, &t4) == SS_T4 && t4 == AN_T4_GPU_NOT_READY)
			return true;
	}
	return false;
}

/* Per-rank facts about its stuck flows, for locate_t4(). */
struct flow_facts {
	uint32_t ends;		/* stuck send flows (either end) it is an end of */
	bool not_delivered;	/* one of its sends left and never completed */
	bool gpu_recv;		/* data it received waits for its GPU */
	bool starving;		/* one of its recvs waits for a peer's data */
	bool lost;		/* data sent to it never arrived */
};

/*
 * A receive still waiting while the sender's side of the same op completed
 * (its send done, or the sender already on a later op of the comm, its
 * finished subs pruned): the data left and the receiver's network never
 * took it in.
 */
static bool lost_at_receiver(struct an_comm *c, int32_t r,
			     const struct an_progress *p, int64_t seq)
{
	const struct an_progress *sp = peer_sub(c, p, r, AN_SEND, seq);
	const struct an_rank *pr;
	uint32_t i;

	if (p->dir != AN_RECV || p->posted <= p->received)
		return false;
	if (sp)
		return sp->nsteps && sp->done >= sp->nsteps;
	if (!p->op || p->peer < 0 || p->peer >= c->nranks)
		return false;
	pr = &c->r[p->peer];
	for (i = 0; i < pr->nsubs; i++)
		if (pr->subs[i].op > p->op)
			return true;
	return false;
}

/* A send that left and never completed, its receiver waiting for it. */
static bool delivery_failed(struct an_comm *c, int32_t r, const struct an_progress *p,
			    int64_t seq)
{
	const struct an_progress *rp = peer_sub(c, p, r, AN_RECV, seq);

	return !rp || rp->posted > rp->received;
}

/*
 * Mycroft 5.2/5.3: the flows that fail to complete, aggregated per rank;
 * Table 4 names the state.  Network evidence (a send that left and was
 * never delivered) outranks GPU evidence, since a GPU blocked in a kernel
 * that waits for the network cannot consume other data either; a GPU
 * that holds received data and waits for nobody is the GPU culprit.
 * Between the two ends of stuck flows (a 2-rank comm has nothing else)
 * the rank whose own sends left and were never delivered is the cause.
 */
static bool locate_t4(struct an *an, struct an_comm *c, struct an_status *st)
{
	struct pick gpu = { .rank = -1 }, net = { .rank = -1 };
	struct pick least = { .rank = -1 }, quiet = { .rank = -1 };
	struct pick lost = { .rank = -1 };
	struct flow_facts *ff;
	uint32_t i, best = 0, nbest_nd = 0;
	double least_frac = 2;
	bool any = false, any_nd = false, gpu_idle = false, any_lost = false;
	int32_t r;

	ff = calloc((uint32_t)c->nranks, sizeof(*ff));
	if (!ff)
		return false;
	for (r = 0; r < c->nranks; r++) {
		struct an_rank *rk = &c->r[r];
		bool gpu_send = false;
		const struct an_progress *gs = NULL;

		for (i = 0; i < rk->nsubs; i++) {
			const struct an_progress *p = &rk->subs[i];
			enum an_t4 t4;
			enum sub_state ss;
			double frac;

			if (!sub_live(an, c, rk, p, st->seq))
				continue;
			any = true;
			ss = classify(p, &t4);
			if (ss == SS_FINISHED)
				continue;
			frac = p->nsteps ? (double)p->done / (double)p->nsteps :
					   1;
			if (frac < least_frac) {
				least_frac = frac;
				least = (struct pick){ r, p, t4 ? t4 :
						       AN_T4_NOT_DELIVERED,
						       ss == SS_STARVING };
			}
			if (ss == SS_STARVING) {
				ff[r].starving = true;
				if (lost_at_receiver(c, r, p, st->seq)) {
					ff[r].lost = any_lost = true;
					if (lost.rank < 0)
						lost = (struct pick){ r, p,
							AN_T4_NOT_DELIVERED, false };
				}
				continue;
			}
			if (p->dir == AN_RECV && t4 == AN_T4_GPU_NOT_READY)
				ff[r].gpu_recv = true;
			if (p->dir == AN_SEND && t4 == AN_T4_GPU_NOT_READY) {
				gpu_send = true;
				gs = p;
			}
			if (p->dir == AN_SEND && (t4 == AN_T4_NOT_TRANSMITTED ||
						  t4 == AN_T4_NOT_DELIVERED)) {
				ff[r].ends++;
				if (p->peer >= 0 && p->peer < c->nranks)
					ff[p->peer].ends++;
				if (t4 == AN_T4_NOT_DELIVERED &&
				    delivery_failed(c, r, p, st->seq)) {
					ff[r].not_delivered = true;
					any_nd = true;
				}
				if (net.rank < 0)
					net = (struct pick){ r, p, t4, false };
			}
		}
		if (gpu_send && !ff[r].starving && quiet.rank < 0)
			quiet = (struct pick){ r, gs, AN_T4_GPU_NOT_READY, false };
	}
	if (!any) {
		free(ff);
		return false;
	}
	/* a GPU holding received data and waiting for no one */
	for (r = 0; r < c->nranks && gpu.rank < 0; r++)
		if (ff[r].gpu_recv && !ff[r].starving)
			gpu_idle = true, gpu.rank = r;
	for (r = 0; r < c->nranks && gpu.rank < 0; r++)
		if (ff[r].gpu_recv)
			gpu.rank = r;
	if (gpu.rank >= 0) {
		for (i = 0; i < c->r[gpu.rank].nsubs; i++) {
			const struct an_progress *p = &c->r[gpu.rank].subs[i];
			enum an_t4 t4;

			if (sub_live(an, c, &c->r[gpu.rank], p, st->seq) &&
			    p->dir == AN_RECV &&
			    classify(p, &t4) == SS_T4 && t4 == AN_T4_GPU_NOT_READY) {
				gpu.p = p;
				gpu.t4 = t4;
				break;
			}
		}
	}
	st->cls = AN_H3;
	if (any_lost && !any_nd) {
		/* the sender is done, the receiver never got it */
		for (r = 0; r < c->nranks; r++)
			if (ff[r].lost)
				add_cul(an, st, r);
		describe_sub(st, &lost);
		text(st, "; rank %d's send of it completed: the data never"
		     " arrived", lost.p->peer);
	} else if (net.rank >= 0 && (any_nd || !gpu_idle)) {
		/* a faulty NIC is the common end of the stuck flows */
		for (r = 0; r < c->nranks; r++)
			if (ff[r].ends > best)
				best = ff[r].ends;
		for (r = 0; r < c->nranks; r++) {
			nbest_nd += ff[r].ends == best && ff[r].not_delivered;
		}
		if (best >= 2) {
			for (r = 0; r < c->nranks; r++)
				if (ff[r].ends == best &&
				    (!nbest_nd || ff[r].not_delivered))
					add_cul(an, st, r);
			/* describe the culprit's own stuck send, if it has one */
			for (i = 0; i < c->r[st->cul[0]].nsubs; i++) {
				const struct an_progress *p = &c->r[st->cul[0]].subs[i];
				enum an_t4 t4;

				if (sub_live(an, c, &c->r[st->cul[0]], p, st->seq) &&
				    p->dir == AN_SEND &&
				    classify(p, &t4) == SS_T4 &&
				    (t4 == AN_T4_NOT_TRANSMITTED ||
				     t4 == AN_T4_NOT_DELIVERED)) {
					net = (struct pick){ st->cul[0], p, t4,
							     false };
					if (t4 == AN_T4_NOT_DELIVERED)
						break;
				}
			}
			if (net.rank != st->cul[0])
				net.remote = true;
		} else {
			/* one flow: the receiver with no buffer posted is the cause */
			const struct an_progress *rp =
				peer_sub(c, net.p, net.rank, AN_RECV, st->seq);

			if (rp && rp->posted <= rp->received) {
				net.remote = true;
				add_cul(an, st, net.p->peer);
			} else {
				add_cul(an, st, net.rank);
			}
		}
		/*
		 * A culprit's own send that never left while data it received
		 * waits for its GPU: its network delivers; its GPU produced
		 * nothing (a GPU stalled in a kernel before this op).
		 */
		if (!net.remote && net.rank == (int32_t)st->cul[0] &&
		    net.t4 == AN_T4_NOT_TRANSMITTED && holds_data(an, c, net.rank, st->seq))
			net.t4 = AN_T4_GPU_NOT_READY;
		describe_sub(st, &net);
	} else if ((gpu.rank >= 0 && gpu.p) || quiet.rank >= 0) {
		struct pick *k = gpu.rank >= 0 && gpu.p ? &gpu : &quiet;

		add_cul(an, st, k->rank);
		describe_sub(st, k);
	} else {
		if (least.rank < 0) {
			free(ff);
			st->cls = 0;
			return false;
		}
		add_cul(an, st, least.rank);
		text(st, "least progress: ");
		describe_sub(st, &least);
	}
	free(ff);
	return true;
}

/*
 * The network-stuck send flows of C's stuck round: the sender's data is
 * ready from its GPU (or left) and did not complete, while the receiver has
 * a buffer posted and nothing arrived.  A rank that never posted its side
 * (it did not enter) is an H1 matter, not a network one.
 */
void an_stuck_flows(const struct an *an, struct an_comm *c, an_flow_fn fn,
		    void *ctx)
{
	int32_t q;
	uint32_t i;

	for (q = 0; q < c->nranks; q++)
		for (i = 0; i < c->r[q].nsubs; i++) {
			const struct an_progress *p = &c->r[q].subs[i], *rp;
			enum an_t4 t4;

			if (p->dir == AN_RECV && sub_live(an, c, &c->r[q], p, c->st.seq) &&
			    lost_at_receiver(c, q, p, c->st.seq)) {
				fn(ctx, c, q, p, AN_T4_NOT_DELIVERED);
				continue;
			}
			if (p->dir != AN_SEND || !sub_live(an, c, &c->r[q], p, c->st.seq) ||
			    classify(p, &t4) != SS_T4 ||
			    (t4 != AN_T4_NOT_TRANSMITTED && t4 != AN_T4_NOT_DELIVERED))
				continue;
			rp = peer_sub(c, p, q, AN_RECV, c->st.seq);
			if (rp && rp->posted > rp->received)
				fn(ctx, c, q, p, t4);
		}
}

/* entry of the rank's first call its GPU has not completed (tier B), 0 none */
static uint64_t first_incomplete_entry(const struct an_rank *rk)
{
	int64_t first = rk->completed + 1;
	const struct an_sig *sg = &rk->hist[(uint64_t)first % AN_HIST];
	uint64_t t = 0;
	uint32_t i;
	int d;

	if (first <= rk->entered && sg->seq == first)
		t = sg->t_enter;
	for (i = 0; i < rk->np2p; i++)
		for (d = 0; d < 2; d++)
			if (rk->p2p[i].n[d] > rk->p2p[i].ndone[d] &&
			    (!t || rk->p2p[i].t_enter[d] < t))
				t = rk->p2p[i].t_enter[d];
	return t;
}

/*
 * What rank R of C has pending, for its process's GPU position: the
 * oldest proxy op with an unfinished sub (AN_HOLD_OPEN, *OP, *T when it was
 * first seen); ops entered that the GPU did not complete while no tier C/E
 * data says which (AN_HOLD_UNKNOWN: an intra-node comm has no proxy ops;
 * *T the first one's entry); else AN_HOLD_NONE.
 */
/*
 * Rank RK's GPU evidently executes proxy op OP: it produced and sent all it
 * could (no send waits for its data), consumed all that came (no received
 * step waits for it), and waits for a peer's data.  A GPU elsewhere (queued
 * behind another op) or stalled leaves received data or unproduced sends.
 */
static bool gpu_in_op(const struct an_rank *rk, uint64_t op)
{
	bool starving = false;
	uint32_t i;

	for (i = 0; i < rk->nsubs; i++) {
		const struct an_progress *p = &rk->subs[i];

		if (p->op != op || (p->nsteps && p->done >= p->nsteps))
			continue;
		if (p->dir == AN_SEND && p->posted > p->transmitted)
			return false;
		if (p->dir == AN_RECV && p->received > p->done)
			return false;
		starving |= p->dir == AN_RECV && p->posted > p->received;
	}
	return starving;
}

enum an_hold an_rank_pending(const struct an_comm *c, int32_t r, uint64_t *op,
			     uint64_t *t)
{
	const struct an_rank *rk = &c->r[r];
	const struct an_sig *sg;
	int64_t first;

	*op = *t = 0;
	if (!live(rk))
		return AN_HOLD_NONE;
	if (rk->tierc) {
		uint32_t i;

		*op = open_op(rk, t);
		if (!*op)
			return AN_HOLD_NONE;
		for (i = 0; i < rk->nsubs; i++)
			if (rk->subs[i].op == *op && rk->subs[i].from_mem)
				break;
		if (i < rk->nsubs) {
			/*
			 * Known from memory only.  Ids of collectives and of p2p
			 * ops are two sequences: any open op whose flows show
			 * the GPU in it is where the GPU is.
			 */
			for (i = 0; i < rk->nsubs; i++)
				if (gpu_in_op(rk, rk->subs[i].op)) {
					*op = rk->subs[i].op;
					return AN_HOLD_MEM_AT;
				}
			return AN_HOLD_MEM;
		}
		/*
		 * The stream order is the order of the calls: the proxy threads
		 * of different comms pick their ops up in any order.  The entry
		 * of the first call the GPU has not completed (tier B; for p2p
		 * the latest send/recv entered per peer) stands for the open
		 * op; without either, its first sighting.
		 */
		{
			uint64_t te = first_incomplete_entry(rk);

			if (te)
				*t = te;
		}
		return AN_HOLD_OPEN;
	}
	if (rk->entered < 0 || (rk->tierb && rk->completed >= rk->entered))
		return AN_HOLD_NONE;
	first = rk->tierb ? rk->completed + 1 : rk->entered;
	sg = &rk->hist[(uint64_t)first % AN_HIST];
	if (sg->seq != first)
		sg = &rk->hist[(uint64_t)rk->entered % AN_HIST];
	*t = sg->t_enter ? sg->t_enter : 1;
	return AN_HOLD_UNKNOWN;
}

struct net_pick {
	int32_t r;
	struct pick own, into;
};

static void pick_net_flow(void *ctx, struct an_comm *c, int32_t sender,
			  const struct an_progress *p, enum an_t4 t4)
{
	struct net_pick *np = ctx;

	(void)c;
	if (sender == np->r && (!np->own.p || t4 == AN_T4_NOT_DELIVERED))
		np->own = (struct pick){ sender, p, t4, false };
	else if (p->dir == AN_SEND && p->peer == np->r && !np->into.p)
		np->into = (struct pick){ sender, p, t4, true };
}

/*
 * Rank R of C is the common end of stuck flows across the stalled comms
 * (an_detect.c): its network is the cause here too, whatever this comm's
 * own flows alone said.  Evidence: R's own send that left and never
 * arrived, else a flow into R that its network never let through.
 */
bool an_locate_net(struct an *an, struct an_comm *c, int32_t r,
		   uint32_t nflows, uint32_t ncomms)
{
	struct an_status *st = &c->st;
	struct net_pick np = { .r = r };
	const struct pick *k;

	an_stuck_flows(an, c, pick_net_flow, &np);
	k = np.own.p && (np.own.t4 == AN_T4_NOT_DELIVERED || !np.into.p) ?
		&np.own : &np.into;
	if (!k->p)
		return false;
	st->cls = AN_H3;
	st->ncul = 0;
	st->text[0] = '\0';
	st->nval = 0;
	add_cul(an, st, r);
	describe_sub(st, k);
	text(st, "; rank %d is an end of %u stuck flows in %u stalled comm%s:"
	     " the common end is the faulty network", r, nflows, ncomms,
	     ncomms == 1 ? "" : "s");
	if (k->remote)
		text(st, " (at the receiver, rank %d)", r);
	blocked_inside(an, c, st);
	an_val_i(st, "nranks", c->nranks);
	an_val_i(st, "net_flows", nflows);
	an_val_i(st, "net_comms", ncomms);
	st->net_global = true;
	return true;
}

/*
 * The stuck op moved on no rank at all: no send left a GPU, no data
 * arrived anywhere.  One faulty GPU or NIC stops the flows it is an end
 * of, not every flow of every rank: every GPU of the comm is elsewhere
 * (its stream holds an earlier op of another comm), and this comm only
 * queues behind that (an_detect.c does not let it block another comm).
 */
static bool untouched(const struct an *an, const struct an_comm *c,
		      const struct an_status *st)
{
	uint32_t i, nsubs = 0;
	int32_t r;

	for (r = 0; r < c->nranks; r++) {
		const struct an_rank *rk = &c->r[r];

		for (i = 0; live(rk) && i < rk->nsubs; i++) {
			const struct an_progress *p = &rk->subs[i];

			if (!sub_live(an, c, rk, p, st->seq))
				continue;
			if (p->transmitted || p->received || p->done)
				return false;
			nsubs++;
		}
	}
	return nsubs > 0;
}

/* ---- collectives ---------------------------------------------------- */

static void locate_coll(struct an *an, struct an_comm *c, struct an_status *st)
{
	int64_t lo = INT64_MAX, hi = -1, sb = INT64_MAX;
	bool known_all = true, in_call = false, incomplete = false, mem = false;
	uint32_t nlive = 0, down = 0;
	const struct an_sig *ref = NULL;
	const struct an_progress *args;
	char buf[160];
	int32_t i;

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
		st->fn = fn_of_nccl_func(args->coll);
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

	if (st->ncul) {
		struct an_rank *r = &c->r[st->cul[0]];

		st->cls = AN_H1;
		rank_list(st, st->cul, st->ncul);
		if (r->dead && r->entered < 0)
			text(st, " never entered %s seq %" PRId64 " of comm %016" PRIx64
			     " (%s)", an_fn_name(st->fn), st->seq, c->hash,
			     proc_words(an, r, buf, sizeof(buf)));
		else if (r->entered >= st->seq)
			text(st, " stopped in %s seq %" PRId64 " of comm %016"
			     PRIx64 " (%s)", an_fn_name(st->fn), st->seq,
			     c->hash, proc_words(an, r, buf, sizeof(buf)));
		else if (r->mem_only)
			text(st, " never entered %s seq %" PRId64 " of comm %016"
			     PRIx64 " (it launched up to seq %" PRId64 ", when is not"
			     " known; %s)", an_fn_name(st->fn), st->seq, c->hash,
			     r->entered, proc_words(an, r, buf, sizeof(buf)));
		else
			text(st, " never entered %s seq %" PRId64 " of comm %016"
			     PRIx64 " (last entered seq %" PRId64 ", %.1f s ago;"
			     " %s)", an_fn_name(st->fn), st->seq, c->hash,
			     r->entered, secs(age(an, an_rank_host(an, r),
						   r->last_ns)),
			     proc_words(an, r, buf, sizeof(buf)));
		text(st, "; %u of %d ranks wait in it", st->nwait, c->nranks);
		blocked_inside(an, c, st);
		an_val_i(st, "nranks", c->nranks);
		an_val_i(st, "entered", st->nwait);
		an_val_i(st, "culprit_seq", r->entered);
		thread_vals(an, r, st);
		return;
	}
	if (check_h2(an, c, st) || check_h2_args(an, c, st) || check_h2_counts(an, c, st)) {
		blocked_inside(an, c, st);
		return;
	}
	if (locate_t4(an, c, st)) {
		blocked_inside(an, c, st);
		an_val_i(st, "nranks", c->nranks);
		st->untouched = untouched(an, c, st);
		return;
	}
	st->cls = AN_H3;
	/* tier B: ranks whose GPU has not finished the round others finished */
	{
		uint32_t ndone = 0;

		for (i = 0; i < c->nranks; i++)
			if (live(&c->r[i]) && c->r[i].tierb &&
			    c->r[i].completed >= st->seq)
				ndone++;
		if (ndone) {
			for (i = 0; i < c->nranks; i++)
				if (live(&c->r[i]) && c->r[i].tierb &&
				    c->r[i].completed < st->seq)
					add_cul(an, st, i);
		}
		if (st->ncul) {
			rank_list(st, st->cul, st->ncul);
			text(st, ": the GPU has not completed %s seq %" PRId64
			     " of comm %016" PRIx64 ", which %u of %d ranks"
			     " completed (tier B)", an_fn_name(st->fn), st->seq,
			     c->hash, ndone, c->nranks);
			an_val_i(st, "completed_ranks", ndone);
			an_val_i(st, "culprit_completed",
				 c->r[st->cul[0]].completed);
			blocked_inside(an, c, st);
			an_val_i(st, "nranks", c->nranks);
			return;
		}
	}
	for (i = 0; i < (int32_t)st->nwait; i++)
		add_cul(an, st, st->wait[i]);
	text(st, "all %u ranks entered %s seq %" PRId64 " of comm %016" PRIx64
	     " with the same arguments; no progress data (tier B/C/E) tells"
	     " which one is stuck: all are listed", st->nwait,
	     an_fn_name(st->fn), st->seq, c->hash);
	blocked_inside(an, c, st);
	an_val_i(st, "nranks", c->nranks);
}

/* ---- p2p: sends of r to p pair with receives of p from r, in order ---- */

/* a send and the receive it pairs with agree: the same count and type */
static bool p2p_sig_eq(const struct an_sig *a, const struct an_sig *b)
{
	return a->count == b->count && a->dtype == b->dtype;
}

static const struct an_p2p *p2p_of(const struct an_rank *r, int32_t peer)
{
	uint32_t i;

	for (i = 0; i < r->np2p; i++)
		if (r->p2p[i].peer == peer)
			return &r->p2p[i];
	return NULL;
}

/*
 * p2p known only from a look at memory (the attach snapshot): no counter
 * of sends and receives exists, but ranks' proxies hold open p2p ops.  The
 * flows of the comm's oldest open op say who waits for whom (Table 4).
 */
static void locate_p2p_mem(struct an *an, struct an_comm *c, struct an_status *st)
{
	uint64_t op = c->st.open_op;
	int32_t r;
	uint32_t i;

	if (!op || an_coll_op(op))
		return;
	for (r = 0; r < c->nranks; r++) {
		const struct an_rank *rk = &c->r[r];
		bool open = false;

		for (i = 0; live(rk) && rk->mem_open && i < rk->nsubs; i++)
			open |= rk->subs[i].op == op && rk->subs[i].from_mem &&
				!(rk->subs[i].nsteps && rk->subs[i].done >= rk->subs[i].nsteps);
		if (open)
			add_wait(an, st, r);
	}
	if (!st->nwait)
		return;
	st->strength = ST_STRONG;
	st->p2p = true;
	st->seq = (int64_t)((op - 1) >> 1);
	st->fn = CCLD_FN_SEND;
	if (locate_t4(an, c, st)) {
		text(st, " (p2p op 0x%" PRIx64 " of comm %016" PRIx64 ", as memory holds it)",
		     op - 1, c->hash);
		st->untouched = untouched(an, c, st);
		return;
	}
	st->cls = AN_H3;
	for (i = 0; i < st->nwait; i++)
		add_cul(an, st, st->wait[i]);
	rank_list(st, st->cul, st->ncul);
	text(st, " hold p2p op 0x%" PRIx64 " of comm %016" PRIx64 " open (read from memory);"
	     " no progress data tells which one is stuck: all are listed", op - 1, c->hash);
}

static void locate_p2p(struct an *an, struct an_comm *c, struct an_status *st)
{
	int32_t i, wr = -1, cr = -1;
	const struct an_p2p *wp = NULL;
	int wd = 0;
	int64_t wseq = 0;
	uint32_t j;
	char buf[64];

	for (i = 0; i < c->nranks && wr < 0; i++) {
		const struct an_rank *r = &c->r[i];

		if (!live(r))
			continue;
		for (j = 0; j < r->np2p && wr < 0; j++) {
			const struct an_p2p *p = &r->p2p[j];
			const struct an_p2p *q;
			int d;

			if (p->peer < 0 || p->peer >= c->nranks)
				continue;
			q = p2p_of(&c->r[p->peer], i);
			for (d = 0; d < 2; d++) {
				int64_t theirs = q ? q->n[1 - d] : 0;

				/* in flight: unmatched, in the call, not completed
				 * by the GPU (tier B) or open at the proxy (tier C) */
				if (p->n[d] > theirs ||
				    (p->n[d] && p->nret[d] < p->n[d]) ||
				    (r->tierb && p->ndone[d] < p->n[d]) ||
				    (!r->tierb && p->n[d] && open_op(r, NULL))) {
					wr = i;
					wp = p;
					wd = d;
					wseq = p->n[d] > theirs ? theirs :
					       p->n[d] - 1;
					cr = p->peer;
					break;
				}
			}
		}
	}
	if (wr < 0) {
		locate_p2p_mem(an, c, st);
		return;
	}
	st->strength = ST_STRONG;
	st->p2p = true;
	st->seq = wseq;
	st->fn = wd ? CCLD_FN_RECV : CCLD_FN_SEND;
	add_wait(an, st, wr);
	{
		const struct an_p2p *q = p2p_of(&c->r[cr], wr);
		int64_t theirs = q ? q->n[1 - wd] : 0;
		const struct an_rank *pr = &c->r[cr];

		if (theirs <= wseq || proc_down(an, pr)) {
			st->cls = AN_H1;
			add_cul(an, st, cr);
			text(st, "rank %d never entered the %s matching rank %d's"
			     " %s seq %" PRId64 " on comm %016" PRIx64 " (%s)",
			     cr, wd ? "Send" : "Recv", wr, an_fn_name(st->fn),
			     wseq, c->hash, proc_words(an, pr, buf, sizeof(buf)));
		} else if (!p2p_sig_eq(&wp->last[wd], &q->last[1 - wd]) &&
			   wp->last[wd].seq == wseq &&
			   q->last[1 - wd].seq == wseq) {
			char va[32], vb[32];
			struct an_sig mine = wp->last[wd];
			const char *f;

			mine.fn = q->last[1 - wd].fn;	/* Send pairs with Recv */
			f = sig_diff(&mine, &q->last[1 - wd], va, vb, sizeof(va));

			st->cls = AN_H2;
			add_cul(an, st, cr < wr ? cr : wr);
			add_cul(an, st, cr < wr ? wr : cr);
			text(st, "rank %d %s seq %" PRId64 " has %s %s, its peer"
			     " rank %d has %s", wr, an_fn_name(st->fn), wseq,
			     f, va, cr, vb);
			an_val_s(st, "field", f);
			an_val_s(st, "majority", va);
			an_val_s(st, "minority", vb);
		} else if (add_wait(an, st, cr), !locate_t4(an, c, st)) {
			st->cls = AN_H3;
			add_cul(an, st, cr < wr ? cr : wr);
			add_cul(an, st, cr < wr ? wr : cr);
			text(st, "ranks %d and %d entered matching %s/%s seq %"
			     PRId64 " on comm %016" PRIx64 "; no progress data"
			     " tells which one is stuck", wr, cr,
			     an_fn_name(st->fn), wd ? "Send" : "Recv", wseq,
			     c->hash);
		}
	}
	an_val_i(st, "peer", cr);
	if (c->r[wr].in_call || wp->nret[wd] < wp->n[wd]) {
		uint64_t a = age(an, an_rank_host(an, &c->r[wr]),
				 wp->t_enter[wd]);

		st->max_call_age_ns = a;
		text(st, "; rank %d is blocked inside %s, a call that never"
		     " returned (%.1f s)", wr, an_fn_name(st->fn), secs(a));
		an_val_i(st, "blocked_in_call", 1);
	}
}

static bool has_val(const struct an_status *st, const char *key)
{
	uint32_t i;

	for (i = 0; i < st->nval; i++)
		if (!strcmp(st->val[i].key, key))
			return true;
	return false;
}

/*
 * Says where the picture is partial: ranks of the comm no traced process
 * holds (never named: their state is unknown), and ranks whose state
 * comes from memory read at attach (what they did before is not known).
 */
static void what_is_not_known(const struct an_comm *c, struct an_status *st)
{
	int32_t r, miss[8];
	uint32_t nmiss = 0, k;
	bool mem = false;

	for (r = 0; r < c->nranks; r++) {
		if (!c->r[r].proc) {
			if (nmiss < 8)
				miss[nmiss] = r;
			nmiss++;
		}
		mem |= live(&c->r[r]) && (c->r[r].mem_only || c->r[r].dead);
	}
	if (nmiss) {
		text(st, "; %u of %d ranks are not traced (%s ", nmiss, c->nranks,
		     nmiss == 1 ? "rank" : "ranks");
		for (k = 0; k < nmiss && k < 8; k++)
			text(st, "%s%d", k ? "," : "", miss[k]);
		text(st, "%s): their state is unknown", nmiss > 8 ? ",..." : "");
		an_val_i(st, "untraced", nmiss);
	}
	if (mem && !has_val(st, "source")) {
		text(st, "; state read from memory at attach");
		an_val_s(st, "source", "memory");
	}
}

void an_locate(struct an *an, struct an_comm *c)
{
	struct an_status *st = &c->st;
	enum an_strength coll;

	an->stats.analyses++;
	c->analyzed = c->version;
	c->gpu_gen = an->gpu_gen;
	reset(st);
	st->open_op = comm_open_op(c);
	locate_coll(an, c, st);
	if (st->strength != ST_STRONG) {
		coll = st->strength;
		reset(st);
		locate_p2p(an, c, st);
		if (st->strength != ST_STRONG) {
			/* a weak collective picture (only the long threshold applies) */
			reset(st);
			if (coll != ST_NONE)
				locate_coll(an, c, st);
		}
	}
	if (st->cls)
		what_is_not_known(c, st);
}
