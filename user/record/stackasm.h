/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A thread's native stack put together from its CCLD_EV_THREAD_STACK
 * records (bpf/ccld.h): the parts of one look, consecutive, just before
 * that thread's CCLD_EV_THREAD record of the same time.  Records come from
 * capture files too, outside input: a part out of range or of another
 * look starts over, and bytes that are not printable ASCII become '?'.
 */
#ifndef CCLD_STACKASM_H
#define CCLD_STACKASM_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ccld.h"

#define STACK_TEXT_MAX	(CCLD_STACK_PARTS * CCLD_STACK_CHUNK + 1)

struct stack_asm {
	uint32_t host, pid, tid;	/* tid 0: nothing held */
	uint64_t ts;
	uint8_t nparts;		/* parts announced ... */
	uint8_t have;		/* ... a bit per part received */
	char text[STACK_TEXT_MAX];
};

/* One CCLD_EV_THREAD_STACK record EV of HOST. */
void stack_asm_part(struct stack_asm *a, uint32_t host, const struct ccld_event *ev);

/*
 * The stack of thread record EV (CCLD_EV_THREAD) of HOST into OUT (LEN
 * bytes, at least STACK_TEXT_MAX for all of it): every part of it came
 * just before, else "".  What was held is dropped either way.  True where
 * there was one.
 */
bool stack_asm_take(struct stack_asm *a, uint32_t host, const struct ccld_event *ev,
		    char *out, size_t len);

#endif
