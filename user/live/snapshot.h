/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The job as it is when ccld arrives (docs/attach.md): when the tracer attaches
 * to processes (-p, --all, the daemon at start) and on demand (SIGUSR1),
 * every communicator of every traced process is read from its memory and
 * becomes records, before any new call:
 *
 *   CCLD_EV_COMM_STATE  per comm rank: identity, NCCL's launch counters
 *   CCLD_EV_PROXY       per comm rank: the proxy's active ops (tier E)
 *   CCLD_EV_THREAD      per thread: state, system call, wchan
 *   CCLD_EV_COMM_STATE (source PEER) + CCLD_EV_PROC_EXIT
 *                       per rank whose process is gone from this host,
 *                       named by a live rank's peer table (pidHash)
 *
 * Everything goes through the caller's emit (capture file, pipeline), so a
 * replay of the capture sees the same picture.  Comms that appear later get
 * their counters read once (snapshot_new_comms); a suspected comm's
 * counters and threads are read again each tick (snapshot_refresh).
 */
#ifndef CCLD_SNAPSHOT_H
#define CCLD_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "ccld.h"

struct attacher;
struct proxy_live;
struct state;
struct snapshot;

typedef void (*snapshot_emit_fn)(void *ctx, const struct ccld_event *ev);

struct snapshot *snapshot_new(struct attacher *a, struct proxy_live *pl, const struct state *st,
			      uint32_t host, bool verbose);
void snapshot_free(struct snapshot *s);

/*
 * FD: the BPF map of calls in progress (struct ccld_entry_key), read to say
 * which thread is inside a CUDA synchronize; -1 (the default): not read.
 */
void snapshot_set_entries(struct snapshot *s, int fd);

/*
 * Reads every comm of processes PIDS (N) and emits what it read; then the
 * ranks of those comms whose process is gone (dead peers).  One summary
 * line on LOG.
 */
void snapshot_procs(struct snapshot *s, const pid_t *pids, size_t n, uint64_t now_ns,
		    snapshot_emit_fn emit, void *ctx, FILE *log);

/* Reads the counters of comm ranks the state learnt since (created later). */
void snapshot_new_comms(struct snapshot *s, uint64_t now_ns, snapshot_emit_fn emit, void *ctx);

/*
 * The counters of the local ranks of comm HASH, and the threads of their
 * processes and of the NSUS processes SUS (the comm's suspects: one may
 * hold no rank of it, as a rank that never called its init), again:
 * records only where something changed.
 */
void snapshot_refresh(struct snapshot *s, uint64_t hash, const uint32_t *sus, size_t nsus,
		      uint64_t now_ns, snapshot_emit_fn emit, void *ctx);

/*
 * PID exited: what was kept of it goes (its library, last counts, threads,
 * GPU); a new process with its pid starts afresh.
 */
void snapshot_forget(struct snapshot *s, pid_t pid);

/*
 * The comms found inside their init (initState ncclInProgress) read again;
 * each whose init ended is read in full and emitted
 */
void snapshot_init_poll(struct snapshot *s, uint64_t now_ns, snapshot_emit_fn emit, void *ctx);

#endif
