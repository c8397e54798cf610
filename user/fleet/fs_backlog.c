// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What a group consumer of the fleet transport reads besides new entries:
 * the streams' whole history (fs_consumer_history), entries other
 * consumers left pending too long (fs_claim_stale) and how far the group
 * lags behind (fs_consumer_lag).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hiredis/hiredis.h>
#include "fs_int.h"

/* one shard's page of XRANGE entries, for the merge below */
struct hist_page {
	redisReply *r;
	size_t i;
	char start[ID_LEN + 1];	/* next XRANGE start ("(" + last id) */
	bool done;
};

static int id_parse(const char *id, uint64_t *ms, uint64_t *seq)
{
	char *end;

	*ms = strtoull(id, &end, 10);
	if (*end != '-')
		return -1;
	*seq = strtoull(end + 1, &end, 10);
	return *end ? -1 : 0;
}

/* -1, 0, 1 as stream id A is before, equal to, after B */
static int id_cmp(const char *a, const char *b)
{
	uint64_t am, as, bm, bs;

	if (id_parse(a, &am, &as) || id_parse(b, &bm, &bs))
		return strcmp(a, b) < 0 ? -1 : strcmp(a, b) > 0;
	if (am != bm)
		return am < bm ? -1 : 1;
	return as < bs ? -1 : as > bs;
}

/* the page's next entry, fetching the next page when it is used up */
static const redisReply *hist_head(struct fs_consumer *c, unsigned s, struct hist_page *p)
{
	while (!p->done && (!p->r || p->i >= p->r->elements)) {
		const char *argv[6] = { "XRANGE", c->keys[s], p->start, "+", "COUNT",
					"1000" };

		if (p->r) {
			freeReplyObject(p->r);
			p->r = NULL;
		}
		p->r = fs_link_cmd(&c->l, 6, argv, NULL);
		if (!p->r)
			return NULL;
		if (p->r->type != REDIS_REPLY_ARRAY) {
			fs_reply_error(&c->l, p->r, "XRANGE");
			p->r = NULL;
			return NULL;
		}
		p->i = 0;
		if (p->r->elements == 0)
			p->done = true;
	}
	return p->done ? NULL : p->r->element[p->i];
}

int fs_consumer_history(struct fs_consumer *c, fs_record_fn cb, void *ctx)
{
	struct hist_page *pg = calloc(c->nshards, sizeof(*pg));
	char node[256];
	int total = 0, ret = 0;
	unsigned s;

	if (!pg) {
		snprintf(c->l.err, sizeof(c->l.err), "fleet consumer: out of memory");
		return -1;
	}
	for (s = 0; s < c->nshards; s++)
		strcpy(pg[s].start, "-");
	/* the shards merged by entry id: about the order the records arrived */
	for (;;) {
		const redisReply *best = NULL;
		const char *best_id = NULL;
		unsigned bs = 0;

		for (s = 0; s < c->nshards; s++) {
			const redisReply *e = hist_head(c, s, &pg[s]);
			const char *id;

			if (!e && !pg[s].done) {
				ret = -1;
				goto out;
			}
			if (!e)
				continue;
			id = fs_entry_id(e);
			if (!id) {
				best = e;	/* malformed: consumed below, first */
				bs = s;
				break;
			}
			if (!best || id_cmp(id, best_id) < 0) {
				best = e;
				best_id = id;
				bs = s;
			}
		}
		if (!best)
			break;
		{
			struct fs_record rec = { .shard = bs, .redelivery = true };
			const redisReply *mac;
			int k = fs_parse_entry(best, &rec, node, sizeof(node), &mac);

			if (rec.id)
				snprintf(pg[bs].start, sizeof(pg[bs].start), "(%s", rec.id);
			pg[bs].i++;
			/* rejected entries are counted when the group delivers them */
			if (k <= 0 || fs_tag_check(c, bs, &rec, mac))
				continue;
			ret = cb(ctx, &rec);
			if (ret < 0)
				goto out;
			total++;
		}
	}
	ret = total;
out:
	for (s = 0; s < c->nshards; s++)
		if (pg[s].r)
			freeReplyObject(pg[s].r);
	free(pg);
	return ret;
}

/* An XAUTOCLAIM reply: [next cursor, entries, ...] */
static bool claim_reply_ok(const redisReply *r)
{
	return r->type == REDIS_REPLY_ARRAY && r->elements >= 2 && fs_is_str(r->element[0]) &&
	       r->element[0]->len < ID_LEN;
}

/*
 * Delivers the entries of XAUTOCLAIM reply R (claim_reply_ok) of shard I
 * to CB and puts its next cursor into CURSOR (ID_LEN bytes).  Returns the
 * records delivered, or CB's negative value.
 */
static int claim_reply(struct fs_consumer *c, unsigned i, const redisReply *r, char *cursor,
		       fs_record_fn cb, void *ctx)
{
	const redisReply *next = r->element[0];
	size_t before = c->st.delivered;
	int k = 0;

	if (r->element[1]->type == REDIS_REPLY_ARRAY) {
		k = fs_deliver(c, i, r->element[1], true, cb, ctx);
		c->st.claimed += c->st.delivered - before;
		if (k < 0)
			return k;
	}
	memcpy(cursor, next->str, next->len);
	cursor[next->len] = '\0';
	return k;
}

int fs_claim_stale(struct fs_consumer *c, unsigned min_idle_ms,
		   fs_record_fn cb, void *ctx)
{
	char idle[16], cursor[ID_LEN], count[16];
	int n = 0, ret = 0;
	unsigned i;

	if (!c->l.rc && fs_consumer_reconnect(c, 0))
		return -1;
	if (fs_link_set_timeout(&c->l, FS_IO_TIMEOUT_MS))
		return -1;
	snprintf(idle, sizeof(idle), "%u", min_idle_ms);
	snprintf(count, sizeof(count), "%d", READ_COUNT);
	for (i = 0; i < c->nshards && ret >= 0; i++) {
		strcpy(cursor, "0-0");
		for (;;) {
			const char *argv[8] = { "XAUTOCLAIM", c->keys[i], c->group,
						c->name, idle, cursor, "COUNT",
						count };
			redisReply *r = fs_link_cmd(&c->l, 8, argv, NULL);
			int k;

			if (!r) {
				ret = -1;
				break;
			}
			if (!claim_reply_ok(r)) {
				fs_reply_error(&c->l, r, "XAUTOCLAIM");
				ret = -1;
				break;
			}
			k = claim_reply(c, i, r, cursor, cb, ctx);
			freeReplyObject(r);
			if (k < 0) {
				ret = k;
				break;
			}
			n += k;
			if (!strcmp(cursor, "0-0"))
				break;
		}
	}
	if (c->l.rc && fs_flush_acks(c) && ret >= 0)
		ret = -1;
	if (ret < 0) {
		if (!c->l.rc)
			fs_link_backoff(&c->l);
		return ret;
	}
	return n;
}

/* The value after name K in flat key/value array R (XINFO), or NULL. */
static const redisReply *kv_get(const redisReply *r, const char *k)
{
	size_t i, kl = strlen(k);

	if (r->type != REDIS_REPLY_ARRAY)
		return NULL;
	for (i = 0; i + 1 < r->elements; i += 2)
		if (fs_is_str(r->element[i]) && r->element[i]->len == kl &&
		    !memcmp(r->element[i]->str, k, kl))
			return r->element[i + 1];
	return NULL;
}

static int64_t kv_int(const redisReply *r, const char *k)
{
	const redisReply *v = kv_get(r, k);

	return v && v->type == REDIS_REPLY_INTEGER ? v->integer : -1;
}

/*
 * LAG of one shard from its XINFO GROUPS reply GR (an array of key/value
 * arrays, one per group) and XINFO STREAM reply SR (a key/value array).
 */
static void lag_of(const struct fs_consumer *c, const redisReply *gr, const redisReply *sr,
		   struct fs_lag *lag)
{
	const redisReply *mine = NULL;
	int64_t read, added;
	size_t j;

	for (j = 0; j < gr->elements && !mine; j++) {
		const redisReply *name = kv_get(gr->element[j], "name");

		if (name && fs_is_str(name) && name->len == strlen(c->group) &&
		    !memcmp(name->str, c->group, name->len))
			mine = gr->element[j];
	}
	lag->length = kv_int(sr, "length");
	if (mine) {
		lag->pending = kv_int(mine, "pending");
		lag->lag = kv_int(mine, "lag");
		read = kv_int(mine, "entries-read");
		added = kv_int(sr, "entries-added");
		/* Redis 7 says nil when trims make it unsure */
		if (lag->lag < 0 && read >= 0 && added >= read)
			lag->lag = added - read;
	}
}

int fs_consumer_lag(struct fs_consumer *c, struct fs_lag *lag)
{
	struct sigpipe_guard g;
	unsigned i;
	int ret = 0;

	if (!c->l.rc && fs_consumer_reconnect(c, 0))
		return -1;
	if (fs_link_set_timeout(&c->l, FS_IO_TIMEOUT_MS))
		return -1;
	for (i = 0; i < c->nshards; i++) {
		const char *a1[3] = { "XINFO", "GROUPS", c->keys[i] };
		const char *a2[3] = { "XINFO", "STREAM", c->keys[i] };

		if (redisAppendCommandArgv(c->l.rc, 3, a1, NULL) != REDIS_OK ||
		    redisAppendCommandArgv(c->l.rc, 3, a2, NULL) != REDIS_OK) {
			snprintf(c->l.err, sizeof(c->l.err), "%s: XINFO: out of memory",
				 c->l.url);
			fs_link_drop(&c->l);
			return -1;
		}
	}
	fs_sigpipe_block(&g);
	for (i = 0; i < c->nshards; i++) {
		redisReply *gr = NULL, *sr = NULL;
		void *rv;

		lag[i].lag = lag[i].pending = lag[i].length = -1;
		if (redisGetReply(c->l.rc, &rv) != REDIS_OK || !(gr = rv) ||
		    redisGetReply(c->l.rc, &rv) != REDIS_OK || !(sr = rv)) {
			snprintf(c->l.err, sizeof(c->l.err), "%s: XINFO: %s", c->l.url,
				 c->l.rc->errstr[0] ? c->l.rc->errstr :
				 "connection lost");
			if (gr)
				freeReplyObject(gr);
			ret = -1;
			break;
		}
		if (gr->type != REDIS_REPLY_ARRAY || sr->type != REDIS_REPLY_ARRAY) {
			if (!ret)
				snprintf(c->l.err, sizeof(c->l.err), "%s: XINFO %s: %.*s",
					 c->l.url, c->keys[i],
					 (int)(gr->type == REDIS_REPLY_ERROR ? gr->len :
					       sr->type == REDIS_REPLY_ERROR ? sr->len : 0),
					 gr->type == REDIS_REPLY_ERROR ? gr->str :
					 sr->type == REDIS_REPLY_ERROR ? sr->str : "");
			ret = ret ? ret : -2;
			freeReplyObject(gr);
			freeReplyObject(sr);
			continue;
		}
		lag_of(c, gr, sr, &lag[i]);
		freeReplyObject(gr);
		freeReplyObject(sr);
	}
	fs_sigpipe_restore(&g);
	if (ret == -1)
		fs_link_drop(&c->l);
	return ret ? -1 : 0;
}
