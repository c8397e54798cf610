// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The Xid line parser (user/kernel/kmsg.c): real driver lines and near misses. */
#include <string.h>
#include "check.h"
#include "kmsg.h"

static bool parse(const char *s, struct xid_line *x)
{
	return xid_parse(s, strlen(s), x);
}

int main(void)
{
	struct xid_line x;

	CHECK(parse("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n", &x));
	CHECK_INT(x.xid, 79);
	CHECK(x.bus_id == 0x00003b000ull);
	CHECK_STR(x.bus, "0000:3b:00");
	CHECK_STR(x.text, "pid=1234, name=python, GPU has fallen off the bus.");
	CHECK(parse("[  12.5] NVRM: Xid (PCI:0001:AF:1f): 48, An uncorrectable double bit error", &x));
	CHECK(x.bus_id == 0x0001af1f0ull);
	CHECK_INT(x.xid, 48);
	/* the stand-in's rank 2: 0000:1a:00.0 */
	CHECK(parse("NVRM: Xid (PCI:0000:1a:00): 13, Graphics Exception", &x));
	CHECK(x.bus_id == (uint64_t)0x1a << 12);
	/* long text truncated, control characters blanked */
	CHECK(parse("NVRM: Xid (PCI:0000:1a:00): 31, \x01" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", &x));
	CHECK_INT((int)strlen(x.text), 51);
	CHECK(x.text[0] == ' ');
	CHECK(!parse("NVRM: Xid (PCI:0000:3b:0): 79, short bus", &x));
	CHECK(!parse("NVRM: Xid (PCI:0000:3b:00) 79, no colon", &x));
	CHECK(!parse("NVRM: Xid (PCI:0000:3b:00): x, no number", &x));
	CHECK(!parse("NVRM: Xid (PCI:0000:3g:00): 79, not hex", &x));
	CHECK(!parse("NVRM: Xid (PCI:0000:3b:00): 1234567, too big", &x));
	CHECK(!parse("usb 1-1: new device", &x));
	CHECK(!parse("NVRM: Xid (PCI:0000:3b", &x));
	CHECK(!xid_parse("NVRM: Xid (PCI:0000:3b:00): 79", 20, &x));
	return check_finish("test_kmsg");
}
