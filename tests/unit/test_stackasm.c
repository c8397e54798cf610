// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * stackasm: a thread's native stack put together from its parts
 * (CCLD_EV_THREAD_STACK), for the thread record of the same look; parts
 * missing, of another look or out of range give no stack, and what is not
 * printable text becomes '?'.
 */
#include <string.h>
#include "check.h"
#include "stackasm.h"

static struct ccld_event part(uint32_t tid, uint64_t ts, int k, int n, const char *text)
{
	struct ccld_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = CCLD_EV_THREAD_STACK;
	ev.pid = 7;
	ev.tid = tid;
	ev.ts_ns = ts;
	ev.u.stack.part = (uint8_t)k;
	ev.u.stack.nparts = (uint8_t)n;
	memcpy(ev.u.stack.text, text, strnlen(text, CCLD_STACK_CHUNK));
	return ev;
}

static struct ccld_event thread(uint32_t tid, uint64_t ts)
{
	struct ccld_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = CCLD_EV_THREAD;
	ev.pid = 7;
	ev.tid = tid;
	ev.ts_ns = ts;
	return ev;
}

int main(void)
{
	/* a full chunk has no NUL: the next part goes on right after it */
	const char *c0 = "write+0x17 < save_checkpoint+0x4e < train_step+0x1c22 <";
	struct stack_asm a;
	struct ccld_event ev;
	char out[STACK_TEXT_MAX], want[STACK_TEXT_MAX];

	memset(&a, 0, sizeof(a));
	CHECK_INT(strlen(c0), CCLD_STACK_CHUNK - 1);
	snprintf(want, sizeof(want), "%s main+0x2f5", c0);
	ev = part(9, 100, 0, 2, c0);
	ev.u.stack.text[CCLD_STACK_CHUNK - 1] = ' ';
	stack_asm_part(&a, 0, &ev);
	ev = part(9, 100, 1, 2, "main+0x2f5");
	stack_asm_part(&a, 0, &ev);
	ev = thread(9, 100);
	CHECK(stack_asm_take(&a, 0, &ev, out, sizeof(out)));
	CHECK_STR(out, want);
	/* taken: the next thread record has none */
	CHECK(!stack_asm_take(&a, 0, &ev, out, sizeof(out)));
	CHECK_STR(out, "");

	/* a part missing: no stack */
	ev = part(9, 200, 0, 2, "write+0x17");
	stack_asm_part(&a, 0, &ev);
	ev = thread(9, 200);
	CHECK(!stack_asm_take(&a, 0, &ev, out, sizeof(out)));
	CHECK_STR(out, "");

	/* another thread's, or another look's, is not this one's */
	ev = part(9, 300, 0, 1, "write+0x17");
	stack_asm_part(&a, 0, &ev);
	ev = thread(10, 300);
	CHECK(!stack_asm_take(&a, 0, &ev, out, sizeof(out)));
	ev = part(9, 300, 0, 1, "write+0x17");
	stack_asm_part(&a, 0, &ev);
	ev = thread(9, 301);
	CHECK(!stack_asm_take(&a, 0, &ev, out, sizeof(out)));
	ev = part(9, 300, 0, 1, "write+0x17");
	stack_asm_part(&a, 1, &ev);
	ev = thread(9, 300);
	CHECK(!stack_asm_take(&a, 0, &ev, out, sizeof(out)));

	/* out of range: a part past nparts, more parts than a stack has */
	ev = part(9, 400, 1, 1, "x");
	stack_asm_part(&a, 0, &ev);
	ev = thread(9, 400);
	CHECK(!stack_asm_take(&a, 0, &ev, out, sizeof(out)));
	ev = part(9, 400, 0, CCLD_STACK_PARTS + 1, "x");
	stack_asm_part(&a, 0, &ev);
	ev = thread(9, 400);
	CHECK(!stack_asm_take(&a, 0, &ev, out, sizeof(out)));

	/* bytes that are not printable text */
	ev = part(9, 500, 0, 1, "fn\n\x1b[31m+0x1");
	stack_asm_part(&a, 0, &ev);
	ev = thread(9, 500);
	CHECK(stack_asm_take(&a, 0, &ev, out, sizeof(out)));
	CHECK_STR(out, "fn??[31m+0x1");
	/* a small buffer gets its start */
	ev = part(9, 600, 0, 1, "write+0x17 < main+0x2f5");
	stack_asm_part(&a, 0, &ev);
	ev = thread(9, 600);
	CHECK(stack_asm_take(&a, 0, &ev, out, 6));
	CHECK_STR(out, "write");
	return check_finish("test_stackasm");
}
