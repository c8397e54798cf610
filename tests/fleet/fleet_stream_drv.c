// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test driver for user/fleet/fs_*.c and user/fleet/metrics.c, used by
 * test_fleet_stream.sh.  Every error is one line on stderr, exit 1.
 *
 *   produce URL NODE NSHARDS COUNT
 *	COUNT records as fast as possible, then flush; prints the stats.
 *   outage URL NODE NSHARDS BUFBYTES REDISPID MARKER
 *	100-byte records at 2000/s: 1 s, flush, SIGKILL REDISPID, create
 *	MARKER (the script restarts Redis 3 s later), go on sending until
 *	0.5 s after the reconnect, then flush everything.
 *   consume URL GROUP NAME NSHARDS OUT [-a all|even|none] [-m MAX] [-k]
 *	   [-c MIN_IDLE_MS] [-i IDLE_MS]
 *	Appends "ACK|KEEP shard id node inst seq redelivery" per record to
 *	OUT; -a which records the callback acks; -m stop after MAX records
 *	(-k: then SIGKILL itself, unacked entries left pending); -c first
 *	fs_claim_stale; -i stop after IDLE_MS without records (1000).
 *	Redis errors while consuming are reported and retried.
 *   verdict URL KEY JSON	fs_claim_once, and fs_xadd if won
 *   metrics ADDR SECONDS	serves a sample registry, prints "port N"
 *   ping URL			connects, exit 0
 *
 * Every command connects with the credentials that $CCLD_REDIS_AUTH_FILE
 * and $CCLD_HMAC_KEY_FILE name (user/fleet/fleet_cred.h), if set.
 *
 * Record payloads are derived from (node, seq) and checked on receipt;
 * they contain every byte value, NUL, CR and LF included.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "fleet_cred.h"
#include "fleet_stream.h"
#include "metrics.h"

#define PROG "fleet_stream_drv"
#define STOP (-2)	/* callback: MAX reached (-1 is an error) */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* the credentials of the environment; exits with one line if they fail */
static const struct fs_cred *cred(void)
{
	static struct fs_cred c;
	static bool loaded;
	char err[512];

	if (!loaded && fleet_cred_load(&c, NULL, NULL, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s\n", err);
		exit(1);
	}
	loaded = true;
	return &c;
}

static uint32_t node_hash(const char *node)
{
	uint32_t h = 2166136261u;

	for (; *node; node++)
		h = (h ^ (uint8_t)*node) * 16777619u;
	return h;
}

/* The payload of record SEQ of NODE into BUF (at least 256 bytes). */
static size_t make_payload(uint8_t *buf, const char *node, uint64_t seq,
			   size_t fixed)
{
	size_t len = fixed ? fixed : 16 + seq * 7 % 180, i;
	uint32_t h = node_hash(node);

	for (i = 0; i < 8; i++)
		buf[i] = seq >> (8 * i);
	for (; i < len; i++)
		buf[i] = (uint8_t)(h + seq * 31 + i * 17);
	return len;
}

static int parse_uint(const char *s, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	if (!*s || *end || errno) {
		fprintf(stderr, PROG ": bad number '%s'\n", s);
		return -1;
	}
	return 0;
}

static void print_stats(const char *what, struct fs_producer *p)
{
	struct fs_producer_stats st;

	fs_producer_stats(p, &st);
	printf("%s: accepted %" PRIu64 " sent %" PRIu64 " buffered %" PRIu64
	       " buffered_bytes %" PRIu64 " dropped %" PRIu64 " reconnects %"
	       PRIu64 " errors %" PRIu64 " gap %.3f connected %d last_error \"%s\"\n",
	       what, st.accepted, st.sent, st.buffered, st.buffered_bytes,
	       st.dropped, st.reconnects, st.errors, st.gap_seconds,
	       st.connected, st.last_error);
	fflush(stdout);
}

static int send_one(struct fs_producer *p, const char *node, uint64_t seq,
		    size_t fixed)
{
	uint8_t buf[256];
	size_t len = make_payload(buf, node, seq, fixed);

	if (fs_send(p, seq * 0x9E3779B97F4A7C15ull, buf, len)) {
		fprintf(stderr, PROG ": fs_send: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* Flushes until the buffer is empty, for at most LIMIT seconds. */
static int drain(struct fs_producer *p, double limit)
{
	double end = now_s() + limit;

	while (fs_flush(p)) {
		if (now_s() > end)
			return -1;
		sleep_s(0.05);
	}
	return 0;
}

static int cmd_produce(char **argv)
{
	unsigned long long nshards, count, i;
	char err[512];
	struct fs_producer *p;
	double t0;
	int ret = 1;

	if (parse_uint(argv[2], &nshards) || parse_uint(argv[3], &count))
		return 2;
	p = fs_producer_new(argv[0], cred(), argv[1], nshards, 0, err, sizeof(err));
	if (!p) {
		fprintf(stderr, PROG ": %s\n", err);
		return 1;
	}
	t0 = now_s();
	for (i = 1; i <= count; i++)
		if (send_one(p, argv[1], i, 0))
			goto out;
	if (drain(p, 10)) {
		print_stats("produce", p);
		fprintf(stderr, PROG ": could not deliver everything\n");
		goto out;
	}
	printf("produce %s: %llu records in %.1f ms\n", argv[1], count,
	       (now_s() - t0) * 1e3);
	print_stats("produce", p);
	ret = 0;
out:
	fs_producer_free(p);
	return ret;
}

static int cmd_outage(char **argv)
{
	unsigned long long nshards, bufbytes, pid;
	struct fs_producer_stats st;
	struct fs_producer *p;
	double t0, killed = 0, back = 0, reported = 0;
	uint64_t seq = 0, max_buffered = 0;
	char err[512];
	FILE *f;
	int ret = 1;

	if (parse_uint(argv[2], &nshards) || parse_uint(argv[3], &bufbytes) ||
	    parse_uint(argv[4], &pid))
		return 2;
	p = fs_producer_new(argv[0], cred(), argv[1], nshards, bufbytes, err, sizeof(err));
	if (!p) {
		fprintf(stderr, PROG ": %s\n", err);
		return 1;
	}
	t0 = now_s();
	for (;;) {
		double t = now_s();

		/* 2000 records per second */
		while (seq < (uint64_t)((t - t0) * 2000))
			if (send_one(p, argv[1], ++seq, 100))
				goto out;
		fs_producer_stats(p, &st);
		if (st.buffered > max_buffered)
			max_buffered = st.buffered;
		if (!killed && t - t0 >= 1.0) {
			if (drain(p, 5)) {
				fprintf(stderr, PROG ": cannot flush before the kill\n");
				goto out;
			}
			print_stats("before", p);
			if (kill(pid, SIGKILL)) {
				fprintf(stderr, PROG ": kill %llu: %s\n", pid,
					strerror(errno));
				goto out;
			}
			killed = now_s();
			f = fopen(argv[5], "w");
			if (!f) {
				fprintf(stderr, PROG ": %s: %s\n", argv[5],
					strerror(errno));
				goto out;
			}
			fclose(f);
		}
		if (killed && !reported && t - killed >= 2.0) {
			print_stats("outage", p);
			reported = t;
		}
		if (killed && !back && st.reconnects)
			back = t;
		if (back && t - back >= 0.5)
			break;
		if (killed && t - killed > 20) {
			fprintf(stderr, PROG ": no reconnect 20 s after the kill\n");
			goto out;
		}
		sleep_s(0.002);
	}
	if (drain(p, 10)) {
		print_stats("after", p);
		fprintf(stderr, PROG ": could not deliver the buffer\n");
		goto out;
	}
	printf("outage %s: reconnected %.2f s after the kill, max_buffered %"
	       PRIu64 "\n", argv[1], back - killed, max_buffered);
	print_stats("after", p);
	ret = 0;
out:
	fs_producer_free(p);
	return ret;
}

struct consume_ctx {
	FILE *out;
	char ack;		/* 'a' all, 'e' even, 'n' none */
	unsigned long long max;
	unsigned long long delivered, corrupt;
	double last;
};

static int on_record(void *arg, const struct fs_record *r)
{
	struct consume_ctx *x = arg;
	uint8_t want[256];
	size_t len;
	bool ack;

	if (x->max && x->delivered >= x->max)
		return STOP;	/* this one stays pending */
	len = make_payload(want, r->node, r->seq, r->len == 100 ? 100 : 0);
	if (len != r->len || memcmp(want, r->data, len))
		x->corrupt++;
	ack = x->ack == 'a' || (x->ack == 'e' && r->seq % 2 == 0);
	fprintf(x->out, "%s %u %s %s %" PRIu64 " %" PRIu64 " %d\n",
		ack ? "ACK" : "KEEP", r->shard, r->id, r->node, r->inst, r->seq,
		r->redelivery);
	x->delivered++;
	x->last = now_s();
	return ack ? FS_ACK : FS_KEEP;
}

static int cmd_consume(int argc, char **argv)
{
	struct consume_ctx x = { .ack = 'a' };
	unsigned long long nshards, v, idle_ms = 1000, claim_ms = 0;
	struct fs_lag *lag = NULL;
	struct fs_consumer *c;
	struct fs_consumer_stats st;
	bool die = false, claim = false;
	int64_t tlag = 0, tpend = 0;
	char err[512], lasterr[512] = "";
	double t0, idle_since;
	int opt, ret = 1, n;
	unsigned i;

	if (argc < 6 || parse_uint(argv[4], &nshards))
		return 2;
	optind = 6;
	while ((opt = getopt(argc, argv, "a:m:kc:i:")) != -1) {
		switch (opt) {
		case 'a':
			x.ack = optarg[0];
			break;
		case 'm':
			if (parse_uint(optarg, &x.max))
				return 2;
			break;
		case 'k':
			die = true;
			break;
		case 'c':
			if (parse_uint(optarg, &claim_ms))
				return 2;
			claim = true;
			break;
		case 'i':
			if (parse_uint(optarg, &v))
				return 2;
			idle_ms = v;
			break;
		default:
			return 2;
		}
	}
	x.out = fopen(argv[5], "a");
	if (!x.out) {
		fprintf(stderr, PROG ": %s: %s\n", argv[5], strerror(errno));
		return 1;
	}
	c = fs_consumer_new(argv[1], cred(), argv[2], argv[3], nshards, err, sizeof(err));
	if (!c) {
		fprintf(stderr, PROG ": %s\n", err);
		fclose(x.out);
		return 1;
	}
	t0 = now_s();
	if (claim) {
		n = fs_claim_stale(c, claim_ms, on_record, &x);
		if (n == -1) {
			fprintf(stderr, PROG ": %s\n", fs_consumer_error(c));
			goto out;
		}
		fs_consumer_stats(c, &st);
		printf("claimed %" PRIu64 "\n", st.claimed);
	}
	idle_since = now_s();
	for (;;) {
		if (x.max && x.delivered >= x.max)
			break;
		n = fs_consume(c, 200, on_record, &x);
		if (n == -1) {
			/* fs_consume reconnects by itself: report, go on */
			if (strcmp(lasterr, fs_consumer_error(c)))
				fprintf(stderr, PROG ": %s (retrying)\n",
					fs_consumer_error(c));
			snprintf(lasterr, sizeof(lasterr), "%s",
				 fs_consumer_error(c));
		}
		if (n > 0)
			idle_since = now_s();
		else if (now_s() - idle_since >= idle_ms / 1e3)
			break;
	}
	fflush(x.out);
	if (die) {
		fclose(x.out);
		raise(SIGKILL);
	}
	lag = calloc(nshards, sizeof(*lag));
	if (!lag || fs_consumer_lag(c, lag)) {
		fprintf(stderr, PROG ": lag: %s\n", lag ? fs_consumer_error(c) :
			"out of memory");
		goto out;
	}
	for (i = 0; i < nshards; i++) {
		tlag += lag[i].lag;
		tpend += lag[i].pending;
	}
	fs_consumer_stats(c, &st);
	printf("consume %s: delivered %llu corrupt %llu acked %" PRIu64
	       " malformed %" PRIu64 " untagged %" PRIu64 " bad_tag %" PRIu64
	       " reconnects %" PRIu64 " in %.1f ms lag %" PRId64 " pending %"
	       PRId64 "\n", argv[3], x.delivered, x.corrupt, st.acked,
	       st.malformed, st.untagged, st.bad_tag, st.reconnects,
	       ((x.last ? x.last : t0) - t0) * 1e3, tlag, tpend);
	ret = x.corrupt ? 1 : 0;
	if (x.corrupt)
		fprintf(stderr, PROG ": %llu corrupt payloads\n", x.corrupt);
out:
	free(lag);
	fs_consumer_free(c);
	if (x.out && !die)
		fclose(x.out);
	return ret;
}

static int cmd_verdict(char **argv)
{
	struct fs_conn *c;
	char err[512];
	int won;

	c = fs_connect(argv[0], cred(), err, sizeof(err));
	if (!c) {
		fprintf(stderr, PROG ": %s\n", err);
		return 1;
	}
	won = fs_claim_once(c, argv[1], 30);
	if (won > 0 && fs_xadd(c, FS_VERDICT_STREAM, "verdict", argv[2],
			       strlen(argv[2]), 10000))
		won = -1;
	if (won < 0)
		fprintf(stderr, PROG ": %s\n", fs_conn_error(c));
	else
		printf("%s\n", won ? "won" : "lost");
	fs_close(c);
	return won < 0;
}

static int cmd_metrics(char **argv)
{
	struct metrics *m = metrics_new();
	unsigned long long secs;
	struct timespec ts = { 0, 0 };
	char err[512];
	sigset_t set;
	int ret = 1;

	if (!m) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	if (parse_uint(argv[1], &secs))
		goto out;
	if (metrics_declare(m, "ccld_records_sent_total", METRIC_COUNTER,
			    "Records sent to Redis.") ||
	    metrics_declare(m, "ccld_buffered_records", METRIC_GAUGE,
			    "Records waiting for Redis.\nSecond line \\ here.") ||
	    metrics_declare(m, "ccld_collectives_total", METRIC_COUNTER,
			    "Collectives per communicator and rank.") ||
	    metrics_add_l(m, "ccld_records_sent_total", 12345, NULL) ||
	    metrics_set(m, "ccld_buffered_records", "shard=\"0\"", 0.25) ||
	    metrics_set(m, "ccld_buffered_records", "shard=\"1\"", -INFINITY) ||
	    metrics_add_l(m, "ccld_collectives_total", 3,
			  (const char *[]){ "comm", "q\"uote\\back\nline",
					    "rank", "3", NULL }) ||
	    metrics_add(m, "ccld_collectives_total",
			"comm=\"0badc0ffee\",rank=\"0\"", 1e21)) {
		fprintf(stderr, PROG ": registry: %s\n", strerror(errno));
		goto out;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	/* before the server thread starts, so that it inherits the mask */
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (metrics_start(m, argv[0], err, sizeof(err))) {
		fprintf(stderr, PROG ": %s\n", err);
		goto out;
	}
	printf("port %d\n", metrics_port(m));
	fflush(stdout);
	ts.tv_sec = secs;
	sigtimedwait(&set, NULL, &ts);
	metrics_stop(m);
	ret = 0;
out:
	metrics_free(m);
	return ret;
}

static int cmd_ping(char **argv)
{
	struct fs_conn *c;
	char err[512];

	c = fs_connect(argv[0], cred(), err, sizeof(err));
	if (!c) {
		fprintf(stderr, PROG ": %s\n", err);
		return 1;
	}
	fs_close(c);
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	if (!strcmp(cmd, "produce") && argc == 6)
		return cmd_produce(argv + 2);
	if (!strcmp(cmd, "outage") && argc == 8)
		return cmd_outage(argv + 2);
	if (!strcmp(cmd, "consume") && argc >= 7)
		return cmd_consume(argc - 1, argv + 1);
	if (!strcmp(cmd, "verdict") && argc == 5)
		return cmd_verdict(argv + 2);
	if (!strcmp(cmd, "metrics") && argc == 4)
		return cmd_metrics(argv + 2);
	if (!strcmp(cmd, "ping") && argc == 3)
		return cmd_ping(argv + 2);
	fprintf(stderr, "usage: " PROG " produce|outage|consume|verdict|metrics|ping ... (see the source)\n");
	return 2;
}
