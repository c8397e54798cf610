/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The threads that send step records while step hooks are on (a
 * process's proxy threads): their CPU and run-queue time, read from
 * /proc/PID/task/TID/schedstat every tick as CCLD_EV_SCHED records.  A
 * proxy thread that waits for a CPU (a busy host) makes slow steps that
 * are not its link's; the analyzer tells the two apart with them.
 */
#ifndef CCLD_SCHEDWATCH_H
#define CCLD_SCHEDWATCH_H

#include <linux/types.h>
#include <stdint.h>
#include "ccld.h"

#define SCHEDWATCH_MAX	256	/* threads watched at most */

struct schedwatch;

typedef void (*schedwatch_emit_fn)(void *ctx, const struct ccld_event *ev);

struct schedwatch *schedwatch_new(void);
void schedwatch_free(struct schedwatch *w);

/*
 * Thread TID of process PID sent a step record at NOW_NS: watch it, its
 * first reading at once through EMIT (once per thread)
 */
void schedwatch_note(struct schedwatch *w, uint32_t pid, uint32_t tid, uint64_t now_ns,
		     schedwatch_emit_fn emit, void *ctx);

/* One CCLD_EV_SCHED record per watched thread, at NOW_NS, through EMIT. */
void schedwatch_tick(struct schedwatch *w, uint64_t now_ns, schedwatch_emit_fn emit,
		     void *ctx);

/* Stop watching PID's threads (its hooks went off, or it exited). */
void schedwatch_forget(struct schedwatch *w, uint32_t pid);

/* How many threads are watched. */
uint32_t schedwatch_count(const struct schedwatch *w);

#endif
