/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Inside live tracing (tracer.h is its interface): the tracer's state and
 * the functions its files share.  tracer.c has the loop, tracer_setup.c
 * the start, tracer_emit.c the records in and out, tracer_procs.c the
 * processes followed, tracer_drops.c lost records, tracer_attrib.c device
 * events given to processes.
 */
#ifndef CCLD_TRACER_INT_H
#define CCLD_TRACER_INT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>
#include <linux/types.h>
#include "attach.h"
#include "ccld.h"
#include "opts.h"
#include "reaper.h"

struct xid_line;

struct tracked {
	pid_t pid;
	char state;
	bool gone;
	uint64_t start;		/* /proc start time: a reused pid has another */
	uint64_t gone_ns;
	uint64_t drops[2];	/* its records lost as last reported (ccld.h) */
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
	uint64_t steps_shed;	/* step records BPF shed, the ring crowded (ccld.h) */
	uint64_t forget_ns;	/* --all: the analyzer's forget_s, for libraries no job uses */
	uint64_t trim_at;	/* --all: give the freed heap back then (0: not due) */
	uint64_t trim_asked;	/* when trim_at was first set */
	uint64_t drops_attributed;	/* the totals when pid_drops was last read */
	bool table;
	int err;
	struct fleet_agent *fleet;	/* daemon: records go to Redis */
	struct agent_metrics *am;	/* daemon --metrics */
	struct kmsg *kmsg;		/* GPU Xid lines, NULL: not readable */
	struct rdma_watch *rdma;	/* RDMA verbs programs (tier D) */
	struct tcpwatch *tcp;		/* TCP tracepoints, NULL: none attached */
	struct endpoints *endpoints;	/* their sockets' local ends, as last emitted */
	struct snapshot *snap;		/* state read from memory (attach, SIGUSR1) */
	uint64_t next_tcp_scan;
	uint64_t tcp_records;		/* CCLD_EV_TCP seen */
	char node[64];			/* this host's name in records (as capture headers) */
	struct reaper reaper;		/* --stop-new: continues stops we do not */
	bool stopping;			/* --stop-new and the reaper runs: we beat */
};

/* SIGINT, SIGTERM or a fatal write error: the loop ends */
extern volatile sig_atomic_t tr_stop;

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* tracer_setup.c */
int tr_check_environment(const struct trace_opts *o);
int tr_setup(struct tracer *t);

/* tracer_emit.c */
/* Libraries attached since last time, as capture metadata (docs/formats.md). */
void tr_describe_libs(struct tracer *t);
/* Attaches to PID's NCCL / CUDA libraries; new ones become capture metadata. */
int tr_attach_pid(struct tracer *t, pid_t pid, char *err, size_t errlen);
/* One record into the capture file and the pipeline, in that order. */
void tr_emit(struct tracer *t, const struct ccld_event *ev);
/* tr_emit for callbacks: CTX is the tracer */
void tr_emit_cb(void *ctx, const struct ccld_event *ev);
/* EV as a record made here, of TYPE, of process PID at TS */
void tr_synth(struct ccld_event *ev, __u16 type, pid_t pid, uint64_t ts);
/* ring_buffer callback: a copy of the record into the batch */
int tr_on_ring_event(void *ctx, void *data, size_t size);
/* The batch in time order through the handlers, then emptied. */
void tr_drain_batch(struct tracer *t);

/* tracer_procs.c */
struct tracked *tr_find_tracked(struct tracer *t, pid_t pid);
/* PID's entry, or NULL; an exited process's once its pid is reused */
struct tracked *tr_current_tracked(struct tracer *t, pid_t pid);
/* Starts following PID: a PROC_ATTACH record, then exit/stop checks. */
struct tracked *tr_track(struct tracer *t, pid_t pid, uint64_t ts);
void tr_read_comm_name(pid_t pid, char *buf, size_t len);
/* Exit and stop (SIGSTOP, state T) of traced processes. */
void tr_check_procs(struct tracer *t, uint64_t ts);
/* --all: give the heap freed by then back to the system at NS (tracer.c) */
void tr_trim_after(struct tracer *t, uint64_t ns);
/* --all: processes that mapped an NCCL library since last time */
void tr_rescan(struct tracer *t, uint64_t ts);
/* every process traced now, read from memory again (SIGUSR1) */
void tr_snapshot_all(struct tracer *t);
/* after the tick: new comms' counters once, suspected comms' again */
void tr_snapshot_tick(struct tracer *t, uint64_t now);
/* every process traced has exited (and there was one) */
bool tr_all_gone(const struct tracer *t);
/* the TCP watch follows the sockets of the processes traced now */
void tr_scan_sockets(struct tracer *t, uint64_t now);

/* tracer_drops.c */
/*
 * PROC_LOST records into the batch for processes whose losses grew, when
 * the totals moved; FINAL: whether they moved or not (the last read)
 */
void tr_read_pid_drops(struct tracer *t, bool final);
/* a LOST record when the totals moved */
void tr_read_drops(struct tracer *t, uint64_t ts);
/* an exited process's loss counter, read a last time and deleted */
void tr_forget_drops(struct tracer *t, pid_t pid);

/* tracer_attrib.c */
/* An RDMA record from BPF, to its process or the processes using the device */
void tr_on_rdma(struct tracer *t, const struct ccld_event *ev);
/* kmsg_poll callback: an XID record per traced process on that GPU */
void tr_on_xid(void *ctx, const struct xid_line *x);

#endif
