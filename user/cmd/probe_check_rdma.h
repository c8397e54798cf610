/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* probe-check's RDMA section: the kernel's verbs functions and the plan. */
#ifndef CCLD_PROBE_CHECK_RDMA_H
#define CCLD_PROBE_CHECK_RDMA_H

#include <stdio.h>
#include "rdma_plan.h"

/* "would attach 4 of 4 (kprobe)" or "not attached: no ib_core in this kernel" */
void pc_rdma_verdict(const struct rdma_plan *p, char *out, size_t len);
void pc_rdma_text(FILE *f, const struct rdma_plan *p);
/* ,"rdma":{...} */
void pc_rdma_json(FILE *f, const struct rdma_plan *p);

#endif
