// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The processes live tracing follows: a PROC_ATTACH record (with its
 * labels) when one is first seen, exits and stops from /proc, pid reuse,
 * --all's rescans, and the reads of their memory (snapshot.c) and
 * sockets (tcpwatch.c) that go with them.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "nccl_api.skel.h"
#include "proclabels.h"
#include "procmaps.h"
#include "proxy_live.h"
#include "snapshot.h"
#include "endpoints.h"
#include "tcpwatch.h"
#include "tracer_int.h"

/* --all: an exited process's entry is kept this long for its late records */
#define GONE_KEEP_NS 5000000000ULL
#define TRIM_SETTLE_NS 2000000000ULL	/* a few ticks past the forget */

struct tracked *tr_find_tracked(struct tracer *t, pid_t pid)
{
	size_t i;

	for (i = 0; i < t->nprocs; i++) {
		if (t->procs[i].pid == pid)
			return &t->procs[i];
	}
	return NULL;
}

static void untrack(struct tracer *t, struct tracked *p)
{
	*p = t->procs[--t->nprocs];
}

/*
 * The entry of the process that now has PID: an exited process's entry
 * is dropped once another process runs with its pid (--all sees pids
 * reused), so that the new one is tracked from its first record.
 */
struct tracked *tr_current_tracked(struct tracer *t, pid_t pid)
{
	struct tracked *p = tr_find_tracked(t, pid);
	uint64_t start;
	char st;

	if (!p || !p->gone || procmaps_identity(pid, &st, &start) ||
	    start == p->start || st == 'Z' || st == 'X')
		return p;
	untrack(t, p);
	return NULL;
}

void tr_read_comm_name(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	buf[0] = '\0';
	f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(buf, len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static pid_t read_ppid(pid_t pid)
{
	char path[64], line[256];
	pid_t ppid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "PPid: %d", &ppid) == 1)
			break;
	}
	fclose(f);
	return ppid;
}

/* seen_pids: processes the ld.so hook must leave alone (already handled) */
static void mark_seen(struct tracer *t, pid_t pid, bool seen)
{
	int fd = bpf_map__fd(t->skel->maps.seen_pids);
	__u32 key = pid;
	__u8 one = 1;

	if (seen)
		bpf_map_update_elem(fd, &key, &one, BPF_ANY);
	else
		bpf_map_delete_elem(fd, &key);
}

static void emit_label(struct tracer *t, pid_t pid, uint64_t ts, int kind, const char *value)
{
	struct ccld_event ev;

	tr_synth(&ev, CCLD_EV_PROC_LABEL, pid, ts);
	ev.u.label.kind = (__u8)kind;
	snprintf(ev.u.label.value, sizeof(ev.u.label.value), "%.*s",
		 (int)sizeof(ev.u.label.value) - 1, value);
	tr_emit(t, &ev);
}

/*
 * Where PID runs (pod, namespace, container), the ranks its launcher gave
 * it, its NCCL library and NCCL_* settings: one PROC_LABEL record each.
 */
static void emit_labels(struct tracer *t, pid_t pid, uint64_t ts)
{
	const struct traced_lib *lib = attacher_pid_nccl(&t->att, pid);
	struct proc_labels *l = malloc(sizeof(*l));
	char v[sizeof(lib->version) + sizeof(lib->build_id) + 2];
	int k;

	if (!l)
		return;
	proc_labels_read(pid, l);
	{
		/* in the order of the kinds, CCLD_LABEL_POD on */
		const char *where[] = { l->pod, l->ns, l->container, l->rank, l->local_rank };

		for (k = 0; k < 5; k++)
			if (where[k][0])
				emit_label(t, pid, ts, CCLD_LABEL_POD + k, where[k]);
	}
	/* the library first: the analyzer compares the settings of processes it knows */
	if (lib) {
		snprintf(v, sizeof(v), "%s %s", lib->version[0] ? lib->version : "?",
			 lib->build_id[0] ? lib->build_id : "?");
		emit_label(t, pid, ts, CCLD_LABEL_NCCL_LIB, v);
		for (k = 0; k < l->nnccl_env; k++)
			emit_label(t, pid, ts, CCLD_LABEL_NCCL_ENV, l->nccl_env[k]);
	}
	free(l);
}

/* P's process has exited (or its pid went to another process). */
static void mark_gone(struct tracer *t, struct tracked *p, uint64_t ts)
{
	struct ccld_event ev;

	if (t->o->verbose)
		fprintf(stderr, "ccld-trace: process %d exited\n", p->pid);
	p->gone = true;
	p->gone_ns = ts;
	mark_seen(t, p->pid, false);
	attacher_pid_gone(&t->att, p->pid, ts);
	snapshot_forget(t->snap, p->pid);
	tr_forget_drops(t, p->pid);
	proxy_live_forget(t->proxy, (uint32_t)p->pid);
	/* the analyzer forgets it forget_s from now */
	tr_trim_after(t, ts + t->forget_ns + TRIM_SETTLE_NS);
	tr_synth(&ev, CCLD_EV_PROC_EXIT, p->pid, ts);
	ev.u.proc.exit_code = -1;
	tr_emit(t, &ev);
	if (t->o->npids && !t->o->all)
		fprintf(stderr, "ccld-trace: process %d exited; tracing the others\n", p->pid);
}

/*
 * Starts following PID: a PROC_ATTACH record, then exit/stop checks.  A
 * process already gone (its records drained after it exited: a short job)
 * has no start time; tr_check_procs() takes it as exited.
 */
struct tracked *tr_track(struct tracer *t, pid_t pid, uint64_t ts)
{
	struct tracked *p = tr_find_tracked(t, pid);
	struct ccld_event ev;

	if (p)
		return p;
	if (t->nprocs == t->capprocs) {
		size_t ncap = t->capprocs ? t->capprocs * 2 : 64;
		struct tracked *n = realloc(t->procs, ncap * sizeof(*n));

		if (!n)
			return NULL;
		t->procs = n;
		t->capprocs = ncap;
	}
	p = &t->procs[t->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	mark_seen(t, pid, true);
	if (procmaps_identity(pid, &p->state, &p->start))
		p->state = 0, p->start = 0;
	if (t->o->verbose)
		fprintf(stderr, "ccld-trace: process %d (state %c) tracked\n", pid,
			p->state ? p->state : '?');
	tr_synth(&ev, CCLD_EV_PROC_ATTACH, pid, ts);
	ev.u.proc.ppid = read_ppid(pid);
	ev.u.proc.state = p->state;
	ev.u.proc.layout_slot = ~0u;
	tr_read_comm_name(pid, ev.u.proc.name, sizeof(ev.u.proc.name));
	tr_emit(t, &ev);
	emit_labels(t, pid, ts);
	return p;
}

/* Exit and stop (SIGSTOP, state T) of traced processes. */
void tr_check_procs(struct tracer *t, uint64_t ts)
{
	struct ccld_event ev;
	size_t i;

	/* backwards: untrack() moves the last entry, already seen, into i */
	for (i = t->nprocs; i-- > 0;) {
		struct tracked *p = &t->procs[i];
		uint64_t start;
		char st;

		if (p->gone) {
			/* --all: bounded under churn (-p keeps its few) */
			if (t->o->all && ts - p->gone_ns > GONE_KEEP_NS)
				untrack(t, p);
			continue;
		}
		if (procmaps_identity(p->pid, &st, &start))
			st = 0;
		/*
		 * a start time of its own: the pid went to a new process; none
		 * known: it was gone when tracked, and whatever has the pid now
		 * is another process (the pid reused, as job after job does)
		 */
		if (procmaps_exited(st) || !p->start || start != p->start) {
			mark_gone(t, p, ts);
			continue;
		}
		/* only stop / continue matters (R <-> S changes all the time) */
		if ((st == 'T' || st == 't') != (p->state == 'T' || p->state == 't')) {
			p->state = st;
			tr_synth(&ev, CCLD_EV_PROC_STATE, p->pid, ts);
			ev.u.proc.state = st;
			tr_emit(t, &ev);
		}
	}
}

/*
 * --all: attach to processes that mapped an NCCL library since last time,
 * and read their communicators from memory (they may be running already).
 */
void tr_rescan(struct tracer *t, uint64_t ts)
{
	char err[256];
	struct dirent *de;
	DIR *d = opendir("/proc");
	pid_t self = getpid(), *fresh = NULL;
	size_t nfresh = 0;

	if (!d)
		return;
	while ((de = readdir(d))) {
		pid_t pid = atoi(de->d_name), *n;
		int ret;

		if (pid <= 0 || pid == self || tr_current_tracked(t, pid))
			continue;
		ret = tr_attach_pid(t, pid, err, sizeof(err));
		if (ret > 0) {
			tr_track(t, pid, ts);
			n = realloc(fresh, (nfresh + 1) * sizeof(*n));
			if (n) {
				fresh = n;
				fresh[nfresh++] = pid;
			}
		} else if (ret < 0 && ret != -ENOENT && ret != -EACCES &&
			   ret != -ESRCH && t->o->verbose) {
			fprintf(stderr, "ccld-trace: %s\n", err);
		}
	}
	closedir(d);
	if (nfresh)
		snapshot_procs(t->snap, fresh, nfresh, now_ns(), tr_emit_cb, t, stderr);
	free(fresh);
}

/* every process traced now, read from memory again (SIGUSR1) */
void tr_snapshot_all(struct tracer *t)
{
	pid_t *pids = malloc((t->nprocs + 1) * sizeof(*pids));
	size_t i, n = 0;

	if (!pids)
		return;
	for (i = 0; i < t->nprocs; i++)
		if (!t->procs[i].gone)
			pids[n++] = t->procs[i].pid;
	snapshot_procs(t->snap, pids, n, now_ns(), tr_emit_cb, t, stderr);
	free(pids);
}

/* after the tick: new comms' counters once, suspected comms' again */
void tr_snapshot_tick(struct tracer *t, uint64_t now)
{
	uint64_t sus[64];
	size_t n, i;

	snapshot_new_comms(t->snap, now, tr_emit_cb, t);
	snapshot_init_poll(t->snap, now, tr_emit_cb, t);
	n = proxy_live_suspected(t->proxy, sus, 64);
	for (i = 0; i < n; i++) {
		uint32_t pids[64];
		size_t np;

		np = proxy_live_suspect_pids(t->proxy, sus[i], pids, 64);
		snapshot_refresh(t->snap, sus[i], pids, np, now, tr_emit_cb, t);
	}
}

bool tr_all_gone(const struct tracer *t)
{
	size_t i;

	for (i = 0; i < t->nprocs; i++) {
		if (!t->procs[i].gone)
			return false;
	}
	return t->nprocs > 0;
}

/* the sockets' local ends, as records: where they changed since the last scan */
static void emit_endpoints(struct tracer *t, uint64_t now)
{
	size_t n = tcpwatch_nsockets(t->tcp), i;
	struct ccld_tcp_key *keys = malloc((n + 1) * sizeof(*keys));
	uint32_t *pids = malloc((n + 1) * sizeof(*pids));

	if (keys && pids) {
		for (i = 0; i < n; i++)
			tcpwatch_socket(t->tcp, i, &keys[i], &pids[i]);
		endpoints_update(t->endpoints, keys, pids, n, now, tr_emit_cb, t);
	}
	free(keys);
	free(pids);
}

/* the TCP watch follows the sockets of the processes traced now */
void tr_scan_sockets(struct tracer *t, uint64_t now)
{
	uint32_t *pids = malloc((t->nprocs + 1) * sizeof(*pids));
	size_t i, n = 0;

	if (!pids)
		return;
	for (i = 0; i < t->nprocs; i++)
		if (!t->procs[i].gone)
			pids[n++] = (uint32_t)t->procs[i].pid;
	tcpwatch_scan(t->tcp, pids, n);
	free(pids);
	if (t->endpoints)
		emit_endpoints(t, now);
}
