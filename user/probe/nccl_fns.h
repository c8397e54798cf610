/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * NCCL's internal functions in one library file: ccld's hooks by name and
 * parameters, and the proxy progress functions with the transport each
 * belongs to and whether it sends or receives.  Tier C and tier E records
 * carry the progress function's address (args->progress); this is how the
 * loader tells a send from a recv and a network op from an intra-node one.
 */
#ifndef CCLD_NCCL_FNS_H
#define CCLD_NCCL_FNS_H

#include <stddef.h>

struct elf_syms;
struct hook_def;

/*
 * File offset of H's function in ES (-1: not there, or only with other
 * parameters); *SYMBOL (if not NULL) gets the symbol as the file spells it.
 */
long hook_resolve(const struct elf_syms *es, const struct hook_def *h,
		  const char **symbol);

/* NCCL's transports (its ncclTransports[] and the profiler's own). */
enum nccl_transport {
	NCCL_TR_UNKNOWN = 0,
	NCCL_TR_P2P,		/* P2P/NVLink/PCIe between GPUs of a node */
	NCCL_TR_SHM,		/* host shared memory within a node */
	NCCL_TR_NET,		/* the network plugin (IB verbs, sockets) */
	NCCL_TR_COLLNET,	/* in-network reductions (SHARP) */
	NCCL_TR_NVLS,		/* NVLink SHARP */
	NCCL_TR_PROFILER,	/* the profiler's proxy-side events */
	NCCL_TR_MAX
};

enum progress_dir { PROGRESS_NONE = 0, PROGRESS_SEND, PROGRESS_RECV };

struct progress_fn {
	long off;			/* file offset */
	const char *symbol;		/* mangled, as the file spells it */
	const char *name;		/* "sendProxyProgress" */
	enum nccl_transport transport;
	enum progress_dir dir;
};

#define MAX_PROGRESS_FNS 16

/*
 * Every proxy progress function of ES (at most MAX into OUT): a function
 * whose demangled name is one of NCCL's progress functions with the
 * progress signature, its transport from the transport table that points
 * to it (NCCL_TR_UNKNOWN when no table does).  Returns how many; the
 * strings live as long as ES.
 */
int progress_fns_find(const struct elf_syms *es, struct progress_fn *out, int max);

/* "NET", "P2P", ... as probe-check and the summary print them. */
const char *nccl_transport_name(enum nccl_transport t);

/*
 * True when NCCL calls the proxy hooks for ops on T in its default
 * settings: NET and COLLNET always; P2P and SHM only in their copy-engine
 * modes (NCCL_P2P_USE_CUDA_MEMCPY, NCCL_SHM_USE_CUDA_MEMCPY), NVLS never.
 */
int nccl_transport_proxied(enum nccl_transport t);

#endif
