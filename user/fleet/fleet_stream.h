/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Fleet transport over Redis Streams (hiredis, synchronous): node agents
 * (`ccld-trace daemon`) produce opaque per-rank records, analyzer replicas
 * (`ccld-analyzer`) consume them through a consumer group.  docs/fleet.md
 * specifies the keys, fields, sharding, trimming and the buffering policy.
 *
 * Records are opaque byte strings: this layer never looks inside them.
 * A record goes to stream "ccld:rec:<shard>", shard = shard_key % nshards,
 * as one entry with the fields
 *   node  the producer's node name
 *   inst  the producer instance (decimal u64, fresh per fs_producer_new)
 *   seq   1, 2, 3, ... per producer instance, over all shards
 *   data  the record, binary safe
 * With a key (struct fs_cred) each entry also carries
 *   mac   the record's tag (fleet_mac.h); a consumer with the key drops and
 *         counts entries whose tag is missing or wrong
 * Delivery is at least once: a record can reach the consumers twice (a
 * reply lost with the connection, a consumer that died before acking), so a
 * consumer that needs exactly once dedupes on (node, inst, seq); a gap in
 * seq is a record dropped by the producer's bounded buffer.
 *
 * No object here is thread safe: use each from one thread at a time.  Calls
 * block for at most FS_CONNECT_TIMEOUT_MS (connecting) or FS_IO_TIMEOUT_MS
 * (one round trip; plus the BLOCK time of fs_consume).  SIGPIPE is blocked
 * in the calling thread during socket I/O and never reaches the process.
 */
#ifndef CCLD_FLEET_STREAM_H
#define CCLD_FLEET_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FS_STREAM_PREFIX	"ccld:rec:"	/* + decimal shard number */
#define FS_VERDICT_STREAM	"ccld:verdicts"
#define FS_DEFAULT_MAXLEN	1000000		/* XADD MAXLEN ~ per stream */
#define FS_DEFAULT_BATCH_RECORDS 256		/* auto flush after N records */
#define FS_DEFAULT_BATCH_BYTES	(256u << 10)	/* ... or this many bytes */
#define FS_DEFAULT_BATCH_MS	100		/* ... or this long */
#define FS_CONNECT_TIMEOUT_MS	1000
#define FS_IO_TIMEOUT_MS	2000
#define FS_BACKOFF_MIN_MS	100		/* reconnect backoff doubles */
#define FS_BACKOFF_MAX_MS	1000		/* ... up to once a second */
#define FS_MAX_SHARDS		4096

/* ---- credentials --------------------------------------------------------- */

#define FS_USER_MAX	128
#define FS_PASS_MAX	512
#define FS_KEY_MAX	1024

/*
 * What every connection authenticates with and the key of record tags
 * (fleet_cred.h loads them from files).  The constructors below copy it;
 * NULL, or all empty: no AUTH, records neither signed nor checked.
 */
struct fs_cred {
	char user[FS_USER_MAX];	/* ACL user; "": AUTH PASSWORD (default user) */
	char pass[FS_PASS_MAX];	/* "": no AUTH */
	uint8_t key[FS_KEY_MAX];	/* HMAC-SHA256 key of the record tags */
	size_t keylen;		/* 0: no tags sent, none required */
};

/* ---- URLs ---------------------------------------------------------------- */

/*
 * "redis://HOST[:PORT][/DB]" (HOST a name, an IPv4 address or [IPv6];
 * PORT 6379 by default; DB 0 by default) or "unix:///ABSOLUTE/PATH".
 */
struct fs_url {
	bool is_unix;
	char host[256];
	int port;
	int db;
	char path[108];
};

/*
 * 0, or -1 with ERR naming the URL and what is wrong with it.  A user or
 * password in the URL is refused (and not repeated in ERR): they come from
 * a file (struct fs_cred).
 */
int fs_parse_url(const char *url, struct fs_url *u, char *err, size_t errlen);

/* ---- a plain connection: verdicts and dedupe ------------------------------ */

struct fs_conn;

/*
 * Connects, AUTHs with CRED (may be NULL) and SELECTs the DB; NULL with ERR
 * "URL: cannot connect: why" or "URL: AUTH ... refused: why".  Every
 * reconnect authenticates the same way.
 */
struct fs_conn *fs_connect(const char *url, const struct fs_cred *cred,
			   char *err, size_t errlen);
void fs_close(struct fs_conn *c);
/* What the last failed call of C met. */
const char *fs_conn_error(const struct fs_conn *c);

/*
 * XADD STREAM MAXLEN ~ MAXLEN * FIELD VALUE (MAXLEN 0: no trim), e.g. a
 * verdict JSON line to FS_VERDICT_STREAM.  VALUE is LEN bytes, binary safe.
 * A lost connection is reopened once (at most once a second) before
 * failing.  0 or -1 (fs_conn_error).
 */
int fs_xadd(struct fs_conn *c, const char *stream, const char *field,
	    const void *value, size_t len, size_t maxlen);

/*
 * SET KEY <host:pid> NX EX TTL_S: 1 if this caller won KEY (first to claim
 * it within TTL_S seconds), 0 if someone else holds it, -1 on error.  Two
 * analyzer replicas that reach the same verdict both call it with the same
 * key; only the winner publishes.
 */
int fs_claim_once(struct fs_conn *c, const char *key, unsigned ttl_s);

/* ---- producer (node agent) ----------------------------------------------- */

struct fs_producer;

struct fs_producer_stats {
	uint64_t accepted;	/* records given to fs_send */
	uint64_t sent;		/* records Redis acknowledged */
	uint64_t buffered;	/* records waiting now */
	uint64_t buffered_bytes; /* their payload bytes */
	uint64_t dropped;	/* oldest records dropped: buffer full */
	uint64_t reconnects;	/* connections re-established */
	uint64_t errors;	/* failed round trips and error replies */
	double gap_seconds;	/* longest time without a connection, the
				 * current outage included */
	bool connected;
	uint64_t next_seq;	/* seq of the next record */
	uint64_t inst;		/* this producer's instance id */
	char last_error[512];	/* "" if none yet */
};

/*
 * Connects to URL with CRED (may be NULL; failure: NULL, ERR "URL: cannot
 * connect: why" or the refused AUTH; later outages are buffered instead).
 * With a key in CRED every record is tagged.  NODE names this producer in
 * every record; NSHARDS (1..FS_MAX_SHARDS) streams are used; at most
 * MAX_BUFFER_BYTES of record payload wait for Redis (0: 64 MiB).
 */
struct fs_producer *fs_producer_new(const char *url, const struct fs_cred *cred,
				    const char *node,
				    unsigned nshards, size_t max_buffer_bytes,
				    char *err, size_t errlen);
/* Approximate per-stream bound (XADD MAXLEN ~); 0 turns trimming off. */
void fs_producer_set_trim(struct fs_producer *p, size_t maxlen);
/* Auto flush thresholds (0 keeps the current value); see FS_DEFAULT_*. */
void fs_producer_set_batch(struct fs_producer *p, unsigned records,
			   size_t bytes, unsigned ms);
/*
 * Queues LEN bytes at REC for shard SHARD_KEY % nshards, with the next seq,
 * and flushes when a batch threshold is reached.  If Redis is unreachable
 * the record waits in the buffer (FIFO; when full the oldest records are
 * dropped and counted) and a reconnect is tried, at most once per backoff
 * period; after reconnecting, the buffer is sent in order.  Returns 0, or
 * -1 only for a record that can never be sent (larger than the buffer,
 * errno EMSGSIZE) or no memory (ENOMEM); delivery trouble is not an error
 * here, fs_producer_stats reports it.
 */
int fs_send(struct fs_producer *p, uint64_t shard_key, const void *rec,
	    size_t len);
/*
 * Sends everything buffered now (pipelined XADDs), reconnecting first if
 * needed and the backoff allows.  Call it periodically (every
 * FS_DEFAULT_BATCH_MS or so) so that a quiet producer still delivers.
 * 0 if the buffer is empty afterwards, -1 if records still wait.
 */
int fs_flush(struct fs_producer *p);
void fs_producer_stats(const struct fs_producer *p,
		       struct fs_producer_stats *st);
/* Frees P without sending what is buffered (fs_flush first for that). */
void fs_producer_free(struct fs_producer *p);

/* ---- consumer (analyzer) ------------------------------------------------- */

struct fs_consumer;

/* One record, valid during the callback only. */
struct fs_record {
	const char *node;
	uint64_t inst;
	uint64_t seq;
	const void *data;
	size_t len;
	unsigned shard;
	const char *id;		/* stream entry id, "MS-N"; for fs_ack */
	bool redelivery;	/* from this consumer's pending list or claimed */
};

#define FS_ACK	1	/* callback: acknowledge now */
#define FS_KEEP	0	/* callback: leave pending, the caller fs_acks later */
/*
 * Return FS_ACK, FS_KEEP, or a negative value to stop: then R is neither
 * acknowledged nor counted as delivered, it comes again (as a redelivery)
 * with the next call, and fs_consume/fs_claim_stale return that value.
 */
typedef int (*fs_record_fn)(void *ctx, const struct fs_record *r);

struct fs_consumer_stats {
	uint64_t delivered;	/* records given to callbacks */
	uint64_t acked;
	uint64_t claimed;	/* taken over by fs_claim_stale */
	uint64_t malformed;	/* entries without node/inst/seq/data: acked,
				 * not delivered */
	uint64_t trimmed;	/* pending entries trimmed away before read */
	uint64_t untagged;	/* with a key: entries without a tag, and */
	uint64_t bad_tag;	/* ... with a wrong one: acked, not delivered */
	char rejected_node[64];	/* node field of the last such entry */
	uint64_t reconnects;
};

/*
 * Connects to URL with CRED (may be NULL; with a key in it, entries whose
 * tag is missing or wrong are acknowledged, counted and never delivered)
 * and creates consumer group GROUP (reading from the start
 * of each stream) on the NSHARDS streams if missing (XGROUP CREATE ...
 * MKSTREAM; an existing group is kept).  NAME identifies this consumer in
 * the group: a restarted consumer with the same name first gets back what
 * it had read but not acknowledged.  NULL with ERR on failure.
 */
struct fs_consumer *fs_consumer_new(const char *url, const struct fs_cred *cred,
				    const char *group,
				    const char *name, unsigned nshards,
				    char *err, size_t errlen);
/*
 * The same for a replica that reads only part PART of NPARTS of the shards:
 * streams PART, PART + NPARTS, ...  Records' `shard` and the arrays of
 * fs_consumer_lag are then indexes among these (fs_consumer_shard maps an
 * index to its stream number).
 */
struct fs_consumer *fs_consumer_new_part(const char *url,
					 const struct fs_cred *cred,
					 const char *group,
					 const char *name, unsigned nshards,
					 unsigned part, unsigned nparts,
					 char *err, size_t errlen);
/* Shards this consumer reads, and the stream number of index I. */
unsigned fs_consumer_nshards(const struct fs_consumer *c);
unsigned fs_consumer_shard(const struct fs_consumer *c, unsigned i);

/*
 * Delivers records to CB: first this consumer's own pending entries (after
 * start or reconnect: XREADGROUP with ID 0), then new ones (ID ">"),
 * waiting at most TIMEOUT_MS for them (0: do not wait).  Entries whose CB
 * returned FS_ACK are acknowledged before returning.  Returns the number
 * of records delivered (0 on timeout), CB's negative value if it stopped,
 * or -1 on a Redis error (fs_consumer_error; the next call reconnects, at
 * most once per backoff period, waiting within TIMEOUT_MS for it).
 */
int fs_consume(struct fs_consumer *c, int timeout_ms, fs_record_fn cb,
	       void *ctx);
/*
 * Delivers every entry the shard streams hold now, oldest first, shard by
 * shard (XRANGE; the group is not touched, nothing is acknowledged), with
 * redelivery set: a restarted analyzer rebuilds its state from them before
 * it consumes (docs/fleet.md).  Entries with a missing or wrong tag are
 * skipped without counting: the group delivers (and counts) them once.  Returns the number delivered, CB's negative
 * value, or -1.
 */
int fs_consumer_history(struct fs_consumer *c, fs_record_fn cb, void *ctx);

/* XACK of one entry a callback kept (FS_KEEP).  0 or -1. */
int fs_ack(struct fs_consumer *c, unsigned shard, const char *id);
/*
 * Takes over entries that have been pending on any consumer of the group
 * (a dead one, typically) for at least MIN_IDLE_MS (XAUTOCLAIM, Redis 6.2
 * or later) and delivers them to CB like fs_consume.  Choose MIN_IDLE_MS
 * above the time a live consumer keeps entries unacknowledged.  Returns
 * the number delivered, CB's negative value, or -1.
 */
int fs_claim_stale(struct fs_consumer *c, unsigned min_idle_ms,
		   fs_record_fn cb, void *ctx);

struct fs_lag {
	int64_t lag;		/* entries not yet delivered to the group;
				 * -1 if Redis cannot tell */
	int64_t pending;	/* delivered, not acknowledged */
	int64_t length;		/* entries in the stream now */
};

/* Fills LAG[0..nshards-1] for this consumer's group.  0 or -1. */
int fs_consumer_lag(struct fs_consumer *c, struct fs_lag *lag);
void fs_consumer_stats(const struct fs_consumer *c,
		       struct fs_consumer_stats *st);
const char *fs_consumer_error(const struct fs_consumer *c);
void fs_consumer_free(struct fs_consumer *c);

#endif
