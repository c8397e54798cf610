// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Live tracing: load the BPF programs, attach to the NCCL libraries of the
 * chosen processes, drain both ring buffers, and push every record (plus
 * the records this loop makes itself: process attach/exit/state, clock
 * ticks, drop counts) through the capture file and the pipeline.
 *
 * This file: the loop, and tracer_run around it; tracer_int.h says which
 * file has the rest.
 */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "agent_metrics.h"
#include "analyzer.h"
#include "capture.h"
#include "fleet_agent.h"
#include "fleet_cred.h"
#include "fleet_stream.h"
#include "kmsg.h"
#include "nccl_api.skel.h"
#include "cuda.skel.h"
#include "pipeline.h"
#include "procmaps.h"
#include "proxy.skel.h"
#include "proxy_live.h"
#include "rdma_attach.h"
#include "sha256.h"
#include "snapshot.h"
#include "endpoints.h"
#include "tcpwatch.h"
#include "tracer.h"
#include "tracer_int.h"

#define TICK_NS		250000000ULL
#define TRIM_MAX_WAIT_NS	60000000000ULL
#define RESCAN_NS	500000000ULL
#define TCP_SCAN_NS	1000000000ULL	/* re-reading traced processes' sockets */
#define FLUSH_NS	1000000000ULL

volatile sig_atomic_t tr_stop;
static volatile sig_atomic_t snap_wanted;

static void on_signal(int sig)
{
	tr_stop = 1;
}

/* SIGUSR1: read every traced process's communicators from memory again */
static void on_usr1(int sig)
{
	snap_wanted = 1;
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

/*
 * --stop-new: the heartbeat (ccld.h), written every loop turn (100 ms and
 * what the turn does): the BPF hook stops a new process only while it is
 * fresh, that is while this loop runs to continue it.  Never without a
 * reaper: if it is gone, no more stops (beat 0).
 */
static void beat(struct tracer *t, uint64_t now)
{
	int fd = bpf_map__fd(t->skel->maps.heartbeat);
	__u32 zero = 0;

	if (!t->stopping)
		return;
	if (reaper_gone(&t->reaper)) {
		fprintf(stderr, "ccld-trace: the reaper exited: new processes are "
			"no longer stopped (--stop-new off)\n");
		t->stopping = false;
		now = 0;
	}
	if (bpf_map_update_elem(fd, &zero, &now, BPF_ANY) && t->stopping) {
		/* the beat ages: the hook stops nobody more */
		fprintf(stderr, "ccld-trace: cannot write the heartbeat: %s: new "
			"processes are no longer stopped (--stop-new off)\n", strerror(errno));
		t->stopping = false;
	}
}

static void on_suspect(void *ctx, const struct an_suspect *s)
{
	struct tracer *t = ctx;

	if (t->proxy)
		proxy_live_suspect(t->proxy, s);
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

void tr_trim_after(struct tracer *t, uint64_t ns)
{
	if (!t->trim_at)
		t->trim_asked = now_ns();
	if (ns > t->trim_at)
		t->trim_at = ns;
}

/*
 * --all: once a job's processes are forgotten and its libraries detached,
 * the heap they used goes back to the system.  malloc keeps freed memory
 * below a chunk still in use, so the agent's RSS would otherwise stay at
 * that of its busiest moment, job after job.  Under a steady churn, where
 * each exit moves the time on, at least once a minute.
 */
static void trim_heap(struct tracer *t, uint64_t now)
{
	if (!t->trim_at || (now < t->trim_at && now - t->trim_asked < TRIM_MAX_WAIT_NS))
		return;
	t->trim_at = 0;
	malloc_trim(0);
	if (t->o->verbose)
		fprintf(stderr, "ccld-trace: freed heap given back (%zu KiB in use)\n",
			mallinfo2().uordblks / 1024);
}

static void loop(struct tracer *t, uint64_t start)
{
	const struct trace_opts *o = t->o;
	uint64_t next_tick = start, next_rescan = start + RESCAN_NS;
	uint64_t next_flush = start + FLUSH_NS, next_table = start;
	struct ccld_event ev;
	int ret;

	while (!tr_stop) {
		uint64_t now;

		beat(t, now_ns());
		ret = ring_buffer__poll(t->rb, 100);
		if (ret < 0 && ret != -EINTR) {
			fprintf(stderr, "ccld-trace: ring buffer poll: %s\n",
				strerror(-ret));
			t->err = 1;
			break;
		}
		tr_read_pid_drops(t, false);
		tr_drain_batch(t);
		now = now_ns();
		if (now >= next_tick) {
			tr_read_drops(t, now);
			tr_check_procs(t, now);
			/* --all: a library no job has used for forget_s goes */
			if (o->all) {
				if (attacher_release_unused(&t->att, now, t->forget_ns) > 0)
					tr_trim_after(t, now);
				trim_heap(t, now);
			}
			tr_synth(&ev, CCLD_EV_TICK, 0, now);
			tr_emit(t, &ev);
			if (t->kmsg)
				kmsg_poll(t->kmsg, tr_on_xid, t);
			if (t->tcp && now >= t->next_tcp_scan) {
				tr_scan_sockets(t, now);
				t->next_tcp_scan = now + TCP_SCAN_NS;
			}
			/* after the tick: the analyzer may have asked for a closer look */
			proxy_live_tick(t->proxy, now, tr_emit_cb, t);
			tr_snapshot_tick(t, now);
			if (snap_wanted) {
				snap_wanted = 0;
				tr_snapshot_all(t);
			}
			if (t->am)
				update_metrics(t, now);
			next_tick = now + TICK_NS;
		}
		if (t->fleet)
			fleet_agent_tick(t->fleet, stderr);
		if (o->all && now >= next_rescan) {
			tr_rescan(t, now);
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
		if (!o->all && tr_all_gone(t)) {
			fprintf(stderr, "ccld-trace: every traced process exited\n");
			break;
		}
	}
	/* no new stop from here on: nobody would continue it but the reaper */
	if (t->stopping) {
		beat(t, 0);
		t->stopping = false;
	}
	/* what the rings still hold */
	ring_buffer__consume(t->rb);
	tr_read_pid_drops(t, true);
	tr_drain_batch(t);
	tr_synth(&ev, CCLD_EV_TICK, 0, now_ns());
	tr_emit(t, &ev);
}

/*
 * None of the given pids is a live process: one line saying so, before any
 * BPF is loaded.  One live pid is enough: tr_setup() says which others have
 * exited and traces the rest (a rank that died is part of the diagnosis).
 */
static bool none_alive(const struct trace_opts *o)
{
	int i, zombies = 0;

	for (i = 0; i < o->npids; i++) {
		char st = procmaps_state(o->pids[i]);

		if (!procmaps_exited(st))
			return false;
		zombies += st != 0;
	}
	if (o->npids > 1)
		fprintf(stderr, "ccld-trace: none of the %d given processes is alive"
			" (%d gone, %d zombies)\n", o->npids, o->npids - zombies, zombies);
	else if (zombies)
		fprintf(stderr, "ccld-trace: process %d has exited (a zombie: its parent"
			" has not reaped it)\n", o->pids[0]);
	else
		fprintf(stderr, "ccld-trace: no such process: %d\n", o->pids[0]);
	return true;
}

int tracer_run(const struct trace_opts *o)
{
	struct pipeline_opts po = {
		.out = stdout, .json = o->json, .events = o->events,
		.an = o->an, .forget_exited = o->all,
	};
	struct tracer t = { .o = o, .reaper = { .pid = -1, .fd = -1 } };
	uint64_t start;
	int rc = 1;

	t.forget_ns = (uint64_t)(o->an.forget_s * 1e9);

	po.suspect = on_suspect;
	po.suspect_ctx = &t;
	if (o->daemon) {
		struct capture_header hdr;
		struct fs_cred cred;
		char err[512];

		capture_header_local(&hdr);
		snprintf(t.node, sizeof(t.node), "%s", o->node ? o->node : hdr.host);
		if (fleet_cred_load(&cred, o->fleet.redis_auth_file,
				    o->fleet.hmac_key_file, err, sizeof(err))) {
			fprintf(stderr, "ccld-trace: %s\n", err);
			return 1;
		}
		t.fleet = fleet_agent_new(o->fleet.redis_url, &cred, t.node,
					  o->fleet.shards, err, sizeof(err));
		secure_wipe(&cred, sizeof(cred));
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
		if (o->fleet.metrics_addr) {
			t.am = agent_metrics_new(o->fleet.metrics_addr, err, sizeof(err));
			if (!t.am) {
				fprintf(stderr, "ccld-trace: %s\n", err);
				fleet_agent_free(t.fleet);
				fclose(po.out);
				return 1;
			}
		}
	}

	if (tr_check_environment(o))
		return 1;
	if (o->npids && none_alive(o))
		return 1;
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
	if (tr_setup(&t))
		goto out;
	/* the traced processes' sockets as they are at the attach, before any call */
	if (t.tcp) {
		tr_scan_sockets(&t, now_ns());
		t.next_tcp_scan = now_ns() + TCP_SCAN_NS;
	}
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
	endpoints_free(t.endpoints);
	snapshot_free(t.snap);
	proxy_live_free(t.proxy);
	attacher_free(&t.att);
	proxy_bpf__destroy(t.proxy_skel);
	cuda_bpf__destroy(t.cuda_skel);
	nccl_api_bpf__destroy(t.skel);
	if (t.reaper.fd >= 0)
		close(t.reaper.fd);	/* EOF: the reaper continues what is left */
	pipeline_free(t.pl);
	fleet_agent_free(t.fleet);
	agent_metrics_free(t.am);
	if (t.fleet && po.out)
		fclose(po.out);
	free(t.batch);
	free(t.procs);
	return rc;
}
