// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Lost records (a full ring buffer): no hang verdict rests on a rank whose
 * process lost records after its latest call seen, until a record or a
 * look at its memory made after the loss fills the gap (then it is judged
 * as usual) or hang_s passes (then the verdict says its evidence is
 * incomplete); slow rounds near a loss are not judged.
 */
#include "test_an_helpers.h"
#include "an_wire.h"
#include "an_int.h"

#define TP 0x1111222233334444ull
#define MS 1000000ull

static void warmup(struct sim *s, uint64_t comm, int rounds)
{
	int i;

	for (i = 0; i < rounds; i++) {
		sim_round(s, comm, CCLD_FN_ALLREDUCE, 1 << 20, 7);
		sim_step(s, 10000000);
	}
}

/* process of global rank G lost TOTAL records so far, the latest now */
static void lost(struct sim *s, int g, uint64_t total)
{
	an_records_lost(s->an, s->host_id[sim_host(s, g)], 100 + (uint32_t)g, total,
			s->now[sim_host(s, g)]);
}

/* a look at rank R's memory: NCOLL collectives launched */
static void look(struct sim *s, uint64_t hash, int r, int64_t ncoll)
{
	struct sim_comm *c = sim_find(s, hash);
	struct an_launch l = { .ncoll = ncoll };
	struct an_key k = sim_key(s, c, r);

	an_launched(s->an, &k, &l, sim_now(s, c, r));
}

/* ranks 0-2 enter seq 10; rank 3 did too, but its entry record was lost */
static void test_entry_lost(void)
{
	struct sim s;
	int r;

	sim_init(&s, 10, 300);
	sim_comm(&s, TP, 4, NULL);
	warmup(&s, TP, 10);
	for (r = 0; r < 3; r++)
		sim_call(&s, TP, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	{
		/* its entry lost, its return seen: no proof it entered */
		struct sim_comm *c = sim_find(&s, TP);
		struct an_op op = sim_op(&s, c, 3, CCLD_FN_ALLREDUCE, 1 << 20, 7);

		c->next[3]++;
		sim_step(&s, 1000);
		lost(&s, 3, 1);
		an_op_return(s.an, &op, 0, s.now[0]);
	}
	/* without the loss noted this is an H1 naming rank 3 (test_an_h1) */
	sim_tick(&s, 12);
	CHECK_INT(s.nv, 0);
	CHECK_INT(s.nsuspect_on, 1);	/* it is looked at all the same */
	/* the look at its memory: it launched seq 10; no H1 ever */
	look(&s, TP, 3, 11);
	sim_tick(&s, 30);
	for (r = 0; r < s.nv; r++)
		CHECK(s.v[r].cls != AN_H1);
	sim_fini(&s);
}

/* rank 3 really is late; its process lost records after its last call */
static void test_judged_once_complete(void)
{
	struct sim s;
	const struct an_verdict *v;
	int r;

	sim_init(&s, 10, 300);
	sim_comm(&s, TP, 4, NULL);
	for (r = 0; r < 4; r++)
		look(&s, TP, r, 0);	/* at attach */
	warmup(&s, TP, 10);
	sim_step(&s, 1000);
	lost(&s, 3, 7);
	for (r = 0; r < 3; r++)
		sim_call(&s, TP, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_tick(&s, 12);
	CHECK_INT(s.nv, 0);
	/* its memory says it launched up to seq 9: complete, H1 at once */
	look(&s, TP, 3, 10);
	sim_tick(&s, 0.25);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H1);
	CHECK_STR(sim_culprits(v), "3");
	CHECK(sim_val_s(v, "evidence") == NULL);
	CHECK(strstr(v->text, "evidence incomplete") == NULL);
	sim_fini(&s);
}

/* nothing fills the gap (no look at memory): at hang_s, said incomplete */
static void test_incomplete_at_hang_s(void)
{
	struct sim s;
	const struct an_verdict *v;
	int r;

	sim_init(&s, 10, 40);
	sim_comm(&s, TP, 4, NULL);
	warmup(&s, TP, 10);
	sim_step(&s, 1000);
	lost(&s, 3, 5);
	lost(&s, 3, 5);		/* a repeat of the same count: nothing new */
	for (r = 0; r < 3; r++)
		sim_call(&s, TP, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_tick(&s, 39.5);
	CHECK_INT(s.nv, 0);
	sim_tick(&s, 1);
	CHECK_INT(s.nv, 1);
	v = &s.v[0];
	CHECK_INT(v->cls, AN_H1);
	CHECK_STR(sim_culprits(v), "3");
	CHECK(sim_val_s(v, "evidence") && !strcmp(sim_val_s(v, "evidence"), "incomplete"));
	CHECK_INT(sim_val_i(v, "records_lost"), 5);
	CHECK_INT(sim_val_i(v, "lost_ranks"), 1);
	CHECK(strstr(v->text, "evidence incomplete") != NULL);
	sim_fini(&s);
}

/* records lost before the rank's latest call: judged as usual */
static void test_loss_before_last_call(void)
{
	struct sim s;
	int r;

	sim_init(&s, 10, 300);
	sim_comm(&s, TP, 4, NULL);
	warmup(&s, TP, 5);
	lost(&s, 3, 100);
	sim_step(&s, 1000);
	warmup(&s, TP, 5);
	for (r = 0; r < 3; r++)
		sim_call(&s, TP, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
	sim_tick(&s, 10.5);
	CHECK_INT(s.nv, 1);
	CHECK_INT(s.v[0].cls, AN_H1);
	CHECK_STR(sim_culprits(&s.v[0]), "3");
	CHECK(sim_val_s(&s.v[0], "evidence") == NULL);
	sim_fini(&s);
}

/* the wire record round-trips and feeds an_records_lost */
static void test_wire(void)
{
	struct an_wire w, d;
	uint8_t buf[AN_WIRE_MAX];
	char err[128];
	int n;

	memset(&w, 0, sizeof(w));
	w.type = AW_LOST;
	w.t_ns = 123456789;
	w.k.pid = 4242;
	w.lost = 99;
	n = an_wire_encode(&w, buf, sizeof(buf));
	CHECK(n > 0);
	CHECK_INT(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)), 0);
	CHECK_INT(d.type, AW_LOST);
	CHECK_INT(d.k.pid, 4242);
	CHECK(d.lost == 99 && d.t_ns == 123456789);
	CHECK(an_wire_decode(buf, (size_t)n - 1, &d, err, sizeof(err)) < 0);
	buf[0] = 4;	/* an analyzer of version 4 knew no such record */
	CHECK(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)) < 0);
}

/*
 * AW_LOST of no process (pid 0): the host's step records shed, cumulative
 * per host (a repeat, or an older count, adds nothing), summed over hosts;
 * no process's records are lost by it
 */
static void test_wire_steps_shed(void)
{
	struct an_wire w, d;
	uint8_t buf[AN_WIRE_MAX];
	char err[128];
	struct sim s;
	int n;

	sim_init_hosts(&s, 30, 300, 2, 4);
	memset(&w, 0, sizeof(w));
	w.type = AW_LOST;
	w.t_ns = s.now[0];
	w.lost = 700;
	n = an_wire_encode(&w, buf, sizeof(buf));
	CHECK(n > 0);
	CHECK_INT(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)), 0);
	CHECK_INT(d.k.pid, 0);
	an_wire_apply(s.an, s.host_id[0], &d);
	an_wire_apply(s.an, s.host_id[0], &d);
	d.lost = 300;
	an_wire_apply(s.an, s.host_id[0], &d);
	CHECK(s.an->steps_shed == 700);
	d.lost = 50;
	an_wire_apply(s.an, s.host_id[1], &d);
	d.lost = 900;
	an_wire_apply(s.an, s.host_id[0], &d);
	CHECK(s.an->steps_shed == 950);
	CHECK(s.an->hosts[s.host_id[0]].steps_shed == 900);
	CHECK_INT(s.an->nprocs, 0);
	an_wire_apply(s.an, 99, &d);	/* no such host */
	CHECK(s.an->steps_shed == 950);
	sim_fini(&s);
}

/*
 * Slow: rank 2's completions of three rounds in four are lost, so its next
 * completion (up to the fourth) ends them all: three rounds in a row look
 * long on rank 2.  NOTE: whether the loss is known.
 */
static int lost_completions(bool note)
{
	struct sim s;
	struct sim_comm *c;
	int i, r, nslow = 0;

	sim_init(&s, 30, 300);
	sim_comm(&s, TP, 4, NULL);
	c = sim_find(&s, TP);
	for (i = 0; i < 120 + 16; i++) {
		struct an_op ops[4];
		bool drop = i >= 120 && (i - 120) % 4 != 3;

		sim_step(&s, MS);
		for (r = 0; r < 4; r++) {
			ops[r] = sim_call(&s, TP, r, CCLD_FN_ALLREDUCE, 1 << 20, 7);
			ops[r].t_ns = s.now[0];
		}
		sim_step(&s, 10 * MS + (uint64_t)(i % 3) * 100000);
		for (r = 0; r < 4; r++) {
			if (r == 2 && drop) {
				if (note)
					lost(&s, 2, (uint64_t)i);
				continue;
			}
			if (r == 2 && i >= 120)
				an_complete_upto(s.an, &ops[r].k, ops[r].seq, s.now[0]);
			else
				an_op_complete(s.an, &ops[r], s.now[0]);
		}
		if (!(i % 25))
			an_clock(s.an, s.host_id[0], s.now[0]);
	}
	(void)c;
	sim_tick(&s, 3);
	for (i = 0; i < s.nv; i++)
		nslow += s.v[i].cls >= AN_S1 && s.v[i].cls <= AN_S3;
	sim_fini(&s);
	return nslow;
}

static void test_slow_lost_completions(void)
{
	/* the test's premise: unnoted, the lost completions look slow */
	CHECK(lost_completions(false) > 0);
	CHECK_INT(lost_completions(true), 0);
}

int main(void)
{
	test_entry_lost();
	test_judged_once_complete();
	test_incomplete_at_hang_s();
	test_loss_before_last_call();
	test_wire();
	test_wire_steps_shed();
	test_slow_lost_completions();
	return check_finish("test_an_lost");
}
