/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which RDMA verbs functions (bpf/rdma.bpf.c) this kernel has and how each
 * can be probed: kprobe where the kernel has kprobes, else fentry where the
 * module's BTF has the function.  Reads /proc/kallsyms, /sys/kernel/btf and
 * /sys/module only: no privileges, nothing loaded (probe-check uses it as
 * is; the tracer then loads and attaches what it says).
 */
#ifndef CCLD_RDMA_PLAN_H
#define CCLD_RDMA_PLAN_H

#include <stdbool.h>
#include <stddef.h>

enum rdma_method { RDMA_M_NONE, RDMA_M_KPROBE, RDMA_M_FENTRY };

struct rdma_target {
	const char *func;	/* kernel function */
	const char *module;	/* its module: ib_core, ib_uverbs */
	const char *what;	/* what it shows, for people */
	const char *kprobe_prog;	/* program names in rdma.bpf.c */
	const char *fentry_prog;
	bool in_kallsyms;
	bool in_btf;		/* a FUNC in /sys/kernel/btf/<module> */
	enum rdma_method method;	/* what to try */
	char why[128];		/* RDMA_M_NONE: why not */
};

#define RDMA_NTARGETS	4

struct rdma_plan {
	struct rdma_target t[RDMA_NTARGETS];
	bool kprobes;		/* the kernel has kprobes (kprobe PMU) */
	bool ib_core;		/* ib_core is loaded or built in */
	int usable;		/* targets with a method */
	char reason[160];	/* usable == 0: why, e.g. "no ib_core in this kernel" */
};

/* Fills P for the running kernel; ROOT prefixes /proc and /sys ("" normally). */
void rdma_plan_make(struct rdma_plan *p, const char *root);

const char *rdma_method_name(enum rdma_method m);

#endif
