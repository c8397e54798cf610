/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef CCLD_TRACER_H
#define CCLD_TRACER_H

#include "opts.h"

/* Live tracing (ccld-trace [-p PIDS | --all], record); returns exit status. */
int tracer_run(const struct trace_opts *o);

#endif
