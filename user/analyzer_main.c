// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ccld-analyzer: the fleet analyzer (DESIGN.md sections 1, 2 and 9).  Reads
 * the node agents' records from Redis Streams through a consumer group,
 * runs the same analyzer library as ccld-trace, prints verdicts (JSON lines
 * with --json) and publishes them to the verdict stream.  docs/fleet.md.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "fleet_agent.h"
#include "fleet_analyzer.h"
#include "fleet_stream.h"
#include "analyzer_metrics.h"

static const char usage[] =
"Usage: ccld-analyzer --redis URL [--json] [--stall SEC] [--hang SEC]\n"
"                     [--slow-window SEC] [--slow-min-iters N] [--slow-min-s SEC]\n"
"                     [--shards N] [--group NAME]\n"
"                     [--name NAME] [--replica I/N] [--metrics [ADDR:]PORT]\n"
"                     [--duration SEC]\n"
"\n"
"Diagnose hangs and slowdowns of jobs traced by `ccld-trace daemon` agents\n"
"on many nodes: reads their records from Redis Streams (a consumer group),\n"
"prints each verdict once and publishes it to the stream ccld:verdicts.\n"
"\n"
"  -r, --redis URL       redis://HOST[:PORT][/DB] or unix:///PATH\n"
"  -j, --json            JSON lines (schema 1) instead of text\n"
"      --stall SEC       hang: no progress for SEC seconds (default 30)\n"
"      --hang SEC        hang: op in flight longer than SEC (default 300)\n"
"      --slow-window SEC slow detection window (default 60)\n"
"      --slow-min-iters N  a slow verdict needs N slow iterations in a row\n"
"                        (default 3)\n"
"      --slow-min-s SEC  ... lasting SEC seconds at least (default 1)\n"
"      --shards N        record streams, as the agents use (default 8)\n"
"      --group NAME      consumer group (default ccld-analyzer)\n"
"      --name NAME       consumer name; a restart under the same name gets\n"
"                        back what it had read (default: the host name)\n"
"      --replica I/N     this is replica I (0..N-1) of N: it reads shards\n"
"                        I, I+N, I+2N... (each replica its own part)\n"
"      --metrics [ADDR:]PORT  Prometheus /metrics on this address\n"
"  -d, --duration SEC    stop after SEC seconds (default: until SIGINT/SIGTERM)\n"
"  -h, --help            this text\n"
"\n"
"Exit status: 0 normal, 1 error, 2 bad usage.\n";

enum { OPT_STALL = 256, OPT_HANG, OPT_SLOW_WINDOW, OPT_SHARDS, OPT_GROUP, OPT_NAME,
       OPT_METRICS, OPT_REPLICA, OPT_SLOW_MIN_ITERS, OPT_SLOW_MIN_S };

static const struct option long_opts[] = {
	{ "redis", required_argument, NULL, 'r' },
	{ "json", no_argument, NULL, 'j' },
	{ "stall", required_argument, NULL, OPT_STALL },
	{ "hang", required_argument, NULL, OPT_HANG },
	{ "slow-window", required_argument, NULL, OPT_SLOW_WINDOW },
	{ "slow-min-iters", required_argument, NULL, OPT_SLOW_MIN_ITERS },
	{ "slow-min-s", required_argument, NULL, OPT_SLOW_MIN_S },
	{ "shards", required_argument, NULL, OPT_SHARDS },
	{ "group", required_argument, NULL, OPT_GROUP },
	{ "name", required_argument, NULL, OPT_NAME },
	{ "metrics", required_argument, NULL, OPT_METRICS },
	{ "replica", required_argument, NULL, OPT_REPLICA },
	{ "duration", required_argument, NULL, 'd' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

struct opts {
	const char *url, *group, *name, *metrics;
	bool json;
	unsigned shards, part, nparts, slow_min_iters;
	double stall_s, hang_s, slow_window_s, duration_s, slow_min_s;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "ccld-analyzer: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'ccld-analyzer --help'.\n");
	return 2;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end || !(*out > 0) || *out > 1e9 ? -1 : 0;
}

/* a minimum duration: 0 (none) allowed */
static int parse_min_seconds(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end || !(*out >= 0) || *out > 1e9 ? -1 : 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static char host[256];
	unsigned long n;
	char *end, junk;
	int c;

	memset(o, 0, sizeof(*o));
	o->group = "ccld-analyzer";
	o->shards = FLEET_DEFAULT_SHARDS;
	o->slow_min_s = -1;	/* default */
	o->nparts = 1;
	if (gethostname(host, sizeof(host) - 1))
		snprintf(host, sizeof(host), "analyzer");
	o->name = host;
	while ((c = getopt_long(argc, argv, "r:jd:h", long_opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			o->url = optarg;
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		case OPT_SHARDS:
			n = strtoul(optarg, &end, 10);
			if (*end || !*optarg || n < 1 || n > FS_MAX_SHARDS)
				return bad_usage("bad --shards (1..4096): '%s'", optarg);
			o->shards = (unsigned)n;
			break;
		case OPT_GROUP:
		case OPT_NAME:
			if (!*optarg)
				return bad_usage("%s", "empty --group or --name");
			*(c == OPT_GROUP ? &o->group : &o->name) = optarg;
			break;
		case OPT_METRICS:
			o->metrics = optarg;
			break;
		case OPT_SLOW_MIN_ITERS: {
			char *end;
			unsigned long n = strtoul(optarg, &end, 10);

			if (*end || !*optarg || n < 1 || n > 1000)
				return bad_usage("bad --slow-min-iters (1..1000): '%s'", optarg);
			o->slow_min_iters = (unsigned)n;
			break;
		}
		case OPT_SLOW_MIN_S:
			if (parse_min_seconds(optarg, &o->slow_min_s))
				return bad_usage("bad --slow-min-s (0 or more seconds): '%s'", optarg);
			break;
		case OPT_REPLICA:
			if (sscanf(optarg, "%u/%u%c", &o->part, &o->nparts, &junk) != 2 ||
			    o->nparts < 1 || o->part >= o->nparts)
				return bad_usage("bad --replica I/N (0 <= I < N): '%s'", optarg);
			break;
		case 'd':
		case OPT_STALL:
		case OPT_HANG:
		case OPT_SLOW_WINDOW:
			if (parse_seconds(optarg, c == 'd' ? &o->duration_s :
					  c == OPT_STALL ? &o->stall_s :
					  c == OPT_HANG ? &o->hang_s : &o->slow_window_s))
				return bad_usage("bad number of seconds: '%s'", optarg);
			break;
		default:
			fprintf(stderr, "Try 'ccld-analyzer --help'.\n");
			return 2;
		}
	}
	if (optind < argc)
		return bad_usage("unexpected argument '%s'", argv[optind]);
	if (!o->url)
		return bad_usage("%s", "--redis URL is required");
	if (o->nparts > o->shards)
		return bad_usage("%s", "--replica: more replicas than --shards");
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void report(struct fleet_analyzer *fa, struct fs_consumer *c)
{
	struct fleet_analyzer_stats st;
	struct fs_consumer_stats cs;

	fleet_analyzer_stats(fa, &st);
	fs_consumer_stats(c, &cs);
	fprintf(stderr, "ccld-analyzer: %" PRIu64 " records applied, %" PRIu64
		" duplicates dropped, %" PRIu64 " seqs never seen, %" PRIu64
		" undecodable; %" PRIu64 " verdicts printed, %" PRIu64
		" printed before (claimed), %" PRIu64 " not published\n", st.records,
		st.dups, st.gaps, st.bad, st.verdicts, st.verdicts_other,
		st.publish_errors);
	(void)cs;
}

int main(int argc, char **argv)
{
	struct fleet_analyzer_opts fo = { 0 };
	struct analyzer_metrics *am = NULL;
	struct fleet_analyzer *fa;
	struct fs_consumer *c;
	uint64_t start, next_claim, next_metrics;
	bool down = false;
	char err[512];
	struct opts o;
	int rc, n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = parse(argc, argv, &o);
	if (rc)
		return rc;
	an_config_default(&fo.an);
	if (o.stall_s > 0)
		fo.an.stall_s = o.stall_s;
	if (o.hang_s > 0)
		fo.an.hang_s = o.hang_s;
	if (o.slow_window_s > 0)
		fo.an.slow_window_s = o.slow_window_s;
	if (o.slow_min_iters)
		fo.an.slow_min_iters = o.slow_min_iters;
	if (o.slow_min_s >= 0)
		fo.an.slow_min_s = o.slow_min_s;
	fo.url = o.url;
	fo.out = stdout;
	fo.json = o.json;
	c = fs_consumer_new_part(o.url, o.group, o.name, o.shards, o.part, o.nparts, err,
				 sizeof(err));
	if (!c) {
		fprintf(stderr, "ccld-analyzer: %s\n", err);
		return 1;
	}
	fo.nshards = fs_consumer_nshards(c);
	fa = fleet_analyzer_new(&fo, err, sizeof(err));
	if (!fa) {
		fprintf(stderr, "ccld-analyzer: %s\n", err);
		fs_consumer_free(c);
		return 1;
	}
	if (o.metrics) {
		am = analyzer_metrics_new(o.metrics, fs_consumer_nshards(c), err, sizeof(err));
		if (!am) {
			fprintf(stderr, "ccld-analyzer: %s\n", err);
			rc = 1;
			goto out;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	/* what the streams hold: the state a restarted replica had */
	n = fs_consumer_history(c, fleet_analyzer_record, fa);
	if (n < 0) {
		fprintf(stderr, "ccld-analyzer: reading the record streams: %s\n",
			fs_consumer_error(c));
		rc = 1;
		goto out;
	}
	fprintf(stderr, "ccld-analyzer: %d records in the streams read; consuming %u"
		" of %u shards of %s as %s/%s\n", n, fs_consumer_nshards(c), o.shards, o.url,
		o.group, o.name);
	start = now_ns();
	next_claim = start + 1000000000ull;
	next_metrics = start;
	while (!stop) {
		uint64_t now;

		n = fs_consume(c, 200, fleet_analyzer_record, fa);
		if (n == -1 && !down) {
			fprintf(stderr, "ccld-analyzer: %s; retrying\n", fs_consumer_error(c));
			down = true;
		} else if (n >= 0 && down) {
			fprintf(stderr, "ccld-analyzer: %s reachable again\n", o.url);
			down = false;
		} else if (n < -1) {
			fprintf(stderr, "ccld-analyzer: out of memory\n");
			rc = 1;
			break;
		}
		fleet_analyzer_idle(fa);
		now = now_ns();
		/* entries a dead replica had read and not acknowledged */
		if (now >= next_claim) {
			fs_claim_stale(c, 30000, fleet_analyzer_record, fa);
			next_claim = now + 1000000000ull;
		}
		if (am && now >= next_metrics) {
			analyzer_metrics_update(am, fa, c);
			next_metrics = now + 1000000000ull;
		}
		if (o.duration_s > 0 && now - start >= o.duration_s * 1e9)
			break;
	}
	report(fa, c);
out:
	analyzer_metrics_free(am);
	fleet_analyzer_free(fa);
	fs_consumer_free(c);
	return rc;
}
