// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Separate debuginfo by build-id: the places searched and their order
 * (CCLD_DEBUGINFO_DIR, /usr/lib/debug, debuginfod's caches; a container's
 * root first), and which file counts: a library compiled here, stripped,
 * its debuginfo put in each place in turn, and a decoy with another
 * build-id or without DWARF under the right name.
 */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "debuginfo.h"
#include "dwarf_layout.h"

/* the build-id's first two digits name the directory, the rest the file */
#define ID_LO	"0000000000000000000000000000000000beef"
#define ID	"dd" ID_LO
#define OTHER	"dd0000000000000000000000000000000000cafe"

static char tmpdir[] = "/tmp/ccld-debuginfo.XXXXXX";
static char (*cand)[PATH_MAX];

static void clear_env(void)
{
	unsetenv("CCLD_DEBUGINFO_DIR");
	unsetenv("DEBUGINFOD_CACHE_PATH");
	unsetenv("XDG_CACHE_HOME");
	unsetenv("HOME");
}

static void test_candidates(void)
{
	int n;

	clear_env();
	n = debuginfo_candidates("/usr/lib/libnccl.so.2", ID, cand, DEBUGINFO_MAX_CANDIDATES);
	CHECK_INT(n, 1);
	CHECK_STR(cand[0], "/usr/lib/debug/.build-id/dd/" ID_LO ".debug");

	setenv("CCLD_DEBUGINFO_DIR", "/dbg", 1);
	setenv("DEBUGINFOD_CACHE_PATH", "/dcache", 1);
	setenv("XDG_CACHE_HOME", "/xdg", 1);
	setenv("HOME", "/home/u", 1);
	n = debuginfo_candidates("/usr/lib/libnccl.so.2", ID, cand, DEBUGINFO_MAX_CANDIDATES);
	CHECK_INT(n, 5);
	CHECK_STR(cand[0], "/dbg/.build-id/dd/" ID_LO ".debug");
	CHECK_STR(cand[1], "/usr/lib/debug/.build-id/dd/" ID_LO ".debug");
	CHECK_STR(cand[2], "/dcache/" ID "/debuginfo");
	CHECK_STR(cand[3], "/xdg/debuginfod_client/" ID "/debuginfo");
	CHECK_STR(cand[4], "/home/u/.cache/debuginfod_client/" ID "/debuginfo");

	/* a container's library: its root first, then the host */
	n = debuginfo_candidates("/proc/42/root/opt/lib/libnccl.so.2", ID, cand,
				 DEBUGINFO_MAX_CANDIDATES);
	CHECK_INT(n, 10);
	CHECK_STR(cand[0], "/proc/42/root/dbg/.build-id/dd/" ID_LO ".debug");
	CHECK_STR(cand[1], "/proc/42/root/usr/lib/debug/.build-id/dd/" ID_LO ".debug");
	CHECK_STR(cand[4], "/proc/42/root/home/u/.cache/debuginfod_client/" ID "/debuginfo");
	CHECK_STR(cand[5], "/dbg/.build-id/dd/" ID_LO ".debug");
	CHECK_STR(cand[9], "/home/u/.cache/debuginfod_client/" ID "/debuginfo");
	/* "/proc/42/rootfs/..." is not a root */
	CHECK_INT(debuginfo_candidates("/proc/42/rootfs/lib.so", ID, cand,
				       DEBUGINFO_MAX_CANDIDATES), 5);
	CHECK_INT(debuginfo_candidates("/proc/42/root/lib.so", ID, cand, 3), 3);

	/* build-ids that are not lowercase hex of 8 to 40 digits: none */
	CHECK_INT(debuginfo_candidates("/lib.so", "", cand, DEBUGINFO_MAX_CANDIDATES), 0);
	CHECK_INT(debuginfo_candidates("/lib.so", "../../etc", cand, DEBUGINFO_MAX_CANDIDATES), 0);
	CHECK_INT(debuginfo_candidates("/lib.so", "DEADBEEF00", cand, DEBUGINFO_MAX_CANDIDATES), 0);
	CHECK_INT(debuginfo_candidates("/lib.so", "abc", cand, DEBUGINFO_MAX_CANDIDATES), 0);
	clear_env();
}

static int run(const char *fmt, const char *a, const char *b, const char *c)
{
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), fmt, a, b, c);
	return system(cmd);
}

/* TMP/NAME.so with BUILD_ID and DWARF, its .debug beside it, stripped */
static int build(const char *name, const char *id, char *lib, char *dbg)
{
	char src[300], flags[128];
	FILE *f;

	snprintf(src, sizeof(src), "%s/%s.c", tmpdir, name);
	f = fopen(src, "w");
	if (!f)
		return -1;
	fputs("struct ncclComm { unsigned long startMagic; int rank; int nRanks; "
	      "unsigned long endMagic; };\n"
	      "struct ncclComm *fixture(void) { static struct ncclComm c; return &c; }\n", f);
	if (fclose(f))
		return -1;
	snprintf(lib, 300, "%s/%s.so", tmpdir, name);
	snprintf(dbg, 300, "%s/%s.debug", tmpdir, name);
	snprintf(flags, sizeof(flags), "-g -Wl,--build-id=0x%s", id);
	if (run("cc -shared -fPIC -o %s %s %s", lib, src, flags))
		return -1;
	if (run("objcopy --only-keep-debug %s %s && strip --strip-debug %s", lib, dbg, lib))
		return -1;
	return 0;
}

/* copies FROM to TMP/REL (directories made) */
static void place(const char *from, const char *rel)
{
	char to[512];

	snprintf(to, sizeof(to), "%s/%s", tmpdir, rel);
	CHECK(run("mkdir -p \"$(dirname %s)\" && cp %s %s", to, from, to) == 0);
}

static void test_find(void)
{
	char lib[300], dbg[300], olib[300], odbg[300], found[PATH_MAX], want[PATH_MAX];
	char dir[PATH_MAX];
	struct nccl_layouts l;
	char err[256];

	if (build("lib", ID, lib, dbg) || build("other", OTHER, olib, odbg)) {
		printf("test_debuginfo: cannot compile or strip (cc, objcopy): find part skipped\n");
		return;
	}
	clear_env();
	CHECK(!debuginfo_find(lib, ID, found, sizeof(found)));

	/* a decoy first: another build's debuginfo under this build-id's name */
	snprintf(dir, sizeof(dir), "%s/dbg", tmpdir);
	setenv("CCLD_DEBUGINFO_DIR", dir, 1);
	place(odbg, "dbg/.build-id/dd/" ID_LO ".debug");
	CHECK(!debuginfo_find(lib, ID, found, sizeof(found)));
	/* a stripped file (no DWARF) under the right name and build-id */
	place(lib, "dbg/.build-id/dd/" ID_LO ".debug");
	CHECK(!debuginfo_find(lib, ID, found, sizeof(found)));

	/* debuginfod's cache layouts, each on its own */
	snprintf(dir, sizeof(dir), "%s/dcache", tmpdir);
	setenv("DEBUGINFOD_CACHE_PATH", dir, 1);
	place(dbg, "dcache/" ID "/debuginfo");
	CHECK(debuginfo_find(lib, ID, found, sizeof(found)));
	snprintf(want, sizeof(want), "%s/dcache/" ID "/debuginfo", tmpdir);
	CHECK_STR(found, want);
	unsetenv("DEBUGINFOD_CACHE_PATH");

	snprintf(dir, sizeof(dir), "%s/home", tmpdir);
	setenv("HOME", dir, 1);
	place(dbg, "home/.cache/debuginfod_client/" ID "/debuginfo");
	CHECK(debuginfo_find(lib, ID, found, sizeof(found)));
	snprintf(want, sizeof(want), "%s/home/.cache/debuginfod_client/" ID "/debuginfo",
		 tmpdir);
	CHECK_STR(found, want);

	/* CCLD_DEBUGINFO_DIR comes first once it holds the right file */
	place(dbg, "dbg/.build-id/dd/" ID_LO ".debug");
	CHECK(debuginfo_find(lib, ID, found, sizeof(found)));
	snprintf(want, sizeof(want), "%s/dbg/.build-id/dd/" ID_LO ".debug", tmpdir);
	CHECK_STR(found, want);

	/* and the layout says where it came from */
	snprintf(dir, sizeof(dir), "%s/cache", tmpdir);
	setenv("CCLD_CACHE_DIR", dir, 1);
	CHECK_INT(dwarf_layout_read(lib, ID, &l, err, sizeof(err)), 0);
	CHECK_INT(l.source, LAYOUT_DEBUGINFO);
	CHECK_STR(l.origin, want);
	CHECK_INT(l.comm.rank, 8);
	CHECK_INT(l.comm.end_magic, 16);
	clear_env();
}

int main(void)
{
	char cmd[300];

	cand = calloc(DEBUGINFO_MAX_CANDIDATES, PATH_MAX);
	if (!cand || !mkdtemp(tmpdir)) {
		perror("test_debuginfo");
		return 1;
	}
	test_candidates();
	test_find();
	free(cand);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", tmpdir);
	return check_finish("test_debuginfo");
}
