// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Fleet transport over Redis Streams; fleet_stream.h is the interface and
 * docs/fleet.md the stream layout.  Everything is synchronous hiredis
 * (0.14 and later: RESP2 replies only).
 *
 * This file: Redis URLs and one connection (struct link), with its
 * reconnect backoff; fs_int.h says which file has the rest.  Every
 * (re)connect sends AUTH when credentials were given, and PING when
 * neither AUTH nor SELECT is needed, so that a server that wants a
 * password says so at connect time, not at the first XADD.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <hiredis/hiredis.h>
#include "errbuf.h"
#include "fs_int.h"
#include "sha256.h"

uint64_t fs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct timeval ms_tv(unsigned ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = ms % 1000 * 1000 };

	return tv;
}

void fs_sigpipe_block(struct sigpipe_guard *g)
{
	sigset_t set, pend;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	g->was_pending = !sigpending(&pend) && sigismember(&pend, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, &g->old);
}

void fs_sigpipe_restore(struct sigpipe_guard *g)
{
	struct timespec zero = { 0, 0 };
	sigset_t set, pend;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	if (!g->was_pending && !sigpending(&pend) &&
	    sigismember(&pend, SIGPIPE)) {
		while (sigtimedwait(&set, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* ---- URLs ---------------------------------------------------------------- */

static int parse_uint(const char *s, size_t n, long max, long *out)
{
	long v = 0;
	size_t i;

	if (!n || n > 10)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

int fs_parse_url(const char *url, struct fs_url *u, char *err, size_t errlen)
{
	static const char usage[] =
		"expected redis://HOST[:PORT][/DB] or unix:///PATH";
	const char *p, *host, *host_end, *end;
	long v;

	memset(u, 0, sizeof(*u));
	if (!url || !*url) {
		put_err(err, errlen, "empty Redis URL: %s", usage);
		return -1;
	}
	if (!strncmp(url, "rediss://", 9)) {
		put_err(err, errlen, "%s: bad Redis URL: TLS (rediss://) is not supported by"
			" this build (hiredis without SSL): reach a TLS Redis through a local"
			" tunnel, docs/deploy.md", url);
		return -1;
	}
	if (!strncmp(url, "unix://", 7)) {
		p = url + 7;
		if (*p != '/') {
			put_err(err, errlen, "%s: bad Redis URL: the socket path must be absolute (unix:///PATH)",
				url);
			return -1;
		}
		if (strlen(p) >= sizeof(u->path)) {
			put_err(err, errlen, "%s: bad Redis URL: socket path longer than %zu bytes",
				url, sizeof(u->path) - 1);
			return -1;
		}
		u->is_unix = true;
		strcpy(u->path, p);
		return 0;
	}
	if (strncmp(url, "redis://", 8)) {
		put_err(err, errlen, "%s: bad Redis URL: %s", url, usage);
		return -1;
	}
	p = url + 8;
	end = p + strcspn(p, "/");
	host = strrchr(p, '@');
	if (host) {
		/* the URL is not repeated: what is before '@' is a secret */
		put_err(err, errlen, "redis://...@%s: bad Redis URL: no user or password in"
			" the URL (the command line is visible in ps): put them in a file"
			" given with --redis-auth-file", host + 1);
		return -1;
	}
	if (*p == '[') {
		host = p + 1;
		host_end = memchr(host, ']', end - host);
		if (!host_end) {
			put_err(err, errlen, "%s: bad Redis URL: no ']' after the IPv6 address",
				url);
			return -1;
		}
		p = host_end + 1;
	} else {
		host = p;
		host_end = memchr(p, ':', end - p);
		if (!host_end)
			host_end = end;
		p = host_end;
	}
	if (host_end == host) {
		put_err(err, errlen, "%s: bad Redis URL: no host (%s)", url, usage);
		return -1;
	}
	if ((size_t)(host_end - host) >= sizeof(u->host)) {
		put_err(err, errlen, "%s: bad Redis URL: host name too long", url);
		return -1;
	}
	memcpy(u->host, host, host_end - host);
	u->port = 6379;
	if (p < end) {
		if (*p != ':' || parse_uint(p + 1, end - p - 1, 65535, &v) ||
		    v == 0) {
			put_err(err, errlen, "%s: bad Redis URL: bad port (1..65535 after ':')",
				url);
			return -1;
		}
		u->port = v;
	}
	if (*end == '/' && end[1]) {
		if (parse_uint(end + 1, strlen(end + 1), 65535, &v)) {
			put_err(err, errlen, "%s: bad Redis URL: bad database number after '/'",
				url);
			return -1;
		}
		u->db = v;
	}
	return 0;
}

/* ---- one connection ------------------------------------------------------ */

int fs_link_init(struct link *l, const char *url,
		 const struct fs_cred *cred, char *err, size_t errlen)
{
	memset(l, 0, sizeof(*l));
	if (fs_parse_url(url, &l->u, err, errlen))
		return -1;
	snprintf(l->url, sizeof(l->url), "%s", url);
	if (cred) {
		memcpy(l->user, cred->user, sizeof(l->user));
		memcpy(l->pass, cred->pass, sizeof(l->pass));
		l->user[sizeof(l->user) - 1] = l->pass[sizeof(l->pass) - 1] = '\0';
	}
	l->backoff_ms = FS_BACKOFF_MIN_MS;
	return 0;
}

void fs_link_drop(struct link *l)
{
	if (l->rc)
		redisFree(l->rc);
	l->rc = NULL;
}

/* Closes L and forgets its credentials. */
void fs_link_free(struct link *l)
{
	fs_link_drop(l);
	secure_wipe(l->user, sizeof(l->user));
	secure_wipe(l->pass, sizeof(l->pass));
}

/* After a failure: no new attempt for the backoff time, which doubles. */
void fs_link_backoff(struct link *l)
{
	l->next_try_ns = fs_now_ns() + (uint64_t)l->backoff_ms * 1000000;
	l->backoff_ms *= 2;
	if (l->backoff_ms > FS_BACKOFF_MAX_MS)
		l->backoff_ms = FS_BACKOFF_MAX_MS;
}

int fs_link_set_timeout(struct link *l, unsigned ms)
{
	if (l->io_ms == ms)
		return 0;
	if (redisSetTimeout(l->rc, ms_tv(ms)) != REDIS_OK) {
		snprintf(l->err, sizeof(l->err), "%s: cannot set socket timeout: %s",
			 l->url, strerror(errno));
		return -1;
	}
	l->io_ms = ms;
	return 0;
}

/*
 * One command, its reply or NULL (l->err says why).  On an I/O error the
 * connection is dropped; an error reply is returned as it is.
 */
redisReply *fs_link_cmd(struct link *l, int argc, const char **argv,
			const size_t *lens)
{
	struct sigpipe_guard g;
	redisReply *r;

	if (!l->rc) {
		snprintf(l->err, sizeof(l->err), "%s: not connected", l->url);
		return NULL;
	}
	fs_sigpipe_block(&g);
	r = redisCommandArgv(l->rc, argc, argv, lens);
	fs_sigpipe_restore(&g);
	if (!r) {
		snprintf(l->err, sizeof(l->err), "%s: %s: %s", l->url, argv[0],
			 l->rc->errstr[0] ? l->rc->errstr : "connection lost");
		fs_link_drop(l);
	}
	return r;
}

/* Records an error reply R of command WHAT in l->err and frees R. */
void fs_reply_error(struct link *l, redisReply *r, const char *what)
{
	if (r->type == REDIS_REPLY_ERROR)
		snprintf(l->err, sizeof(l->err), "%s: %s: %.*s", l->url, what,
			 (int)r->len, r->str);
	else
		snprintf(l->err, sizeof(l->err), "%s: %s: unexpected reply type %d",
			 l->url, what, r->type);
	freeReplyObject(r);
}

/*
 * AUTH [USER] PASS on the fresh connection of L.  The error names the user,
 * never the password.  0 or -1 (l->err).
 */
static int link_auth(struct link *l)
{
	const char *argv[3] = { "AUTH" };
	redisReply *r;
	int argc = 1;

	if (l->user[0])
		argv[argc++] = l->user;
	argv[argc++] = l->pass;
	r = fs_link_cmd(l, argc, argv, NULL);
	if (!r)
		return -1;
	if (r->type != REDIS_REPLY_STATUS) {
		snprintf(l->err, sizeof(l->err), "%s: AUTH%s%s%s refused: %.*s", l->url,
			 l->user[0] ? " as user '" : "", l->user, l->user[0] ? "'" : "",
			 r->type == REDIS_REPLY_ERROR ? (int)r->len : 0,
			 r->type == REDIS_REPLY_ERROR ? r->str : "");
		freeReplyObject(r);
		return -1;
	}
	freeReplyObject(r);
	return 0;
}

/* PING: a server that wants a password answers NOAUTH.  0 or -1. */
static int link_ping(struct link *l)
{
	const char *argv[1] = { "PING" };
	redisReply *r = fs_link_cmd(l, 1, argv, NULL);

	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOAUTH", 6)) {
		snprintf(l->err, sizeof(l->err), "%s: the server wants a password (%.*s):"
			 " give it in a file with --redis-auth-file", l->url, (int)r->len,
			 r->str);
		freeReplyObject(r);
		return -1;
	}
	if (r->type != REDIS_REPLY_STATUS) {
		fs_reply_error(l, r, "PING");
		return -1;
	}
	freeReplyObject(r);
	return 0;
}

int fs_link_open(struct link *l)
{
	struct sigpipe_guard g;
	struct timeval tv = ms_tv(FS_CONNECT_TIMEOUT_MS);
	redisContext *rc;
	redisReply *r;
	char db[16];
	const char *argv[2] = { "SELECT", db };

	fs_link_drop(l);
	fs_sigpipe_block(&g);
	if (l->u.is_unix)
		rc = redisConnectUnixWithTimeout(l->u.path, tv);
	else
		rc = redisConnectWithTimeout(l->u.host, l->u.port, tv);
	fs_sigpipe_restore(&g);
	if (!rc || rc->err) {
		snprintf(l->err, sizeof(l->err), "%s: cannot connect: %s", l->url,
			 rc ? rc->errstr : "out of memory");
		if (rc)
			redisFree(rc);
		return -1;
	}
	l->rc = rc;
	l->io_ms = 0;
	if (fs_link_set_timeout(l, FS_IO_TIMEOUT_MS))
		goto fail;
	/* TCP only: on a Unix socket it fails and leaves the context in error
	 * (hiredis 0.14), so that every command after it fails */
	if (!l->u.is_unix && redisEnableKeepAlive(rc) != REDIS_OK) {
		snprintf(l->err, sizeof(l->err), "%s: cannot enable TCP keepalive: %s",
			 l->url, rc->errstr);
		goto fail;
	}
	if (l->pass[0] && link_auth(l))
		goto fail;
	if (!l->pass[0] && !l->u.db && link_ping(l))
		goto fail;
	if (l->u.db) {
		snprintf(db, sizeof(db), "%d", l->u.db);
		r = fs_link_cmd(l, 2, argv, NULL);
		if (!r)
			goto fail;
		if (r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOAUTH", 6)) {
			snprintf(l->err, sizeof(l->err), "%s: the server wants a password"
				 " (%.*s): give it in a file with --redis-auth-file", l->url,
				 (int)r->len, r->str);
			freeReplyObject(r);
			goto fail;
		}
		if (r->type != REDIS_REPLY_STATUS) {
			fs_reply_error(l, r, "SELECT");
			goto fail;
		}
		freeReplyObject(r);
	}
	l->backoff_ms = FS_BACKOFF_MIN_MS;
	l->next_try_ns = 0;
	return 0;
fail:
	fs_link_drop(l);
	return -1;
}

/* keys of shards FIRST, FIRST + STEP, ... (N of them) */
char (*fs_make_keys_step(unsigned n, unsigned first, unsigned step))[KEY_LEN]
{
	char (*k)[KEY_LEN] = calloc(n, KEY_LEN);
	unsigned i;

	if (!k)
		return NULL;
	for (i = 0; i < n; i++)
		snprintf(k[i], KEY_LEN, FS_STREAM_PREFIX "%u", first + i * step);
	return k;
}
