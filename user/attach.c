// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "attach.h"
#include "elfsym.h"
#include "hooks.h"
#include "ldso.h"
#include "cuda.skel.h"
#include "nccl_api.skel.h"
#include "proxy.skel.h"
#include "procmaps.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static char not_nccl_mark;

/* The BPF program that decodes each tier A function's arguments. */
static struct bpf_program *entry_prog(struct nccl_api_bpf *skel, int fn)
{
	switch (fn) {
	case CCLD_FN_ALLREDUCE:
	case CCLD_FN_REDUCESCATTER:
		return skel->progs.coll_redop;
	case CCLD_FN_ALLGATHER:
	case CCLD_FN_ALLTOALL:
		return skel->progs.coll_plain;
	case CCLD_FN_BROADCAST:
	case CCLD_FN_GATHER:
	case CCLD_FN_SCATTER:
		return skel->progs.coll_root;
	case CCLD_FN_REDUCE:
		return skel->progs.coll_reduce;
	case CCLD_FN_SEND:
	case CCLD_FN_RECV:
		return skel->progs.p2p;
	case CCLD_FN_GROUP_START:
		return skel->progs.group_start;
	case CCLD_FN_GROUP_END:
		return skel->progs.group_end;
	case CCLD_FN_INIT_RANK:
	case CCLD_FN_INIT_RANK_CONFIG:
		return skel->progs.init_rank;
	case CCLD_FN_INIT_RANK_SCALABLE:
		return skel->progs.init_scalable;
	case CCLD_FN_INIT_ALL:
		return skel->progs.init_all;
	case CCLD_FN_SPLIT:
		return skel->progs.split;
	case CCLD_FN_SHRINK:
		return skel->progs.shrink;
	case CCLD_FN_FINALIZE:
	case CCLD_FN_DESTROY:
	case CCLD_FN_ABORT:
		return skel->progs.teardown;
	case CCLD_FN_GET_ASYNC_ERROR:
		return skel->progs.async_error;
	}
	return NULL;
}

static int add_link(struct traced_lib *lib, struct bpf_link *l)
{
	struct bpf_link **n = realloc(lib->links, (lib->nlinks + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	lib->links = n;
	lib->links[lib->nlinks++] = l;
	return 0;
}

static int attach_one(struct attacher *a, struct traced_lib *lib,
		      struct bpf_program *prog, long off, __u64 cookie,
		      bool retprobe, const char *sym, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie,
		    .retprobe = retprobe);
	struct bpf_link *l;
	int ret;

	l = bpf_program__attach_uprobe_opts(prog, -1, lib->path, off, &opts);
	if (!l) {
		ret = -errno;
		snprintf(err, errlen, "cannot attach %s%s to %s: %s",
			 retprobe ? "uretprobe " : "uprobe ", sym, lib->path,
			 strerror(-ret));
		return ret;
	}
	ret = add_link(lib, l);
	if (ret)
		bpf_link__destroy(l);
	return ret;
}

static int attach_lib(struct attacher *a, struct traced_lib *lib,
		      struct elf_syms *es, char *err, size_t errlen)
{
	__u32 slot = lib->slot;
	int i, ret;

	if (lib->layouts.has_dwarf) {
		lib->layouts.comm.valid = 1;
		ret = bpf_map_update_elem(bpf_map__fd(a->skel->maps.layouts),
					  &slot, &lib->layouts.comm, BPF_ANY);
		if (ret) {
			snprintf(err, errlen, "cannot store layout of %s: %s",
				 lib->path, strerror(errno));
			return -errno;
		}
	}
	for (i = 0; i < nccl_hooks_n; i++) {
		const struct hook_def *h = &nccl_hooks[i];
		__u64 cookie = ((__u64)slot << 16) | h->fn;
		struct bpf_program *prog;
		long off;

		if (h->tier != HOOK_TIER_A)
			continue;
		off = elfsym_offset(es, h->symbol);
		if (off < 0) {
			lib->nmissing++;
			if (h->required || a->verbose)
				fprintf(stderr, "ccld-trace: %s: no %s (%s off)\n",
					lib->path, h->symbol, h->feature);
			continue;
		}
		prog = entry_prog(a->skel, h->fn);
		ret = attach_one(a, lib, prog, off, cookie, false, h->symbol,
				 err, errlen);
		if (!ret)
			ret = attach_one(a, lib, a->skel->progs.api_return, off,
					 cookie, true, h->symbol, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

/* Step hooks of one process (tier C, on demand). */
struct step_links {
	struct bpf_link **links;
	int n;
	uint64_t since_ns;
};

static bool is_step_hook(int fn)
{
	return fn == CCLD_FN_PROXY_SEND_STEP || fn == CCLD_FN_PROXY_RECV_STEP ||
	       fn == CCLD_FN_PROXY_STEP_STATE || fn == CCLD_FN_PROXY_STEP_STOP;
}

static struct bpf_program *proxy_prog(struct proxy_bpf *skel, int fn)
{
	switch (fn) {
	case CCLD_FN_PROXY_OP_STATE:
		return skel->progs.proxy_op_state;
	case CCLD_FN_PROXY_STEP_STATE:
		return skel->progs.proxy_step_state;
	case CCLD_FN_PROXY_SEND_STEP:
	case CCLD_FN_PROXY_RECV_STEP:
	case CCLD_FN_PROXY_STEP_STOP:
		return skel->progs.proxy_step;
	default:
		return skel->progs.proxy_op;
	}
}

/*
 * Tier C on one NCCL file: its proxy layout into the BPF map, the op hooks
 * (start, stop) system wide, and the progress functions' offsets by which
 * the loader tells a send sub from a recv sub.
 */
static int attach_proxy_lib(struct attacher *a, struct traced_lib *lib,
			    struct elf_syms *es, char *err, size_t errlen)
{
	__u32 slot = lib->slot;
	size_t n;
	int i, ret;

	n = elfsym_offsets_ending(es, "endProxyProgress", lib->send_progress,
				  MAX_PROGRESS_FNS);
	lib->nsend_progress = n > MAX_PROGRESS_FNS ? MAX_PROGRESS_FNS : (int)n;
	n = elfsym_offsets_ending(es, "ecvProxyProgress", lib->recv_progress,
				  MAX_PROGRESS_FNS);
	lib->nrecv_progress = n > MAX_PROGRESS_FNS ? MAX_PROGRESS_FNS : (int)n;
	if (!a->proxy_skel || !lib->layouts.proxy.valid)
		return 0;
	if (bpf_map_update_elem(bpf_map__fd(a->proxy_skel->maps.proxy_layouts),
				&slot, &lib->layouts.proxy, BPF_ANY)) {
		snprintf(err, errlen, "cannot store proxy layout of %s: %s",
			 lib->path, strerror(errno));
		return -errno;
	}
	for (i = 0; i < nccl_hooks_n; i++) {
		const struct hook_def *h = &nccl_hooks[i];
		long off = elfsym_offset(es, h->symbol);

		if (off < 0)
			continue;
		if (is_step_hook(h->fn) && lib->nstep < (int)ARRAY_LEN(lib->step_off)) {
			lib->step_off[lib->nstep] = off;
			lib->step_hook[lib->nstep++] = h;
			continue;
		}
		if (h->fn != CCLD_FN_PROXY_OP_START && h->fn != CCLD_FN_PROXY_OP_STOP)
			continue;
		ret = attach_one(a, lib, proxy_prog(a->proxy_skel, h->fn), off,
				 ((__u64)slot << 16) | h->fn, false, h->symbol,
				 err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

static struct bpf_program *cuda_entry_prog(struct cuda_bpf *skel, int fn)
{
	switch (fn) {
	case CCLD_FN_CUDA_EVENT_RECORD:
		return skel->progs.cuda_event_record;
	case CCLD_FN_CUDA_EVENT_QUERY:
	case CCLD_FN_CUDA_EVENT_SYNC:
		return skel->progs.cuda_event_arg;
	default:
		return skel->progs.cuda_stream_arg;
	}
}

/* Tier B hooks on a libcudart / libcuda file; absent symbols are skipped. */
static int attach_cuda_lib(struct attacher *a, struct traced_lib *lib,
			   struct elf_syms *es, char *err, size_t errlen)
{
	int i, ret;

	for (i = 0; i < cuda_hooks_n; i++) {
		const struct cuda_hook_def *h = &cuda_hooks[i];
		__u64 cookie = h->fn | (h->driver ? CCLD_COOKIE_DRIVER : 0);
		long off = elfsym_offset(es, h->symbol);

		if (off < 0)
			continue;
		ret = attach_one(a, lib, cuda_entry_prog(a->cuda_skel, h->fn),
				 off, cookie, false, h->symbol, err, errlen);
		if (!ret)
			ret = attach_one(a, lib, a->cuda_skel->progs.cuda_return,
					 off, cookie, true, h->symbol, err,
					 errlen);
		if (ret)
			return ret;
	}
	return 0;
}

/* libcudart.so* or libcuda.so* (the frameworks' dynamic CUDA libraries) */
static bool is_cuda_file(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strncmp(base, "libcudart.so", 12) == 0 ||
	       strncmp(base, "libcuda.so", 10) == 0;
}

static struct traced_lib *find_lib(struct attacher *a, dev_t dev, ino_t ino)
{
	int i;

	for (i = 0; i < a->nlibs; i++) {
		if (a->libs[i]->dev == dev && a->libs[i]->ino == ino)
			return a->libs[i];
	}
	return NULL;
}

static int new_lib(struct attacher *a, const char *path, dev_t dev, ino_t ino,
		   struct traced_lib **out, char *err, size_t errlen)
{
	struct traced_lib *lib;

	if (a->nlibs >= CCLD_MAX_LAYOUTS) {
		snprintf(err, errlen, "too many distinct NCCL/CUDA libraries (max %d)",
			 CCLD_MAX_LAYOUTS);
		return -E2BIG;
	}
	lib = calloc(1, sizeof(*lib));
	if (!lib)
		return -ENOMEM;
	lib->slot = a->nlibs;
	lib->dev = dev;
	lib->ino = ino;
	snprintf(lib->path, sizeof(lib->path), "%s", path);
	a->libs[a->nlibs++] = lib;
	*out = lib;
	return 0;
}

/* where the build keeps every live comm (NCCL 2.24+ RAS), for the attach snapshot */
static void find_comm_array(struct traced_lib *lib, struct elf_syms *es)
{
	unsigned long va, vn, sa, sn;

	lib->comms_vaddr = lib->ncomms_vaddr = 0;
	if (!elfsym_offset_vaddr(es, 0, &lib->vaddr_off0))
		return;
	if (elfsym_object(es, "ncclComms", &va, &sa) && sa == sizeof(uint64_t) &&
	    elfsym_object(es, "nNcclComms", &vn, &sn) && sn == sizeof(int32_t)) {
		lib->comms_vaddr = va;
		lib->ncomms_vaddr = vn;
	}
}

static int add_lib(struct attacher *a, const struct mapped_file *mf,
		   struct elf_syms *es, bool is_cuda, char *err, size_t errlen)
{
	struct traced_lib *lib;
	char derr[256] = "";
	int ret;

	ret = new_lib(a, mf->host_path, mf->dev, mf->ino, &lib, err, errlen);
	if (ret)
		return ret;
	if (is_cuda) {
		lib->cuda = true;
		ret = attach_cuda_lib(a, lib, es, err, errlen);
		if (a->verbose)
			fprintf(stderr, "ccld-trace: attached %d tier B probes "
				"to %s\n", lib->nlinks, lib->path);
		return ret;
	}
	snprintf(lib->build_id, sizeof(lib->build_id), "%s", elfsym_build_id(es));
	snprintf(lib->version, sizeof(lib->version), "%s",
		 elfsym_nccl_version(es));
	find_comm_array(lib, es);
	if (dwarf_layout_read(lib->path, lib->build_id, &lib->layouts, derr,
			      sizeof(derr))) {
		fprintf(stderr, "ccld-trace: %s: DWARF unreadable (%s)\n",
			lib->path, derr);
		dwarf_layout_clear(&lib->layouts);
	}
	if (!lib->layouts.has_dwarf || lib->layouts.comm.comm_hash < 0)
		fprintf(stderr, "ccld-trace: %s: no DWARF layout of ncclComm: "
			"identity from init arguments only; processes that "
			"initialised before attach cannot be identified\n",
			lib->path);
	ret = attach_lib(a, lib, es, err, errlen);
	if (!ret)
		ret = attach_proxy_lib(a, lib, es, err, errlen);
	if (a->verbose)
		fprintf(stderr, "ccld-trace: attached %d probes to %s (NCCL %s, "
			"build-id %s, layout %s)\n", lib->nlinks, lib->path,
			lib->version[0] ? lib->version : "?",
			lib->build_id[0] ? lib->build_id : "none",
			lib->layouts.has_dwarf ? "dwarf" : "none");
	return ret;
}

static int add_ldso_file(struct attacher *a, const char *path, dev_t dev,
			 ino_t ino, char *err, size_t errlen)
{
	struct traced_lib *lib;
	long off, delta;
	int ret;

	if (ldso_debug_hook(path, &off, &delta, err, errlen))
		return -ENOENT;
	ret = new_lib(a, path, dev, ino, &lib, err, errlen);
	if (ret)
		return ret;
	lib->ldso = true;
	ret = attach_one(a, lib, a->skel->progs.ld_debug_state, off,
			 (__u64)delta, false, "_dl_debug_state", err, errlen);
	if (!ret && a->verbose)
		fprintf(stderr, "ccld-trace: watching library loads through %s\n",
			path);
	return ret;
}

int attacher_add_ldso(struct attacher *a, const char *path, char *err,
		      size_t errlen)
{
	struct stat st;

	if (stat(path, &st)) {
		snprintf(err, errlen, "cannot stat %s: %s", path, strerror(errno));
		return -errno;
	}
	if (find_lib(a, st.st_dev, st.st_ino))
		return 0;
	return add_ldso_file(a, path, st.st_dev, st.st_ino, err, errlen);
}

int attacher_add_pid(struct attacher *a, pid_t pid, char *err, size_t errlen)
{
	struct mapped_file *files = NULL;
	size_t n = 0, i;
	int found = 0, ret;

	ret = procmaps_files(pid, &files, &n);
	if (ret) {
		snprintf(err, errlen, ret == -ENOENT ? "no such process: %d" :
			 "cannot read /proc/%d/maps: %s", pid, strerror(-ret));
		return ret;
	}
	for (i = 0; i < n; i++) {
		struct hkey key = hkey3(files[i].dev, files[i].ino, 0);
		char eerr[256];
		struct elf_syms *es;

		struct traced_lib *known = find_lib(a, files[i].dev, files[i].ino);
		bool cuda = a->cuda_skel && is_cuda_file(files[i].path);

		if (known) {
			found += !known->cuda && !known->ldso;
			continue;
		}
		if (a->watch_loads && ldso_is_loader(files[i].path)) {
			/* a container's own ld.so: hook it too (best effort) */
			if (add_ldso_file(a, files[i].host_path, files[i].dev,
					  files[i].ino, eerr, sizeof(eerr)) &&
			    a->verbose)
				fprintf(stderr, "ccld-trace: %s\n", eerr);
			continue;
		}
		/* each file is read once: big framework libraries are costly */
		if (hmap_get(&a->not_nccl, key))
			continue;
		es = elfsym_open(files[i].host_path, eerr, sizeof(eerr));
		if (es && cuda) {
			ret = add_lib(a, &files[i], es, true, err, errlen);
		} else if (es && elfsym_defines_nccl(es)) {
			found++;
			ret = add_lib(a, &files[i], es, false, err, errlen);
		} else if (hmap_put(&a->not_nccl, key, &not_nccl_mark)) {
			ret = -ENOMEM;
		}
		elfsym_close(es);
		if (ret)
			break;
	}
	free(files);
	return ret ? ret : found;
}

struct traced_lib *attacher_lib(struct attacher *a, dev_t dev, ino_t ino)
{
	struct traced_lib *lib = find_lib(a, dev, ino);

	return lib && !lib->cuda && !lib->ldso ? lib : NULL;
}

bool attacher_step_hooks_active(const struct attacher *a, pid_t pid)
{
	return hmap_get(&a->step_links, hkey3((uint64_t)pid, 0, 0)) != NULL;
}

int attacher_step_hooks_on(struct attacher *a, pid_t pid, uint64_t now_ns,
			   char *err, size_t errlen)
{
	struct hkey key = hkey3((uint64_t)pid, 0, 0);
	struct step_links *sl;
	int i, j, ret = 0;

	if (!a->proxy_skel || hmap_get(&a->step_links, key))
		return 0;
	sl = calloc(1, sizeof(*sl));
	if (!sl)
		return -ENOMEM;
	sl->since_ns = now_ns;
	for (i = 0; i < a->nlibs && !ret; i++) {
		struct traced_lib *lib = a->libs[i];

		if (lib->cuda || lib->ldso || !lib->layouts.proxy.valid)
			continue;
		for (j = 0; j < lib->nstep && !ret; j++) {
			const struct hook_def *h = lib->step_hook[j];
			int fn = h->fn;
			LIBBPF_OPTS(bpf_uprobe_opts, opts,
				    .bpf_cookie = ((__u64)lib->slot << 16) | fn);
			struct bpf_link *l, **nl;

			l = bpf_program__attach_uprobe_opts(proxy_prog(a->proxy_skel, fn), pid,
							    lib->path, lib->step_off[j], &opts);
			if (!l) {
				ret = -errno;
				snprintf(err, errlen, "cannot attach step hook %s for pid %d: %s",
					 h->symbol, pid, strerror(-ret));
				break;
			}
			nl = realloc(sl->links, (sl->n + 1) * sizeof(*nl));
			if (!nl) {
				bpf_link__destroy(l);
				ret = -ENOMEM;
				break;
			}
			sl->links = nl;
			sl->links[sl->n++] = l;
		}
	}
	if (!ret)
		ret = hmap_put(&a->step_links, key, sl);
	if (ret) {
		for (j = 0; j < sl->n; j++)
			bpf_link__destroy(sl->links[j]);
		free(sl->links);
		free(sl);
		return ret;
	}
	return sl->n;
}

static void step_links_free(struct step_links *sl)
{
	int j;

	for (j = 0; j < sl->n; j++)
		bpf_link__destroy(sl->links[j]);
	free(sl->links);
	free(sl);
}

void attacher_step_hooks_off(struct attacher *a, pid_t pid, uint64_t now_ns)
{
	struct step_links *sl = hmap_del(&a->step_links, hkey3((uint64_t)pid, 0, 0));

	if (!sl)
		return;
	if (now_ns > sl->since_ns)
		a->step_attach_ns += now_ns - sl->since_ns;
	step_links_free(sl);
}

void attacher_free(struct attacher *a)
{
	struct hkey k;
	size_t it = 0;
	void *v;
	int i, j;

	while (hmap_next(&a->step_links, &it, &k, &v))
		step_links_free(v);
	hmap_free(&a->step_links);

	for (i = 0; i < a->nlibs; i++) {
		for (j = 0; j < a->libs[i]->nlinks; j++)
			bpf_link__destroy(a->libs[i]->links[j]);
		free(a->libs[i]->links);
		free(a->libs[i]);
	}
	a->nlibs = 0;
	hmap_free(&a->not_nccl);
}
