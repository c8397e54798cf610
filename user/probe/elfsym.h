/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* ELF symbol lookup for uprobes (libelf): .dynsym and .symtab, build-id. */
#ifndef CCLD_ELFSYM_H
#define CCLD_ELFSYM_H

#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>

struct elf_syms;

/* Opens PATH and indexes its function symbols (global, weak and local). */
struct elf_syms *elfsym_open(const char *path, char *err, size_t errlen);
void elfsym_close(struct elf_syms *es);

/*
 * File offset of function NAME for a uprobe (st_value translated through the
 * PT_LOAD segment that contains it), or -1 when NAME is not defined.
 */
long elfsym_offset(const struct elf_syms *es, const char *name);

/* elfsym_offset, and the function's size in bytes (*SIZE, 0 unknown) */
long elfsym_offset_size(const struct elf_syms *es, const char *name, unsigned long *size);

/* A function by its name: a C symbol, or a C++ one demangled. */
struct elfsym_fn {
	long off;		/* file offset */
	const char *symbol;	/* the symbol as the file spells it */
	const char *params;	/* demangled parameters "(int, ncclProxyArgs*)", NULL for C */
};

/*
 * Every function named NAME (local symbols included: NCCL's net and
 * collnet transports each have a static sendProxyProgress), at most MAX
 * into OUT.  Returns how many there are (may exceed MAX).
 */
size_t elfsym_functions(const struct elf_syms *es, const char *name,
			struct elfsym_fn *out, size_t max);

/*
 * File offset of the C++ function NAME whose demangled parameter list is
 * PARAMS ("(int, ncclProxyArgs*)"), -1 when none or several differ;
 * *SYMBOL (if not NULL) gets its mangled symbol.
 */
long elfsym_offset_params(const struct elf_syms *es, const char *name,
			  const char *params, const char **symbol);

/*
 * File offsets of the functions data object NAME points to once loaded
 * (a transport table: "netTransport"), at most MAX into OFFS; returns how
 * many (may exceed MAX).  Only the objects of elfsym.c's wanted_objects.
 */
size_t elfsym_object_targets(const struct elf_syms *es, const char *name,
			     long *offs, size_t max);

/*
 * Data object NAME (.symtab or .dynsym, local ones included: NCCL's
 * ncclComms is a hidden .bss symbol): its address in the file's virtual
 * address space and its size.  False when the file does not define it.
 * Only the objects ccld reads are indexed (elfsym.c: wanted_objects).
 */
bool elfsym_object(const struct elf_syms *es, const char *name, unsigned long *vaddr,
		   unsigned long *size);

/*
 * The virtual address of file offset OFF (through the PT_LOAD that maps
 * it): with a mapping of the file at offset OFF starting at address A, the
 * object at vaddr V is at A + V - that.  False when no segment maps OFF.
 */
bool elfsym_offset_vaddr(const struct elf_syms *es, unsigned long off, unsigned long *vaddr);

/* GNU build-id as lowercase hex ("" when the file has none). */
const char *elfsym_build_id(const struct elf_syms *es);

/* ELF's GNU build-id into OUT (41 bytes hold any); false when it has none. */
bool elfsym_elf_build_id(Elf *elf, char *out, size_t outlen);

/* True when the file defines (not imports) the NCCL API (ncclAllReduce...). */
bool elfsym_defines_nccl(const struct elf_syms *es);

/* "2.28.9" from the "NCCL version X" string in the file, or "" if absent. */
const char *elfsym_nccl_version(const struct elf_syms *es);

#endif
