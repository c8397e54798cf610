// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for what the fleet transport (user/fleet/fs_*.c)
 * takes from outside: Redis URLs (an option's value) and Redis replies.
 * Replies are made the way the bytes from the server become replies,
 * with hiredis' own reader, and go to the consumer's handlers of
 * XREADGROUP, XAUTOCLAIM, XRANGE and XINFO replies with a consumer built
 * here, without a server.  The handlers are static: this file includes
 * the consumer's two files (fs_consumer.c, fs_backlog.c) itself.
 *
 * hiredis 0.14 allocates a multi-bulk reply's array from its announced
 * length before the elements arrive: "*2000000000" asks for 16 GB, which
 * the server (trusted with the analyzer's memory) could send anyway.  The
 * reader here refuses arrays above 1M elements (as out of memory).
 *
 * Input: byte 0 picks URL (0) or replies (else; its bits choose the reply
 * handler, the shard split and the callback's answers), the rest is the
 * URL or the RESP bytes.
 */
#include "fs_consumer.c"
#include "fs_backlog.c"
#include <hiredis/read.h>

#define check(c) do { if (!(c)) __builtin_trap(); } while (0)

#define MAX_ELEMENTS	(1 << 20)

static redisReplyObjectFunctions fns;
static void *(*create_array)(const redisReadTask *, int);

static void *bounded_array(const redisReadTask *task, int elements)
{
	return elements > MAX_ELEMENTS ? NULL : create_array(task, elements);
}

/* hiredis' own reader and reply objects, with arrays bounded */
static redisReader *reader(void)
{
	redisReader *rd = redisReaderCreate();

	if (rd && !create_array) {
		fns = *rd->fn;
		create_array = fns.createArray;
		fns.createArray = bounded_array;
	}
	if (rd)
		rd->fn = &fns;
	return rd;
}

static void url(const uint8_t *data, size_t size)
{
	char *s = strndup((const char *)data, size), err[256] = "";
	struct fs_url u;

	if (!s)
		return;
	if (fs_parse_url(s, &u, err, sizeof(err)) == 0) {
		check(u.is_unix ? u.path[0] == '/' && strlen(u.path) < sizeof(u.path) :
		      u.host[0] && strlen(u.host) < sizeof(u.host) &&
		      u.port >= 1 && u.port <= 65535 && u.db >= 0);
	} else {
		check(err[0]);
	}
	free(s);
}

/* the callback refuses, keeps or acks by the record's first data byte */
static int on_record(void *ctx, const struct fs_record *r)
{
	unsigned *calls = ctx;

	check(r->node && strlen(r->node) < 256 && r->id && (r->data || !r->len));
	(*calls)++;
	if (!r->len)
		return FS_ACK;
	return ((const uint8_t *)r->data)[0] % 3 == 0 ? -1 :
	       ((const uint8_t *)r->data)[0] % 3 == 1 ? FS_KEEP : FS_ACK;
}

static struct fs_consumer *consumer(unsigned sel)
{
	/* as fs_consumer_new_part allows: each part has a shard */
	unsigned nshards = 1 + (sel >> 1) % 4, part = nshards > 1 ? (sel >> 3) & 1 : 0;
	unsigned nparts = 1 + part;
	struct fs_consumer *c = calloc(1, sizeof(*c));
	unsigned mine = (nshards - part + nparts - 1) / nparts, i;

	if (!c)
		return NULL;
	snprintf(c->l.url, sizeof(c->l.url), "redis://fuzz");
	c->first = part;
	c->step = nparts;
	c->group = strdup("ccld-analyzer");
	c->name = strdup("fuzz");
	c->keys = fs_make_keys_step(mine, part, nparts);
	c->sh = calloc(mine, sizeof(*c->sh));
	c->nshards = mine;
	if (!c->group || !c->name || !c->keys || !c->sh) {
		fs_consumer_free(c);
		return NULL;
	}
	for (i = 0; i < mine; i++) {
		c->sh[i].pending_phase = sel & 0x10;
		strcpy(c->sh[i].cursor, "0");
	}
	return c;
}

static void handle(struct fs_consumer *c, unsigned sel, const redisReply *r,
		   const redisReply *prev)
{
	char node[256], cursor[ID_LEN];
	struct fs_record rec = { 0 };
	const redisReply *mac;
	unsigned calls = 0, i;
	struct fs_lag lag;
	bool *seen = calloc(c->nshards, sizeof(*seen));

	if (!seen)
		return;
	switch ((sel >> 5) % 4) {
	case 0:
		read_group_reply(c, r, sel & 0x10, seen, on_record, &calls);
		break;
	case 1:
		if (claim_reply_ok(r))
			claim_reply(c, 0, r, cursor, on_record, &calls);
		break;
	case 2:
		if (r->type == REDIS_REPLY_ARRAY &&
		    fs_parse_entry(r, &rec, node, sizeof(node), &mac) > 0)
			check(strlen(rec.node) < sizeof(node));
		if (rec.id && prev && prev->type == REDIS_REPLY_STRING)
			id_cmp(rec.id, prev->str);
		break;
	default:
		if (prev && prev->type == REDIS_REPLY_ARRAY && r->type == REDIS_REPLY_ARRAY)
			lag_of(c, prev, r, &lag);
		break;
	}
	for (i = 0; i < c->nshards; i++) {
		check(c->sh[i].nacks <= c->sh[i].capacks);
		check(memchr(c->sh[i].cursor, '\0', ID_LEN));
	}
	free(seen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	redisReply *prev = NULL;
	struct fs_consumer *c;
	redisReader *rd;
	void *reply;
	int n;

	if (!size)
		return 0;
	if (!data[0]) {
		url(data + 1, size - 1);
		return 0;
	}
	c = consumer(data[0]);
	rd = reader();
	if (!c || !rd)
		goto out;
	if (redisReaderFeed(rd, (const char *)data + 1, size - 1) != REDIS_OK)
		goto out;
	for (n = 0; n < 64; n++) {
		if (redisReaderGetReply(rd, &reply) != REDIS_OK || !reply)
			break;
		handle(c, data[0], reply, prev);
		if (prev)
			freeReplyObject(prev);
		prev = reply;
	}
out:
	if (prev)
		freeReplyObject(prev);
	if (rd)
		redisReaderFree(rd);
	fs_consumer_free(c);
	return 0;
}
