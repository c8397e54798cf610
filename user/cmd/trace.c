// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ccld-trace [-p PIDS | --all] and ccld-trace record: live tracing, with a
 * capture file (-o) that record requires (live/tracer.c does the work).
 */
#include <getopt.h>
#include "cmd.h"
#include "tracer.h"

static int cmd_trace(int argc, char **argv, bool record)
{
	static struct trace_opts o;
	int rc = opts_parse(argc, argv, &o);

	if (rc)
		return rc;
	o.record = record;
	if (optind < argc)
		return cmd_bad_usage("unexpected argument '%s'", argv[optind]);
	if (!o.npids && !o.all)
		return cmd_bad_usage("%s", "choose processes: -p PID[,PID..] or --all");
	if (o.npids && o.all)
		return cmd_bad_usage("%s", "-p and --all exclude each other");
	if (o.stop_new && !o.all)
		return cmd_bad_usage("%s", "--stop-new goes with --all");
	if (record && !o.output)
		return cmd_bad_usage("%s", "record needs -o FILE");
	if (opts_fleet(&o))
		return cmd_bad_usage("%s", "--redis, --node, --shards, --metrics and the key files are daemon options");
	return tracer_run(&o);
}

int cmd_live(int argc, char **argv)
{
	return cmd_trace(argc, argv, false);
}

int cmd_record(int argc, char **argv)
{
	return cmd_trace(argc, argv, true);
}
