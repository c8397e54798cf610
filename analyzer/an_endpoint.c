// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Which process is at which TCP address and port (an_endpoint): NCCL names
 * a peer by the address of the peer's end of their connection ("... from
 * peer 10.0.0.2<41000>", "... closed by remote peer 10.0.0.2<41000>"), and
 * the agents report the local ends of their processes' sockets, so a
 * warning's address names a process on any host of the fleet.  An end
 * whose process no longer has it keeps its owner (a peer that exited is
 * what such warnings are about) until another process takes it; two
 * processes that hold one address at once (two networks with the same
 * private addresses) make it ambiguous, and it names nobody.  A loopback
 * address is its host's own: looked up on the warning's host only.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "an_int.h"

struct an_endpoint {
	uint32_t host, pid;
	bool gone;		/* the process no longer has a socket there */
	bool ambiguous;		/* two live owners seen */
};

/*
 * ADDR (numeric IPv4 or IPv6 text) and PORT as a key, that of HOST's own
 * where ADDR is a loopback address; false: not an address.
 */
static bool ep_key(const char *addr, uint16_t port, uint32_t host, struct hkey *k)
{
	static const uint8_t v6_loop[16] = { [15] = 1 };
	uint8_t b[16] = { [10] = 0xff, [11] = 0xff };	/* IPv4 as IPv4-mapped IPv6 */
	uint64_t a0, a1, local = 0;

	if (inet_pton(AF_INET, addr, b + 12) != 1 && inet_pton(AF_INET6, addr, b) != 1)
		return false;
	if ((b[10] == 0xff && b[11] == 0xff && b[12] == 127) || !memcmp(b, v6_loop, 16))
		local = (uint64_t)host + 1;
	memcpy(&a0, b, 8);
	memcpy(&a1, b + 8, 8);
	*k = hkey3(a0, a1, local << 16 | port);
	return true;
}

void an_endpoint(struct an *an, uint32_t host, uint32_t pid, const char *addr, uint16_t port,
		 bool gone)
{
	struct an_endpoint *e;
	struct hkey k;

	an->stats.records++;
	if (host >= an->nhosts || !ep_key(addr, port, host, &k)) {
		an->stats.rejected++;
		return;
	}
	e = hmap_get(&an->endpoints, k);
	if (gone) {
		if (e && e->host == host && e->pid == pid)
			e->gone = true;
		return;
	}
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e || hmap_put(&an->endpoints, k, e)) {
			free(e);
			return;
		}
	} else if (!e->gone && (e->host != host || e->pid != pid)) {
		e->ambiguous = true;
		return;
	}
	*e = (struct an_endpoint){ .host = host, .pid = pid };
}

const struct an_proc *an_endpoint_proc(const struct an *an, uint32_t host, const char *addr,
					uint16_t port)
{
	const struct an_endpoint *e;
	struct hkey k;

	if (!ep_key(addr, port, host, &k) || !(e = hmap_get(&an->endpoints, k)) || e->ambiguous)
		return NULL;
	return an_proc_find(an, e->host, e->pid);
}

/*
 * The first "ADDR<PORT>" in MSG, as NCCL prints a socket address
 * (ncclSocketToString): ADDR into OUT[46], PORT into *PORT.  False where
 * there is none.
 */
bool an_endpoint_in_text(const char *msg, char *out, uint16_t *port)
{
	const char *p;
	struct hkey k;

	for (p = strchr(msg, '<'); p; p = strchr(p + 1, '<')) {
		unsigned long v;
		char *end;
		int v6;

		if (!isdigit((unsigned char)p[1]))
			continue;
		v = strtoul(p + 1, &end, 10);
		if (*end != '>' || v == 0 || v > 65535)
			continue;
		/* an IPv4 address (digits, dots), else IPv6 (hex digits, colons, dots) */
		for (v6 = 0; v6 < 2; v6++) {
			const char *s = p;

			while (s > msg && (isdigit((unsigned char)s[-1]) || s[-1] == '.' ||
					   (v6 && (isxdigit((unsigned char)s[-1]) || s[-1] == ':'))))
				s--;
			if (s == p || p - s >= 46)
				continue;
			memcpy(out, s, (size_t)(p - s));
			out[p - s] = '\0';
			if (ep_key(out, (uint16_t)v, 0, &k)) {
				*port = (uint16_t)v;
				return true;
			}
		}
	}
	return false;
}

void an_endpoint_forget(struct an *an, uint32_t host, uint32_t pid)
{
	struct hkey k;
	size_t it;
	void *v;

	for (it = 0; hmap_next(&an->endpoints, &it, &k, &v);) {
		const struct an_endpoint *e = v;

		if (e->host == host && e->pid == pid) {
			hmap_del(&an->endpoints, k);
			free(v);
		}
	}
}

void an_endpoint_free(struct an *an)
{
	struct hkey k;
	size_t it;
	void *v;

	for (it = 0; hmap_next(&an->endpoints, &it, &k, &v);)
		free(v);
	hmap_free(&an->endpoints);
}
