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
#include <libiberty/demangle.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elfsym.h"

/*
 * One function name.  A C++ function at global scope gets a second entry,
 * an alias under its demangled name ("sendProxyProgress") with its
 * demangled parameter list and the symbol it came from.  Strings are
 * offsets into es->names + 1 (0: none) until the index is built.
 */
struct sym_ent {
	const char *name;
	const char *params;	/* alias: "(ncclProxyState*, ncclProxyArgs*)" */
	const char *symbol;	/* alias: the mangled symbol */
	long off;
	unsigned long size;	/* st_size: the function's bytes */
	bool alias;
};

/*
 * The data objects ccld reads: NCCL's global comm array (attach snapshot)
 * and its transport tables, whose function pointers say which transport a
 * proxy progress function belongs to.
 */
static const char *const wanted_objects[] = {
	"ncclComms", "nNcclComms", "p2pTransport", "shmTransport", "netTransport",
	"collNetTransport", "nvlsTransport", "profilerTransport",
	"ncclLastError",	/* where ncclDebugLog formats a WARN */
};
#define NOBJ (sizeof(wanted_objects) / sizeof(wanted_objects[0]))
#define MAX_OBJ_PTRS 64		/* pointers kept per object (ncclTransport: 21) */

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
	struct {
		unsigned long vaddr, size;
		bool found;
		unsigned long ptrs[MAX_OBJ_PTRS];	/* vaddrs its pointer slots hold */
		size_t nptrs;
	} objs[NOBJ];
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
		   long off, unsigned long size, const char *params, const char *symbol)
{
	size_t at, pat = 0, sat = 0;

	if (es->n == es->cap) {
		size_t cap = es->cap ? es->cap * 2 : 1024;
		struct sym_ent *p = realloc(es->ents, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		es->ents = p;
		es->cap = cap;
	}
	if (add_name(es, name, len, &at) ||
	    (params && add_name(es, params, strlen(params), &pat)) ||
	    (symbol && add_name(es, symbol, strlen(symbol), &sat)))
		return -ENOMEM;
	/* offsets into names + 1 for now (the buffer may still move) */
	es->ents[es->n].name = (const char *)(uintptr_t)(at + 1);
	es->ents[es->n].params = params ? (const char *)(uintptr_t)(pat + 1) : NULL;
	es->ents[es->n].symbol = symbol ? (const char *)(uintptr_t)(sat + 1) : NULL;
	es->ents[es->n].off = off;
	es->ents[es->n].size = size;
	es->ents[es->n].alias = symbol != NULL;
	es->n++;
	return 0;
}

static const char *names_at(const struct elf_syms *es, const char *rel)
{
	return rel ? es->names + (uintptr_t)rel - 1 : NULL;
}

static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_';
}

/*
 * A C++ function at global scope, static ones included, demangled by
 * libiberty (the demangler binutils and perf use):
 * "_ZL17sendProxyProgressP14ncclProxyStateP13ncclProxyArgs" ->
 * "sendProxyProgress(ncclProxyState*, ncclProxyArgs*)".  NCCL's internals
 * are C++; the hook table names them as in the source, with their
 * parameters.  Members, templates and compiler clones (".cold") are not
 * aliased.  Returns the malloc'ed demangled text, the base name being its
 * first *BASE_LEN characters, or NULL.
 */
static char *demangle_global(const char *sym, size_t *base_len)
{
	char *d, *paren;
	size_t i;

	if (strncmp(sym, "_Z", 2) != 0)
		return NULL;
	d = cplus_demangle(sym, DMGL_PARAMS | DMGL_ANSI);
	if (!d)
		return NULL;
	paren = strchr(d, '(');
	if (!paren || paren == d || strstr(paren, "[clone"))
		goto no;
	for (i = 0; d + i < paren; i++)
		if (!ident_char(d[i]))
			goto no;
	*base_len = (size_t)(paren - d);
	return d;
no:
	free(d);
	return NULL;
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

/*
 * Entries of type T in section SH with data DATA: what sh_size and
 * sh_entsize say, but no more than the data holds (a hostile file's
 * sh_entsize of 1 would make a loop over its bytes) nor INT_MAX (libelf's
 * index type).
 */
static size_t entries(Elf *elf, Elf_Type t, const GElf_Shdr *sh, const Elf_Data *data)
{
	size_t fsize = gelf_fsize(elf, t, 1, EV_CURRENT), n;

	if (!fsize || !sh->sh_entsize)
		return 0;
	n = sh->sh_size / sh->sh_entsize;
	if (n > data->d_size / fsize)
		n = data->d_size / fsize;
	return n > INT_MAX ? INT_MAX : n;
}

static int index_symtab(struct elf_syms *es, Elf *elf, Elf_Scn *scn,
			const GElf_Shdr *sh, const struct load_seg *segs,
			size_t nsegs)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t i, nsyms;

	if (!data || !sh->sh_entsize)
		return 0;
	nsyms = entries(elf, ELF_T_SYM, sh, data);
	for (i = 0; i < nsyms; i++) {
		const char *name;
		char *dem;
		GElf_Sym sym;
		size_t blen;
		int type, ret;
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
		if (add_ent(es, name, strlen(name), off, sym.st_size, NULL, NULL))
			return -ENOMEM;
		dem = demangle_global(name, &blen);
		if (!dem)
			continue;
		ret = add_ent(es, dem, blen, off, sym.st_size, dem + blen, name);
		free(dem);
		if (ret)
			return ret;
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

long elfsym_offset_size(const struct elf_syms *es, const char *name, unsigned long *size)
{
	const struct sym_ent *e;
	long off = elfsym_offset(es, name);

	*size = 0;
	if (off < 0)
		return -1;
	e = find_first(es, name);
	*size = e ? e->size : 0;
	return off;
}

long elfsym_offset_params(const struct elf_syms *es, const char *name,
			  const char *params, const char **symbol)
{
	struct elfsym_fn fns[8];
	size_t n, i, found = 0;
	long off = -1;

	n = elfsym_functions(es, name, fns, 8);
	for (i = 0; i < n && i < 8; i++) {
		if (!fns[i].params || strcmp(fns[i].params, params) != 0)
			continue;
		if (found++ && fns[i].off != off)
			return -1;	/* two different functions */
		off = fns[i].off;
		if (symbol)
			*symbol = fns[i].symbol;
	}
	return off;
}

size_t elfsym_functions(const struct elf_syms *es, const char *name,
			struct elfsym_fn *out, size_t max)
{
	const struct sym_ent *e, *end;
	size_t n = 0;

	if (!es || !name || !(e = find_first(es, name)))
		return 0;
	for (end = es->ents + es->n; e < end && strcmp(e->name, name) == 0; e++) {
		/* .dynsym and .symtab both list a global function: once */
		if (n && n <= max && out[n - 1].off == e->off &&
		    !out[n - 1].params == !e->params)
			continue;
		if (n < max) {
			out[n].off = e->off;
			out[n].symbol = e->alias ? e->symbol : e->name;
			out[n].params = e->params;
		}
		n++;
	}
	return n;
}

size_t elfsym_object_targets(const struct elf_syms *es, const char *name,
			     long *offs, size_t max)
{
	size_t i, k, n = 0;

	for (i = 0; es && name && i < NOBJ; i++) {
		if (!es->objs[i].found || strcmp(name, wanted_objects[i]) != 0)
			continue;
		for (k = 0; k < es->objs[i].nptrs; k++) {
			long off = sym_file_off(es->segs, es->nsegs, es->objs[i].ptrs[k]);

			if (off < 0)
				continue;
			if (n < max)
				offs[n] = off;
			n++;
		}
	}
	return n;
}

bool elfsym_elf_build_id(Elf *elf, char *out, size_t outlen)
{
	Elf_Scn *scn = NULL;

	if (outlen)
		out[0] = '\0';

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
			for (i = 0; i < len && 2 * i + 3 <= outlen; i++)
				snprintf(out + 2 * i, 3, "%02x", d[i]);
			return len > 0;
		}
	}
	return false;
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

static int object_at(const struct elf_syms *es, GElf_Addr addr)
{
	size_t i;

	for (i = 0; i < NOBJ; i++)
		if (es->objs[i].found && addr >= es->objs[i].vaddr &&
		    es->objs[i].size >= 8 && addr - es->objs[i].vaddr <= es->objs[i].size - 8)
			return (int)i;
	return -1;
}

static void add_pointer(struct elf_syms *es, int obj, unsigned long target)
{
	if (obj >= 0 && target && es->objs[obj].nptrs < MAX_OBJ_PTRS)
		es->objs[obj].ptrs[es->objs[obj].nptrs++] = target;
}

/*
 * The pointers the wanted objects hold once loaded.  In a shared library
 * a static table of function pointers is filled by the loader: each slot
 * has a RELATIVE relocation whose addend is the function's address (RELA:
 * x86-64, arm64).  Where the file itself holds addresses (no such
 * relocation: a non-PIC executable) the slots' words are taken as they are.
 */
static void read_object_pointers(struct elf_syms *es, Elf *elf)
{
	unsigned int relative;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	size_t i, k, n;

	if (!gelf_getehdr(elf, &eh))
		return;
	relative = eh.e_machine == EM_AARCH64 ? R_AARCH64_RELATIVE : R_X86_64_RELATIVE;
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		n = data ? entries(elf, ELF_T_RELA, &sh, data) : 0;
		for (i = 0; i < n; i++) {
			GElf_Rela r;

			if (gelf_getrela(data, (int)i, &r) &&
			    GELF_R_TYPE(r.r_info) == relative && r.r_addend > 0)
				add_pointer(es, object_at(es, r.r_offset),
					    (unsigned long)r.r_addend);
		}
	}
	for (k = 0; k < NOBJ; k++) {
		if (!es->objs[k].found || es->objs[k].nptrs)
			continue;
		scn = NULL;
		while ((scn = elf_nextscn(elf, scn))) {
			unsigned long a = es->objs[k].vaddr, w;
			GElf_Shdr sh;
			Elf_Data *data;

			size_t at;

			/* the symbol's value and size come from the file: no sums
			 * that can wrap, and no read past the section's data */
			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
			    a < sh.sh_addr || a - sh.sh_addr >= sh.sh_size ||
			    es->objs[k].size > sh.sh_size - (a - sh.sh_addr))
				continue;
			data = elf_getdata(scn, NULL);
			at = a - sh.sh_addr;
			for (i = 0; data && data->d_buf && at <= data->d_size &&
			     i + 8 <= es->objs[k].size && i + 8 <= data->d_size - at; i += 8) {
				memcpy(&w, (const char *)data->d_buf + at + i, 8);
				add_pointer(es, (int)k, w);
			}
			break;
		}
	}
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
	for (i = 0; i < es->n; i++) {
		struct sym_ent *e = &es->ents[i];

		e->name = names_at(es, e->name);
		e->params = names_at(es, e->params);
		e->symbol = names_at(es, e->symbol);
	}
	if (es->n)
		qsort(es->ents, es->n, sizeof(*es->ents), ent_cmp);

	elfsym_elf_build_id(elf, es->build_id, sizeof(es->build_id));
	read_object_pointers(es, elf);
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
