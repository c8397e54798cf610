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

/* part K of N of thread TID's stack, TEXT, from HOST at TS */
static void feed(struct stack_asm *a, uint32_t host, uint32_t tid, uint64_t ts, int k, int n,
		 const char *text)
{
	struct ccld_event ev = part(tid, ts, k, n, text);

	stack_asm_part(a, host, &ev);
}

/* the stack of thread TID's record from host 0 at TS into OUT: whether one came */
static bool take(struct stack_asm *a, uint32_t tid, uint64_t ts, char *out, size_t len)
{
	struct ccld_event ev = thread(tid, ts);

	return stack_asm_take(a, 0, &ev, out, len);
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
	feed(&a, 0, 9, 100, 1, 2, "main+0x2f5");
	CHECK(take(&a, 9, 100, out, sizeof(out)));
	CHECK_STR(out, want);
	/* taken: the next thread record has none */
	CHECK(!take(&a, 9, 100, out, sizeof(out)));
	CHECK_STR(out, "");

	/* a part missing: no stack */
	feed(&a, 0, 9, 200, 0, 2, "write+0x17");
	CHECK(!take(&a, 9, 200, out, sizeof(out)));
	CHECK_STR(out, "");

	/* another thread's, or another look's, or another host's, is not this one's */
	feed(&a, 0, 9, 300, 0, 1, "write+0x17");
	CHECK(!take(&a, 10, 300, out, sizeof(out)));
	feed(&a, 0, 9, 300, 0, 1, "write+0x17");
	CHECK(!take(&a, 9, 301, out, sizeof(out)));
	feed(&a, 1, 9, 300, 0, 1, "write+0x17");
	CHECK(!take(&a, 9, 300, out, sizeof(out)));

	/* out of range: a part past nparts, more parts than a stack has */
	feed(&a, 0, 9, 400, 1, 1, "x");
	CHECK(!take(&a, 9, 400, out, sizeof(out)));
	feed(&a, 0, 9, 400, 0, CCLD_STACK_PARTS + 1, "x");
	CHECK(!take(&a, 9, 400, out, sizeof(out)));

	/* bytes that are not printable text */
	feed(&a, 0, 9, 500, 0, 1, "fn\n\x1b[31m+0x1");
	CHECK(take(&a, 9, 500, out, sizeof(out)));
	CHECK_STR(out, "fn??[31m+0x1");
	/* a small buffer gets its start */
	feed(&a, 0, 9, 600, 0, 1, "write+0x17 < main+0x2f5");
	CHECK(take(&a, 9, 600, out, 6));
	CHECK_STR(out, "write");
	return check_finish("test_stackasm");
}
