// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * For the QEMU run of the RDMA programs (tests/kernel/qemu-rdma.sh): opens
 * the first verbs device, creates an RC QP, moves it RESET -> INIT -> ERR
 * (ib_modify_qp_with_udata with qp_state = IB_QPS_ERR in the kernel) and
 * prints the QP number.  Build: cc -o qp_error qp_error.c -libverbs
 */
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

int main(void)
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
		fprintf(stderr, "qp_error: no verbs device\n");
		return 1;
	}
	ctx = ibv_open_device(devs[0]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = ctx ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
	if (!pd || !cq) {
		fprintf(stderr, "qp_error: cannot open %s / PD / CQ\n",
			ibv_get_device_name(devs[0]));
		return 1;
	}
	qia.send_cq = qia.recv_cq = cq;
	qia.qp_type = IBV_QPT_RC;
	qia.cap.max_send_wr = qia.cap.max_recv_wr = 1;
	qia.cap.max_send_sge = qia.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &qia);
	if (!qp) {
		fprintf(stderr, "qp_error: cannot create QP\n");
		return 1;
	}
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			    IBV_QP_ACCESS_FLAGS);
	if (err)
		fprintf(stderr, "qp_error: to INIT: %s\n", strerror(err));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	printf("qp_error: %s QP 0x%x to ERR: %s\n", ibv_get_device_name(devs[0]),
	       qp->qp_num, err ? strerror(err) : "ok");
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(devs);
	return err ? 1 : 0;
}
