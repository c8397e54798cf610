// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ccld-trace daemon: the fleet node agent, live tracing of every NCCL
 * process (or -p) with records sent to Redis (docs/fleet.md).
 */
#include <getopt.h>
#include "cmd.h"
#include "tracer.h"

int cmd_daemon(int argc, char **argv)
{
	static struct trace_opts o;
	int rc = opts_parse(argc, argv, &o);

	if (rc)
		return rc;
	if (optind < argc)
		return cmd_bad_usage("unexpected argument '%s'", argv[optind]);
	if (!o.fleet.redis_url)
		return cmd_bad_usage("%s", "daemon needs --redis URL");
	if (o.all)
		return cmd_bad_usage("%s", "daemon traces every NCCL process unless -p is given");
	if (o.stop_new && o.npids)
		return cmd_bad_usage("%s", "--stop-new is for new processes: not with -p");
	o.all = o.npids == 0;
	o.daemon = true;
	return tracer_run(&o);
}
