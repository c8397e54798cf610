// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The traced processes' TCP endpoints as records (user/kernel/endpoints.c):
 * one per new (process, address, port, netns), however many sockets share
 * it; one when the last of them goes; the address as NCCL prints it.
 */
#include <string.h>
#include <arpa/inet.h>
#include "check.h"
#include "endpoints.h"

static struct ccld_event got[16];
static int ngot;

static void emit(void *ctx, const struct ccld_event *ev)
{
	if (ngot < 16)
		got[ngot++] = *ev;
}

static struct ccld_tcp_key key(const char *laddr, uint16_t lport, uint16_t rport)
{
	struct ccld_tcp_key k = { .netns = 7, .lport = lport, .rport = rport };

	if (inet_pton(AF_INET, laddr, k.laddr) != 1)
		inet_pton(AF_INET6, laddr, k.laddr);
	return k;
}

int main(void)
{
	struct endpoints *e = endpoints_new();
	struct ccld_tcp_key k[4];
	uint32_t pid[4] = { 100, 100, 100, 200 };
	char text[46];

	CHECK(e != NULL);
	/* a listening port's two accepted sockets, one outgoing, another process's */
	k[0] = key("10.0.0.2", 41000, 50001);
	k[1] = key("10.0.0.2", 41000, 50002);
	k[2] = key("10.0.0.2", 50003, 42000);
	k[3] = key("::ffff:10.0.0.3", 42000, 50003);
	CHECK_INT(endpoints_update(e, k, pid, 4, 1000, emit, NULL), 0);
	CHECK_INT(ngot, 3);
	CHECK_INT(got[0].type, CCLD_EV_ENDPOINT);
	CHECK_INT(got[0].pid, 100);
	CHECK_STR(got[0].u.endpoint.addr, "10.0.0.2");
	CHECK_INT(got[0].u.endpoint.port, 41000);
	CHECK_INT(got[0].u.endpoint.gone, 0);
	CHECK_INT(got[0].u.endpoint.netns, 7);
	CHECK(got[0].ts_ns == 1000);
	CHECK_INT(got[1].u.endpoint.port, 50003);
	CHECK_INT(got[2].pid, 200);
	CHECK_STR(got[2].u.endpoint.addr, "10.0.0.3");	/* IPv4-mapped, as NCCL prints it */
	/* the same again: nothing new */
	ngot = 0;
	CHECK_INT(endpoints_update(e, k, pid, 4, 2000, emit, NULL), 0);
	CHECK_INT(ngot, 0);
	/* one accepted socket closes (the port still has one); process 200 exits */
	ngot = 0;
	k[1] = k[2];
	CHECK_INT(endpoints_update(e, k, pid, 2, 3000, emit, NULL), 0);
	CHECK_INT(ngot, 1);
	CHECK_INT(got[0].pid, 200);
	CHECK_INT(got[0].u.endpoint.gone, 1);
	CHECK_INT(got[0].u.endpoint.port, 42000);
	/* nothing left */
	ngot = 0;
	CHECK_INT(endpoints_update(e, NULL, NULL, 0, 4000, emit, NULL), 0);
	CHECK_INT(ngot, 2);
	CHECK(got[0].u.endpoint.gone && got[1].u.endpoint.gone);
	endpoints_free(e);
	/* listening on every address: no endpoint */
	ngot = 0;
	e = endpoints_new();
	k[0] = key("0.0.0.0", 8080, 0);
	k[1] = key("::", 8081, 0);
	CHECK_INT(endpoints_update(e, k, pid, 2, 5000, emit, NULL), 0);
	CHECK_INT(ngot, 0);
	endpoints_free(e);
	/* IPv6 proper */
	k[0] = key("fd00::1:2", 1, 2);
	endpoint_addr_text(k[0].laddr, text);
	CHECK_STR(text, "fd00::1:2");
	return check_finish("test_endpoints");
}
