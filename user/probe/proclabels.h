/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where a traced process runs, for verdicts in fleet mode: the Kubernetes
 * pod (its HOSTNAME, which Kubernetes sets to the pod name), namespace
 * (the service account's namespace file in the container) and container
 * id (from the cgroup path; also for plain Docker/containerd).  Empty
 * strings where a label does not apply (a process on the host).  Also the
 * rank its launcher gave it, from its environment (torchrun, Slurm, Open
 * MPI, MPICH/PMI), for verdicts that name the job's global rank.
 */
#ifndef CCLD_PROCLABELS_H
#define CCLD_PROCLABELS_H

#include <stdbool.h>
#include <sys/types.h>

#define PROC_LABEL_MAX	63
#define PROC_NCCL_ENV_MAX	32	/* NCCL_* variables kept per process */

struct proc_labels {
	char pod[PROC_LABEL_MAX + 1];
	char ns[PROC_LABEL_MAX + 1];
	char container[PROC_LABEL_MAX + 1];	/* 12 hex digits, as docker ps */
	char rank[PROC_LABEL_MAX + 1];		/* global rank, decimal; "" unknown */
	char local_rank[PROC_LABEL_MAX + 1];	/* rank on its node, decimal */
	/* its NCCL_* variables, "NAME=VALUE" (cut at PROC_LABEL_MAX), by name */
	char nccl_env[PROC_NCCL_ENV_MAX][PROC_LABEL_MAX + 1];
	int nnccl_env;
	bool kubernetes;	/* the cgroup path is under kubepods */
};

/* The labels from the text of /proc/PID/cgroup (no pod name, no namespace). */
void proc_labels_from_cgroup(const char *cgroup, struct proc_labels *l);

/*
 * The value of NAME= in an environ block ENV of LEN bytes (NAME=VALUE
 * entries, NUL separated) into OUT, truncated to OUTLEN; OUT is left as it
 * is when there is none.
 */
void proc_labels_env_value(const char *env, size_t len, const char *name, char *out,
			   size_t outlen);

/*
 * The launcher's global and local rank from an environ block ENV of LEN
 * bytes into L (RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK,
 * PMIX_RANK in that order; LOCAL_RANK, SLURM_LOCALID,
 * OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID): decimal values only.
 */
void proc_labels_ranks_from_env(const char *env, size_t len, struct proc_labels *l);

/*
 * The NCCL_* variables of an environ block ENV of LEN bytes into L, sorted
 * by name (the first PROC_NCCL_ENV_MAX of them): NCCL reads its settings
 * there, and ranks of one communicator that disagree on them (NCCL_ALGO,
 * NCCL_PROTO, NCCL_BUFFSIZE...) can hang or slow it.  A variable the
 * process set after it started is not in /proc/PID/environ: not seen.
 */
void proc_labels_nccl_env(const char *env, size_t len, struct proc_labels *l);

/* All labels of PID (reads /proc/PID/{cgroup,environ,root/...}). */
void proc_labels_read(pid_t pid, struct proc_labels *l);

#endif
