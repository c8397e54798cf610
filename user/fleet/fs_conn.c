// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A plain connection of the fleet transport: XADD and claims, no buffer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <hiredis/hiredis.h>
#include "errbuf.h"
#include "fs_int.h"

/* ---- plain connection ---------------------------------------------------- */

struct fs_conn {
	struct link l;
};

struct fs_conn *fs_connect(const char *url, const struct fs_cred *cred,
			   char *err, size_t errlen)
{
	struct fs_conn *c = calloc(1, sizeof(*c));

	if (!c) {
		put_err(err, errlen, "%s: out of memory", url);
		return NULL;
	}
	if (fs_link_init(&c->l, url, cred, err, errlen))
		goto fail;
	if (fs_link_open(&c->l)) {
		put_err(err, errlen, "%s", c->l.err);
		goto fail;
	}
	return c;
fail:
	fs_link_free(&c->l);
	free(c);
	return NULL;
}

void fs_close(struct fs_conn *c)
{
	if (!c)
		return;
	fs_link_free(&c->l);
	free(c);
}

const char *fs_conn_error(const struct fs_conn *c)
{
	return c->l.err;
}

/* One command on a plain connection, reopening a lost one once. */
static redisReply *conn_cmd(struct fs_conn *c, int argc, const char **argv,
			    const size_t *lens)
{
	redisReply *r;
	int tries;

	for (tries = 0; tries < 2; tries++) {
		if (!c->l.rc) {
			if (fs_now_ns() < c->l.next_try_ns)
				return NULL;	/* l.err still says why */
			if (fs_link_open(&c->l)) {
				fs_link_backoff(&c->l);
				return NULL;
			}
		}
		r = fs_link_cmd(&c->l, argc, argv, lens);
		if (r)
			return r;
	}
	return NULL;
}

int fs_xadd(struct fs_conn *c, const char *stream, const char *field,
	    const void *value, size_t len, size_t maxlen)
{
	const char *argv[8];
	size_t lens[8];
	char ml[24];
	redisReply *r;
	int n = 0;

	argv[n] = "XADD";
	lens[n++] = 4;
	argv[n] = stream;
	lens[n++] = strlen(stream);
	if (maxlen) {
		snprintf(ml, sizeof(ml), "%zu", maxlen);
		argv[n] = "MAXLEN";
		lens[n++] = 6;
		argv[n] = "~";
		lens[n++] = 1;
		argv[n] = ml;
		lens[n++] = strlen(ml);
	}
	argv[n] = "*";
	lens[n++] = 1;
	argv[n] = field;
	lens[n++] = strlen(field);
	argv[n] = value;
	lens[n++] = len;
	r = conn_cmd(c, n, argv, lens);
	if (!r)
		return -1;
	if (r->type != REDIS_REPLY_STRING) {
		fs_reply_error(&c->l, r, "XADD");
		return -1;
	}
	freeReplyObject(r);
	return 0;
}

int fs_claim_once(struct fs_conn *c, const char *key, unsigned ttl_s)
{
	char owner[300], host[256], ttl[16];
	const char *argv[6] = { "SET", key, owner, "NX", "EX", ttl };
	redisReply *r;
	int won;

	if (!ttl_s) {
		snprintf(c->l.err, sizeof(c->l.err), "fs_claim_once: TTL must be at least 1 s");
		return -1;
	}
	if (gethostname(host, sizeof(host) - 1))
		strcpy(host, "unknown");
	host[sizeof(host) - 1] = '\0';
	snprintf(owner, sizeof(owner), "%s:%d", host, (int)getpid());
	snprintf(ttl, sizeof(ttl), "%u", ttl_s);
	r = conn_cmd(c, 6, argv, NULL);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_STATUS) {
		won = 1;
	} else if (r->type == REDIS_REPLY_NIL) {
		won = 0;
	} else {
		fs_reply_error(&c->l, r, "SET NX");
		return -1;
	}
	freeReplyObject(r);
	return won;
}
