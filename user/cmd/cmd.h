/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ccld-trace's subcommands, one file each (main.c has the table), and the
 * option parser they share (opts.c).  Each returns the exit status:
 * 0 normal, 1 error, 2 bad usage.
 */
#ifndef CCLD_CMD_H
#define CCLD_CMD_H

#include <stdbool.h>
#include "opts.h"

/* ccld-trace [-p PIDS | --all] (trace.c) */
int cmd_live(int argc, char **argv);
/* ccld-trace record ... -o FILE (trace.c) */
int cmd_record(int argc, char **argv);
/* ccld-trace daemon --redis URL (daemon.c) */
int cmd_daemon(int argc, char **argv);
/* ccld-trace replay FILE.. (replay.c) */
int cmd_replay(int argc, char **argv);
/*
 * ccld-trace probe-check [--json] LIB (probe_check.c); argv[0] is
 * "probe-check".  Exit status: 0 every required tier A hook resolves, 1
 * some do not (or LIB cannot be read), 2 bad usage.
 */
int cmd_probe_check(int argc, char **argv);

/* "ccld-trace: " FMT with ARG and the --help hint on stderr; returns 2 */
int cmd_bad_usage(const char *fmt, const char *arg);
/*
 * O with every default (docs/cli.md), then the options of argv[optind..];
 * positional args are left after optind.  0, or the exit status.
 */
int opts_parse(int argc, char **argv, struct trace_opts *o);
/* any of the daemon's own options given */
bool opts_fleet(const struct trace_opts *o);

#endif
