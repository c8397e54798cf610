/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Inside the fleet transport (fleet_stream.h is its interface): one Redis
 * connection with its reconnect backoff (fs_link.c), shared by the plain
 * connection (fs_conn.c), the producer (fs_producer.c) and the group
 * consumer (fs_consumer.c, fs_backlog.c).
 */
#ifndef CCLD_FS_INT_H
#define CCLD_FS_INT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <hiredis/hiredis.h>
#include "fleet_stream.h"
#include "sha256.h"

#define READ_COUNT	256	/* XREADGROUP / XAUTOCLAIM COUNT per stream */
#define KEY_LEN		32
#define ID_LEN		48	/* "<u64>-<u64>" */

uint64_t fs_now_ns(void);

/*
 * hiredis writes with write(2): a peer that went away raises SIGPIPE.  It
 * is blocked in this thread during our I/O and a SIGPIPE that we caused is
 * taken off the pending set before the mask is restored.
 */
struct sigpipe_guard {
	sigset_t old;
	bool was_pending;
};
void fs_sigpipe_block(struct sigpipe_guard *g);
void fs_sigpipe_restore(struct sigpipe_guard *g);

struct link {
	struct fs_url u;
	char url[200];		/* as given, for messages */
	char user[FS_USER_MAX];	/* AUTH [USER] PASS on every connect */
	char pass[FS_PASS_MAX];	/* "": no AUTH */
	redisContext *rc;
	uint64_t next_try_ns;	/* no (re)connect or flush before */
	unsigned backoff_ms;
	unsigned io_ms;		/* socket timeout now set */
	char err[512];
};

int fs_link_init(struct link *l, const char *url, const struct fs_cred *cred,
		 char *err, size_t errlen);
void fs_link_drop(struct link *l);
/* Closes L and forgets its credentials. */
void fs_link_free(struct link *l);
/* After a failure: no new attempt for the backoff time, which doubles. */
void fs_link_backoff(struct link *l);
int fs_link_set_timeout(struct link *l, unsigned ms);
/*
 * One command, its reply or NULL (l->err says why).  On an I/O error the
 * connection is dropped; an error reply is returned as it is.
 */
redisReply *fs_link_cmd(struct link *l, int argc, const char **argv,
			const size_t *lens);
/* Records an error reply R of command WHAT in l->err and frees R. */
void fs_reply_error(struct link *l, redisReply *r, const char *what);
/* (Re)connects: AUTH, or PING, and SELECT as the URL and credentials ask. */
int fs_link_open(struct link *l);

/* keys of shards FIRST, FIRST + STEP, ... (N of them) */
char (*fs_make_keys_step(unsigned n, unsigned first, unsigned step))[KEY_LEN];

/* ---- the group consumer (fs_consumer.c) ---- */

struct shard {
	bool pending_phase;	/* reading own pending entries after CURSOR */
	char cursor[ID_LEN];
	char (*acks)[ID_LEN];	/* to XACK at the end of the call */
	size_t nacks, capacks;
};

struct fs_consumer {
	struct link l;
	bool tags;		/* entries need a right tag (mk) */
	struct hmac_sha256_key mk;
	char *group, *name;
	unsigned nshards;	/* shards this consumer reads */
	unsigned first, step;	/* local shard i is stream first + i * step */
	char (*keys)[KEY_LEN];
	struct shard *sh;
	struct fs_consumer_stats st;
};

bool fs_is_str(const redisReply *r);
/* The id of stream entry E ([id, fields]), NULL if E is not one */
const char *fs_entry_id(const redisReply *e);
/*
 * Fills REC from stream entry E ([id, [field, value, ...]]) and *MAC with
 * its tag field (NULL if none).  1 if it is a record, 0 if trimmed away
 * (nil fields), -1 if malformed.
 */
int fs_parse_entry(const redisReply *e, struct fs_record *rec,
		   char *node, size_t nodelen, const redisReply **mac);
/*
 * With a key: 0 if REC of local shard SHARD carries its right tag, else 1
 * (no tag) or 2 (a wrong one).  Without a key: 0.
 */
int fs_tag_check(const struct fs_consumer *c, unsigned shard,
		 const struct fs_record *rec, const redisReply *mac);
/*
 * Delivers the entries of ENTRIES (an array of stream entries) of SHARD to
 * CB.  Returns the number delivered, or CB's negative value (the entry it
 * refused stays pending; the shard goes back to its pending phase just
 * below it).
 */
int fs_deliver(struct fs_consumer *c, unsigned shard,
	       const redisReply *entries, bool redelivery, fs_record_fn cb,
	       void *ctx);
/* XACKs of the queued ids, one pipelined round trip.  0 or -1. */
int fs_flush_acks(struct fs_consumer *c);
/* Reconnects if the backoff allows, waiting for it within TIMEOUT_MS. */
int fs_consumer_reconnect(struct fs_consumer *c, int timeout_ms);

#endif
