// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Fleet credentials from files; fleet_cred.h has the formats. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "errbuf.h"
#include "fleet_cred.h"
#include "fleet_stream.h"
#include "sha256.h"

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

/* the next word of [*p, end): its start and length; *p moves past it */
static size_t word(const char **p, const char *end, const char **w)
{
	while (*p < end && blank(**p))
		(*p)++;
	*w = *p;
	while (*p < end && !blank(**p))
		(*p)++;
	return (size_t)(*p - *w);
}

int fleet_auth_parse(const char *text, size_t len, char *user, size_t ulen,
		     char *pass, size_t plen, char *err, size_t errlen)
{
	const char *p = text, *end = text + len;
	bool found = false;
	unsigned line = 0;

	if (!ulen || !plen) {
		put_err(err, errlen, "no room for the credentials");
		return -1;
	}
	user[0] = pass[0] = '\0';
	if (memchr(text, '\0', len)) {
		put_err(err, errlen, "holds a NUL byte: not a text file");
		return -1;
	}
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *q = p, *w[3];
		const char *next;
		size_t n[3];
		int nw;

		if (!eol)
			eol = end;
		next = eol < end ? eol + 1 : end;
		line++;
		if (eol > p && eol[-1] == '\r')
			eol--;
		for (nw = 0; nw < 3; nw++) {
			n[nw] = word(&q, eol, &w[nw]);
			if (!n[nw])
				break;
		}
		p = next;
		if (!nw || w[0][0] == '#')
			continue;
		if (nw == 3) {
			put_err(err, errlen, "line %u: more than two words (expected PASSWORD"
				" or USER PASSWORD; a password cannot hold a blank)", line);
			return -1;
		}
		if (found) {
			put_err(err, errlen, "line %u: a second credential line (one only)",
				line);
			return -1;
		}
		found = true;
		if (nw == 2) {
			if (n[0] >= ulen) {
				put_err(err, errlen, "line %u: user name longer than %zu bytes",
					line, ulen - 1);
				return -1;
			}
			memcpy(user, w[0], n[0]);
			user[n[0]] = '\0';
		}
		if (n[nw - 1] >= plen) {
			put_err(err, errlen, "line %u: password longer than %zu bytes", line,
				plen - 1);
			return -1;
		}
		memcpy(pass, w[nw - 1], n[nw - 1]);
		pass[n[nw - 1]] = '\0';
	}
	if (!found) {
		put_err(err, errlen, "no password in it (expected a line PASSWORD or"
			" USER PASSWORD)");
		return -1;
	}
	return 0;
}

int fleet_key_parse(const void *buf, size_t len, uint8_t *key, size_t keymax,
		    size_t *keylen, char *err, size_t errlen)
{
	const uint8_t *b = buf;

	if (len && b[len - 1] == '\n') {
		len--;
		if (len && b[len - 1] == '\r')
			len--;
	}
	if (len < FC_KEY_MIN) {
		put_err(err, errlen, "key of %zu bytes: at least %d (e.g. head -c 32"
			" /dev/urandom | base64 > FILE)", len, FC_KEY_MIN);
		return -1;
	}
	if (len > keymax) {
		put_err(err, errlen, "key of %zu bytes: at most %zu", len, keymax);
		return -1;
	}
	memcpy(key, b, len);
	*keylen = len;
	return 0;
}

/* the whole file PATH into a malloc'ed buffer; NULL with ERR */
static char *slurp(const char *path, size_t *len, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		put_err(err, errlen, "cannot open: %s", strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st)) {
		put_err(err, errlen, "cannot stat: %s", strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		put_err(err, errlen, "not a regular file");
		goto fail;
	}
	if ((uint64_t)st.st_size > FC_FILE_MAX) {
		put_err(err, errlen, "larger than %u bytes", FC_FILE_MAX);
		goto fail;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		put_err(err, errlen, "out of memory");
		goto fail;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			put_err(err, errlen, "cannot read: %s", strerror(errno));
			goto fail;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	*len = got;
	return buf;
fail:
	if (buf) {
		secure_wipe(buf, (size_t)st.st_size);
		free(buf);
	}
	close(fd);
	return NULL;
}

static const char *from_env(const char *opt, const char *var)
{
	const char *v;

	if (opt)
		return opt;
	v = getenv(var);
	return v && *v ? v : NULL;
}

int fleet_cred_load(struct fs_cred *c, const char *auth_file,
		    const char *key_file, char *err, size_t errlen)
{
	char why[256];
	size_t len;
	char *buf;
	int rc;

	memset(c, 0, sizeof(*c));
	auth_file = from_env(auth_file, FC_ENV_AUTH);
	key_file = from_env(key_file, FC_ENV_KEY);
	if (auth_file) {
		buf = slurp(auth_file, &len, why, sizeof(why));
		rc = buf ? fleet_auth_parse(buf, len, c->user, sizeof(c->user), c->pass,
					    sizeof(c->pass), why, sizeof(why)) : -1;
		if (buf) {
			secure_wipe(buf, len);
			free(buf);
		}
		if (rc) {
			put_err(err, errlen, "Redis auth file %s: %s", auth_file, why);
			goto fail;
		}
	}
	if (key_file) {
		buf = slurp(key_file, &len, why, sizeof(why));
		rc = buf ? fleet_key_parse(buf, len, c->key, sizeof(c->key), &c->keylen,
					   why, sizeof(why)) : -1;
		if (buf) {
			secure_wipe(buf, len);
			free(buf);
		}
		if (rc) {
			put_err(err, errlen, "HMAC key file %s: %s", key_file, why);
			goto fail;
		}
	}
	return 0;
fail:
	secure_wipe(c, sizeof(*c));
	return -1;
}
