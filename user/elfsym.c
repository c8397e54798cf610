// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ELF symbol index for uprobes.  Every defined function symbol of .dynsym
 * and .symtab goes into one array sorted by name (bsearch): the real
 * libnccl.so.2 has ~12k symbols and attach looks up dozens of names.
 * Offsets are file offsets (st_value through the PT_LOAD that holds it),
 * what the uprobe API wants.  Names are copied, so the ELF is closed again
 * once indexed.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elfsym.h"

struct sym_ent {
	const char *name;	/* in es->names */
	long off;
	bool alias;		/* base name of a mangled C++ function */
};

/* the data objects ccld reads from a running process (attach snapshot) */
static const char *const wanted_objects[] = { "ncclComms", "nNcclComms" };
#define NOBJ (sizeof(wanted_objects) / sizeof(wanted_objects[0]))

struct load_seg {
	GElf_Addr vaddr, memsz;
	GElf_Off offset, filesz;
	bool exec;
};

struct elf_syms {
	struct sym_ent *ents;
	size_t n, cap;
	char *names;		/* all names, NUL separated */
	size_t names_len, names_cap;
	char build_id[41];
	char version[32];
	bool defines_nccl;
	struct { unsigned long vaddr, size; bool found; } objs[NOBJ];
	struct load_seg *segs;
	size_t nsegs;
};

/* names are appended while ents point into the buffer: fix up at the end */
static int add_name(struct elf_syms *es, const char *name, size_t len,
		    size_t *at)
{
	if (es->names_len + len + 1 > es->names_cap) {
		size_t cap = es->names_cap ? es->names_cap * 2 : 65536;
		char *p;

		while (cap < es->names_len + len + 1)
			cap *= 2;
		p = realloc(es->names, cap);
		if (!p)
			return -ENOMEM;
		es->names = p;
		es->names_cap = cap;
	}
	memcpy(es->names + es->names_len, name, len);
	es->names[es->names_len + len] = '\0';
	*at = es->names_len;
	es->names_len += len + 1;
	return 0;
}

static int add_ent(struct elf_syms *es, const char *name, size_t len,
		   long off, bool alias)
{
	size_t at;

	if (es->n == es->cap) {
		size_t cap = es->cap ? es->cap * 2 : 1024;
		struct sym_ent *p = realloc(es->ents, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		es->ents = p;
		es->cap = cap;
	}
	if (add_name(es, name, len, &at))
		return -ENOMEM;
	/* offset into names for now (the buffer may still move) */
	es->ents[es->n].name = (const char *)(uintptr_t)at;
	es->ents[es->n].off = off;
	es->ents[es->n].alias = alias;
	es->n++;
	return 0;
}

/*
 * "_Z29ncclProfilerStartProxyOpEventiP13ncclProxyArgs" -> the function name
 * "ncclProfilerStartProxyOpEvent": NCCL's internals are C++, the hook table
 * names them as in the source.  Only functions at global scope (_Z<len>...).
 */
static bool mangled_base(const char *sym, const char **base, size_t *len)
{
	const char *p = sym + 2;
	size_t l = 0;

	if (strncmp(sym, "_Z", 2) != 0 || *p < '1' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9') {
		l = l * 10 + (size_t)(*p - '0');
		if (l > 4096)
			return false;
		p++;
	}
	if (strnlen(p, l) < l)
		return false;
	*base = p;
	*len = l;
	return true;
}

/* st_value -> file offset through the PT_LOAD holding it (exec preferred) */
static long sym_file_off(const struct load_seg *segs, size_t nsegs,
			 GElf_Addr addr)
{
	long found = -1;
	size_t i;

	for (i = 0; i < nsegs; i++) {
		if (addr < segs[i].vaddr || addr >= segs[i].vaddr + segs[i].memsz)
			continue;
		found = (long)(addr - segs[i].vaddr + segs[i].offset);
		if (segs[i].exec)
			break;
	}
	return found;
}

static void note_object(struct elf_syms *es, const char *name, const GElf_Sym *sym)
{
	size_t i;

	for (i = 0; name && i < NOBJ; i++)
		if (!es->objs[i].found && strcmp(name, wanted_objects[i]) == 0) {
			es->objs[i].vaddr = sym->st_value;
			es->objs[i].size = sym->st_size;
			es->objs[i].found = true;
		}
}

static int index_symtab(struct elf_syms *es, Elf *elf, Elf_Scn *scn,
			const GElf_Shdr *sh, const struct load_seg *segs,
			size_t nsegs)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t i, nsyms;

	if (!data || !sh->sh_entsize)
		return 0;
	nsyms = sh->sh_size / sh->sh_entsize;
	for (i = 0; i < nsyms; i++) {
		const char *name, *base;
		GElf_Sym sym;
		size_t blen;
		int type;
		long off;

		if (!gelf_getsym(data, (int)i, &sym))
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if (sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		if (type == STT_OBJECT) {
			note_object(es, elf_strptr(elf, sh->sh_link, sym.st_name), &sym);
			continue;
		}
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		off = sym_file_off(segs, nsegs, sym.st_value);
		if (off < 0)
			continue;
		if (add_ent(es, name, strlen(name), off, false))
			return -ENOMEM;
		if (mangled_base(name, &base, &blen) &&
		    add_ent(es, base, blen, off, true))
			return -ENOMEM;
	}
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct sym_ent *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	/* exact names before aliases, then by offset: look-ups scan a run */
	if (x->alias != y->alias)
		return x->alias ? 1 : -1;
	return (x->off > y->off) - (x->off < y->off);
}

/* first entry named NAME, or NULL */
static const struct sym_ent *find_first(const struct elf_syms *es,
					const char *name)
{
	size_t lo = 0, hi = es->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(es->ents[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < es->n && strcmp(es->ents[lo].name, name) == 0)
		return &es->ents[lo];
	return NULL;
}

long elfsym_offset(const struct elf_syms *es, const char *name)
{
	const struct sym_ent *e, *end;

	if (!es || !name)
		return -1;
	e = find_first(es, name);
	if (!e)
		return -1;
	if (!e->alias)
		return e->off;
	/* only overloads of a mangled name: ambiguous unless one address */
	end = es->ents + es->n;
	for (const struct sym_ent *x = e + 1; x < end; x++) {
		if (strcmp(x->name, name) != 0)
			break;
		if (x->off != e->off)
			return -1;
	}
	return e->off;
}

size_t elfsym_offsets_ending(const struct elf_syms *es, const char *suffix,
			     long *out, size_t max)
{
	size_t i, n = 0, ls = strlen(suffix);

	for (i = 0; es && i < es->n; i++) {
		const struct sym_ent *e = &es->ents[i];
		size_t ln = strlen(e->name);

		if (e->alias || ln < ls || strcmp(e->name + ln - ls, suffix) != 0)
			continue;
		if (n < max)
			out[n] = e->off;
		n++;
	}
	return n;
}

static void read_build_id(struct elf_syms *es, Elf *elf)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		while ((off = gelf_getnote(data, off, &nh, &noff, &doff)) > 0) {
			const unsigned char *d;
			size_t i, len;

			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((char *)data->d_buf + noff, "GNU", 4) != 0)
				continue;
			d = (const unsigned char *)data->d_buf + doff;
			len = nh.n_descsz;
			if (len > 20)
				len = 20;
			for (i = 0; i < len; i++)
				snprintf(es->build_id + 2 * i, 3, "%02x", d[i]);
			return;
		}
	}
}

/* "NCCL version 2.28.9+cuda13.0" -> "2.28.9"; false if no digits follow */
static bool version_token(const char *p, const char *end, char *out,
			  size_t outlen)
{
	size_t n = 0;

	if (p >= end || *p < '0' || *p > '9')
		return false;
	while (p < end && n + 1 < outlen &&
	       ((*p >= '0' && *p <= '9') || *p == '.'))
		out[n++] = *p++;
	while (n && out[n - 1] == '.')
		n--;
	out[n] = '\0';
	return n > 0;
}

static bool scan_version(const Elf_Data *data, char *out, size_t outlen)
{
	static const char needle[] = "NCCL version ";
	const char *p = data->d_buf, *end;

	if (!p)
		return false;
	end = p + data->d_size;
	while (p < end) {
		p = memmem(p, (size_t)(end - p), needle, sizeof(needle) - 1);
		if (!p)
			return false;
		p += sizeof(needle) - 1;
		if (version_token(p, end, out, outlen))
			return true;
	}
	return false;
}

/* .rodata first; then every other allocated, non-exec section with bits */
static void read_version(struct elf_syms *es, Elf *elf, size_t shstrndx)
{
	int pass;

	for (pass = 0; pass < 2; pass++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(elf, scn))) {
			const char *name;
			Elf_Data *data;
			GElf_Shdr sh;
			bool rodata;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
				continue;
			if (!(sh.sh_flags & SHF_ALLOC) ||
			    (sh.sh_flags & SHF_EXECINSTR))
				continue;
			name = elf_strptr(elf, shstrndx, sh.sh_name);
			rodata = name && strcmp(name, ".rodata") == 0;
			if (rodata != (pass == 0))
				continue;
			data = elf_rawdata(scn, NULL);
			if (data && scan_version(data, es->version,
						 sizeof(es->version)))
				return;
		}
	}
}

static bool has_prefix_sym(const struct elf_syms *es, const char *prefix)
{
	size_t lo = 0, hi = es->n, len = strlen(prefix);

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(es->ents[mid].name, prefix) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < es->n && strncmp(es->ents[lo].name, prefix, len) == 0;
}

static int load_segments(Elf *elf, struct load_seg **out, size_t *n)
{
	struct load_seg *segs;
	size_t phnum, i, k = 0;

	if (elf_getphdrnum(elf, &phnum))
		return -1;
	segs = calloc(phnum ? phnum : 1, sizeof(*segs));
	if (!segs)
		return -ENOMEM;
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		segs[k].vaddr = ph.p_vaddr;
		segs[k].memsz = ph.p_memsz;
		segs[k].offset = ph.p_offset;
		segs[k].filesz = ph.p_filesz;
		segs[k].exec = ph.p_flags & PF_X;
		k++;
	}
	*out = segs;
	*n = k;
	return 0;
}

struct elf_syms *elfsym_open(const char *path, char *err, size_t errlen)
{
	struct load_seg *segs = NULL;
	struct elf_syms *es = NULL;
	Elf_Scn *scn = NULL;
	size_t nsegs = 0, shstrndx, i;
	Elf *elf = NULL;
	int fd, ret;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(err, errlen, "libelf: %s", elf_errmsg(-1));
		return NULL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s", strerror(errno));
		return NULL;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		snprintf(err, errlen, "not an ELF file");
		goto err_elf;
	}
	if (elf_getshdrstrndx(elf, &shstrndx)) {
		snprintf(err, errlen, "bad ELF section headers: %s",
			 elf_errmsg(-1));
		goto err_elf;
	}
	ret = load_segments(elf, &segs, &nsegs);
	if (ret) {
		snprintf(err, errlen, ret == -ENOMEM ? "out of memory" :
			 "bad ELF program headers: %s", elf_errmsg(-1));
		goto err_elf;
	}
	es = calloc(1, sizeof(*es));
	if (!es) {
		snprintf(err, errlen, "out of memory");
		goto err_segs;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)
			continue;
		if (index_symtab(es, elf, scn, &sh, segs, nsegs)) {
			snprintf(err, errlen, "out of memory");
			goto err_es;
		}
	}
	for (i = 0; i < es->n; i++)
		es->ents[i].name = es->names + (uintptr_t)es->ents[i].name;
	if (es->n)
		qsort(es->ents, es->n, sizeof(*es->ents), ent_cmp);

	read_build_id(es, elf);
	/* NCCL linked statically into another .so counts too */
	es->defines_nccl = (elfsym_offset(es, "ncclAllReduce") >= 0 ||
			    elfsym_offset(es, "pncclAllReduce") >= 0) &&
			   (has_prefix_sym(es, "ncclCommInitRank") ||
			    has_prefix_sym(es, "pncclCommInitRank"));
	/* scanning big framework libraries for nothing is costly: NCCL only */
	if (es->defines_nccl)
		read_version(es, elf, shstrndx);

	es->segs = segs;
	es->nsegs = nsegs;
	elf_end(elf);
	close(fd);
	return es;

err_es:
	elfsym_close(es);
err_segs:
	free(segs);
err_elf:
	elf_end(elf);
	close(fd);
	return NULL;
}

void elfsym_close(struct elf_syms *es)
{
	if (!es)
		return;
	free(es->ents);
	free(es->names);
	free(es->segs);
	free(es);
}

bool elfsym_object(const struct elf_syms *es, const char *name, unsigned long *vaddr,
		   unsigned long *size)
{
	size_t i;

	for (i = 0; es && name && i < NOBJ; i++)
		if (es->objs[i].found && strcmp(name, wanted_objects[i]) == 0) {
			*vaddr = es->objs[i].vaddr;
			*size = es->objs[i].size;
			return true;
		}
	return false;
}

bool elfsym_offset_vaddr(const struct elf_syms *es, unsigned long off, unsigned long *vaddr)
{
	size_t i;

	for (i = 0; es && i < es->nsegs; i++) {
		const struct load_seg *g = &es->segs[i];
		/* segments start mid-page: the mapping starts at the page */
		unsigned long pg = g->offset & ~4095ul;

		if (off >= pg && off < g->offset + (g->filesz ? g->filesz : 1)) {
			*vaddr = g->vaddr - (g->offset - off);
			return true;
		}
	}
	return false;
}

const char *elfsym_build_id(const struct elf_syms *es)
{
	return es ? es->build_id : "";
}

bool elfsym_defines_nccl(const struct elf_syms *es)
{
	return es && es->defines_nccl;
}

const char *elfsym_nccl_version(const struct elf_syms *es)
{
	return es ? es->version : "";
}
