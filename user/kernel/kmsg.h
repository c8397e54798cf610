/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * GPU errors from the kernel log (tier D): the NVIDIA driver's Xid lines
 * read from /dev/kmsg, from the moment ccld opened it.
 *
 *   NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.
 */
#ifndef CCLD_KMSG_H
#define CCLD_KMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct xid_line {
	uint64_t bus_id;	/* as NCCL's busIdToInt64 of "DDDD:BB:DD.0" */
	char bus[16];		/* "0000:3b:00" */
	uint32_t xid;
	char text[52];		/* what follows the number, trimmed */
};

/*
 * Parses one log message (a /dev/kmsg record's text after ';', or any
 * line): true for an Xid line.  Anything else, malformed ones included,
 * gives false.
 */
bool xid_parse(const char *msg, size_t len, struct xid_line *x);

struct kmsg;

/* Opens /dev/kmsg at its end; NULL with ERR (e.g. not readable). */
struct kmsg *kmsg_open(char *err, size_t errlen);
void kmsg_close(struct kmsg *k);

/* Reads what arrived, calls FN for each Xid line; never blocks. */
void kmsg_poll(struct kmsg *k, void (*fn)(void *ctx, const struct xid_line *x), void *ctx);

#endif
