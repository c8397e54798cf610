// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The RDMA attach plan (rdma_plan.c) and device attribution (rdma_devs.c)
 * on made-up /proc and /sys trees: no RDMA at all, a module shipped but not
 * loaded, functions with and without kprobes, and a process with a uverbs
 * device open.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "check.h"
#include "rdma_devs.h"
#include "rdma_plan.h"

static char root[64];

/* writes TEXT to ROOT/PATH, creating the directories */
static void put(const char *path, const char *text)
{
	char full[512], *s;
	FILE *f;

	snprintf(full, sizeof(full), "%s/%s", root, path);
	for (s = full + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(full, 0755);
		*s = '/';
	}
	f = fopen(full, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
}

static void link_fd(const char *path, const char *target)
{
	char full[512];

	snprintf(full, sizeof(full), "%s/%s", root, path);
	CHECK_INT(symlink(target, full), 0);
}

static const char kallsyms[] =
	"ffffffffc0a01000 t ib_modify_qp_with_udata\t[ib_core]\n"
	"ffffffffc0a02000 T ib_dispatch_event\t[ib_core]\n"
	"ffffffffc0b01000 t ib_uverbs_qp_event_handler\t[ib_uverbs]\n"
	"ffffffffc0b02000 t ib_uverbs_cq_event_handler\t[ib_uverbs]\n";

static void test_plan(void)
{
	struct rdma_plan p;
	struct utsname u;
	char dep[256];
	int i;

	/* nothing: the one reason, no method anywhere */
	put("proc/kallsyms", "ffffffff81000000 T _stext\n");
	rdma_plan_make(&p, root);
	CHECK_INT(p.usable, 0);
	CHECK(!p.kprobes);
	CHECK_STR(p.reason, "no ib_core in this kernel");
	for (i = 0; i < RDMA_NTARGETS; i++)
		CHECK_INT(p.t[i].method, RDMA_M_NONE);
	CHECK_STR(p.t[2].why, "no ib_uverbs in this kernel");

	/* shipped as a module, not loaded */
	CHECK_INT(uname(&u), 0);
	snprintf(dep, sizeof(dep), "lib/modules/%s/modules.dep", u.release);
	put(dep, "kernel/drivers/infiniband/core/ib_core.ko.xz: kernel/net/x.ko\n");
	rdma_plan_make(&p, root);
	CHECK_INT(p.usable, 0);
	CHECK(!strncmp(p.reason, "ib_core module not loaded", 25));

	/*
	 * no /sys/module/ib_core (it has parameters: the directory is there
	 * built in or loaded): kallsyms is not read at all
	 */
	put("proc/kallsyms", kallsyms);
	rdma_plan_make(&p, root);
	CHECK(!p.t[0].in_kallsyms && !p.t[3].in_kallsyms);
	CHECK(!strncmp(p.reason, "ib_core module not loaded", 25));

	/* loaded, but no kprobes and no module BTF */
	put("sys/module/ib_core/refcnt", "1\n");
	put("sys/module/ib_uverbs/refcnt", "1\n");
	rdma_plan_make(&p, root);
	CHECK(p.ib_core);
	CHECK_INT(p.usable, 0);
	CHECK(p.t[0].in_kallsyms && p.t[3].in_kallsyms);
	CHECK_STR(p.reason, "no kprobes in this kernel and no BTF for ib_core");

	/* with kprobes: every target by kprobe */
	put("sys/bus/event_source/devices/kprobe/type", "6\n");
	rdma_plan_make(&p, root);
	CHECK_INT(p.usable, 4);
	for (i = 0; i < RDMA_NTARGETS; i++)
		CHECK_INT(p.t[i].method, RDMA_M_KPROBE);
	CHECK_STR(p.t[1].kprobe_prog, "kp_dispatch_event");
	CHECK_STR(p.t[1].fentry_prog, "fe_dispatch_event");
	CHECK_STR(rdma_method_name(RDMA_M_FENTRY), "fentry");
}

static void test_devs(void)
{
	char keep[512];

	put("sys/class/infiniband_verbs/uverbs0/ibdev", "mlx5_0\n");
	put("sys/class/infiniband_verbs/uverbs1/ibdev", "mlx5_1\n");

	put("proc/42/fd/.keep", "");	/* the directories */
	snprintf(keep, sizeof(keep), "%s/proc/42/fd/.keep", root);
	CHECK_INT(unlink(keep), 0);
	link_fd("proc/42/fd/3", "/dev/null");
	link_fd("proc/42/fd/7", "/dev/infiniband/uverbs1");
	CHECK(rdma_dev_in_use(root, 42, "mlx5_1"));
	CHECK(!rdma_dev_in_use(root, 42, "mlx5_0"));
	CHECK(!rdma_dev_in_use(root, 43, "mlx5_1"));	/* no such process */
	/* a uverbs device whose sysfs entry is gone */
	link_fd("proc/42/fd/8", "/dev/infiniband/uverbs9");
	CHECK(!rdma_dev_in_use(root, 42, "mlx5_9"));
}

int main(void)
{
	char cmd[128];
	int rc;

	snprintf(root, sizeof(root), "/tmp/ccld-rdma-plan.XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	test_plan();
	test_devs();
	rc = check_finish("test_rdma_plan");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", root);
	return rc;
}
