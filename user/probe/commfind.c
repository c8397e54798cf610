// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "attach.h"
#include "ccld.h"
#include "commfind.h"
#include "commread.h"
#include "procmaps.h"
#include "procmem.h"

#define NCCL_MAGIC		0x0280028002800280ULL
#define MAX_ARRAY		65536		/* slots of ncclComms[] we accept */
#define SCAN_MAX_BYTES		(4ull << 30)	/* default budget of the scan */
#define SCAN_MAX_S		3.0
#define SCAN_MAP_MAX		(4ull << 30)	/* larger mappings are data, not heaps */
#define SCAN_CHUNK		(1u << 20)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int push(struct comm_addr **out, size_t *n, size_t *cap, uint64_t addr, uint8_t src)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if ((*out)[i].addr == addr)
			return 0;
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		struct comm_addr *p = realloc(*out, c * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*out = p;
		*cap = c;
	}
	(*out)[*n].addr = addr;
	(*out)[(*n)++].source = src;
	return 0;
}

/* a live ncclComm at ADDR under L: both magics, a sane rank and size */
static bool is_comm(const struct nccl_layouts *l, pid_t pid, uint64_t addr,
		    struct commfind_stats *st)
{
	char why[128];

	switch (commread_check(l, pid, addr, -1, -1, why, sizeof(why))) {
	case COMM_FITS:
		return true;
	case COMM_MISFIT:
		if (!st->misfits++)
			snprintf(st->misfit, sizeof(st->misfit), "comm %#llx: %s",
				 (unsigned long long)addr, why);
		return false;
	case COMM_NONE:
		break;
	}
	return false;
}

/* the address where PID mapped LIB's file offset 0 (its load base) */
static int lib_base(const struct traced_lib *lib, pid_t pid, uint64_t *base)
{
	struct mapped_file *files = NULL;
	size_t n = 0, i;
	int ret = procmaps_files(pid, &files, &n);

	if (ret)
		return ret;
	ret = -ENOENT;
	for (i = 0; i < n; i++)
		if (files[i].dev == lib->dev && files[i].ino == lib->ino) {
			*base = files[i].base;
			ret = 0;
			break;
		}
	free(files);
	return ret;
}

/* NCCL's ncclComms[nNcclComms]: -ENOENT when the build has none */
static int from_array(const struct traced_lib *lib, const struct nccl_layouts *l, pid_t pid,
		      struct comm_addr **out, size_t *n, size_t *cap,
		      struct commfind_stats *st)
{
	uint64_t base, arr = 0, *slots;
	int32_t nslots = 0, i;
	int ret;

	if (!lib->comms_vaddr || !lib->ncomms_vaddr)
		return -ENOENT;
	ret = lib_base(lib, pid, &base);
	if (ret)
		return ret;
	base -= lib->vaddr_off0;
	if ((ret = procmem_s32(pid, base + lib->ncomms_vaddr, 0, &nslots)) ||
	    (ret = procmem_u64(pid, base + lib->comms_vaddr, 0, &arr)))
		return ret;
	if (nslots <= 0 || !arr)
		return 0;
	if (nslots > MAX_ARRAY)
		return -EINVAL;
	slots = calloc((size_t)nslots, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	/* NCCL may grow (realloc) the array meanwhile: a failed read is empty */
	ret = procmem_read(pid, arr, slots, (size_t)nslots * sizeof(*slots));
	for (i = 0; !ret && i < nslots; i++)
		if (slots[i] && is_comm(l, pid, slots[i], st))
			ret = push(out, n, cap, slots[i], CCLD_COMM_SRC_ARRAY);
	free(slots);
	return ret == -EFAULT ? 0 : ret;
}

/* a writable private mapping that may hold heap objects */
static bool scannable(const struct maps_line *ml)
{
	if (ml->perms[0] != 'r' || ml->perms[1] != 'w' || ml->perms[3] != 'p')
		return false;
	if (ml->end - ml->start > SCAN_MAP_MAX)
		return false;
	/* device memory and special mappings: never read */
	if (ml->path_len && ml->path[0] == '/' && !strncmp(ml->path, "/dev/", 5))
		return false;
	if (ml->path_len && ml->path[0] == '[' &&
	    strncmp(ml->path, "[heap]", ml->path_len) && strncmp(ml->path, "[anon", 5))
		return false;
	return true;
}

int commfind_scan(const struct traced_lib *lib, const struct nccl_layouts *lay, pid_t pid,
		  uint64_t max_bytes, double max_s, struct comm_addr **out, size_t *n,
		  struct commfind_stats *st, char *err, size_t errlen)
{
	const struct ccld_layout *l = &lay->comm;
	char path[64], line[PATH_MAX + 128];
	size_t cap = *n;
	double t0 = now_s();
	uint64_t *buf;
	int ret = 0;
	FILE *f;

	st->scanned = true;
	if (lay->source == LAYOUT_NONE || l->start_magic != 0 || l->end_magic < 0 ||
	    l->rank < 0 || l->nranks < 0) {
		snprintf(err, errlen, "no layout of ncclComm's magic fields in %s: "
			 "its comms cannot be recognised in memory", lib->path);
		return -ENOTSUP;
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return -errno;
	}
	buf = malloc(SCAN_CHUNK);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	while (!ret && fgets(line, sizeof(line), f)) {
		struct maps_line ml;
		uint64_t a;

		if (procmaps_parse_line(line, &ml) || !scannable(&ml))
			continue;
		for (a = ml.start; a < ml.end && !ret; a += SCAN_CHUNK) {
			size_t len = ml.end - a < SCAN_CHUNK ? ml.end - a : SCAN_CHUNK, i;

			if (st->bytes + len > max_bytes || now_s() - t0 > max_s) {
				st->cut = true;
				goto out;
			}
			if (procmem_read(pid, a, buf, len))
				break;	/* unmapped meanwhile, or not readable */
			st->bytes += len;
			for (i = 0; i < len / 8 && !ret; i++)
				if (buf[i] == NCCL_MAGIC && is_comm(lay, pid, a + 8 * i, st))
					ret = push(out, n, &cap, a + 8 * i, CCLD_COMM_SRC_SCAN);
		}
	}
out:
	st->seconds = now_s() - t0;
	free(buf);
	fclose(f);
	if (ret)
		snprintf(err, errlen, "out of memory");
	return ret;
}

int commfind(const struct traced_lib *lib, const struct nccl_layouts *l, pid_t pid,
	     struct comm_addr **out, size_t *n, struct commfind_stats *st, char *err,
	     size_t errlen)
{
	size_t cap = 0;
	int ret;

	*out = NULL;
	*n = 0;
	memset(st, 0, sizeof(*st));
	if (l->source == LAYOUT_NONE || !l->comm.valid || l->comm.rank < 0) {
		snprintf(err, errlen, "no layout of ncclComm in %s", lib->path);
		return -ENOTSUP;
	}
	ret = from_array(lib, l, pid, out, n, &cap, st);
	if (ret && ret != -ENOENT) {
		snprintf(err, errlen, "process %d: reading ncclComms[]: %s", (int)pid,
			 strerror(-ret));
		free(*out);
		*out = NULL;
		*n = 0;
		return ret;
	}
	if (*n)
		return 0;
	return commfind_scan(lib, l, pid, SCAN_MAX_BYTES, SCAN_MAX_S, out, n, st, err, errlen);
}
