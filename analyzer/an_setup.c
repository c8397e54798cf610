// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Hangs outside the ops: in communicator setup and teardown.  Every rank of
 * a new communicator calls ncclCommInitRank* with the same unique id and
 * none returns before all of them arrived (NCCL's bootstrap), so a rank
 * that never calls it holds the others inside: an H1 at init naming the
 * missing ranks (from nranks and the ranks that arrived) and, where the
 * launcher's global ranks tell, its process and what it is doing.  All
 * inside and none back for the stall time: a bootstrap that does not
 * complete (H3, all listed).  ncclCommSplit is the same on the parent
 * comm: every rank of it calls its k-th split with the others' k-th, and
 * none returns before all arrived (NCCL's allgather of colors and keys on
 * the parent), so a rank that never calls it is named the same way, its
 * process known from the parent's ranks.  A rank inside ncclCommFinalize,
 * Destroy or Abort for the stall time is stuck there (H3, naming it).  A
 * call that returns after its verdict gives a recovery.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "an_config.h"
#include "an_int.h"
#include "an_locate_int.h"

#define SETUP_MAX_RANKS	(1 << 20)

enum member_st { M_ABSENT = 0, M_INSIDE, M_RETURNED };

struct setup_member {
	uint32_t host, pid;
	uint64_t t;		/* entered, on its host's clock */
	uint8_t st;		/* enum member_st */
};

struct an_setup_grp {
	uint64_t group;
	uint64_t comm;		/* split: the parent comm */
	enum an_setup_kind kind;
	int fn;
	int32_t nranks;
	char name[AN_LABEL_MAX];	/* the name the calls' configs give the comm ... */
	bool names_differ;	/* ... "" where two differ */
	struct setup_member *m;
	uint32_t nseen, nin, nret;
	uint32_t last_host;	/* the latest entry, on this host's clock */
	uint64_t last_t;
	bool said;
	bool suspected;	/* the caller was asked to look at its processes */
	bool before;	/* a rank was found inside when ccld attached: waits are bounds */
};

static struct hkey grp_key(uint64_t group, enum an_setup_kind kind)
{
	return hkey3(group, (uint64_t)kind, 0);
}

uint64_t an_setup_split_group(uint64_t parent, uint32_t index)
{
	/* splitmix64's finalizer: the same on every node */
	uint64_t z = parent + 0x9e3779b97f4a7c15ull * ((uint64_t)index + 1);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* init and split: no rank returns before all arrived (teardown: each alone) */
static bool all_arrive(const struct an_setup_grp *g)
{
	return g->kind != AN_SETUP_TEARDOWN;
}

/*
 * Asks the caller (ON) to look at G's processes again each tick, their
 * threads above all (the missing rank's too, where known), so that the
 * verdict says what they do now; or (off) to stop.
 */
static const struct an_proc **rank_procs(const struct an *an, const struct an_setup_grp *g);

static void suspect(struct an *an, struct an_setup_grp *g, bool on)
{
	const struct an_proc **by_rank = NULL;
	struct an_culprit *procs;
	struct an_suspect sp = { .on = on, .comm = g->group };
	int32_t r;

	g->suspected = on;
	if (!an->sink.suspect)
		return;
	procs = calloc((size_t)g->nranks, sizeof(*procs));
	if (!procs)
		return;
	if (on && all_arrive(g))
		by_rank = rank_procs(an, g);
	for (r = 0; on && r < g->nranks; r++) {
		const struct an_proc *p = by_rank ? by_rank[r] : NULL;

		if (g->m[r].st == M_INSIDE)
			procs[sp.nprocs++] = (struct an_culprit){ r, g->m[r].host, g->m[r].pid };
		else if (g->m[r].st == M_ABSENT && p)
			procs[sp.nprocs++] = (struct an_culprit){ r, p->host, p->pid };
	}
	sp.procs = procs;
	an->sink.suspect(an->sink.ctx, &sp);
	free(by_rank);
	free(procs);
}

static void grp_free(struct an_setup_grp *g)
{
	free(g->m);
	free(g);
}

void an_setup_free(struct an *an)
{
	struct hkey k;
	size_t it;
	void *v;

	for (it = 0; hmap_next(&an->setups, &it, &k, &v);)
		grp_free(v);
	hmap_free(&an->setups);
}

static struct an_setup_grp *grp_get(struct an *an, const struct an_setup *s)
{
	struct hkey k = grp_key(s->group, s->kind);
	struct an_setup_grp *g = hmap_get(&an->setups, k);

	if (g)
		return g->nranks == s->nranks ? g : NULL;
	if (s->returned)
		return NULL;	/* its entry was not seen: nothing to follow */
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->m = calloc((size_t)s->nranks, sizeof(*g->m));
	if (!g->m || hmap_put(&an->setups, k, g)) {
		grp_free(g);
		return NULL;
	}
	g->group = s->group;
	g->comm = s->comm;
	g->kind = s->kind;
	g->fn = s->fn;
	g->nranks = s->nranks;
	return g;
}

/* "CommInitRank*" for an init whose variant is not known (read in memory) */
static const char *grp_fn(const struct an_setup_grp *g)
{
	return g->kind == AN_SETUP_INIT && !g->fn ? "CommInitRank*" : an_fn_name(g->fn);
}

/* " or more" where G's waits count from the attach, not from the entries */
static const char *or_more(const struct an_setup_grp *g)
{
	return g->before ? " or more (inside it when ccld attached)" : "";
}

/*
 * V framed as a verdict of class CLS on G (seq -1; a split's on its parent
 * comm), its onset G's latest entry
 */
static void setup_verdict_base(struct an_verdict *v, const struct an_setup_grp *g,
			       enum an_class cls, uint32_t host, uint64_t now)
{
	an_verdict_root(v, cls, g->kind == AN_SETUP_SPLIT ? g->comm : g->group, -1, g->fn,
			host, now);
	if (g->last_host == host)
		v->onset_ns = g->last_t;
}

/* the ranks of G in state ST as "0,2,4-7" into OUT; how many */
static uint32_t ranks_in(const struct an_setup_grp *g, uint8_t st, char *out, size_t len)
{
	int32_t *r = malloc(sizeof(*r) * (size_t)g->nranks), i;
	uint32_t n = 0;

	out[0] = '\0';
	if (!r)
		return 0;
	for (i = 0; i < g->nranks; i++)
		if (g->m[i].st == st)
			r[n++] = i;
	an_rank_list(r, n, out, len);
	free(r);
	return n;
}

/*
 * The process of each rank R of G, by rank (NULL where none), or NULL
 * without memory.  An init's: where every rank that arrived has the
 * launcher's global rank R (its label) as its R, the first live process
 * labelled R; else none (the ranks of a sub-communicator are not the job's
 * global ranks).  A split's: the parent comm's rank R, where known.  One
 * pass over the ranks and one over the processes: a comm may have 2^20.
 */
static const struct an_proc **rank_procs(const struct an *an, const struct an_setup_grp *g)
{
	const struct an_proc **by_rank = calloc((size_t)g->nranks, sizeof(*by_rank));
	const struct an_comm *c;
	char want[16];
	int32_t i;
	uint32_t k;

	if (!by_rank)
		return NULL;
	if (g->kind == AN_SETUP_SPLIT) {
		c = hmap_get(&an->comms, hkey3(g->comm, 0, 0));
		for (i = 0; c && i < g->nranks && i < c->nranks; i++)
			by_rank[i] = an_proc_of(an, &c->r[i]);
		return by_rank;
	}
	for (i = 0; i < g->nranks; i++) {
		const struct an_proc *p;

		if (g->m[i].st == M_ABSENT)
			continue;
		p = an_proc_find(an, g->m[i].host, g->m[i].pid);
		snprintf(want, sizeof(want), "%d", i);
		if (!p || strcmp(p->label[AN_LABEL_RANK - 1], want))
			return by_rank;
	}
	for (k = 0; k < an->nprocs; k++) {
		const struct an_proc *p = &an->procs[k];
		const char *label = p->label[AN_LABEL_RANK - 1];
		char *end;
		long r;

		if (!p->pid || p->state == AN_PROC_EXITED || !label[0])
			continue;
		r = strtol(label, &end, 10);
		/* "R" exactly as %d writes it: not "07", "+7" or " 7" */
		if (*end || r < 0 || r >= g->nranks || by_rank[r])
			continue;
		snprintf(want, sizeof(want), "%ld", r);
		if (!strcmp(label, want))
			by_rank[r] = p;
	}
	return by_rank;
}

/* H1: ranks of an init never called it; the others wait inside */
static void init_missing(struct an *an, const struct an_setup_grp *g, uint32_t host,
			 uint64_t now)
{
	const struct an_proc **by_rank = rank_procs(an, g);
	struct an_verdict *v = &an->tmp;
	char missing[256], in[256], doing[LOC_PROC_WORDS_MAX];
	uint32_t nmiss;
	int32_t r;
	bool told = false;

	setup_verdict_base(v, g, AN_H1, host, now);
	nmiss = ranks_in(g, M_ABSENT, missing, sizeof(missing));
	ranks_in(g, M_INSIDE, in, sizeof(in));
	an_text(v, "rank%s %s of the %d ranks", nmiss > 1 ? "s" : "", missing, g->nranks);
	if (g->kind == AN_SETUP_SPLIT)
		an_text(v, " of comm %016" PRIx64, g->comm);
	an_text(v, " never called nccl%s%s%s%s", grp_fn(g), g->name[0] ? " (\"" : "",
		g->name, g->name[0] ? "\")" : "");
	if (g->kind == AN_SETUP_INIT)
		an_text(v, " for unique id %016" PRIx64, g->group);
	an_text(v, "; rank%s %s wait%s inside it for %.1f s%s", g->nin > 1 ? "s" : "", in,
		g->nin > 1 ? "" : "s", (double)(now - g->last_t) / 1e9, or_more(g));
	for (r = 0; r < g->nranks; r++) {
		const struct an_proc *p;

		if (g->m[r].st != M_ABSENT)
			continue;
		/* one that came and exited inside (an_setup_clock) keeps its pid */
		if (g->m[r].pid)
			p = an_proc_find(an, g->m[r].host, g->m[r].pid);
		else
			p = by_rank ? by_rank[r] : NULL;
		if (v->ncul < AN_MAX_CULPRITS)
			v->cul[v->ncul++] = (struct an_culprit){ r, p ? p->host : host,
								  p ? p->pid : 0 };
		v->ncul_total++;
		if (p && !told) {
			struct an_rank tmp = { .proc = (uint32_t)(p - an->procs) + 1 };

			if (g->m[r].pid)
				an_text(v, "; rank %d (pid %u) entered it and its %s", r, p->pid,
					loc_proc_words(an, &tmp, doing, sizeof(doing)));
			else if (g->kind == AN_SETUP_SPLIT)
				an_text(v, "; rank %d of comm %016" PRIx64 " is pid %u: %s", r,
					g->comm, p->pid,
					loc_proc_words(an, &tmp, doing, sizeof(doing)));
			else
				an_text(v, "; rank %d is global rank %d, pid %u: %s", r, r, p->pid,
					loc_proc_words(an, &tmp, doing, sizeof(doing)));
			told = true;
		}
	}
	if (!told && g->kind == AN_SETUP_SPLIT)
		an_text(v, "; no traced process is known as rank %d of comm %016" PRIx64,
			v->cul[0].rank, g->comm);
	else if (!told)
		an_text(v, "; no traced process is known as rank %d (not traced, or the"
			" launcher's ranks are not this comm's)", v->cul[0].rank);
	free(by_rank);
	an_val_i(v, "nranks", g->nranks);
	an_val_i(v, "arrived", g->nseen);
	an_emit(an, v);
}

/* H3: the ranks inside G's call for the stall time (init: all of them) */
static void stuck_inside(struct an *an, const struct an_setup_grp *g, uint32_t host,
			 uint64_t now, uint64_t stall_ns)
{
	struct an_verdict *v = &an->tmp;
	char in[256];
	uint32_t nin;
	int32_t r;

	setup_verdict_base(v, g, AN_H3, host, now);
	nin = ranks_in(g, M_INSIDE, in, sizeof(in));
	for (r = 0; r < g->nranks; r++) {
		if (g->m[r].st != M_INSIDE)
			continue;
		if (v->ncul < AN_MAX_CULPRITS)
			v->cul[v->ncul++] = (struct an_culprit){ r, g->m[r].host, g->m[r].pid };
		v->ncul_total++;
	}
	if (g->kind == AN_SETUP_INIT)
		an_text(v, "all %d ranks entered nccl%s%s%s%s for unique id %016" PRIx64 " and"
			" none returned in %.1f s%s: NCCL's bootstrap does not complete (its"
			" network, or a rank of another job with the same id)", g->nranks,
			grp_fn(g), g->name[0] ? " (\"" : "", g->name,
			g->name[0] ? "\")" : "", g->group, (double)(now - g->last_t) / 1e9,
			or_more(g));
	else if (g->kind == AN_SETUP_SPLIT)
		an_text(v, "all %d ranks of comm %016" PRIx64 " entered nccl%s%s%s%s and none"
			" returned in %.1f s: the split's exchange on the parent comm does not"
			" complete", g->nranks, g->comm, an_fn_name(g->fn),
			g->name[0] ? " (\"" : "", g->name, g->name[0] ? "\")" : "",
			(double)(now - g->last_t) / 1e9);
	else
		an_text(v, "rank%s %s of comm %016" PRIx64 " %s inside nccl%s for %.1f s or"
			" more: the teardown does not complete (an op in flight toward a"
			" peer that is gone?)", nin > 1 ? "s" : "", in, g->group,
			nin > 1 ? "are" : "is", an_fn_name(g->fn), (double)stall_ns / 1e9);
	an_val_i(v, "nranks", g->nranks);
	an_emit(an, v);
}

void an_setup_call(struct an *an, uint32_t host, const struct an_setup *s, uint64_t t_ns)
{
	struct an_setup_grp *g;
	struct setup_member *m;

	an->stats.records++;
	if (host >= an->nhosts || s->nranks < 1 || s->nranks > SETUP_MAX_RANKS ||
	    s->rank < 0 || s->rank >= s->nranks ||
	    (s->kind != AN_SETUP_INIT && s->kind != AN_SETUP_TEARDOWN &&
	     (s->kind != AN_SETUP_SPLIT || !s->comm))) {
		an->stats.rejected++;
		return;
	}
	g = grp_get(an, s);
	if (!g)
		return;
	m = &g->m[s->rank];
	/* a split's ranks may name their new comms apart ("tp0", "tp1"): one, or none */
	if (s->name[0] && !g->names_differ) {
		char name[AN_LABEL_MAX];

		an_label_copy(name, sizeof(name), s->name, sizeof(s->name));
		if (!g->name[0]) {
			memcpy(g->name, name, sizeof(name));
		} else if (strcmp(g->name, name)) {
			g->names_differ = true;
			g->name[0] = '\0';
		}
	}
	if (!s->returned) {
		/* known from now on: its exit (inside the call) is followed */
		an_proc_add(an, host, s->pid);
		if (m->st == M_ABSENT)
			g->nseen++;
		else if (m->st == M_RETURNED)
			g->nret--;
		else
			g->nin--;
		*m = (struct setup_member){ host, s->pid, t_ns, M_INSIDE };
		g->nin++;
		g->before |= s->before;
		if (!g->fn)
			g->fn = s->fn;	/* a rank seen entering names the variant */
		g->last_host = host;
		g->last_t = t_ns;
		return;
	}
	if (m->st != M_INSIDE)
		return;
	m->st = M_RETURNED;
	g->nin--;
	g->nret++;
	if (g->nin)
		return;
	if (g->said) {
		struct an_verdict *v = &an->tmp;

		setup_verdict_base(v, g, all_arrive(g) && g->nseen < (uint32_t)g->nranks ?
				   AN_H1 : AN_H3, host, t_ns);
		v->kind = AN_V_RECOVERED;
		an_text(v, "nccl%s returned on every rank that was inside", grp_fn(g));
		an_emit(an, v);
	}
	/* all that came are back: a later entry starts afresh */
	if (g->suspected)
		suspect(an, g, false);
	hmap_del(&an->setups, grp_key(g->group, g->kind));
	grp_free(g);
}

/*
 * Members whose process exited inside the call: at init it never comes
 * back (absent again, its pid kept for the verdict); at teardown it is done
 * with the comm.  False when nobody is inside any more (G freed).
 */
static bool drop_exited(struct an *an, struct an_setup_grp *g)
{
	int32_t r;

	for (r = 0; r < g->nranks; r++) {
		struct setup_member *m = &g->m[r];
		const struct an_proc *p;

		if (m->st != M_INSIDE)
			continue;
		p = an_proc_find(an, m->host, m->pid);
		if (!p || p->state != AN_PROC_EXITED)
			continue;
		g->nin--;
		if (all_arrive(g)) {
			m->st = M_ABSENT;
			g->nseen--;
		} else {
			m->st = M_RETURNED;
			g->nret++;
		}
	}
	if (g->nin || g->said)
		return true;
	if (g->suspected)
		suspect(an, g, false);
	hmap_del(&an->setups, grp_key(g->group, g->kind));
	grp_free(g);
	return false;
}

void an_setup_clock(struct an *an, uint32_t host, uint64_t now_ns)
{
	uint64_t stall = (uint64_t)(an->cfg.stall_s * 1e9);
	uint64_t look = (uint64_t)(an_config_suspect_s(&an->cfg) * 1e9);
	struct hkey k;
	size_t it;
	void *v;

	(void)now_ns;
	for (it = 0; hmap_next(&an->setups, &it, &k, &v);) {
		struct an_setup_grp *g = v;
		uint64_t now = an->hosts[g->last_host].now;

		if (g->last_host != host || !drop_exited(an, g))
			continue;

		if (g->said || !g->nin || (all_arrive(g) && g->nret))
			continue;	/* init: a rank got through, it is no bootstrap hang */
		/* judged on the clock of the host of its latest entry */
		if (!g->suspected && now >= g->last_t + look)
			suspect(an, g, true);
		if (now < g->last_t + stall)
			continue;
		g->said = true;
		if (all_arrive(g) && g->nseen < (uint32_t)g->nranks)
			init_missing(an, g, host, now);
		else
			stuck_inside(an, g, host, now, now - g->last_t);
		suspect(an, g, false);
	}
}
