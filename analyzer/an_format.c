// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Names, and verdicts as JSON lines (docs/cli.md, schema 1) and as text. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "an_int.h"
#include "json.h"
#include <linux/types.h>
#include "ccld.h"
#include "hooks.h"
#include "names.h"

const char *an_class_name(enum an_class c)
{
	switch (c) {
	case AN_H1: return "H1";
	case AN_H2: return "H2";
	case AN_H3: return "H3";
	case AN_S1: return "S1";
	case AN_S2: return "S2";
	case AN_S3: return "S3";
	case AN_HW: return "HW";
	case AN_ENV: return "ENV";
	}
	return "?";
}

const char *an_t4_name(enum an_t4 s)
{
	switch (s) {
	case AN_T4_NOT_STARTED: return "not started";
	case AN_T4_NOT_TRANSMITTED: return "not transmitted";
	case AN_T4_NOT_DELIVERED: return "not delivered";
	case AN_T4_GPU_NOT_READY: return "GPU not ready";
	case AN_T4_NONE: break;
	}
	return "none";
}

const char *an_fn_name(int fn)
{
	const char *s = hook_fn_name(fn);

	return s ? s : "op";
}

void an_rank_list(const int32_t *ranks, uint32_t n, char *out, size_t len)
{
	size_t off = 0;
	uint32_t i, j;

	out[0] = '\0';
	for (i = 0; i < n && off < len; i = j + 1) {
		for (j = i; j + 1 < n && ranks[j + 1] == ranks[j] + 1; j++)
			;
		off += (size_t)snprintf(out + off, len - off, j > i + 1 ? "%s%d-%d" :
					j > i ? "%s%d,%d" : "%s%d", off ? "," : "",
					ranks[i], ranks[j]);
	}
}

static int by_value(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return x < y ? -1 : x > y;
}

void an_rank_list_sort(int32_t *ranks, uint32_t n, char *out, size_t len)
{
	if (n > 1)	/* RANKS may be NULL where N is 0 */
		qsort(ranks, n, sizeof(*ranks), by_value);
	an_rank_list(ranks, n, out, len);
}

/*
 * Comm HASH as a user knows it: its size, and the launcher's global ranks
 * of its members ("0,2,4-7", those known; *UNKNOWN: how many are not).
 * The comm, NULL when the analyzer does not know it.
 */
static const struct an_comm *comm_desc(const struct an *an, uint64_t hash, char *members,
				       size_t len, uint32_t *unknown)
{
	const struct an_comm *c = hmap_get(&an->comms, hkey3(hash, 0, 0));
	int32_t *g, r;
	uint32_t n = 0;

	members[0] = '\0';
	*unknown = 0;
	if (!c || c->nranks < 1)
		return NULL;
	g = malloc(sizeof(*g) * (size_t)c->nranks);
	if (!g)
		return c;
	for (r = 0; r < c->nranks; r++) {
		const struct an_proc *p = an_proc_of(an, &c->r[r]);

		if (p && p->label[AN_LABEL_RANK - 1][0])
			g[n++] = atoi(p->label[AN_LABEL_RANK - 1]);
		else
			(*unknown)++;
	}
	an_rank_list_sort(g, n, members, len);
	free(g);
	return c;
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

static const char *class_words(enum an_class c)
{
	switch (c) {
	case AN_H1: return "not entered";
	case AN_H2: return "inconsistent op";
	case AN_H3: return "all entered, no progress";
	case AN_S1: return "computation slow";
	case AN_S2: return "communication slow";
	case AN_S3: return "computation and communication slow";
	case AN_HW: return "hardware error";
	case AN_ENV: return "mixed NCCL libraries";
	}
	return "?";
}

static void culprits(const struct an *an, const struct an_verdict *v,
		     struct json_buf *b)
{
	uint32_t i;

	json_key(b, "culprits");
	json_arr_open(b);
	for (i = 0; i < v->ncul; i++) {
		static const char *const keys[] = { "pod", "namespace", "container" };
		const struct an_proc *p = an_proc_find(an, v->cul[i].host, v->cul[i].pid);
		int k;

		json_obj_open(b);
		json_kv_i64(b, "rank", v->cul[i].rank);
		/* the job's ranks as its launcher numbered them, where known */
		if (p && p->label[AN_LABEL_RANK - 1][0])
			json_kv_i64(b, "global_rank", atol(p->label[AN_LABEL_RANK - 1]));
		if (p && p->label[AN_LABEL_LOCAL_RANK - 1][0])
			json_kv_i64(b, "local_rank", atol(p->label[AN_LABEL_LOCAL_RANK - 1]));
		json_kv_str(b, "host", an_host_name(an, v->cul[i].host));
		json_kv_u64(b, "pid", v->cul[i].pid);
		/* its GPU as its comm says: "3 0000:1a:00.0" */
		if (p && p->label[AN_LABEL_GPU - 1][0]) {
			const char *bus = an_proc_gpu_bus(p);

			json_kv_i64(b, "cuda_dev", atol(p->label[AN_LABEL_GPU - 1]));
			if (bus)
				json_kv_str(b, "gpu", bus);
		}
		for (k = 0; p && k < 3; k++)
			if (p->label[k][0])
				json_kv_str(b, keys[k], p->label[k]);
		json_obj_close(b);
	}
	json_arr_close(b);
	if (v->ncul_total > v->ncul)
		json_kv_u64(b, "culprits_total", v->ncul_total);
}

static void evidence(const struct an_verdict *v, struct json_buf *b)
{
	uint32_t i;

	json_key(b, "evidence");
	json_obj_open(b);
	json_kv_str(b, "text", v->text);
	for (i = 0; i < v->nval; i++) {
		const struct an_value *x = &v->val[i];

		if (x->is_str)
			json_kv_str(b, x->key, x->s);
		else if (x->is_float)
			json_kv_f(b, x->key, x->f);
		else
			json_kv_i64(b, x->key, x->i);
	}
	json_obj_close(b);
}

int an_verdict_json(const struct an *an, const struct an_verdict *v,
		    int64_t off, struct json_buf *b)
{
	bool rec = v->kind == AN_V_RECOVERED;
	char members[256];
	uint32_t unknown;
	const struct an_comm *c;

	json_obj_open(b);
	json_kv_str(b, "type", rec ? "recovery" : "verdict");
	json_kv_i64(b, "schema", 1);
	json_kv_str(b, "class", an_class_name(v->cls));
	if (!rec)
		json_kv_str(b, "role", v->role == AN_ROOT ? "root" : "cascade");
	json_kv_hex16(b, "comm", v->comm);
	if ((c = comm_desc(an, v->comm, members, sizeof(members), &unknown))) {
		json_key(b, "comm_info");
		json_obj_open(b);
		json_kv_i64(b, "nranks", c->nranks);
		if (members[0])
			json_kv_str(b, "global_ranks", members);
		if (unknown)
			json_kv_i64(b, "global_ranks_unknown", unknown);
		if (c->parent)
			json_kv_hex16(b, "parent", c->parent);
		if (c->color >= 0)
			json_kv_i64(b, "split_color", c->color);
		if (c->name[0])
			json_kv_str(b, "name", c->name);
		json_obj_close(b);
	}
	json_kv_i64(b, "seq", v->seq);
	if (!rec)
		culprits(an, v, b);
	json_kv_i64(b, "detected_ns", (int64_t)v->detected_ns + off);
	json_kv_i64(b, "onset_ns", (int64_t)v->onset_ns + off);
	if (v->fn)
		json_kv_str(b, "op", an_fn_name(v->fn));
	if (v->p2p)
		json_kv_bool(b, "p2p", true);
	if (!rec && v->role == AN_CASCADE) {
		json_key(b, "blocked_by");
		json_obj_open(b);
		json_kv_hex16(b, "comm", v->blocked_comm);
		json_kv_i64(b, "seq", v->blocked_seq);
		json_obj_close(b);
	}
	if (v->kind == AN_V_UPDATE)
		json_kv_bool(b, "update", true);
	evidence(v, b);
	json_obj_close(b);
	return b->err;
}

/* an HW verdict is about a GPU (Xid) or a NIC (RDMA): its first value says */
static const char *hw_word(const struct an_verdict *v)
{
	uint32_t i;

	for (i = 0; i < v->nval; i++) {
		if (!strcmp(v->val[i].key, "gpu"))
			return "GPU";
		if (!strcmp(v->val[i].key, "nic"))
			return "NIC";
	}
	return "GPU";
}

int an_verdict_text(const struct an *an, const struct an_verdict *v,
		    struct json_buf *b)
{
	char members[256];
	uint32_t i, unknown;
	const struct an_comm *c;

	if (v->kind == AN_V_RECOVERED) {
		json_printf(b, "RECOVERED %s comm %016" PRIx64 " seq %" PRId64
			    ": %s", an_class_name(v->cls), v->comm, v->seq,
			    v->text);
		return b->err;
	}
	json_printf(b, "%s %s (%s)%s %s comm %016" PRIx64,
		    v->cls == AN_HW ? hw_word(v) : v->cls == AN_ENV ? "SETUP" :
		    v->cls >= AN_S1 ? "SLOW" : "HANG",
		    an_class_name(v->cls), class_words(v->cls),
		    v->kind == AN_V_UPDATE ? " update" : "",
		    v->role == AN_ROOT ? "root" : "cascade", v->comm);
	/* the comm as its user knows it: "tp" (8 ranks: global 0,2,4-7, split color 1) */
	if ((c = comm_desc(an, v->comm, members, sizeof(members), &unknown))) {
		if (c->name[0])
			json_printf(b, " \"%s\"", c->name);
		json_printf(b, " (%d rank%s%s%s%s", c->nranks, c->nranks == 1 ? "" : "s",
			    members[0] ? ": global " : "", members,
			    members[0] && unknown ? ", others unknown" : "");
		if (c->color >= 0)
			json_printf(b, ", split color %d", c->color);
		json_printf(b, ")");
	}
	json_printf(b, " %s seq %" PRId64, an_fn_name(v->fn), v->seq);
	json_printf(b, ": culprit%s ", v->ncul_total == 1 ? "" : "s");
	for (i = 0; i < v->ncul; i++) {
		const struct an_proc *p = an_proc_find(an, v->cul[i].host, v->cul[i].pid);
		const char *g = p ? p->label[AN_LABEL_RANK - 1] : "";
		const char *gpu = p ? p->label[AN_LABEL_GPU - 1] : "";

		/* rank -1: a process named by another comm (slow_unseen_evidence) */
		if (v->cul[i].rank >= 0)
			json_printf(b, "%srank %d", i ? ", " : "", v->cul[i].rank);
		else
			json_printf(b, "%sa rank of another comm", i ? ", " : "");
		json_printf(b, " (%s%s%s%s pid %u%s%s)",
			    g[0] ? "global rank " : "", g, g[0] ? ", " : "",
			    an_host_name(an, v->cul[i].host), v->cul[i].pid,
			    gpu[0] ? ", GPU " : "", gpu);
	}
	if (v->ncul_total > v->ncul)
		json_printf(b, " and %u more", v->ncul_total - v->ncul);
	json_printf(b, " -- %s", v->text);
	return b->err;
}

int an_cascade_text(const struct an *an, const struct an_verdict *v, struct json_buf *b)
{
	json_printf(b, "cascade: %s in comm %016" PRIx64 " seq %" PRId64
		    " is blocked by comm %016" PRIx64 " seq %" PRId64,
		    an_class_name(v->cls), v->comm, v->seq, v->blocked_comm,
		    v->blocked_seq);
	return b->err;
}

int an_verdict_line(const struct an *an, const struct an_verdict *v, bool json,
		    int64_t time_offset_ns, struct json_buf *b)
{
	if (json)
		return an_verdict_json(an, v, time_offset_ns, b);
	if (v->role == AN_CASCADE) {
		json_printf(b, "  ");
		return an_cascade_text(an, v, b);
	}
	json_printf(b, "VERDICT ");
	return an_verdict_text(an, v, b);
}
