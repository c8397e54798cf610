// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * RDMA verbs programs: load only the programs whose target exists, with
 * the method the plan chose (autoload off for every other program, so a
 * kernel without the targets loads nothing and errs nothing), fall back
 * from fentry to nothing when fentry cannot load (EPERM on some kernels),
 * attach each on its own and remember what happened to each.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "rdma.skel.h"
#include "rdma_attach.h"

struct rdma_watch {
	struct rdma_bpf *skel;
	struct rdma_plan plan;
	struct bpf_link *links[RDMA_NTARGETS];
	int attached;
	char summary[512];
};

static int print_none(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

static struct bpf_program *program(struct rdma_bpf *skel, const char *name)
{
	return bpf_object__find_program_by_name(skel->obj, name);
}

static int share(struct bpf_map *map, int fd)
{
	int err = bpf_map__reuse_fd(map, fd);

	if (err)
		fprintf(stderr, "ccld-trace: rdma: cannot share map %s: %s\n",
			bpf_map__name(map), strerror(-err));
	return err;
}

/* opens and loads with the plan's methods; fills ERR on failure */
static int load(struct rdma_watch *w, const struct rdma_shared_maps *m,
		bool filter_pids, char *err, size_t errlen)
{
	libbpf_print_fn_t old;
	struct bpf_program *p;
	int i, ret;

	w->skel = rdma_bpf__open();
	if (!w->skel) {
		snprintf(err, errlen, "cannot open BPF object: %s", strerror(errno));
		return -1;
	}
	if (share(w->skel->maps.events, m->events) ||
	    share(w->skel->maps.rare_events, m->rare_events) ||
	    share(w->skel->maps.drops, m->drops) ||
	    share(w->skel->maps.pid_drops, m->pid_drops) ||
	    share(w->skel->maps.pid_filter, m->pid_filter)) {
		snprintf(err, errlen, "cannot share the tracer's maps");
		return -1;
	}
	w->skel->rodata->filter_pids = filter_pids;
	bpf_object__for_each_program(p, w->skel->obj)
		bpf_program__set_autoload(p, false);
	for (i = 0; i < RDMA_NTARGETS; i++) {
		const struct rdma_target *t = &w->plan.t[i];

		if (t->method == RDMA_M_NONE)
			continue;
		p = program(w->skel, t->method == RDMA_M_KPROBE ? t->kprobe_prog :
			    t->fentry_prog);
		if (!p) {
			snprintf(err, errlen, "no program for %s", t->func);
			return -1;
		}
		bpf_program__set_autoload(p, true);
	}
	/* an fentry refused (EPERM) is expected on some kernels: no log spew */
	old = libbpf_set_print(print_none);
	ret = rdma_bpf__load(w->skel);
	libbpf_set_print(old);
	if (ret)
		snprintf(err, errlen, "cannot load: %s", strerror(-ret));
	return ret;
}

/* gives up method M for every target (why: WHY); returns how many */
static int drop_method(struct rdma_watch *w, enum rdma_method m, const char *why)
{
	int i, n = 0;

	for (i = 0; i < RDMA_NTARGETS; i++) {
		struct rdma_target *t = &w->plan.t[i];

		if (t->method != m)
			continue;
		t->method = RDMA_M_NONE;
		snprintf(t->why, sizeof(t->why), "%s", why);
		w->plan.usable--;
		n++;
	}
	return n;
}

static void attach_all(struct rdma_watch *w)
{
	int i, err;

	for (i = 0; i < RDMA_NTARGETS; i++) {
		struct rdma_target *t = &w->plan.t[i];
		struct bpf_program *p;

		if (t->method == RDMA_M_NONE)
			continue;
		p = program(w->skel, t->method == RDMA_M_KPROBE ? t->kprobe_prog :
			    t->fentry_prog);
		w->links[i] = bpf_program__attach(p);
		if (!w->links[i]) {
			err = errno;
			snprintf(t->why, sizeof(t->why), "%s attach failed: %s",
				 rdma_method_name(t->method), strerror(err));
			t->method = RDMA_M_NONE;
			continue;
		}
		w->attached++;
	}
}

static void summarize(struct rdma_watch *w, const char *load_err)
{
	size_t n;
	int i;

	if (!w->attached) {
		snprintf(w->summary, sizeof(w->summary), "not attached: %s",
			 load_err[0] ? load_err : w->plan.reason[0] ? w->plan.reason :
			 w->plan.t[0].why);
		return;
	}
	n = snprintf(w->summary, sizeof(w->summary), "attached %d of %d:",
		     w->attached, RDMA_NTARGETS);
	for (i = 0; i < RDMA_NTARGETS && n < sizeof(w->summary); i++) {
		const struct rdma_target *t = &w->plan.t[i];

		if (t->method != RDMA_M_NONE)
			n += snprintf(w->summary + n, sizeof(w->summary) - n, " %s (%s)%s",
				      t->func, rdma_method_name(t->method),
				      i + 1 < RDMA_NTARGETS ? "," : "");
		else
			n += snprintf(w->summary + n, sizeof(w->summary) - n,
				      " %s not attached: %s%s", t->func, t->why,
				      i + 1 < RDMA_NTARGETS ? "," : "");
	}
}

struct rdma_watch *rdma_watch_open(const struct rdma_shared_maps *maps,
				   bool filter_pids)
{
	struct rdma_watch *w = calloc(1, sizeof(*w));
	char err[256] = "";
	bool loaded;

	if (!w)
		return NULL;
	rdma_plan_make(&w->plan, "");
	if (w->plan.usable && load(w, maps, filter_pids, err, sizeof(err))) {
		rdma_bpf__destroy(w->skel);
		w->skel = NULL;
		/* fentry is the usual culprit; the kprobe ones may still load */
		loaded = drop_method(w, RDMA_M_FENTRY, err) && w->plan.usable;
		if (loaded) {
			err[0] = '\0';
			loaded = !load(w, maps, filter_pids, err, sizeof(err));
		}
		if (!loaded) {
			drop_method(w, RDMA_M_KPROBE, err);
			rdma_bpf__destroy(w->skel);
			w->skel = NULL;
		}
	}
	if (w->skel)
		attach_all(w);
	summarize(w, err);
	return w;
}

const char *rdma_watch_summary(const struct rdma_watch *w)
{
	return w ? w->summary : "not attached: out of memory";
}

int rdma_watch_attached(const struct rdma_watch *w)
{
	return w ? w->attached : 0;
}

void rdma_watch_free(struct rdma_watch *w)
{
	int i;

	if (!w)
		return;
	for (i = 0; i < RDMA_NTARGETS; i++)
		bpf_link__destroy(w->links[i]);
	rdma_bpf__destroy(w->skel);
	free(w);
}
