/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Fleet credentials from files, never from the command line (where `ps`
 * and shell histories show them): the Redis password (optionally with an
 * ACL user) and the key of the record tags.  docs/fleet.md, section 10.
 *
 * Auth file: text; blank lines and lines starting with '#' are skipped;
 * exactly one other line, "PASSWORD" or "USER PASSWORD" (words separated
 * by blanks; neither may contain a blank).  Key file: its bytes are the
 * key (one trailing newline, "\n" or "\r\n", is not part of it), 16 to
 * 1024 bytes.  Error messages never quote a password or key.
 */
#ifndef CCLD_FLEET_CRED_H
#define CCLD_FLEET_CRED_H

#include <stddef.h>
#include <stdint.h>

struct fs_cred;

#define FC_ENV_AUTH	"CCLD_REDIS_AUTH_FILE"	/* used without the option */
#define FC_ENV_KEY	"CCLD_HMAC_KEY_FILE"
#define FC_KEY_MIN	16
#define FC_FILE_MAX	(64u << 10)

/*
 * The text of an auth file (LEN bytes, need not be NUL terminated) into
 * USER ("" if none) and PASS.  0, or -1 with ERR ("line N: what").
 */
int fleet_auth_parse(const char *text, size_t len, char *user, size_t ulen,
		     char *pass, size_t plen, char *err, size_t errlen);

/* The bytes of a key file into KEY (*KEYLEN bytes).  0, or -1 with ERR. */
int fleet_key_parse(const void *buf, size_t len, uint8_t *key, size_t keymax,
		    size_t *keylen, char *err, size_t errlen);

/*
 * Fills C from AUTH_FILE and KEY_FILE; a NULL one is taken from its
 * environment variable (FC_ENV_*) if set and not empty, else left unset
 * (no AUTH; records neither signed nor checked).  0, or -1 with ERR
 * naming the file and what is wrong ("Redis auth file F: ...").
 */
int fleet_cred_load(struct fs_cred *c, const char *auth_file,
		    const char *key_file, char *err, size_t errlen);

#endif
