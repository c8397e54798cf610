// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "procmaps.h"
#include "threads.h"

/* the first line of a small /proc file, without its newline; "" if unreadable */
static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	buf[0] = '\0';
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

void threads_parse_syscall(const char *line, struct ccld_thread *t)
{
	unsigned long long a0 = 0;
	int nr;

	t->syscall = -2;
	t->arg0 = 0;
	if (!strncmp(line, "running", 7)) {
		t->syscall = -1;
		return;
	}
	/* "NR arg1..arg6 sp pc", or "-1 sp pc" outside a system call */
	if (sscanf(line, "%d %llx", &nr, &a0) < 1)
		return;
	t->syscall = nr < -1 ? -2 : nr;
	t->arg0 = nr >= 0 ? a0 : 0;
}

bool threads_syscall_regs(const char *line, uint64_t *sp, uint64_t *pc)
{
	unsigned long long v[9];
	int nr, k;

	*sp = *pc = 0;
	if (sscanf(line, "%d", &nr) != 1)
		return false;
	if (nr == -1)
		k = sscanf(line, "%*d %llx %llx", &v[0], &v[1]) == 2 ? 0 : -1;
	else if (nr >= 0)
		k = sscanf(line, "%*d %llx %llx %llx %llx %llx %llx %llx %llx", &v[0], &v[1],
			   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8 ? 6 : -1;
	else
		k = -1;
	if (k < 0 || !v[k])
		return false;
	*sp = v[k];
	*pc = v[k + 1];
	return true;
}

bool threads_syscall_sp(const char *line, uint64_t *sp)
{
	uint64_t pc;

	return threads_syscall_regs(line, sp, &pc);
}

bool threads_task_regs(pid_t pid, pid_t tid, uint64_t *sp, uint64_t *pc)
{
	char path[96], line[512];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	read_line(path, line, sizeof(line));
	return threads_syscall_regs(line, sp, pc);
}

bool threads_parse_schedstat(const char *line, struct ccld_sched *s)
{
	unsigned long long v[3];
	int end = 0;

	if (line[0] < '0' || line[0] > '9' ||
	    sscanf(line, "%llu %llu %llu%n", &v[0], &v[1], &v[2], &end) != 3 ||
	    (line[end] && line[end] != '\n'))
		return false;
	s->cpu_ns = v[0];
	s->run_delay_ns = v[1];
	s->slices = v[2];
	return true;
}

int threads_schedstat(pid_t pid, pid_t tid, struct ccld_sched *s)
{
	char path[96], line[128];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	if (access(path, R_OK))
		return -errno;
	read_line(path, line, sizeof(line));
	return threads_parse_schedstat(line, s) ? 0 : -EINVAL;
}

bool threads_fd_syscall(int nr)
{
	static const int fd_calls[] = {
		SYS_read, SYS_write, SYS_pread64, SYS_pwrite64, SYS_readv, SYS_writev,
		SYS_preadv, SYS_pwritev, SYS_fsync, SYS_fdatasync, SYS_ftruncate,
		SYS_fallocate, SYS_flock, SYS_fcntl, SYS_ioctl, SYS_sendto, SYS_recvfrom,
		SYS_sendmsg, SYS_recvmsg, SYS_sendfile, SYS_splice, SYS_sync_file_range,
		SYS_copy_file_range,
	};
	size_t i;

	for (i = 0; i < sizeof(fd_calls) / sizeof(fd_calls[0]); i++)
		if (nr == fd_calls[i])
			return true;
	return false;
}

void threads_fd_name(const char *link, char *out, size_t len)
{
	size_t n = strlen(link);

	if (len < 4) {
		if (len)
			out[0] = '\0';
		return;
	}
	if (n < len)
		snprintf(out, len, "%s", link);
	else	/* its end says more than its start: ".../step1200.pt" */
		snprintf(out, len, "...%s", link + n - (len - 4));
}

/*
 * The CCLD_EV_THREAD_FD record of thread T (event TEV) into EV where its
 * system call works on an fd that still names something: 1, else 0.
 */
static int fd_record(pid_t pid, const struct ccld_event *tev, struct ccld_event *ev)
{
	const struct ccld_thread *t = &tev->u.thread;
	char path[64], link[4096];
	ssize_t n;

	if (t->syscall < 0 || !threads_fd_syscall(t->syscall) || t->arg0 > INT32_MAX)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, (int)t->arg0);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = '\0';
	memset(ev, 0, sizeof(*ev));
	ev->type = CCLD_EV_THREAD_FD;
	ev->version = CCLD_ABI_VERSION;
	ev->pid = tev->pid;
	ev->tid = tev->tid;
	ev->id.rank = ev->id.nranks = -1;
	ev->u.fd.fd = (int32_t)t->arg0;
	threads_fd_name(link, ev->u.fd.path, sizeof(ev->u.fd.path));
	return 1;
}

int threads_read(pid_t pid, struct ccld_event *out, size_t max)
{
	char dir[64], path[128], line[512];
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	d = opendir(dir);
	if (!d)
		return -errno;
	/* room for a thread's record and its fd record */
	while (n + 2 <= max && (de = readdir(d))) {
		struct ccld_event *ev = &out[n];
		struct ccld_thread *t = &ev->u.thread;
		int tid = atoi(de->d_name);
		char *state;

		if (tid <= 0)
			continue;
		memset(ev, 0, sizeof(*ev));
		ev->type = CCLD_EV_THREAD;
		ev->version = CCLD_ABI_VERSION;
		ev->pid = (uint32_t)pid;
		ev->tid = (uint32_t)tid;
		ev->id.rank = ev->id.nranks = -1;
		snprintf(path, sizeof(path), "%s/%d/stat", dir, tid);
		read_line(path, line, sizeof(line));
		state = procmaps_stat_parse(line);
		t->state = state ? (uint8_t)*state : 0;
		if (!t->state)
			continue;	/* exited meanwhile */
		t->main = tid == pid;
		snprintf(path, sizeof(path), "%s/%d/syscall", dir, tid);
		read_line(path, line, sizeof(line));
		threads_parse_syscall(line, t);
		snprintf(path, sizeof(path), "%s/%d/wchan", dir, tid);
		read_line(path, line, sizeof(line));
		if (strcmp(line, "0"))
			snprintf(t->wchan, sizeof(t->wchan), "%.*s", (int)sizeof(t->wchan) - 1, line);
		snprintf(path, sizeof(path), "%s/%d/comm", dir, tid);
		read_line(path, line, sizeof(line));
		snprintf(t->name, sizeof(t->name), "%.*s", (int)sizeof(t->name) - 1, line);
		/* the fd record goes first: the pipeline joins it to this one */
		if (fd_record(pid, ev, &out[n + 1])) {
			struct ccld_event tmp = out[n];

			out[n] = out[n + 1];
			out[n + 1] = tmp;
			n++;
		}
		n++;
	}
	closedir(d);
	return (int)n;
}
