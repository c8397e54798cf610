// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The analyzer's configuration: its defaults and its command-line options. */
#include <stdio.h>
#include "an_config.h"
#include "optparse.h"

void an_config_default(struct an_config *c)
{
	c->stall_s = 30;
	c->hang_s = 300;
	c->suspect_frac = 0.5;
	c->barrier_bytes = 4;
	c->slow_window_s = 60;
	c->slow_min_iters = 3;
	c->slow_min_s = 1;
	c->call_order = true;
	c->forget_s = 30;
	c->mem_max = 512UL << 20;
}

double an_config_suspect_s(const struct an_config *c)
{
	return c->stall_s * c->suspect_frac;
}

int an_config_option(struct an_config *c, int opt, const char *arg, char *err,
		     size_t errlen)
{
	unsigned long n;

	switch (opt) {
	case AN_OPT_STALL:
	case AN_OPT_HANG:
	case AN_OPT_SLOW_WINDOW:
		if (!opt_seconds(arg, false, opt == AN_OPT_STALL ? &c->stall_s :
				 opt == AN_OPT_HANG ? &c->hang_s : &c->slow_window_s))
			return 0;
		snprintf(err, errlen, "bad number of seconds (more than 0): '%s'", arg);
		return -1;
	case AN_OPT_SLOW_MIN_ITERS:
		if (!opt_uint(arg, 1, 1000, &n)) {
			c->slow_min_iters = (uint32_t)n;
			return 0;
		}
		snprintf(err, errlen, "bad --slow-min-iters (1..1000): '%s'", arg);
		return -1;
	case AN_OPT_SLOW_MIN_S:
		if (!opt_seconds(arg, true, &c->slow_min_s))
			return 0;
		snprintf(err, errlen, "bad --slow-min-s (0 or more seconds): '%s'", arg);
		return -1;
	case AN_OPT_FORGET:
		if (!opt_seconds(arg, true, &c->forget_s))
			return 0;
		snprintf(err, errlen, "bad --forget (0 or more seconds): '%s'", arg);
		return -1;
	case AN_OPT_MEM_MAX:
		if (!opt_size(arg, AN_MEM_MAX_MIN, AN_MEM_MAX_MAX, &n)) {
			c->mem_max = n;
			return 0;
		}
		snprintf(err, errlen, "bad --mem-max (16M..1024G, K/M/G suffixes): '%s'", arg);
		return -1;
	}
	return 1;
}

void an_config_usage(FILE *f)
{
	struct an_config d;

	an_config_default(&d);
	fprintf(f,
		"      --stall SEC       hang: no progress for SEC seconds (default %g)\n"
		"      --hang SEC        hang: op in flight longer than SEC (default %g)\n"
		"      --slow-window SEC slow detection window (default %g)\n"
		"      --slow-min-iters N  a slow verdict needs N slow iterations in a row\n"
		"                        (default %u)\n"
		"      --slow-min-s SEC  ... lasting SEC seconds at least (default %g)\n"
		"      --forget SEC      forget a process SEC after it exited, a comm SEC\n"
		"                        after its last input (default %g; 0: never)\n"
		"      --mem-max BYTES   the analyzer's comm and rank state holds at most\n"
		"                        BYTES (K/M/G suffixes; default %luM): records\n"
		"                        past it are refused, and said\n",
		d.stall_s, d.hang_s, d.slow_window_s, d.slow_min_iters, d.slow_min_s,
		d.forget_s, (unsigned long)(d.mem_max >> 20));
}
