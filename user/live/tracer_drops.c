// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Records the rings could not take: the totals (a LOST record when they
 * move) and whose they were (a PROC_LOST record per process whose count
 * grew, from the pid_drops map), forgotten when the process exits.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "nccl_api.skel.h"
#include "tracer_int.h"

/*
 * failed reservations of both rings and step records shed so far, over all
 * CPUs (the drops map's CCLD_DROP_*); -1: unreadable
 */
static int drop_totals(struct tracer *t, uint64_t sums[3])
{
	int ncpu = libbpf_num_possible_cpus(), fd, c;
	uint64_t *vals;
	__u32 k;

	sums[0] = sums[1] = sums[2] = 0;
	if (ncpu <= 0)
		return -1;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -1;
	fd = bpf_map__fd(t->skel->maps.drops);
	for (k = 0; k < 3; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (c = 0; c < ncpu; c++)
			sums[k] += vals[c];
	}
	free(vals);
	return 0;
}

/* a CCLD_EV_PROC_LOST record into the batch, in time order with the rest */
static int batch_lost(struct tracer *t, __u32 pid, const struct ccld_pid_drops *d)
{
	struct ccld_event ev;

	tr_synth(&ev, CCLD_EV_PROC_LOST, (pid_t)pid, d->last_ns);
	ev.u.lost.main_drops = d->drops[0];
	ev.u.lost.rare_drops = d->drops[1];
	return tr_on_ring_event(t, &ev, sizeof(ev));
}

/*
 * Whose records were lost (pid_drops), read when the totals moved: one
 * CCLD_EV_PROC_LOST per process whose count grew, into the batch before
 * it is sorted, so that it stands at the time of the process's latest
 * loss among the records around it.  BPF counts a loss in the totals
 * before the process's count: a read between the two sees the total only,
 * so the last read (FINAL) looks whatever the totals say.
 */
void tr_read_pid_drops(struct tracer *t, bool final)
{
	int fd = bpf_map__fd(t->skel->maps.pid_drops);
	struct ccld_pid_drops d;
	uint64_t sums[3];
	__u32 key, next;
	bool first = true;

	if (drop_totals(t, sums) || (!final && sums[0] + sums[1] == t->drops_attributed))
		return;
	t->drops_attributed = sums[0] + sums[1];
	while (!bpf_map_get_next_key(fd, first ? NULL : &key, &next)) {
		struct tracked *p;

		first = false;
		key = next;
		if (!key || bpf_map_lookup_elem(fd, &key, &d))
			continue;
		p = tr_find_tracked(t, (pid_t)key);
		if (p && p->drops[0] == d.drops[0] && p->drops[1] == d.drops[1])
			continue;
		if (batch_lost(t, key, &d)) {
			fprintf(stderr, "ccld-trace: out of memory noting lost records\n");
			return;
		}
	}
}

void tr_read_drops(struct tracer *t, uint64_t ts)
{
	uint64_t sums[3];
	struct ccld_event ev;

	if (drop_totals(t, sums) ||
	    (sums[0] == t->main_drops && sums[1] == t->rare_drops && sums[2] == t->steps_shed))
		return;
	t->main_drops = sums[0];
	t->rare_drops = sums[1];
	t->steps_shed = sums[2];
	tr_synth(&ev, CCLD_EV_LOST, 0, ts);
	ev.u.lost.main_drops = sums[0];
	ev.u.lost.rare_drops = sums[1];
	ev.u.lost.steps_shed = sums[2];
	tr_emit(t, &ev);
}

/*
 * An exited process's loss counter: its records are all in.  Losses it
 * had since the latest read are noted first (the totals already count
 * them), then its entry goes.
 */
void tr_forget_drops(struct tracer *t, pid_t pid)
{
	int fd = bpf_map__fd(t->skel->maps.pid_drops);
	struct ccld_pid_drops d;
	__u32 key = (__u32)pid;
	const struct tracked *p = tr_find_tracked(t, pid);

	if (!bpf_map_lookup_elem(fd, &key, &d) &&
	    (!p || p->drops[0] != d.drops[0] || p->drops[1] != d.drops[1]) &&
	    batch_lost(t, key, &d))
		fprintf(stderr, "ccld-trace: out of memory noting lost records\n");
	if (bpf_map_delete_elem(fd, &key) &&
	    errno != ENOENT)
		fprintf(stderr, "ccld-trace: process %d: cannot forget its lost records: %s\n",
			pid, strerror(errno));
}
