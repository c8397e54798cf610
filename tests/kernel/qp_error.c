// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * For the QEMU run of the RDMA programs (tests/kernel/qemu-rdma.sh): moves
 * a QP of the first verbs device to ERR (verbs_qp.h) and prints its number.
 * Build: cc -o qp_error qp_error.c -libverbs
 */
#include "verbs_qp.h"

int main(void)
{
	struct ibv_context *ctx;
	const char *dev = "?";
	uint32_t qpn = 0;
	int err = verbs_qp_to_error("qp_error", &ctx, &dev, &qpn);

	if (err >= 0)
		printf("qp_error: %s QP 0x%x to ERR: %s\n", dev, qpn, err ? strerror(err) : "ok");
	return err ? 1 : 0;	/* exiting frees the device, QP, CQ and PD */
}
