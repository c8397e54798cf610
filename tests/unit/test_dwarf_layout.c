// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * dwarf_layout against libraries compiled here from struct definitions this
 * test also compiles (expected offsets come from offsetof, not from
 * numbers typed in), in DWARF 4 and 5, with the definition behind a
 * declaration-only unit, without DWARF, with separate debuginfo; then the
 * cache, and the real libnccl.so.2 (offsets checked with pahole).
 */
#include <stddef.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "dwarf_layout.h"
#include "elfsym.h"

#define NCCL_MAGIC 0x0280028002800280ULL

/* members inside anonymous structs/unions, typedefs, qualifiers, nesting */
#define LAYOUT_TYPES							\
typedef unsigned long u64_t;						\
struct ncclProxySubArgs {						\
	char pad0[40]; int channelId; int nsteps; long nbytes;		\
	int peer; char pad1[20];					\
	u64_t posted; u64_t received; u64_t flushed;			\
	u64_t transmitted; u64_t done; char tail[100];			\
};									\
struct ncclProxyArgs {							\
	struct ncclProxySubArgs subs[4]; void *progress;		\
	int nsubs; int done; int pad; u64_t opCount;			\
	int sliceSteps; int chunkSteps;					\
	unsigned char dtype; unsigned char coll; unsigned char protocol;\
};									\
struct ncclComm {							\
	u64_t startMagic;						\
	struct nested { int a; } inner;					\
	char blob[3000];						\
	union {								\
		struct { u64_t commHash; int rank; int nRanks; };	\
		char raw[40];						\
	};								\
	int cudaDev; long busId;					\
	const volatile u64_t seqNumber[7];				\
	struct { u64_t opCount; u64_t collOpCount; };			\
	int nChannels;							\
	u64_t endMagic;							\
};

LAYOUT_TYPES

#define STR_(...) #__VA_ARGS__
#define STR(...) STR_(__VA_ARGS__)

static const char layout_src[] = STR(LAYOUT_TYPES)
	"\nstruct ncclComm *fixture_comm(void) { static struct ncclComm c; return &c; }\n"
	"struct ncclProxyArgs *fixture_args(void) { static struct ncclProxyArgs a; return &a; }\n";

/* an earlier unit that only declares the structs */
static const char decl_src[] =
	"struct ncclComm; struct ncclProxyArgs;\n"
	"struct ncclComm *decl_comm; struct ncclProxyArgs *decl_args;\n";

/* NCCL before 2.21: no magics; no seqNumber, no proxy structs */
static const char old_src[] =
	"struct ncclComm { int rank; int nRanks; unsigned long commHash; };\n"
	"struct ncclComm *fixture_comm(void) { static struct ncclComm c; return &c; }\n";

static char tmpdir[] = "/tmp/ccld-dwarf.XXXXXX";

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* compiles SRC (after DECL_SRC when given) into TMP/NAME.so */
static int build(const char *name, const char *src, const char *decl,
		 const char *flags, char *out, size_t outlen)
{
	char c_path[300], d_path[300] = "", cmd[1200];
	const char *cc = getenv("CC");

	snprintf(c_path, sizeof(c_path), "%s/%s.c", tmpdir, name);
	if (write_file(c_path, src))
		return -1;
	if (decl) {
		snprintf(d_path, sizeof(d_path), "%s/%s_decl.c", tmpdir, name);
		if (write_file(d_path, decl))
			return -1;
	}
	snprintf(out, outlen, "%s/%s.so", tmpdir, name);
	snprintf(cmd, sizeof(cmd), "%s -shared -fPIC -O1 %s -o %s %s %s",
		 cc && *cc ? cc : "cc", flags, out, d_path, c_path);
	return system(cmd) == 0 ? 0 : -1;
}

static void set_cache(const char *sub)
{
	char dir[300];

	snprintf(dir, sizeof(dir), "%s/%s", tmpdir, sub);
	setenv("CCLD_CACHE_DIR", dir, 1);
}

static void check_fixture_layout(const struct nccl_layouts *l)
{
	CHECK(l->source == LAYOUT_DWARF || l->source == LAYOUT_DEBUGINFO);
	CHECK_INT(l->comm.valid, 1);
	CHECK_INT(l->comm_size, sizeof(struct ncclComm));
	CHECK_INT(l->comm.start_magic, offsetof(struct ncclComm, startMagic));
	CHECK_INT(l->comm.comm_hash, offsetof(struct ncclComm, commHash));
	CHECK_INT(l->comm.rank, offsetof(struct ncclComm, rank));
	CHECK_INT(l->comm.nranks, offsetof(struct ncclComm, nRanks));
	CHECK_INT(l->comm.cuda_dev, offsetof(struct ncclComm, cudaDev));
	CHECK_INT(l->comm.bus_id, offsetof(struct ncclComm, busId));
	CHECK_INT(l->comm.seq_number, offsetof(struct ncclComm, seqNumber));
	CHECK_INT(l->comm.seq_number_n, 7);
	CHECK_INT(l->comm.op_count, offsetof(struct ncclComm, opCount));
	CHECK_INT(l->comm.coll_op_count, offsetof(struct ncclComm, collOpCount));
	CHECK_INT(l->comm.n_channels, offsetof(struct ncclComm, nChannels));
	CHECK_INT(l->comm.end_magic, offsetof(struct ncclComm, endMagic));
	CHECK(l->comm.magic == NCCL_MAGIC);

	CHECK_INT(l->proxy.valid, 1);
	CHECK_INT(l->proxy.args_subs, offsetof(struct ncclProxyArgs, subs));
	CHECK_INT(l->proxy.sub_size, sizeof(struct ncclProxySubArgs));
	CHECK_INT(l->proxy.args_nsubs, offsetof(struct ncclProxyArgs, nsubs));
	CHECK_INT(l->proxy.args_done, offsetof(struct ncclProxyArgs, done));
	CHECK_INT(l->proxy.args_op_count, offsetof(struct ncclProxyArgs, opCount));
	CHECK_INT(l->proxy.args_slice_steps, offsetof(struct ncclProxyArgs, sliceSteps));
	CHECK_INT(l->proxy.args_chunk_steps, offsetof(struct ncclProxyArgs, chunkSteps));
	CHECK_INT(l->proxy.args_progress, offsetof(struct ncclProxyArgs, progress));
	CHECK_INT(l->proxy.args_coll, offsetof(struct ncclProxyArgs, coll));
	CHECK_INT(l->proxy.args_protocol, offsetof(struct ncclProxyArgs, protocol));
	CHECK_INT(l->proxy.sub_channel_id, offsetof(struct ncclProxySubArgs, channelId));
	CHECK_INT(l->proxy.sub_nsteps, offsetof(struct ncclProxySubArgs, nsteps));
	CHECK_INT(l->proxy.sub_nbytes, offsetof(struct ncclProxySubArgs, nbytes));
	CHECK_INT(l->proxy.sub_peer, offsetof(struct ncclProxySubArgs, peer));
	CHECK_INT(l->proxy.sub_posted, offsetof(struct ncclProxySubArgs, posted));
	CHECK_INT(l->proxy.sub_received, offsetof(struct ncclProxySubArgs, received));
	CHECK_INT(l->proxy.sub_transmitted, offsetof(struct ncclProxySubArgs, transmitted));
	CHECK_INT(l->proxy.sub_done, offsetof(struct ncclProxySubArgs, done));
	CHECK_INT(l->proxy.sub_flushed, offsetof(struct ncclProxySubArgs, flushed));
}

static void same_layout(const struct nccl_layouts *a, const struct nccl_layouts *b)
{
	int i;

	for (i = 0; i < layout_fields_n; i++)
		CHECK_INT(layout_field_get(a, &layout_fields[i]),
			  layout_field_get(b, &layout_fields[i]));
	CHECK_INT(a->comm_size, b->comm_size);
	CHECK_INT(a->comm.seq_number_n, b->comm.seq_number_n);
	CHECK(a->comm.magic == b->comm.magic);
	CHECK_INT(a->comm.valid, b->comm.valid);
	CHECK_INT(a->proxy.valid, b->proxy.valid);
	CHECK_INT(a->proxy.sub_size, b->proxy.sub_size);
	CHECK_INT(a->source, b->source);
	CHECK_STR(a->origin, b->origin);
}

static void test_fixture(const char *gflag, const char *id)
{
	struct nccl_layouts l, again;
	char lib[300], flags[200], err[256] = "";

	/* the build-id keys the cache: one per variant */
	snprintf(flags, sizeof(flags), "%s -Wl,--build-id=0x%s", gflag, id);
	if (build(gflag + 1, layout_src, decl_src, flags, lib, sizeof(lib))) {
		CHECK(!"cannot compile the layout fixture");
		return;
	}
	set_cache("cache/sub");	/* created on demand, parents too */
	CHECK_INT(dwarf_layout_read(lib, id, &l, err, sizeof(err)), 0);
	CHECK(!l.from_cache);
	check_fixture_layout(&l);

	CHECK_INT(dwarf_layout_read(lib, id, &again, err, sizeof(err)), 0);
	CHECK(again.from_cache);
	check_fixture_layout(&again);
	same_layout(&l, &again);

	/* an unwritable cache is no cache, and no error */
	setenv("CCLD_CACHE_DIR", "/proc/ccld-no-cache", 1);
	CHECK_INT(dwarf_layout_read(lib, id, &again, err, sizeof(err)), 0);
	CHECK(!again.from_cache);
	check_fixture_layout(&again);
	/* no build-id: read every time */
	set_cache("cache/sub");
	CHECK_INT(dwarf_layout_read(lib, "", &again, err, sizeof(err)), 0);
	CHECK(!again.from_cache);
	check_fixture_layout(&again);
}

static void test_old_layout(void)
{
	struct nccl_layouts l;
	char lib[300], err[256] = "";

	if (build("old", old_src, NULL, "-g", lib, sizeof(lib))) {
		CHECK(!"cannot compile the old-layout fixture");
		return;
	}
	set_cache("cache-old");
	CHECK_INT(dwarf_layout_read(lib, "", &l, err, sizeof(err)), 0);
	CHECK_INT(l.source, LAYOUT_DWARF);
	CHECK_INT(l.comm.valid, 1);
	CHECK_INT(l.comm.rank, 0);
	CHECK_INT(l.comm.nranks, 4);
	CHECK_INT(l.comm.comm_hash, 8);
	CHECK_INT(l.comm.start_magic, -1);
	CHECK_INT(l.comm.end_magic, -1);
	CHECK(l.comm.magic == 0);
	CHECK_INT(l.comm.seq_number, -1);
	CHECK_INT(l.comm.seq_number_n, 0);
	CHECK_INT(l.comm_size, 16);
	CHECK_INT(l.proxy.valid, 0);
	CHECK_INT(l.proxy.args_subs, -1);
	CHECK_INT(l.proxy.sub_size, -1);
}

static void check_empty(const struct nccl_layouts *l)
{
	int i;

	CHECK_INT(l->source, LAYOUT_NONE);
	CHECK_INT(l->comm.valid, 0);
	CHECK_INT(l->proxy.valid, 0);
	CHECK_INT(l->comm_size, -1);
	for (i = 0; i < layout_fields_n; i++)
		CHECK_INT(layout_field_get(l, &layout_fields[i]), -1);
}

static void test_no_dwarf_and_debuginfo(void)
{
	const char *id = "bb00000000000001";
	char lib[300], dbg[400], dir[300], cmd[1600], flags[100];
	char err[256] = "";
	struct nccl_layouts l, again;

	snprintf(flags, sizeof(flags), "-g -Wl,--build-id=0x%s", id);
	if (build("split", layout_src, NULL, flags, lib, sizeof(lib))) {
		CHECK(!"cannot compile the debuginfo fixture");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/debug/.build-id/bb", tmpdir);
	snprintf(dbg, sizeof(dbg), "%s/00000000000001.debug", dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s && objcopy --only-keep-debug %s %s "
		 "&& strip --strip-debug %s", dir, lib, dbg, lib);
	if (system(cmd)) {
		printf("test_dwarf_layout: no objcopy/strip: debuginfo part skipped\n");
		return;
	}
	set_cache("cache-split");
	setenv("CCLD_DEBUGINFO_DIR", "/nonexistent", 1);
	CHECK_INT(dwarf_layout_read(lib, id, &l, err, sizeof(err)), 0);
	check_empty(&l);

	snprintf(dir, sizeof(dir), "%s/debug", tmpdir);
	setenv("CCLD_DEBUGINFO_DIR", dir, 1);
	CHECK_INT(dwarf_layout_read(lib, id, &l, err, sizeof(err)), 0);
	CHECK(!l.from_cache);
	check_fixture_layout(&l);
	CHECK_INT(l.source, LAYOUT_DEBUGINFO);
	CHECK_STR(l.origin, dbg);
	/* the cache keeps where it came from */
	CHECK_INT(dwarf_layout_read(lib, id, &again, err, sizeof(err)), 0);
	CHECK(again.from_cache);
	same_layout(&l, &again);
	unsetenv("CCLD_DEBUGINFO_DIR");

	/* built without -g at all */
	if (build("nodebug", layout_src, NULL, "-g0", lib, sizeof(lib))) {
		CHECK(!"cannot compile the no-DWARF fixture");
		return;
	}
	CHECK_INT(dwarf_layout_read(lib, "", &l, err, sizeof(err)), 0);
	check_empty(&l);
}

static void test_errors(void)
{
	char path[300], err[256] = "";
	struct nccl_layouts l;

	CHECK_INT(dwarf_layout_read("/nonexistent/lib.so", "", &l, err, sizeof(err)), -1);
	CHECK(strstr(err, "No such file") != NULL);
	check_empty(&l);
	snprintf(path, sizeof(path), "%s/notelf", tmpdir);
	write_file(path, "not an ELF file at all\n");
	err[0] = '\0';
	CHECK_INT(dwarf_layout_read(path, "", &l, err, sizeof(err)), -1);
	CHECK(strstr(err, "not an ELF") != NULL);
	/* a corrupt cache entry is ignored, not trusted */
	set_cache("cache-bad");
	snprintf(path, sizeof(path), "%s/cache-bad", tmpdir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/cache-bad/cc00000000000001.layout", tmpdir);
	write_file(path, "garbage\nncclComm.rank 5\n");
	CHECK_INT(dwarf_layout_read("/nonexistent/lib.so", "cc00000000000001",
				    &l, err, sizeof(err)), -1);
	/* so is one from an older ccld that knew fewer fields */
	write_file(path, "ccld-layout 1\ncomm_valid 1\nncclComm.rank 5\n");
	CHECK_INT(dwarf_layout_read("/nonexistent/lib.so", "cc00000000000001",
				    &l, err, sizeof(err)), -1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_real(void)
{
	const char *path = getenv("CCLD_REAL_NCCL");
	struct nccl_layouts l, c;
	char err[256] = "", id[41];
	double t0, t_read, t_cache;
	struct elf_syms *es;
	int i;

	if (!path)
		path = "/usr/local/cuda/lib/libnccl.so.2";
	if (access(path, R_OK)) {
		printf("test_dwarf_layout: no real NCCL at %s: skipped that part\n",
		       path);
		return;
	}
	es = elfsym_open(path, err, sizeof(err));
	CHECK(es != NULL);
	if (!es)
		return;
	snprintf(id, sizeof(id), "%s", elfsym_build_id(es));
	elfsym_close(es);
	set_cache("cache-real");
	t0 = now_s();
	CHECK_INT(dwarf_layout_read(path, id, &l, err, sizeof(err)), 0);
	t_read = now_s() - t0;
	CHECK_INT(l.source, LAYOUT_DWARF);
	CHECK(!l.from_cache);
	/* every field ccld reads resolves in 2.28.9 */
	for (i = 0; i < layout_fields_n; i++) {
		if (layout_field_get(&l, &layout_fields[i]) < 0) {
			fprintf(stderr, "%s.%s missing\n", layout_fields[i].struct_name,
				layout_fields[i].member);
			CHECK(!"field missing in the real library");
		}
	}
	CHECK_INT(l.comm.valid, 1);
	CHECK_INT(l.proxy.valid, 1);
	CHECK(l.comm.magic == NCCL_MAGIC);
	CHECK_INT(l.comm.seq_number_n, 5);
	/* the build of notes/nccl-hooks.md (offsets checked with pahole) */
	if (strcmp(id, "9fcf74d93a8c3605bf7718f594d0a24366e38536") == 0) {
		CHECK_INT(l.comm_size, 1082968);
		CHECK_INT(l.comm.start_magic, 0);
		CHECK_INT(l.comm.comm_hash, 1066184);
		CHECK_INT(l.comm.rank, 1066192);
		CHECK_INT(l.comm.nranks, 1066196);
		CHECK_INT(l.comm.cuda_dev, 1066200);
		CHECK_INT(l.comm.bus_id, 1066224);
		CHECK_INT(l.comm.op_count, 1066480);
		CHECK_INT(l.comm.coll_op_count, 1066488);
		CHECK_INT(l.comm.n_channels, 1066496);
		CHECK_INT(l.comm.seq_number, 1075728);
		CHECK_INT(l.comm.end_magic, 1082960);
		CHECK_INT(l.proxy.args_subs, 0);
		CHECK_INT(l.proxy.sub_size, 512);
		CHECK_INT(l.proxy.args_progress, 32768);
		CHECK_INT(l.proxy.args_nsubs, 32776);
		CHECK_INT(l.proxy.args_done, 32780);
		CHECK_INT(l.proxy.args_op_count, 32792);
		CHECK_INT(l.proxy.sub_channel_id, 72);
		CHECK_INT(l.proxy.sub_peer, 96);
		CHECK_INT(l.proxy.sub_posted, 128);
		CHECK_INT(l.proxy.sub_transmitted, 152);
		CHECK_INT(l.proxy.sub_done, 160);
	}
	t0 = now_s();
	CHECK_INT(dwarf_layout_read(path, id, &c, err, sizeof(err)), 0);
	t_cache = now_s() - t0;
	CHECK(c.from_cache);
	same_layout(&l, &c);
	printf("test_dwarf_layout: real %s: DWARF %.3f s, cache hit %.4f s\n",
	       path, t_read, t_cache);
}

int main(void)
{
	char cmd[300];

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	unsetenv("CCLD_DEBUGINFO_DIR");
	test_fixture("-gdwarf-4", "aa04000000000001");
	test_fixture("-gdwarf-5", "aa05000000000001");
	test_old_layout();
	test_no_dwarf_and_debuginfo();
	test_errors();
	test_real();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", tmpdir);
	return check_finish("test_dwarf_layout");
}
