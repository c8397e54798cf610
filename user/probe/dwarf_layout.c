// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * NCCL struct layouts from DWARF (libdw).  The real libnccl.so.2 carries
 * DWARF for hundreds of compile units, and struct ncclComm is defined in
 * most of them: only the top-level DIEs of each unit are looked at, and the
 * walk stops as soon as every struct has a complete definition.  Results
 * are cached by build-id as a small text file so that a second attach (or
 * probe-check) costs nothing.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "debuginfo.h"
#include "dwarf_layout.h"

#define NCCL_MAGIC		0x0280028002800280ULL
#define CACHE_FORMAT		"ccld-layout 5"
#define DEFAULT_CACHE_DIR	"/var/cache/ccld"

#define COMM(f)  offsetof(struct nccl_layouts, comm.f)
#define PROXY(f) offsetof(struct nccl_layouts, proxy.f)
#define WALK(f)  offsetof(struct nccl_layouts, walk.f)
#define PEER(f)  offsetof(struct nccl_layouts, peer.f)

/* seq_number_n, sub_size and magic are derived, not members: not here */
const struct layout_field layout_fields[] = {
	{ "ncclComm", "startMagic", COMM(start_magic) },
	{ "ncclComm", "commHash", COMM(comm_hash) },
	{ "ncclComm", "rank", COMM(rank) },
	{ "ncclComm", "nRanks", COMM(nranks) },
	{ "ncclComm", "cudaDev", COMM(cuda_dev) },
	{ "ncclComm", "busId", COMM(bus_id) },
	{ "ncclComm", "opCount", COMM(op_count) },
	{ "ncclComm", "collOpCount", COMM(coll_op_count) },
	{ "ncclComm", "nChannels", COMM(n_channels) },
	{ "ncclComm", "seqNumber", COMM(seq_number) },
	{ "ncclComm", "endMagic", COMM(end_magic) },
	{ "ncclComm", "initState", COMM(init_state) },
	{ "ncclComm", "proxyState", WALK(comm_proxy_state) },
	{ "ncclComm", "peerInfo", PEER(comm_peer_info) },
	{ "ncclProxyArgs", "subs", PROXY(args_subs) },
	{ "ncclProxyArgs", "progress", PROXY(args_progress) },
	{ "ncclProxyArgs", "nsubs", PROXY(args_nsubs) },
	{ "ncclProxyArgs", "done", PROXY(args_done) },
	{ "ncclProxyArgs", "opCount", PROXY(args_op_count) },
	{ "ncclProxyArgs", "sliceSteps", PROXY(args_slice_steps) },
	{ "ncclProxyArgs", "chunkSteps", PROXY(args_chunk_steps) },
	{ "ncclProxyArgs", "coll", PROXY(args_coll) },
	{ "ncclProxyArgs", "protocol", PROXY(args_protocol) },
	{ "ncclProxyArgs", "dtype", PROXY(args_dtype) },
	{ "ncclProxyArgs", "redOp", PROXY(args_red_op) },
	{ "ncclProxyArgs", "next", WALK(args_next) },
	{ "ncclProxySubArgs", "channelId", PROXY(sub_channel_id) },
	{ "ncclProxySubArgs", "nsteps", PROXY(sub_nsteps) },
	{ "ncclProxySubArgs", "nbytes", PROXY(sub_nbytes) },
	{ "ncclProxySubArgs", "peer", PROXY(sub_peer) },
	{ "ncclProxySubArgs", "posted", PROXY(sub_posted) },
	{ "ncclProxySubArgs", "received", PROXY(sub_received) },
	{ "ncclProxySubArgs", "flushed", PROXY(sub_flushed) },
	{ "ncclProxySubArgs", "transmitted", PROXY(sub_transmitted) },
	{ "ncclProxySubArgs", "done", PROXY(sub_done) },
	{ "ncclProxySubArgs", "base", PROXY(sub_base) },
	{ "ncclProxySubArgs", "rank", PROXY(sub_rank) },
	{ "ncclProxyState", "progressState", WALK(state_progress) },
	{ "ncclProxyProgressState", "thread", WALK(progress_thread) },
	{ "ncclProxyProgressState", "active", WALK(progress_active) },
	{ "ncclPeerInfo", "hostHash", PEER(host_hash) },
	{ "ncclPeerInfo", "pidHash", PEER(pid_hash) },
	{ "ncclPeerInfo", "busId", PEER(bus_id) },
	{ "ncclPeerInfo", "cudaDev", PEER(cuda_dev) },
};

const int layout_fields_n = sizeof(layout_fields) / sizeof(layout_fields[0]);

static __s32 *field_ptr(struct nccl_layouts *l, const struct layout_field *f)
{
	return (__s32 *)((char *)l + f->off);
}

__s32 layout_field_get(const struct nccl_layouts *l,
		       const struct layout_field *f)
{
	return *(const __s32 *)((const char *)l + f->off);
}

void dwarf_layout_clear(struct nccl_layouts *l)
{
	int i;

	memset(l, 0, sizeof(*l));
	for (i = 0; i < layout_fields_n; i++)
		*field_ptr(l, &layout_fields[i]) = -1;
	l->proxy.sub_size = -1;
	l->peer.size = -1;
	l->comm_size = -1;
}

const char *layout_source_name(enum layout_source s)
{
	switch (s) {
	case LAYOUT_DWARF:
		return "dwarf";
	case LAYOUT_DEBUGINFO:
		return "debuginfo";
	case LAYOUT_TABLE:
		return "table";
	case LAYOUT_NONE:
		break;
	}
	return "none";
}

void layout_derive(struct nccl_layouts *l)
{
	l->comm.magic = l->comm.start_magic >= 0 && l->comm.end_magic >= 0 ?
			NCCL_MAGIC : 0;
	if (l->comm.seq_number < 0)
		l->comm.seq_number_n = 0;
	if (l->comm.seq_number_n > CCLD_MAX_SEQ_TYPES)
		l->comm.seq_number_n = CCLD_MAX_SEQ_TYPES;
	/* sub = args + subs + s * sub_size: useless without both */
	l->proxy.valid = l->proxy.args_subs >= 0 && l->proxy.sub_size > 0;
}

/* ---- DWARF walk ------------------------------------------------------- */

enum { S_COMM, S_ARGS, S_SUB, S_STATE, S_PROGRESS, S_PEER, S_MAX };
static const char *const struct_names[S_MAX] = {
	"ncclComm", "ncclProxyArgs", "ncclProxySubArgs", "ncclProxyState",
	"ncclProxyProgressState", "ncclPeerInfo",
};

/* DW_AT_data_member_location: a constant, or DW_OP_plus_uconst (DWARF 2) */
static bool member_location(Dwarf_Die *m, Dwarf_Word *loc)
{
	Dwarf_Attribute attr;
	Dwarf_Op *ops;
	size_t nops;

	if (!dwarf_attr(m, DW_AT_data_member_location, &attr)) {
		*loc = 0;	/* union members */
		return true;
	}
	if (dwarf_formudata(&attr, loc) == 0)
		return true;
	if (dwarf_getlocation(&attr, &ops, &nops) == 0 && nops == 1 &&
	    ops[0].atom == DW_OP_plus_uconst) {
		*loc = ops[0].number;
		return true;
	}
	return false;
}

static bool is_aggregate(int tag)
{
	return tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
	       tag == DW_TAG_class_type;
}

/* Type of DIE (through typedefs and qualifiers) into *OUT. */
static bool member_type(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute attr;
	Dwarf_Die t;

	if (!dwarf_attr_integrate(die, DW_AT_type, &attr) ||
	    !dwarf_formref_die(&attr, &t))
		return false;
	return dwarf_peel_type(&t, out) == 0;
}

/*
 * Anonymous members nest two or three deep in NCCL.  A hostile library's
 * DWARF can make one contain itself (a cycle) or fan out: the search stops
 * at this depth and after this many members.
 */
#define MEMBER_DEPTH_MAX	8
#define MEMBER_VISITS_MAX	65536

/*
 * Finds data member NAME of the struct/union ST, also inside anonymous
 * struct/union members (offsets accumulate).  *MEMBER: its DIE.  *BUDGET
 * counts down the members looked at.
 */
static bool find_member_in(Dwarf_Die *st, const char *name, Dwarf_Word base, int depth,
			   long *budget, Dwarf_Word *off, Dwarf_Die *member)
{
	Dwarf_Die m;

	if (depth > MEMBER_DEPTH_MAX || dwarf_child(st, &m) != 0)
		return false;
	do {
		Dwarf_Die peeled;
		const char *mname;
		Dwarf_Word loc;

		if (--*budget < 0)
			return false;
		if (dwarf_tag(&m) != DW_TAG_member)
			continue;
		/* C++ static members have no storage in the object */
		if (dwarf_hasattr(&m, DW_AT_external) ||
		    dwarf_hasattr(&m, DW_AT_declaration))
			continue;
		if (!member_location(&m, &loc))
			continue;
		mname = dwarf_diename(&m);
		if (mname) {
			if (strcmp(mname, name) == 0) {
				*off = base + loc;
				*member = m;
				return true;
			}
			continue;
		}
		if (!member_type(&m, &peeled) || !is_aggregate(dwarf_tag(&peeled)))
			continue;
		if (find_member_in(&peeled, name, base + loc, depth + 1, budget, off, member))
			return true;
	} while (dwarf_siblingof(&m, &m) == 0);
	return false;
}

static bool find_member(Dwarf_Die *st, const char *name, Dwarf_Word *off, Dwarf_Die *member)
{
	long budget = MEMBER_VISITS_MAX;

	return find_member_in(st, name, 0, 0, &budget, off, member);
}

/* Element count of the (first dimension of the) array type ARR, or 0. */
static Dwarf_Word array_count(Dwarf_Die *arr)
{
	Dwarf_Attribute attr;
	Dwarf_Word v, lo = 0;
	Dwarf_Die sub;

	if (dwarf_tag(arr) != DW_TAG_array_type || dwarf_child(arr, &sub) != 0)
		return 0;
	do {
		if (dwarf_tag(&sub) != DW_TAG_subrange_type)
			continue;
		if (dwarf_attr(&sub, DW_AT_count, &attr) &&
		    dwarf_formudata(&attr, &v) == 0)
			return v;
		if (dwarf_attr(&sub, DW_AT_lower_bound, &attr))
			dwarf_formudata(&attr, &lo);
		if (dwarf_attr(&sub, DW_AT_upper_bound, &attr) &&
		    dwarf_formudata(&attr, &v) == 0 && v >= lo)
			return v - lo + 1;
		return 0;
	} while (dwarf_siblingof(&sub, &sub) == 0);
	return 0;
}

static void fill_fields(struct nccl_layouts *l, Dwarf_Die *st, int which)
{
	int i;

	for (i = 0; i < layout_fields_n; i++) {
		const struct layout_field *f = &layout_fields[i];
		Dwarf_Word off;
		Dwarf_Die m;

		if (strcmp(f->struct_name, struct_names[which]) != 0)
			continue;
		/* offsets travel as __s32: a larger one is unusable */
		if (find_member(st, f->member, &off, &m) && off <= INT32_MAX)
			*field_ptr(l, f) = (__s32)off;
	}
}

static void fill_comm(struct nccl_layouts *l, Dwarf_Die *st)
{
	Dwarf_Word size, off, n;
	Dwarf_Die m, t;

	fill_fields(l, st, S_COMM);
	if (dwarf_aggregate_size(st, &size) == 0)
		l->comm_size = (long)size;
	if (find_member(st, "seqNumber", &off, &m) && member_type(&m, &t)) {
		n = array_count(&t);
		/* BPF sums at most CCLD_MAX_SEQ_TYPES entries (layout_derive) */
		l->comm.seq_number_n = n > CCLD_MAX_SEQ_TYPES ?
				       CCLD_MAX_SEQ_TYPES : (__u32)n;
		if (!n)
			l->comm.seq_number = -1;
	}
	l->comm.valid = 1;
}

static bool is_definition(Dwarf_Die *die)
{
	return !dwarf_hasattr(die, DW_AT_declaration) &&
	       dwarf_hasattr(die, DW_AT_byte_size);
}

static int walk_dwarf(Dwarf *dw, struct nccl_layouts *l)
{
	Dwarf_Die found[S_MAX];
	bool have[S_MAX] = { false };
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	int nfound = 0, ret;
	Dwarf_Word size;

	while ((ret = dwarf_get_units(dw, cu, &cu, NULL, NULL, &cudie,
				      NULL)) == 0 && nfound < S_MAX) {
		Dwarf_Die die;

		if (dwarf_child(&cudie, &die) != 0)
			continue;
		do {
			const char *name;
			int i, tag = dwarf_tag(&die);

			if (tag != DW_TAG_structure_type && tag != DW_TAG_class_type)
				continue;
			name = dwarf_diename(&die);
			if (!name || strncmp(name, "nccl", 4) != 0)
				continue;
			for (i = 0; i < S_MAX; i++) {
				if (!have[i] && strcmp(name, struct_names[i]) == 0 &&
				    is_definition(&die)) {
					found[i] = die;
					have[i] = true;
					nfound++;
				}
			}
		} while (nfound < S_MAX && dwarf_siblingof(&die, &die) == 0);
	}
	if (ret < 0)
		return -1;
	if (have[S_COMM])
		fill_comm(l, &found[S_COMM]);
	if (have[S_ARGS])
		fill_fields(l, &found[S_ARGS], S_ARGS);
	if (have[S_SUB]) {
		fill_fields(l, &found[S_SUB], S_SUB);
		if (dwarf_aggregate_size(&found[S_SUB], &size) == 0 && size <= INT32_MAX)
			l->proxy.sub_size = (__s32)size;
	}
	if (have[S_STATE])
		fill_fields(l, &found[S_STATE], S_STATE);
	if (have[S_PROGRESS])
		fill_fields(l, &found[S_PROGRESS], S_PROGRESS);
	if (have[S_PEER]) {
		fill_fields(l, &found[S_PEER], S_PEER);
		if (dwarf_aggregate_size(&found[S_PEER], &size) == 0 && size <= INT32_MAX)
			l->peer.size = (__s32)size;
	}
	layout_derive(l);
	return 0;
}

/* ---- cache ------------------------------------------------------------- */

static bool build_id_ok(const char *id)
{
	size_t n = strlen(id);

	return n >= 8 && n <= 40 && strspn(id, "0123456789abcdef") == n;
}

static const char *cache_dir(void)
{
	const char *d = getenv("CCLD_CACHE_DIR");

	return d && *d ? d : DEFAULT_CACHE_DIR;
}

static bool cache_path(const char *build_id, char *buf, size_t len)
{
	int n;

	if (!build_id_ok(build_id))
		return false;
	n = snprintf(buf, len, "%s/%s.layout", cache_dir(), build_id);
	return n > 0 && (size_t)n < len;
}

static bool cache_load(const char *build_id, struct nccl_layouts *l)
{
	struct nccl_layouts c;
	char path[PATH_MAX], line[PATH_MAX + 16], key[128];
	unsigned long long magic;
	bool header = false;
	int i, nseen = 0;
	FILE *f;

	if (!cache_path(build_id, path, sizeof(path)))
		return false;
	f = fopen(path, "re");
	if (!f)
		return false;
	dwarf_layout_clear(&c);
	while (fgets(line, sizeof(line), f)) {
		long long v;

		if (!header) {
			header = strncmp(line, CACHE_FORMAT "\n",
					 sizeof(CACHE_FORMAT)) == 0;
			if (!header)
				break;
			continue;
		}
		if (sscanf(line, "magic %llx", &magic) == 1) {
			c.comm.magic = magic;
			continue;
		}
		if (strncmp(line, "origin ", 7) == 0) {
			snprintf(c.origin, sizeof(c.origin), "%.*s",
				 (int)strcspn(line + 7, "\n"), line + 7);
			continue;
		}
		if (strcmp(line, "source dwarf\n") == 0) {
			c.source = LAYOUT_DWARF;
			continue;
		}
		if (strcmp(line, "source debuginfo\n") == 0) {
			c.source = LAYOUT_DEBUGINFO;
			continue;
		}
		if (sscanf(line, "%127s %lld", key, &v) != 2)
			continue;
		if (strcmp(key, "comm_size") == 0)
			c.comm_size = (long)v;
		else if (strcmp(key, "comm_valid") == 0)
			c.comm.valid = (__u32)v;
		else if (strcmp(key, "proxy_valid") == 0)
			c.proxy.valid = (__u32)v;
		else if (strcmp(key, "seq_number_n") == 0)
			c.comm.seq_number_n = (__u32)v;
		else if (strcmp(key, "sub_size") == 0)
			c.proxy.sub_size = (__s32)v;
		else if (strcmp(key, "peer_size") == 0)
			c.peer.size = (__s32)v;
		for (i = 0; i < layout_fields_n; i++) {
			const struct layout_field *fd = &layout_fields[i];
			char k[128];

			snprintf(k, sizeof(k), "%s.%s", fd->struct_name,
				 fd->member);
			if (strcmp(key, k) == 0) {
				*field_ptr(&c, fd) = (__s32)v;
				nseen++;
			}
		}
	}
	fclose(f);
	/* written by a ccld that read fewer fields: read the DWARF again */
	if (!header || nseen != layout_fields_n || c.source == LAYOUT_NONE)
		return false;
	c.from_cache = true;
	*l = c;
	return true;
}

static int mkdir_p(const char *dir)
{
	char buf[PATH_MAX], *p;

	if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
		return -1;
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
}

/* best effort: an unwritable cache directory only means no cache */
static void cache_store(const char *build_id, const struct nccl_layouts *l)
{
	char path[PATH_MAX], tmp[PATH_MAX + 32];
	FILE *f;
	int i, bad;

	if (!cache_path(build_id, path, sizeof(path)) || mkdir_p(cache_dir()))
		return;
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	f = fopen(tmp, "we");
	if (!f)
		return;
	fprintf(f, CACHE_FORMAT "\n");
	fprintf(f, "source %s\n", layout_source_name(l->source));
	if (l->origin[0])
		fprintf(f, "origin %s\n", l->origin);
	fprintf(f, "comm_size %ld\ncomm_valid %u\nproxy_valid %u\n",
		l->comm_size, l->comm.valid, l->proxy.valid);
	fprintf(f, "seq_number_n %u\nsub_size %d\npeer_size %d\nmagic %llx\n",
		l->comm.seq_number_n, l->proxy.sub_size, l->peer.size,
		(unsigned long long)l->comm.magic);
	for (i = 0; i < layout_fields_n; i++)
		fprintf(f, "%s.%s %d\n", layout_fields[i].struct_name,
			layout_fields[i].member,
			layout_field_get(l, &layout_fields[i]));
	bad = ferror(f);
	if (fclose(f) || bad || rename(tmp, path))
		unlink(tmp);
}

/* ---- opening the DWARF ------------------------------------------------- */

struct elf_file {
	int fd;
	Elf *elf;
};

static void elf_file_close(struct elf_file *ef)
{
	if (ef->elf)
		elf_end(ef->elf);
	if (ef->fd >= 0)
		close(ef->fd);
	ef->elf = NULL;
	ef->fd = -1;
}

static int elf_file_open(const char *path, struct elf_file *ef, char *err,
			 size_t errlen)
{
	ef->elf = NULL;
	ef->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (ef->fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", path,
			 strerror(errno));
		return -1;
	}
	ef->elf = elf_begin(ef->fd, ELF_C_READ_MMAP, NULL);
	if (!ef->elf || elf_kind(ef->elf) != ELF_K_ELF) {
		snprintf(err, errlen, "%s: not an ELF file", path);
		elf_file_close(ef);
		return -1;
	}
	return 0;
}

int dwarf_layout_read(const char *path, const char *build_id,
		      struct nccl_layouts *l, char *err, size_t errlen)
{
	struct elf_file ef = { .fd = -1 };
	char dbg[PATH_MAX];
	Dwarf *dw;
	int ret;

	dwarf_layout_clear(l);
	if (!build_id)
		build_id = "";
	if (cache_load(build_id, l))
		return 0;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(err, errlen, "libelf: %s", elf_errmsg(-1));
		return -1;
	}
	if (elf_file_open(path, &ef, err, errlen))
		return -1;
	if (debuginfo_has_dwarf(ef.elf)) {
		l->source = LAYOUT_DWARF;
	} else {
		elf_file_close(&ef);
		if (!debuginfo_find(path, build_id, dbg, sizeof(dbg)))
			return 0;	/* no DWARF: the caller falls back */
		if (elf_file_open(dbg, &ef, err, errlen))
			return -1;
		l->source = LAYOUT_DEBUGINFO;
		snprintf(l->origin, sizeof(l->origin), "%s", dbg);
		path = dbg;
	}
	dw = dwarf_begin_elf(ef.elf, DWARF_C_READ, NULL);
	if (!dw) {
		snprintf(err, errlen, "%s: libdw: %s", path, dwarf_errmsg(-1));
		elf_file_close(&ef);
		dwarf_layout_clear(l);
		return -1;
	}
	ret = walk_dwarf(dw, l);
	if (ret)
		snprintf(err, errlen, "%s: libdw: %s", path, dwarf_errmsg(-1));
	dwarf_end(dw);
	elf_file_close(&ef);
	if (ret)
		dwarf_layout_clear(l);
	else
		cache_store(build_id, l);
	return ret;
}
