// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ccld-trace: find the rank that makes an NCCL job hang or slow down.
 * Subcommands in a table (bpftool style); no subcommand means live tracing.
 */
#include <errno.h>
#include <execinfo.h>
#include <getopt.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd_probe_check.h"
#include "opts.h"
#include "replay.h"
#include "tracer.h"

static const char usage[] =
"Usage: ccld-trace [-p PID[,PID..] | --all] [--json] [--events] [-o FILE]\n"
"                  [--duration SEC] [--stall SEC] [--hang SEC] [--slow-window SEC]\n"
"                  [--slow-min-iters N] [--slow-min-s SEC]\n"
"       ccld-trace record (-p PID[,PID..] | --all) -o FILE [options]\n"
"       ccld-trace replay FILE.. [--json] [--events]\n"
"       ccld-trace daemon --redis URL --node NAME [-p PID[,PID..]] [--shards N]\n"
"                  [--metrics [ADDR:]PORT]\n"
"       ccld-trace probe-check [--json] LIBRARY\n"
"\n"
"Trace the NCCL calls of running processes with eBPF uprobes (no restart,\n"
"no change to the job) and diagnose hangs and slowdowns across ranks.\n"
"\n"
"  -p, --pid PIDS        trace these processes (comma separated)\n"
"  -a, --all             trace every NCCL process, also ones started later\n"
"  -j, --json            JSON lines (schema 1) instead of text\n"
"  -e, --events          one line per collective / p2p call\n"
"  -o, --output FILE     also record a capture file (.ccld)\n"
"  -d, --duration SEC    stop after SEC seconds (default: until Ctrl-C)\n"
"      --stall SEC       hang: no progress for SEC seconds (default 30)\n"
"      --hang SEC        hang: op in flight longer than SEC (default 300)\n"
"      --slow-window SEC slow detection window (default 60)\n"
"      --slow-min-iters N  a slow verdict needs N slow iterations in a row\n"
"                        (default 3)\n"
"      --slow-min-s SEC  ... lasting SEC seconds at least (default 1)\n"
"  -v, --verbose         say what was attached and why\n"
"daemon (fleet node agent; docs/fleet.md):\n"
"      --redis URL       send analyzer records to Redis Streams at URL\n"
"                        (redis://HOST[:PORT][/DB] or unix:///PATH)\n"
"      --node NAME       this node's name in verdicts (default: host name)\n"
"      --shards N        record streams, as the analyzers use (default 8)\n"
"      --metrics [ADDR:]PORT  Prometheus /metrics on this address\n"
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

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "ccld-trace: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'ccld-trace --help'.\n");
	return 2;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || v < 0)
		return -1;
	*out = v;
	return 0;
}

static int parse_pids(const char *s, struct trace_opts *o)
{
	char *copy = strdup(s), *tok, *save = NULL;
	int rc = 0;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		long v;

		errno = 0;
		v = strtol(tok, &end, 10);
		if (errno || end == tok || *end || v <= 0 || v > 0x3fffffff ||
		    o->npids >= MAX_PIDS) {
			rc = -1;
			break;
		}
		o->pids[o->npids++] = v;
	}
	free(copy);
	return rc;
}

enum { OPT_STALL = 256, OPT_HANG, OPT_SLOW_WINDOW, OPT_REDIS, OPT_NODE, OPT_SHARDS,
       OPT_METRICS, OPT_SLOW_MIN_ITERS, OPT_SLOW_MIN_S };

static bool fleet_opts(const struct trace_opts *o)
{
	return o->redis_url || o->node || o->shards || o->metrics_addr;
}

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "all", no_argument, NULL, 'a' },
	{ "json", no_argument, NULL, 'j' },
	{ "events", no_argument, NULL, 'e' },
	{ "output", required_argument, NULL, 'o' },
	{ "duration", required_argument, NULL, 'd' },
	{ "stall", required_argument, NULL, OPT_STALL },
	{ "hang", required_argument, NULL, OPT_HANG },
	{ "slow-window", required_argument, NULL, OPT_SLOW_WINDOW },
	{ "slow-min-iters", required_argument, NULL, OPT_SLOW_MIN_ITERS },
	{ "slow-min-s", required_argument, NULL, OPT_SLOW_MIN_S },
	{ "verbose", no_argument, NULL, 'v' },
	{ "redis", required_argument, NULL, OPT_REDIS },
	{ "node", required_argument, NULL, OPT_NODE },
	{ "shards", required_argument, NULL, OPT_SHARDS },
	{ "metrics", required_argument, NULL, OPT_METRICS },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

/* Parses options from argv[optind..]; leaves positional args after optind. */
static int parse_opts(int argc, char **argv, struct trace_opts *o)
{
	double *target;
	int c;

	while ((c = getopt_long(argc, argv, "p:ajeo:d:vh", long_opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_pids(optarg, o))
				return bad_usage("bad PID list: '%s'", optarg);
			break;
		case 'a':
			o->all = true;
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
		case OPT_REDIS:
			o->redis_url = optarg;
			break;
		case OPT_NODE:
			if (!*optarg || strlen(optarg) > 63)
				return bad_usage("--node: 1 to 63 characters: '%s'", optarg);
			o->node = optarg;
			break;
		case OPT_SHARDS: {
			char *end;
			unsigned long n = strtoul(optarg, &end, 10);

			if (*end || !*optarg || n < 1 || n > 4096)
				return bad_usage("bad --shards (1..4096): '%s'", optarg);
			o->shards = (unsigned)n;
			break;
		}
		case OPT_METRICS:
			o->metrics_addr = optarg;
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
			if (parse_seconds(optarg, &o->slow_min_s))
				return bad_usage("bad number of seconds: '%s'", optarg);
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		case 'd':
		case OPT_STALL:
		case OPT_HANG:
		case OPT_SLOW_WINDOW:
			target = c == 'd' ? &o->duration_s :
				 c == OPT_STALL ? &o->stall_s :
				 c == OPT_HANG ? &o->hang_s : &o->slow_window_s;
			if (parse_seconds(optarg, target))
				return bad_usage("bad number of seconds: '%s'", optarg);
			break;
		default:
			fprintf(stderr, "Try 'ccld-trace --help'.\n");
			return 2;
		}
	}
	return 0;
}

static void default_opts(struct trace_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->stall_s = 30;
	o->hang_s = 300;
	o->slow_window_s = 60;
	o->slow_min_iters = 3;
	o->slow_min_s = 1;
}

static int cmd_trace(int argc, char **argv, bool record)
{
	static struct trace_opts o;
	int rc;

	default_opts(&o);
	o.record = record;
	rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc;
	if (optind < argc)
		return bad_usage("unexpected argument '%s'", argv[optind]);
	if (!o.npids && !o.all)
		return bad_usage("%s", "choose processes: -p PID[,PID..] or --all");
	if (o.npids && o.all)
		return bad_usage("%s", "-p and --all exclude each other");
	if (record && !o.output)
		return bad_usage("%s", "record needs -o FILE");
	if (fleet_opts(&o))
		return bad_usage("%s", "--redis, --node, --shards and --metrics are daemon options");
	return tracer_run(&o);
}

static int cmd_daemon(int argc, char **argv)
{
	static struct trace_opts o;
	int rc;

	default_opts(&o);
	rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc;
	if (optind < argc)
		return bad_usage("unexpected argument '%s'", argv[optind]);
	if (!o.redis_url)
		return bad_usage("%s", "daemon needs --redis URL");
	if (o.all)
		return bad_usage("%s", "daemon traces every NCCL process unless -p is given");
	o.all = o.npids == 0;
	o.daemon = true;
	return tracer_run(&o);
}

static int cmd_live(int argc, char **argv)
{
	return cmd_trace(argc, argv, false);
}

static int cmd_record(int argc, char **argv)
{
	return cmd_trace(argc, argv, true);
}

static int cmd_replay(int argc, char **argv)
{
	static struct trace_opts o;
	int rc;

	default_opts(&o);
	rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc;
	if (o.npids || o.all || o.output)
		return bad_usage("%s", "replay takes files, not -p/--all/-o");
	if (fleet_opts(&o))
		return bad_usage("%s", "--redis, --node, --shards and --metrics are daemon options");
	if (optind >= argc)
		return bad_usage("%s", "replay needs at least one FILE");
	return replay_run(&o, argv + optind, argc - optind);
}

static const struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
} cmds[] = {
	{ "record", cmd_record },
	{ "daemon", cmd_daemon },
	{ "replay", cmd_replay },
	{ "probe-check", cmd_probe_check },
};

/*
 * A crash prints where it happened (a rare SIGSEGV at the end of a step-hook
 * run is still open: docs/notes), then dies of the signal as before.  Only
 * async-signal-safe calls: backtrace() is made safe by a first call at start.
 */
static void on_crash(int sig)
{
	void *frames[64];
	int n = backtrace(frames, 64);

	(void)!write(STDERR_FILENO, "ccld-trace: crashed; backtrace:\n", 32);
	backtrace_symbols_fd(frames, n, STDERR_FILENO);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void crash_handlers(void)
{
	void *warm[1];

	backtrace(warm, 1);	/* loads libgcc now, not in the handler */
	signal(SIGSEGV, on_crash);
	signal(SIGBUS, on_crash);
	signal(SIGABRT, on_crash);
}

int main(int argc, char **argv)
{
	size_t i;

	crash_handlers();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && argv[1][0] != '-') {
		for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
			if (strcmp(argv[1], cmds[i].name) == 0)
				return cmds[i].fn(argc - 1, argv + 1);
		}
		return bad_usage("unknown command '%s'", argv[1]);
	}
	return cmd_live(argc, argv);
}
