// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* the state letter of a /proc/.../stat line: after the last ')' */
static char stat_state(const char *line)
{
	const char *p = strrchr(line, ')');

	return p && p[1] == ' ' && p[2] ? p[2] : 0;
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
	while (n < max && (de = readdir(d))) {
		struct ccld_event *ev = &out[n];
		struct ccld_thread *t = &ev->u.thread;
		int tid = atoi(de->d_name);

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
		t->state = (uint8_t)stat_state(line);
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
		n++;
	}
	closedir(d);
	return (int)n;
}
