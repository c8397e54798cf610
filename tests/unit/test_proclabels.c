// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Container and Kubernetes detection from /proc/PID/cgroup (user/proclabels.c). */
#include <unistd.h>
#include "check.h"
#include "proclabels.h"

#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_paths(void)
{
	struct proc_labels l;

	/* cgroup v2, systemd driver, containerd */
	proc_labels_from_cgroup("0::/kubepods.slice/kubepods-burstable.slice/"
				"kubepods-burstable-pod1a2b3c4d_5e6f.slice/cri-containerd-"
				ID ".scope\n", &l);
	CHECK(l.kubernetes);
	CHECK_STR(l.container, "0123456789ab");
	/* cgroup v1, cgroupfs driver, several controllers */
	proc_labels_from_cgroup("12:pids:/kubepods/besteffort/pod1a2b-3c4d/" ID "\n"
				"1:name=systemd:/kubepods/besteffort/pod1a2b-3c4d/" ID "\n", &l);
	CHECK(l.kubernetes);
	CHECK_STR(l.container, "0123456789ab");
	/* plain docker: a container, no pod */
	proc_labels_from_cgroup("0::/system.slice/docker-" ID ".scope\n", &l);
	CHECK(!l.kubernetes);
	CHECK_STR(l.container, "0123456789ab");
	/* the host: nothing */
	proc_labels_from_cgroup("0::/user.slice/user-0.slice/session-3.scope\n", &l);
	CHECK(!l.kubernetes);
	CHECK_STR(l.container, "");
	/* 63 hex digits are not an id */
	proc_labels_from_cgroup("0::/x/123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n",
				&l);
	CHECK_STR(l.container, "");
	proc_labels_from_cgroup("", &l);
	CHECK(!l.kubernetes);
}

/* this process: readable, and no pod on a test machine's host */
static void test_self(void)
{
	struct proc_labels l;

	proc_labels_read(getpid(), &l);
	CHECK(l.kubernetes || !l.pod[0]);
	proc_labels_read(0x7ffffff0, &l);	/* no such process */
	CHECK_STR(l.container, "");
}

int main(void)
{
	test_paths();
	test_self();
	return check_finish("test_proclabels");
}
