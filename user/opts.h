/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Command-line options shared by the subcommands (DESIGN.md section 9). */
#ifndef CCLD_OPTS_H
#define CCLD_OPTS_H

#include <stdbool.h>
#include <sys/types.h>

#define MAX_PIDS 4096

struct trace_opts {
	pid_t pids[MAX_PIDS];
	int npids;
	bool all;		/* --all: every NCCL process, also later ones */
	bool json;
	bool events;
	bool verbose;
	bool record;		/* `record` subcommand: no live table */
	bool daemon;		/* `daemon` subcommand: records to Redis */
	const char *output;	/* -o FILE */
	double duration_s;	/* 0: until interrupted */
	double stall_s;
	double hang_s;
	double slow_window_s;
	unsigned slow_min_iters;	/* --slow-min-iters N */
	double slow_min_s;	/* --slow-min-s SEC */
	/* `daemon`: fleet node agent */
	const char *redis_url;	/* --redis URL: records go there */
	const char *node;	/* --node NAME: this node's name */
	unsigned shards;	/* --shards N (every agent and analyzer alike) */
	const char *metrics_addr;	/* --metrics [ADDR:]PORT, or NULL */
};

#endif
