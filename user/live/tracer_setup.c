// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Live tracing's start: the environment checked, the BPF programs of every
 * tier loaded (tiers B and C share tier A's maps), the reaper started, the
 * given processes attached and read from memory, the rings opened.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "caps.h"
#include "capture.h"
#include "cuda.skel.h"
#include "kmsg.h"
#include "ldso.h"
#include "nccl_api.skel.h"
#include "pipeline.h"
#include "procmaps.h"
#include "proxy.skel.h"
#include "proxy_live.h"
#include "rdma_attach.h"
#include "snapshot.h"
#include "endpoints.h"
#include "tcpwatch.h"
#include "tracer_int.h"

/* --stop-new: the BPF hook stops a process only with a beat this fresh */
#define HEARTBEAT_MAX_NS 500000000ULL

int tr_check_environment(const struct trace_opts *o)
{
	if (geteuid() != 0) {
		fprintf(stderr, "ccld-trace: not root: tracing needs uid 0 with "
			"the capabilities in docs/deploy.md\n");
		return -EPERM;
	}
	/*
	 * A process the BPF hook stopped is continued by kill(SIGCONT); for a
	 * process of another user in another session that needs CAP_KILL.
	 * Without it the job would stay stopped: refuse before stopping any.
	 */
	if (o->all && o->stop_new && !have_cap(CAP_KILL)) {
		fprintf(stderr, "ccld-trace: --stop-new needs CAP_KILL (to continue "
			"the processes it stops); run without --stop-new or grant it\n");
		return -EPERM;
	}
	/* --all goes on without these, but other users' jobs are skipped */
	if (o->all && !have_cap(CAP_SYS_PTRACE))
		fprintf(stderr, "ccld-trace: warning: no CAP_SYS_PTRACE: processes "
			"of other users or containers cannot be traced\n");
	if (o->all && !have_cap(CAP_DAC_READ_SEARCH))
		fprintf(stderr, "ccld-trace: warning: no CAP_DAC_READ_SEARCH: NCCL "
			"in another user's private directory cannot be traced\n");
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
	/* not allowed to create a uprobe: every other one would fail too, and
	 * a daemon that traces nothing must not look healthy */
	if (ret == -EACCES || ret == -EPERM) {
		fprintf(stderr, "ccld-trace: %s\n", err);
		return -1;
	}
	if (ret)
		fprintf(stderr, "ccld-trace: cannot watch library loads (%s): "
			"new processes are found by /proc scans only\n", err);
	return 0;
}

/* Tier B and C programs share tier A's ring buffer, filter and entry maps. */
static int share_maps(struct tracer *t, struct bpf_map *events, struct bpf_map *drops,
		      struct bpf_map *pid_drops, struct bpf_map *pid_filter,
		      struct bpf_map *entries)
{
	struct {
		struct bpf_map *mine, *theirs;
	} shared[] = {
		{ events, t->skel->maps.events },
		{ drops, t->skel->maps.drops },
		{ pid_drops, t->skel->maps.pid_drops },
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
		       t->cuda_skel->maps.pid_drops, t->cuda_skel->maps.pid_filter,
		       t->cuda_skel->maps.entries))
		return -1;
	t->cuda_skel->rodata->filter_pids = !t->o->all;
	ulink_prepare(t->cuda_skel->obj);
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
		       t->proxy_skel->maps.pid_drops, t->proxy_skel->maps.pid_filter, NULL))
		return -1;
	t->proxy_skel->rodata->filter_pids = !t->o->all;
	ulink_prepare(t->proxy_skel->obj);
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
		.pid_drops = bpf_map__fd(t->skel->maps.pid_drops),
		.pid_filter = bpf_map__fd(t->skel->maps.pid_filter),
	};

	/* said with the other kernel evidence, once the processes are attached */
	t->rdma = rdma_watch_open(&m, !t->o->all);
	return 0;
}

static int pid_filter_add(struct tracer *t, __u32 pid)
{
	__u8 one = 1;

	if (bpf_map_update_elem(bpf_map__fd(t->skel->maps.pid_filter), &pid,
				&one, BPF_ANY)) {
		fprintf(stderr, "ccld-trace: cannot add process %u to the PID filter: %s\n",
			pid, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * PID has exited: a zombie its parent has not reaped, or no process at all.
 * Said on stderr; such a pid is not traced.
 */
static bool exited(pid_t pid)
{
	char st = procmaps_state(pid);

	if (!procmaps_exited(st))
		return false;
	fprintf(stderr, "ccld-trace: process %d has exited%s: not traced; its ranks"
		" show as missing in their comms\n", pid,
		st ? " (a zombie: its parent has not reaped it)" : "");
	return true;
}

/* before any probe exists: the reaper must not inherit one (reaper.c) */
static int start_reaper(struct tracer *t)
{
	struct reaper_opts ro = {
		.stopped_fd = bpf_map__fd(t->skel->maps.stopped_pids),
		.heartbeat_fd = bpf_map__fd(t->skel->maps.heartbeat),
		.timeout_ns = (uint64_t)(t->o->stop_timeout_s * 1e9),
		.heartbeat_max_ns = HEARTBEAT_MAX_NS,
	};
	char err[256];

	if (reaper_start(&t->reaper, &ro, err, sizeof(err))) {
		fprintf(stderr, "ccld-trace: --stop-new: %s\n", err);
		return -1;
	}
	t->stopping = true;
	if (t->o->verbose)
		fprintf(stderr, "ccld-trace: reaper is process %d: a stop lasts %g s "
			"at most\n", t->reaper.pid, t->o->stop_timeout_s);
	return 0;
}

/*
 * Attaches to the -p processes: each live one is traced (its pid added to
 * TRACED, *NTRACED of them); one that has exited is said and left out.
 * -1 with the cause printed where a live one cannot be traced.
 */
static int attach_pids(struct tracer *t, pid_t *traced, size_t *ntraced)
{
	const struct trace_opts *o = t->o;
	char err[512], name[32];
	int i, ret;

	for (i = 0; i < o->npids; i++) {
		/*
		 * A rank that died before we came (exited, not yet reaped by its
		 * launcher, or gone) is part of what the user wants diagnosed:
		 * its peers are traced, and their comms show it missing.
		 */
		if (exited(o->pids[i]))
			continue;
		ret = tr_attach_pid(t, o->pids[i], err, sizeof(err));
		if (ret <= 0 && exited(o->pids[i]))
			continue;
		if (ret < 0) {
			fprintf(stderr, "ccld-trace: %s\n", err);
			return -1;
		}
		if (ret == 0 && explain_denied(o->pids[i], err, sizeof(err))) {
			fprintf(stderr, "ccld-trace: process %d: %s\n", o->pids[i], err);
			return -1;
		}
		if (ret == 0) {
			tr_read_comm_name(o->pids[i], name, sizeof(name));
			fprintf(stderr, "ccld-trace: no NCCL in process %d (%s)\n",
				o->pids[i], name);
			return -1;
		}
		/*
		 * Probes are attached one function at a time: a process joins
		 * the filter once all of its are in place, so that what is
		 * traced of it is every call from one moment on, not
		 * AllReduces from one moment and AllGathers from another.
		 */
		if (pid_filter_add(t, o->pids[i]))
			return -1;
		tr_track(t, o->pids[i], now_ns());
		traced[(*ntraced)++] = o->pids[i];
	}
	if (o->npids && !*ntraced) {
		fprintf(stderr, "ccld-trace: none of the %d given processes is alive\n", o->npids);
		return -1;
	}
	return 0;
}

int tr_setup(struct tracer *t)
{
	const struct trace_opts *o = t->o;
	struct capture_header hdr;
	char err[512], summary[512];
	pid_t *traced;
	size_t ntraced = 0;
	int ret;

	t->skel = nccl_api_bpf__open();
	if (!t->skel) {
		fprintf(stderr, "ccld-trace: cannot open BPF object: %s\n",
			strerror(errno));
		return -1;
	}
	t->skel->rodata->filter_pids = !o->all;
	t->skel->rodata->stop_new_nccl = o->all && o->stop_new;
	t->skel->rodata->heartbeat_max_ns = HEARTBEAT_MAX_NS;
	if (o->ring_size) {
		ret = bpf_map__set_max_entries(t->skel->maps.events, (__u32)o->ring_size);
		if (ret) {
			fprintf(stderr, "ccld-trace: cannot size the ring buffer to %lu bytes: %s\n",
				o->ring_size, strerror(-ret));
			return -1;
		}
		if (o->verbose)
			fprintf(stderr, "ccld-trace: main ring buffer: %lu bytes\n", o->ring_size);
	}
	ulink_prepare(t->skel->obj);
	ret = nccl_api_bpf__load(t->skel);
	if (ret) {
		fprintf(stderr, "ccld-trace: cannot load BPF programs: %s%s\n",
			strerror(-ret), ret == -EPERM ? load_eperm_hint() : "");
		return -1;
	}
	if (o->all && o->stop_new && start_reaper(t))
		return -1;
	if (load_cuda(t) || load_proxy(t) || load_rdma(t))
		return -1;
	if (o->verbose)
		fprintf(stderr, "ccld-trace: uprobes: %s\n", ulink_multi_supported() ?
			"uprobe_multi links (one per program and file)" :
			ulink_multi_kernel() ? "one perf-event uprobe per probe"
			" (CCLD_UPROBE_MULTI=0)" :
			"one perf-event uprobe per probe (this kernel has no"
			" uprobe_multi links)");
	t->att.skel = t->skel;
	t->att.cuda_skel = t->cuda_skel;
	t->att.proxy_skel = t->proxy_skel;
	t->att.watch_loads = o->all;
	t->att.verbose = o->verbose;
	if (o->all && watch_loader(t))
		return -1;
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
	snapshot_set_entries(t->snap, bpf_map__fd(t->skel->maps.entries));
	if (o->output) {
		t->cap = capture_create(o->output, &hdr, err, sizeof(err));
		if (!t->cap) {
			fprintf(stderr, "ccld-trace: %s\n", err);
			return -1;
		}
		tr_describe_libs(t);	/* the loaders hooked so far */
	}
	traced = calloc((size_t)o->npids + 1, sizeof(*traced));
	if (!traced) {
		fprintf(stderr, "ccld-trace: out of memory\n");
		return -1;
	}
	if (attach_pids(t, traced, &ntraced)) {
		free(traced);
		return -1;
	}
	/* the job as it is now: every comm read from memory, before any call */
	if (ntraced)
		snapshot_procs(t->snap, traced, ntraced, now_ns(), tr_emit_cb, t, stderr);
	free(traced);
	if (o->all)
		tr_rescan(t, now_ns());
	/* tier D: TCP trouble on the traced processes' sockets */
	t->tcp = tcpwatch_open(bpf_map__fd(t->skel->maps.events),
			       bpf_map__fd(t->skel->maps.drops),
			       bpf_map__fd(t->skel->maps.pid_drops), summary, sizeof(summary));
	if (t->tcp && !(t->endpoints = endpoints_new()))
		fprintf(stderr, "ccld-trace: no memory for the TCP endpoints: NCCL's warnings"
			" will not name their peers\n");
	fprintf(stderr, "ccld-trace: kernel evidence: rdma: %s\n",
		rdma_watch_summary(t->rdma));
	fprintf(stderr, "ccld-trace: kernel evidence: %s\n", summary);
	/* tier D: GPU errors from the kernel log (absent: said once, goes on) */
	t->kmsg = kmsg_open(err, sizeof(err));
	if (!t->kmsg)
		fprintf(stderr, "ccld-trace: no GPU Xid evidence: %s\n", err);
	t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.events),
				 tr_on_ring_event, t, NULL);
	if (!t->rb || ring_buffer__add(t->rb,
				       bpf_map__fd(t->skel->maps.rare_events),
				       tr_on_ring_event, t)) {
		fprintf(stderr, "ccld-trace: cannot open ring buffers: %s\n",
			strerror(errno));
		return -1;
	}
	return 0;
}
