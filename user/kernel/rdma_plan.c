// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The RDMA attach plan (rdma_plan.h): which verbs functions exist here and
 * whether kprobe or fentry can reach them.  A kernel without RDMA is the
 * common case and gives one reason, not one error per function.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "rdma_plan.h"

#define TARGET(fn, mod, text, prog) { .func = fn, .module = mod, .what = text, \
	.kprobe_prog = "kp_" prog, .fentry_prog = "fe_" prog }

static const struct rdma_target targets[RDMA_NTARGETS] = {
	TARGET("ib_modify_qp_with_udata", "ib_core",
	       "QP moved to error by its process", "modify_qp"),
	TARGET("ib_dispatch_event", "ib_core", "port / device async events",
	       "dispatch_event"),
	TARGET("ib_uverbs_qp_event_handler", "ib_uverbs",
	       "QP async errors (user QPs)", "qp_event"),
	TARGET("ib_uverbs_cq_event_handler", "ib_uverbs",
	       "CQ async errors (user CQs)", "cq_event"),
};

const char *rdma_method_name(enum rdma_method m)
{
	switch (m) {
	case RDMA_M_KPROBE: return "kprobe";
	case RDMA_M_FENTRY: return "fentry";
	default: return "none";
	}
}

static bool exists(const char *root, const char *path)
{
	char p[512];

	snprintf(p, sizeof(p), "%s%s", root, path);
	return access(p, F_OK) == 0;
}

/* marks the targets named in kallsyms ("addr t name [module]") */
static void scan_kallsyms(struct rdma_plan *p, const char *root)
{
	char path[512], line[512], name[256];
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "%s/proc/kallsyms", root);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		/* cheap filter: every target starts with "ib_" */
		if (!strstr(line, " ib_"))
			continue;
		if (sscanf(line, "%*s %*s %255s", name) != 1)
			continue;
		for (i = 0; i < RDMA_NTARGETS; i++)
			if (!strcmp(name, p->t[i].func))
				p->t[i].in_kallsyms = true;
	}
	fclose(f);
}

/* marks the targets that are FUNCs in their module's BTF */
static void scan_btf(struct rdma_plan *p, const char *root)
{
	struct btf *vmlinux = NULL, *mod;
	char path[512];
	int i, j;

	for (i = 0; i < RDMA_NTARGETS; i++) {
		if (p->t[i].in_btf)
			continue;
		snprintf(path, sizeof(path), "%s/sys/kernel/btf/%s", root, p->t[i].module);
		if (access(path, R_OK))
			continue;
		if (!vmlinux) {
			snprintf(path, sizeof(path), "%s/sys/kernel/btf/vmlinux", root);
			vmlinux = btf__parse(path, NULL);
			if (!vmlinux)
				return;
			snprintf(path, sizeof(path), "%s/sys/kernel/btf/%s", root,
				 p->t[i].module);
		}
		mod = btf__parse_split(path, vmlinux);
		if (!mod)
			continue;
		for (j = i; j < RDMA_NTARGETS; j++)
			if (!strcmp(p->t[j].module, p->t[i].module) &&
			    btf__find_by_name_kind(mod, p->t[j].func, BTF_KIND_FUNC) > 0)
				p->t[j].in_btf = true;
		btf__free(mod);
	}
	btf__free(vmlinux);
}

/* "ib_core module not loaded" when the kernel ships it, else "no ib_core" */
static void module_absent(const char *root, const char *mod, char *out, size_t len)
{
	char path[512], line[1024], ko[64];
	struct utsname u;
	bool shipped = false;
	FILE *f;

	if (uname(&u) == 0) {
		snprintf(path, sizeof(path), "%s/lib/modules/%s/modules.dep", root,
			 u.release);
		snprintf(ko, sizeof(ko), "/%s.ko", mod);
		f = fopen(path, "r");
		while (f && !shipped && fgets(line, sizeof(line), f)) {
			char *colon = strchr(line, ':');

			if (colon)
				*colon = '\0';
			shipped = strstr(line, ko) != NULL;
		}
		if (f)
			fclose(f);
	}
	if (shipped)
		snprintf(out, len, "%s module not loaded (modprobe %s, then restart)",
			 mod, mod);
	else
		snprintf(out, len, "no %s in this kernel", mod);
}

void rdma_plan_make(struct rdma_plan *p, const char *root)
{
	char path[128];
	int i;

	memset(p, 0, sizeof(*p));
	memcpy(p->t, targets, sizeof(targets));
	/* CCLD_RDMA_NO_KPROBES=1: the fentry path where kprobes exist (tests) */
	p->kprobes = exists(root, "/sys/bus/event_source/devices/kprobe/type") &&
		     !getenv("CCLD_RDMA_NO_KPROBES");
	p->ib_core = exists(root, "/sys/module/ib_core");
	/*
	 * ib_core has module parameters, so /sys/module/ib_core exists
	 * whether it is a module or built in, and every target needs it:
	 * without it no target can be in kallsyms, whose read costs a fifth
	 * of a second at each start
	 */
	if (p->ib_core || exists(root, "/sys/module/ib_uverbs"))
		scan_kallsyms(p, root);
	scan_btf(p, root);
	for (i = 0; i < RDMA_NTARGETS; i++) {
		struct rdma_target *t = &p->t[i];

		snprintf(path, sizeof(path), "/sys/module/%s", t->module);
		if (!exists(root, path) && !t->in_kallsyms)
			module_absent(root, t->module, t->why, sizeof(t->why));
		else if (!t->in_kallsyms)
			snprintf(t->why, sizeof(t->why), "%s not in this kernel "
				 "(inlined or renamed)", t->func);
		else if (p->kprobes)
			t->method = RDMA_M_KPROBE;
		else if (t->in_btf)
			t->method = RDMA_M_FENTRY;
		else
			snprintf(t->why, sizeof(t->why), "no kprobes in this kernel "
				 "and no BTF for %s", t->module);
		p->usable += t->method != RDMA_M_NONE;
	}
	if (p->usable)
		return;
	/* one reason for all: the first module's, else the first target's */
	if (!p->ib_core && !p->t[0].in_kallsyms)
		module_absent(root, "ib_core", p->reason, sizeof(p->reason));
	else
		snprintf(p->reason, sizeof(p->reason), "%s", p->t[0].why);
}
