// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <string.h>
#include "stackasm.h"

void stack_asm_part(struct stack_asm *a, uint32_t host, const struct ccld_event *ev)
{
	const struct ccld_thread_stack *s = &ev->u.stack;
	size_t i, at = (size_t)s->part * CCLD_STACK_CHUNK;

	if (!s->nparts || s->nparts > CCLD_STACK_PARTS || s->part >= s->nparts || !ev->tid) {
		a->tid = 0;
		return;
	}
	if (a->tid != ev->tid || a->pid != ev->pid || a->host != host || a->ts != ev->ts_ns ||
	    a->nparts != s->nparts) {
		a->host = host;
		a->pid = ev->pid;
		a->tid = ev->tid;
		a->ts = ev->ts_ns;
		a->nparts = s->nparts;
		a->have = 0;
		memset(a->text, 0, sizeof(a->text));
	}
	for (i = 0; i < CCLD_STACK_CHUNK && s->text[i]; i++)
		a->text[at + i] = s->text[i] >= ' ' && s->text[i] <= '~' ? s->text[i] : '?';
	a->have |= (uint8_t)(1u << s->part);
}

bool stack_asm_take(struct stack_asm *a, uint32_t host, const struct ccld_event *ev,
		    char *out, size_t len)
{
	bool whole = a->tid && a->tid == ev->tid && a->pid == ev->pid && a->host == host &&
		     a->ts == ev->ts_ns && a->have == (uint8_t)((1u << a->nparts) - 1);

	if (len)
		snprintf(out, len, "%s", whole ? a->text : "");
	a->tid = 0;
	return whole;
}
