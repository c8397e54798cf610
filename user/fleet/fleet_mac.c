// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Record tags of the fleet transport; fleet_mac.h says what they cover. */
#include "fleet_mac.h"

#define DOMAIN	"ccld-rec-tag-1"	/* a new layout of the message: -2 */

static void put_u64(struct sha256 *s, uint64_t v)
{
	uint8_t b[8];
	int i;

	for (i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	sha256_update(s, b, sizeof(b));
}

static void put_bytes(struct sha256 *s, const void *p, size_t n)
{
	put_u64(s, n);
	sha256_update(s, p, n);
}

void fleet_mac_tag(const struct hmac_sha256_key *k, const char *stream,
		   const char *node, size_t nodelen, uint64_t inst, uint64_t seq,
		   const void *data, size_t len, char out[FM_TAG_HEX + 1])
{
	static const char hex[] = "0123456789abcdef";
	uint8_t d[SHA256_LEN];
	struct sha256 s;
	size_t sl = 0;
	int i;

	while (stream[sl])
		sl++;
	hmac_sha256_begin(k, &s);
	sha256_update(&s, DOMAIN, sizeof(DOMAIN));	/* with its NUL */
	put_bytes(&s, stream, sl);
	put_bytes(&s, node, nodelen);
	put_u64(&s, inst);
	put_u64(&s, seq);
	put_bytes(&s, data, len);
	hmac_sha256_end(k, &s, d);
	for (i = 0; i < FM_TAG_BYTES; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[FM_TAG_HEX] = '\0';
}

bool fleet_mac_ok(const struct hmac_sha256_key *k, const char *stream,
		  const char *node, size_t nodelen, uint64_t inst, uint64_t seq,
		  const void *data, size_t len, const char *tag, size_t taglen)
{
	char want[FM_TAG_HEX + 1];
	bool ok;

	if (taglen != FM_TAG_HEX)
		return false;
	fleet_mac_tag(k, stream, node, nodelen, inst, seq, data, len, want);
	ok = ct_equal(want, tag, FM_TAG_HEX);
	secure_wipe(want, sizeof(want));
	return ok;
}
