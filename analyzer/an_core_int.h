/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The input files' own: an_core.c (state, lookups), an_calls.c (tier A/B)
 * and an_proxy.c (tier C/E) share these.
 */
#ifndef CCLD_AN_CORE_INT_H
#define CCLD_AN_CORE_INT_H

#include "an_int.h"

/* progress on comm C seen on HOST at T: the stall clock restarts */
void an_comm_progress(struct an *an, struct an_comm *c, uint32_t host, uint64_t t);
/*
 * The rank K names, an input at T_NS; a rank not known yet is bound to its
 * process (LIVE: a process alive at T_NS, else one a peer's table says is
 * gone).
 */
struct an_rank *an_rank_bind(struct an *an, const struct an_key *k, bool create,
			     bool live, uint64_t t_ns);
/* an_proxy.c: R's process's stream is idle from T_NS (for an_gpu_start) */
void an_note_done(struct an *an, uint64_t comm, const struct an_rank *r, uint64_t t_ns);

#endif
