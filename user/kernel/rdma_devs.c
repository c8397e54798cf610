// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Device -> process attribution for RDMA port / device events (rdma_devs.h).
 * Called for rare events only: no cache, the fd table is read each time.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "rdma_devs.h"

#define UVERBS_DEV	"/dev/infiniband/uverbs"

/* the IB device behind /dev/infiniband/uverbsN (NAME = "uverbsN") */
static bool uverbs_ibdev(const char *root, const char *name, char *out, size_t len)
{
	char path[PATH_MAX + 64];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "%s/sys/class/infiniband_verbs/%s/ibdev", root, name);
	f = fopen(path, "r");
	if (!f)
		return false;
	ok = fgets(out, len, f) != NULL;
	fclose(f);
	if (ok)
		out[strcspn(out, "\n")] = '\0';
	return ok;
}

bool rdma_dev_in_use(const char *root, pid_t pid, const char *ibdev)
{
	char dir[PATH_MAX], target[PATH_MAX], name[32], dev[64];
	struct dirent *de;
	bool found = false;
	ssize_t n;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/proc/%d/fd", root, (int)pid);
	d = opendir(dir);
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		n = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (strncmp(target, UVERBS_DEV, strlen(UVERBS_DEV)))
			continue;
		snprintf(name, sizeof(name), "%.31s", target + strlen("/dev/infiniband/"));
		found = uverbs_ibdev(root, name, dev, sizeof(dev)) && !strcmp(dev, ibdev);
	}
	closedir(d);
	return found;
}
