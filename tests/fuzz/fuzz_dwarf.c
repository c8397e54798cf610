// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the NCCL struct layout reader (user/probe/dwarf_layout.c,
 * libdw): the input is an ELF file with DWARF, as a traced process's
 * libnccl.so may carry (or a hostile one, with cycles, absurd sizes and
 * offsets out of bounds).  No build-id is passed, so neither the cache nor
 * separate debuginfo is touched.  What it returns must be sane: offsets
 * -1 or within the struct where the struct's size is known.
 */
#include <string.h>
#include "dwarf_layout.h"
#include "fuzz_memfd.h"

#define check(c) do { if (!(c)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct nccl_layouts l;
	char path[64], err[256] = "";
	int i;

	fuzz_memfd(data, size, path, sizeof(path));
	if (dwarf_layout_read(path, "", &l, err, sizeof(err))) {
		check(err[0] && l.source == LAYOUT_NONE);
		return 0;
	}
	for (i = 0; i < layout_fields_n; i++)
		check(layout_field_get(&l, &layout_fields[i]) >= -1);
	check(l.comm.seq_number_n <= CCLD_MAX_SEQ_TYPES);
	check(!l.proxy.valid || (l.proxy.args_subs >= 0 && l.proxy.sub_size > 0));
	return 0;
}
