// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Fleet transport over Redis Streams; fleet_stream.h is the interface and
 * docs/fleet.md the stream layout.  Everything is synchronous hiredis
 * (0.14 and later: RESP2 replies only).
 *
 * The producer keeps every record in a FIFO until Redis has replied to its
 * XADD, so a lost connection loses nothing that fits the buffer: the
 * records whose replies did not come back are sent again after the
 * reconnect (and may then exist twice; consumers dedupe on node/inst/seq).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <hiredis/hiredis.h>
#include "errbuf.h"
#include "fleet_stream.h"

#define FLUSH_CHUNK	1024	/* XADDs per pipelined round trip */
#define READ_COUNT	256	/* XREADGROUP / XAUTOCLAIM COUNT per stream */
#define DEFAULT_BUFFER	(64u << 20)
#define KEY_LEN		32
#define ID_LEN		48	/* "<u64>-<u64>" */

static uint64_t now_ns(void)
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

/*
 * hiredis writes with write(2): a peer that went away raises SIGPIPE.  It
 * is blocked in this thread during our I/O and a SIGPIPE that we caused is
 * taken off the pending set before the mask is restored.
 */
struct sigpipe_guard {
	sigset_t old;
	bool was_pending;
};

static void sigpipe_block(struct sigpipe_guard *g)
{
	sigset_t set, pend;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	g->was_pending = !sigpending(&pend) && sigismember(&pend, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, &g->old);
}

static void sigpipe_restore(struct sigpipe_guard *g)
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
	if (memchr(p, '@', end - p)) {
		put_err(err, errlen, "%s: bad Redis URL: user or password in the URL are not supported",
			url);
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

struct link {
	struct fs_url u;
	char url[200];		/* as given, for messages */
	redisContext *rc;
	uint64_t next_try_ns;	/* no (re)connect or flush before */
	unsigned backoff_ms;
	unsigned io_ms;		/* socket timeout now set */
	char err[512];
};

static int link_init(struct link *l, const char *url, char *err,
		     size_t errlen)
{
	memset(l, 0, sizeof(*l));
	if (fs_parse_url(url, &l->u, err, errlen))
		return -1;
	snprintf(l->url, sizeof(l->url), "%s", url);
	l->backoff_ms = FS_BACKOFF_MIN_MS;
	return 0;
}

static void link_drop(struct link *l)
{
	if (l->rc)
		redisFree(l->rc);
	l->rc = NULL;
}

/* After a failure: no new attempt for the backoff time, which doubles. */
static void link_backoff(struct link *l)
{
	l->next_try_ns = now_ns() + (uint64_t)l->backoff_ms * 1000000;
	l->backoff_ms *= 2;
	if (l->backoff_ms > FS_BACKOFF_MAX_MS)
		l->backoff_ms = FS_BACKOFF_MAX_MS;
}

static int link_set_timeout(struct link *l, unsigned ms)
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
static redisReply *link_cmd(struct link *l, int argc, const char **argv,
			    const size_t *lens)
{
	struct sigpipe_guard g;
	redisReply *r;

	if (!l->rc) {
		snprintf(l->err, sizeof(l->err), "%s: not connected", l->url);
		return NULL;
	}
	sigpipe_block(&g);
	r = redisCommandArgv(l->rc, argc, argv, lens);
	sigpipe_restore(&g);
	if (!r) {
		snprintf(l->err, sizeof(l->err), "%s: %s: %s", l->url, argv[0],
			 l->rc->errstr[0] ? l->rc->errstr : "connection lost");
		link_drop(l);
	}
	return r;
}

/* Records an error reply R of command WHAT in l->err and frees R. */
static void reply_error(struct link *l, redisReply *r, const char *what)
{
	if (r->type == REDIS_REPLY_ERROR)
		snprintf(l->err, sizeof(l->err), "%s: %s: %.*s", l->url, what,
			 (int)r->len, r->str);
	else
		snprintf(l->err, sizeof(l->err), "%s: %s: unexpected reply type %d",
			 l->url, what, r->type);
	freeReplyObject(r);
}

static int link_open(struct link *l)
{
	struct sigpipe_guard g;
	struct timeval tv = ms_tv(FS_CONNECT_TIMEOUT_MS);
	redisContext *rc;
	redisReply *r;
	char db[16];
	const char *argv[2] = { "SELECT", db };

	link_drop(l);
	sigpipe_block(&g);
	if (l->u.is_unix)
		rc = redisConnectUnixWithTimeout(l->u.path, tv);
	else
		rc = redisConnectWithTimeout(l->u.host, l->u.port, tv);
	sigpipe_restore(&g);
	if (!rc || rc->err) {
		snprintf(l->err, sizeof(l->err), "%s: cannot connect: %s", l->url,
			 rc ? rc->errstr : "out of memory");
		if (rc)
			redisFree(rc);
		return -1;
	}
	l->rc = rc;
	l->io_ms = 0;
	if (link_set_timeout(l, FS_IO_TIMEOUT_MS))
		goto fail;
	redisEnableKeepAlive(rc);
	if (l->u.db) {
		snprintf(db, sizeof(db), "%d", l->u.db);
		r = link_cmd(l, 2, argv, NULL);
		if (!r)
			goto fail;
		if (r->type != REDIS_REPLY_STATUS) {
			reply_error(l, r, "SELECT");
			goto fail;
		}
		freeReplyObject(r);
	}
	l->backoff_ms = FS_BACKOFF_MIN_MS;
	l->next_try_ns = 0;
	return 0;
fail:
	link_drop(l);
	return -1;
}

/* ---- plain connection ---------------------------------------------------- */

struct fs_conn {
	struct link l;
};

struct fs_conn *fs_connect(const char *url, char *err, size_t errlen)
{
	struct fs_conn *c = calloc(1, sizeof(*c));

	if (!c) {
		put_err(err, errlen, "%s: out of memory", url);
		return NULL;
	}
	if (link_init(&c->l, url, err, errlen))
		goto fail;
	if (link_open(&c->l)) {
		put_err(err, errlen, "%s", c->l.err);
		goto fail;
	}
	return c;
fail:
	free(c);
	return NULL;
}

void fs_close(struct fs_conn *c)
{
	if (!c)
		return;
	link_drop(&c->l);
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
			if (now_ns() < c->l.next_try_ns)
				return NULL;	/* l.err still says why */
			if (link_open(&c->l)) {
				link_backoff(&c->l);
				return NULL;
			}
		}
		r = link_cmd(&c->l, argc, argv, lens);
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
		reply_error(&c->l, r, "XADD");
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
		reply_error(&c->l, r, "SET NX");
		return -1;
	}
	freeReplyObject(r);
	return won;
}

/* ---- producer ------------------------------------------------------------ */

struct rec {
	uint64_t seq;
	unsigned shard;
	size_t len;
	char *data;
};

struct fs_producer {
	struct link l;
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

/* keys of shards FIRST, FIRST + STEP, ... (N of them) */
static char (*make_keys_step(unsigned n, unsigned first, unsigned step))[KEY_LEN]
{
	char (*k)[KEY_LEN] = calloc(n, KEY_LEN);
	unsigned i;

	if (!k)
		return NULL;
	for (i = 0; i < n; i++)
		snprintf(k[i], KEY_LEN, FS_STREAM_PREFIX "%u", first + i * step);
	return k;
}

static char (*make_keys(unsigned n))[KEY_LEN]
{
	return make_keys_step(n, 0, 1);
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

struct fs_producer *fs_producer_new(const char *url, const char *node,
				    unsigned nshards, size_t max_buffer_bytes,
				    char *err, size_t errlen)
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
	if (link_init(&p->l, url, err, errlen))
		goto fail;
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
	if (link_open(&p->l)) {
		put_err(err, errlen, "%s", p->l.err);
		goto fail;
	}
	p->last_flush_ns = now_ns();
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
		p->down_since_ns = now_ns();
	link_backoff(&p->l);
}

static int append_xadd(struct fs_producer *p, const struct rec *r,
		       const char *ml, const char *inst)
{
	char seq[24];
	const char *argv[14];
	size_t lens[14];
	int n = 0;

	snprintf(seq, sizeof(seq), "%" PRIu64, r->seq);
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
			link_drop(&p->l);
			producer_down(p);
			return -1;
		}
	}
	sigpipe_block(&g);
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
	sigpipe_restore(&g);
	q_remove_sent(p, n, ok);
	p->sent += nok;
	if (io_fail)
		link_drop(&p->l);
	if (io_fail || reply_fail) {
		producer_down(p);
		return -1;
	}
	return 0;
}

int fs_flush(struct fs_producer *p)
{
	uint64_t now = now_ns();

	if (!p->count)
		return 0;
	if (now < p->l.next_try_ns)
		return -1;
	p->last_flush_ns = now;
	if (!p->l.rc) {
		if (link_open(&p->l)) {
			producer_down(p);
			return -1;
		}
		p->reconnects++;
		if (p->down_since_ns) {
			uint64_t gap = now_ns() - p->down_since_ns;

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
	    now_ns() - p->last_flush_ns >= (uint64_t)p->batch_ms * 1000000)
		fs_flush(p);
	return 0;
}

void fs_producer_stats(const struct fs_producer *p,
		       struct fs_producer_stats *st)
{
	uint64_t gap = p->longest_gap_ns;

	memset(st, 0, sizeof(*st));
	if (p->down_since_ns && now_ns() - p->down_since_ns > gap)
		gap = now_ns() - p->down_since_ns;
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
	link_drop(&p->l);
	free(p->keys);
	free(p->node);
	free(p);
}

/* ---- consumer ------------------------------------------------------------ */

struct shard {
	bool pending_phase;	/* reading own pending entries after CURSOR */
	char cursor[ID_LEN];
	char (*acks)[ID_LEN];	/* to XACK at the end of the call */
	size_t nacks, capacks;
};

struct fs_consumer {
	struct link l;
	char *group, *name;
	unsigned nshards;	/* shards this consumer reads */
	unsigned first, step;	/* local shard i is stream first + i * step */
	char (*keys)[KEY_LEN];
	struct shard *sh;
	struct fs_consumer_stats st;
};

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
		redisReply *r = link_cmd(&c->l, 6, argv, NULL);

		if (!r)
			return -1;
		if (r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "BUSYGROUP", 9)) {
			freeReplyObject(r);
			continue;
		}
		if (r->type != REDIS_REPLY_STATUS) {
			reply_error(&c->l, r, "XGROUP CREATE");
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

	if (link_open(&c->l))
		return -1;
	if (create_groups(c)) {
		link_drop(&c->l);
		return -1;
	}
	for (i = 0; i < c->nshards; i++) {
		c->sh[i].pending_phase = true;
		strcpy(c->sh[i].cursor, "0");
		c->sh[i].nacks = 0;
	}
	return 0;
}

struct fs_consumer *fs_consumer_new(const char *url, const char *group,
				    const char *name, unsigned nshards,
				    char *err, size_t errlen)
{
	return fs_consumer_new_part(url, group, name, nshards, 0, 1, err, errlen);
}

unsigned fs_consumer_nshards(const struct fs_consumer *c)
{
	return c->nshards;
}

unsigned fs_consumer_shard(const struct fs_consumer *c, unsigned i)
{
	return c->first + i * c->step;
}

struct fs_consumer *fs_consumer_new_part(const char *url, const char *group,
					 const char *name, unsigned nshards,
					 unsigned part, unsigned nparts,
					 char *err, size_t errlen)
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
	if (link_init(&c->l, url, err, errlen))
		goto fail;
	c->group = strdup(group);
	c->name = strdup(name);
	c->keys = make_keys_step(mine, part, nparts);
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
	link_drop(&c->l);
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
static int flush_acks(struct fs_consumer *c)
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
			link_drop(&c->l);	/* the pipeline may be half sent */
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
			link_drop(&c->l);
			return -1;
		}
		sent++;
	}
	sigpipe_block(&g);
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
			reply_error(&c->l, r, "XACK");
			ret = -1;
		}
	}
	sigpipe_restore(&g);
	if (ret && i < sent)
		link_drop(&c->l);
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

static bool is_str(const redisReply *r)
{
	return r && (r->type == REDIS_REPLY_STRING ||
		     r->type == REDIS_REPLY_STATUS);
}

static int parse_u64(const redisReply *r, uint64_t *v)
{
	char buf[24], *end;

	if (!is_str(r) || !r->len || r->len >= sizeof(buf))
		return -1;
	memcpy(buf, r->str, r->len);
	buf[r->len] = '\0';
	errno = 0;
	*v = strtoull(buf, &end, 10);
	return errno || *end || buf[0] == '-' ? -1 : 0;
}

/*
 * Fills REC from stream entry E ([id, [field, value, ...]]).  1 if it is
 * a record, 0 if trimmed away (nil fields), -1 if malformed.
 */
static int parse_entry(const redisReply *e, struct fs_record *rec,
		       char *node, size_t nodelen)
{
	const redisReply *f, *nd = NULL, *inst = NULL, *seq = NULL, *data = NULL;
	size_t i;

	if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 || !is_str(e->element[0]))
		return -1;
	rec->id = e->element[0]->str;
	f = e->element[1];
	if (f->type == REDIS_REPLY_NIL)
		return 0;
	if (f->type != REDIS_REPLY_ARRAY || f->elements % 2)
		return -1;
	for (i = 0; i + 1 < f->elements; i += 2) {
		const redisReply *k = f->element[i], *v = f->element[i + 1];

		if (!is_str(k) || !is_str(v))
			return -1;
		if (k->len == 4 && !memcmp(k->str, "node", 4))
			nd = v;
		else if (k->len == 4 && !memcmp(k->str, "inst", 4))
			inst = v;
		else if (k->len == 3 && !memcmp(k->str, "seq", 3))
			seq = v;
		else if (k->len == 4 && !memcmp(k->str, "data", 4))
			data = v;
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
 * Delivers the entries of ENTRIES (an array of stream entries) of SHARD to
 * CB.  *LAST gets the id of the last entry handled.  Returns the number
 * delivered, or CB's negative value (the entry it refused stays pending;
 * the shard goes back to its pending phase just below it).
 */
static int deliver(struct fs_consumer *c, unsigned shard,
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
		int k = parse_entry(entries->element[i], &rec, node, sizeof(node));
		int ret;

		if (k <= 0) {
			if (!rec.id)	/* not even an id: nothing to ack */
				continue;
			if (k == 0)
				c->st.trimmed++;
			else
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

	if (!is_str(r) || r->len <= pl || r->len > pl + 5 ||
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
	size_t j;

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
	if (link_set_timeout(&c->l, FS_IO_TIMEOUT_MS +
			     (!pending && timeout_ms > 0 ? timeout_ms : 0))) {
		ret = -1;
		goto out;
	}
	r = link_cmd(&c->l, argc, argv, NULL);
	if (!r) {
		ret = -1;
		goto out;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		bool nogroup = !strncmp(r->str, "NOGROUP", 7);

		reply_error(&c->l, r, "XREADGROUP");
		/* the streams were deleted or Redis restarted empty */
		if (nogroup && create_groups(c) == 0)
			for (i = 0; i < c->nshards; i++) {
				c->sh[i].pending_phase = true;
				strcpy(c->sh[i].cursor, "0");
			}
		ret = -1;
		goto out;
	}
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
			k = deliver(c, shard, st->element[1], pending, cb, ctx);
			if (k < 0) {
				ret = k;
				/* later streams of this reply were read but
				 * not delivered: read them again from the
				 * pending list */
				for (j++; j < r->elements; j++) {
					const redisReply *s2 = r->element[j];
					int sh2;

					if (s2->type != REDIS_REPLY_ARRAY ||
					    s2->elements != 2 ||
					    (sh2 = key_shard(c, s2->element[0])) < 0 ||
					    s2->element[1]->type != REDIS_REPLY_ARRAY ||
					    !s2->element[1]->elements ||
					    !is_str(s2->element[1]->element[0]->element[0]))
						continue;
					if (c->sh[sh2].pending_phase)
						continue;
					c->sh[sh2].pending_phase = true;
					id_prev(s2->element[1]->element[0]->element[0]->str,
						c->sh[sh2].cursor);
				}
				break;
			}
			n += k;
		}
	} else if (r->type != REDIS_REPLY_NIL) {
		reply_error(&c->l, r, "XREADGROUP");
		ret = -1;
		goto out;
	}
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
		p->r = link_cmd(&c->l, 6, argv, NULL);
		if (!p->r)
			return NULL;
		if (p->r->type != REDIS_REPLY_ARRAY) {
			reply_error(&c->l, p->r, "XRANGE");
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
		unsigned bs = 0;

		for (s = 0; s < c->nshards; s++) {
			const redisReply *e = hist_head(c, s, &pg[s]);

			if (!e && !pg[s].done) {
				ret = -1;
				goto out;
			}
			if (e && e->type == REDIS_REPLY_ARRAY && e->elements >= 1 &&
			    is_str(e->element[0]) &&
			    (!best || id_cmp(e->element[0]->str, best->element[0]->str) < 0)) {
				best = e;
				bs = s;
			} else if (e && !best) {
				best = e;	/* malformed: consumed below */
				bs = s;
			}
		}
		if (!best)
			break;
		{
			struct fs_record rec = { .shard = bs, .redelivery = true };
			int k = parse_entry(best, &rec, node, sizeof(node));

			if (rec.id)
				snprintf(pg[bs].start, sizeof(pg[bs].start), "(%s", rec.id);
			pg[bs].i++;
			if (k <= 0)
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

static bool any_pending(const struct fs_consumer *c)
{
	unsigned i;

	for (i = 0; i < c->nshards; i++)
		if (c->sh[i].pending_phase)
			return true;
	return false;
}

/* Reconnects if the backoff allows, waiting for it within TIMEOUT_MS. */
static int consumer_reconnect(struct fs_consumer *c, int timeout_ms)
{
	uint64_t now = now_ns(), wait;
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
		link_backoff(&c->l);
		return -1;
	}
	c->st.reconnects++;
	return 0;
}

int fs_consume(struct fs_consumer *c, int timeout_ms, fs_record_fn cb,
	       void *ctx)
{
	int n = 0, r = 0;

	if (!c->l.rc && consumer_reconnect(c, timeout_ms))
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
	if (c->l.rc && flush_acks(c) && r >= 0)
		r = -1;
	if (r < 0) {
		if (!c->l.rc)
			link_backoff(&c->l);
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
	if (link_set_timeout(&c->l, FS_IO_TIMEOUT_MS))
		return -1;
	r = link_cmd(&c->l, 4, argv, NULL);
	if (!r)
		return -1;
	if (r->type != REDIS_REPLY_INTEGER) {
		reply_error(&c->l, r, "XACK");
		return -1;
	}
	c->st.acked += r->integer;
	freeReplyObject(r);
	return 0;
}

int fs_claim_stale(struct fs_consumer *c, unsigned min_idle_ms,
		   fs_record_fn cb, void *ctx)
{
	char idle[16], cursor[ID_LEN], count[16];
	int n = 0, ret = 0;
	unsigned i;

	if (!c->l.rc && consumer_reconnect(c, 0))
		return -1;
	if (link_set_timeout(&c->l, FS_IO_TIMEOUT_MS))
		return -1;
	snprintf(idle, sizeof(idle), "%u", min_idle_ms);
	snprintf(count, sizeof(count), "%d", READ_COUNT);
	for (i = 0; i < c->nshards && ret >= 0; i++) {
		strcpy(cursor, "0-0");
		for (;;) {
			const char *argv[8] = { "XAUTOCLAIM", c->keys[i], c->group,
						c->name, idle, cursor, "COUNT",
						count };
			redisReply *r = link_cmd(&c->l, 8, argv, NULL);
			const redisReply *next;
			int k;

			if (!r) {
				ret = -1;
				break;
			}
			if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
			    !is_str(r->element[0]) ||
			    r->element[0]->len >= ID_LEN) {
				reply_error(&c->l, r, "XAUTOCLAIM");
				ret = -1;
				break;
			}
			next = r->element[0];
			if (r->element[1]->type == REDIS_REPLY_ARRAY) {
				size_t before = c->st.delivered;

				k = deliver(c, i, r->element[1], true, cb, ctx);
				c->st.claimed += c->st.delivered - before;
				if (k < 0) {
					freeReplyObject(r);
					ret = k;
					break;
				}
				n += k;
			}
			memcpy(cursor, next->str, next->len);
			cursor[next->len] = '\0';
			freeReplyObject(r);
			if (!strcmp(cursor, "0-0"))
				break;
		}
	}
	if (c->l.rc && flush_acks(c) && ret >= 0)
		ret = -1;
	if (ret < 0) {
		if (!c->l.rc)
			link_backoff(&c->l);
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
		if (is_str(r->element[i]) && r->element[i]->len == kl &&
		    !memcmp(r->element[i]->str, k, kl))
			return r->element[i + 1];
	return NULL;
}

static int64_t kv_int(const redisReply *r, const char *k)
{
	const redisReply *v = kv_get(r, k);

	return v && v->type == REDIS_REPLY_INTEGER ? v->integer : -1;
}

int fs_consumer_lag(struct fs_consumer *c, struct fs_lag *lag)
{
	struct sigpipe_guard g;
	unsigned i;
	int ret = 0;

	if (!c->l.rc && consumer_reconnect(c, 0))
		return -1;
	if (link_set_timeout(&c->l, FS_IO_TIMEOUT_MS))
		return -1;
	for (i = 0; i < c->nshards; i++) {
		const char *a1[3] = { "XINFO", "GROUPS", c->keys[i] };
		const char *a2[3] = { "XINFO", "STREAM", c->keys[i] };

		if (redisAppendCommandArgv(c->l.rc, 3, a1, NULL) != REDIS_OK ||
		    redisAppendCommandArgv(c->l.rc, 3, a2, NULL) != REDIS_OK) {
			snprintf(c->l.err, sizeof(c->l.err), "%s: XINFO: out of memory",
				 c->l.url);
			link_drop(&c->l);
			return -1;
		}
	}
	sigpipe_block(&g);
	for (i = 0; i < c->nshards; i++) {
		redisReply *gr = NULL, *sr = NULL, *mine = NULL;
		void *rv;
		int64_t read, added;
		size_t j;

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
		for (j = 0; j < gr->elements && !mine; j++) {
			const redisReply *name = kv_get(gr->element[j], "name");

			if (name && is_str(name) && name->len == strlen(c->group) &&
			    !memcmp(name->str, c->group, name->len))
				mine = gr->element[j];
		}
		lag[i].length = kv_int(sr, "length");
		if (mine) {
			lag[i].pending = kv_int(mine, "pending");
			lag[i].lag = kv_int(mine, "lag");
			read = kv_int(mine, "entries-read");
			added = kv_int(sr, "entries-added");
			/* Redis 7 says nil when trims make it unsure */
			if (lag[i].lag < 0 && read >= 0 && added >= read)
				lag[i].lag = added - read;
		}
		freeReplyObject(gr);
		freeReplyObject(sr);
	}
	sigpipe_restore(&g);
	if (ret == -1)
		link_drop(&c->l);
	return ret ? -1 : 0;
}
