// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* /proc/net/tcp{,6} lines (user/kernel/procnet.c): real kernel lines and near misses. */
#include <string.h>
#include <arpa/inet.h>
#include "check.h"
#include "procnet.h"

int main(void)
{
	struct procnet_sock s;
	uint8_t a[16];

	CHECK(!procnet_parse_line("  sl  local_address rem_address   st tx_queue rx_queue tr"
				  " tm->when retrnsmt   uid  timeout inode\n", false, &s));
	CHECK(procnet_parse_line("   3: 0300E90A:AEFD 0100E90A:C59A 01 00000000:00000000 00:00000000"
				 " 00000000     0        0 81234 1 0000000000000000 20 4 30 10 -1\n",
				 false, &s));
	inet_pton(AF_INET, "10.233.0.3", a);
	CHECK(memcmp(s.key.laddr, a, 4) == 0);
	inet_pton(AF_INET, "10.233.0.1", a);
	CHECK(memcmp(s.key.raddr, a, 4) == 0);
	CHECK_INT(s.key.lport, 0xAEFD);
	CHECK_INT(s.key.rport, 0xC59A);
	CHECK_INT(s.state, 1);
	CHECK(s.inode == 81234);
	/* a listening socket */
	CHECK(procnet_parse_line("   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000"
				 " 00000000     0        0 555 1 0000000000000000 100 0 0 10 0\n",
				 false, &s));
	CHECK_INT(s.state, PROCNET_TCP_LISTEN);
	/* IPv6: ::ffff:10.233.0.2 */
	CHECK(procnet_parse_line("   1: 0000000000000000FFFF00000200E90A:1F90 "
				 "0000000000000000FFFF00000100E90A:D431 01 00000000:00000000"
				 " 00:00000000 00000000     0        0 777 1 0\n", true, &s));
	inet_pton(AF_INET6, "::ffff:10.233.0.2", a);
	CHECK(memcmp(s.key.laddr, a, 16) == 0);
	CHECK(s.inode == 777);
	/* near misses */
	CHECK(!procnet_parse_line("   3: 0300E90A:AEFD 0100E90A:C59A 01 00000000:00000000", false, &s));
	CHECK(!procnet_parse_line("   3: 0300E90G:AEFD 0100E90A:C59A 01 0 0 0 0 0 81234", false, &s));
	CHECK(!procnet_parse_line("   3: 0300E90A-AEFD 0100E90A:C59A 01 0 0 0 0 0 81234", false, &s));
	CHECK(!procnet_parse_line("   3: 0300E90A:AEFD 0100E90A:C59A 01 0 0 0 0 0 x81234", false, &s));
	CHECK(!procnet_parse_line("   3: 0300E90A:AEFD 0100E90A:C59A 01 0 0 0 0 0 99999999999999999999999",
				  false, &s));
	CHECK(!procnet_parse_line("3 0300E90A:AEFD", false, &s));
	CHECK(!procnet_parse_line("", false, &s));
	/* a v4 line read as v6 */
	CHECK(!procnet_parse_line("   3: 0300E90A:AEFD 0100E90A:C59A 01 00000000:00000000 00:00000000"
				  " 00000000     0        0 81234\n", true, &s));
	return check_finish("test_procnet");
}
