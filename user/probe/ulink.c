// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Uprobe links, grouped (ulink.h): uprobe_multi links made with a raw
 * BPF_LINK_CREATE where the kernel has them, perf-event uprobes otherwise.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "ulink.h"

/* kernel 6.6 uapi, absent from Debian 12's headers */
#define ULINK_TRACE_UPROBE_MULTI	48	/* enum bpf_attach_type */
#define ULINK_F_UPROBE_MULTI_RETURN	1u

/* union bpf_attr's link_create, as far as uprobe_multi reaches */
union ulink_attr {
	struct {
		__u32 prog_fd;
		__u32 target_fd;
		__u32 attach_type;
		__u32 flags;
		__u64 path;
		__u64 offsets;
		__u64 ref_ctr_offsets;
		__u64 cookies;
		__u32 cnt;
		__u32 multi_flags;
		__u32 pid;
	} lc;
	char pad[128];		/* the rest zero, as the kernel checks */
};

static int link_create_multi(int prog_fd, const char *path, const unsigned long *off,
			     const __u64 *cookies, __u32 cnt, bool retprobe, int pid)
{
	union ulink_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.lc.prog_fd = (__u32)prog_fd;
	a.lc.attach_type = ULINK_TRACE_UPROBE_MULTI;
	a.lc.path = (__u64)(uintptr_t)path;
	a.lc.offsets = (__u64)(uintptr_t)off;
	a.lc.cookies = (__u64)(uintptr_t)cookies;
	a.lc.cnt = cnt;
	a.lc.multi_flags = retprobe ? ULINK_F_UPROBE_MULTI_RETURN : 0;
	a.lc.pid = pid > 0 ? (__u32)pid : 0;
	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : fd;
}

static int probe_multi(void)
{
	/* r0 = 0; exit */
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts,
		    .expected_attach_type = (enum bpf_attach_type)ULINK_TRACE_UPROBE_MULTI);
	const unsigned long off = 0;
	const __u64 cookie = 0;
	int prog, fd;

	prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "ccld_umulti", "GPL", insns, 2, &opts);
	if (prog < 0)
		return 0;
	fd = link_create_multi(prog, "/nonexistent/ccld-uprobe-multi-probe", &off, &cookie, 1,
			       false, -1);
	close(prog);
	if (fd >= 0) {
		close(fd);
		return 1;
	}
	/* the kernel knew the link type and went on to look the file up */
	return fd == -ENOENT;
}

bool ulink_multi_kernel(void)
{
	static int multi = -1;

	if (multi < 0)
		multi = probe_multi();
	return multi;
}

bool ulink_multi_supported(void)
{
	const char *on = getenv("CCLD_UPROBE_MULTI");

	return !(on && !strcmp(on, "0")) && ulink_multi_kernel();
}

void ulink_prepare(struct bpf_object *obj)
{
	struct bpf_program *p;

	if (!ulink_multi_supported())
		return;
	bpf_object__for_each_program(p, obj) {
		const char *sec = bpf_program__section_name(p);

		if (!strncmp(sec, "uprobe", 6) || !strncmp(sec, "uretprobe", 9))
			bpf_program__set_expected_attach_type(
				p, (enum bpf_attach_type)ULINK_TRACE_UPROBE_MULTI);
	}
}

int ubatch_add(struct ubatch *b, struct bpf_program *prog, bool retprobe, unsigned long off,
	       __u64 cookie, const char *sym)
{
	struct ubatch_group *g = NULL;
	int i;

	if (b->err)
		return b->err;
	for (i = 0; i < b->ng && !g; i++)
		if (b->g[i].prog == prog && b->g[i].retprobe == retprobe)
			g = &b->g[i];
	if (!g) {
		if (b->ng == b->capg) {
			int cap = b->capg ? 2 * b->capg : 8;
			struct ubatch_group *n = realloc(b->g, (size_t)cap * sizeof(*n));

			if (!n)
				return b->err = -ENOMEM;
			b->g = n;
			b->capg = cap;
		}
		g = &b->g[b->ng++];
		memset(g, 0, sizeof(*g));
		g->prog = prog;
		g->retprobe = retprobe;
	}
	if (g->n == g->cap) {
		int cap = g->cap ? 2 * g->cap : 8;
		unsigned long *o = realloc(g->off, (size_t)cap * sizeof(*o));
		__u64 *c;
		const char **s;

		if (!o)
			return b->err = -ENOMEM;
		g->off = o;
		c = realloc(g->cookie, (size_t)cap * sizeof(*c));
		if (!c)
			return b->err = -ENOMEM;
		g->cookie = c;
		s = realloc(g->sym, (size_t)cap * sizeof(*s));
		if (!s)
			return b->err = -ENOMEM;
		g->sym = s;
		g->cap = cap;
	}
	g->off[g->n] = off;
	g->cookie[g->n] = cookie;
	g->sym[g->n++] = sym;
	return 0;
}

static int push_link(struct ulink **links, int *n, struct bpf_link *l, int fd, int nprobes)
{
	struct ulink *nl = realloc(*links, (size_t)(*n + 1) * sizeof(*nl));

	if (!nl)
		return -ENOMEM;
	*links = nl;
	nl[*n].link = l;
	nl[*n].fd = fd;
	nl[*n].nprobes = nprobes;
	(*n)++;
	return 0;
}

static const char *eperm_hint(int ret)
{
	/* CAP_PERFMON was enough only on 5.8 .. the CVE-2025-38466 fix */
	return ret == -EACCES || ret == -EPERM ?
	       " (the kernel allows uprobes to CAP_SYS_ADMIN only)" : "";
}

int ubatch_attach(struct ubatch *b, const char *path, int pid, struct ulink **links, int *n,
		  char *err, size_t errlen)
{
	bool multi = ulink_multi_supported();
	int i, k, ret;

	if (b->err) {
		snprintf(err, errlen, "cannot attach to %s: %s", path, strerror(-b->err));
		return b->err;
	}
	for (i = 0; i < b->ng; i++) {
		struct ubatch_group *g = &b->g[i];

		if (multi) {
			int fd = link_create_multi(bpf_program__fd(g->prog), path, g->off,
						   g->cookie, (__u32)g->n, g->retprobe, pid);

			if (fd < 0) {
				snprintf(err, errlen, "cannot attach %s%s (and %d more) to %s: %s%s",
					 g->retprobe ? "uretprobe " : "uprobe ", g->sym[0],
					 g->n - 1, path, strerror(-fd), eperm_hint(fd));
				return fd;
			}
			ret = push_link(links, n, NULL, fd, g->n);
			if (ret) {
				close(fd);
				return ret;
			}
			continue;
		}
		for (k = 0; k < g->n; k++) {
			LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = g->cookie[k],
				    .retprobe = g->retprobe);
			struct bpf_link *l;

			l = bpf_program__attach_uprobe_opts(g->prog, pid, path, g->off[k], &opts);
			if (!l) {
				ret = -errno;
				snprintf(err, errlen, "cannot attach %s%s to %s: %s%s",
					 g->retprobe ? "uretprobe " : "uprobe ", g->sym[k],
					 path, strerror(-ret), eperm_hint(ret));
				return ret;
			}
			ret = push_link(links, n, l, -1, 1);
			if (ret) {
				bpf_link__destroy(l);
				return ret;
			}
		}
	}
	return 0;
}

void ubatch_free(struct ubatch *b)
{
	int i;

	for (i = 0; i < b->ng; i++) {
		free(b->g[i].off);
		free(b->g[i].cookie);
		free(b->g[i].sym);
	}
	free(b->g);
	memset(b, 0, sizeof(*b));
}

struct closer {
	const int *fds;
	int n, step;
};

/* closes fds[0], fds[step], fds[2 * step], ... */
static void *close_main(void *arg)
{
	const struct closer *c = arg;
	int i;

	for (i = 0; i < c->n; i += c->step)
		close(c->fds[i]);
	return NULL;
}

#define ULINK_CLOSERS	32	/* threads closing multi links at once */

void ulink_destroy_all(struct ulink *links, int n)
{
	struct closer c[ULINK_CLOSERS];
	pthread_t th[ULINK_CLOSERS];
	int started = 0, nfds = 0, nthreads, i;
	int *fds = calloc(n > 0 ? n : 1, sizeof(*fds));

	for (i = 0; i < n; i++) {
		if (links[i].link) {
			bpf_link__destroy(links[i].link);
			links[i].link = NULL;
		} else if (links[i].fd >= 0) {
			if (fds)
				fds[nfds++] = links[i].fd;
			else
				close(links[i].fd);
		}
		links[i].fd = -1;
	}
	/*
	 * The kernel waits for a grace period in each close: in threads of
	 * their own, the closes share it.  Past ULINK_CLOSERS fds, each
	 * thread closes every ULINK_CLOSERS-th; what a thread could not be
	 * started for is closed here.
	 */
	nthreads = nfds < ULINK_CLOSERS ? nfds : ULINK_CLOSERS;
	for (i = 0; i < nthreads; i++) {
		c[i] = (struct closer){ .fds = fds + i, .n = nfds - i, .step = nthreads };
		if (!pthread_create(&th[started], NULL, close_main, &c[i]))
			started++;
		else
			close_main(&c[i]);
	}
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(fds);
}
