/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The fleet's connection options, taken alike by `ccld-trace daemon` and
 * ccld-analyzer: one set of names, one set of rules, the defaults of
 * fleet_opts_default() (the one place they are written) in the usage text.
 * Each program keeps its own --redis help line (ccld-analyzer also takes
 * it as -r) and says itself whether --redis is missing.
 */
#ifndef CCLD_FLEET_OPTS_H
#define CCLD_FLEET_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct fleet_opts {
	const char *redis_url;		/* --redis URL, or NULL */
	unsigned shards;		/* --shards N: every agent and analyzer alike */
	const char *metrics_addr;	/* --metrics [ADDR:]PORT, or NULL */
	const char *redis_auth_file;	/* --redis-auth-file FILE, or NULL */
	const char *hmac_key_file;	/* --hmac-key-file FILE, or NULL */
	bool given;			/* one of them was given: ccld-trace
					 * refuses them outside `daemon` */
};

/* apart from an_config.h's AN_OPT_* and each program's own option ids */
enum fleet_opt {
	FLEET_OPT_REDIS = 0x1100,
	FLEET_OPT_SHARDS,
	FLEET_OPT_METRICS,
	FLEET_OPT_REDIS_AUTH_FILE,
	FLEET_OPT_HMAC_KEY_FILE,
};

/* entries of a getopt_long table (the including file has <getopt.h>) */
#define FLEET_OPTS_LONG_OPTIONS \
	{ "redis", required_argument, NULL, FLEET_OPT_REDIS }, \
	{ "shards", required_argument, NULL, FLEET_OPT_SHARDS }, \
	{ "metrics", required_argument, NULL, FLEET_OPT_METRICS }, \
	{ "redis-auth-file", required_argument, NULL, FLEET_OPT_REDIS_AUTH_FILE }, \
	{ "hmac-key-file", required_argument, NULL, FLEET_OPT_HMAC_KEY_FILE }

/* O with every default: the one place they are written */
void fleet_opts_default(struct fleet_opts *o);

/*
 * Option OPT (an enum fleet_opt) with its argument ARG into O: 0; -1 with
 * ERR saying what is wrong with ARG; 1 when OPT is not one of these.
 */
int fleet_opts_option(struct fleet_opts *o, int opt, const char *arg, char *err,
		      size_t errlen);

/* The --help lines of all of them but --redis, with the defaults. */
void fleet_opts_usage(FILE *f);

#endif
