// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "debuginfo.h"
#include "elfsym.h"

#define DEBUG_ROOT	"/usr/lib/debug"

static bool build_id_ok(const char *id)
{
	size_t n = strlen(id);

	return n >= 8 && n <= 40 && strspn(id, "0123456789abcdef") == n;
}

bool debuginfo_has_dwarf(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && (strcmp(name, ".debug_info") == 0 ||
			     strcmp(name, ".zdebug_info") == 0))
			return true;
	}
	return false;
}

/* OUT[N] = ROOT DIR TAIL when DIR is set and it fits; the new count */
static int add(char (*out)[PATH_MAX], int n, int max, const char *root,
	       const char *dir, const char *tail)
{
	int len;

	if (n >= max || !dir || !*dir)
		return n;
	len = snprintf(out[n], PATH_MAX, "%s%s%s", root, dir, tail);
	return len > 0 && len < PATH_MAX ? n + 1 : n;
}

int debuginfo_candidates(const char *lib_path, const char *build_id,
			 char (*out)[PATH_MAX], int max)
{
	char root[64] = "", by_dir[64], by_cache[64], xdg[PATH_MAX] = "", home[PATH_MAX] = "";
	const char *roots[2], *env;
	int pid, skip = 0, n = 0, i;

	if (!build_id_ok(build_id))
		return 0;
	/* .build-id/xx/yyyy.debug, and debuginfod's <build-id>/debuginfo */
	snprintf(by_dir, sizeof(by_dir), "/.build-id/%.2s/%s.debug", build_id, build_id + 2);
	snprintf(by_cache, sizeof(by_cache), "/%s/debuginfo", build_id);
	if (sscanf(lib_path, "/proc/%d/root%n", &pid, &skip) == 1 && skip > 0 &&
	    lib_path[skip] == '/')
		snprintf(root, sizeof(root), "/proc/%d/root", pid);
	env = getenv("XDG_CACHE_HOME");
	if (env && *env)
		snprintf(xdg, sizeof(xdg), "%s/debuginfod_client", env);
	env = getenv("HOME");
	if (env && *env)
		snprintf(home, sizeof(home), "%s/.cache/debuginfod_client", env);
	roots[0] = root;
	roots[1] = "";
	for (i = root[0] ? 0 : 1; i < 2; i++) {
		n = add(out, n, max, roots[i], getenv("CCLD_DEBUGINFO_DIR"), by_dir);
		n = add(out, n, max, roots[i], DEBUG_ROOT, by_dir);
		n = add(out, n, max, roots[i], getenv("DEBUGINFOD_CACHE_PATH"), by_cache);
		n = add(out, n, max, roots[i], xdg, by_cache);
		n = add(out, n, max, roots[i], home, by_cache);
	}
	return n;
}

/* PATH is an ELF file with BUILD_ID and DWARF */
static bool usable(const char *path, const char *build_id)
{
	char id[41];
	bool ok = false;
	Elf *elf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF)
		ok = elfsym_elf_build_id(elf, id, sizeof(id)) &&
		     strcmp(id, build_id) == 0 && debuginfo_has_dwarf(elf);
	elf_end(elf);
	close(fd);
	return ok;
}

bool debuginfo_find(const char *lib_path, const char *build_id, char *out,
		    size_t outlen)
{
	char (*cand)[PATH_MAX];
	bool found = false;
	int n, i;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return false;
	cand = calloc(DEBUGINFO_MAX_CANDIDATES, PATH_MAX);
	if (!cand)
		return false;
	n = debuginfo_candidates(lib_path, build_id, cand, DEBUGINFO_MAX_CANDIDATES);
	for (i = 0; i < n && !found; i++) {
		if (access(cand[i], R_OK) || !usable(cand[i], build_id))
			continue;
		found = (size_t)snprintf(out, outlen, "%s", cand[i]) < outlen;
	}
	free(cand);
	return found;
}
