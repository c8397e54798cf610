// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "schedwatch.h"
#include "threads.h"

struct watched {
	uint32_t pid, tid;
};

struct schedwatch {
	struct watched t[SCHEDWATCH_MAX];
	uint32_t n;
};

struct schedwatch *schedwatch_new(void)
{
	return calloc(1, sizeof(struct schedwatch));
}

void schedwatch_free(struct schedwatch *w)
{
	free(w);
}

/* one CCLD_EV_SCHED record of thread T now; false when it is gone */
static bool read_one(const struct watched *t, uint64_t now_ns, schedwatch_emit_fn emit,
		     void *ctx)
{
	struct ccld_event ev;
	int ret;

	memset(&ev, 0, sizeof(ev));
	ret = threads_schedstat((pid_t)t->pid, (pid_t)t->tid, &ev.u.sched);
	if (ret == -ENOENT)
		return false;
	if (ret)
		return true;	/* unreadable now (no schedstats): nothing said */
	ev.type = CCLD_EV_SCHED;
	ev.version = CCLD_ABI_VERSION;
	ev.pid = t->pid;
	ev.tid = t->tid;
	ev.ts_ns = now_ns;
	emit(ctx, &ev);
	return true;
}

void schedwatch_note(struct schedwatch *w, uint32_t pid, uint32_t tid, uint64_t now_ns,
		     schedwatch_emit_fn emit, void *ctx)
{
	uint32_t i;

	for (i = 0; i < w->n; i++)
		if (w->t[i].pid == pid && w->t[i].tid == tid)
			return;
	if (w->n >= SCHEDWATCH_MAX)
		return;
	w->t[w->n] = (struct watched){ pid, tid };
	/* its first reading now: a sample's window starts about here */
	if (read_one(&w->t[w->n], now_ns, emit, ctx))
		w->n++;
}

void schedwatch_tick(struct schedwatch *w, uint64_t now_ns, schedwatch_emit_fn emit,
		     void *ctx)
{
	uint32_t i;

	for (i = 0; i < w->n;) {
		if (read_one(&w->t[i], now_ns, emit, ctx))
			i++;
		else
			w->t[i] = w->t[--w->n];		/* the thread is gone */
	}
}

void schedwatch_forget(struct schedwatch *w, uint32_t pid)
{
	uint32_t i;

	for (i = 0; i < w->n;) {
		if (w->t[i].pid == pid)
			w->t[i] = w->t[--w->n];
		else
			i++;
	}
}

uint32_t schedwatch_count(const struct schedwatch *w)
{
	return w->n;
}
