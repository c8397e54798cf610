// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * elfsym against small libraries compiled here (weak/strong aliases,
 * local and mangled C++ symbols, a moved text segment, build-ids) and, when
 * present, the real libnccl.so.2 and the stand-in.  Offsets are checked
 * independently: the bytes at the file offset must be the bytes dlopen
 * mapped at the function's address.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "elfsym.h"
#include "hooks.h"

static char tmpdir[] = "/tmp/ccld-elfsym.XXXXXX";

static const char fixture_src[] =
	"int pncclAllReduce(void) { return 11; }\n"
	"int ncclAllReduce(void) __attribute__((weak, alias(\"pncclAllReduce\")));\n"
	"int pncclCommInitRankConfig(int x) { return x + 12; }\n"
	"int ncclCommInitRankConfig(int x) __attribute__((weak, alias(\"pncclCommInitRankConfig\")));\n"
	"static int __attribute__((noinline, used)) local_helper(int x) { return x * 3 + 1; }\n"
	"int call_local(int x) { return local_helper(x) + 7; }\n"
	"void prof_start(int s, void *a) __asm__(\"_Z29ncclProfilerStartProxyOpEventiP13ncclProxyArgs\");\n"
	"void prof_start(int s, void *a) { ((volatile int *)a)[0] = s; }\n"
	"int over_i(int x) __asm__(\"_Z4overi\");\n"
	"int over_i(int x) { return x + 1; }\n"
	"double over_d(double x) __asm__(\"_Z4overd\");\n"
	"double over_d(double x) { return x * 2; }\n"
	"const char nccl_version_str[] = \"NCCL version %s\\0NCCL version 2.99.7+cuda12.4\";\n"
	"#include <stdio.h>\n"
	"int uses_import(void) { return puts(\"x\"); }\n";

/* imports the collective: a framework library, not NCCL */
static const char importer_src[] =
	"extern int ncclAllReduce(void);\n"
	"int ncclCommInitRank(void) { return 1; }\n"
	"int wrapper(void) { return ncclAllReduce(); }\n";

static int build(const char *name, const char *src, const char *flags,
		 char *out, size_t outlen)
{
	char c_path[256], cmd[1024];
	const char *cc = getenv("CC");
	FILE *f;

	snprintf(c_path, sizeof(c_path), "%s/%s.c", tmpdir, name);
	snprintf(out, outlen, "%s/%s.so", tmpdir, name);
	f = fopen(c_path, "w");
	if (!f)
		return -1;
	fputs(src, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s -shared -fPIC -O1 %s -o %s %s",
		 cc && *cc ? cc : "cc", flags, out, c_path);
	return system(cmd) == 0 ? 0 : -1;
}

/* the bytes at file offset OFF equal the mapped function's bytes */
static int same_bytes(const char *path, long off, const void *addr)
{
	unsigned char buf[16];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = pread(fd, buf, sizeof(buf), off);
	close(fd);
	return n == (ssize_t)sizeof(buf) && memcmp(buf, addr, sizeof(buf)) == 0;
}

static void test_fixture(void)
{
	char lib[300], err[256];
	struct elf_syms *es;
	long ar, par, loc, call, prof;
	void *dl;

	/* text moved away from offset == address, as in non-PIE binaries */
	if (build("fix", fixture_src, "-Wl,--build-id=0x0123456789abcdef "
		  "-Wl,-Ttext-segment=0x10000000", lib, sizeof(lib))) {
		CHECK(!"cannot compile the fixture");
		return;
	}
	es = elfsym_open(lib, err, sizeof(err));
	CHECK(es != NULL);
	if (!es) {
		fprintf(stderr, "elfsym_open: %s\n", err);
		return;
	}
	ar = elfsym_offset(es, "ncclAllReduce");
	par = elfsym_offset(es, "pncclAllReduce");
	CHECK(ar > 0);
	CHECK_INT(ar, par);			/* weak alias == strong */
	CHECK(ar < 0x10000000);			/* translated, not st_value */
	loc = elfsym_offset(es, "local_helper");
	call = elfsym_offset(es, "call_local");
	CHECK(loc > 0);				/* .symtab local */
	CHECK(loc != call);
	prof = elfsym_offset(es, "_Z29ncclProfilerStartProxyOpEventiP13ncclProxyArgs");
	CHECK(prof > 0);
	/* the hook table names C++ functions as in the source */
	CHECK_INT(elfsym_offset(es, "ncclProfilerStartProxyOpEvent"), prof);
	/* overloads at two addresses: the base name is ambiguous */
	CHECK(elfsym_offset(es, "_Z4overi") > 0);
	CHECK(elfsym_offset(es, "_Z4overd") > 0);
	CHECK_INT(elfsym_offset(es, "over"), -1);
	CHECK_INT(elfsym_offset(es, "puts"), -1);	/* imported */
	CHECK_INT(elfsym_offset(es, "nccl_version_str"), -1); /* not a function */
	CHECK_INT(elfsym_offset(es, "nonexistent"), -1);
	CHECK_INT(elfsym_offset(es, ""), -1);
	CHECK_STR(elfsym_build_id(es), "0123456789abcdef");
	CHECK(elfsym_defines_nccl(es));
	/* "NCCL version %s" has no version token: the next one counts */
	CHECK_STR(elfsym_nccl_version(es), "2.99.7");

	dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	CHECK(dl != NULL);
	if (dl) {
		void *f = dlsym(dl, "pncclAllReduce");
		void *g = dlsym(dl, "call_local");
		void *h = dlsym(dl, "_Z29ncclProfilerStartProxyOpEventiP13ncclProxyArgs");

		CHECK(f && same_bytes(lib, ar, f));
		CHECK(g && same_bytes(lib, call, g));
		CHECK(h && same_bytes(lib, prof, h));
		dlclose(dl);
	}
	elfsym_close(es);
}

static void test_importer(void)
{
	char lib[300], err[256];
	struct elf_syms *es;

	if (build("imp", importer_src, "-Wl,--build-id=none", lib, sizeof(lib))) {
		CHECK(!"cannot compile the importer fixture");
		return;
	}
	es = elfsym_open(lib, err, sizeof(err));
	CHECK(es != NULL);
	if (!es)
		return;
	CHECK_INT(elfsym_offset(es, "ncclAllReduce"), -1);
	CHECK(elfsym_offset(es, "ncclCommInitRank") > 0);
	CHECK(!elfsym_defines_nccl(es));
	CHECK_STR(elfsym_build_id(es), "");
	CHECK_STR(elfsym_nccl_version(es), "");
	elfsym_close(es);
}

static void test_errors(void)
{
	char path[300], err[256] = "";
	FILE *f;

	CHECK(elfsym_open("/nonexistent/libnccl.so.2", err, sizeof(err)) == NULL);
	CHECK(strstr(err, "No such file") != NULL);
	snprintf(path, sizeof(path), "%s/notelf", tmpdir);
	f = fopen(path, "w");
	if (f) {
		fputs("#!/bin/sh\necho not an ELF\n", f);
		fclose(f);
	}
	err[0] = '\0';
	CHECK(elfsym_open(path, err, sizeof(err)) == NULL);
	CHECK_STR(err, "not an ELF file");
	/* NULL-safe accessors, as attach calls them after a failed open */
	CHECK_INT(elfsym_offset(NULL, "ncclAllReduce"), -1);
	CHECK(!elfsym_defines_nccl(NULL));
	CHECK_STR(elfsym_build_id(NULL), "");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* every required tier A hook resolves and the API is found */
static void check_nccl_lib(const struct elf_syms *es)
{
	int i;

	CHECK(elfsym_defines_nccl(es));
	for (i = 0; i < nccl_hooks_n; i++) {
		const struct hook_def *h = &nccl_hooks[i];

		if (h->tier == HOOK_TIER_A && h->required &&
		    elfsym_offset(es, h->symbol) < 0) {
			fprintf(stderr, "required hook %s missing\n", h->symbol);
			CHECK(!"required hook missing");
		}
	}
}

static void test_real(void)
{
	const char *path = getenv("CCLD_REAL_NCCL");
	struct elf_syms *es;
	char err[256], name[64];
	double t0, t_open, t_look;
	int i, bad, missing;

	if (!path)
		path = "/usr/local/cuda/lib/libnccl.so.2";
	if (access(path, R_OK)) {
		printf("test_elfsym: no real NCCL at %s: skipped that part\n", path);
		return;
	}
	t0 = now_s();
	es = elfsym_open(path, err, sizeof(err));
	t_open = now_s() - t0;
	CHECK(es != NULL);
	if (!es)
		return;
	check_nccl_lib(es);
	CHECK(strncmp(elfsym_nccl_version(es), "2.", 2) == 0);
	CHECK_INT(strlen(elfsym_build_id(es)), 40);
	CHECK_INT(elfsym_offset(es, "ncclAllReduce"),
		  elfsym_offset(es, "pncclAllReduce"));
	/* the 2.28.9 build these notes were taken from (readelf -sW) */
	if (strcmp(elfsym_build_id(es), "9fcf74d93a8c3605bf7718f594d0a24366e38536") == 0) {
		CHECK_STR(elfsym_nccl_version(es), "2.28.9");
		CHECK_INT(elfsym_offset(es, "ncclAllReduce"), 0x64a30);
		CHECK_INT(elfsym_offset(es, "ncclCommInitRank"), 0x89302);
		CHECK_INT(elfsym_offset(es, "ncclProfilerStartProxyOpEvent"), 0x1380e0);
		for (i = 0; i < nccl_hooks_n; i++)
			CHECK(elfsym_offset(es, nccl_hooks[i].symbol) > 0);
	}
	/* look-ups must stay cheap on a 12k-symbol table */
	t0 = now_s();
	for (i = 0, bad = 0; i < 100000; i++) {
		snprintf(name, sizeof(name), "ncclNoSuchSymbol%d", i);
		missing = elfsym_offset(es, i & 1 ? name : "ncclCommDestroy") < 0;
		bad += missing != (i & 1);
	}
	t_look = now_s() - t0;
	CHECK_INT(bad, 0);
	printf("test_elfsym: real %s: open %.3f s, 100k look-ups %.3f s\n",
	       path, t_open, t_look);
	elfsym_close(es);
}

/* build/tests/bin/test_elfsym -> build/sim/lib/libnccl.so.2 */
static void standin_path(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	int up;

	if (n <= 0) {
		snprintf(buf, len, "build/sim/lib/libnccl.so.2");
		return;
	}
	buf[n] = '\0';
	for (up = 0; up < 3; up++) {
		char *slash = strrchr(buf, '/');

		if (slash)
			*slash = '\0';
	}
	strncat(buf, "/sim/lib/libnccl.so.2", len - strlen(buf) - 1);
}

static void test_standin(void)
{
	struct elf_syms *es;
	char err[256], path[4096];

	standin_path(path, sizeof(path));
	if (access(path, R_OK)) {
		printf("test_elfsym: no stand-in at %s: skipped that part\n", path);
		return;
	}
	es = elfsym_open(path, err, sizeof(err));
	CHECK(es != NULL);
	if (!es)
		return;
	check_nccl_lib(es);
	CHECK(elfsym_nccl_version(es)[0] != '\0');
	elfsym_close(es);
}

int main(void)
{
	char cmd[300];

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_fixture();
	test_importer();
	test_errors();
	test_real();
	test_standin();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", tmpdir);
	return check_finish("test_elfsym");
}
