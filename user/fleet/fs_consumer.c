// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The group consumer of the fleet transport (fleet_stream.h): a consumer
 * reads its own pending entries first, then new ones (XREADGROUP), hands
 * each record to the caller and acknowledges what it was told to.
 * fs_backlog.c has the rest: history, stale entries of others, lag.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <hiredis/hiredis.h>
#include "errbuf.h"
#include "fleet_mac.h"
#include "fs_int.h"
#include "sha256.h"

const char *fs_consumer_error(const struct fs_consumer *c)
{
	return c->l.err;
}

void fs_consumer_stats(const struct fs_consumer *c,
		       struct fs_consumer_stats *st)
{
	*st = c->st;
}

/* XGROUP CREATE on every shard (an existing group is kept). */
static int create_groups(struct fs_consumer *c)
{
	unsigned i;

	for (i = 0; i < c->nshards; i++) {
		const char *argv[6] = { "XGROUP", "CREATE", c->keys[i], c->group,
					"0", "MKSTREAM" };
		redisReply *r = fs_link_cmd(&c->l, 6, argv, NULL);

		if (!r)
			return -1;
		if (r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "BUSYGROUP", 9)) {
			freeReplyObject(r);
			continue;
		}
		if (r->type != REDIS_REPLY_STATUS) {
			fs_reply_error(&c->l, r, "XGROUP CREATE");
			return -1;
		}
		freeReplyObject(r);
	}
	return 0;
}

/* (Re)connects and starts over with the own pending entries. */
static int consumer_open(struct fs_consumer *c)
{
	unsigned i;

	if (fs_link_open(&c->l))
		return -1;
	if (create_groups(c)) {
		fs_link_drop(&c->l);
		return -1;
	}
	for (i = 0; i < c->nshards; i++) {
		c->sh[i].pending_phase = true;
		strcpy(c->sh[i].cursor, "0");
		c->sh[i].nacks = 0;
	}
	return 0;
}

struct fs_consumer *fs_consumer_new(const char *url, const struct fs_cred *cred,
				    const char *group, const char *name,
				    unsigned nshards, char *err, size_t errlen)
{
	return fs_consumer_new_part(url, cred, group, name, nshards, 0, 1, err,
				    errlen);
}

unsigned fs_consumer_nshards(const struct fs_consumer *c)
{
	return c->nshards;
}

unsigned fs_consumer_shard(const struct fs_consumer *c, unsigned i)
{
	return c->first + i * c->step;
}

struct fs_consumer *fs_consumer_new_part(const char *url,
					 const struct fs_cred *cred,
					 const char *group, const char *name,
					 unsigned nshards, unsigned part,
					 unsigned nparts, char *err, size_t errlen)
{
	struct fs_consumer *c;
	unsigned mine;

	if (!group || !*group || !name || !*name) {
		put_err(err, errlen, "fleet consumer: empty group or consumer name");
		return NULL;
	}
	if (nshards < 1 || nshards > FS_MAX_SHARDS) {
		put_err(err, errlen, "fleet consumer: %u shards (1..%d)", nshards,
			FS_MAX_SHARDS);
		return NULL;
	}
	if (nparts < 1 || part >= nparts || nparts > nshards) {
		put_err(err, errlen, "fleet consumer: part %u of %u with %u shards (each"
			" part needs a shard)", part, nparts, nshards);
		return NULL;
	}
	mine = (nshards - part + nparts - 1) / nparts;
	c = calloc(1, sizeof(*c));
	if (!c) {
		put_err(err, errlen, "fleet consumer: out of memory");
		return NULL;
	}
	c->first = part;
	c->step = nparts;
	if (fs_link_init(&c->l, url, cred, err, errlen))
		goto fail;
	if (cred && cred->keylen) {
		hmac_sha256_key(&c->mk, cred->key, cred->keylen);
		c->tags = true;
	}
	c->group = strdup(group);
	c->name = strdup(name);
	c->keys = fs_make_keys_step(mine, part, nparts);
	c->sh = calloc(mine, sizeof(*c->sh));
	if (!c->group || !c->name || !c->keys || !c->sh) {
		put_err(err, errlen, "fleet consumer: out of memory");
		goto fail;
	}
	c->nshards = mine;
	if (consumer_open(c)) {
		put_err(err, errlen, "%s", c->l.err);
		goto fail;
	}
	return c;
fail:
	fs_consumer_free(c);
	return NULL;
}

void fs_consumer_free(struct fs_consumer *c)
{
	unsigned i;

	if (!c)
		return;
	fs_link_free(&c->l);
	secure_wipe(&c->mk, sizeof(c->mk));
	if (c->sh)
		for (i = 0; i < c->nshards; i++)
			free(c->sh[i].acks);
	free(c->sh);
	free(c->keys);
	free(c->name);
	free(c->group);
	free(c);
}

static int queue_ack(struct fs_consumer *c, unsigned shard, const char *id)
{
	struct shard *s = &c->sh[shard];

	if (s->nacks == s->capacks) {
		size_t ncap = s->capacks ? s->capacks * 2 : 64;
		void *na = realloc(s->acks, ncap * ID_LEN);

		if (!na) {
			snprintf(c->l.err, sizeof(c->l.err), "%s: out of memory", c->l.url);
			return -1;
		}
		s->acks = na;
		s->capacks = ncap;
	}
	snprintf(s->acks[s->nacks++], ID_LEN, "%s", id);
	return 0;
}

/* XACKs of the queued ids, one pipelined round trip.  0 or -1. */
int fs_flush_acks(struct fs_consumer *c)
{
	struct sigpipe_guard g;
	unsigned i, sent = 0;
	int ret = 0;

	if (!c->l.rc)
		return -1;
	for (i = 0; i < c->nshards; i++) {
		struct shard *s = &c->sh[i];
		const char **argv;
		size_t j;
		int rc;

		if (!s->nacks)
			continue;
		argv = malloc((s->nacks + 3) * sizeof(*argv));
		if (!argv) {
			snprintf(c->l.err, sizeof(c->l.err), "%s: out of memory", c->l.url);
			fs_link_drop(&c->l);	/* the pipeline may be half sent */
			return -1;
		}
		argv[0] = "XACK";
		argv[1] = c->keys[i];
		argv[2] = c->group;
		for (j = 0; j < s->nacks; j++)
			argv[3 + j] = s->acks[j];
		rc = redisAppendCommandArgv(c->l.rc, s->nacks + 3, argv, NULL);
		free(argv);
		if (rc != REDIS_OK) {
			snprintf(c->l.err, sizeof(c->l.err), "%s: XACK: out of memory",
				 c->l.url);
			fs_link_drop(&c->l);
			return -1;
		}
		sent++;
	}
	fs_sigpipe_block(&g);
	for (i = 0; i < sent; i++) {
		void *rv;
		redisReply *r;

		if (redisGetReply(c->l.rc, &rv) != REDIS_OK || !rv) {
			snprintf(c->l.err, sizeof(c->l.err), "%s: XACK: %s", c->l.url,
				 c->l.rc->errstr[0] ? c->l.rc->errstr :
				 "connection lost");
			ret = -1;
			break;
		}
		r = rv;
		if (r->type == REDIS_REPLY_INTEGER) {
			c->st.acked += r->integer;
			freeReplyObject(r);
		} else {
			fs_reply_error(&c->l, r, "XACK");
			ret = -1;
		}
	}
	fs_sigpipe_restore(&g);
	if (ret && i < sent)
		fs_link_drop(&c->l);
	for (i = 0; i < c->nshards; i++)
		c->sh[i].nacks = 0;
	return ret;
}

/* The id just below ID, so that reading "after" it returns ID again. */
static void id_prev(const char *id, char *out)
{
	unsigned long long ms, seq;

	if (sscanf(id, "%llu-%llu", &ms, &seq) != 2)
		strcpy(out, "0");
	else if (seq)
		snprintf(out, ID_LEN, "%llu-%llu", ms, seq - 1);
	else if (ms)
		snprintf(out, ID_LEN, "%llu-%llu", ms - 1, ULLONG_MAX);
	else
		strcpy(out, "0");
}

bool fs_is_str(const redisReply *r)
{
	return r && (r->type == REDIS_REPLY_STRING ||
		     r->type == REDIS_REPLY_STATUS);
}

static int parse_u64(const redisReply *r, uint64_t *v)
{
	char buf[24], *end;

	if (!fs_is_str(r) || !r->len || r->len >= sizeof(buf))
		return -1;
	memcpy(buf, r->str, r->len);
	buf[r->len] = '\0';
	errno = 0;
	*v = strtoull(buf, &end, 10);
	return errno || *end || buf[0] == '-' ? -1 : 0;
}

/* The id of stream entry E ([id, fields]), NULL if E is not one */
const char *fs_entry_id(const redisReply *e)
{
	return e->type == REDIS_REPLY_ARRAY && e->elements >= 1 && fs_is_str(e->element[0]) ?
	       e->element[0]->str : NULL;
}

/*
 * Fills REC from stream entry E ([id, [field, value, ...]]) and *MAC with
 * its tag field (NULL if none).  1 if it is a record, 0 if trimmed away
 * (nil fields), -1 if malformed.
 */
int fs_parse_entry(const redisReply *e, struct fs_record *rec,
		   char *node, size_t nodelen, const redisReply **mac)
{
	const redisReply *f, *nd = NULL, *inst = NULL, *seq = NULL, *data = NULL;
	size_t i;

	*mac = NULL;

	if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 || !fs_is_str(e->element[0]))
		return -1;
	rec->id = e->element[0]->str;
	f = e->element[1];
	if (f->type == REDIS_REPLY_NIL)
		return 0;
	if (f->type != REDIS_REPLY_ARRAY || f->elements % 2)
		return -1;
	for (i = 0; i + 1 < f->elements; i += 2) {
		const redisReply *k = f->element[i], *v = f->element[i + 1];

		if (!fs_is_str(k) || !fs_is_str(v))
			return -1;
		if (k->len == 4 && !memcmp(k->str, "node", 4))
			nd = v;
		else if (k->len == 4 && !memcmp(k->str, "inst", 4))
			inst = v;
		else if (k->len == 3 && !memcmp(k->str, "seq", 3))
			seq = v;
		else if (k->len == 4 && !memcmp(k->str, "data", 4))
			data = v;
		else if (k->len == 3 && !memcmp(k->str, "mac", 3))
			*mac = v;
	}
	if (!nd || !inst || !seq || !data || nd->len >= nodelen ||
	    memchr(nd->str, '\0', nd->len) || parse_u64(inst, &rec->inst) ||
	    parse_u64(seq, &rec->seq))
		return -1;
	memcpy(node, nd->str, nd->len);
	node[nd->len] = '\0';
	rec->node = node;
	rec->data = data->str;
	rec->len = data->len;
	return 1;
}

/*
 * With a key: 0 if REC of local shard SHARD carries its right tag, else 1
 * (no tag) or 2 (a wrong one).  Without a key: 0.
 */
int fs_tag_check(const struct fs_consumer *c, unsigned shard,
		 const struct fs_record *rec, const redisReply *mac)
{
	if (!c->tags)
		return 0;
	if (!mac)
		return 1;
	return fleet_mac_ok(&c->mk, c->keys[shard], rec->node, strlen(rec->node),
			    rec->inst, rec->seq, rec->data, rec->len, mac->str,
			    mac->len) ? 0 : 2;
}

/*
 * Delivers the entries of ENTRIES (an array of stream entries) of SHARD to
 * CB.  *LAST gets the id of the last entry handled.  Returns the number
 * delivered, or CB's negative value (the entry it refused stays pending;
 * the shard goes back to its pending phase just below it).
 */
int fs_deliver(struct fs_consumer *c, unsigned shard,
	       const redisReply *entries, bool redelivery, fs_record_fn cb,
	       void *ctx)
{
	struct shard *s = &c->sh[shard];
	char node[256];
	int n = 0;
	size_t i;

	if (entries->type != REDIS_REPLY_ARRAY)
		return 0;
	for (i = 0; i < entries->elements; i++) {
		struct fs_record rec = { .shard = shard, .redelivery = redelivery };
		const redisReply *mac;
		int k = fs_parse_entry(entries->element[i], &rec, node, sizeof(node), &mac);
		int ret, t = k > 0 ? fs_tag_check(c, shard, &rec, mac) : 0;

		if (t) {
			if (t == 1)
				c->st.untagged++;
			else
				c->st.bad_tag++;
			snprintf(c->st.rejected_node, sizeof(c->st.rejected_node), "%s",
				 rec.node);
			k = -2;
		}
		if (k <= 0) {
			if (!rec.id)	/* not even an id: nothing to ack */
				continue;
			if (k == 0)
				c->st.trimmed++;
			else if (k == -1)
				c->st.malformed++;
			if (queue_ack(c, shard, rec.id))
				return -1;
			if (s->pending_phase)
				snprintf(s->cursor, ID_LEN, "%s", rec.id);
			continue;
		}
		ret = cb(ctx, &rec);
		if (ret < 0) {
			s->pending_phase = true;
			id_prev(rec.id, s->cursor);
			return ret;
		}
		n++;
		c->st.delivered++;
		if (s->pending_phase)
			snprintf(s->cursor, ID_LEN, "%s", rec.id);
		if (ret > 0 && queue_ack(c, shard, rec.id))
			return -1;
	}
	return n;
}

/* Shard number of stream key R, or -1. */
static int key_shard(const struct fs_consumer *c, const redisReply *r)
{
	size_t pl = strlen(FS_STREAM_PREFIX);
	uint64_t v = 0;
	size_t i;

	if (!fs_is_str(r) || r->len <= pl || r->len > pl + 5 ||
	    memcmp(r->str, FS_STREAM_PREFIX, pl))
		return -1;
	for (i = pl; i < r->len; i++) {
		if (r->str[i] < '0' || r->str[i] > '9')
			return -1;
		v = v * 10 + (r->str[i] - '0');
	}
	if (v < c->first || (v - c->first) % c->step)
		return -1;
	v = (v - c->first) / c->step;
	return v < c->nshards ? (int)v : -1;
}

/*
 * The reply R of an XREADGROUP (PENDING: of the own pending entries): an
 * array of [stream key, entries] pairs or nil.  Delivers its records to
 * CB and marks in SEEN the shards that had entries.  Returns the records
 * delivered, or CB's negative value.
 */
static int read_group_reply(struct fs_consumer *c, const redisReply *r, bool pending, bool *seen,
			    fs_record_fn cb, void *ctx)
{
	int n = 0, ret = 0;
	size_t j;

	if (r->type == REDIS_REPLY_ARRAY) {
		for (j = 0; j < r->elements; j++) {
			const redisReply *st = r->element[j];
			int shard, k;

			if (st->type != REDIS_REPLY_ARRAY || st->elements != 2 ||
			    (shard = key_shard(c, st->element[0])) < 0)
				continue;
			if (st->element[1]->type == REDIS_REPLY_ARRAY &&
			    st->element[1]->elements)
				seen[shard] = true;
			k = fs_deliver(c, shard, st->element[1], pending, cb, ctx);
			if (k < 0) {
				ret = k;
				/* later streams of this reply were read but
				 * not delivered: read them again from the
				 * pending list */
				for (j++; j < r->elements; j++) {
					const redisReply *s2 = r->element[j];
					int sh2;

					const char *id;

					if (s2->type != REDIS_REPLY_ARRAY ||
					    s2->elements != 2 ||
					    (sh2 = key_shard(c, s2->element[0])) < 0 ||
					    s2->element[1]->type != REDIS_REPLY_ARRAY ||
					    !s2->element[1]->elements ||
					    !(id = fs_entry_id(s2->element[1]->element[0])))
						continue;
					if (c->sh[sh2].pending_phase)
						continue;
					c->sh[sh2].pending_phase = true;
					id_prev(id, c->sh[sh2].cursor);
				}
				break;
			}
			n += k;
		}
	}
	return ret < 0 ? ret : n;
}

/*
 * One XREADGROUP: PENDING reads the own pending entries of the shards in
 * their pending phase (no blocking), otherwise new entries of all shards
 * waiting up to TIMEOUT_MS.  Returns records delivered, CB's negative
 * value, or -1 (l.err).
 */
static int read_group(struct fs_consumer *c, bool pending, int timeout_ms,
		      fs_record_fn cb, void *ctx)
{
	unsigned nsh = 0, i;
	const char **argv;
	char count[16], block[16];
	int argc = 0, n = 0, ret = 0;
	bool *seen;
	redisReply *r;

	argv = malloc((10 + 2 * (size_t)c->nshards) * sizeof(*argv));
	seen = calloc(c->nshards, sizeof(*seen));
	if (!argv || !seen) {
		snprintf(c->l.err, sizeof(c->l.err), "%s: out of memory", c->l.url);
		ret = -1;
		goto out;
	}
	snprintf(count, sizeof(count), "%d", READ_COUNT);
	snprintf(block, sizeof(block), "%d", timeout_ms);
	argv[argc++] = "XREADGROUP";
	argv[argc++] = "GROUP";
	argv[argc++] = c->group;
	argv[argc++] = c->name;
	argv[argc++] = "COUNT";
	argv[argc++] = count;
	if (!pending && timeout_ms > 0) {
		argv[argc++] = "BLOCK";
		argv[argc++] = block;
	}
	argv[argc++] = "STREAMS";
	for (i = 0; i < c->nshards; i++)
		if (!pending || c->sh[i].pending_phase) {
			argv[argc++] = c->keys[i];
			nsh++;
		}
	for (i = 0; i < c->nshards; i++)
		if (!pending)
			argv[argc++] = ">";
		else if (c->sh[i].pending_phase)
			argv[argc++] = c->sh[i].cursor;
	if (!nsh)
		goto out;
	if (fs_link_set_timeout(&c->l, FS_IO_TIMEOUT_MS +
				(!pending && timeout_ms > 0 ? timeout_ms : 0))) {
		ret = -1;
		goto out;
	}
	r = fs_link_cmd(&c->l, argc, argv, NULL);
	if (!r) {
		ret = -1;
		goto out;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		bool nogroup = !strncmp(r->str, "NOGROUP", 7);

		fs_reply_error(&c->l, r, "XREADGROUP");
		/* the streams were deleted or Redis restarted empty */
		if (nogroup && create_groups(c) == 0)
			for (i = 0; i < c->nshards; i++) {
				c->sh[i].pending_phase = true;
				strcpy(c->sh[i].cursor, "0");
			}
		ret = -1;
		goto out;
	}
	if (r->type != REDIS_REPLY_ARRAY && r->type != REDIS_REPLY_NIL) {
		fs_reply_error(&c->l, r, "XREADGROUP");
		ret = -1;
		goto out;
	}
	ret = read_group_reply(c, r, pending, seen, cb, ctx);
	n = ret > 0 ? ret : 0;
	freeReplyObject(r);
	/* a shard whose pending list gave nothing more moves on to ">" */
	if (pending && ret >= 0)
		for (i = 0; i < c->nshards; i++)
			if (c->sh[i].pending_phase && !seen[i])
				c->sh[i].pending_phase = false;
out:
	free(argv);
	free(seen);
	return ret < 0 ? ret : n;
}

static bool any_pending(const struct fs_consumer *c)
{
	unsigned i;

	for (i = 0; i < c->nshards; i++)
		if (c->sh[i].pending_phase)
			return true;
	return false;
}

/* Reconnects if the backoff allows, waiting for it within TIMEOUT_MS. */
int fs_consumer_reconnect(struct fs_consumer *c, int timeout_ms)
{
	uint64_t now = fs_now_ns(), wait;
	struct timespec ts;

	if (now < c->l.next_try_ns) {
		/* wait for the backoff, but not longer than the caller allows:
		 * a caller looping on fs_consume does not spin meanwhile */
		wait = c->l.next_try_ns - now;
		if (wait > (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000) {
			ts.tv_sec = timeout_ms > 0 ? timeout_ms / 1000 : 0;
			ts.tv_nsec = timeout_ms > 0 ? timeout_ms % 1000 * 1000000 : 0;
			while (nanosleep(&ts, &ts) && errno == EINTR)
				;
			return -1;
		}
		ts.tv_sec = wait / 1000000000;
		ts.tv_nsec = wait % 1000000000;
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	if (consumer_open(c)) {
		fs_link_backoff(&c->l);
		return -1;
	}
	c->st.reconnects++;
	return 0;
}

int fs_consume(struct fs_consumer *c, int timeout_ms, fs_record_fn cb,
	       void *ctx)
{
	int n = 0, r = 0;

	if (!c->l.rc && fs_consumer_reconnect(c, timeout_ms))
		return -1;
	while (any_pending(c)) {
		r = read_group(c, true, 0, cb, ctx);
		if (r < 0)
			goto out;
		n += r;
		if (n)
			goto out;
	}
	r = read_group(c, false, timeout_ms, cb, ctx);
	if (r > 0)
		n += r;
out:
	if (c->l.rc && fs_flush_acks(c) && r >= 0)
		r = -1;
	if (r < 0) {
		if (!c->l.rc)
			fs_link_backoff(&c->l);
		return r;
	}
	return n;
}

int fs_ack(struct fs_consumer *c, unsigned shard, const char *id)
{
	const char *argv[4];
	redisReply *r;

	if (shard >= c->nshards) {
		snprintf(c->l.err, sizeof(c->l.err), "fs_ack: shard %u of %u", shard,
			 c->nshards);
		return -1;
	}
	argv[0] = "XACK";
	argv[1] = c->keys[shard];
	argv[2] = c->group;
	argv[3] = id;
	if (fs_link_set_timeout(&c->l, FS_IO_TIMEOUT_MS))
		return -1;
	r = fs_link_cmd(&c->l, 4, argv, NULL);
	if (!r)
		return -1;
	if (r->type != REDIS_REPLY_INTEGER) {
		fs_reply_error(&c->l, r, "XACK");
		return -1;
	}
	c->st.acked += r->integer;
	freeReplyObject(r);
	return 0;
}
