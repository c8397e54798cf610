/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Exactly-once on top of at-least-once delivery (docs/fleet.md section 4):
 * per producer (node name, instance), the seqs already processed: every seq
 * up to `base`, and a window of DEDUPE_WINDOW seqs above it as a bitmap.  A
 * seq more than the window above `base` moves the window: the seqs it
 * passes that never came count as gaps (records the producer dropped, or
 * lost), and would be refused if they came later.
 */
#ifndef CCLD_DEDUPE_H
#define CCLD_DEDUPE_H

#include <stdbool.h>
#include <stdint.h>
#include "hmap.h"

#define DEDUPE_WINDOW	65536

struct dedupe {
	struct hmap producers;	/* (FNV of node, inst) -> struct dd_prod */
	uint64_t dups;		/* records refused as seen */
	uint64_t gaps;		/* seqs the window passed without them */
};

void dedupe_init(struct dedupe *d);
void dedupe_free(struct dedupe *d);

/* True the first time (NODE, INST, SEQ) is offered (and marks it seen);
 * false for a duplicate, or on out of memory (-ENOMEM in *err). */
bool dedupe_first(struct dedupe *d, const char *node, uint64_t inst, uint64_t seq,
		  int *err);

#endif
