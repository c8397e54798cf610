/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The NCCL functions ccld hooks, with the tier and feature each one serves. */
#ifndef CCLD_HOOKS_H
#define CCLD_HOOKS_H

#include <linux/types.h>
#include <stdbool.h>
#include "ccld.h"

/* W: NCCL's warnings (ncclDebugLog, CCLD_EV_NCCL_WARN) */
enum hook_tier { HOOK_TIER_A = 'A', HOOK_TIER_B = 'B', HOOK_TIER_C = 'C', HOOK_TIER_W = 'W' };

struct hook_def {
	const char *symbol;	/* function name in the library */
	int fn;			/* enum ccld_fn (tier A), or 0 */
	char tier;		/* enum hook_tier */
	bool required;		/* a tier-A hook every supported NCCL has */
	const char *feature;	/* what is lost without it */
	/*
	 * A C++ function's demangled parameters, "(int, ncclProxyArgs*)":
	 * only a function with exactly these is hooked.  NULL: a C symbol.
	 */
	const char *params;
};

extern const struct hook_def nccl_hooks[];
extern const int nccl_hooks_n;

/* Tier B: CUDA runtime (libcudart.so*) and driver (libcuda.so*) hooks. */
struct cuda_hook_def {
	const char *symbol;
	int fn;			/* enum ccld_fn, CCLD_FN_CUDA_* */
	bool driver;		/* libcuda (cu*) rather than libcudart */
};

extern const struct cuda_hook_def cuda_hooks[];
extern const int cuda_hooks_n;

/* PATH names a file cuda_hooks apply to: libcudart.so* or libcuda.so* */
bool hooks_cuda_file(const char *path);

/* Name of a ccld_fn as the JSON "op" field spells it ("AllReduce"...). */
const char *hook_fn_name(int fn);

#endif
