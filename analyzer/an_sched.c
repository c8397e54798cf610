// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The scheduler's account of the proxy threads of hooked processes: how
 * long each waited, runnable, for a CPU (schedstat's run_delay, read every
 * tick while step hooks are on).  On a busy host a proxy thread that a
 * hog keeps off the CPUs makes slow send steps that look like a slow link
 * (test_hang_nofalse barrier under load: a 2-rank comm's rank 0 at 0.30 ms
 * a step against 0.15, a false S2); its run-queue wait tells them apart.
 */
#include <math.h>
#include "an_int.h"

/* readings this far outside a window still bound it (a tick is 250 ms) */
#define SCHED_SLACK_NS		300000000ull
/* a window shorter than this says nothing */
#define SCHED_MIN_SPAN_NS	100000000ull

void an_sched_note(struct an_proc *p, const struct an_sched *s, uint64_t t_ns)
{
	struct an_sched_thread *th = NULL, *oldest = &p->sched[0];
	uint32_t i;

	for (i = 0; i < AN_SCHED_THREADS; i++) {
		struct an_sched_thread *x = &p->sched[i];

		if (x->n && x->tid == s->tid) {
			th = x;
			break;
		}
		if (!x->n) {
			if (!th)
				th = x;
		} else if (oldest->n && x->h[(x->n - 1) % AN_SCHED_HIST].t <
			   oldest->h[(oldest->n - 1) % AN_SCHED_HIST].t) {
			oldest = x;
		}
	}
	if (!th || (th->n && th->tid != s->tid)) {
		th = oldest;		/* full: the thread heard of least recently goes */
		th->n = 0;
	}
	if (th->n && (t_ns <= th->h[(th->n - 1) % AN_SCHED_HIST].t ||
		      s->run_delay_ns < th->h[(th->n - 1) % AN_SCHED_HIST].delay))
		return;		/* out of order, or not this thread's count any more */
	th->tid = s->tid;
	th->h[th->n % AN_SCHED_HIST].t = t_ns;
	th->h[th->n % AN_SCHED_HIST].delay = s->run_delay_ns;
	th->n++;
}

double an_proc_run_wait(const struct an_proc *p, uint64_t t0, uint64_t t1)
{
	double best = NAN;
	uint32_t i, k;

	if (!p || t1 <= t0)
		return NAN;
	for (i = 0; i < AN_SCHED_THREADS; i++) {
		const struct an_sched_thread *th = &p->sched[i];
		uint32_t n = th->n < AN_SCHED_HIST ? th->n : AN_SCHED_HIST;
		uint64_t ta = 0, tb = 0, da = 0, db = 0;
		bool have = false;

		/* the first and the last reading within the window and its slack */
		for (k = th->n - n; k < th->n; k++) {
			uint64_t t = th->h[k % AN_SCHED_HIST].t;

			if (t + SCHED_SLACK_NS < t0 || t > t1 + SCHED_SLACK_NS)
				continue;
			if (!have) {
				ta = t;
				da = th->h[k % AN_SCHED_HIST].delay;
				have = true;
			}
			tb = t;
			db = th->h[k % AN_SCHED_HIST].delay;
		}
		if (!have || tb - ta < SCHED_MIN_SPAN_NS)
			continue;
		if (isnan(best) || (double)(db - da) / (double)(tb - ta) > best)
			best = (double)(db - da) / (double)(tb - ta);
	}
	return best;
}
