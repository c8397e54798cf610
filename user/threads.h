/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What each thread of a traced process is doing, from /proc without
 * stopping it: its state (R running, S sleeping, D in uninterruptible I/O,
 * T stopped), the system call it sits in and that call's first argument,
 * and the kernel function it sleeps in (wchan).  One CCLD_EV_THREAD record
 * per thread; the analyzer cites the culprit's threads in its verdicts.
 */
#ifndef CCLD_THREADS_H
#define CCLD_THREADS_H

#include <linux/types.h>
#include <stddef.h>
#include <sys/types.h>
#include "ccld.h"

#define THREADS_MAX	256	/* threads of one process read at most */

/*
 * PID's threads into OUT (at most MAX records: type, version, pid, tid,
 * u.thread; ts_ns is the caller's).  Returns the number read, or -errno
 * (-ENOENT: no such process).
 */
int threads_read(pid_t pid, struct ccld_event *out, size_t max);

/* One /proc/PID/task/TID/syscall line into T (syscall, arg0). */
void threads_parse_syscall(const char *line, struct ccld_thread *t);

#endif
