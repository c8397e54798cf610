/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Finds the NCCL libraries a process maps and attaches the tier A probes
 * to each distinct file (dev, inode) once, system wide: every process that
 * maps the file shares them, the BPF PID filter decides who is traced.
 */
#ifndef CCLD_ATTACH_H
#define CCLD_ATTACH_H

#include "ulink.h"
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "dwarf_layout.h"
#include "hmap.h"
#include "nccl_fns.h"

struct nccl_api_bpf;
struct cuda_bpf;
struct proxy_bpf;
struct hook_def;
struct bpf_link;


/* a layout table entry for a library without DWARF (layout_table.h) */
enum table_state {
	TABLE_NONE,		/* DWARF was found, or the version has no entry */
	TABLE_PENDING,		/* an entry, not in use until a live comm confirms it */
	TABLE_CONFIRMED,	/* a live comm fits it: in use (layouts) */
	TABLE_REJECTED,		/* a live comm contradicts it: never used */
};

struct traced_lib {
	dev_t dev;
	ino_t ino;
	char path[PATH_MAX];	/* path used to attach (via /proc/PID/root) */
	char build_id[41];
	char version[32];
	int slot;		/* index in the layouts map */
	struct nccl_layouts layouts;	/* in use (source LAYOUT_NONE: none) */
	struct nccl_layouts table;	/* the table's candidate (table_state) */
	enum table_state table_state;
	struct ulink *links;	/* ulink.h */
	int nlinks;
	int nprobes;		/* offsets the links cover */
	int nmissing;		/* hook symbols absent from this build */
	/* the transports' proxy progress functions (symbol, name: NULL here) */
	struct progress_fn progress[MAX_PROGRESS_FNS];
	int nprogress;
	/* tier C step hooks, resolved at attach, attached per PID on demand */
	long step_off[4];
	const struct hook_def *step_hook[4];
	int nstep;
	/* tier C op hooks, attached once a proxy layout is in use */
	long op_off[2];
	const struct hook_def *op_hook[2];
	int nop;
	/*
	 * NCCL 2.24+'s global comm array (RAS): the file's virtual addresses
	 * of ncclComms and nNcclComms (0: this build has none) and of file
	 * offset 0, for the load bias in a process.
	 */
	unsigned long comms_vaddr, ncomms_vaddr, vaddr_off0;
	bool warn_hooked;	/* ncclDebugLog hooked: NCCL's warnings */
	bool cuda;		/* a CUDA runtime/driver library (tier B) */
	bool ldso;		/* the dynamic loader (new-process hook) */
	bool described;		/* written as capture metadata (the tracer's) */
	uint32_t users;		/* processes that map it (attacher_add_pid) */
	uint64_t idle_since_ns;	/* when the last of them went */
	bool detaching;		/* its probes go, in the detach thread */
};

struct attacher {
	struct nccl_api_bpf *skel;
	struct cuda_bpf *cuda_skel;	/* NULL: tier B off */
	struct proxy_bpf *proxy_skel;	/* NULL: tier C off */
	struct hmap step_links;		/* pid -> struct step_links (tier C steps) */
	uint64_t step_attach_ns;	/* total time step hooks were on (pid-seconds, ns) */
	/* by slot; NULL: a slot released (attacher_release_unused) */
	struct traced_lib *libs[CCLD_MAX_LAYOUTS];
	int nlibs;		/* slots used so far */
	struct hmap pid_libs;	/* pid -> uint64_t mask of the slots it maps */
	/*
	 * One library's probes at a time are taken away by a thread of their
	 * own: a uprobe takes tens of ms to unregister, a library has ~100,
	 * and the tracer's loop must not stop for seconds.
	 */
	struct detach_job *detach;
	struct hmap not_nccl;	/* (dev, ino) of files checked: no NCCL */
	bool verbose;
	bool watch_loads;	/* also hook each ld.so (--all) */
};

/*
 * Attaches to every NCCL library PID maps that is not attached yet, and
 * to its CUDA runtime / driver libraries (tier B) when cuda_skel is set.
 * Returns the number of NCCL libraries PID maps (0: none), or -errno
 * with ERR filled (ENOENT: no such process; EAGAIN: a library it maps is
 * being detached, try again later).
 */
int attacher_add_pid(struct attacher *a, pid_t pid, char *err, size_t errlen);

/* Hooks the dynamic loader at PATH (for --all); 0 or -errno. */
int attacher_add_ldso(struct attacher *a, const char *path, char *err,
		      size_t errlen);

/*
 * LIB's table entry is confirmed by a live communicator: its layout is put
 * in use (BPF maps, tier C op hooks).  0, or -errno with ERR filled.
 */
int attacher_table_confirm(struct attacher *a, struct traced_lib *lib, char *err,
			   size_t errlen);

/* LIB's table entry is contradicted by a live communicator: never used. */
void attacher_table_reject(struct attacher *a, struct traced_lib *lib);

/* The (first) NCCL library PID maps, or NULL. */
const struct traced_lib *attacher_pid_nccl(const struct attacher *a, pid_t pid);

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
/* off for the N processes PIDS, their links closed together */
void attacher_step_hooks_off(struct attacher *a, const uint32_t *pids, size_t n,
			     uint64_t now_ns);
bool attacher_step_hooks_active(const struct attacher *a, pid_t pid);

/*
 * PID is gone: the libraries it mapped have one user less.  A library no
 * process has used for AFTER_NS (NCCL and CUDA ones; never a loader) is
 * detached by attacher_release_unused(), its slot free for another
 * (--all: a node sees a new library file whenever a job brings its own
 * NCCL, e.g. in a fresh virtualenv).  Returns the number released.
 */
void attacher_pid_gone(struct attacher *a, pid_t pid, uint64_t now_ns);
int attacher_release_unused(struct attacher *a, uint64_t now_ns, uint64_t after_ns);
/* libraries whose probes are being taken away now (0 or 1) */
int attacher_detaching(const struct attacher *a);

void attacher_free(struct attacher *a);

#endif
