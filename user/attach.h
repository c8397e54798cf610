/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Finds the NCCL libraries a process maps and attaches the tier A probes
 * to each distinct file (dev, inode) once, system wide: every process that
 * maps the file shares them, the BPF PID filter decides who is traced.
 */
#ifndef CCLD_ATTACH_H
#define CCLD_ATTACH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "dwarf_layout.h"
#include "hmap.h"

struct nccl_api_bpf;
struct cuda_bpf;
struct proxy_bpf;
struct hook_def;
struct bpf_link;

#define MAX_PROGRESS_FNS 8	/* transports with their own progress function */

struct traced_lib {
	dev_t dev;
	ino_t ino;
	char path[PATH_MAX];	/* path used to attach (via /proc/PID/root) */
	char build_id[41];
	char version[32];
	int slot;		/* index in the layouts map */
	struct nccl_layouts layouts;
	struct bpf_link **links;
	int nlinks;
	int nmissing;		/* hook symbols absent from this build */
	/* file offsets of the transports' send / recv progress functions */
	long send_progress[MAX_PROGRESS_FNS];
	long recv_progress[MAX_PROGRESS_FNS];
	int nsend_progress, nrecv_progress;
	/* tier C step hooks, resolved at attach, attached per PID on demand */
	long step_off[4];
	const struct hook_def *step_hook[4];
	int nstep;
	/*
	 * NCCL 2.24+'s global comm array (RAS): the file's virtual addresses
	 * of ncclComms and nNcclComms (0: this build has none) and of file
	 * offset 0, for the load bias in a process.
	 */
	unsigned long comms_vaddr, ncomms_vaddr, vaddr_off0;
	bool cuda;		/* a CUDA runtime/driver library (tier B) */
	bool ldso;		/* the dynamic loader (new-process hook) */
};

struct attacher {
	struct nccl_api_bpf *skel;
	struct cuda_bpf *cuda_skel;	/* NULL: tier B off */
	struct proxy_bpf *proxy_skel;	/* NULL: tier C off */
	struct hmap step_links;		/* pid -> struct step_links (tier C steps) */
	uint64_t step_attach_ns;	/* total time step hooks were on (pid-seconds, ns) */
	struct traced_lib *libs[CCLD_MAX_LAYOUTS];
	int nlibs;
	struct hmap not_nccl;	/* (dev, ino) of files checked: no NCCL */
	bool verbose;
	bool watch_loads;	/* also hook each ld.so (--all) */
};

/*
 * Attaches to every NCCL library PID maps that is not attached yet, and
 * to its CUDA runtime / driver libraries (tier B) when cuda_skel is set.
 * Returns the number of NCCL libraries PID maps (0: none), or -errno
 * with ERR filled (ENOENT: no such process).
 */
int attacher_add_pid(struct attacher *a, pid_t pid, char *err, size_t errlen);

/* Hooks the dynamic loader at PATH (for --all); 0 or -errno. */
int attacher_add_ldso(struct attacher *a, const char *path, char *err,
		      size_t errlen);

/* The library (NCCL, not CUDA) at DEV/INO, or NULL. */
struct traced_lib *attacher_lib(struct attacher *a, dev_t dev, ino_t ino);

/*
 * Tier C step hooks for PID only (uprobes with a PID), on every NCCL library
 * attached so far: on when its communicator is suspected stuck, off when it
 * moves again.  attacher_step_hooks_on() is idempotent; returns the number
 * of hooks attached or -errno with ERR filled.
 */
int attacher_step_hooks_on(struct attacher *a, pid_t pid, uint64_t now_ns,
			   char *err, size_t errlen);
void attacher_step_hooks_off(struct attacher *a, pid_t pid, uint64_t now_ns);
bool attacher_step_hooks_active(const struct attacher *a, pid_t pid);

void attacher_free(struct attacher *a);

#endif
