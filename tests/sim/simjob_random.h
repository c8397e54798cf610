/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ccld-simjob --random SEED: a job and at most one fault drawn from a seed
 * (docs/simjob.md, "Random jobs").  The draw is a plain ccld-simjob
 * command line, the stand-in fault (CCLD_SIM_FAULT) where the fault is a
 * hardware one, how a tracer should attach, and the truth a diagnosis is
 * scored against.
 */
#ifndef CCLD_SIMJOB_RANDOM_H
#define CCLD_SIMJOB_RANDOM_H

#define DRAW_MAX_ARGS 48

struct simjob_draw {
	int argc;
	char *argv[DRAW_MAX_ARGS];	/* options only, no program name */
	char fault_env[160];		/* CCLD_SIM_FAULT, "" for none */
	int net_us;			/* CCLD_SIM_NET_US, 0: the stand-in's */
	char json[1024];		/* the whole draw, truth included */
	char store[2048];		/* the argv strings */
};

/* draws the job of SEED into D; the same seed gives the same draw */
void simjob_random(unsigned long long seed, struct simjob_draw *d);

#endif
