// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the kernel log's Xid parser (user/kernel/kmsg.c): any bytes
 * as a message; what it accepts has a bounded, printable text and a bus id
 * that prints back to the bus it read.
 */
#include <stdio.h>
#include <string.h>
#include "kmsg.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct xid_line x;
	char bus[16];
	size_t i;

	if (!xid_parse((const char *)data, size, &x))
		return 0;
	snprintf(bus, sizeof(bus), "%04x:%02x:%02x", (unsigned)(x.bus_id >> 20) & 0xffff,
		 (unsigned)(x.bus_id >> 12) & 0xff, (unsigned)(x.bus_id >> 4) & 0xff);
	if (strcasecmp(bus, x.bus) || (x.bus_id & 0xf) || strlen(x.text) >= sizeof(x.text))
		__builtin_trap();
	for (i = 0; x.text[i]; i++)
		if ((unsigned char)x.text[i] < 0x20)
			__builtin_trap();
	return 0;
}
