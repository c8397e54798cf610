/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where a traced process runs, for verdicts in fleet mode: the Kubernetes
 * pod (its HOSTNAME, which Kubernetes sets to the pod name), namespace
 * (the service account's namespace file in the container) and container
 * id (from the cgroup path; also for plain Docker/containerd).  Empty
 * strings where a label does not apply (a process on the host).
 */
#ifndef CCLD_PROCLABELS_H
#define CCLD_PROCLABELS_H

#include <stdbool.h>
#include <sys/types.h>

#define PROC_LABEL_MAX	63

struct proc_labels {
	char pod[PROC_LABEL_MAX + 1];
	char ns[PROC_LABEL_MAX + 1];
	char container[PROC_LABEL_MAX + 1];	/* 12 hex digits, as docker ps */
	bool kubernetes;	/* the cgroup path is under kubepods */
};

/* The labels from the text of /proc/PID/cgroup (no pod name, no namespace). */
void proc_labels_from_cgroup(const char *cgroup, struct proc_labels *l);

/* All labels of PID (reads /proc/PID/{cgroup,environ,root/...}). */
void proc_labels_read(pid_t pid, struct proc_labels *l);

#endif
