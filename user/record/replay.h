/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef CCLD_REPLAY_H
#define CCLD_REPLAY_H

#include "opts.h"

/* ccld-trace replay FILE..: same output as live; returns exit status. */
int replay_run(const struct trace_opts *o, char **files, int nfiles);

#endif
