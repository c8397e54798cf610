/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The tag of one fleet record (docs/fleet.md section 10): HMAC-SHA256 with
 * the deployment's shared key over the stream key, node, instance, seq and
 * record bytes, each length-prefixed, so that no field can be moved into
 * another; sent as the entry field "mac", the first 128 bits in lowercase
 * hex (RFC 2104 allows truncation to half the hash).
 */
#ifndef CCLD_FLEET_MAC_H
#define CCLD_FLEET_MAC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "sha256.h"

#define FM_TAG_BYTES	16
#define FM_TAG_HEX	(2 * FM_TAG_BYTES)

/* OUT gets FM_TAG_HEX hex digits and a NUL. */
void fleet_mac_tag(const struct hmac_sha256_key *k, const char *stream,
		   const char *node, size_t nodelen, uint64_t inst, uint64_t seq,
		   const void *data, size_t len, char out[FM_TAG_HEX + 1]);

/* TAG (TAGLEN bytes, as received) is the tag of these fields. */
bool fleet_mac_ok(const struct hmac_sha256_key *k, const char *stream,
		  const char *node, size_t nodelen, uint64_t inst, uint64_t seq,
		  const void *data, size_t len, const char *tag, size_t taglen);

#endif
