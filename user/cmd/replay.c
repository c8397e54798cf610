// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* ccld-trace replay FILE..: capture files through the live pipeline. */
#include <getopt.h>
#include "cmd.h"
#include "replay.h"

int cmd_replay(int argc, char **argv)
{
	static struct trace_opts o;
	int rc = opts_parse(argc, argv, &o);

	if (rc)
		return rc;
	if (o.npids || o.all || o.output || o.stop_new || o.ring_size)
		return cmd_bad_usage("%s", "replay takes files, not -p/--all/-o/--stop-new/--ring-size");
	if (opts_fleet(&o))
		return cmd_bad_usage("%s", "--redis, --node, --shards, --metrics and the key files are daemon options");
	if (optind >= argc)
		return cmd_bad_usage("%s", "replay needs at least one FILE");
	return replay_run(&o, argv + optind, argc - optind);
}
