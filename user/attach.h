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
#include <sys/types.h>
#include "dwarf_layout.h"
#include "hmap.h"

struct nccl_api_bpf;
struct cuda_bpf;
struct bpf_link;

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
	bool cuda;		/* a CUDA runtime/driver library (tier B) */
	bool ldso;		/* the dynamic loader (new-process hook) */
};

struct attacher {
	struct nccl_api_bpf *skel;
	struct cuda_bpf *cuda_skel;	/* NULL: tier B off */
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

void attacher_free(struct attacher *a);

#endif
