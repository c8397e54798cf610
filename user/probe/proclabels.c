// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "proclabels.h"

static size_t hex_run(const char *s)
{
	size_t n = 0;

	while (isxdigit((unsigned char)s[n]))
		n++;
	return n;
}

/* the container id in one cgroup path: a run of 64 hex digits */
static void container_of(const char *path, char *out, size_t len)
{
	const char *p;

	for (p = path; *p; p++) {
		size_t n = hex_run(p);

		if (n >= 64 && (p == path || !isxdigit((unsigned char)p[-1]))) {
			snprintf(out, len, "%.12s", p);
			return;
		}
		if (n)
			p += n - 1;
	}
}

void proc_labels_from_cgroup(const char *cgroup, struct proc_labels *l)
{
	const char *line = cgroup;

	memset(l, 0, sizeof(*l));
	while (line && *line) {
		const char *end = strchr(line, '\n');
		char path[1024];
		size_t n = end ? (size_t)(end - line) : strlen(line);

		snprintf(path, sizeof(path), "%.*s", (int)n, line);
		if (strstr(path, "kubepods"))
			l->kubernetes = true;
		if (!l->container[0])
			container_of(path, l->container, sizeof(l->container));
		line = end ? end + 1 : NULL;
	}
}

static ssize_t read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, total = 0;

	if (fd < 0)
		return -1;
	while ((size_t)total + 1 < len && (n = read(fd, buf + total, len - 1 - total)) > 0)
		total += n;
	close(fd);
	buf[total] = '\0';
	return total;
}

void proc_labels_env_value(const char *env, size_t len, const char *name, char *out, size_t outlen)
{
	size_t nl = strlen(name), off = 0;

	while (off < len) {
		const char *e = env + off;
		size_t el = strnlen(e, len - off);

		if (el > nl && !strncmp(e, name, nl) && e[nl] == '=') {
			snprintf(out, outlen, "%.*s", (int)(el - nl - 1), e + nl + 1);
			return;
		}
		off += el + 1;
	}
}

/* the first of NAMES set to a decimal number in ENV, into OUT */
static void first_number(const char *env, size_t len, const char *const *names,
			 char *out, size_t outlen)
{
	char v[PROC_LABEL_MAX + 1];

	for (; *names; names++) {
		v[0] = '\0';
		proc_labels_env_value(env, len, *names, v, sizeof(v));
		if (v[0] && strlen(v) <= 9 && strspn(v, "0123456789") == strlen(v)) {
			snprintf(out, outlen, "%s", v);
			return;
		}
	}
}

void proc_labels_ranks_from_env(const char *env, size_t len, struct proc_labels *l)
{
	/* a launcher's own names first: torchrun sets RANK also under srun */
	static const char *const global[] = {
		"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", NULL,
	};
	static const char *const local[] = {
		"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
		NULL,
	};

	first_number(env, len, global, l->rank, sizeof(l->rank));
	first_number(env, len, local, l->local_rank, sizeof(l->local_rank));
}

static int by_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

void proc_labels_nccl_env(const char *env, size_t len, struct proc_labels *l)
{
	size_t off = 0, n;

	l->nnccl_env = 0;
	while (off < len) {
		const char *e = env + off;

		n = strnlen(e, len - off);
		off += n + 1;
		if (n > 5 && !strncmp(e, "NCCL_", 5) && memchr(e, '=', n) &&
		    l->nnccl_env < PROC_NCCL_ENV_MAX)
			snprintf(l->nccl_env[l->nnccl_env++], sizeof(l->nccl_env[0]), "%.*s",
				 (int)n, e);
	}
	qsort(l->nccl_env, (size_t)l->nnccl_env, sizeof(l->nccl_env[0]), by_name);
}

#define ENV_MAX	(256 * 1024)

void proc_labels_read(pid_t pid, struct proc_labels *l)
{
	char path[128], buf[16384], *env;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (read_file(path, buf, sizeof(buf)) < 0) {
		memset(l, 0, sizeof(*l));
		return;
	}
	proc_labels_from_cgroup(buf, l);
	/* a training job's environment can be tens of KiB: RANK may come late */
	env = malloc(ENV_MAX);
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	n = env ? read_file(path, env, ENV_MAX) : -1;
	if (n > 0) {
		proc_labels_ranks_from_env(env, (size_t)n, l);
		proc_labels_nccl_env(env, (size_t)n, l);
		if (l->kubernetes)
			proc_labels_env_value(env, (size_t)n, "HOSTNAME", l->pod, sizeof(l->pod));
	}
	free(env);
	if (!l->kubernetes)
		return;
	/*
	 * /var/run is usually a symlink to /run, and an absolute link under
	 * /proc/PID/root resolves against our root, not the container's:
	 * /run first, then /var/run for images where it is a directory.
	 */
	snprintf(path, sizeof(path),
		 "/proc/%d/root/run/secrets/kubernetes.io/serviceaccount/namespace", (int)pid);
	n = read_file(path, buf, sizeof(buf));
	if (n <= 0) {
		snprintf(path, sizeof(path), "/proc/%d/root/var/run/secrets/kubernetes.io/"
			 "serviceaccount/namespace", (int)pid);
		n = read_file(path, buf, sizeof(buf));
	}
	if (n > 0) {
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(l->ns, sizeof(l->ns), "%.*s", PROC_LABEL_MAX, buf);
	}
}
