/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The local TCP endpoints of the traced processes, as CCLD_EV_ENDPOINT
 * records: after each socket scan, each (process, address, port, netns)
 * that has a socket now (connected, or listening on that address) and had
 * none at the last scan, and each that had one and has none now.  NCCL names a peer by the address of the
 * peer's end of their connection; these records let the analyzer turn
 * that address into a process (docs/analyzer.md, "NCCL's warnings").
 */
#ifndef CCLD_ENDPOINTS_H
#define CCLD_ENDPOINTS_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "ccld.h"

struct endpoints;

typedef void (*endpoint_emit_fn)(void *ctx, const struct ccld_event *ev);

struct endpoints *endpoints_new(void);
void endpoints_free(struct endpoints *e);

/*
 * The sockets of the scan just done (KEYS[i] owned by PIDS[i]): emits the
 * changes at time NOW.  -ENOMEM leaves the last scan's set as it was.
 */
int endpoints_update(struct endpoints *e, const struct ccld_tcp_key *keys, const uint32_t *pids,
		     size_t n, uint64_t now, endpoint_emit_fn emit, void *ctx);

/* The address of a ccld_tcp_key (ccld.h's convention) as text into OUT[46]. */
void endpoint_addr_text(const __u8 addr[16], char *out);

#endif
