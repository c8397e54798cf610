// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Live tracing: load the BPF programs, attach to the NCCL libraries of the
 * chosen processes, drain both ring buffers, and push every record (plus
 * the records this loop makes itself: process attach/exit/state, clock
 * ticks, drop counts) through the capture file and the pipeline.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "attach.h"
#include "ldso.h"
#include "capture.h"
#include "cuda.skel.h"
#include "nccl_api.skel.h"
#include "opts.h"
#include "pipeline.h"
#include "procmaps.h"
#include "proxy.skel.h"
#include "proxy_live.h"
#include "agent_metrics.h"
#include "kmsg.h"
#include "analyzer.h"
#include "rdma_attach.h"
#include "rdma_devs.h"
#include "tcpwatch.h"
#include "proclabels.h"
#include "fleet_agent.h"
#include "snapshot.h"
#include "tracer.h"

#define TICK_NS		250000000ULL
#define RESCAN_NS	500000000ULL
#define TCP_SCAN_NS	1000000000ULL	/* re-reading traced processes' sockets */
#define FLUSH_NS	1000000000ULL

struct tracked {
	pid_t pid;
	char state;
	bool gone;
};

struct tracer {
	const struct trace_opts *o;
	struct nccl_api_bpf *skel;
	struct cuda_bpf *cuda_skel;
	struct proxy_bpf *proxy_skel;
	struct proxy_live *proxy;
	struct attacher att;
	struct ring_buffer *rb;
	struct pipeline *pl;
	struct capture_writer *cap;
	uint32_t host;
	struct ccld_event *batch;
	size_t nbatch, capbatch;
	struct tracked *procs;
	size_t nprocs, capprocs;
	uint64_t main_drops, rare_drops;
	int libs_described;	/* att.libs[] already written as metadata */
	bool table;
	int err;
	struct fleet_agent *fleet;	/* daemon: records go to Redis */
	struct agent_metrics *am;	/* daemon --metrics */
	struct kmsg *kmsg;		/* GPU Xid lines, NULL: not readable */
	struct rdma_watch *rdma;	/* RDMA verbs programs (tier D) */
	struct tcpwatch *tcp;		/* TCP tracepoints, NULL: none attached */
	struct snapshot *snap;		/* state read from memory (attach, SIGUSR1) */
	uint64_t next_tcp_scan;
	uint64_t tcp_records;		/* CCLD_EV_TCP seen */
	char node[64];			/* this host's name in records (as capture headers) */
};

static volatile sig_atomic_t stop, snap_wanted;

static void on_signal(int sig)
{
	stop = 1;
}

/* SIGUSR1: read every traced process's communicators from memory again */
static void on_usr1(int sig)
{
	snap_wanted = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list args)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt,
			va_list args)
{
	return 0;
}

/* Libraries attached since last time, as capture metadata (docs/formats.md). */
static void describe_libs(struct tracer *t)
{
	char text[PATH_MAX + 256];

	for (; t->libs_described < t->att.nlibs; t->libs_described++) {
		const struct traced_lib *l = t->att.libs[t->libs_described];

		if (!t->cap)
			continue;
		snprintf(text, sizeof(text),
			 "lib slot=%d kind=%s build_id=%s version=%s layout=%s "
			 "probes=%d missing=%d path=%s\n", l->slot,
			 l->cuda ? "cuda" : l->ldso ? "ldso" : "nccl",
			 l->build_id[0] ? l->build_id : "-",
			 l->version[0] ? l->version : "-",
			 l->layouts.has_dwarf ? "dwarf" : "none", l->nlinks,
			 l->nmissing, l->path);
		if (capture_write_meta(t->cap, text) && !t->err) {
			fprintf(stderr, "ccld-trace: writing %s: %s\n",
				t->o->output, capture_error(t->cap));
			t->err = 1;
			stop = 1;
		}
	}
}

/* Attaches to PID's NCCL / CUDA libraries; new ones become capture metadata. */
static int attach_pid(struct tracer *t, pid_t pid, char *err, size_t errlen)
{
	int ret = attacher_add_pid(&t->att, pid, err, errlen);

	describe_libs(t);
	return ret;
}

/* One record into the capture file and the pipeline, in that order. */
static void emit(struct tracer *t, const struct ccld_event *ev)
{
	if (t->cap && capture_write_event(t->cap, ev) && !t->err) {
		fprintf(stderr, "ccld-trace: writing %s: %s\n", t->o->output,
			capture_error(t->cap));
		t->err = 1;
		stop = 1;
	}
	pipeline_feed(t->pl, t->host, ev);
}

static void emit_cb(void *ctx, const struct ccld_event *ev);

static void synth(struct ccld_event *ev, __u16 type, pid_t pid, uint64_t ts)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->version = CCLD_ABI_VERSION;
	ev->pid = pid;
	ev->tid = pid;
	ev->ts_ns = ts;
	ev->id.rank = -1;
	ev->id.nranks = -1;
}

static struct tracked *find_tracked(struct tracer *t, pid_t pid)
{
	size_t i;

	for (i = 0; i < t->nprocs; i++) {
		if (t->procs[i].pid == pid)
			return &t->procs[i];
	}
	return NULL;
}

static void read_comm_name(pid_t pid, char *buf, size_t len)
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

/* Where PID runs (pod, namespace, container), one PROC_LABEL record each. */
static void emit_labels(struct tracer *t, pid_t pid, uint64_t ts)
{
	struct proc_labels l;
	const char *v[3];
	struct ccld_event ev;
	int k;

	proc_labels_read(pid, &l);
	v[0] = l.pod;
	v[1] = l.ns;
	v[2] = l.container;
	for (k = 0; k < 3; k++) {
		if (!v[k][0])
			continue;
		synth(&ev, CCLD_EV_PROC_LABEL, pid, ts);
		ev.u.label.kind = (__u8)(CCLD_LABEL_POD + k);
		snprintf(ev.u.label.value, sizeof(ev.u.label.value), "%s", v[k]);
		emit(t, &ev);
	}
}

/* Starts following PID: a PROC_ATTACH record, then exit/stop checks. */
static struct tracked *track(struct tracer *t, pid_t pid, uint64_t ts)
{
	struct tracked *p = find_tracked(t, pid);
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
	p->pid = pid;
	mark_seen(t, pid, true);
	p->state = procmaps_state(pid);
	p->gone = false;
	synth(&ev, CCLD_EV_PROC_ATTACH, pid, ts);
	ev.u.proc.ppid = read_ppid(pid);
	ev.u.proc.state = p->state;
	ev.u.proc.layout_slot = ~0u;
	read_comm_name(pid, ev.u.proc.name, sizeof(ev.u.proc.name));
	emit(t, &ev);
	emit_labels(t, pid, ts);
	return p;
}

static int on_ring_event(void *ctx, void *data, size_t size)
{
	struct tracer *t = ctx;

	if (size < sizeof(struct ccld_event))
		return 0;
	if (t->nbatch == t->capbatch) {
		size_t ncap = t->capbatch ? t->capbatch * 2 : 1024;
		struct ccld_event *n = realloc(t->batch, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->batch = n;
		t->capbatch = ncap;
	}
	memcpy(&t->batch[t->nbatch++], data, sizeof(struct ccld_event));
	return 0;
}

/*
 * A new process mapped an NCCL library; with --all the BPF hook stopped it
 * (SIGSTOP) so that its probes are in place before its first call.
 */
static void on_lib_load(struct tracer *t, const struct ccld_event *ev)
{
	char err[256];
	int ret;

	ret = attach_pid(t, ev->pid, err, sizeof(err));
	if (ret < 0 && ret != -ENOENT)
		fprintf(stderr, "ccld-trace: process %u: %s\n", ev->pid, err);
	if (t->o->all && kill(ev->pid, SIGCONT) && errno != ESRCH)
		fprintf(stderr, "ccld-trace: cannot resume process %u: %s\n",
			ev->pid, strerror(errno));
}

/*
 * An RDMA record from BPF.  QP and CQ records carry their owner (the BPF
 * side checked the PID filter; --all: only processes traced here count);
 * port and device records (pid 0) become one record for each traced
 * process that has the device open, so captures hold the attribution.
 */
static void on_rdma(struct tracer *t, const struct ccld_event *ev)
{
	const struct ccld_rdma *r = &ev->u.rdma;
	struct ccld_event copy;
	char dev[sizeof(r->dev) + 1];
	size_t i, nd = 0;

	snprintf(dev, sizeof(dev), "%.*s", (int)sizeof(r->dev), r->dev);
	if (ev->pid) {
		struct tracked *p = find_tracked(t, ev->pid);

		if (p && !p->gone)
			emit(t, ev);
		else if (t->o->verbose)
			fprintf(stderr, "ccld-trace: RDMA %s QP 0x%x of untraced process %u: "
				"source %u event %u state %u\n", dev, r->qp_num, ev->pid,
				r->source, r->event, r->new_state);
		return;
	}
	for (i = 0; i < t->nprocs; i++) {
		if (t->procs[i].gone || !rdma_dev_in_use("", t->procs[i].pid, dev))
			continue;
		copy = *ev;
		copy.pid = copy.tid = t->procs[i].pid;
		emit(t, &copy);
		nd++;
	}
	if (t->o->verbose || !nd) {
		struct an_nic_event ne = { .source = r->source, .event = r->event,
					   .new_state = r->new_state };

		fprintf(stderr, "ccld-trace: RDMA %s port %u: %s: %zu traced "
			"process(es) use it\n", dev, r->port, an_nic_event_name(&ne), nd);
	}
}

static int ts_cmp(const void *a, const void *b)
{
	const struct ccld_event *x = a, *y = b;

	return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}

/*
 * The two rings are drained one after the other: order the batch by time
 * so a comm's creation (rare ring) precedes its first collective (main).
 */
static void drain_batch(struct tracer *t)
{
	size_t i;

	if (t->nbatch > 1)
		qsort(t->batch, t->nbatch, sizeof(*t->batch), ts_cmp);
	for (i = 0; i < t->nbatch; i++) {
		struct ccld_event *ev = &t->batch[i];

		if (ev->type == CCLD_EV_LIB_LOAD)
			on_lib_load(t, ev);
		if (ev->type == CCLD_EV_RDMA) {
			on_rdma(t, ev);		/* attributed, then emitted */
			continue;
		}
		if (ev->type == CCLD_EV_TCP && t->tcp) {
			tcpwatch_resolve(t->tcp, ev);
			t->tcp_records++;
		}
		/* a proxy record without its comm is of no use to anyone */
		if (ev->type == CCLD_EV_PROXY && !proxy_live_resolve(t->proxy, ev))
			continue;
		if (!find_tracked(t, ev->pid))
			track(t, ev->pid, ev->ts_ns);
		emit(t, ev);
	}
	t->nbatch = 0;
}

static void read_drops(struct tracer *t, uint64_t ts)
{
	int ncpu = libbpf_num_possible_cpus(), fd, c;
	uint64_t sums[2] = { 0, 0 }, *vals;
	struct ccld_event ev;
	__u32 k;

	if (ncpu <= 0)
		return;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return;
	fd = bpf_map__fd(t->skel->maps.drops);
	for (k = 0; k < 2; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (c = 0; c < ncpu; c++)
			sums[k] += vals[c];
	}
	free(vals);
	if (sums[0] == t->main_drops && sums[1] == t->rare_drops)
		return;
	t->main_drops = sums[0];
	t->rare_drops = sums[1];
	synth(&ev, CCLD_EV_LOST, 0, ts);
	ev.u.lost.main_drops = sums[0];
	ev.u.lost.rare_drops = sums[1];
	emit(t, &ev);
}

/* Exit and stop (SIGSTOP, state T) of traced processes. */
static void check_procs(struct tracer *t, uint64_t ts)
{
	struct ccld_event ev;
	size_t i;

	for (i = 0; i < t->nprocs; i++) {
		struct tracked *p = &t->procs[i];
		char st;

		if (p->gone)
			continue;
		st = procmaps_state(p->pid);
		if (!st || st == 'Z' || st == 'X') {
			p->gone = true;
			mark_seen(t, p->pid, false);
			proxy_live_forget(t->proxy, (uint32_t)p->pid);
			synth(&ev, CCLD_EV_PROC_EXIT, p->pid, ts);
			ev.u.proc.exit_code = -1;
			emit(t, &ev);
			if (t->o->npids && !t->o->all)
				fprintf(stderr, "ccld-trace: process %d exited; "
					"tracing the others\n", p->pid);
			continue;
		}
		/* only stop / continue matters (R <-> S changes all the time) */
		if ((st == 'T' || st == 't') != (p->state == 'T' || p->state == 't')) {
			p->state = st;
			synth(&ev, CCLD_EV_PROC_STATE, p->pid, ts);
			ev.u.proc.state = st;
			emit(t, &ev);
		}
	}
}

/*
 * --all: attach to processes that mapped an NCCL library since last time,
 * and read their communicators from memory (they may be running already).
 */
static void rescan(struct tracer *t, uint64_t ts)
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

		if (pid <= 0 || pid == self || find_tracked(t, pid))
			continue;
		ret = attach_pid(t, pid, err, sizeof(err));
		if (ret > 0) {
			track(t, pid, ts);
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
		snapshot_procs(t->snap, fresh, nfresh, now_ns(), emit_cb, t, stderr);
	free(fresh);
}

/* every process traced now, read from memory again (SIGUSR1) */
static void snapshot_all(struct tracer *t)
{
	pid_t *pids = malloc((t->nprocs + 1) * sizeof(*pids));
	size_t i, n = 0;

	if (!pids)
		return;
	for (i = 0; i < t->nprocs; i++)
		if (!t->procs[i].gone)
			pids[n++] = t->procs[i].pid;
	snapshot_procs(t->snap, pids, n, now_ns(), emit_cb, t, stderr);
	free(pids);
}

/* after the tick: new comms' counters once, suspected comms' again */
static void snapshot_tick(struct tracer *t, uint64_t now)
{
	uint64_t sus[64];
	size_t n, i;

	snapshot_new_comms(t->snap, now, emit_cb, t);
	n = proxy_live_suspected(t->proxy, sus, 64);
	for (i = 0; i < n; i++)
		snapshot_refresh(t->snap, sus[i], now, emit_cb, t);
}

static int check_environment(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "ccld-trace: not root: tracing needs root "
			"(or CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE)\n");
		return -EPERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		fprintf(stderr, "ccld-trace: kernel has no BTF "
			"(/sys/kernel/btf/vmlinux missing): CO-RE BPF cannot load\n");
		return -ENOTSUP;
	}
	return 0;
}

/* --all: hook our own dynamic loader (the host's); containers' ones later */
static int watch_loader(struct tracer *t)
{
	struct mapped_file *files = NULL;
	char err[256] = "no dynamic loader mapped";
	size_t n = 0, i;
	int ret = -1;

	if (procmaps_files(getpid(), &files, &n) == 0) {
		for (i = 0; i < n && ret; i++) {
			if (ldso_is_loader(files[i].path))
				ret = attacher_add_ldso(&t->att, files[i].path, err,
							sizeof(err));
		}
	}
	free(files);
	if (ret)
		fprintf(stderr, "ccld-trace: cannot watch library loads (%s): "
			"new processes are found by /proc scans only\n", err);
	return 0;
}

/* Tier B and C programs share tier A's ring buffer, filter and entry maps. */
static int share_maps(struct tracer *t, struct bpf_map *events, struct bpf_map *drops,
		      struct bpf_map *pid_filter, struct bpf_map *entries)
{
	struct {
		struct bpf_map *mine, *theirs;
	} shared[] = {
		{ events, t->skel->maps.events },
		{ drops, t->skel->maps.drops },
		{ pid_filter, t->skel->maps.pid_filter },
		{ entries, t->skel->maps.entries },
	};
	size_t i;
	int ret;

	for (i = 0; i < sizeof(shared) / sizeof(shared[0]); i++) {
		if (!shared[i].mine)
			continue;
		ret = bpf_map__reuse_fd(shared[i].mine, bpf_map__fd(shared[i].theirs));
		if (ret) {
			fprintf(stderr, "ccld-trace: cannot share map %s: %s\n",
				bpf_map__name(shared[i].mine), strerror(-ret));
			return -1;
		}
	}
	return 0;
}

static int load_cuda(struct tracer *t)
{
	int ret;

	t->cuda_skel = cuda_bpf__open();
	if (!t->cuda_skel) {
		fprintf(stderr, "ccld-trace: cannot open tier B BPF object: %s\n",
			strerror(errno));
		return -1;
	}
	if (share_maps(t, t->cuda_skel->maps.events, t->cuda_skel->maps.drops,
		       t->cuda_skel->maps.pid_filter, t->cuda_skel->maps.entries))
		return -1;
	t->cuda_skel->rodata->filter_pids = !t->o->all;
	ret = cuda_bpf__load(t->cuda_skel);
	if (ret) {
		fprintf(stderr, "ccld-trace: cannot load tier B BPF programs: %s\n",
			strerror(-ret));
		return -1;
	}
	return 0;
}

static int load_proxy(struct tracer *t)
{
	int ret;

	t->proxy_skel = proxy_bpf__open();
	if (!t->proxy_skel) {
		fprintf(stderr, "ccld-trace: cannot open tier C BPF object: %s\n",
			strerror(errno));
		return -1;
	}
	if (share_maps(t, t->proxy_skel->maps.events, t->proxy_skel->maps.drops,
		       t->proxy_skel->maps.pid_filter, NULL))
		return -1;
	t->proxy_skel->rodata->filter_pids = !t->o->all;
	ret = proxy_bpf__load(t->proxy_skel);
	if (ret) {
		fprintf(stderr, "ccld-trace: cannot load tier C BPF programs: %s\n",
			strerror(-ret));
		return -1;
	}
	return 0;
}

/* Tier D RDMA programs: whatever this kernel allows, said once; never fatal. */
static int load_rdma(struct tracer *t)
{
	struct rdma_shared_maps m = {
		.events = bpf_map__fd(t->skel->maps.events),
		.rare_events = bpf_map__fd(t->skel->maps.rare_events),
		.drops = bpf_map__fd(t->skel->maps.drops),
		.pid_filter = bpf_map__fd(t->skel->maps.pid_filter),
	};

	/* said with the other kernel evidence, once the processes are attached */
	t->rdma = rdma_watch_open(&m, !t->o->all);
	return 0;
}

static void emit_cb(void *ctx, const struct ccld_event *ev)
{
	emit(ctx, ev);
}

static void on_suspect(void *ctx, const struct an_suspect *s)
{
	struct tracer *t = ctx;

	if (t->proxy)
		proxy_live_suspect(t->proxy, s);
}

static int setup(struct tracer *t)
{
	const struct trace_opts *o = t->o;
	struct capture_header hdr;
	char err[512], summary[512];
	int ret, i;

	t->skel = nccl_api_bpf__open();
	if (!t->skel) {
		fprintf(stderr, "ccld-trace: cannot open BPF object: %s\n",
			strerror(errno));
		return -1;
	}
	t->skel->rodata->filter_pids = !o->all;
	t->skel->rodata->stop_new_nccl = o->all;
	ret = nccl_api_bpf__load(t->skel);
	if (ret) {
		fprintf(stderr, "ccld-trace: cannot load BPF programs: %s%s\n",
			strerror(-ret), ret == -EPERM ?
			" (needs root, or CAP_BPF and CAP_PERFMON)" : "");
		return -1;
	}
	if (load_cuda(t) || load_proxy(t) || load_rdma(t))
		return -1;
	t->att.skel = t->skel;
	t->att.cuda_skel = t->cuda_skel;
	t->att.proxy_skel = t->proxy_skel;
	t->att.watch_loads = o->all;
	t->att.verbose = o->verbose;
	if (o->all && watch_loader(t))
		return -1;
	/* the filter is in place before any probe exists */
	for (i = 0; i < o->npids; i++) {
		__u8 one = 1;
		__u32 pid = o->pids[i];

		if (bpf_map_update_elem(bpf_map__fd(t->skel->maps.pid_filter),
					&pid, &one, BPF_ANY)) {
			fprintf(stderr, "ccld-trace: cannot set PID filter: %s\n",
				strerror(errno));
			return -1;
		}
	}
	capture_header_local(&hdr);
	if (t->node[0])
		snprintf(hdr.host, sizeof(hdr.host), "%s", t->node);
	t->host = pipeline_add_host(t->pl, hdr.host, hdr.realtime_offset_ns);
	t->proxy = proxy_live_new(&t->att, pipeline_state(t->pl), t->host, o->verbose);
	t->snap = t->proxy ? snapshot_new(&t->att, t->proxy, pipeline_state(t->pl), t->host,
					  o->verbose) : NULL;
	if (!t->proxy || !t->snap) {
		fprintf(stderr, "ccld-trace: out of memory\n");
		return -1;
	}
	if (o->output) {
		t->cap = capture_create(o->output, &hdr, err, sizeof(err));
		if (!t->cap) {
			fprintf(stderr, "ccld-trace: %s\n", err);
			return -1;
		}
		describe_libs(t);	/* the loaders hooked so far */
	}
	for (i = 0; i < o->npids; i++) {
		char name[32];

		ret = attach_pid(t, o->pids[i], err, sizeof(err));
		if (ret < 0) {
			fprintf(stderr, "ccld-trace: %s\n", err);
			return -1;
		}
		if (ret == 0) {
			read_comm_name(o->pids[i], name, sizeof(name));
			fprintf(stderr, "ccld-trace: no NCCL in process %d (%s)\n",
				o->pids[i], name);
			return -1;
		}
		track(t, o->pids[i], now_ns());
	}
	/* the job as it is now: every comm read from memory, before any call */
	if (o->npids)
		snapshot_procs(t->snap, o->pids, (size_t)o->npids, now_ns(), emit_cb, t, stderr);
	if (o->all)
		rescan(t, now_ns());
	/* tier D: TCP trouble on the traced processes' sockets */
	t->tcp = tcpwatch_open(bpf_map__fd(t->skel->maps.events),
			       bpf_map__fd(t->skel->maps.drops), summary, sizeof(summary));
	fprintf(stderr, "ccld-trace: kernel evidence: rdma: %s\n",
		rdma_watch_summary(t->rdma));
	fprintf(stderr, "ccld-trace: kernel evidence: %s\n", summary);
	/* tier D: GPU errors from the kernel log (absent: said once, goes on) */
	t->kmsg = kmsg_open(err, sizeof(err));
	if (!t->kmsg)
		fprintf(stderr, "ccld-trace: no GPU Xid evidence: %s\n", err);
	t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.events),
				 on_ring_event, t, NULL);
	if (!t->rb || ring_buffer__add(t->rb,
				       bpf_map__fd(t->skel->maps.rare_events),
				       on_ring_event, t)) {
		fprintf(stderr, "ccld-trace: cannot open ring buffers: %s\n",
			strerror(errno));
		return -1;
	}
	return 0;
}

static bool all_gone(const struct tracer *t)
{
	size_t i;

	for (i = 0; i < t->nprocs; i++) {
		if (!t->procs[i].gone)
			return false;
	}
	return t->nprocs > 0;
}

/*
 * An Xid line: one XID record for each traced process with a comm on that
 * GPU (comm->busId, read from its memory), so that captures hold the
 * attribution and replay gives the same verdicts.
 */
static void on_xid(void *ctx, const struct xid_line *x)
{
	struct tracer *t = ctx;
	struct comm_rank *cr;
	struct ccld_event ev;
	uint32_t done[64];
	size_t it, nd = 0, i;

	for (it = 0; (cr = state_next_rank(pipeline_state(t->pl), &it));) {
		uint64_t bus;

		if (cr->state == RS_EXITED || proxy_live_comm_bus(t->proxy, cr, &bus) ||
		    bus != x->bus_id)
			continue;
		for (i = 0; i < nd && done[i] != cr->pid; i++)
			;
		if (i < nd || nd == sizeof(done) / sizeof(done[0]))
			continue;
		done[nd++] = cr->pid;
		synth(&ev, CCLD_EV_XID, cr->pid, now_ns());
		ev.u.xid.bus_id = x->bus_id;
		ev.u.xid.xid = x->xid;
		snprintf(ev.u.xid.text, sizeof(ev.u.xid.text), "%s", x->text);
		emit(t, &ev);
	}
	if (t->o->verbose || !nd)
		fprintf(stderr, "ccld-trace: GPU %s reported Xid %u (%s): %zu traced"
			" process(es) use it\n", x->bus, x->xid, x->text, nd);
}

/* the TCP watch follows the sockets of the processes traced now */
static void scan_sockets(struct tracer *t)
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
}

static void update_metrics(struct tracer *t, uint64_t now)
{
	struct agent_numbers n = { 0 };
	uint64_t bpf_ns;
	size_t i;

	for (i = 0; i < t->nprocs; i++)
		n.processes += !t->procs[i].gone;
	proxy_live_cost(t->proxy, &n.step_hook_hits, &bpf_ns);
	n.step_hook_bpf_s = bpf_ns / 1e9;
	agent_metrics_update(t->am, pipeline_state(t->pl), t->fleet, &n, now);
}

static void loop(struct tracer *t, uint64_t start)
{
	const struct trace_opts *o = t->o;
	uint64_t next_tick = start, next_rescan = start + RESCAN_NS;
	uint64_t next_flush = start + FLUSH_NS, next_table = start;
	struct ccld_event ev;
	int ret;

	while (!stop) {
		uint64_t now;

		ret = ring_buffer__poll(t->rb, 100);
		if (ret < 0 && ret != -EINTR) {
			fprintf(stderr, "ccld-trace: ring buffer poll: %s\n",
				strerror(-ret));
			t->err = 1;
			break;
		}
		drain_batch(t);
		now = now_ns();
		if (now >= next_tick) {
			read_drops(t, now);
			check_procs(t, now);
			synth(&ev, CCLD_EV_TICK, 0, now);
			emit(t, &ev);
			if (t->kmsg)
				kmsg_poll(t->kmsg, on_xid, t);
			if (t->tcp && now >= t->next_tcp_scan) {
				scan_sockets(t);
				t->next_tcp_scan = now + TCP_SCAN_NS;
			}
			/* after the tick: the analyzer may have asked for a closer look */
			proxy_live_tick(t->proxy, now, emit_cb, t);
			snapshot_tick(t, now);
			if (snap_wanted) {
				snap_wanted = 0;
				snapshot_all(t);
			}
			if (t->am)
				update_metrics(t, now);
			next_tick = now + TICK_NS;
		}
		if (t->fleet)
			fleet_agent_tick(t->fleet, stderr);
		if (o->all && now >= next_rescan) {
			rescan(t, now);
			next_rescan = now + RESCAN_NS;
		}
		if (t->cap && now >= next_flush) {
			capture_flush(t->cap);
			next_flush = now + FLUSH_NS;
		}
		if (t->table && now >= next_table) {
			out_comm_table(stdout, pipeline_state(t->pl), true);
			next_table = now + FLUSH_NS;
		}
		if (o->duration_s > 0 && now - start >= o->duration_s * 1e9)
			break;
		if (!o->all && all_gone(t)) {
			fprintf(stderr, "ccld-trace: every traced process exited\n");
			break;
		}
	}
	/* what the rings still hold */
	ring_buffer__consume(t->rb);
	drain_batch(t);
	synth(&ev, CCLD_EV_TICK, 0, now_ns());
	emit(t, &ev);
}

int tracer_run(const struct trace_opts *o)
{
	struct pipeline_opts po = {
		.out = stdout, .json = o->json, .events = o->events,
		.stall_s = o->stall_s, .hang_s = o->hang_s,
		.slow_window_s = o->slow_window_s,
		.slow_min_iters = o->slow_min_iters, .slow_min_s = o->slow_min_s,
	};
	struct tracer t = { .o = o };
	uint64_t start;
	int i, rc = 1;

	po.suspect = on_suspect;
	po.suspect_ctx = &t;
	if (o->daemon) {
		struct capture_header hdr;
		char err[512];

		capture_header_local(&hdr);
		snprintf(t.node, sizeof(t.node), "%s", o->node ? o->node : hdr.host);
		t.fleet = fleet_agent_new(o->redis_url, t.node, o->shards, err, sizeof(err));
		if (!t.fleet) {
			fprintf(stderr, "ccld-trace: %s\n", err);
			return 1;
		}
		/* the node's own view is partial: its verdicts are not printed */
		po.out = fopen("/dev/null", "w");
		if (!po.out) {
			fprintf(stderr, "ccld-trace: /dev/null: %s\n", strerror(errno));
			fleet_agent_free(t.fleet);
			return 1;
		}
		po.json = true;
		po.tap = fleet_agent_tap;
		po.tap_ctx = t.fleet;
		if (o->metrics_addr) {
			t.am = agent_metrics_new(o->metrics_addr, err, sizeof(err));
			if (!t.am) {
				fprintf(stderr, "ccld-trace: %s\n", err);
				fleet_agent_free(t.fleet);
				fclose(po.out);
				return 1;
			}
		}
	}

	if (check_environment())
		return 1;
	for (i = 0; i < o->npids; i++) {
		if (!procmaps_state(o->pids[i])) {
			fprintf(stderr, "ccld-trace: no such process: %d\n",
				o->pids[i]);
			return 1;
		}
	}
	libbpf_set_print(o->verbose ? libbpf_print : libbpf_quiet);
	t.table = isatty(STDOUT_FILENO) && !o->json && !o->events && !o->record;
	po.quiet = t.table;
	t.pl = pipeline_new(&po);
	if (!t.pl) {
		fprintf(stderr, "ccld-trace: out of memory\n");
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGUSR1, on_usr1);
	if (setup(&t))
		goto out;
	fprintf(stderr, "ccld-trace: tracing %s%s%s; Ctrl-C to stop\n",
		o->all ? "all NCCL processes" : "the given processes",
		t.fleet ? " as node " : "", t.fleet ? t.node : "");
	start = now_ns();
	loop(&t, start);
	pipeline_finish(t.pl, (now_ns() - start) / 1e9);
	proxy_live_report(t.proxy, now_ns(), stderr);
	if (t.tcp)
		fprintf(stderr, "ccld-trace: tier D: %llu TCP records (retransmits, resets, state"
			" changes) on %zu watched sockets\n", (unsigned long long)t.tcp_records,
			tcpwatch_size(t.tcp));
	if (t.fleet)
		fleet_agent_report(t.fleet, stderr);
	rc = t.err ? 1 : 0;
out:
	if (t.cap && capture_close(t.cap)) {
		fprintf(stderr, "ccld-trace: closing %s: %s\n", o->output,
			capture_error(t.cap));
		capture_close(t.cap);	/* after a failure the second call frees */
		rc = 1;
	}
	ring_buffer__free(t.rb);
	kmsg_close(t.kmsg);
	rdma_watch_free(t.rdma);
	tcpwatch_free(t.tcp);
	snapshot_free(t.snap);
	proxy_live_free(t.proxy);
	attacher_free(&t.att);
	proxy_bpf__destroy(t.proxy_skel);
	cuda_bpf__destroy(t.cuda_skel);
	nccl_api_bpf__destroy(t.skel);
	pipeline_free(t.pl);
	fleet_agent_free(t.fleet);
	agent_metrics_free(t.am);
	if (t.fleet && po.out)
		fclose(po.out);
	free(t.batch);
	free(t.procs);
	return rc;
}
