// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the ELF symbol index (user/probe/elfsym.c) and the
 * debuginfo check (user/probe/debuginfo.c): a library a traced process maps is
 * outside input, and a hostile one must not crash the agent.  The input is
 * an ELF file; it is indexed and every look-up attach makes is run on it.
 * What they return must be self-consistent.
 */
#include <fcntl.h>
#include <gelf.h>
#include <string.h>
#include "debuginfo.h"
#include "elfsym.h"
#include "fuzz_memfd.h"

#define check(c) do { if (!(c)) __builtin_trap(); } while (0)

static const char *const names[] = {
	"ncclAllReduce", "ncclCommInitRank", "sendProxyProgress", "fixture_fn",
	"ncclComms", "netTransport", "p2pTransport", "_init", "main",
};

static void lookups(const struct elf_syms *es)
{
	struct elfsym_fn fns[4];
	unsigned long va, sz;
	const char *sym = NULL;
	long offs[8];
	size_t i, n;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		long off = elfsym_offset(es, names[i]);

		n = elfsym_functions(es, names[i], fns, 4);
		check((off < 0) == (n == 0) || off < 0);
		elfsym_offset_params(es, names[i], "(ncclProxyState*, ncclProxyArgs*)", &sym);
		elfsym_object_targets(es, names[i], offs, 8);
		if (elfsym_object(es, names[i], &va, &sz))
			elfsym_offset_vaddr(es, va, &va);
		if (off >= 0)
			elfsym_offset_vaddr(es, (unsigned long)off, &va);
	}
	check(strlen(elfsym_build_id(es)) <= 40);
	check(strlen(elfsym_nccl_version(es)) < 32);
	(void)elfsym_defines_nccl(es);
}

static void dwarf_check(const char *path)
{
	char id[41];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;

	if (fd < 0)
		abort();
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF) {
		debuginfo_has_dwarf(elf);
		if (elfsym_elf_build_id(elf, id, sizeof(id)))
			check(strlen(id) <= 40);
	}
	elf_end(elf);
	close(fd);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct elf_syms *es;
	char path[64], err[256];

	fuzz_memfd(data, size, path, sizeof(path));
	es = elfsym_open(path, err, sizeof(err));
	if (es) {
		lookups(es);
		elfsym_close(es);
	} else {
		check(memchr(err, '\0', sizeof(err)) && err[0]);
	}
	dwarf_check(path);
	return 0;
}
