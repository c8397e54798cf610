// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "analyzer.h"
#include "attach.h"
#include "procmaps.h"
#include "proxy.skel.h"
#include "proxy_live.h"
#include "proxymap.h"
#include "schedwatch.h"
#include "state.h"

struct suspected {
	uint64_t comm;
	bool slow;		/* a step sample for a slow verdict: no snapshots */
	uint32_t *pids;
	uint32_t npids;
};

struct proxy_live {
	struct attacher *a;
	const struct state *st;
	uint32_t host;
	bool verbose;
	struct proxymap *map;
	struct schedwatch *sw;		/* the hooked processes' proxy threads */
	struct suspected *sus;
	size_t nsus;
	uint32_t *hooked;		/* pids with step hooks on */
	size_t nhooked;
	int stats_fd;			/* BPF run-time statistics on, or -1 */
	/* the step programs' counters when the hooks went on, and the sums */
	uint64_t cnt0, ns0, hits, bpf_ns, on_since, on_ns;
	uint32_t periods;
};

struct proxy_live *proxy_live_new(struct attacher *a, const struct state *st,
				  uint32_t host, bool verbose)
{
	struct proxy_live *pl = calloc(1, sizeof(*pl));

	if (!pl)
		return NULL;
	pl->a = a;
	pl->st = st;
	pl->host = host;
	pl->verbose = verbose;
	pl->map = proxymap_new(a, st, host);
	pl->sw = schedwatch_new();
	if (!pl->map || !pl->sw) {
		proxymap_free(pl->map);
		schedwatch_free(pl->sw);
		free(pl);
		return NULL;
	}
	/* run_cnt / run_time_ns of the step programs: their measured cost */
	pl->stats_fd = a->proxy_skel ? bpf_enable_stats(BPF_STATS_RUN_TIME) : -1;
	return pl;
}

void proxy_live_free(struct proxy_live *pl)
{
	size_t i;

	if (!pl)
		return;
	for (i = 0; i < pl->nsus; i++)
		free(pl->sus[i].pids);
	free(pl->sus);
	free(pl->hooked);
	proxymap_free(pl->map);
	schedwatch_free(pl->sw);
	if (pl->stats_fd >= 0)
		close(pl->stats_fd);
	free(pl);
}

bool proxy_live_resolve(struct proxy_live *pl, struct ccld_event *ev, proxy_emit_fn emit,
			void *ctx)
{
	/* a step record: its thread is a proxy thread of a hooked process */
	if (ev->type == CCLD_EV_PROXY && ev->u.proxy.step >= 0 && ev->tid)
		schedwatch_note(pl->sw, ev->pid, ev->tid, ev->ts_ns, emit, ctx);
	return proxymap_resolve(pl->map, ev);
}

void proxy_live_forget(struct proxy_live *pl, uint32_t pid)
{
	proxymap_forget(pl->map, pid);
	schedwatch_forget(pl->sw, pid);
}

static void drop_suspect(struct proxy_live *pl, uint64_t comm, bool slow)
{
	size_t i;

	for (i = 0; i < pl->nsus; i++) {
		if (pl->sus[i].comm != comm || pl->sus[i].slow != slow)
			continue;
		free(pl->sus[i].pids);
		pl->sus[i] = pl->sus[--pl->nsus];
		return;
	}
}

/* Live tracing has one host: every process the analyzer names is local. */
void proxy_live_suspect(struct proxy_live *pl, const struct an_suspect *s)
{
	struct suspected *n;
	uint32_t i;

	drop_suspect(pl, s->comm, s->slow);
	if (!s->on)
		return;
	n = realloc(pl->sus, (pl->nsus + 1) * sizeof(*n));
	if (!n)
		return;
	pl->sus = n;
	n = &pl->sus[pl->nsus];
	n->comm = s->comm;
	n->slow = s->slow;
	n->npids = 0;
	n->pids = calloc(s->nprocs ? s->nprocs : 1, sizeof(*n->pids));
	if (!n->pids)
		return;
	for (i = 0; i < s->nprocs; i++)
		n->pids[n->npids++] = s->procs[i].pid;
	pl->nsus++;
}

static bool wanted(const struct proxy_live *pl, uint32_t pid)
{
	size_t i, j;

	for (i = 0; i < pl->nsus; i++)
		for (j = 0; j < pl->sus[i].npids; j++)
			if (pl->sus[i].pids[j] == pid)
				return true;
	return false;
}

static bool hooked(const struct proxy_live *pl, uint32_t pid)
{
	size_t i;

	for (i = 0; i < pl->nhooked; i++)
		if (pl->hooked[i] == pid)
			return true;
	return false;
}

/* Sum of the step programs' run counts and BPF run time (ns). */
static void step_prog_stats(const struct proxy_live *pl, uint64_t *cnt, uint64_t *ns)
{
	struct bpf_program *progs[] = { pl->a->proxy_skel->progs.proxy_step,
					pl->a->proxy_skel->progs.proxy_step_state };
	size_t i;

	*cnt = *ns = 0;
	for (i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);

		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(bpf_program__fd(progs[i]), &info, &len))
			continue;
		*cnt += info.run_cnt;
		*ns += info.run_time_ns;
	}
}

static void hooks_went_on(struct proxy_live *pl, uint64_t now)
{
	step_prog_stats(pl, &pl->cnt0, &pl->ns0);
	pl->on_since = now;
}

static void hooks_went_off(struct proxy_live *pl, uint64_t now, uint32_t npids)
{
	uint64_t cnt, ns;

	step_prog_stats(pl, &cnt, &ns);
	pl->hits += cnt - pl->cnt0;
	pl->bpf_ns += ns - pl->ns0;
	pl->on_ns += now - pl->on_since;
	pl->periods++;
	fprintf(stderr, "ccld-trace: step hooks were on for %.1f s on %u process(es): "
		"%" PRIu64 " hits, %.3f ms in BPF%s\n", (now - pl->on_since) / 1e9,
		npids, cnt - pl->cnt0, (ns - pl->ns0) / 1e6,
		pl->stats_fd < 0 ? " (BPF run-time statistics unavailable)" : "");
}

static void update_hooks(struct proxy_live *pl, uint64_t now)
{
	size_t i, j, was = pl->nhooked;
	char err[256];

	if (!pl->a->proxy_skel)
		return;
	/* the unwanted to the end of hooked[], then off together */
	for (i = 0; i < pl->nhooked;) {
		uint32_t pid = pl->hooked[i];

		if (wanted(pl, pid)) {
			i++;
			continue;
		}
		schedwatch_forget(pl->sw, pid);
		pl->hooked[i] = pl->hooked[--pl->nhooked];
		pl->hooked[pl->nhooked] = pid;
	}
	if (pl->nhooked < was)
		attacher_step_hooks_off(pl->a, pl->hooked + pl->nhooked, was - pl->nhooked, now);
	if (was && !pl->nhooked)
		hooks_went_off(pl, now, (uint32_t)was);
	for (i = 0; i < pl->nsus; i++) {
		for (j = 0; j < pl->sus[i].npids; j++) {
			uint32_t pid = pl->sus[i].pids[j], *n;
			char st;
			int ret;

			if (hooked(pl, pid))
				continue;
			n = realloc(pl->hooked, (pl->nhooked + 1) * sizeof(*n));
			if (!n)
				return;
			pl->hooked = n;
			/* a process gone (a rank killed) is no error, each tick */
			st = procmaps_state((pid_t)pid);
			if (!st || st == 'Z' || st == 'X')
				continue;
			ret = attacher_step_hooks_on(pl->a, (pid_t)pid, now, err, sizeof(err));
			if (ret < 0) {
				fprintf(stderr, "ccld-trace: %s\n", err);
				continue;
			}
			if (!pl->nhooked)
				hooks_went_on(pl, now);
			pl->hooked[pl->nhooked++] = pid;
			if (pl->verbose)
				fprintf(stderr, "ccld-trace: comm %016" PRIx64
					" %s: %d step hooks on pid %u\n", pl->sus[i].comm,
					pl->sus[i].slow ? "slower (rates sampled)" :
					"suspected stuck", ret, pid);
		}
	}
}

void proxy_live_tick(struct proxy_live *pl, uint64_t now_ns, proxy_emit_fn emit,
		     void *ctx)
{
	struct comm_rank *cr;
	size_t i, it;

	/* the hooked processes' proxy threads, before any hooks go off */
	schedwatch_tick(pl->sw, now_ns, emit, ctx);
	update_hooks(pl, now_ns);
	for (i = 0; i < pl->nsus; i++) {
		if (pl->sus[i].slow)
			continue;
		for (it = 0; (cr = state_next_rank(pl->st, &it));) {
			if (cr->hash != pl->sus[i].comm || cr->host_id != pl->host ||
			    cr->state == RS_EXITED || cr->state == RS_DESTROYED)
				continue;
			proxymap_snapshot(pl->map, cr, now_ns, emit, ctx);
		}
	}
}

int proxy_live_snapshot(struct proxy_live *pl, const struct comm_rank *cr, uint64_t now_ns,
			proxy_emit_fn emit, void *ctx)
{
	return proxymap_snapshot(pl->map, cr, now_ns, emit, ctx);
}

size_t proxy_live_suspected(const struct proxy_live *pl, uint64_t *out, size_t max)
{
	size_t i, n = 0;

	for (i = 0; i < pl->nsus && n < max; i++)
		if (!pl->sus[i].slow)
			out[n++] = pl->sus[i].comm;
	return n;
}

size_t proxy_live_suspect_pids(const struct proxy_live *pl, uint64_t comm, uint32_t *out,
			       size_t max)
{
	size_t i, j, n = 0;

	for (i = 0; i < pl->nsus; i++)
		if (!pl->sus[i].slow && pl->sus[i].comm == comm)
			for (j = 0; j < pl->sus[i].npids && n < max; j++)
				out[n++] = pl->sus[i].pids[j];
	return n;
}

int proxy_live_comm_bus(struct proxy_live *pl, const struct comm_rank *cr, uint64_t *bus)
{
	return proxymap_comm_bus(pl->map, cr, bus);
}

void proxy_live_cost(const struct proxy_live *pl, uint64_t *hits, uint64_t *bpf_ns)
{
	*hits = pl->hits;
	*bpf_ns = pl->bpf_ns;
}

void proxy_live_report(struct proxy_live *pl, uint64_t now_ns, FILE *f)
{
	const struct proxymap_stats *ms = proxymap_stats(pl->map);
	int i;

	if (pl->nhooked) {
		uint32_t n = (uint32_t)pl->nhooked;

		attacher_step_hooks_off(pl->a, pl->hooked, pl->nhooked, now_ns);
		pl->nhooked = 0;
		hooks_went_off(pl, now_ns, n);
	}
	if (!pl->a->proxy_skel)
		return;
	fprintf(f, "ccld-trace: tier C: %" PRIu64 " proxy records mapped to comms, %"
		PRIu64 " unmapped; tier E: %" PRIu64 " snapshots (%" PRIu64
		" unreadable); step hooks on %u time(s), %.1f s, %" PRIu64
		" hits, %.3f ms in BPF\n", ms->mapped, ms->unmapped, ms->snapshots,
		ms->snapshot_errors, pl->periods, pl->on_ns / 1e9, pl->hits,
		pl->bpf_ns / 1e6);
	fprintf(f, "ccld-trace: proxy records by transport:");
	for (i = 1; i < NCCL_TR_MAX; i++)
		if (ms->by_transport[i])
			fprintf(f, " %s %" PRIu64, nccl_transport_name(i), ms->by_transport[i]);
	if (ms->by_transport[NCCL_TR_UNKNOWN])
		fprintf(f, " unknown transport %" PRIu64, ms->by_transport[NCCL_TR_UNKNOWN]);
	fprintf(f, "; %" PRIu64 " of unknown direction (not analyzed)\n", ms->no_direction);
}
