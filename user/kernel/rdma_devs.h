/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which processes use an RDMA device: port and device events happen in
 * interrupt or workqueue context, so they are attributed by device to the
 * processes that have its uverbs character device open
 * (/proc/PID/fd/N -> /dev/infiniband/uverbsM, and
 * /sys/class/infiniband_verbs/uverbsM/ibdev names the device).
 */
#ifndef CCLD_RDMA_DEVS_H
#define CCLD_RDMA_DEVS_H

#include <stdbool.h>
#include <sys/types.h>

/* True when PID has a uverbs device of IB device IBDEV open.  ROOT prefixes
 * /proc and /sys ("" normally; a directory tree in tests). */
bool rdma_dev_in_use(const char *root, pid_t pid, const char *ibdev);

#endif
