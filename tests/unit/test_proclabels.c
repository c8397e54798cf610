// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Container and Kubernetes detection from /proc/PID/cgroup (user/probe/proclabels.c). */
#include <stdlib.h>
#include <unistd.h>
#include "check.h"
#include "proclabels.h"

#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_paths(void)
{
	struct proc_labels l;

	/* cgroup v2, systemd driver, containerd */
	proc_labels_from_cgroup("0::/kubepods.slice/kubepods-burstable.slice/"
				"kubepods-burstable-pod1a2b3c4d_5e6f.slice/cri-containerd-"
				ID ".scope\n", &l);
	CHECK(l.kubernetes);
	CHECK_STR(l.container, "0123456789ab");
	/* cgroup v1, cgroupfs driver, several controllers */
	proc_labels_from_cgroup("12:pids:/kubepods/besteffort/pod1a2b-3c4d/" ID "\n"
				"1:name=systemd:/kubepods/besteffort/pod1a2b-3c4d/" ID "\n", &l);
	CHECK(l.kubernetes);
	CHECK_STR(l.container, "0123456789ab");
	/* plain docker: a container, no pod */
	proc_labels_from_cgroup("0::/system.slice/docker-" ID ".scope\n", &l);
	CHECK(!l.kubernetes);
	CHECK_STR(l.container, "0123456789ab");
	/* the host: nothing */
	proc_labels_from_cgroup("0::/user.slice/user-0.slice/session-3.scope\n", &l);
	CHECK(!l.kubernetes);
	CHECK_STR(l.container, "");
	/* 63 hex digits are not an id */
	proc_labels_from_cgroup("0::/x/123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n",
				&l);
	CHECK_STR(l.container, "");
	proc_labels_from_cgroup("", &l);
	CHECK(!l.kubernetes);
}

/* this process: readable, and no pod on a test machine's host */
static void test_self(void)
{
	struct proc_labels l;

	proc_labels_read(getpid(), &l);
	CHECK(l.kubernetes || !l.pod[0]);
	proc_labels_read(0x7ffffff0, &l);	/* no such process */
	CHECK_STR(l.container, "");
}

/* the launcher's ranks: torchrun's names first, then Slurm's, MPI's */
static void test_ranks_env(void)
{
	static const char env1[] = "PATH=/bin\0SLURM_PROCID=3\0RANK=12\0LOCAL_RANK=4\0";
	static const char env2[] = "OMPI_COMM_WORLD_RANK=7\0OMPI_COMM_WORLD_LOCAL_RANK=1\0";
	static const char env3[] = "RANK=abc\0PMI_RANK=2\0LOCAL_RANK=\0";
	static const char env4[] = "RANK=1234567890\0";
	struct proc_labels l;

	memset(&l, 0, sizeof(l));
	proc_labels_ranks_from_env(env1, sizeof(env1) - 1, &l);
	CHECK_STR(l.rank, "12");
	CHECK_STR(l.local_rank, "4");
	memset(&l, 0, sizeof(l));
	proc_labels_ranks_from_env(env2, sizeof(env2) - 1, &l);
	CHECK_STR(l.rank, "7");
	CHECK_STR(l.local_rank, "1");
	/* not a number: the next name; none: nothing */
	memset(&l, 0, sizeof(l));
	proc_labels_ranks_from_env(env3, sizeof(env3) - 1, &l);
	CHECK_STR(l.rank, "2");
	CHECK_STR(l.local_rank, "");
	memset(&l, 0, sizeof(l));
	proc_labels_ranks_from_env(env4, sizeof(env4) - 1, &l);
	CHECK_STR(l.rank, "");
}

/* the NCCL_* variables, sorted; not NCCL_ prefixes of other names, not cut */
static void test_nccl_env(void)
{
	static const char env[] = "NCCL_PROTO=Simple\0PATH=/bin\0NCCL_ALGO=Ring\0"
				  "XNCCL_FOO=1\0NCCL_\0NCCL_NOVALUE\0NCCL_IB_HCA=mlx5_0:1\0"
				  "NCCL_ALGO_OTHER=x";	/* the last entry unterminated */
	struct proc_labels *l = calloc(1, sizeof(*l));
	char big[2048], *p = big;
	int i;

	proc_labels_nccl_env(env, sizeof(env) - 1, l);
	CHECK_INT(l->nnccl_env, 4);
	CHECK_STR(l->nccl_env[0], "NCCL_ALGO=Ring");
	CHECK_STR(l->nccl_env[1], "NCCL_ALGO_OTHER=x");
	CHECK_STR(l->nccl_env[2], "NCCL_IB_HCA=mlx5_0:1");
	CHECK_STR(l->nccl_env[3], "NCCL_PROTO=Simple");
	/* more than PROC_NCCL_ENV_MAX: the first ones kept */
	for (i = 0; i < 40; i++)
		p += sprintf(p, "NCCL_V%02d=%d", 39 - i, i) + 1;
	proc_labels_nccl_env(big, (size_t)(p - big), l);
	CHECK_INT(l->nnccl_env, PROC_NCCL_ENV_MAX);
	CHECK_STR(l->nccl_env[0], "NCCL_V08=31");
	free(l);
}

int main(void)
{
	test_paths();
	test_ranks_env();
	test_nccl_env();
	test_self();
	return check_finish("test_proclabels");
}
