// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ccld-analyzer: the fleet analyzer (docs/fleet.md).  Reads
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
#include "an_config.h"
#include "analyzer_metrics.h"
#include "fleet_analyzer.h"
#include "fleet_cred.h"
#include "fleet_opts.h"
#include "fleet_stream.h"
#include "optparse.h"
#include "sha256.h"

static const char usage[] =
"Usage: ccld-analyzer --redis URL [--json]\n"
"                     " AN_CONFIG_SYNOPSIS1 "\n"
"                     " AN_CONFIG_SYNOPSIS2 "\n"
"                     " AN_CONFIG_SYNOPSIS3 " [--shards N] [--group NAME]\n"
"                     [--name NAME] [--replica I/N] [--metrics [ADDR:]PORT]\n"
"                     [--redis-auth-file FILE] [--hmac-key-file FILE]\n"
"                     [--duration SEC]\n"
"\n"
"Diagnose hangs and slowdowns of jobs traced by `ccld-trace daemon` agents\n"
"on many nodes: reads their records from Redis Streams (a consumer group),\n"
"prints each verdict once and publishes it to the stream ccld:verdicts.\n"
"\n"
"  -r, --redis URL       redis://HOST[:PORT][/DB] or unix:///PATH\n"
"  -j, --json            JSON lines (schema 1) instead of text\n";

/* after the analyzer's options (an_config_usage) and the fleet's
 * (fleet_opts_usage) */
static const char usage_tail[] =
"      --group NAME      consumer group (default ccld-analyzer)\n"
"      --name NAME       consumer name; a restart under the same name gets\n"
"                        back what it had read (default: the host name)\n"
"      --replica I/N     this is replica I (0..N-1) of N: it reads shards\n"
"                        I, I+N, I+2N... (each replica its own part)\n"
"  -d, --duration SEC    stop after SEC seconds (default: until SIGINT/SIGTERM)\n"
"  -h, --help            this text\n"
"\n"
"Exit status: 0 normal, 1 error, 2 bad usage.\n";

enum { OPT_GROUP = 256, OPT_NAME, OPT_REPLICA };

static const struct option long_opts[] = {
	FLEET_OPTS_LONG_OPTIONS,
	{ "json", no_argument, NULL, 'j' },
	AN_CONFIG_LONG_OPTIONS,
	{ "group", required_argument, NULL, OPT_GROUP },
	{ "name", required_argument, NULL, OPT_NAME },
	{ "replica", required_argument, NULL, OPT_REPLICA },
	{ "duration", required_argument, NULL, 'd' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

struct opts {
	struct fleet_opts fleet;	/* --redis, --shards, --metrics, key files */
	const char *group, *name;
	bool json;
	unsigned part, nparts;
	double duration_s;
	struct an_config an;
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

static int parse(int argc, char **argv, struct opts *o)
{
	static char host[256];
	char err[128];
	int c, ret;

	memset(o, 0, sizeof(*o));
	fleet_opts_default(&o->fleet);
	o->group = "ccld-analyzer";
	an_config_default(&o->an);
	o->nparts = 1;
	if (gethostname(host, sizeof(host) - 1))
		snprintf(host, sizeof(host), "analyzer");
	o->name = host;
	while ((c = getopt_long(argc, argv, "r:jd:h", long_opts, NULL)) != -1) {
		if (c == 'r')	/* -r is --redis */
			c = FLEET_OPT_REDIS;
		ret = fleet_opts_option(&o->fleet, c, optarg, err, sizeof(err));
		if (ret > 0)
			ret = an_config_option(&o->an, c, optarg, err, sizeof(err));
		if (ret < 0)
			return bad_usage("%s", err);
		if (!ret)
			continue;
		switch (c) {
		case 'j':
			o->json = true;
			break;
		case 'h':
			fputs(usage, stdout);
			an_config_usage(stdout);
			fleet_opts_usage(stdout);
			fputs(usage_tail, stdout);
			exit(0);
		case OPT_GROUP:
		case OPT_NAME:
			if (!*optarg)
				return bad_usage("%s", "empty --group or --name");
			*(c == OPT_GROUP ? &o->group : &o->name) = optarg;
			break;
		case OPT_REPLICA:
			if (opt_replica(optarg, &o->part, &o->nparts))
				return bad_usage("bad --replica I/N (0 <= I < N): '%s'", optarg);
			break;
		case 'd':
			if (opt_seconds(optarg, false, &o->duration_s))
				return bad_usage("bad number of seconds: '%s'", optarg);
			break;
		default:
			fprintf(stderr, "Try 'ccld-analyzer --help'.\n");
			return 2;
		}
	}
	if (optind < argc)
		return bad_usage("unexpected argument '%s'", argv[optind]);
	if (!o->fleet.redis_url)
		return bad_usage("%s", "--redis URL is required");
	if (o->nparts > o->fleet.shards)
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
		" undecodable, %" PRIu64 " rejected (%" PRIu64 " untagged, %" PRIu64
		" bad tag); %" PRIu64 " verdicts printed, %" PRIu64
		" printed before (claimed), %" PRIu64 " not published\n", st.records,
		st.dups, st.gaps, st.bad, cs.untagged + cs.bad_tag, cs.untagged,
		cs.bad_tag, st.verdicts, st.verdicts_other, st.publish_errors);
}

/* Once: entries were dropped for their tag (a forger, or a wrong key). */
static void warn_rejected(struct fs_consumer *c, bool *warned)
{
	struct fs_consumer_stats cs;

	if (*warned)
		return;
	fs_consumer_stats(c, &cs);
	if (!cs.untagged && !cs.bad_tag)
		return;
	*warned = true;
	fprintf(stderr, "ccld-analyzer: dropped a record with %s tag (node field '%s'):"
		" a writer without the HMAC key, or a wrong key; such records are"
		" counted (ccld_analyzer_rejected_total) and dropped\n",
		cs.untagged ? "no" : "a wrong", cs.rejected_node);
}

int main(int argc, char **argv)
{
	struct fleet_analyzer_opts fo = { 0 };
	struct analyzer_metrics *am = NULL;
	struct fleet_analyzer *fa;
	struct fs_consumer *c;
	static struct fs_cred cred;	/* the analyzer's claims reconnect with it */
	uint64_t start, next_claim, next_metrics;
	bool down = false, warned = false;
	char err[512];
	struct opts o;
	int rc, n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = parse(argc, argv, &o);
	if (rc)
		return rc;
	fo.an = o.an;
	/* records come from several shards: a process's calls in other comms
	 * may arrive in another order than it made them */
	fo.an.call_order = false;
	if (fleet_cred_load(&cred, o.fleet.redis_auth_file, o.fleet.hmac_key_file, err,
			    sizeof(err))) {
		fprintf(stderr, "ccld-analyzer: %s\n", err);
		return 1;
	}
	fo.url = o.fleet.redis_url;
	fo.cred = &cred;
	fo.out = stdout;
	fo.json = o.json;
	c = fs_consumer_new_part(o.fleet.redis_url, &cred, o.group, o.name,
				 o.fleet.shards, o.part, o.nparts, err, sizeof(err));
	if (!c) {
		fprintf(stderr, "ccld-analyzer: %s\n", err);
		secure_wipe(&cred, sizeof(cred));
		return 1;
	}
	fo.nshards = fs_consumer_nshards(c);
	fa = fleet_analyzer_new(&fo, err, sizeof(err));
	if (!fa) {
		fprintf(stderr, "ccld-analyzer: %s\n", err);
		fs_consumer_free(c);
		return 1;
	}
	if (o.fleet.metrics_addr) {
		am = analyzer_metrics_new(o.fleet.metrics_addr, fs_consumer_nshards(c), err,
					  sizeof(err));
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
		" of %u shards of %s as %s/%s\n", n, fs_consumer_nshards(c), o.fleet.shards,
		o.fleet.redis_url, o.group, o.name);
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
			fprintf(stderr, "ccld-analyzer: %s reachable again\n", o.fleet.redis_url);
			down = false;
		} else if (n < -1) {
			fprintf(stderr, "ccld-analyzer: out of memory\n");
			rc = 1;
			break;
		}
		warn_rejected(c, &warned);
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
	secure_wipe(&cred, sizeof(cred));
	return rc;
}
