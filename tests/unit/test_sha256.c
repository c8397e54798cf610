// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * common/sha256.c: SHA-256 against the FIPS 180-4 examples, HMAC-SHA256
 * against RFC 4231 test cases 1 to 7 (case 5 truncated to 128 bits as the
 * RFC gives it), incremental updates split at every offset, the prepared
 * key against the one-shot form, ct_equal.
 */
#include <stdlib.h>
#include "check.h"
#include "sha256.h"

static void hex(const uint8_t *p, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static void check_sha(const void *msg, size_t len, const char *want)
{
	uint8_t d[SHA256_LEN];
	char h[2 * SHA256_LEN + 1];
	struct sha256 s;

	sha256_init(&s);
	sha256_update(&s, msg, len);
	sha256_final(&s, d);
	hex(d, sizeof(d), h);
	CHECK_STR(h, want);
}

struct rfc4231 {
	uint8_t key[131];
	size_t keylen;
	const char *data;
	size_t datalen;
	const char *mac;	/* hex; case 5: the first 128 bits */
};

static void fill(uint8_t *p, uint8_t v, size_t n)
{
	memset(p, v, n);
}

static void test_rfc4231(void)
{
	static uint8_t dd[50], cd[50];
	struct rfc4231 tc[7] = {
		{ .keylen = 20, .data = "Hi There", .datalen = 8,
		  .mac = "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" },
		{ .key = "Jefe", .keylen = 4, .data = "what do ya want for nothing?",
		  .datalen = 28,
		  .mac = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" },
		{ .keylen = 20, .data = (const char *)dd, .datalen = 50,
		  .mac = "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe" },
		{ .keylen = 25, .data = (const char *)cd, .datalen = 50,
		  .mac = "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b" },
		{ .keylen = 20, .data = "Test With Truncation", .datalen = 20,
		  .mac = "a3b6167473100ee06e0c796c2955552b" },
		{ .keylen = 131,
		  .data = "Test Using Larger Than Block-Size Key - Hash Key First",
		  .datalen = 54,
		  .mac = "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54" },
		{ .keylen = 131,
		  .data = "This is a test using a larger than block-size key and a larger"
			  " than block-size data. The key needs to be hashed before being"
			  " used by the HMAC algorithm.",
		  .datalen = 152,
		  .mac = "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2" },
	};
	int i;

	fill(tc[0].key, 0x0b, 20);
	fill(tc[2].key, 0xaa, 20);
	fill(dd, 0xdd, sizeof(dd));
	for (i = 0; i < 25; i++)
		tc[3].key[i] = (uint8_t)(i + 1);
	fill(cd, 0xcd, sizeof(cd));
	fill(tc[4].key, 0x0c, 20);
	fill(tc[5].key, 0xaa, 131);
	fill(tc[6].key, 0xaa, 131);
	for (i = 0; i < 7; i++) {
		uint8_t d[SHA256_LEN];
		char h[2 * SHA256_LEN + 1];

		hmac_sha256(tc[i].key, tc[i].keylen, tc[i].data, tc[i].datalen, d);
		hex(d, strlen(tc[i].mac) / 2, h);
		if (strcmp(h, tc[i].mac))
			fprintf(stderr, "RFC 4231 test case %d:\n", i + 1);
		CHECK_STR(h, tc[i].mac);
	}
}

/* every split of a message into two updates gives the one-shot digest */
static void test_split(void)
{
	uint8_t msg[300], one[SHA256_LEN], two[SHA256_LEN];
	struct hmac_sha256_key k;
	struct sha256 s;
	size_t i, cut;
	int bad = 0;

	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 7 + 3);
	hmac_sha256_key(&k, "key", 3);
	for (i = 0; i <= sizeof(msg); i += 13) {
		hmac_sha256("key", 3, msg, i, one);
		for (cut = 0; cut <= i; cut++) {
			hmac_sha256_begin(&k, &s);
			sha256_update(&s, msg, cut);
			sha256_update(&s, msg + cut, i - cut);
			hmac_sha256_end(&k, &s, two);
			bad += memcmp(one, two, SHA256_LEN) != 0;
		}
	}
	CHECK_INT(bad, 0);
}

int main(void)
{
	char *million = malloc(1000000);

	check_sha("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	check_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	check_sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	CHECK(million != NULL);
	if (million) {
		memset(million, 'a', 1000000);
		check_sha(million, 1000000,
			  "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
		free(million);
	}
	test_rfc4231();
	test_split();
	CHECK(ct_equal("abcd", "abcd", 4));
	CHECK(!ct_equal("abcd", "abce", 4));
	CHECK(ct_equal("x", "y", 0));
	return check_finish("test_sha256");
}
