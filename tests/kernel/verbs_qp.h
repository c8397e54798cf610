/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * For the QEMU run's verbs programs (qp_error.c, nccl_qp_error.c): opens
 * the first verbs device, creates an RC QP and moves it RESET -> INIT ->
 * ERR (ib_modify_qp_with_udata with qp_state = IB_QPS_ERR in the kernel).
 * Returns -1 (said on stderr as WHO) when there is no QP, else the ERR
 * transition's result (0: ok); *CTX stays open (port events are
 * attributed by device), *DEV and *QPN say which QP.
 */
#ifndef CCLD_VERBS_QP_H
#define CCLD_VERBS_QP_H

#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

static int verbs_qp_to_error(const char *who, struct ibv_context **ctx, const char **dev,
			     uint32_t *qpn)
{
	struct ibv_qp_init_attr qia = { 0 };
	struct ibv_qp_attr a = { 0 };
	struct ibv_device **devs;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int n, err;

	*ctx = NULL;
	devs = ibv_get_device_list(&n);
	if (!devs || n < 1) {
		fprintf(stderr, "%s: no verbs device\n", who);
		return -1;
	}
	*dev = ibv_get_device_name(devs[0]);
	*ctx = ibv_open_device(devs[0]);
	pd = *ctx ? ibv_alloc_pd(*ctx) : NULL;
	cq = pd ? ibv_create_cq(*ctx, 4, NULL, NULL, 0) : NULL;
	qia.send_cq = qia.recv_cq = cq;
	qia.qp_type = IBV_QPT_RC;
	qia.cap.max_send_wr = qia.cap.max_recv_wr = 1;
	qia.cap.max_send_sge = qia.cap.max_recv_sge = 1;
	qp = cq ? ibv_create_qp(pd, &qia) : NULL;
	if (!qp) {
		fprintf(stderr, "%s: cannot create a QP on %s\n", who, *dev);
		return -1;
	}
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			    IBV_QP_ACCESS_FLAGS);
	if (err)
		fprintf(stderr, "%s: to INIT: %s\n", who, strerror(err));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	*qpn = qp->qp_num;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

#endif
