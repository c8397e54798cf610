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
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "ccld.h"

#define THREADS_MAX	256	/* threads of one process read at most */
#define THREADS_RECORDS_MAX	(2 * THREADS_MAX)	/* with their fd records */

/*
 * PID's threads into OUT (at most MAX records: type, version, pid, tid,
 * u.thread; ts_ns is the caller's).  A thread whose system call works on
 * an fd (write, read, fsync...) has a CCLD_EV_THREAD_FD record just before
 * its own, saying what the fd names.  Returns the number of records, or
 * -errno (-ENOENT: no such process).
 */
int threads_read(pid_t pid, struct ccld_event *out, size_t max);

/* System call NR's first argument is an fd worth naming. */
bool threads_fd_syscall(int nr);

/* An fd's link text LINK into OUT (LEN bytes): its end, after "...", if long. */
void threads_fd_name(const char *link, char *out, size_t len);

/* One /proc/PID/task/TID/syscall line into T (syscall, arg0). */
void threads_parse_syscall(const char *line, struct ccld_thread *t);

/*
 * The stack pointer of a /proc/PID/task/TID/syscall line ("NR a1..a6 sp
 * pc", or "-1 sp pc"): false for "running" or a line that is not one.
 */
bool threads_syscall_sp(const char *line, uint64_t *sp);

/* ... its stack pointer and program counter ("... sp pc"): false as above */
bool threads_syscall_regs(const char *line, uint64_t *sp, uint64_t *pc);

/* Thread TID of PID's stack pointer and program counter, from its syscall file. */
bool threads_task_regs(pid_t pid, pid_t tid, uint64_t *sp, uint64_t *pc);

/* A schedstat line ("cpu_ns run_delay_ns slices") into S: false if not one. */
bool threads_parse_schedstat(const char *line, struct ccld_sched *s);

/*
 * Thread TID of PID's /proc/PID/task/TID/schedstat into S: 0, or -errno
 * (-ENOENT: no such thread; -EINVAL: not a schedstat line).
 */
int threads_schedstat(pid_t pid, pid_t tid, struct ccld_sched *s);

#endif
