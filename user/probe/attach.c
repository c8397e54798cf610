// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "attach.h"
#include "elfsym.h"
#include "hooks.h"
#include "layout_table.h"
#include "ldso.h"
#include "cuda.skel.h"
#include "nccl_api.skel.h"
#include "proxy.skel.h"
#include "procmaps.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static char not_nccl_mark;

/* a process's libraries are a mask of slots (attacher.pid_libs) */
_Static_assert(CCLD_MAX_LAYOUTS <= 64, "slot masks are 64 bits");

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

/* the probes of batch B on LIB, for every process */
static int attach_batch(struct traced_lib *lib, struct ubatch *b, char *err, size_t errlen)
{
	int before = lib->nlinks, ret, i;

	ret = ubatch_attach(b, lib->path, -1, &lib->links, &lib->nlinks, err, errlen);
	for (i = before; i < lib->nlinks; i++)
		lib->nprobes += lib->links[i].nprobes;
	ubatch_free(b);
	return ret;
}

/* the comm layout in use into the BPF map: the probes read identity by it */
static int store_comm_layout(struct attacher *a, struct traced_lib *lib, char *err,
			     size_t errlen)
{
	__u32 slot = lib->slot;

	if (lib->layouts.source == LAYOUT_NONE)
		return 0;
	lib->layouts.comm.valid = 1;
	if (bpf_map_update_elem(bpf_map__fd(a->skel->maps.layouts), &slot,
				&lib->layouts.comm, BPF_ANY)) {
		snprintf(err, errlen, "cannot store layout of %s: %s", lib->path,
			 strerror(errno));
		return -errno;
	}
	return 0;
}

/*
 * NCCL's warnings: ncclDebugLog's entry and return, the cookie the distance
 * from the function to ncclLastError (the uprobe's IP is the function's
 * address in the process).  Off, and said with -v, where either is absent.
 */
static void add_warn_hooks(struct attacher *a, struct traced_lib *lib,
			   const struct elf_syms *es, struct ubatch *b)
{
	unsigned long buf, size, fn_vaddr;
	const struct hook_def *h = NULL;
	long off = -1;
	int i;

	for (i = 0; i < nccl_hooks_n && !h; i++)
		if (nccl_hooks[i].tier == HOOK_TIER_W)
			h = &nccl_hooks[i];
	if (h)
		off = hook_resolve(es, h, NULL);
	if (off < 0 || !elfsym_object(es, "ncclLastError", &buf, &size) || size < 2 ||
	    !elfsym_offset_vaddr(es, (unsigned long)off, &fn_vaddr)) {
		if (a->verbose)
			fprintf(stderr, "ccld-trace: %s: no ncclDebugLog/ncclLastError"
				" (NCCL's warnings off)\n", lib->path);
		return;
	}
	lib->warn_hooked = true;
	ubatch_add(b, a->skel->progs.nccl_warn_entry, false, (unsigned long)off,
		   (__u64)(buf - fn_vaddr), h->symbol);
	ubatch_add(b, a->skel->progs.nccl_warn_return, true, (unsigned long)off, 0, h->symbol);
}

static int attach_lib(struct attacher *a, struct traced_lib *lib,
		      struct elf_syms *es, char *err, size_t errlen)
{
	__u32 slot = lib->slot;
	int i, ret;

	struct ubatch b = {};

	ret = store_comm_layout(a, lib, err, errlen);
	if (ret)
		return ret;
	for (i = 0; i < nccl_hooks_n; i++) {
		const struct hook_def *h = &nccl_hooks[i];
		__u64 cookie = ((__u64)slot << 16) | h->fn;
		long off;

		if (h->tier != HOOK_TIER_A)
			continue;
		off = hook_resolve(es, h, NULL);
		if (off < 0) {
			lib->nmissing++;
			if (h->required || a->verbose)
				fprintf(stderr, "ccld-trace: %s: no %s (%s off)\n",
					lib->path, h->symbol, h->feature);
			continue;
		}
		ubatch_add(&b, entry_prog(a->skel, h->fn), false, (unsigned long)off, cookie,
			   h->symbol);
		ubatch_add(&b, a->skel->progs.api_return, true, (unsigned long)off, cookie,
			   h->symbol);
	}
	add_warn_hooks(a, lib, es, &b);
	return attach_batch(lib, &b, err, errlen);
}

/* Step hooks of one process (tier C, on demand). */
struct step_links {
	struct ulink *links;
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
 * Tier C once LIB has a proxy layout in use: the layout into the BPF map,
 * the op hooks (start, stop) system wide.
 */
static int attach_proxy_ops(struct attacher *a, struct traced_lib *lib, char *err,
			    size_t errlen)
{
	__u32 slot = lib->slot;
	struct ubatch b = {};
	int i;

	if (!a->proxy_skel || !lib->layouts.proxy.valid)
		return 0;
	if (bpf_map_update_elem(bpf_map__fd(a->proxy_skel->maps.proxy_layouts),
				&slot, &lib->layouts.proxy, BPF_ANY)) {
		snprintf(err, errlen, "cannot store proxy layout of %s: %s",
			 lib->path, strerror(errno));
		return -errno;
	}
	for (i = 0; i < lib->nop; i++) {
		const struct hook_def *h = lib->op_hook[i];

		ubatch_add(&b, proxy_prog(a->proxy_skel, h->fn), false,
			   (unsigned long)lib->op_off[i], ((__u64)slot << 16) | h->fn, h->symbol);
	}
	return attach_batch(lib, &b, err, errlen);
}

/*
 * Tier C on one NCCL file: the progress functions' offsets by which the
 * loader tells a send sub from a recv sub, the op and step hooks' offsets,
 * then the op hooks if a proxy layout is in use already.
 */
static int attach_proxy_lib(struct attacher *a, struct traced_lib *lib,
			    struct elf_syms *es, char *err, size_t errlen)
{
	int i;

	lib->nprogress = progress_fns_find(es, lib->progress, MAX_PROGRESS_FNS);
	for (i = 0; i < lib->nprogress; i++) {
		/* the strings live in ES, which is closed after the attach */
		lib->progress[i].symbol = NULL;
		lib->progress[i].name = NULL;
	}
	if (!a->proxy_skel)
		return 0;
	for (i = 0; i < nccl_hooks_n; i++) {
		const struct hook_def *h = &nccl_hooks[i];
		long off = hook_resolve(es, h, NULL);

		if (off < 0)
			continue;
		if (is_step_hook(h->fn) && lib->nstep < (int)ARRAY_LEN(lib->step_off)) {
			lib->step_off[lib->nstep] = off;
			lib->step_hook[lib->nstep++] = h;
		} else if ((h->fn == CCLD_FN_PROXY_OP_START || h->fn == CCLD_FN_PROXY_OP_STOP) &&
			   lib->nop < (int)ARRAY_LEN(lib->op_off)) {
			lib->op_off[lib->nop] = off;
			lib->op_hook[lib->nop++] = h;
		}
	}
	return attach_proxy_ops(a, lib, err, errlen);
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
	struct ubatch b = {};
	int i;

	for (i = 0; i < cuda_hooks_n; i++) {
		const struct cuda_hook_def *h = &cuda_hooks[i];
		__u64 cookie = h->fn | (h->driver ? CCLD_COOKIE_DRIVER : 0);
		long off = elfsym_offset(es, h->symbol);

		if (off < 0)
			continue;
		ubatch_add(&b, cuda_entry_prog(a->cuda_skel, h->fn), false,
			   (unsigned long)off, cookie, h->symbol);
		ubatch_add(&b, a->cuda_skel->progs.cuda_return, true, (unsigned long)off,
			   cookie, h->symbol);
	}
	return attach_batch(lib, &b, err, errlen);
}

static struct traced_lib *find_lib(struct attacher *a, dev_t dev, ino_t ino)
{
	int i;

	for (i = 0; i < a->nlibs; i++) {
		if (a->libs[i] && a->libs[i]->dev == dev && a->libs[i]->ino == ino)
			return a->libs[i];
	}
	return NULL;
}

static int new_lib(struct attacher *a, const char *path, dev_t dev, ino_t ino,
		   struct traced_lib **out, char *err, size_t errlen)
{
	struct traced_lib *lib;
	int slot;

	/* a released slot first */
	for (slot = 0; slot < a->nlibs && a->libs[slot]; slot++)
		;
	if (slot >= CCLD_MAX_LAYOUTS) {
		snprintf(err, errlen, "too many distinct NCCL/CUDA libraries in use (max %d)",
			 CCLD_MAX_LAYOUTS);
		return -E2BIG;
	}
	lib = calloc(1, sizeof(*lib));
	if (!lib)
		return -ENOMEM;
	lib->slot = slot;
	lib->dev = dev;
	lib->ino = ino;
	snprintf(lib->path, sizeof(lib->path), "%s", path);
	a->libs[slot] = lib;
	if (slot == a->nlibs)
		a->nlibs++;
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

/*
 * LIB's layout: its DWARF, else separate debuginfo (dwarf_layout.c), else
 * the table entry of its NCCL version as a candidate (table_state).
 */
static void pick_layout(struct traced_lib *lib)
{
	const char *ver = lib->version[0] ? lib->version : "(no version in the file)";
	const struct layout_table_entry *e = NULL;
	char derr[256] = "", why[160] = "";

	if (dwarf_layout_read(lib->path, lib->build_id, &lib->layouts, derr,
			      sizeof(derr))) {
		fprintf(stderr, "ccld-trace: %s: DWARF unreadable (%s)\n",
			lib->path, derr);
		dwarf_layout_clear(&lib->layouts);
	}
	if (lib->layouts.source != LAYOUT_NONE && lib->layouts.comm.comm_hash >= 0)
		return;
	if (lib->layouts.source == LAYOUT_NONE) {
		e = layout_table_find(lib->version);
		snprintf(why, sizeof(why), " (nor separate debuginfo for build-id %s%s%s)",
			 lib->build_id[0] ? lib->build_id : "none",
			 e ? "" : ", nor an entry in ccld's table for NCCL ", e ? "" : ver);
	}
	if (e) {
		layout_table_fill(e, &lib->table);
		lib->table_state = TABLE_PENDING;
		fprintf(stderr, "ccld-trace: %s: no DWARF layout of ncclComm%s: ccld's "
			"table entry for NCCL %s is used once a live communicator "
			"confirms it\n", lib->path, why, e->version);
		return;
	}
	fprintf(stderr, "ccld-trace: %s: no DWARF layout of ncclComm%s: identity "
		"from init arguments only; processes that initialised before "
		"attach cannot be identified\n", lib->path, why);
}

/*
 * The BPF loader hook need not stop a new process whose NCCL file is LIB:
 * the probes on it (pid -1) catch its calls already.  Keyed as the kernel
 * sees the file (ccld.h, struct ccld_file_key).  Not fatal: without the
 * entry a new process is stopped as if the file were new (--stop-new).
 */
static struct ccld_file_key file_key(const struct traced_lib *lib)
{
	struct ccld_file_key key = {
		.dev = ((__u64)major(lib->dev) << 20) | minor(lib->dev),
		.ino = lib->ino,
	};

	return key;
}

static void mark_probed(struct attacher *a, const struct traced_lib *lib)
{
	struct ccld_file_key key = file_key(lib);
	__u8 one = 1;

	if (bpf_map_update_elem(bpf_map__fd(a->skel->maps.probed_files), &key, &one,
				BPF_ANY))
		fprintf(stderr, "ccld-trace: %s: cannot record it as probed: %s\n",
			lib->path, strerror(errno));
}

static int add_lib(struct attacher *a, const struct mapped_file *mf,
		   struct elf_syms *es, bool is_cuda, char *err, size_t errlen)
{
	struct traced_lib *lib;
	int ret;

	ret = new_lib(a, mf->host_path, mf->dev, mf->ino, &lib, err, errlen);
	if (ret)
		return ret;
	if (is_cuda) {
		lib->cuda = true;
		ret = attach_cuda_lib(a, lib, es, err, errlen);
		if (a->verbose)
			fprintf(stderr, "ccld-trace: attached %d tier B probes "
				"to %s\n", lib->nprobes, lib->path);
		return ret;
	}
	snprintf(lib->build_id, sizeof(lib->build_id), "%s", elfsym_build_id(es));
	snprintf(lib->version, sizeof(lib->version), "%s",
		 elfsym_nccl_version(es));
	find_comm_array(lib, es);
	pick_layout(lib);
	ret = attach_lib(a, lib, es, err, errlen);
	if (!ret)
		mark_probed(a, lib);
	if (!ret)
		ret = attach_proxy_lib(a, lib, es, err, errlen);
	if (a->verbose)
		fprintf(stderr, "ccld-trace: attached %d probes to %s (NCCL %s, "
			"build-id %s, layout %s%s%s)\n", lib->nprobes, lib->path,
			lib->version[0] ? lib->version : "?",
			lib->build_id[0] ? lib->build_id : "none",
			lib->table_state == TABLE_PENDING ? "table, unconfirmed" :
			layout_source_name(lib->layouts.source),
			lib->layouts.origin[0] ? " " : "", lib->layouts.origin);
	return ret;
}

static int add_ldso_file(struct attacher *a, const char *path, dev_t dev,
			 ino_t ino, char *err, size_t errlen)
{
	struct traced_lib *lib;
	struct ubatch b = {};
	long off, delta;
	int ret;

	if (ldso_debug_hook(path, &off, &delta, err, errlen))
		return -ENOENT;
	ret = new_lib(a, path, dev, ino, &lib, err, errlen);
	if (ret)
		return ret;
	lib->ldso = true;
	ubatch_add(&b, a->skel->progs.ld_debug_state, false, (unsigned long)off,
		   (__u64)delta, "_dl_debug_state");
	ret = attach_batch(lib, &b, err, errlen);
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

/* PID maps the libraries of the slots in MASK: each new one has a user more */
static void add_users(struct attacher *a, pid_t pid, uint64_t mask)
{
	struct hkey k = hkey3((uint64_t)pid, 0, 0);
	uint64_t *had = hmap_get(&a->pid_libs, k), fresh;
	int i;

	if (!had) {
		had = calloc(1, sizeof(*had));
		if (!had || hmap_put(&a->pid_libs, k, had)) {
			free(had);
			return;
		}
	}
	fresh = mask & ~*had;
	*had |= mask;
	for (i = 0; i < a->nlibs; i++)
		if ((fresh >> i) & 1 && a->libs[i])
			a->libs[i]->users++;
}

/*
 * Every file checked once: a big framework library is costly to read.  A
 * node that sees new files all the time (a fresh virtualenv per job)
 * starts the list again past this many.
 */
#define NOT_NCCL_MAX 65536

static int mark_not_nccl(struct attacher *a, struct hkey key)
{
	if (a->not_nccl.live >= NOT_NCCL_MAX) {
		hmap_free(&a->not_nccl);
		hmap_init(&a->not_nccl);
	}
	return hmap_put(&a->not_nccl, key, &not_nccl_mark);
}

int attacher_add_pid(struct attacher *a, pid_t pid, char *err, size_t errlen)
{
	struct mapped_file *files = NULL;
	size_t n = 0, i;
	int found = 0, ret;
	uint64_t mask = 0;
	bool again = false;

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
		bool cuda = a->cuda_skel && hooks_cuda_file(files[i].path);

		/* its probes are going: a later look (rescan) attaches it again */
		if (known && known->detaching) {
			again = true;
			continue;
		}
		if (known) {
			found += !known->cuda && !known->ldso;
			if (!known->ldso)
				mask |= 1ULL << known->slot;
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
		} else if (mark_not_nccl(a, key)) {
			ret = -ENOMEM;
		}
		elfsym_close(es);
		known = find_lib(a, files[i].dev, files[i].ino);
		if (known)
			mask |= 1ULL << known->slot;
		if (ret)
			break;
	}
	free(files);
	/* a process that maps a library being detached is not followed yet */
	if (!ret && again) {
		snprintf(err, errlen, "process %d: its NCCL is being detached; later", pid);
		return -EAGAIN;
	}
	/* only a process that maps NCCL is followed, and told gone */
	if (found)
		add_users(a, pid, mask);
	return ret ? ret : found;
}

int attacher_table_confirm(struct attacher *a, struct traced_lib *lib, char *err,
			   size_t errlen)
{
	int ret;

	if (lib->table_state != TABLE_PENDING)
		return 0;
	lib->layouts = lib->table;
	lib->table_state = TABLE_CONFIRMED;
	ret = store_comm_layout(a, lib, err, errlen);
	if (!ret)
		ret = attach_proxy_ops(a, lib, err, errlen);
	return ret;
}

void attacher_table_reject(struct attacher *a, struct traced_lib *lib)
{
	if (lib->table_state == TABLE_PENDING)
		lib->table_state = TABLE_REJECTED;
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

static void step_links_free(struct step_links *sl)
{
	ulink_destroy_all(sl->links, sl->n);
	free(sl->links);
	free(sl);
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
		struct ubatch b = {};

		/* a library being detached: its slot goes to another soon */
		if (!lib || lib->detaching || lib->cuda || lib->ldso || !lib->layouts.proxy.valid)
			continue;
		for (j = 0; j < lib->nstep; j++) {
			const struct hook_def *h = lib->step_hook[j];

			ubatch_add(&b, proxy_prog(a->proxy_skel, h->fn), false,
				   (unsigned long)lib->step_off[j], ((__u64)lib->slot << 16) | h->fn,
				   h->symbol);
		}
		ret = ubatch_attach(&b, lib->path, pid, &sl->links, &sl->n, err, errlen);
		ubatch_free(&b);
	}
	if (!ret)
		ret = hmap_put(&a->step_links, key, sl);
	if (ret) {
		step_links_free(sl);
		return ret;
	}
	for (i = 0, j = 0; i < sl->n; i++)
		j += sl->links[i].nprobes;
	return j;
}

/*
 * moves the *N links to the end of ALL (*NALL of them) and sets *N to 0;
 * without memory they stay where they are (destroyed with their owner)
 */
static void links_take(struct ulink **all, int *nall, struct ulink *links, int *n)
{
	struct ulink *grown;

	if (!*n)
		return;
	grown = realloc(*all, (*nall + *n) * sizeof(**all));
	if (!grown)
		return;
	memcpy(grown + *nall, links, *n * sizeof(*links));
	*all = grown;
	*nall += *n;
	*n = 0;
}

void attacher_step_hooks_off(struct attacher *a, const uint32_t *pids, size_t n,
			     uint64_t now_ns)
{
	struct ulink *all = NULL;
	struct step_links *sl;
	int nall = 0;
	size_t i;

	/* one close for all their links: the kernel's waits overlap */
	for (i = 0; i < n; i++) {
		sl = hmap_del(&a->step_links, hkey3((uint64_t)pids[i], 0, 0));
		if (!sl)
			continue;
		if (now_ns > sl->since_ns)
			a->step_attach_ns += now_ns - sl->since_ns;
		links_take(&all, &nall, sl->links, &sl->n);
		step_links_free(sl);
	}
	ulink_destroy_all(all, nall);
	free(all);
}

static void free_lib(struct traced_lib *lib)
{
	ulink_destroy_all(lib->links, lib->nlinks);
	free(lib->links);
	free(lib);
}

const struct traced_lib *attacher_pid_nccl(const struct attacher *a, pid_t pid)
{
	const uint64_t *mask = hmap_get(&a->pid_libs, hkey3((uint64_t)pid, 0, 0));
	int i;

	for (i = 0; mask && i < a->nlibs; i++) {
		const struct traced_lib *lib = a->libs[i];

		if ((*mask >> i & 1) && lib && !lib->cuda && !lib->ldso)
			return lib;
	}
	return NULL;
}

void attacher_pid_gone(struct attacher *a, pid_t pid, uint64_t now_ns)
{
	uint64_t *mask = hmap_del(&a->pid_libs, hkey3((uint64_t)pid, 0, 0));
	int i;

	if (!mask)
		return;
	for (i = 0; i < a->nlibs; i++) {
		struct traced_lib *lib = a->libs[i];

		if (!((*mask >> i) & 1) || !lib || !lib->users)
			continue;
		if (!--lib->users)
			lib->idle_since_ns = now_ns;
	}
	free(mask);
}

struct detach_job {
	pthread_t thread;
	struct traced_lib *lib;
	int done;		/* atomic: the thread is through */
};

static void *detach_main(void *arg)
{
	struct detach_job *j = arg;

	ulink_destroy_all(j->lib->links, j->lib->nlinks);
	j->lib->nlinks = 0;
	__atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* the library whose probes went: its slot is free once the thread is done */
static int reap_detach(struct attacher *a, bool wait)
{
	struct detach_job *j = a->detach;

	if (!j || (!wait && !__atomic_load_n(&j->done, __ATOMIC_ACQUIRE)))
		return 0;
	pthread_join(j->thread, NULL);
	a->libs[j->lib->slot] = NULL;
	free_lib(j->lib);
	free(j);
	a->detach = NULL;
	return 1;
}

int attacher_detaching(const struct attacher *a)
{
	return a->detach != NULL;
}

int attacher_release_unused(struct attacher *a, uint64_t now_ns, uint64_t after_ns)
{
	struct ccld_file_key key;
	struct detach_job *j;
	int i, n = reap_detach(a, false), ret;

	for (i = 0; i < a->nlibs && !a->detach; i++) {
		struct traced_lib *lib = a->libs[i];

		if (!lib || lib->ldso || lib->users || !lib->idle_since_ns ||
		    now_ns - lib->idle_since_ns < after_ns)
			continue;
		j = calloc(1, sizeof(*j));
		if (!j)
			return n;
		j->lib = lib;
		/* a process that maps it from now on waits for a fresh attach */
		lib->detaching = true;
		ret = pthread_create(&j->thread, NULL, detach_main, j);
		if (ret) {
			fprintf(stderr, "ccld-trace: %s: cannot start detaching it: %s\n",
				lib->path, strerror(ret));
			lib->detaching = false;
			free(j);
			return n;
		}
		a->detach = j;
		/* ... and is stopped again (--stop-new) */
		if (!lib->cuda) {
			key = file_key(lib);
			bpf_map_delete_elem(bpf_map__fd(a->skel->maps.probed_files), &key);
		}
		if (a->verbose)
			fprintf(stderr, "ccld-trace: %s: no process uses it, detaching "
				"its %d probes\n", lib->path, lib->nprobes);
	}
	return n;
}

void attacher_free(struct attacher *a)
{
	struct ulink *all = NULL;
	struct step_links *sl;
	int i, nall = 0;
	struct hkey k;
	size_t it = 0;
	void *v;

	reap_detach(a, true);
	/*
	 * every link in one ulink_destroy_all: the kernel's waits in their
	 * closes overlap, where a library or a process at a time waited
	 * for each in turn (a third of a second at each stop)
	 */
	while (hmap_next(&a->step_links, &it, &k, &v)) {
		sl = v;
		links_take(&all, &nall, sl->links, &sl->n);
		step_links_free(sl);
	}
	hmap_free(&a->step_links);
	for (it = 0; hmap_next(&a->pid_libs, &it, &k, &v);)
		free(v);
	hmap_free(&a->pid_libs);

	for (i = 0; i < a->nlibs; i++) {
		if (!a->libs[i])
			continue;
		links_take(&all, &nall, a->libs[i]->links, &a->libs[i]->nlinks);
		free_lib(a->libs[i]);
	}
	ulink_destroy_all(all, nall);
	free(all);
	a->nlibs = 0;
	hmap_free(&a->not_nccl);
}
