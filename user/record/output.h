/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Terminal and JSON-lines renderings (docs/cli.md, schema 1). */
#ifndef CCLD_OUTPUT_H
#define CCLD_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "state.h"

#define CCLD_SCHEMA 1

struct host_info {
	char name[64];
	int64_t realtime_offset_ns;	/* CLOCK_REALTIME - CLOCK_MONOTONIC */
};

/* Writes S as a JSON string literal (quotes included). */
void json_string(FILE *f, const char *s);

void out_call_json(FILE *f, const struct host_info *h, const struct call_rec *c);
void out_call_text(FILE *f, const struct host_info *h, const struct call_rec *c);

void out_comm_json(FILE *f, const struct host_info *h,
		   const struct comm_call_rec *c);
void out_comm_text(FILE *f, const struct host_info *h,
		   const struct comm_call_rec *c);

/*
 * A comm rank read from memory ("comm_state" line) and a thread of a
 * traced process ("thread" line), --events only.
 */
void out_comm_state(FILE *f, const struct host_info *h, const struct comm_rank *cr,
		    const struct ccld_event *ev, bool json);
void out_thread(FILE *f, const struct host_info *h, const struct ccld_event *ev,
		const char *fd_path, const char *stack, bool json);

struct summary {
	uint64_t events;
	uint64_t calls;
	uint64_t main_drops;
	uint64_t rare_drops;
	uint64_t steps_shed;	/* step records shed so that calls fit (not lost) */
	uint64_t processes;
	uint64_t comms;
	uint64_t verdicts;
	/* proxy records whose send/recv direction was unknown: not analyzed */
	uint64_t proxy_unattributed;
	/* NCCL's warnings read; and those dropped (a part lost, or a message
	 * that did not fit its format: NCCL's NOWARN) */
	uint64_t nccl_warnings, nccl_warnings_dropped;
	/* records the analyzer refused, its state at its memory budget */
	uint64_t mem_refused;
	double duration_s;
	const struct state *st;	/* its processes' lost records, NULL: none */
};

struct nccl_warning;
/* One of NCCL's warnings (ncclwarn.h), of process W->pid on host H. */
void out_nccl_warning(FILE *f, const struct host_info *h, const struct nccl_warning *w,
		      const char *global_rank, bool json);

void out_summary_json(FILE *f, const struct summary *s);
void out_summary_text(FILE *f, const struct summary *s);

/* The per-communicator view: one row per comm hash, aggregated over ranks. */
void out_comm_table(FILE *f, const struct state *st, bool ansi_home);

#endif
