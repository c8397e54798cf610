/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The kernel's TCP socket tables, /proc/PID/net/tcp and tcp6 (the network
 * namespace of PID), and a process's socket inodes (/proc/PID/fd).
 */
#ifndef CCLD_PROCNET_H
#define CCLD_PROCNET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "ccld.h"

#define PROCNET_TCP_LISTEN	10	/* st column of a listening socket */

struct procnet_sock {
	struct ccld_tcp_key key;	/* netns left 0 */
	uint64_t inode;
	int state;			/* TCP_* */
};

/*
 * Parses one line of /proc/net/tcp (V6 false) or tcp6 (true); false for the
 * header and anything malformed.  Addresses come out in network order as
 * the kernel keeps them (skc_rcv_saddr / skc_v6_rcv_saddr), ports in host
 * order.
 */
bool procnet_parse_line(const char *line, bool v6, struct procnet_sock *s);

/* Socket inodes of PID's open files, sorted; -1 with errno. */
int procnet_socket_inodes(uint32_t pid, uint64_t **inodes, size_t *n);

/* PID's network namespace inode; 0 when unknown. */
uint32_t procnet_netns(uint32_t pid);

#endif
