// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <string.h>
#include "layout_table.h"

const struct layout_table_entry *layout_table_find(const char *version)
{
	int i;

	if (!version || !*version)
		return NULL;
	for (i = 0; i < layout_table_n; i++)
		if (strcmp(layout_table[i].version, version) == 0)
			return &layout_table[i];
	return NULL;
}

/* the table's column of F, -1 when the table was generated without it */
static int column(const struct layout_field *f)
{
	size_t n = strlen(f->struct_name);
	int i;

	for (i = 0; i < layout_table_nfields; i++) {
		const char *name = layout_table_fields[i];

		if (strncmp(name, f->struct_name, n) == 0 && name[n] == '.' &&
		    strcmp(name + n + 1, f->member) == 0)
			return i;
	}
	return -1;
}

void layout_table_fill(const struct layout_table_entry *e, struct nccl_layouts *l)
{
	int i, c;

	dwarf_layout_clear(l);
	for (i = 0; i < layout_fields_n; i++) {
		const struct layout_field *f = &layout_fields[i];

		c = column(f);
		if (c >= 0)
			*(__s32 *)((char *)l + f->off) = e->off[c];
	}
	l->source = LAYOUT_TABLE;
	snprintf(l->origin, sizeof(l->origin), "%s", e->version);
	l->comm_size = e->comm_size;
	l->proxy.sub_size = e->sub_size;
	l->peer.size = e->peer_size;
	l->comm.seq_number_n = e->seq_number_n;
	l->comm.valid = l->comm.rank >= 0 && l->comm.nranks >= 0;
	layout_derive(l);
}
