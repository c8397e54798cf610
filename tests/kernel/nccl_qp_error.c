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
#include <infiniband/verbs.h>
#include <nccl.h>

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

/* opens the first verbs device, creates an RC QP and moves it to ERR */
static struct ibv_context *qp_to_error(void)
{
	struct ibv_qp_init_attr qia = { 0 };
	struct ibv_qp_attr a = { 0 };
	struct ibv_device **devs;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int n, err;

	devs = ibv_get_device_list(&n);
	if (!devs || n < 1) {
		fprintf(stderr, "nccl_qp_error: no verbs device\n");
		return NULL;
	}
	ctx = ibv_open_device(devs[0]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = pd ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
	qia.send_cq = qia.recv_cq = cq;
	qia.qp_type = IBV_QPT_RC;
	qia.cap.max_send_wr = qia.cap.max_recv_wr = 1;
	qia.cap.max_send_sge = qia.cap.max_recv_sge = 1;
	qp = cq ? ibv_create_qp(pd, &qia) : NULL;
	if (!qp) {
		fprintf(stderr, "nccl_qp_error: cannot create a QP on %s\n",
			ibv_get_device_name(devs[0]));
		return ctx;
	}
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			    IBV_QP_ACCESS_FLAGS);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	err = err ? err : ibv_modify_qp(qp, &a, IBV_QP_STATE);
	printf("nccl_qp_error: pid %d: %s QP 0x%x to ERR: %s\n", (int)getpid(),
	       ibv_get_device_name(devs[0]), qp->qp_num, err ? strerror(err) : "ok");
	fflush(stdout);
	return ctx;	/* kept open: port events are attributed by device */
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
	sleep(1);
	ctx = qp_to_error();
	allreduce(comm, buf, s, 10);
	sleep(sleep_s);
	allreduce(comm, buf, s, 10);
	NCCLOK(ncclCommDestroy(comm));
	if (ctx)
		ibv_close_device(ctx);
	return 0;
}
