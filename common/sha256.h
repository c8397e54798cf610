/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), self-contained: the
 * fleet transport tags each record with it (user/fleet/fleet_mac.h).  Why not
 * libcrypto: docs/fleet.md, "Record tags".  Checked against the FIPS 180-4
 * examples and RFC 4231's test cases (tests/unit/test_sha256.c).
 */
#ifndef CCLD_SHA256_H
#define CCLD_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN	32
#define SHA256_BLOCK	64

struct sha256 {
	uint32_t h[8];
	uint64_t total;			/* bytes hashed so far */
	uint8_t buf[SHA256_BLOCK];
	size_t nbuf;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final(struct sha256 *s, uint8_t out[SHA256_LEN]);

/*
 * A key made ready once: the hash states after the inner and outer padded
 * key blocks, so that each tag costs only the message's blocks plus one.
 */
struct hmac_sha256_key {
	struct sha256 inner, outer;
};

void hmac_sha256_key(struct hmac_sha256_key *k, const void *key, size_t len);
/* Starts a tag: S continues from the inner key state. */
void hmac_sha256_begin(const struct hmac_sha256_key *k, struct sha256 *s);
/* Ends the tag started in S. */
void hmac_sha256_end(const struct hmac_sha256_key *k, struct sha256 *s,
		     uint8_t out[SHA256_LEN]);
/* One-shot HMAC-SHA256(KEY, MSG). */
void hmac_sha256(const void *key, size_t keylen, const void *msg, size_t len,
		 uint8_t out[SHA256_LEN]);

/* A == B for N bytes, in time that depends on N only. */
bool ct_equal(const void *a, const void *b, size_t n);
/* Overwrites N bytes at P in a way the compiler does not remove. */
void secure_wipe(void *p, size_t n);

#endif
