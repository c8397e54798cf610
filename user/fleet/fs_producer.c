// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The producer of the fleet transport (fleet_stream.h).  It keeps every
 * record in a FIFO until Redis has replied to its XADD, so a lost
 * connection loses nothing that fits the buffer: the records whose replies
 * did not come back are sent again after the reconnect (and may then
 * exist twice; consumers dedupe on node/inst/seq).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <hiredis/hiredis.h>
#include "errbuf.h"
#include "fleet_mac.h"
#include "fs_int.h"
#include "sha256.h"

#define FLUSH_CHUNK	1024	/* XADDs per pipelined round trip */
#define DEFAULT_BUFFER	(64u << 20)

/* ---- producer ------------------------------------------------------------ */

struct rec {
	uint64_t seq;
	unsigned shard;
	size_t len;
	char *data;
};

struct fs_producer {
	struct link l;
	bool tags;		/* tag every record with mk */
	struct hmac_sha256_key mk;
	char *node;
	unsigned nshards;
	char (*keys)[KEY_LEN];
	size_t max_bytes;
	size_t maxlen;
	unsigned batch_records;
	size_t batch_bytes;
	unsigned batch_ms;
	/* FIFO ring of records not yet acknowledged by Redis */
	struct rec *q;
	size_t cap, head, count, bytes;
	uint64_t last_flush_ns;
	uint64_t down_since_ns;	/* 0 while connected */
	uint64_t longest_gap_ns;
	uint64_t inst, next_seq;
	uint64_t accepted, sent, dropped, reconnects, errors;
};
static char (*make_keys(unsigned n))[KEY_LEN]
{
	return fs_make_keys_step(n, 0, 1);
}
static uint64_t make_inst(void)
{
	uint64_t v;
	struct timespec ts;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == sizeof(v) && v)
		return v;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec) ^
	       ((uint64_t)getpid() << 40);
}

struct fs_producer *fs_producer_new(const char *url, const struct fs_cred *cred,
				    const char *node, unsigned nshards,
				    size_t max_buffer_bytes, char *err, size_t errlen)
{
	struct fs_producer *p;

	if (!node || !*node) {
		put_err(err, errlen, "fleet producer: empty node name");
		return NULL;
	}
	if (nshards < 1 || nshards > FS_MAX_SHARDS) {
		put_err(err, errlen, "fleet producer: %u shards (1..%d)", nshards,
			FS_MAX_SHARDS);
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		put_err(err, errlen, "fleet producer: out of memory");
		return NULL;
	}
	if (fs_link_init(&p->l, url, cred, err, errlen))
		goto fail;
	if (cred && cred->keylen) {
		hmac_sha256_key(&p->mk, cred->key, cred->keylen);
		p->tags = true;
	}
	p->node = strdup(node);
	p->keys = make_keys(nshards);
	if (!p->node || !p->keys) {
		put_err(err, errlen, "fleet producer: out of memory");
		goto fail;
	}
	p->nshards = nshards;
	p->max_bytes = max_buffer_bytes ? max_buffer_bytes : DEFAULT_BUFFER;
	p->maxlen = FS_DEFAULT_MAXLEN;
	p->batch_records = FS_DEFAULT_BATCH_RECORDS;
	p->batch_bytes = FS_DEFAULT_BATCH_BYTES;
	if (p->batch_bytes > p->max_bytes / 2)
		p->batch_bytes = p->max_bytes / 2 ? p->max_bytes / 2 : 1;
	p->batch_ms = FS_DEFAULT_BATCH_MS;
	p->inst = make_inst();
	p->next_seq = 1;
	if (fs_link_open(&p->l)) {
		put_err(err, errlen, "%s", p->l.err);
		goto fail;
	}
	p->last_flush_ns = fs_now_ns();
	return p;
fail:
	fs_producer_free(p);
	return NULL;
}

void fs_producer_set_trim(struct fs_producer *p, size_t maxlen)
{
	p->maxlen = maxlen;
}

void fs_producer_set_batch(struct fs_producer *p, unsigned records,
			   size_t bytes, unsigned ms)
{
	if (records)
		p->batch_records = records;
	if (bytes)
		p->batch_bytes = bytes < p->max_bytes ? bytes : p->max_bytes;
	if (ms)
		p->batch_ms = ms;
}

static struct rec *q_at(struct fs_producer *p, size_t i)
{
	return &p->q[(p->head + i) % p->cap];
}

static void q_drop_head(struct fs_producer *p)
{
	struct rec *r = q_at(p, 0);

	p->bytes -= r->len;
	free(r->data);
	r->data = NULL;
	p->head = (p->head + 1) % p->cap;
	p->count--;
}

static int q_grow(struct fs_producer *p)
{
	size_t ncap = p->cap ? p->cap * 2 : 256, i;
	struct rec *nq = malloc(ncap * sizeof(*nq));

	if (!nq)
		return -1;
	for (i = 0; i < p->count; i++)
		nq[i] = *q_at(p, i);
	free(p->q);
	p->q = nq;
	p->cap = ncap;
	p->head = 0;
	return 0;
}

/*
 * Removes the records among the first N of the queue whose OK[i] is set,
 * keeping the others in order at the head.
 */
static void q_remove_sent(struct fs_producer *p, size_t n, const bool *ok)
{
	size_t i = n, j = n, kept = 0;

	while (i-- > 0) {
		struct rec *r = q_at(p, i);

		if (ok[i]) {
			p->bytes -= r->len;
			free(r->data);
			r->data = NULL;
		} else {
			*q_at(p, --j) = *r;
			kept++;
		}
	}
	p->head = (p->head + (n - kept)) % p->cap;
	p->count -= n - kept;
}

static void producer_down(struct fs_producer *p)
{
	p->errors++;
	if (!p->l.rc && !p->down_since_ns)
		p->down_since_ns = fs_now_ns();
	fs_link_backoff(&p->l);
}

static int append_xadd(struct fs_producer *p, const struct rec *r,
		       const char *ml, const char *inst)
{
	char seq[24], tag[FM_TAG_HEX + 1];
	const char *argv[16];
	size_t lens[16];
	int n = 0;

	snprintf(seq, sizeof(seq), "%" PRIu64, r->seq);
	if (p->tags)
		fleet_mac_tag(&p->mk, p->keys[r->shard], p->node, strlen(p->node),
			      p->inst, r->seq, r->data ? r->data : "", r->len, tag);
#define ARG(s, l) do { argv[n] = (s); lens[n++] = (l); } while (0)
	ARG("XADD", 4);
	ARG(p->keys[r->shard], strlen(p->keys[r->shard]));
	if (p->maxlen) {
		ARG("MAXLEN", 6);
		ARG("~", 1);
		ARG(ml, strlen(ml));
	}
	ARG("*", 1);
	ARG("node", 4);
	ARG(p->node, strlen(p->node));
	ARG("inst", 4);
	ARG(inst, strlen(inst));
	ARG("seq", 3);
	ARG(seq, strlen(seq));
	ARG("data", 4);
	ARG(r->data ? r->data : "", r->len);
	if (p->tags) {
		ARG("mac", 3);
		ARG(tag, FM_TAG_HEX);
	}
#undef ARG
	return redisAppendCommandArgv(p->l.rc, n, argv, lens) == REDIS_OK ? 0 : -1;
}

/* One pipelined round trip of up to FLUSH_CHUNK XADDs: 0, or -1. */
static int flush_chunk(struct fs_producer *p)
{
	size_t n = p->count < FLUSH_CHUNK ? p->count : FLUSH_CHUNK, i, nok = 0;
	bool ok[FLUSH_CHUNK];
	char ml[24], inst[24];
	struct sigpipe_guard g;
	bool io_fail = false, reply_fail = false;
	void *rv;

	snprintf(ml, sizeof(ml), "%zu", p->maxlen);
	snprintf(inst, sizeof(inst), "%" PRIu64, p->inst);
	for (i = 0; i < n; i++) {
		if (append_xadd(p, q_at(p, i), ml, inst)) {
			/* only out of memory: the context is unusable */
			snprintf(p->l.err, sizeof(p->l.err), "%s: XADD: out of memory",
				 p->l.url);
			fs_link_drop(&p->l);
			producer_down(p);
			return -1;
		}
	}
	fs_sigpipe_block(&g);
	for (i = 0; i < n; i++) {
		redisReply *r;

		ok[i] = false;
		if (io_fail)
			continue;
		if (redisGetReply(p->l.rc, &rv) != REDIS_OK || !rv) {
			snprintf(p->l.err, sizeof(p->l.err), "%s: XADD: %s", p->l.url,
				 p->l.rc->errstr[0] ? p->l.rc->errstr :
				 "connection lost");
			io_fail = true;
			continue;
		}
		r = rv;
		if (r->type == REDIS_REPLY_STRING) {
			ok[i] = true;
			nok++;
		} else if (!reply_fail) {
			reply_fail = true;
			if (r->type == REDIS_REPLY_ERROR)
				snprintf(p->l.err, sizeof(p->l.err), "%s: XADD: %.*s",
					 p->l.url, (int)r->len, r->str);
			else
				snprintf(p->l.err, sizeof(p->l.err),
					 "%s: XADD: unexpected reply type %d",
					 p->l.url, r->type);
		}
		freeReplyObject(r);
	}
	fs_sigpipe_restore(&g);
	q_remove_sent(p, n, ok);
	p->sent += nok;
	if (io_fail)
		fs_link_drop(&p->l);
	if (io_fail || reply_fail) {
		producer_down(p);
		return -1;
	}
	return 0;
}

int fs_flush(struct fs_producer *p)
{
	uint64_t now = fs_now_ns();

	if (!p->count)
		return 0;
	if (now < p->l.next_try_ns)
		return -1;
	p->last_flush_ns = now;
	if (!p->l.rc) {
		if (fs_link_open(&p->l)) {
			producer_down(p);
			return -1;
		}
		p->reconnects++;
		if (p->down_since_ns) {
			uint64_t gap = fs_now_ns() - p->down_since_ns;

			if (gap > p->longest_gap_ns)
				p->longest_gap_ns = gap;
			p->down_since_ns = 0;
		}
	}
	while (p->count)
		if (flush_chunk(p))
			return -1;
	p->l.backoff_ms = FS_BACKOFF_MIN_MS;
	return 0;
}

int fs_send(struct fs_producer *p, uint64_t shard_key, const void *rec,
	    size_t len)
{
	struct rec *r;
	char *copy = NULL;

	if (len > p->max_bytes) {
		errno = EMSGSIZE;
		return -1;
	}
	if (len) {
		copy = malloc(len);
		if (!copy) {
			errno = ENOMEM;
			return -1;
		}
		memcpy(copy, rec, len);
	}
	if (p->count == p->cap && q_grow(p)) {
		free(copy);
		errno = ENOMEM;
		return -1;
	}
	if (p->bytes + len > p->max_bytes)
		fs_flush(p);
	while (p->count && p->bytes + len > p->max_bytes) {
		q_drop_head(p);
		p->dropped++;
	}
	r = q_at(p, p->count);
	r->seq = p->next_seq++;
	r->shard = shard_key % p->nshards;
	r->len = len;
	r->data = copy;
	p->count++;
	p->bytes += len;
	p->accepted++;
	if (p->count >= p->batch_records || p->bytes >= p->batch_bytes ||
	    fs_now_ns() - p->last_flush_ns >= (uint64_t)p->batch_ms * 1000000)
		fs_flush(p);
	return 0;
}

void fs_producer_stats(const struct fs_producer *p,
		       struct fs_producer_stats *st)
{
	uint64_t gap = p->longest_gap_ns;

	memset(st, 0, sizeof(*st));
	if (p->down_since_ns && fs_now_ns() - p->down_since_ns > gap)
		gap = fs_now_ns() - p->down_since_ns;
	st->accepted = p->accepted;
	st->sent = p->sent;
	st->buffered = p->count;
	st->buffered_bytes = p->bytes;
	st->dropped = p->dropped;
	st->reconnects = p->reconnects;
	st->errors = p->errors;
	st->gap_seconds = gap / 1e9;
	st->connected = p->l.rc != NULL;
	st->next_seq = p->next_seq;
	st->inst = p->inst;
	snprintf(st->last_error, sizeof(st->last_error), "%s", p->l.err);
}

void fs_producer_free(struct fs_producer *p)
{
	if (!p)
		return;
	while (p->count)
		q_drop_head(p);
	free(p->q);
	fs_link_free(&p->l);
	secure_wipe(&p->mk, sizeof(p->mk));
	free(p->keys);
	free(p->node);
	free(p);
}
