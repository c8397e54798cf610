// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "analyzer.h"
#include "hmap.h"
#include "hooks.h"
#include "json.h"
#include "names.h"
#include "ncclwarn.h"
#include "output.h"

/* common/json.c holds the one JSON string escaper (RFC 8259) */
void json_string(FILE *f, const char *s)
{
	struct json_buf b;

	json_init(&b);
	json_escape(&b, s);
	/* out of memory: still a valid JSON value */
	fputs(b.err ? "null" : json_str(&b), f);
	json_free(&b);
}

static void json_opt_int(FILE *f, const char *key, int64_t v, bool present)
{
	if (present)
		fprintf(f, ",\"%s\":%" PRId64, key, v);
	else
		fprintf(f, ",\"%s\":null", key);
}

void out_call_json(FILE *f, const struct host_info *h, const struct call_rec *c)
{
	const char *dt = dtype_name(c->dtype), *op = redop_name(c->redop);

	fprintf(f, "{\"type\":\"call\",\"schema\":%d,\"host\":", CCLD_SCHEMA);
	json_string(f, h->name);
	fprintf(f, ",\"pid\":%u,\"tid\":%u,\"comm\":\"%016" PRIx64 "\""
		",\"rank\":%d,\"nranks\":%d,\"seq\":%" PRId64
		",\"seq_source\":\"%s\",\"op\":\"%s\",\"count\":%" PRIu64,
		c->pid, c->tid, c->comm_hash, c->rank, c->nranks, c->seq,
		seq_source_name(c->seq_source), hook_fn_name(c->fn), c->count);
	if (dt)
		fprintf(f, ",\"dtype\":\"%s\"", dt);
	else
		fprintf(f, ",\"dtype\":\"type%d\"", c->dtype);
	if (op)
		fprintf(f, ",\"redop\":\"%s\"", op);
	else if (c->redop != 0xff)
		fprintf(f, ",\"redop\":\"op%d\"", c->redop);
	else
		fputs(",\"redop\":null", f);
	json_opt_int(f, "root", c->root, c->root >= 0);
	json_opt_int(f, "peer", c->peer, c->peer >= 0);
	fprintf(f, ",\"bytes\":%" PRIu64 ",\"stream\":\"0x%" PRIx64 "\"",
		c->bytes, c->stream);
	json_opt_int(f, "group", c->group, c->group >= 0);
	json_opt_int(f, "ret", c->ret, c->has_ret);
	fprintf(f, ",\"t_ns\":%" PRId64 "}\n",
		(int64_t)c->t_ns + h->realtime_offset_ns);
}

void out_call_text(FILE *f, const struct host_info *h, const struct call_rec *c)
{
	const char *dt = dtype_name(c->dtype), *op = redop_name(c->redop);
	char extra[48] = "";

	if (c->root >= 0)
		snprintf(extra, sizeof(extra), " root=%d", c->root);
	else if (c->peer >= 0)
		snprintf(extra, sizeof(extra), " peer=%d", c->peer);
	fprintf(f, "%-12s %7u %016" PRIx64 " %5d/%-5d %6" PRId64 " %-13s %10"
		PRIu64 " %-8s %-4s%s",
		h->name, c->pid, c->comm_hash, c->rank, c->nranks, c->seq,
		hook_fn_name(c->fn), c->count, dt ? dt : "?", op ? op : "-",
		extra);
	if (c->has_ret)
		fprintf(f, " ret=%" PRId64 " %.1fus\n", c->ret,
			(c->ret_ns - c->t_ns) / 1e3);
	else
		fputs(" (no return)\n", f);
}

void out_comm_json(FILE *f, const struct host_info *h,
		   const struct comm_call_rec *c)
{
	fprintf(f, "{\"type\":\"comm\",\"schema\":%d,\"host\":", CCLD_SCHEMA);
	json_string(f, h->name);
	fprintf(f, ",\"pid\":%u,\"tid\":%u,\"op\":\"%s\"", c->pid, c->tid,
		hook_fn_name(c->fn));
	if (c->comm_hash)
		fprintf(f, ",\"comm\":\"%016" PRIx64 "\"", c->comm_hash);
	else
		fputs(",\"comm\":null", f);
	fprintf(f, ",\"rank\":%d,\"nranks\":%d", c->rank, c->nranks);
	json_opt_int(f, "arg_nranks", c->arg_nranks, c->arg_nranks >= 0);
	json_opt_int(f, "arg_rank", c->arg_rank, c->arg_rank >= 0);
	if (c->id_hash)
		fprintf(f, ",\"unique_id\":\"%016" PRIx64 "\"", c->id_hash);
	if (c->fn == CCLD_FN_SPLIT || c->fn == CCLD_FN_SHRINK) {
		fprintf(f, ",\"parent\":\"%016" PRIx64 "\"", c->parent_hash);
		json_opt_int(f, "color", c->color, c->fn == CCLD_FN_SPLIT);
		json_opt_int(f, "key", c->key, true);
	}
	if (c->name[0]) {
		fputs(",\"name\":", f);
		json_string(f, c->name);
	}
	json_opt_int(f, "ret", c->ret, c->has_ret);
	fprintf(f, ",\"t_ns\":%" PRId64 "}\n",
		(int64_t)c->t_ns + h->realtime_offset_ns);
}

void out_comm_text(FILE *f, const struct host_info *h,
		   const struct comm_call_rec *c)
{
	fprintf(f, "%-12s %7u %016" PRIx64 " %5d/%-5d %-20s", h->name, c->pid,
		c->comm_hash, c->rank, c->nranks, hook_fn_name(c->fn));
	if (c->fn == CCLD_FN_SPLIT)
		fprintf(f, " parent=%016" PRIx64 " color=%d key=%d",
			c->parent_hash, c->color, c->key);
	if (c->name[0])
		fprintf(f, " name=\"%s\"", c->name);
	if (c->has_ret)
		fprintf(f, " ret=%" PRId64 "\n", c->ret);
	else
		fputs(" (no return)\n", f);
}

static const char *comm_src_name(uint8_t src)
{
	switch (src) {
	case CCLD_COMM_SRC_ARRAY:
		return "ncclComms";
	case CCLD_COMM_SRC_SCAN:
		return "scan";
	case CCLD_COMM_SRC_PEER:
		return "peer_table";
	case CCLD_COMM_SRC_CALLS:
		return "known";
	}
	return "?";
}

void out_comm_state(FILE *f, const struct host_info *h, const struct comm_rank *cr,
		    const struct ccld_event *ev, bool json)
{
	const struct ccld_comm_state *cs = &ev->u.cstate;
	bool seq = (ev->flags & CCLD_F_SEQ) && cs->source != CCLD_COMM_SRC_PEER;
	uint32_t i;

	if (!json) {
		fprintf(f, "%-12s %7u %016" PRIx64 " %5d/%-5d state read from memory (%s):",
			h->name, cr->pid, cr->hash, cr->rank, cr->nranks,
			comm_src_name(cs->source));
		if (cs->source == CCLD_COMM_SRC_PEER)
			fputs(" its process is gone\n", f);
		else if ((cs->counts & CCLD_CS_INIT_READ) &&
			 cs->init_state == CCLD_INIT_IN_PROGRESS)
			fputs(" inside its init (initState ncclInProgress)\n", f);
		else if (seq)
			fprintf(f, " %" PRIu64 " collectives launched\n",
				(uint64_t)ev->id.nccl_seq);
		else
			fputs(" launch count unknown\n", f);
		return;
	}
	fprintf(f, "{\"type\":\"comm_state\",\"schema\":%d,\"host\":", CCLD_SCHEMA);
	json_string(f, h->name);
	fprintf(f, ",\"pid\":%u,\"comm\":\"%016" PRIx64 "\",\"rank\":%d,\"nranks\":%d"
		",\"source\":\"%s\"", cr->pid, cr->hash, cr->rank, cr->nranks,
		comm_src_name(cs->source));
	json_opt_int(f, "launched", (int64_t)ev->id.nccl_seq, seq);
	if (seq && cs->nseq) {
		fputs(",\"launched_per_fn\":[", f);
		for (i = 0; i < cs->nseq; i++)
			fprintf(f, "%s%" PRIu64, i ? "," : "", (uint64_t)cs->seq_number[i]);
		fputs("]", f);
	}
	json_opt_int(f, "coll_op_count", (int64_t)cs->coll_op_count,
		     seq && (cs->counts & CCLD_CS_COLL_OP_COUNT));
	json_opt_int(f, "cuda_dev", cs->cuda_dev, cs->cuda_dev >= 0);
	json_opt_int(f, "init_state", cs->init_state, cs->counts & CCLD_CS_INIT_READ);
	fprintf(f, ",\"t_ns\":%" PRId64 "}\n", (int64_t)ev->ts_ns + h->realtime_offset_ns);
}

void out_thread(FILE *f, const struct host_info *h, const struct ccld_event *ev,
		const char *fd_path, const char *stack, bool json)
{
	const struct ccld_thread *t = &ev->u.thread;
	const char *sc = t->syscall >= 0 ? syscall_name(t->syscall) : NULL;
	char name[sizeof(t->name) + 1], wchan[sizeof(t->wchan) + 1], scb[16];

	char st = (t->state >= 'A' && t->state <= 'Z') || (t->state >= 'a' && t->state <= 'z') ?
		  (char)t->state : '?';
	const char *cuda = ev->fn == CCLD_FN_CUDA_STREAM_SYNC ? "StreamSynchronize" :
			   ev->fn == CCLD_FN_CUDA_EVENT_SYNC ? "EventSynchronize" : NULL;

	snprintf(name, sizeof(name), "%.*s", (int)sizeof(t->name), t->name);
	snprintf(wchan, sizeof(wchan), "%.*s", (int)sizeof(t->wchan), t->wchan);
	if (!sc && t->syscall >= 0) {
		snprintf(scb, sizeof(scb), "%d", t->syscall);
		sc = scb;
	}
	if (!json) {
		fprintf(f, "%-12s %7u thread %u (%s): %c%s%s%s%s%s%s%s%s%s%s\n", h->name,
			ev->pid, ev->tid, name, st, sc ? " in " : "", sc ? sc : "",
			fd_path[0] ? " on " : "", fd_path,
			wchan[0] ? " wchan " : "", wchan,
			cuda ? " inside cuda" : "", cuda ? cuda : "",
			stack[0] ? " stack " : "", stack);
		return;
	}
	fprintf(f, "{\"type\":\"thread\",\"schema\":%d,\"host\":", CCLD_SCHEMA);
	json_string(f, h->name);
	fprintf(f, ",\"pid\":%u,\"tid\":%u,\"name\":", ev->pid, ev->tid);
	json_string(f, name);
	fprintf(f, ",\"state\":\"%c\",\"main\":%s", st, t->main ? "true" : "false");
	if (sc) {
		fputs(",\"syscall\":", f);
		json_string(f, sc);
	} else {
		fputs(",\"syscall\":null", f);
	}
	fputs(",\"wchan\":", f);
	json_string(f, wchan);
	if (fd_path[0]) {
		fputs(",\"fd_path\":", f);
		json_string(f, fd_path);
	}
	if (stack[0]) {
		fputs(",\"stack\":", f);
		json_string(f, stack);
	}
	if (cuda)
		fprintf(f, ",\"cuda_sync\":\"%s\",\"cuda_since_ns\":%" PRId64 "%s", cuda,
			(int64_t)ev->cuda_since_ns + h->realtime_offset_ns,
			ev->u.thread.cuda_stack ? ",\"cuda_from_stack\":true" : "");
	fprintf(f, ",\"t_ns\":%" PRId64 "}\n", (int64_t)ev->ts_ns + h->realtime_offset_ns);
}

void out_nccl_warning(FILE *f, const struct host_info *h, const struct nccl_warning *w,
		      const char *global_rank, bool json)
{
	if (!json) {
		fprintf(f, "%-12s %7u NCCL WARN%s%s%s (%s:%u): %s%s\n", h->name, w->pid,
			global_rank[0] ? " (rank " : "", global_rank, global_rank[0] ? ")" : "",
			w->file, w->line, w->msg, w->truncated ? "..." : "");
		return;
	}
	fprintf(f, "{\"type\":\"nccl_warn\",\"schema\":%d,\"host\":", CCLD_SCHEMA);
	json_string(f, h->name);
	fprintf(f, ",\"pid\":%u,\"tid\":%u", w->pid, w->tid);
	if (global_rank[0])
		fprintf(f, ",\"global_rank\":%s", global_rank);
	fputs(",\"file\":", f);
	json_string(f, w->file);
	fprintf(f, ",\"line\":%u,\"message\":", w->line);
	json_string(f, w->msg);
	fprintf(f, ",\"truncated\":%s,\"t_ns\":%" PRId64 "}\n", w->truncated ? "true" : "false",
		(int64_t)w->ts_ns + h->realtime_offset_ns);
}

/* the next process of ST that lost records, NULL at the end (ST may be NULL) */
static const struct proc_info *next_lossy(const struct state *st, size_t *it)
{
	const struct proc_info *p;

	while (st && (p = state_next_proc(st, it)))
		if (p->lost[0] || p->lost[1])
			return p;
	return NULL;
}

/* ,"lost_by_process":[{"pid":P,"dropped":N,"rare_dropped":M},..] where any */
static void lost_by_process(FILE *f, const struct state *st)
{
	const struct proc_info *p;
	size_t it = 0;
	bool any = false;

	while ((p = next_lossy(st, &it))) {
		fprintf(f, "%s{\"pid\":%u,\"dropped\":%" PRIu64 ",\"rare_dropped\":%" PRIu64
			"}", any ? "," : ",\"lost_by_process\":[", p->pid,
			p->lost[0] + p->lost[1], p->lost[1]);
		any = true;
	}
	if (any)
		fputc(']', f);
}

void out_summary_json(FILE *f, const struct summary *s)
{
	fprintf(f, "{\"type\":\"summary\",\"schema\":%d,\"events\":%" PRIu64
		",\"calls\":%" PRIu64 ",\"dropped\":%" PRIu64
		",\"rare_dropped\":%" PRIu64, CCLD_SCHEMA, s->events, s->calls,
		s->main_drops + s->rare_drops, s->rare_drops);
	lost_by_process(f, s->st);
	fprintf(f, ",\"steps_shed\":%" PRIu64, s->steps_shed);
	fprintf(f, ",\"processes\":%" PRIu64
		",\"comms\":%" PRIu64 ",\"verdicts\":%" PRIu64
		",\"proxy_unattributed\":%" PRIu64 ",\"nccl_warnings\":%" PRIu64
		",\"nccl_warnings_dropped\":%" PRIu64 ",\"mem_refused\":%" PRIu64
		",\"duration_s\":%.3f}\n",
		s->processes, s->comms, s->verdicts, s->proxy_unattributed, s->nccl_warnings,
		s->nccl_warnings_dropped, s->mem_refused, s->duration_s);
}

/* "ccld: records lost by process: 4242 1803, 4243 977" where any */
static void lost_text(FILE *f, const struct state *st)
{
	const struct proc_info *p;
	size_t it = 0;
	bool any = false;

	while ((p = next_lossy(st, &it))) {
		fprintf(f, "%s%u %" PRIu64, any ? ", " : "ccld: records lost by process: ",
			p->pid, p->lost[0] + p->lost[1]);
		any = true;
	}
	if (any)
		fputc('\n', f);
}

void out_summary_text(FILE *f, const struct summary *s)
{
	fprintf(f, "ccld: %" PRIu64 " events, %" PRIu64 " calls, %" PRIu64
		" processes, %" PRIu64 " communicators, %" PRIu64
		" verdicts, %" PRIu64 " lost (%" PRIu64 " rare) in %.1f s\n",
		s->events, s->calls, s->processes, s->comms, s->verdicts,
		s->main_drops + s->rare_drops, s->rare_drops, s->duration_s);
	lost_text(f, s->st);
	if (s->steps_shed)
		fprintf(f, "ccld: %" PRIu64 " step records shed: the ring was 3/4 full, and"
			" they gave way to calls (a step sample then says so)\n", s->steps_shed);
	if (s->mem_refused)
		fprintf(f, "ccld: %" PRIu64 " records refused by the analyzer: its state"
			" reached --mem-max; verdicts on the comms they were about are"
			" missing or rest on less\n", s->mem_refused);
	if (s->nccl_warnings || s->nccl_warnings_dropped)
		fprintf(f, "ccld: %" PRIu64 " NCCL warnings (%" PRIu64 " dropped: a part lost,"
			" or not the message of its WARN)\n", s->nccl_warnings,
			s->nccl_warnings_dropped);
	if (s->proxy_unattributed)
		fprintf(f, "ccld: %" PRIu64 " proxy records of unknown direction (a progress "
			"function ccld does not know) were not analyzed\n",
			s->proxy_unattributed);
}

struct comm_row {
	uint64_t hash;
	const char *name;	/* its ranks' creation name, "" where none */
	int32_t *global;	/* the launcher's global ranks of its ranks seen here */
	uint32_t nglobal;
	int32_t nranks;
	uint32_t ranks_seen;
	uint64_t calls;
	uint64_t bytes;
	uint64_t errors;
	int64_t min_seq;
	int64_t max_seq;
	int64_t min_done;	/* lowest seq the GPU finished, over ranks */
	uint32_t in_state[RS__COUNT];
};

static int row_cmp(const void *a, const void *b)
{
	const struct comm_row *x = a, *y = b;

	if (x->nranks != y->nranks)
		return x->nranks > y->nranks ? -1 : 1;
	return x->hash < y->hash ? -1 : x->hash > y->hash;
}

/* P's global rank (its launcher's) into R's list, where known */
static void add_global(struct comm_row *r, const struct proc_info *p)
{
	int32_t *g;

	if (!p || !p->global_rank[0])
		return;
	g = realloc(r->global, (r->nglobal + 1) * sizeof(*g));
	if (!g)
		return;
	r->global = g;
	g[r->nglobal++] = atoi(p->global_rank);
}

/* "0,2,4-7 (3 elsewhere)": the global ranks known, and how many are not */
static void global_text(struct comm_row *r, char *out, size_t len)
{
	int32_t rest = r->nranks - (int32_t)r->nglobal;
	size_t off;

	an_rank_list_sort(r->global, r->nglobal, out, len);
	off = strlen(out);
	if (rest > 0 && off < len)
		snprintf(out + off, len - off, "%s%d %s", off ? " (" : "", rest,
			 off ? "unknown)" : "unknown");
}

void out_comm_table(FILE *f, const struct state *st, bool ansi_home)
{
	struct comm_row *rows = NULL;
	size_t n = 0, cap = 0, i, it;
	struct comm_rank *cr;

	for (it = 0; (cr = state_next_rank(st, &it));) {
		struct comm_row *r = NULL;

		if (!cr->hash)
			continue;
		for (i = 0; i < n; i++) {
			if (rows[i].hash == cr->hash) {
				r = &rows[i];
				break;
			}
		}
		if (!r) {
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 16;
				struct comm_row *nr = realloc(rows, ncap * sizeof(*nr));

				if (!nr)
					break;
				rows = nr;
				cap = ncap;
			}
			r = &rows[n++];
			memset(r, 0, sizeof(*r));
			r->hash = cr->hash;
			r->min_seq = INT64_MAX;
			r->max_seq = -1;
			r->min_done = INT64_MAX;
		}
		r->nranks = cr->nranks;
		if (!r->name || (!r->name[0] && cr->name[0]))
			r->name = cr->name;
		r->ranks_seen++;
		add_global(r, state_proc(st, cr->host_id, cr->pid));
		r->calls += cr->calls;
		r->bytes += cr->bytes;
		r->errors += cr->errors;
		if (cr->last_seq < r->min_seq)
			r->min_seq = cr->last_seq;
		if (cr->last_seq > r->max_seq)
			r->max_seq = cr->last_seq;
		if (cr->completed_seq < r->min_done)
			r->min_done = cr->completed_seq;
		r->in_state[cr->state]++;
	}
	qsort(rows, n, sizeof(*rows), row_cmp);
	if (ansi_home)
		fputs("\033[H\033[2J", f);
	fprintf(f, "%-16s %-12s %6s %5s %9s %10s %11s %7s %-24s %s\n", "COMM", "NAME",
		"NRANKS", "SEEN", "CALLS", "MB", "SEQ min-max", "GPU", "GLOBAL RANKS", "STATES");
	for (i = 0; i < n; i++) {
		struct comm_row *r = &rows[i];
		char states[160] = "", global[128];
		size_t len = 0;
		int s;

		for (s = 0; s < RS__COUNT; s++) {
			if (!r->in_state[s] || len >= sizeof(states))
				continue;
			len += snprintf(states + len, sizeof(states) - len, "%s%s:%u",
					len ? " " : "", rank_state_name(s),
					r->in_state[s]);
		}
		global_text(r, global, sizeof(global));
		fprintf(f, "%016" PRIx64 " %-12.12s %6d %5u %9" PRIu64 " %10.1f %5" PRId64
			"-%-5" PRId64 " %7" PRId64 " %-24s %s\n", r->hash,
			r->name && r->name[0] ? r->name : "-", r->nranks, r->ranks_seen,
			r->calls, r->bytes / 1e6,
			r->min_seq == INT64_MAX ? -1 : r->min_seq, r->max_seq,
			r->min_done == INT64_MAX ? -1 : r->min_done, global, states);
	}
	fflush(f);
	for (i = 0; i < n; i++)
		free(rows[i].global);
	free(rows);
}
