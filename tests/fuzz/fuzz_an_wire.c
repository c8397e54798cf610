// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the fleet analyzer's input: records from Redis
 * (an_wire_decode), then, when one decodes, fed to an analyzer as a node's
 * (an_wire_apply) - the decoder's checks must keep the analyzer safe from
 * whatever a node (or anything that can write to Redis) sends.  Input:
 * records separated by their 2-byte little-endian length; every 64th input
 * starts a new analyzer so that state does not grow without bound.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "an_wire.h"

static struct an *an;
static unsigned runs;
static struct an_wire w;

static void verdict(void *ctx, const struct an_verdict *v)
{
	(void)ctx;
	(void)v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct an_sink sink = { .verdict = verdict };
	struct an_config c;
	char err[256];

	if (!an || ++runs % 64 == 0) {
		an_free(an);
		an_config_default(&c);
		c.stall_s = 1;
		/* comms of up to 2^20 ranks: the budget bounds the state (and RSS) */
		c.mem_max = 64UL << 20;
		an = an_new(&c, &sink);
		if (!an)
			return 0;
		an_host(an, "fuzz0");
		an_host(an, "fuzz1");
	}
	while (size >= 2) {
		size_t len = data[0] | (size_t)data[1] << 8;

		data += 2;
		size -= 2;
		if (len > size)
			len = size;
		if (!an_wire_decode(data, len, &w, err, sizeof(err))) {
			uint8_t buf[AN_WIRE_MAX];
			struct an_wire back;
			int n = an_wire_encode(&w, buf, sizeof(buf));

			/*
			 * What decodes encodes back to the same bytes; an older
			 * version's record re-encodes as this version's, which
			 * decodes and encodes to itself.
			 */
			if (n < 0 || an_wire_decode(buf, (size_t)n, &back, err, sizeof(err)))
				__builtin_trap();
			if (data[0] == AN_WIRE_VERSION &&
			    (n != (int)len || memcmp(buf, data, len)))
				__builtin_trap();
			if (data[0] != AN_WIRE_VERSION) {
				uint8_t again[AN_WIRE_MAX];

				if (an_wire_encode(&back, again, sizeof(again)) != n ||
				    memcmp(again, buf, (size_t)n))
					__builtin_trap();
			}
			an_wire_apply(an, len & 1, &w);
		}
		data += len;
		size -= len;
	}
	return 0;
}
