// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * For the QEMU run (tests/kernel/qemu-rdma.sh): a one-rank NCCL job on the
 * stand-in (build/sim/lib) that also holds an RDMA device open and moves
 * one of its QPs to error, so that ccld-trace --all sees a traced rank's
 * QP error (an HW verdict naming the NIC) and, while it sleeps with the
 * device open, the port going down (attributed by device).
 *   nccl_qp_error [SLEEP_S]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include "verbs_qp.h"

#define NCCLOK(call) do {						\
	ncclResult_t r_ = (call);					\
	if (r_ != ncclSuccess) {					\
		fprintf(stderr, "nccl_qp_error: %s: %s\n", #call,	\
			ncclGetErrorString(r_));			\
		exit(2);						\
	}								\
} while (0)

static void allreduce(ncclComm_t comm, float *buf, cudaStream_t s, int n)
{
	int i;

	for (i = 0; i < n; i++)
		NCCLOK(ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, comm, s));
	if (cudaStreamSynchronize(s) != cudaSuccess)
		fprintf(stderr, "nccl_qp_error: cudaStreamSynchronize failed\n");
}

/* a QP of the first verbs device to ERR; the device stays open */
static struct ibv_context *qp_to_error(void)
{
	struct ibv_context *ctx;
	const char *dev = "?";
	uint32_t qpn = 0;
	int err = verbs_qp_to_error("nccl_qp_error", &ctx, &dev, &qpn);

	if (err >= 0) {
		printf("nccl_qp_error: pid %d: %s QP 0x%x to ERR: %s\n", (int)getpid(), dev, qpn,
		       err ? strerror(err) : "ok");
		fflush(stdout);
	}
	return ctx;	/* kept open: port events are attributed by device */
}

static void wait_for_go(const char *path)
{
	int i;

	if (!path) {
		sleep(4);
		return;
	}
	for (i = 0; i < 600 && access(path, F_OK); i++)
		usleep(100000);
}

int main(int argc, char **argv)
{
	int sleep_s = argc > 1 ? atoi(argv[1]) : 10;
	struct ibv_context *ctx;
	ncclUniqueId id;
	ncclComm_t comm;
	cudaStream_t s;
	float *buf;

	if (cudaSetDevice(0) != cudaSuccess || cudaStreamCreate(&s) != cudaSuccess ||
	    cudaMalloc((void **)&buf, 1024 * sizeof(float)) != cudaSuccess) {
		fprintf(stderr, "nccl_qp_error: CUDA stand-in setup failed\n");
		return 2;
	}
	NCCLOK(ncclGetUniqueId(&id));
	NCCLOK(ncclCommInitRank(&comm, 1, id, 0));
	allreduce(comm, buf, s, 10);
	/*
	 * ccld-trace --all puts a process into its filter once every probe
	 * of its (newly loaded) library is in, which takes seconds in the
	 * emulated guest; a QP error before that is an untraced process's.
	 * CCLD_QP_GO=FILE: wait (60 s at most) until FILE exists: the guest
	 * script creates it once the tracer says the probes are in
	 */
	wait_for_go(getenv("CCLD_QP_GO"));
	ctx = qp_to_error();
	allreduce(comm, buf, s, 10);
	sleep(sleep_s);
	allreduce(comm, buf, s, 10);
	NCCLOK(ncclCommDestroy(comm));
	if (ctx)
		ibv_close_device(ctx);
	return 0;
}
