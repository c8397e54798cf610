// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Tier D TCP evidence in the analyzer (an_net.c): retransmits on a rank's
 * connections are cited in an H3 verdict naming it, with its peers as
 * ranks; untraced peers by address; the AW_TCP wire record round-trips and
 * rejects what is malformed; unknown processes are rejected.
 */
#include "test_an_helpers.h"
#include "an_wire.h"

#define TP 0x0123456789abcdefull

static void test_h3_cites(void)
{
	const struct an_verdict *v;
	struct sim s;
	int i;

	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 4, NULL);
	sim_gpu_hang(&s, TP, 2);
	/* rank 2 (pid 102) <-> rank 3 (103) and rank 1 (101), and an outsider */
	for (i = 0; i < 5; i++)
		an_tcp_event(s.an, s.host_id[0], 102, 103, AN_TCP_RETRANSMIT, 0, 0, "", s.now[0]);
	for (i = 0; i < 3; i++)
		an_tcp_event(s.an, s.host_id[0], 101, 102, AN_TCP_RETRANSMIT, 0, 0, "", s.now[0]);
	an_tcp_event(s.an, s.host_id[0], 102, 0, AN_TCP_RETRANSMIT, 0, 0, "10.0.0.9:4242",
		     s.now[0]);
	/* a connection of rank 0 alone: not the culprit's */
	an_tcp_event(s.an, s.host_id[0], 100, 0, AN_TCP_RETRANSMIT, 0, 0, "10.0.0.8:1", s.now[0]);
	/* an established connection of rank 2 reset by its peer */
	an_tcp_event(s.an, s.host_id[0], 102, 103, AN_TCP_RESET_RX, 0, 0, "", s.now[0]);
	an_tcp_event(s.an, s.host_id[0], 102, 103, AN_TCP_STATE, 1, 7, "", s.now[0]);
	/* not traced; bad kind: rejected */
	an_tcp_event(s.an, s.host_id[0], 999, 102, AN_TCP_RETRANSMIT, 0, 0, "", s.now[0]);
	an_tcp_event(s.an, s.host_id[0], 102, 103, (enum an_tcp_kind)9, 0, 0, "", s.now[0]);
	sim_tick(&s, 5.5);
	v = sim_last_cls(&s, AN_H3);
	CHECK(v != NULL);
	if (v) {
		CHECK_STR(sim_culprits(v), "2");
		CHECK(strstr(v->text, "TCP: 9 retransmits in the last 30 s on the culprit's"
			     " connections (r2->r3 5, r1->r2 3, r2->10.0.0.9:4242 1)") != NULL);
		CHECK(strstr(v->text, "TCP: 1 resets, 1 established connections closed") != NULL);
		CHECK_INT(sim_val_i(v, "tcp_retransmits"), 9);
		CHECK_INT(sim_val_i(v, "tcp_links"), 3);
		CHECK_INT(sim_val_i(v, "tcp_resets"), 1);
		CHECK_INT(sim_val_i(v, "tcp_closes"), 1);
	}
	sim_fini(&s);
}

static void test_window(void)
{
	const struct an_verdict *v;
	struct sim s;

	/* retransmits 40 s before the hang are not cited */
	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 4, NULL);
	an_tcp_event(s.an, s.host_id[0], 102, 103, AN_TCP_RETRANSMIT, 0, 0, "", s.now[0]);
	sim_tick(&s, 40);
	sim_gpu_hang(&s, TP, 2);
	sim_tick(&s, 5.5);
	v = sim_last_cls(&s, AN_H3);
	CHECK(v != NULL);
	if (v) {
		CHECK(strstr(v->text, "TCP") == NULL);
		CHECK_INT(sim_val_i(v, "tcp_retransmits"), -1);
	}
	sim_fini(&s);
}

static void test_wire(void)
{
	struct an_wire w, d;
	uint8_t buf[AN_WIRE_MAX];
	char err[128];
	int n;

	memset(&w, 0, sizeof(w));
	w.type = AW_TCP;
	w.t_ns = 123456789;
	w.k.pid = 101;
	w.peer_pid = 102;
	w.tcp_kind = AN_TCP_STATE;
	w.tcp_old = 1;
	w.tcp_new = 7;
	snprintf(w.label, sizeof(w.label), "10.233.0.3:41234");
	n = an_wire_encode(&w, buf, sizeof(buf));
	CHECK(n > 0);
	CHECK_INT(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)), 0);
	CHECK_INT(d.type, AW_TCP);
	CHECK_INT(d.k.pid, 101);
	CHECK_INT(d.peer_pid, 102);
	CHECK_INT(d.tcp_kind, AN_TCP_STATE);
	CHECK_INT(d.tcp_old, 1);
	CHECK_INT(d.tcp_new, 7);
	CHECK_STR(d.label, "10.233.0.3:41234");
	CHECK(an_wire_decode(buf, (size_t)n - 1, &d, err, sizeof(err)) < 0);
	w.tcp_kind = (enum an_tcp_kind)5;
	CHECK(an_wire_encode(&w, buf, sizeof(buf)) < 0);
}

int main(void)
{
	test_h3_cites();
	test_window();
	test_wire();
	return check_finish("test_an_tcp");
}
