// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ustack: a blocked thread's native stack, read without stopping it.  A
 * child running the system's sleep(1) (a binary built without frame
 * pointers, like most of a distribution's and NCCL) sits in
 * clock_nanosleep(); its main thread's stack must name that call in libc
 * and go on through its callers, and the child must still be sleeping,
 * never stopped, after it was read.  The real libnccl.so.2 (where present;
 * CCLD_REQUIRE_REAL_NCCL=1 makes its absence a failure): a Python child that
 * asked it for a unique id has NCCL's bootstrap root thread waiting in accept(),
 * whose stack must name NCCL's own functions and be known as NCCL's.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "threads.h"
#include "ustack.h"

/* PID's state letter from /proc/PID/stat, 0 if unreadable */
static char proc_state(pid_t pid)
{
	char path[64], line[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	p = strrchr(line, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

static void test_sleeping_child(void)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 }, t0, t1;
	char text[225];
	uint64_t sp = 0, pc = 0;
	int tries, n = -1, err;
	bool in_libc = false;
	pid_t pid;

	pid = fork();
	if (pid == 0) {
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	/* until it sleeps in the kernel, a second at most */
	for (tries = 0; tries < 50; tries++) {
		if (proc_state(pid) == 'S' && threads_task_regs(pid, pid, &sp, &pc))
			break;
		nanosleep(&ts, NULL);
	}
	CHECK(sp && pc);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (sp && pc)
		n = ustack_read(pid, pid, sp, pc, text, sizeof(text), "libc.so", &in_libc);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("sleep(1)'s stack (%d frames, read in %.1f ms): %s\n", n,
	       ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e6, text);
	CHECK(n >= 3);
	CHECK(strstr(text, "nanosleep+0x") != NULL);
	CHECK(strstr(text, " < ") != NULL);
	CHECK(in_libc);
	/* read, not stopped: it still sleeps */
	CHECK_INT(proc_state(pid), 'S');
	/* one process's handle walks again to the same stack, its modules kept */
	{
		char again[225], third[225];
		struct ustack *u = ustack_open(pid, &err);

		CHECK(u != NULL);
		if (u) {
			CHECK_INT(ustack_thread(u, pid, sp, pc, again, sizeof(again), NULL, NULL), n);
			CHECK_STR(again, text);
			CHECK_INT(ustack_thread(u, pid, sp, pc, third, sizeof(third), NULL, NULL), n);
			CHECK_STR(third, text);
			ustack_close(u);
		}
	}
	/* a small buffer keeps whole frames and says it cut */
	n = ustack_read(pid, pid, sp, pc, text, 24, "libnccl", &in_libc);
	CHECK(!in_libc);
	CHECK(n >= 0 && strlen(text) < 24);
	CHECK(n == 0 || strstr(text, "...") != NULL);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	/* gone: an error, nothing made up */
	CHECK(ustack_read(pid, pid, sp, pc, text, sizeof(text), NULL, NULL) < 0);
	CHECK_STR(text, "");
}

/* a thread of PID blocked in accept(), other than the main one: 0 if none */
static pid_t accepting_thread(pid_t pid)
{
	struct ccld_event evs[THREADS_RECORDS_MAX];
	int n = threads_read(pid, evs, THREADS_RECORDS_MAX), i;

	for (i = 0; i < n; i++)
		if (evs[i].type == CCLD_EV_THREAD && !evs[i].u.thread.main &&
		    evs[i].u.thread.syscall == SYS_accept)
			return (pid_t)evs[i].tid;
	return 0;
}

static void test_real_nccl_thread(void)
{
	const char *lib = getenv("CCLD_REAL_NCCL") ? getenv("CCLD_REAL_NCCL") :
			  "/usr/local/cuda/lib/libnccl.so.2";
	const char *req = getenv("CCLD_REQUIRE_REAL_NCCL");
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	char text[225];
	uint64_t sp = 0, pc = 0;
	bool in_nccl = false;
	pid_t pid, tid = 0;
	int tries, n;

	if (access(lib, R_OK)) {
		printf("skip: no real libnccl.so.2 at %s\n", lib);
		CHECK(!req || strcmp(req, "1"));
		return;
	}
	/*
	 * Not this process forked: its sanitizers' interceptors (built with
	 * frame pointers) would sit between NCCL and libc
	 */
	pid = fork();
	if (pid == 0) {
		execlp("python3", "python3", "-c",
		       "import ctypes, sys, signal\n"
		       "lib = ctypes.CDLL(sys.argv[1])\n"
		       "if lib.ncclGetUniqueId(ctypes.create_string_buffer(128)): sys.exit(1)\n"
		       "signal.pause()\n", lib, (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	for (tries = 0; tries < 250 && !tid; tries++) {
		tid = accepting_thread(pid);
		if (!tid)
			nanosleep(&ts, NULL);
	}
	CHECK(tid > 0);
	if (tid > 0 && threads_task_regs(pid, tid, &sp, &pc)) {
		n = ustack_read(pid, tid, sp, pc, text, sizeof(text), "libnccl", &in_nccl);
		printf("NCCL's bootstrap root thread (%d frames): %s\n", n, text);
		CHECK(n >= 3);
		CHECK(in_nccl);
		CHECK(strstr(text, "bootstrapRoot+0x") != NULL);
	} else {
		CHECK(0);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

int main(void)
{
	test_sleeping_child();
	test_real_nccl_thread();
	return check_finish("test_ustack");
}
