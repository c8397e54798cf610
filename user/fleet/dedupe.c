// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "dedupe.h"

#define WORDS	(DEDUPE_WINDOW / 64)

struct dd_prod {
	uint64_t base;		/* every seq <= base was seen (seqs start at 1) */
	uint64_t bits[WORDS];	/* seq base + 1 + i is bit i, ring by (seq % W) */
};

void dedupe_init(struct dedupe *d)
{
	memset(d, 0, sizeof(*d));
	hmap_init(&d->producers);
}

void dedupe_free(struct dedupe *d)
{
	struct hkey k;
	size_t it = 0;
	void *v;

	while (hmap_next(&d->producers, &it, &k, &v))
		free(v);
	hmap_free(&d->producers);
}

static bool bit(const struct dd_prod *p, uint64_t seq)
{
	uint64_t i = seq % DEDUPE_WINDOW;

	return p->bits[i / 64] >> (i % 64) & 1;
}

static void set_bit(struct dd_prod *p, uint64_t seq, bool on)
{
	uint64_t i = seq % DEDUPE_WINDOW;

	if (on)
		p->bits[i / 64] |= 1ull << (i % 64);
	else
		p->bits[i / 64] &= ~(1ull << (i % 64));
}

/* moves base forward over the seqs seen right above it */
static void advance(struct dd_prod *p)
{
	while (bit(p, p->base + 1)) {
		set_bit(p, p->base + 1, false);
		p->base++;
	}
}

bool dedupe_first(struct dedupe *d, const char *node, uint64_t inst, uint64_t seq,
		  int *err)
{
	struct hkey key = hkey3(hkey_str(node), inst, strlen(node));
	struct dd_prod *p = hmap_get(&d->producers, key);

	*err = 0;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p || hmap_put(&d->producers, key, p)) {
			free(p);
			*err = -ENOMEM;
			return false;
		}
	}
	if (seq <= p->base || (seq <= p->base + DEDUPE_WINDOW && bit(p, seq))) {
		d->dups++;
		return false;
	}
	/* beyond the window: the seqs it leaves behind are gaps */
	while (seq > p->base + DEDUPE_WINDOW) {
		if (!bit(p, p->base + 1))
			d->gaps++;
		set_bit(p, p->base + 1, false);
		p->base++;
		advance(p);
	}
	set_bit(p, seq, true);
	advance(p);
	return true;
}
