/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Uprobe links, grouped.  Where the kernel has uprobe_multi links (6.6+;
 * CCLD_UPROBE_MULTI=0 turns them off), every offset of one file that runs the same
 * program (entry or return, one PID or all) is one link, made with a raw
 * BPF_LINK_CREATE (Debian 12's libbpf 1.1 cannot make one); else one
 * perf-event uprobe per offset, as libbpf makes them.  Why: the kernel
 * waits for an RCU grace period for every perf-event uprobe it removes,
 * one at a time (about 100 ms each on the machines measured: a tracer with
 * 46 probes takes 4-5 s to exit), and once per multi link, which can be
 * closed at once from several threads.  A traced call costs the same
 * through either kind (measured alternating: real NCCL 8.3-9.4 us against
 * 7.9-10.7), and test_trace_tcp_loss fails now and then with either
 * (docs/numbers.md).
 */
#ifndef CCLD_ULINK_H
#define CCLD_ULINK_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct bpf_object;
struct bpf_program;
struct bpf_link;

/* one attachment: a libbpf perf-event link, or a multi link's fd */
struct ulink {
	struct bpf_link *link;
	int fd;			/* -1 unless a multi link */
	int nprobes;		/* offsets it covers */
};

/*
 * Does the kernel make uprobe_multi links?  Probed once (a trivial program
 * and a link to a file that does not exist: ENOENT where the kernel knows
 * the link type, EINVAL where not).
 */
bool ulink_multi_kernel(void);
/* ... and are they to be used (not CCLD_UPROBE_MULTI=0)? */
bool ulink_multi_supported(void);

/*
 * Before OBJ is loaded: where multi links are made, its uprobe programs
 * must be loaded for them (they cannot then be attached one by one).
 */
void ulink_prepare(struct bpf_object *obj);

/* the offsets of one file to attach, grouped by (program, entry/return) */
struct ubatch_group {
	struct bpf_program *prog;
	bool retprobe;
	int n, cap;
	unsigned long *off;
	__u64 *cookie;
	const char **sym;	/* for errors; the caller's strings */
};

struct ubatch {
	struct ubatch_group *g;
	int ng, capg;
	int err;		/* the first ubatch_add failure: ubatch_attach's */
};

/* 0, or -ENOMEM (then every later add is a no-op and ubatch_attach fails) */
int ubatch_add(struct ubatch *b, struct bpf_program *prog, bool retprobe, unsigned long off,
	       __u64 cookie, const char *sym);
/*
 * Attach everything in B to PATH for PID (-1: every process): links appended
 * to *LINKS (*N of them, realloc'd); fails at once if an add failed.  On
 * error, the links made so far stay
 * in *LINKS for the caller to destroy; ERR says which symbol failed.
 */
int ubatch_attach(struct ubatch *b, const char *path, int pid, struct ulink **links, int *n,
		  char *err, size_t errlen);
void ubatch_free(struct ubatch *b);

/* destroy N links; multi links are closed in parallel (one wait for all) */
void ulink_destroy_all(struct ulink *links, int n);

#endif
