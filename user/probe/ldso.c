// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * glibc's ld.so exports _dl_debug_state (called after every change to the
 * loaded-object list) and _r_debug (the list's head) in .dynsym, for
 * debuggers.  A uprobe on the first tells ccld the moment a process has
 * mapped its libraries, before their code runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "elfsym.h"
#include "ldso.h"

bool ldso_is_loader(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strncmp(base, "ld-", 3) == 0 && strstr(base, ".so");
}

/* st_value of NAME in .dynsym, 0 if absent */
static GElf_Addr dynsym_value(Elf *elf, const char *name)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM ||
		    !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; data && i < n; i++) {
			GElf_Sym sym;
			const char *s;

			if (!gelf_getsym(data, (int)i, &sym) ||
			    sym.st_shndx == SHN_UNDEF)
				continue;
			s = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (s && strcmp(s, name) == 0)
				return sym.st_value;
		}
	}
	return 0;
}

int ldso_debug_hook(const char *path, long *off, long *rdebug_delta,
		    char *err, size_t errlen)
{
	GElf_Addr state = 0, rdebug = 0;
	struct elf_syms *es;
	Elf *elf = NULL;
	int fd;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(err, errlen, "libelf: %s", elf_errmsg(-1));
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf) {
		state = dynsym_value(elf, "_dl_debug_state");
		rdebug = dynsym_value(elf, "_r_debug");
		elf_end(elf);
	}
	close(fd);
	es = elfsym_open(path, err, errlen);
	if (!es)
		return -1;
	*off = elfsym_offset(es, "_dl_debug_state");
	elfsym_close(es);
	if (!state || !rdebug || *off < 0) {
		snprintf(err, errlen, "%s: no _dl_debug_state/_r_debug in .dynsym",
			 path);
		return -1;
	}
	*rdebug_delta = (long)(rdebug - state);
	return 0;
}
