// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the /proc/net/tcp{,6} line parser (user/kernel/procnet.c):
 * any bytes as a line, read as v4 (first byte even) or v6; what it accepts
 * prints back to a canonical line that parses to the same socket.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "procnet.h"

static void canon(const struct procnet_sock *s, bool v6, char *out, size_t n)
{
	size_t len = (size_t)snprintf(out, n, "0: ");
	int i, words = v6 ? 4 : 1;
	uint32_t w;

	for (i = 0; i < words; i++) {
		memcpy(&w, s->key.laddr + 4 * i, 4);
		len += (size_t)snprintf(out + len, n - len, "%08X", w);
	}
	len += (size_t)snprintf(out + len, n - len, ":%04X ", s->key.lport);
	for (i = 0; i < words; i++) {
		memcpy(&w, s->key.raddr + 4 * i, 4);
		len += (size_t)snprintf(out + len, n - len, "%08X", w);
	}
	snprintf(out + len, n - len, ":%04X %02X 0:0 0:0 0 0 0 %llu\n", s->key.rport, s->state,
		 (unsigned long long)s->inode);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct procnet_sock s, t;
	bool v6 = size && (data[0] & 1);
	char *line = malloc(size + 1), back[256];

	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	if (procnet_parse_line(line, v6, &s)) {
		if (s.state < 0 || s.state > 0xff)
			__builtin_trap();
		canon(&s, v6, back, sizeof(back));
		if (!procnet_parse_line(back, v6, &t) || memcmp(&s, &t, sizeof(s)))
			__builtin_trap();
	}
	free(line);
	return 0;
}
