// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ccld-trace's options: the usage text and the parser every subcommand
 * but probe-check shares (docs/cli.md); each subcommand then says which
 * options it takes (trace.c, daemon.c, replay.c).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "an_config.h"
#include "cmd.h"
#include "fleet_opts.h"
#include "optparse.h"

static const char usage[] =
"Usage: ccld-trace [-p PID[,PID..] | --all] [--json] [--events] [-o FILE]\n"
"                  [--duration SEC] " AN_CONFIG_SYNOPSIS1 "\n"
"                  " AN_CONFIG_SYNOPSIS2 "\n"
"                  " AN_CONFIG_SYNOPSIS3 " [--stop-new [--stop-timeout SEC]]\n"
"                  [--ring-size BYTES]\n"
"       ccld-trace record (-p PID[,PID..] | --all) -o FILE [options]\n"
"       ccld-trace replay FILE.. [--json] [--events]\n"
"       ccld-trace daemon --redis URL --node NAME [-p PID[,PID..]] [--shards N]\n"
"                  [--metrics [ADDR:]PORT] [--stop-new [--stop-timeout SEC]]\n"
"                  [--redis-auth-file FILE] [--hmac-key-file FILE] [--ring-size BYTES]\n"
"       ccld-trace probe-check [--json] LIBRARY\n"
"\n"
"Trace the NCCL calls of running processes with eBPF uprobes (no restart,\n"
"no change to the job) and diagnose hangs and slowdowns across ranks.\n"
"\n"
"  -p, --pid PIDS        trace these processes (comma separated)\n"
"  -a, --all             trace every NCCL process, also ones started later\n"
"      --stop-new        with --all: stop a process that loads an NCCL library\n"
"                        not probed yet until its probes are attached (no\n"
"                        call missed); off by default\n"
"      --stop-timeout SEC  such a stop lasts SEC at most, even if ccld-trace\n"
"                        is stopped or killed (default 2)\n"
"  -j, --json            JSON lines (schema 1) instead of text\n"
"  -e, --events          one line per collective / p2p call\n"
"  -o, --output FILE     also record a capture file (.ccld)\n"
"  -d, --duration SEC    stop after SEC seconds (default: until Ctrl-C)\n";

/* after the analyzer's options (an_config_usage) */
static const char usage_daemon[] =
"      --ring-size BYTES the main ring buffer's size: a power of two, 4K to\n"
"                        1G, K/M/G suffixes (default 8M)\n"
"  -v, --verbose         say what was attached and why\n"
"daemon (fleet node agent; docs/fleet.md):\n"
"      --redis URL       send analyzer records to Redis Streams at URL\n"
"                        (redis://HOST[:PORT][/DB] or unix:///PATH)\n"
"      --node NAME       this node's name in verdicts (default: host name)\n";

/* after the fleet's options (fleet_opts_usage) */
static const char usage_tail[] =
"  -h, --help            this text\n"
"\n"
"Examples:\n"
"  sudo ccld-trace -p 4242,4243              live per-communicator view\n"
"  sudo ccld-trace --all --json --events     every call as JSON lines\n"
"  sudo ccld-trace record --all -o node7.ccld\n"
"  ccld-trace replay node*.ccld\n"
"  ccld-trace probe-check /usr/lib/x86_64-linux-gnu/libnccl.so.2\n"
"\n"
"Signals: SIGINT/SIGTERM stop; SIGUSR1 reads every traced process's\n"
"communicators, proxies and threads from memory again (as at attach).\n"
"Exit status: 0 normal, 1 error, 2 bad usage.\n";

static void print_usage(void)
{
	fputs(usage, stdout);
	an_config_usage(stdout);
	fputs(usage_daemon, stdout);
	fleet_opts_usage(stdout);
	fputs(usage_tail, stdout);
}

int cmd_bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "ccld-trace: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'ccld-trace --help'.\n");
	return 2;
}

/* a duration option: 0 allowed (--duration 0: until interrupted) */
static int parse_seconds(const char *s, double *out)
{
	return opt_seconds(s, true, out);
}

enum { OPT_NODE = 256, OPT_STOP_NEW, OPT_STOP_TIMEOUT, OPT_RING_SIZE };

bool opts_fleet(const struct trace_opts *o)
{
	return o->node || o->fleet.given;
}

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "all", no_argument, NULL, 'a' },
	{ "stop-new", no_argument, NULL, OPT_STOP_NEW },
	{ "stop-timeout", required_argument, NULL, OPT_STOP_TIMEOUT },
	{ "json", no_argument, NULL, 'j' },
	{ "events", no_argument, NULL, 'e' },
	{ "output", required_argument, NULL, 'o' },
	{ "duration", required_argument, NULL, 'd' },
	AN_CONFIG_LONG_OPTIONS,
	{ "ring-size", required_argument, NULL, OPT_RING_SIZE },
	{ "verbose", no_argument, NULL, 'v' },
	FLEET_OPTS_LONG_OPTIONS,
	{ "node", required_argument, NULL, OPT_NODE },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static void opts_default(struct trace_opts *o)
{
	memset(o, 0, sizeof(*o));
	an_config_default(&o->an);
	fleet_opts_default(&o->fleet);
	o->stop_timeout_s = 2;
}

/*
 * O with every default, then the options of argv[optind..]; positional
 * args are left after optind.  0, or the exit status.
 */
int opts_parse(int argc, char **argv, struct trace_opts *o)
{
	bool stop_timeout_set = false;
	char err[128];
	int c, ret;

	opts_default(o);
	while ((c = getopt_long(argc, argv, "p:ajeo:d:vh", long_opts, NULL)) != -1) {
		ret = an_config_option(&o->an, c, optarg, err, sizeof(err));
		if (ret > 0)
			ret = fleet_opts_option(&o->fleet, c, optarg, err, sizeof(err));
		if (ret < 0)
			return cmd_bad_usage("%s", err);
		if (!ret)
			continue;
		switch (c) {
		case 'p':
			if (opt_pids(optarg, o->pids, &o->npids, MAX_PIDS))
				return cmd_bad_usage("bad PID list: '%s'", optarg);
			break;
		case 'a':
			o->all = true;
			break;
		case OPT_STOP_NEW:
			o->stop_new = true;
			break;
		case OPT_STOP_TIMEOUT:
			if (parse_seconds(optarg, &o->stop_timeout_s) ||
			    o->stop_timeout_s < 0.1 || o->stop_timeout_s > 60)
				return cmd_bad_usage("bad --stop-timeout (0.1..60 s): '%s'", optarg);
			stop_timeout_set = true;
			break;
		case 'j':
			o->json = true;
			break;
		case 'e':
			o->events = true;
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'v':
			o->verbose = true;
			break;
		case OPT_NODE:
			if (!*optarg || strlen(optarg) > 63)
				return cmd_bad_usage("--node: 1 to 63 characters: '%s'", optarg);
			o->node = optarg;
			break;
		case OPT_RING_SIZE:
			if (opt_pow2_size(optarg, OPT_RING_MIN, OPT_RING_MAX, &o->ring_size))
				return cmd_bad_usage("bad --ring-size (a power of two, 4K..1G): '%s'",
						 optarg);
			break;
		case 'h':
			print_usage();
			exit(0);
		case 'd':
			if (parse_seconds(optarg, &o->duration_s))
				return cmd_bad_usage("bad number of seconds: '%s'", optarg);
			break;
		default:
			fprintf(stderr, "Try 'ccld-trace --help'.\n");
			return 2;
		}
	}
	if (stop_timeout_set && !o->stop_new)
		return cmd_bad_usage("%s", "--stop-timeout goes with --stop-new");
	return 0;
}
