// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The reaper: see reaper.h.  The child keeps only the two BPF maps, the
 * read end of a pipe and stderr: in particular no BPF link or program,
 * so it never keeps ccld-trace's probes alive after ccld-trace is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include "ccld.h"
#include "procmaps.h"
#include "reaper.h"

#define POLL_MS		100	/* ccld-trace alive: timeouts checked this often */
#define ORPHAN_POLL_MS	10	/* ccld-trace gone: stops continued this fast */
#define DRAIN_NS	1000000000ULL	/* beat older than max + this: no hook in flight */
#define PF_EXITING	0x00000004	/* linux/sched.h: in do_exit() */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * The child is a fork of a threaded process: no stdio, no locale (strerror
 * may take gettext's lock, which another thread may have held at the fork).
 */
static const char *errstr(int e)
{
	const char *s = strerrordesc_np(e);

	return s ? s : "unknown error";
}

/* stderr without stdio */
static void say(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		(void)!write(STDERR_FILENO, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/*
 * Continues the processes stopped TIMEOUT ago or more (ALL: every one);
 * returns how many stay in the map.
 */
static int sweep(const struct reaper_opts *o, uint64_t now, bool all)
{
	static __u32 pids[CCLD_MAX_STOPPED];
	__u32 key, *prev = NULL;
	int n = 0, i, left = 0;
	__u64 since;

	while (n < CCLD_MAX_STOPPED && !bpf_map_get_next_key(o->stopped_fd, prev, &key)) {
		pids[n] = key;
		prev = &pids[n++];
	}
	for (i = 0; i < n; i++) {
		int64_t age;
		bool gone;

		if (bpf_map_lookup_elem(o->stopped_fd, &pids[i], &since))
			continue;	/* ccld-trace continued it meanwhile */
		age = (int64_t)(now - since);
		if (!all && age < (int64_t)o->timeout_ns) {
			left++;
			continue;
		}
		gone = kill((pid_t)pids[i], SIGCONT) != 0;
		if (gone && errno != ESRCH) {
			say("ccld-trace: reaper: cannot continue process %u: %s\n",
			    pids[i], errstr(errno));
			left++;
			continue;
		}
		if (bpf_map_delete_elem(o->stopped_fd, &pids[i]) && errno != ENOENT)
			say("ccld-trace: reaper: process %u: cannot delete its entry: %s\n",
			    pids[i], errstr(errno));
		if (!gone)
			say("ccld-trace: reaper: continued process %u, stopped %lld ms (%s)\n",
			    pids[i], (long long)(age / 1000000),
			    all ? "ccld-trace is gone" : "--stop-timeout");
	}
	return left;
}

/*
 * PID's /proc/PID/stat: the task flags (field 9) and start time (22), or
 * -errno.  Read with plain system calls (see say()).
 */
static int read_stat(pid_t pid, unsigned long *flags, unsigned long long *start)
{
	char buf[1024], *p = procmaps_stat(pid, buf, sizeof(buf));
	unsigned long long v;
	int field;

	if (!p)
		return -errno;
	p++;			/* past the state letter, field 3 */
	for (field = 4; field <= 22; field++) {
		char *end;

		v = strtoull(p, &end, 10);	/* (a negative one wraps: unused) */
		if (end == p)
			return -EINVAL;
		if (field == 9)
			*flags = (unsigned long)v;
		if (field == 22)
			*start = v;
		p = end;
	}
	return 0;
}

/*
 * ccld-trace is exiting or gone.  Its pipe's end of file alone comes late
 * after a SIGKILL: the pipe is closed among its uprobes, whose teardown
 * takes seconds.  PF_EXITING is set as do_exit() begins.
 */
static bool agent_gone(const struct reaper_opts *o)
{
	unsigned long flags = 0;
	unsigned long long start = 0;

	if (getppid() != o->agent)
		return true;	/* it exited: we were given to another parent */
	if (read_stat(o->agent, &flags, &start))
		return true;
	return start != o->agent_start || (flags & PF_EXITING);
}

/* the hook can stop nothing more: ccld-trace's last beat is too old */
static bool beat_stale(const struct reaper_opts *o, uint64_t now)
{
	__u32 zero = 0;
	__u64 beat = 0;

	if (bpf_map_lookup_elem(o->heartbeat_fd, &zero, &beat))
		return true;	/* the map is gone: so are the programs */
	return !beat || (int64_t)(now - beat) > (int64_t)(o->heartbeat_max_ns + DRAIN_NS);
}

static void __attribute__((noreturn)) run(const struct reaper_opts *o, int pipe_rd)
{
	bool orphan = false;

	for (;;) {
		/* at EOF the pipe polls ready at once: then it is a plain sleep */
		struct pollfd p = { .fd = orphan ? -1 : pipe_rd, .events = POLLIN };
		uint64_t now;
		int ret, left;
		char c;

		ret = poll(&p, 1, orphan ? ORPHAN_POLL_MS : POLL_MS);
		if (ret < 0 && errno != EINTR) {
			say("ccld-trace: reaper: poll: %s: continuing everything\n",
			    errstr(errno));
			orphan = true;
		} else if (ret > 0 && !orphan && read(pipe_rd, &c, 1) <= 0) {
			orphan = true;	/* EOF: ccld-trace exited or was killed */
		} else if (!orphan && agent_gone(o)) {
			orphan = true;
		}
		now = mono_ns();
		left = sweep(o, now, orphan);
		if (orphan && !left && beat_stale(o, now) && !sweep(o, mono_ns(), true))
			_exit(0);
	}
}

/* closes every descriptor but stdin..stderr and KEEP[0..2] (ascending) */
static int close_others(int keep[3])
{
	int lo = 3, i;

	for (i = 0; i < 3; i++) {
		if (keep[i] > lo && close_range(lo, keep[i] - 1, 0))
			return -errno;
		lo = keep[i] + 1;
	}
	return close_range(lo, ~0U, 0) ? -errno : 0;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void __attribute__((noreturn)) child(const struct reaper_opts *o, int pipe_rd)
{
	int keep[3] = { o->stopped_fd, o->heartbeat_fd, pipe_rd }, null, ret;

	if (setsid() < 0)
		say("ccld-trace: reaper: setsid: %s\n", errstr(errno));
	/* its name in ps -o comm, top, /proc/PID/comm */
	if (prctl(PR_SET_NAME, "ccld-reaper", 0, 0, 0))
		say("ccld-trace: reaper: cannot name itself: %s\n", errstr(errno));
	/* ccld-trace's handlers would only set its flags here */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	qsort(keep, 3, sizeof(keep[0]), cmp_int);
	ret = close_others(keep);
	if (ret) {
		/* it would keep the probes alive: better no reaper at all */
		say("ccld-trace: reaper: cannot close inherited descriptors: %s\n",
		    errstr(-ret));
		_exit(1);
	}
	null = open("/dev/null", O_RDWR);
	if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0)
		say("ccld-trace: reaper: /dev/null: %s\n", errstr(errno));
	if (null > STDERR_FILENO)
		close(null);
	run(o, pipe_rd);
}

int reaper_start(struct reaper *r, const struct reaper_opts *opts, char *err, size_t errlen)
{
	struct reaper_opts o = *opts;
	unsigned long flags;
	int fds[2], ret;
	pid_t pid;

	r->pid = -1;
	r->fd = -1;
	o.agent = getpid();
	ret = read_stat(o.agent, &flags, &o.agent_start);
	if (ret) {
		snprintf(err, errlen, "cannot start the reaper: /proc/%d/stat: %s",
			 o.agent, strerror(-ret));
		return ret;
	}
	if (pipe2(fds, O_CLOEXEC)) {
		ret = -errno;
		snprintf(err, errlen, "cannot start the reaper: pipe: %s", strerror(-ret));
		return ret;
	}
	fflush(NULL);	/* nothing buffered is written twice */
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot start the reaper: fork: %s", strerror(-ret));
		close(fds[0]);
		close(fds[1]);
		return ret;
	}
	if (pid == 0) {
		close(fds[1]);
		child(&o, fds[0]);
	}
	close(fds[0]);
	r->pid = pid;
	r->fd = fds[1];
	return 0;
}

bool reaper_gone(struct reaper *r)
{
	int status;

	if (r->pid <= 0)
		return true;
	if (waitpid(r->pid, &status, WNOHANG) != r->pid)
		return false;
	r->pid = -1;
	return true;
}
