/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Tier D, TCP: the BPF programs on the TCP tracepoints (bpf/tcp.bpf.c) and
 * the table of traced processes' sockets they match against.
 */
#ifndef CCLD_TCPWATCH_H
#define CCLD_TCPWATCH_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "ccld.h"

struct tcpwatch;

/*
 * Loads and attaches the programs; their records go to the ring buffer
 * EVENTS_FD (drops counted in DROPS_FD and, per process, PID_DROPS_FD).
 * SUMMARY says what attached and how ("tcp: 4/4 tracepoints (tp_btf)").
 * NULL when nothing attached.
 */
struct tcpwatch *tcpwatch_open(int events_fd, int drops_fd, int pid_drops_fd, char *summary,
			       size_t len);
void tcpwatch_free(struct tcpwatch *w);

/* Re-reads the sockets of PIDS (the processes traced now) into the table. */
void tcpwatch_scan(struct tcpwatch *w, const uint32_t *pids, size_t n);

/* Fills ev->u.tcp.peer_pid: the traced process at the other end, if any. */
void tcpwatch_resolve(const struct tcpwatch *w, struct ccld_event *ev);

/* Sockets in the table now. */
size_t tcpwatch_size(const struct tcpwatch *w);

/* The sockets the last scan found: the table's, then the listening ones. */
size_t tcpwatch_nsockets(const struct tcpwatch *w);
/* Socket I (< tcpwatch_nsockets) of the last scan: its 4-tuple and its process. */
void tcpwatch_socket(const struct tcpwatch *w, size_t i, struct ccld_tcp_key *key,
		     uint32_t *pid);

#endif
