// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * threads: what a traced process's threads are doing, from /proc.  A child
 * blocked in write() on a FIFO nobody reads must come back as a sleeping
 * main thread in write() with a CCLD_EV_THREAD_FD record naming the FIFO
 * just before it; long links keep their end.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "threads.h"

static void test_fd_name(void)
{
	char out[16];

	threads_fd_name("/a/b.pt", out, sizeof(out));
	CHECK_STR(out, "/a/b.pt");
	/* 15 characters fit; a longer one keeps its last 12 after "..." */
	threads_fd_name("/ckpt/step1200.pt", out, sizeof(out));
	CHECK_STR(out, ".../step1200.pt");
	threads_fd_name("/x", out, 3);
	CHECK_STR(out, "");
	CHECK(threads_fd_syscall(SYS_write));
	CHECK(threads_fd_syscall(SYS_fsync));
	CHECK(!threads_fd_syscall(SYS_nanosleep));
	CHECK(!threads_fd_syscall(-1));
}

/* a child stuck writing FIFO: its main thread, and what its fd names */
static void test_blocked_write(void)
{
	static char chunk[1 << 16];
	char dir[] = "/tmp/ccld-threads.XXXXXX", fifo[64];
	struct ccld_event evs[THREADS_RECORDS_MAX];
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	int n = 0, i, tries, main_at = -1;
	pid_t pid;

	if (!mkdtemp(dir)) {
		CHECK(0);
		return;
	}
	snprintf(fifo, sizeof(fifo), "%s/ckpt.fifo", dir);
	CHECK_INT(mkfifo(fifo, 0600), 0);
	pid = fork();
	if (pid == 0) {
		int fd = open(fifo, O_RDWR);

		for (;;)
			if (fd < 0 || write(fd, chunk, sizeof(chunk)) < 0)
				_exit(1);
	}
	CHECK(pid > 0);
	/* until the child sits in write(), a second at most */
	for (tries = 0; pid > 0 && tries < 50; tries++) {
		n = threads_read(pid, evs, THREADS_RECORDS_MAX);
		for (i = 0, main_at = -1; i < n; i++)
			if (evs[i].type == CCLD_EV_THREAD && evs[i].u.thread.main)
				main_at = i;
		if (main_at > 0 && evs[main_at].u.thread.syscall == SYS_write &&
		    evs[main_at].u.thread.state == 'S')
			break;
		nanosleep(&ts, NULL);
	}
	CHECK(main_at > 0);
	if (main_at > 0) {
		const struct ccld_event *fd = &evs[main_at - 1];

		CHECK_INT(evs[main_at].u.thread.syscall, SYS_write);
		CHECK_INT(fd->type, CCLD_EV_THREAD_FD);
		CHECK_INT(fd->tid, (uint32_t)pid);
		CHECK_INT(fd->u.fd.fd, (int32_t)evs[main_at].u.thread.arg0);
		CHECK_STR(fd->u.fd.path, fifo);
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	/* gone: no such process */
	CHECK_INT(threads_read(pid, evs, THREADS_RECORDS_MAX), -ENOENT);
	unlink(fifo);
	rmdir(dir);
}

/*
 * schedstat: "cpu_ns run_delay_ns slices", read for this thread; anything
 * else is refused (a negative or missing field, trailing text)
 */
static void test_schedstat(void)
{
	struct ccld_sched s = { 0 };
	struct timespec t0, t1;

	CHECK(threads_parse_schedstat("268248 58677 1", &s));
	CHECK(s.cpu_ns == 268248 && s.run_delay_ns == 58677 && s.slices == 1);
	CHECK(threads_parse_schedstat("1 2 3\n", &s));
	CHECK(!threads_parse_schedstat("-1 2 3", &s));
	CHECK(!threads_parse_schedstat("1 2", &s));
	CHECK(!threads_parse_schedstat("1 2 3 x", &s));
	CHECK(!threads_parse_schedstat("", &s));
	/* this thread's own: it ran, and its CPU time grows as it spins */
	CHECK_INT(threads_schedstat(getpid(), (pid_t)syscall(SYS_gettid), &s), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t1);
	while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 20000000L);
	{
		struct ccld_sched after;

		CHECK_INT(threads_schedstat(getpid(), (pid_t)syscall(SYS_gettid), &after), 0);
		CHECK(after.cpu_ns >= s.cpu_ns + 10000000ull);
		CHECK(after.run_delay_ns >= s.run_delay_ns);
	}
	CHECK_INT(threads_schedstat(getpid(), 0x7ffffff0, &s), -ENOENT);
}

/* the stack pointer and program counter of a blocked thread's syscall line */
static void test_syscall_regs(void)
{
	uint64_t sp, pc;

	CHECK(threads_syscall_regs("-1 0x7ffd1230 0x4005d0", &sp, &pc));
	CHECK(sp == 0x7ffd1230 && pc == 0x4005d0);
	CHECK(threads_syscall_regs("1 0x3 0x7f00 0x10000 0x0 0x0 0x0 0x7ffe10 0x7f12345", &sp, &pc));
	CHECK(sp == 0x7ffe10 && pc == 0x7f12345);
	CHECK(threads_syscall_sp("1 0x3 0x7f00 0x10000 0x0 0x0 0x0 0x7ffe10 0x7f12345", &sp));
	CHECK(sp == 0x7ffe10);
	CHECK(!threads_syscall_regs("running", &sp, &pc));
	CHECK(!threads_syscall_regs("1 0x3 0x7f00", &sp, &pc));
	CHECK(!threads_syscall_regs("-1 0x0 0x4005d0", &sp, &pc));
	CHECK(!threads_syscall_regs("", &sp, &pc));
}

int main(void)
{
	test_syscall_regs();
	test_schedstat();
	test_fd_name();
	test_blocked_write();
	return check_finish("test_threads");
}
