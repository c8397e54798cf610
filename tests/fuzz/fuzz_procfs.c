// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the parsers of /proc text a traced process controls
 * (its file and mount names, its comm, its cgroup and environment): one
 * maps line, a stat file, a task syscall line, a cgroup file, an environ
 * block (its HOSTNAME, the launcher's RANK...), one mountinfo line; the
 * name of a thread's fd.  The first byte picks the parser, the rest is
 * the file's text.  What a parser returns must lie inside its input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "proclabels.h"
#include "procmaps.h"
#include "threads.h"

#define check(c) do { if (!(c)) __builtin_trap(); } while (0)

static void maps_line(const char *s, size_t n)
{
	struct maps_line ml;

	if (procmaps_parse_line(s, &ml))
		return;
	check(ml.start <= ml.end && strlen(ml.perms) == 4);
	check(ml.path >= s && ml.path + ml.path_len <= s + n);
}

static void stat_file(char *s, size_t n)
{
	char *state = procmaps_stat_parse(s);
	uint64_t start;

	check(!state || (state > s && state < s + n && *state));
	if (state)
		procmaps_stat_start(state, &start);
}

static void syscall_line(const char *s)
{
	struct ccld_thread t;

	uint64_t sp;

	memset(&t, 0, sizeof(t));
	threads_parse_syscall(s, &t);
	check(t.syscall >= -2 && (t.syscall >= 0 || !t.arg0));
	check(threads_syscall_sp(s, &sp) ? sp != 0 : sp == 0);
}

/* a schedstat line: three numbers, or refused with nothing written */
static void schedstat_line(const char *s)
{
	struct ccld_sched a = { 1, 2, 3 };

	if (!threads_parse_schedstat(s, &a))
		check(a.cpu_ns == 1 && a.run_delay_ns == 2 && a.slices == 3);
}

static void cgroup_file(const char *s)
{
	struct proc_labels l;
	size_t n;

	proc_labels_from_cgroup(s, &l);
	n = strnlen(l.container, sizeof(l.container));
	check(n == 0 || (n == 12 && strspn(l.container, "0123456789abcdefABCDEF") == 12));
}

static void environ_block(const char *s, size_t n)
{
	char out[PROC_LABEL_MAX + 1] = "";

	struct proc_labels l;

	proc_labels_env_value(s, n, "HOSTNAME", out, sizeof(out));
	check(strnlen(out, sizeof(out)) < sizeof(out));
	/* the launcher's ranks: decimal, 9 digits at most, or nothing */
	memset(&l, 0, sizeof(l));
	proc_labels_ranks_from_env(s, n, &l);
	check(strlen(l.rank) <= 9 && strspn(l.rank, "0123456789") == strlen(l.rank));
	check(strlen(l.local_rank) <= 9 &&
	      strspn(l.local_rank, "0123456789") == strlen(l.local_rank));
}

static void fd_name(const char *s)
{
	char out[56];

	threads_fd_name(s, out, sizeof(out));
	check(strlen(out) < sizeof(out));
}

static void mountinfo_line(char *s)
{
	char mnt[256], *layers, *p;

	if (procmaps_parse_mount(s, mnt, sizeof(mnt), &layers))
		return;
	check(strnlen(mnt, sizeof(mnt)) < sizeof(mnt));
	for (p = layers; p && *p; p += strlen(p) + 1)
		;
	free(layers);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;
	size_t n;

	if (!size)
		return 0;
	n = size - 1;
	s = malloc(n + 1);
	if (!s)
		return 0;
	memcpy(s, data + 1, n);
	s[n] = '\0';
	switch (data[0] % 7) {
	case 0:
		maps_line(s, n);
		break;
	case 1:
		stat_file(s, strlen(s));
		break;
	case 2:		/* the one-line files of a thread */
		syscall_line(s);
		schedstat_line(s);
		break;
	case 3:
		cgroup_file(s);
		break;
	case 4:
		environ_block(s, n);
		break;
	case 5:
		fd_name(s);
		break;
	default:
		mountinfo_line(s);
		break;
	}
	free(s);
	return 0;
}
