/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A small open-addressing hash map from a three-word key to a pointer.
 * Keys are compared in full; values are owned by the caller.
 */
#ifndef CCLD_HMAP_H
#define CCLD_HMAP_H

#include <stddef.h>
#include <stdint.h>

struct hkey {
	uint64_t a, b, c;
};

struct hmap_slot {
	struct hkey key;
	void *val;		/* NULL: empty; HMAP_TOMB: deleted */
};

struct hmap {
	struct hmap_slot *slots;
	size_t cap;		/* power of two */
	size_t used;		/* live + tombstones */
	size_t live;
};

#define HMAP_TOMB ((void *)1)

void hmap_init(struct hmap *m);
void hmap_free(struct hmap *m);
void *hmap_get(const struct hmap *m, struct hkey k);
/* Inserts or replaces; returns 0 or -ENOMEM. VAL must not be NULL. */
int hmap_put(struct hmap *m, struct hkey k, void *val);
/* Removes K; returns its value or NULL. */
void *hmap_del(struct hmap *m, struct hkey k);

/* Iteration: for (i = 0; hmap_next(m, &i, &k, &v); ) ... */
int hmap_next(const struct hmap *m, size_t *iter, struct hkey *k, void **v);

static inline struct hkey hkey3(uint64_t a, uint64_t b, uint64_t c)
{
	struct hkey k = { a, b, c };
	return k;
}

/* FNV-1a of a NUL-terminated string: a key word for names */
static inline uint64_t hkey_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

#endif
