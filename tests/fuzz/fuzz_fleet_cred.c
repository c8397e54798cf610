// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the fleet credential files (user/fleet/fleet_cred.c): any
 * bytes as an auth file and as a key file.  What the auth parser accepts is
 * a non-empty password and a user, each one word (no blank, CR, LF or NUL)
 * that occurs in the input; a refusal's message never holds a word of the
 * input longer than 8 bytes that is not a comment (it could be a secret).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "fleet_cred.h"

/* the fixed text of the messages: input that repeats it may be quoted */
static const char fixed[] =
	"holds a NUL byte: not a text file|more than two words (expected PASSWORD"
	" or USER PASSWORD; a password cannot hold a blank)|a second credential"
	" line (one only)|user name longer than|password longer than|no password"
	" in it (expected a line PASSWORD or USER PASSWORD)|no room for the"
	" credentials";

static bool clean_word(const char *w)
{
	return !strpbrk(w, " \t\n");
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char user[32], pass[64], err[256];
	uint8_t key[128];
	size_t keylen;
	int rc;

	rc = fleet_auth_parse((const char *)data, size, user, sizeof(user), pass,
			      sizeof(pass), err, sizeof(err));
	if (rc == 0) {
		if (!pass[0] || !clean_word(user) || !clean_word(pass) ||
		    !memmem(data, size, pass, strlen(pass)) ||
		    (user[0] && !memmem(data, size, user, strlen(user))))
			__builtin_trap();
	} else if (rc != -1 || !err[0] || strlen(err) >= sizeof(err)) {
		__builtin_trap();
	} else if (size >= 9 && !memchr(data, '\0', size)) {
		/* no 9-byte run of the input in the message, unless the
		 * message's own text has it (the fixed words of the format) */
		size_t i;

		for (i = 0; i + 9 <= size; i++)
			if (!memchr(data + i, '\n', 9) && !memchr(data + i, ' ', 9) &&
			    !memchr(data + i, '\t', 9) &&
			    memmem(err, strlen(err), data + i, 9) &&
			    !memmem(fixed, sizeof(fixed) - 1, data + i, 9))
				__builtin_trap();
	}
	rc = fleet_key_parse(data, size, key, sizeof(key), &keylen, err, sizeof(err));
	if (rc == 0 && (keylen < FC_KEY_MIN || keylen > sizeof(key) ||
			keylen > size || memcmp(key, data, keylen)))
		__builtin_trap();
	return 0;
}
