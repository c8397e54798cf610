/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Options of ccld-simjob, shared by the launcher (simjob.c) and the rank
 * program (simjob_rank.c): the launcher validates them and passes the same
 * argv to every rank.  docs/simjob.md documents each one.
 */
#ifndef CCLD_SIMJOB_OPTS_H
#define CCLD_SIMJOB_OPTS_H

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum skip_which {
	SKIP_TP, SKIP_TP1, SKIP_DP, SKIP_PP, SKIP_LOSS, SKIP_PPSEND, SKIP_A2A, SKIP_BCAST
};
enum pattern { PAT_PLAIN, PAT_PYTORCH, PAT_MOE };
enum mm_field { MM_OP, MM_COUNT, MM_DTYPE, MM_REDOP, MM_ROOT };

#define SIMJOB_MAX_RANK_ENV	8

struct simjob_opts {
	int ranks, tp, pp, steps;
	int ranks_per_host;	/* 0: every connection over the network */
	double compute_ms, jitter_pct, step_delay_ms;
	long size;
	const char *wait_start, *pidfile, *init;
	const char *wait_init;	/* ranks wait for this file before their init */
	int noinit_rank;	/* --no-init R: R never calls init (-1: off) */
	int nosplit_rank;	/* --no-split R: R never calls its first split (-1: off) */
	double timeout_s;
	int verbose;
	/* application faults: rank -1 = off */
	int skip_rank, skip_step, skip_which;
	int mm_rank, mm_step, mm_field;
	int slow_rank, slow_step, slow_steps;	/* slow_steps 0: to the end */
	double slow_factor;
	int hang_rank, hang_step;
	const char *hang_write;	/* --hang R:S:write=PATH: blocked writing PATH */
	int exit_rank, exit_step, exit_code;
	int stop_rank, stop_step;	/* --stop: the rank stops itself (SIGSTOP) */
	double fault_at_ms;	/* > 0: fault steps count from this time on */
	int pause_step;
	double pause_s;
	int bw_rank, bw_step;
	double bw_s;
	int gpu_compute;	/* compute phase as a kernel on the stream */
	int bcast;		/* --bcast: DDP's buffer broadcast on the DP comm each step */
	int pattern;		/* enum pattern */
	/* --rank-env R:NAME=VALUE: NAME=VALUE in rank R's environment */
	int renv_rank[SIMJOB_MAX_RANK_ENV];
	const char *renv[SIMJOB_MAX_RANK_ENV];
	int nrenv;
};

static const char simjob_usage[] =
"Usage: ccld-simjob [OPTIONS]\n"
"Runs a simulated data/tensor/pipeline-parallel training job on the GPU-less\n"
"NCCL stand-in: N rank processes (children of this launcher, like torchrun),\n"
"communicators made by ncclCommSplit, training-like steps, results checked.\n"
"\n"
"Job:\n"
"  --ranks N            rank processes (default 8)\n"
"  --tp T --pp P        tensor / pipeline parallel sizes; DP = N/(T*P) (default 1 1)\n"
"  --ranks-per-host H   consecutive groups of H ranks share a host (NCCL_HOSTID):\n"
"                       peers on one host talk over P2P/SHM, no proxy; default:\n"
"                       every connection over the network (NCCL_P2P_DISABLE=1,\n"
"                       NCCL_SHM_DISABLE=1)\n"
"  --steps S            training steps (default 100)\n"
"  --compute-ms MS      compute phase per step, a sleep (default 5)\n"
"  --gpu-compute        the compute phase is a simulated kernel on the rank's\n"
"                       stream, waited for (gpuslow / gpustall slow or stop it)\n"
"  --jitter PCT         +-PCT%% random variation of the compute phase (default 0)\n"
"  --size ELEMS         float32 elements of the gradient buffers (default 4096)\n"
"  --step-delay MS      extra sleep after every step (default 0)\n"
"  --init config|rank   world comm by ncclCommInitRankConfig (default) or InitRank\n"
"  --bcast              each step starts with a broadcast of 16 floats from the\n"
"                       DP comm's rank 0 (DDP's buffers; plain and pytorch, DP > 1)\n"
"  --pattern plain|pytorch  how each step drives NCCL (default plain); pytorch:\n"
"                       compute kernels and every call queued on one stream\n"
"                       without waiting, 4 same-size TP all-reduces, the\n"
"                       pipeline send/recv group on the world comm, then one\n"
"                       event record + cudaEventSynchronize per step; moe\n"
"                       (PP >= 2, TP 1): a mixture-of-experts step as\n"
"                       PyTorch drives it: a compute and an NCCL stream\n"
"                       joined by events both ways, expert all-to-alls on\n"
"                       each stage's DP comm as one group of send/recv per\n"
"                       peer (itself included), pipeline send/recv on the\n"
"                       world comm, a host sync every other step\n"
"  --rank-env R:NAME=VALUE  set NAME=VALUE in rank R's environment (up to 8;\n"
"                       e.g. another NCCL_ALGO, or LD_LIBRARY_PATH to another\n"
"                       build of the stand-in: ranks that do not agree)\n"
"  --wait-start FILE    ranks wait after init until FILE exists (attach a tracer)\n"
"  --wait-init FILE     ranks wait before init until FILE exists (trace the init)\n"
"  --pidfile FILE       write 'RANK PID' lines once all ranks are started\n"
"  --timeout SEC        kill the ranks after SEC seconds, exit 124\n"
"  -v, --verbose        one line per rank per step\n"
"Application faults (R rank, S step, 0-based):\n"
"  --skip R:S[:WHICH]   rank R skips a collective at step S; WHICH tp (every TP\n"
"                       all-reduce of the step), tp1 (the second one), dp, pp\n"
"                       (the whole pipeline group), ppsend (only its first\n"
"                       send), a2a (moe: its send to the next DP peer in the\n"
"                       dispatch all-to-all), bcast (--bcast's broadcast) or\n"
"                       loss (default: the world all-reduce)\n"
"  --mismatch R:S:FIELD rank R's loss all-reduce at step S differs in FIELD:\n"
"                       op (a Reduce), count, dtype or redop; root: its\n"
"                       --bcast broadcast names DP rank 1 its root\n"
"  --slow R:S:F[:N]     rank R's compute phase is F times longer from step S on\n"
"                       (for N steps; default: to the end)\n"
"  --hang R:S[:write=PATH]  rank R hangs in CPU code at step S (never returns);\n"
"                       with write=PATH it blocks in write() on PATH (a FIFO\n"
"                       nobody reads: a checkpoint write that does not finish;\n"
"                       a relative PATH is made in the job's run directory)\n"
"  --exit R:S[:CODE]    rank R exits at step S without cleanup (default code 1)\n"
"  --stop R:S           rank R stops itself (SIGSTOP) at step S, between calls\n"
"  --no-init R          rank R never calls ncclCommInitRank*: it blocks in pause()\n"
"                       and the others wait inside their init\n"
"  --no-split R         rank R calls init, then never its first ncclCommSplit:\n"
"                       it blocks in pause(), the others wait inside the split\n"
"  --fault-at-ms MS     the step S of --skip, --mismatch, --slow, --hang, --exit\n"
"                       and --stop counts from the first step rank R starts at\n"
"                       least MS ms after its first step (a fault at a time)\n"
"  --pause S:SEC        every rank pauses SEC seconds at step S (checkpoint)\n"
"  --barrier-wait R:S:SEC  at step S every rank calls a 1-element all-reduce\n"
"                       (a barrier); rank R sleeps SEC seconds before it\n"
"Random jobs (docs/simjob.md):\n"
"  --random SEED        a job and at most one fault drawn from SEED (the other\n"
"                       options given are added after the drawn ones)\n"
"  --dry-run            with --random: print the draw (JSON: job, fault, truth,\n"
"                       how to attach) and the equivalent command, run nothing\n"
"Exit status: 0 all ranks correct; 1 a rank failed or reported wrong results;\n"
"2 bad usage; 124 --timeout expired.\n";

static int simjob_parse_ints(const char *s, int *a, int *b, char **rest)
{
	char *end;

	*a = (int)strtol(s, &end, 10);
	if (end == s || *end != ':')
		return -1;
	s = end + 1;
	*b = (int)strtol(s, &end, 10);
	if (end == s || (*end && *end != ':'))
		return -1;
	*rest = *end ? end + 1 : NULL;
	return 0;
}

static int simjob_bad(const char *opt, const char *val)
{
	fprintf(stderr, "ccld-simjob: bad value '%s' for --%s (see --help)\n", val, opt);
	return -1;
}

static int simjob_parse(int argc, char **argv, struct simjob_opts *o)
{
	static const struct option lo[] = {
		{ "ranks", 1, 0, 'n' }, { "tp", 1, 0, 't' }, { "pp", 1, 0, 'p' },
		{ "steps", 1, 0, 's' }, { "compute-ms", 1, 0, 'c' }, { "jitter", 1, 0, 'j' },
		{ "size", 1, 0, 'z' }, { "step-delay", 1, 0, 'd' }, { "init", 1, 0, 'I' },
		{ "wait-start", 1, 0, 'w' }, { "pidfile", 1, 0, 'P' }, { "timeout", 1, 0, 'T' },
		{ "verbose", 0, 0, 'v' }, { "help", 0, 0, 'h' }, { "skip", 1, 0, 'K' },
		{ "mismatch", 1, 0, 'M' }, { "slow", 1, 0, 'S' }, { "hang", 1, 0, 'H' },
		{ "exit", 1, 0, 'E' }, { "pause", 1, 0, 'A' }, { "barrier-wait", 1, 0, 'B' },
		{ "gpu-compute", 0, 0, 'G' }, { "pattern", 1, 0, 'X' },
		{ "ranks-per-host", 1, 0, 'R' }, { "stop", 1, 0, 'O' },
		{ "fault-at-ms", 1, 0, 'F' }, { "rank-env", 1, 0, 'V' },
		{ "wait-init", 1, 0, 'W' }, { "no-init", 1, 0, 'N' },
		{ "no-split", 1, 0, 'L' }, { "bcast", 0, 0, 'b' }, { 0, 0, 0, 0 } };
	char *rest, *end;
	int c;

	memset(o, 0, sizeof(*o));
	o->ranks = 8;
	o->tp = o->pp = 1;
	o->steps = 100;
	o->compute_ms = 5;
	o->size = 4096;
	o->init = "config";
	o->skip_rank = o->mm_rank = o->slow_rank = o->hang_rank = o->exit_rank = -1;
	o->stop_rank = -1;
	o->noinit_rank = -1;
	o->nosplit_rank = -1;
	o->bw_rank = o->bw_step = o->pause_step = -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "vh", lo, NULL)) != -1) {
		switch (c) {
		case 'n': o->ranks = atoi(optarg); break;
		case 'R': o->ranks_per_host = atoi(optarg); break;
		case 't': o->tp = atoi(optarg); break;
		case 'p': o->pp = atoi(optarg); break;
		case 's': o->steps = atoi(optarg); break;
		case 'c': o->compute_ms = atof(optarg); break;
		case 'j': o->jitter_pct = atof(optarg); break;
		case 'z': o->size = atol(optarg); break;
		case 'd': o->step_delay_ms = atof(optarg); break;
		case 'I': o->init = optarg; break;
		case 'w': o->wait_start = optarg; break;
		case 'P': o->pidfile = optarg; break;
		case 'T': o->timeout_s = atof(optarg); break;
		case 'v': o->verbose = 1; break;
		case 'G': o->gpu_compute = 1; break;
		case 'b': o->bcast = 1; break;
		case 'X':
			if (!strcmp(optarg, "plain")) o->pattern = PAT_PLAIN;
			else if (!strcmp(optarg, "pytorch")) o->pattern = PAT_PYTORCH;
			else if (!strcmp(optarg, "moe")) o->pattern = PAT_MOE;
			else return simjob_bad("pattern", optarg);
			break;
		case 'h': fputs(simjob_usage, stdout); exit(0);
		case 'K':
			if (simjob_parse_ints(optarg, &o->skip_rank, &o->skip_step, &rest))
				return simjob_bad("skip", optarg);
			o->skip_which = SKIP_LOSS;
			if (rest && !strcmp(rest, "tp")) o->skip_which = SKIP_TP;
			else if (rest && !strcmp(rest, "tp1")) o->skip_which = SKIP_TP1;
			else if (rest && !strcmp(rest, "dp")) o->skip_which = SKIP_DP;
			else if (rest && !strcmp(rest, "pp")) o->skip_which = SKIP_PP;
			else if (rest && !strcmp(rest, "ppsend")) o->skip_which = SKIP_PPSEND;
			else if (rest && !strcmp(rest, "a2a")) o->skip_which = SKIP_A2A;
			else if (rest && !strcmp(rest, "bcast")) o->skip_which = SKIP_BCAST;
			else if (rest && strcmp(rest, "loss")) return simjob_bad("skip", optarg);
			break;
		case 'M':
			if (simjob_parse_ints(optarg, &o->mm_rank, &o->mm_step, &rest) || !rest)
				return simjob_bad("mismatch", optarg);
			if (!strcmp(rest, "op")) o->mm_field = MM_OP;
			else if (!strcmp(rest, "count")) o->mm_field = MM_COUNT;
			else if (!strcmp(rest, "dtype")) o->mm_field = MM_DTYPE;
			else if (!strcmp(rest, "redop")) o->mm_field = MM_REDOP;
			else if (!strcmp(rest, "root")) o->mm_field = MM_ROOT;
			else return simjob_bad("mismatch", optarg);
			break;
		case 'S':
			if (simjob_parse_ints(optarg, &o->slow_rank, &o->slow_step, &rest) || !rest ||
			    (o->slow_factor = strtod(rest, &end)) <= 0 ||
			    (*end && (*end != ':' || (o->slow_steps = atoi(end + 1)) <= 0)))
				return simjob_bad("slow", optarg);
			break;
		case 'H':
			if (simjob_parse_ints(optarg, &o->hang_rank, &o->hang_step, &rest))
				return simjob_bad("hang", optarg);
			if (rest && (strncmp(rest, "write=", 6) || !rest[6]))
				return simjob_bad("hang", optarg);
			o->hang_write = rest ? rest + 6 : NULL;
			break;
		case 'E':
			if (simjob_parse_ints(optarg, &o->exit_rank, &o->exit_step, &rest))
				return simjob_bad("exit", optarg);
			o->exit_code = rest ? atoi(rest) : 1;
			break;
		case 'O':
			if (simjob_parse_ints(optarg, &o->stop_rank, &o->stop_step, &rest) || rest)
				return simjob_bad("stop", optarg);
			break;
		case 'W': o->wait_init = optarg; break;
		case 'N':
			o->noinit_rank = (int)strtol(optarg, &end, 10);
			if (end == optarg || *end || o->noinit_rank < 0)
				return simjob_bad("no-init", optarg);
			break;
		case 'L':
			o->nosplit_rank = (int)strtol(optarg, &end, 10);
			if (end == optarg || *end || o->nosplit_rank < 0)
				return simjob_bad("no-split", optarg);
			break;
		case 'V':
			o->renv_rank[o->nrenv] = (int)strtol(optarg, &end, 10);
			if (o->nrenv == SIMJOB_MAX_RANK_ENV || end == optarg || *end != ':' ||
			    !strchr(end + 1, '=') || end[1] == '=')
				return simjob_bad("rank-env", optarg);
			o->renv[o->nrenv++] = end + 1;
			break;
		case 'F':
			o->fault_at_ms = strtod(optarg, &end);
			if (end == optarg || *end || o->fault_at_ms < 0)
				return simjob_bad("fault-at-ms", optarg);
			break;
		case 'A': {
			char *end;

			o->pause_step = (int)strtol(optarg, &end, 10);
			if (end == optarg || *end != ':' || (o->pause_s = atof(end + 1)) < 0)
				return simjob_bad("pause", optarg);
			break;
		}
		case 'B':
			if (simjob_parse_ints(optarg, &o->bw_rank, &o->bw_step, &rest) || !rest ||
			    (o->bw_s = atof(rest)) < 0)
				return simjob_bad("barrier-wait", optarg);
			break;
		default:
			fprintf(stderr, "ccld-simjob: see --help\n");
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ccld-simjob: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (o->ranks_per_host < 0 || o->ranks < 1 || o->ranks > 64 || o->tp < 1 || o->pp < 1 ||
	    o->ranks % (o->tp * o->pp)) {
		fprintf(stderr, "ccld-simjob: --ranks (1..64) must be a multiple of --tp x --pp\n");
		return -1;
	}
	for (c = 0; c < o->nrenv; c++)
		if (o->renv_rank[c] < 0 || o->renv_rank[c] >= o->ranks) {
			fprintf(stderr, "ccld-simjob: --rank-env %s: no rank %d\n", o->renv[c],
				o->renv_rank[c]);
			return -1;
		}
	if (o->pattern == PAT_MOE && (o->pp < 2 || o->tp != 1)) {
		fprintf(stderr, "ccld-simjob: --pattern moe needs --pp 2 or more and --tp 1\n");
		return -1;
	}
	if (o->skip_rank >= 0 && o->skip_which == SKIP_A2A && o->pattern != PAT_MOE) {
		fprintf(stderr, "ccld-simjob: --skip R:S:a2a needs --pattern moe\n");
		return -1;
	}
	if (o->bcast && (o->pattern == PAT_MOE || o->ranks / (o->tp * o->pp) < 2)) {
		fprintf(stderr, "ccld-simjob: --bcast needs a DP comm (DP > 1) and --pattern plain or "
			"pytorch\n");
		return -1;
	}
	if (!o->bcast && ((o->skip_rank >= 0 && o->skip_which == SKIP_BCAST) ||
			  (o->mm_rank >= 0 && o->mm_field == MM_ROOT))) {
		fprintf(stderr, "ccld-simjob: --skip R:S:bcast and --mismatch R:S:root need --bcast\n");
		return -1;
	}
	if (o->steps < 0 || o->size < 4 || o->compute_ms < 0 || o->jitter_pct < 0 ||
	    o->jitter_pct > 100 || (strcmp(o->init, "config") && strcmp(o->init, "rank"))) {
		fprintf(stderr, "ccld-simjob: bad --steps, --size (>= 4), --compute-ms, --jitter "
			"(0..100) or --init (config|rank)\n");
		return -1;
	}
	return 0;
}

#endif
