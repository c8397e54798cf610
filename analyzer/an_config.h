/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The analyzer's options, taken alike by ccld-trace and ccld-analyzer: one
 * set of names, one parser per value, the defaults of an_config_default()
 * (the one place they are written) in the usage text.
 */
#ifndef CCLD_AN_CONFIG_H
#define CCLD_AN_CONFIG_H

#include <stddef.h>
#include <stdio.h>
#include "analyzer.h"

enum an_opt {
	AN_OPT_STALL = 0x1000,
	AN_OPT_HANG,
	AN_OPT_SLOW_WINDOW,
	AN_OPT_SLOW_MIN_ITERS,
	AN_OPT_SLOW_MIN_S,
	AN_OPT_FORGET,
	AN_OPT_MEM_MAX,
};

/* --mem-max's bounds: 16 MiB (a few comms of 16k ranks), 1 TiB */
#define AN_MEM_MAX_MIN	(16UL << 20)
#define AN_MEM_MAX_MAX	(1UL << 40)

/* entries of a getopt_long table (the including file has <getopt.h>) */
#define AN_CONFIG_LONG_OPTIONS \
	{ "stall", required_argument, NULL, AN_OPT_STALL }, \
	{ "hang", required_argument, NULL, AN_OPT_HANG }, \
	{ "slow-window", required_argument, NULL, AN_OPT_SLOW_WINDOW }, \
	{ "slow-min-iters", required_argument, NULL, AN_OPT_SLOW_MIN_ITERS }, \
	{ "slow-min-s", required_argument, NULL, AN_OPT_SLOW_MIN_S }, \
	{ "forget", required_argument, NULL, AN_OPT_FORGET }, \
	{ "mem-max", required_argument, NULL, AN_OPT_MEM_MAX }

/* the synopsis of those options, in three parts for usage lines */
#define AN_CONFIG_SYNOPSIS1	"[--stall SEC] [--hang SEC] [--slow-window SEC]"
#define AN_CONFIG_SYNOPSIS2	"[--slow-min-iters N] [--slow-min-s SEC] [--forget SEC]"
#define AN_CONFIG_SYNOPSIS3	"[--mem-max BYTES]"

/*
 * Option OPT (an enum an_opt) with its argument ARG into C: 0; -1 with ERR
 * saying what is wrong with ARG; 1 when OPT is not one of these.
 */
int an_config_option(struct an_config *c, int opt, const char *arg, char *err,
		     size_t errlen);

/*
 * ccld's one notion of "stuck": a rank inside an NCCL call whose comm made
 * no progress for this long (--stall times the suspicion fraction, 15 s by
 * default) is looked at.  The analyzer then suspects the comm (step hooks
 * on, a verdict at --stall), and the state shows the rank blocked-in-call.
 */
double an_config_suspect_s(const struct an_config *c);

/* Their lines of a --help text, with the defaults. */
void an_config_usage(FILE *f);

#endif
