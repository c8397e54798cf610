// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The capabilities tracing needs (docs/deploy.md, "Capabilities"): whether
 * this process has one, and which one a failure was for, so that ccld-trace
 * says it in one line instead of a bare EPERM or "no NCCL".
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <linux/capability.h>
#include "caps.h"

/* CAP in this process's effective set (docs/deploy.md, "Capabilities") */
bool have_cap(int cap)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &h, d))
		return true;	/* cannot tell: let the kernel decide */
	return d[cap / 32].effective & (1u << (cap % 32));
}

/* why bpf() said EPERM: the capability, or RLIMIT_MEMLOCK before 5.11 */
const char *load_eperm_hint(void)
{
	struct utsname u;
	struct rlimit rl;
	int major = 0, minor = 0;

	if (!have_cap(CAP_BPF) && !have_cap(CAP_SYS_ADMIN))
		return " (needs CAP_BPF and CAP_PERFMON; CAP_SYS_ADMIN on kernels "
		       "before 5.8)";
	if (!have_cap(CAP_PERFMON) && !have_cap(CAP_SYS_ADMIN))
		return " (needs CAP_PERFMON besides CAP_BPF)";
	if (!uname(&u) && sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
	    (major < 5 || (major == 5 && minor < 11)) &&
	    !getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    !have_cap(CAP_SYS_RESOURCE))
		return " (kernels before 5.11 charge BPF maps to RLIMIT_MEMLOCK: "
		       "raise it, e.g. LimitMEMLOCK=infinity, or grant CAP_SYS_RESOURCE)";
	return " (needs CAP_BPF and CAP_PERFMON; CAP_SYS_ADMIN on kernels "
	       "before 5.8)";
}

/*
 * No NCCL found in PID: true, with ERR filled, when that is because a
 * library of PID whose name says NCCL could not be opened for lack of a
 * capability: CAP_SYS_PTRACE (/proc/PID/root closed) or
 * CAP_DAC_READ_SEARCH (a directory or file of another user).
 */
bool explain_denied(pid_t pid, char *err, size_t errlen)
{
	char path[64], host[PATH_MAX + 64], *line = NULL, *p;
	size_t cap = 0;
	bool found = false;
	struct stat st;
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/root/", (int)pid);
	if (stat(path, &st) && (errno == EACCES || errno == EPERM)) {
		snprintf(err, errlen, "cannot open %s: %s (needs CAP_SYS_PTRACE)",
			 path, strerror(errno));
		return true;
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && getline(&line, &cap, f) > 0) {
		p = strchr(line, '/');
		if (!p || !strstr(strrchr(p, '/'), "nccl"))
			continue;
		p[strcspn(p, "\n")] = '\0';
		snprintf(host, sizeof(host), "/proc/%d/root%s", (int)pid, p);
		fd = open(host, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			close(fd);
			continue;
		}
		if (errno == EACCES || errno == EPERM) {
			snprintf(err, errlen, "cannot open %.300s: %s (needs "
				 "CAP_DAC_READ_SEARCH)", host, strerror(errno));
			found = true;
		}
	}
	free(line);
	fclose(f);
	return found;
}
