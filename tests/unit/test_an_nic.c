// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Tier D RDMA evidence in the analyzer (an_nic.c): a NIC error on a traced
 * rank gives an HW verdict naming NIC and port, repeats and news (port
 * active) do not, H3 verdicts cite it, and the AW_RDMA wire record
 * round-trips and rejects what is malformed.
 */
#include "test_an_helpers.h"
#include "an_wire.h"

#define TP 0x0123456789abcdefull

static struct an_nic_event nic(uint8_t source, uint8_t event, uint32_t port,
			       uint32_t qp, uint8_t new_state)
{
	struct an_nic_event e;

	memset(&e, 0, sizeof(e));
	snprintf(e.dev, sizeof(e.dev), "mlx5_0");
	e.source = source;
	e.event = event;
	e.port = port;
	e.qp_num = qp;
	e.old_state = CCLD_RDMA_NONE;
	e.new_state = new_state;
	return e;
}

static void test_names(void)
{
	struct an_nic_event e = nic(CCLD_RDMA_DEV_EVENT, 10, 1, 0, CCLD_RDMA_NONE);

	CHECK_STR(an_nic_event_name(&e), "port error");
	CHECK(an_nic_event_is_error(&e));
	e.event = 9;
	CHECK_STR(an_nic_event_name(&e), "port active");
	CHECK(!an_nic_event_is_error(&e));
	e.event = 8;
	CHECK(an_nic_event_is_error(&e));	/* device fatal */
	e = nic(CCLD_RDMA_QP_EVENT, 4, 1, 7, CCLD_RDMA_NONE);
	CHECK(!an_nic_event_is_error(&e));	/* communication established */
	e.event = 1;
	CHECK_STR(an_nic_event_name(&e), "QP fatal error");
	CHECK(an_nic_event_is_error(&e));
	e = nic(CCLD_RDMA_MODIFY_QP, CCLD_RDMA_NONE, 1, 7, 6);
	CHECK_STR(an_nic_event_name(&e), "QP moved to error");
	CHECK(an_nic_event_is_error(&e));
	e.event = 200;
	e.source = CCLD_RDMA_CQ_EVENT;
	CHECK_STR(an_nic_event_name(&e), "unknown event");
	CHECK(!an_nic_event_is_error(&e));
}

static void test_verdict(void)
{
	struct an_nic_event e = nic(CCLD_RDMA_DEV_EVENT, 10, 1, 0, CCLD_RDMA_NONE);
	struct json_buf b;
	struct sim s;

	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 4, NULL);
	an_nic_error(s.an, s.host_id[0], 102, &e, s.now[0]);
	CHECK_INT(s.nv, 1);
	CHECK_INT(s.v[0].cls, AN_HW);
	CHECK_STR(sim_culprits(&s.v[0]), "2");
	CHECK(strstr(s.v[0].text, "the NIC mlx5_0 port 1 of rank 2 (pid 102) "
		     "reported port error") != NULL);
	CHECK_STR(sim_val_s(&s.v[0], "nic"), "mlx5_0");
	CHECK_INT(sim_val_i(&s.v[0], "port"), 1);
	json_init(&b);
	CHECK_INT(an_verdict_text(s.an, &s.v[0], &b), 0);
	CHECK(!strncmp(json_str(&b), "NIC HW", 6));
	json_free(&b);
	/* the same port error again (one per QP on the port): no new verdict */
	an_nic_error(s.an, s.host_id[0], 102, &e, s.now[0] + 1);
	CHECK_INT(s.nv, 1);
	/* port active is news, not a verdict; the next port error is one */
	e.event = 9;
	an_nic_error(s.an, s.host_id[0], 102, &e, s.now[0] + 2);
	CHECK_INT(s.nv, 1);
	e.event = 10;
	an_nic_error(s.an, s.host_id[0], 102, &e, s.now[0] + 3);
	CHECK_INT(s.nv, 2);
	/* a QP moved to error by rank 3's process */
	e = nic(CCLD_RDMA_MODIFY_QP, CCLD_RDMA_NONE, 1, 0x1a2, 6);
	an_nic_error(s.an, s.host_id[0], 103, &e, s.now[0] + 4);
	CHECK_INT(s.nv, 3);
	CHECK(strstr(s.v[2].text, "rank 3 (pid 103) reported QP moved to error, "
		     "QP 0x1a2") != NULL);
	CHECK_INT(sim_val_i(&s.v[2], "qp"), 0x1a2);
	/* not a traced process; not an error; no device: nothing */
	an_nic_error(s.an, s.host_id[0], 999, &e, s.now[0] + 5);
	e = nic(CCLD_RDMA_QP_EVENT, 4, 1, 7, CCLD_RDMA_NONE);
	an_nic_error(s.an, s.host_id[0], 101, &e, s.now[0] + 6);
	e = nic(CCLD_RDMA_CQ_EVENT, 0, 0, 0, CCLD_RDMA_NONE);
	e.dev[0] = '\0';
	an_nic_error(s.an, s.host_id[0], 101, &e, s.now[0] + 7);
	CHECK_INT(s.nv, 3);
	sim_fini(&s);
}

/* rank 2's GPU never finished seq 4 (test_an_h3's tier B case) after its
 * NIC reported a QP fatal error: the H3 verdict names the NIC */
static void test_h3_cites(void)
{
	struct an_nic_event e = nic(CCLD_RDMA_QP_EVENT, 1, 1, 0x33, CCLD_RDMA_NONE);
	const struct an_verdict *v;
	struct sim s;

	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 4, NULL);
	sim_gpu_hang(&s, TP, 2);
	an_nic_error(s.an, s.host_id[0], 102, &e, s.now[0]);
	sim_tick(&s, 5.5);
	v = sim_last_cls(&s, AN_H3);
	CHECK(v != NULL);
	if (v) {
		CHECK_STR(sim_culprits(v), "2");
		CHECK(strstr(v->text, "the NIC mlx5_0 port 1 of rank 2 reported "
			     "QP fatal error, QP 0x33") != NULL);
		CHECK_STR(sim_val_s(v, "nic"), "mlx5_0");
	}
	sim_fini(&s);
}

static void test_wire(void)
{
	struct an_wire w, d;
	uint8_t buf[AN_WIRE_MAX];
	char err[128];
	struct sim s;
	int n;

	memset(&w, 0, sizeof(w));
	w.type = AW_RDMA;
	w.t_ns = 123456789;
	w.k.pid = 101;
	w.nic = nic(CCLD_RDMA_DEV_EVENT, 10, 2, 0, CCLD_RDMA_NONE);
	n = an_wire_encode(&w, buf, sizeof(buf));
	CHECK(n > 0);
	CHECK_INT(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)), 0);
	CHECK_INT(d.type, AW_RDMA);
	CHECK_INT(d.k.pid, 101);
	CHECK_STR(d.nic.dev, "mlx5_0");
	CHECK_INT(d.nic.port, 2);
	CHECK_INT(d.nic.event, 10);
	CHECK_INT(d.nic.source, CCLD_RDMA_DEV_EVENT);
	CHECK_INT(d.nic.new_state, CCLD_RDMA_NONE);
	/* truncated by one byte, one byte left over */
	CHECK(an_wire_decode(buf, (size_t)n - 1, &d, err, sizeof(err)) < 0);
	buf[n] = 0;
	CHECK(an_wire_decode(buf, (size_t)n + 1, &d, err, sizeof(err)) < 0);
	/* source out of range is refused both ways */
	w.nic.source = 5;
	CHECK(an_wire_encode(&w, buf, sizeof(buf)) < 0);
	w.nic.source = CCLD_RDMA_DEV_EVENT;
	n = an_wire_encode(&w, buf, sizeof(buf));
	buf[n - 8] = 0;		/* source: then event, states, pid (4) */
	CHECK(an_wire_decode(buf, (size_t)n, &d, err, sizeof(err)) < 0);
	/* no device name */
	w.nic.dev[0] = '\0';
	CHECK(an_wire_encode(&w, buf, sizeof(buf)) < 0);
	/* applied: the verdict */
	sim_init(&s, 5, 300);
	sim_comm(&s, TP, 4, NULL);
	w.nic = nic(CCLD_RDMA_DEV_EVENT, 8, 0, 0, CCLD_RDMA_NONE);
	an_wire_apply(s.an, s.host_id[0], &w);
	CHECK_INT(s.nv, 1);
	CHECK(strstr(s.v[0].text, "the NIC mlx5_0 of rank 1 (pid 101) reported "
		     "device fatal error") != NULL);
	sim_fini(&s);
}

int main(void)
{
	test_names();
	test_verdict();
	test_h3_cites();
	test_wire();
	return check_finish("test_an_nic");
}
