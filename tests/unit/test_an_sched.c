// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The proxy threads' scheduler accounts (analyzer/an_sched.c): readings
 * kept per thread, the share of a window a thread waited for a CPU, and
 * the wire record that carries them (AW_SCHED, version 12).
 */
#include <math.h>
#include <string.h>
#include "test_an_helpers.h"
#include "an_wire.h"
#include "an_int.h"

#define MS 1000000ull

/* thread TID of P waited WAIT of the time, read every 250 ms from T0 */
static void readings(struct an_proc *p, uint32_t tid, double wait, uint64_t t0, int n)
{
	int k;

	for (k = 0; k < n; k++) {
		struct an_sched s = { .tid = tid, .cpu_ns = 0,
				      .run_delay_ns = (uint64_t)(wait * k * 250.0 * MS) };

		an_sched_note(p, &s, t0 + (uint64_t)k * 250 * MS);
	}
}

static void test_run_wait(void)
{
	struct an_proc p;
	uint64_t t0 = 1000 * MS;

	memset(&p, 0, sizeof(p));
	CHECK(isnan(an_proc_run_wait(&p, t0, t0 + 500 * MS)));
	readings(&p, 7, 0.1, t0, 5);
	readings(&p, 9, 0.45, t0, 5);
	/* the busiest of its proxy threads */
	CHECK(fabs(an_proc_run_wait(&p, t0, t0 + 1000 * MS) - 0.45) < 1e-9);
	/* a window no two readings span: unknown */
	CHECK(isnan(an_proc_run_wait(&p, t0 + 5000 * MS, t0 + 6000 * MS)));
	CHECK(isnan(an_proc_run_wait(&p, t0, t0)));
	/* an older reading, or a count that went back (another thread), is left out */
	{
		struct an_sched s = { .tid = 9, .run_delay_ns = 1 };

		an_sched_note(&p, &s, t0 + 2000 * MS);
		an_sched_note(&p, &s, t0 + 100 * MS);
		CHECK(fabs(an_proc_run_wait(&p, t0, t0 + 1000 * MS) - 0.45) < 1e-9);
	}
	/* more threads than kept: one heard of least recently (7) goes */
	readings(&p, 11, 0.2, t0 + 3000 * MS, 3);
	readings(&p, 12, 0.2, t0 + 3000 * MS, 3);
	readings(&p, 13, 0.3, t0 + 3000 * MS, 3);
	CHECK(fabs(an_proc_run_wait(&p, t0 + 3000 * MS, t0 + 3500 * MS) - 0.3) < 1e-9);
	{
		int k, kept = 0, has7 = 0;

		for (k = 0; k < AN_SCHED_THREADS; k++) {
			kept += p.sched[k].n > 0;
			has7 += p.sched[k].n > 0 && p.sched[k].tid == 7;
		}
		CHECK_INT(kept, AN_SCHED_THREADS);
		CHECK_INT(has7, 0);
	}
}

/* the record round-trips, reaches the process, and needs a process */
static void test_wire(void)
{
	struct an_wire w, d;
	uint8_t buf[AN_WIRE_MAX];
	char err[128];
	struct sim s;
	int n;

	sim_init(&s, 30, 300);
	memset(&w, 0, sizeof(w));
	w.type = AW_SCHED;
	w.t_ns = s.now[0];
	w.k.pid = 4242;
	w.sched = (struct an_sched){ .tid = 4250, .cpu_ns = 77, .run_delay_ns = 99 };
	n = an_wire_encode(&w, buf, sizeof(buf));
	CHECK(n > 0);
	CHECK_INT(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)), 0);
	CHECK(d.type == AW_SCHED && d.k.pid == 4242 && d.sched.tid == 4250 &&
	      d.sched.cpu_ns == 77 && d.sched.run_delay_ns == 99);
	an_wire_apply(s.an, s.host_id[0], &d);
	CHECK_INT(s.an->nprocs, 1);
	CHECK(s.an->procs[0].pid == 4242 && s.an->procs[0].sched[0].n == 1);
	d.k.pid = 0;
	an_wire_apply(s.an, s.host_id[0], &d);
	CHECK_INT(s.an->nprocs, 1);
	CHECK(an_wire_decode(buf, (size_t)n - 1, &d, err, sizeof(err)) < 0);
	buf[0] = 11;	/* an analyzer of version 11 knew no such record */
	CHECK(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)) < 0);
	sim_fini(&s);
}

int main(void)
{
	test_run_wait();
	test_wire();
	return check_finish("test_an_sched");
}
