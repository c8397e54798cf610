/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Command-line options shared by the subcommands (docs/cli.md). */
#ifndef CCLD_OPTS_H
#define CCLD_OPTS_H

#include <stdbool.h>
#include <sys/types.h>
#include "analyzer.h"
#include "fleet_opts.h"

#define MAX_PIDS 4096

struct trace_opts {
	pid_t pids[MAX_PIDS];
	int npids;
	bool all;		/* --all: every NCCL process, also later ones */
	bool stop_new;		/* --stop-new: stop new ones until attached */
	double stop_timeout_s;	/* --stop-timeout SEC: longest such stop */
	bool json;
	bool events;
	bool verbose;
	bool record;		/* `record` subcommand: no live table */
	bool daemon;		/* `daemon` subcommand: records to Redis */
	const char *output;	/* -o FILE */
	double duration_s;	/* 0: until interrupted */
	struct an_config an;	/* --stall, --hang, --slow-*: an_config.h */
	unsigned long ring_size;	/* --ring-size BYTES: main ring, 0: built-in */
	/* `daemon`: fleet node agent */
	const char *node;	/* --node NAME: this node's name */
	struct fleet_opts fleet;	/* --redis URL (records go there), --shards,
					 * --metrics, the key files: fleet_opts.h */
};

#endif
