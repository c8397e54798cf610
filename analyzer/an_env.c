// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Mismatched environments: the ranks of one communicator should run the
 * same NCCL library and the same NCCL_* settings.  NCCL checks only its
 * version number at init; two builds of one version (another CUDA, another
 * container image) or ranks that disagree on NCCL_ALGO, NCCL_PROTO,
 * NCCL_BUFFSIZE... pass init and then hang or slow the job.  The tracer
 * sends each process's library ("VERSION BUILD-ID") and NCCL_* variables
 * as labels; a comm whose ranks run different libraries gets an ENV
 * verdict of its own, and any verdict on a comm cites the differences.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "an_int.h"

/* variables that differ between hosts or processes by design: not compared */
static const char *const per_process[] = {
	"NCCL_HOSTID", "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_COMM_ID",
	"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE", "NCCL_DEBUG_TIMESTAMP_FORMAT",
	"NCCL_DEBUG_TIMESTAMP_LEVELS", "NCCL_TOPO_FILE", "NCCL_TOPO_DUMP_FILE",
	"NCCL_GRAPH_DUMP_FILE", NULL,
};

#define MAX_GROUPS	4	/* values listed per difference */
#define MAX_CITED	3	/* variables cited per verdict */

/* the value of process P's variable NAME (NLEN bytes), "" when unset */
static const char *env_value(const struct an_proc *p, const char *name, size_t nlen)
{
	uint32_t i;

	for (i = 0; i < p->nenv; i++)
		if (!strncmp(p->env[i], name, nlen) && p->env[i][nlen] == '=')
			return p->env[i] + nlen + 1;
	return "";
}

void an_env_set(struct an *an, struct an_proc *p, const char *name_value)
{
	const char *eq = strchr(name_value, '=');
	size_t nlen = eq ? (size_t)(eq - name_value) : 0;
	uint32_t i;

	if (!nlen || strncmp(name_value, "NCCL_", 5)) {
		an->stats.rejected++;
		return;
	}
	for (i = 0; i < p->nenv; i++)
		if (!strncmp(p->env[i], name_value, nlen + 1))
			break;
	if (i == AN_ENV_MAX)
		return;		/* the tracer sends at most as many */
	snprintf(p->env[i], AN_LABEL_MAX, "%s", name_value);
	if (i == p->nenv)
		p->nenv++;
}

/* the comm's ranks whose process's library is known: ranks into R, procs into P */
static uint32_t known_ranks(const struct an *an, const struct an_comm *c, int32_t *r,
			    const struct an_proc **p)
{
	uint32_t n = 0;
	int32_t i;

	for (i = 0; i < c->nranks; i++) {
		const struct an_proc *q = an_proc_of(an, &c->r[i]);

		if (q && q->label[AN_LABEL_NCCL_LIB - 1][0]) {
			r[n] = i;
			p[n++] = q;
		}
	}
	return n;
}

struct group {
	const char *value;
	int32_t *ranks;
	uint32_t n;
};

/*
 * Groups the N ranks R by VALUE_OF(P[i]) into G (at most MAX_GROUPS, the
 * rest in the last); largest first.  Returns the number of groups.
 */
static uint32_t group_by(const int32_t *r, const struct an_proc *const *p, uint32_t n,
			 const char *(*value_of)(const struct an_proc *, const void *),
			 const void *arg, struct group *g, int32_t *store)
{
	uint32_t ng = 0, i, k;

	for (i = 0; i < n; i++) {
		const char *v = value_of(p[i], arg);

		for (k = 0; k < ng && strcmp(g[k].value, v); k++)
			;
		if (k == ng && ng == MAX_GROUPS) {
			k = ng - 1;	/* more values than listed: the last says so */
			g[k].value = "other values";
		} else if (k == ng) {
			g[ng++] = (struct group){ v, store + (size_t)k * n, 0 };
		}
		g[k].ranks[g[k].n++] = r[i];
	}
	for (i = 1; i < ng; i++)	/* largest first (stable) */
		for (k = i; k > 0 && g[k].n > g[k - 1].n; k--) {
			struct group t = g[k];

			g[k] = g[k - 1];
			g[k - 1] = t;
		}
	return ng;
}

static const char *lib_of(const struct an_proc *p, const void *arg)
{
	(void)arg;
	return p->label[AN_LABEL_NCCL_LIB - 1];
}

struct env_name {
	const char *name;
	size_t len;
};

static const char *env_of(const struct an_proc *p, const void *arg)
{
	const struct env_name *e = arg;

	return env_value(p, e->name, e->len);
}

/* "A on ranks 0-2,4-7; B on rank 3" into OUT */
static void groups_text(const struct group *g, uint32_t ng, bool unset_word, char *out,
			size_t len)
{
	char ranks[160];
	size_t off = 0;
	uint32_t k;

	out[0] = '\0';
	for (k = 0; k < ng && off < len; k++) {
		an_rank_list(g[k].ranks, g[k].n, ranks, sizeof(ranks));
		off += (size_t)snprintf(out + off, len - off, "%s%s on rank%s %s", k ? "; " : "",
					g[k].value[0] || !unset_word ? g[k].value : "unset",
					g[k].n > 1 ? "s" : "", ranks);
	}
}

static bool ignored(const char *name, size_t len)
{
	int i;

	for (i = 0; per_process[i]; i++)
		if (strlen(per_process[i]) == len && !strncmp(per_process[i], name, len))
			return true;
	return false;
}

void an_env_note(const struct an *an, struct an_verdict *v)
{
	const struct an_comm *c = hmap_get(&an->comms, hkey3(v->comm, 0, 0));
	const struct an_proc **p;
	struct group g[MAX_GROUPS];
	uint32_t n, ng, i, j, cited = 0;
	int32_t *r, *store;
	char text[512];

	if (!c || c->nranks < 2 || v->cls == AN_ENV)
		return;
	r = malloc(sizeof(*r) * (size_t)c->nranks * (MAX_GROUPS + 1));
	p = malloc(sizeof(*p) * (size_t)c->nranks);
	if (!r || !p)
		goto out;
	store = r + c->nranks;
	n = known_ranks(an, c, r, p);
	if (n < 2)
		goto out;
	ng = group_by(r, p, n, lib_of, NULL, g, store);
	if (ng > 1) {
		groups_text(g, ng, false, text, sizeof(text));
		an_text(v, "; the comm's ranks run different NCCL libraries: %s", text);
		an_val_i(v, "nccl_libs", ng);
	}
	/* each NCCL_* variable any of them has, once (the first to name it) */
	for (i = 0; i < n && cited < MAX_CITED; i++) {
		for (j = 0; j < p[i]->nenv && cited < MAX_CITED; j++) {
			const char *nv = p[i]->env[j];
			struct env_name e = { nv, strcspn(nv, "=") };
			uint32_t k;
			bool seen = false;

			for (k = 0; k < i && !seen; k++)
				seen = env_value(p[k], e.name, e.len)[0] != '\0';
			if (seen || ignored(e.name, e.len))
				continue;
			ng = group_by(r, p, n, env_of, &e, g, store);
			if (ng < 2)
				continue;
			groups_text(g, ng, true, text, sizeof(text));
			an_text(v, "; %.*s differs across the comm's ranks: %s", (int)e.len, e.name,
				text);
			cited++;
		}
	}
	if (cited)
		an_val_i(v, "nccl_env_diffs", cited);
out:
	free(r);
	free(p);
}

/* An ENV verdict: comm C's known ranks run NG > 1 libraries, G largest first. */
static void env_verdict(struct an *an, const struct an_comm *c, uint32_t host,
			uint64_t now_ns, const struct group *g, uint32_t ng)
{
	struct an_verdict *v = &an->tmp;
	char text[512];
	uint32_t k, i;

	an_verdict_root(v, AN_ENV, c->hash, -1, 0, host, now_ns);
	/*
	 * The culprits: the ranks outside the largest group; with no single
	 * largest group (a 2-rank comm, one on each build), all of them
	 */
	for (k = g[0].n > g[1].n ? 1 : 0; k < ng; k++)
		for (i = 0; i < g[k].n; i++) {
			const struct an_rank *rr = &c->r[g[k].ranks[i]];
			const struct an_proc *p = an_proc_of(an, rr);

			if (v->ncul < AN_MAX_CULPRITS && p)
				v->cul[v->ncul++] = (struct an_culprit){ g[k].ranks[i], p->host,
									  p->pid };
			v->ncul_total++;
		}
	groups_text(g, ng, false, text, sizeof(text));
	an_text(v, "the %d ranks of comm %016" PRIx64 " run different NCCL libraries"
		" (version, build id): %s; ranks of one comm must run one build%s", c->nranks,
		c->hash, text, g[0].n > g[1].n ? "" : " (no build runs on most: all are named)");
	an_val_i(v, "nccl_libs", ng);
	an_emit(an, v);
}

void an_env_check(struct an *an, uint32_t host, uint64_t now_ns)
{
	const struct an_proc **p = NULL;
	int32_t *r = NULL;
	struct group g[MAX_GROUPS];
	struct hkey key;
	size_t it;
	void *val;

	if (!an->env_dirty)
		return;
	an->env_dirty = false;
	for (it = 0; hmap_next(&an->comms, &it, &key, &val);) {
		struct an_comm *c = val;
		uint32_t n, ng;

		if (c->env_said || c->nranks < 2)
			continue;
		free(r);
		free(p);
		r = malloc(sizeof(*r) * (size_t)c->nranks * (MAX_GROUPS + 1));
		p = malloc(sizeof(*p) * (size_t)c->nranks);
		if (!r || !p)
			break;
		n = known_ranks(an, c, r, p);
		ng = n > 1 ? group_by(r, p, n, lib_of, NULL, g, r + c->nranks) : 0;
		if (ng > 1) {
			c->env_said = true;
			env_verdict(an, c, host, now_ns, g, ng);
		}
	}
	free(r);
	free(p);
}
