// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Which traced process has connections at which local address and port,
 * followed from one socket scan to the next (endpoints.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "endpoints.h"

struct ep {
	uint32_t pid;
	uint32_t netns;
	uint16_t port;
	char addr[46];
};

struct endpoints {
	struct ep *set;		/* the last scan's, sorted, distinct */
	size_t n;
};

static int ep_cmp(const void *a, const void *b)
{
	const struct ep *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->netns != y->netns)
		return x->netns < y->netns ? -1 : 1;
	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	return strcmp(x->addr, y->addr);
}

struct endpoints *endpoints_new(void)
{
	return calloc(1, sizeof(struct endpoints));
}

void endpoints_free(struct endpoints *e)
{
	if (!e)
		return;
	free(e->set);
	free(e);
}

/*
 * ccld.h's keys hold IPv4 in the first 4 bytes (the rest 0), IPv6 in all
 * 16; an IPv4-mapped IPv6 address (a dual-stack socket) reads as IPv4,
 * as NCCL prints it.
 */
void endpoint_addr_text(const __u8 addr[16], char *out)
{
	static const __u8 zero[12], mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (!memcmp(addr + 4, zero, 12))
		inet_ntop(AF_INET, addr, out, 46);
	else if (!memcmp(addr, mapped, 12))
		inet_ntop(AF_INET, addr + 12, out, 46);
	else
		inet_ntop(AF_INET6, addr, out, 46);
}

static void emit_one(const struct ep *p, bool gone, uint64_t now, endpoint_emit_fn emit,
		     void *ctx)
{
	struct ccld_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = CCLD_EV_ENDPOINT;
	ev.version = CCLD_ABI_VERSION;
	ev.pid = ev.tid = p->pid;
	ev.ts_ns = now;
	ev.id.rank = ev.id.nranks = -1;
	memcpy(ev.u.endpoint.addr, p->addr, sizeof(ev.u.endpoint.addr));
	ev.u.endpoint.port = p->port;
	ev.u.endpoint.gone = gone;
	ev.u.endpoint.netns = p->netns;
	emit(ctx, &ev);
}

int endpoints_update(struct endpoints *e, const struct ccld_tcp_key *keys, const uint32_t *pids,
		     size_t n, uint64_t now, endpoint_emit_fn emit, void *ctx)
{
	struct ep *set = calloc(n ? n : 1, sizeof(*set));
	size_t m = 0, i, j;

	if (!set)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		set[m] = (struct ep){ .pid = pids[i], .netns = keys[i].netns, .port = keys[i].lport };
		endpoint_addr_text(keys[i].laddr, set[m].addr);
		/* a socket listening on every address names none */
		if (strcmp(set[m].addr, "0.0.0.0") && strcmp(set[m].addr, "::"))
			m++;
	}
	if (m > 1)
		qsort(set, m, sizeof(*set), ep_cmp);
	/* distinct: a listening socket and those it accepted share one endpoint */
	for (i = j = 0; i < m; i++)
		if (!j || ep_cmp(&set[j - 1], &set[i]))
			set[j++] = set[i];
	m = j;
	/* a merge of the two sorted sets: what is only in one of them changed */
	for (i = j = 0; i < e->n || j < m;) {
		int c = i == e->n ? 1 : j == m ? -1 : ep_cmp(&e->set[i], &set[j]);

		if (c < 0)
			emit_one(&e->set[i++], true, now, emit, ctx);
		else if (c > 0)
			emit_one(&set[j++], false, now, emit, ctx);
		else
			i++, j++;
	}
	free(e->set);
	e->set = set;
	e->n = m;
	return 0;
}
