/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The reaper (--stop-new, docs/deploy.md "Stopping new processes"): a
 * process of its own, forked at start, that continues every process the
 * BPF loader hook stopped (map stopped_pids) once it has been stopped for
 * the timeout, and all of them at once when ccld-trace is gone or exiting,
 * however it went (SIGKILL included).  It exits once ccld-trace is gone and its
 * heartbeat too old for the hook to stop anything more.
 */
#ifndef CCLD_REAPER_H
#define CCLD_REAPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct reaper_opts {
	int stopped_fd;		/* BPF map stopped_pids: pid -> stop time */
	int heartbeat_fd;	/* BPF map heartbeat: [0] the loader's last beat */
	uint64_t timeout_ns;	/* a stop lasts this long at most */
	uint64_t heartbeat_max_ns; /* the hook stops only with a beat this fresh */
	/* set by reaper_start(): ccld-trace, and its start time (/proc/PID/stat) */
	pid_t agent;
	unsigned long long agent_start;
};

struct reaper {
	pid_t pid;
	int fd;			/* write end of its pipe: EOF tells it we are gone */
};

/* Forks the reaper; 0, or -errno with ERR filled. */
int reaper_start(struct reaper *r, const struct reaper_opts *o, char *err, size_t errlen);

/* The reaper exited (waited for); ccld-trace must stop stopping processes. */
bool reaper_gone(struct reaper *r);

#endif
