// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "hmap.h"

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static uint64_t hash_key(struct hkey k)
{
	return mix(k.a ^ mix(k.b ^ mix(k.c)));
}

static int key_eq(struct hkey x, struct hkey y)
{
	return x.a == y.a && x.b == y.b && x.c == y.c;
}

void hmap_init(struct hmap *m)
{
	memset(m, 0, sizeof(*m));
}

void hmap_free(struct hmap *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

static struct hmap_slot *find(const struct hmap *m, struct hkey k)
{
	size_t i, mask = m->cap - 1;

	if (!m->cap)
		return NULL;
	for (i = hash_key(k) & mask;; i = (i + 1) & mask) {
		struct hmap_slot *s = &m->slots[i];

		if (!s->val)
			return NULL;
		if (s->val != HMAP_TOMB && key_eq(s->key, k))
			return s;
	}
}

void *hmap_get(const struct hmap *m, struct hkey k)
{
	struct hmap_slot *s = find(m, k);

	return s ? s->val : NULL;
}

static int grow(struct hmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 64, i;
	struct hmap_slot *old = m->slots, *ns;
	size_t ocap = m->cap;

	/* only rehash in place when tombstones, not live entries, fill it */
	if (m->cap && m->live * 4 < m->cap)
		ncap = m->cap;
	ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	m->slots = ns;
	m->cap = ncap;
	m->used = m->live = 0;
	for (i = 0; i < ocap; i++) {
		if (old[i].val && old[i].val != HMAP_TOMB)
			hmap_put(m, old[i].key, old[i].val);
	}
	free(old);
	return 0;
}

int hmap_put(struct hmap *m, struct hkey k, void *val)
{
	struct hmap_slot *s = find(m, k);
	size_t i, mask;

	if (s) {
		s->val = val;
		return 0;
	}
	if ((m->used + 1) * 4 > m->cap * 3 && grow(m))
		return -ENOMEM;
	mask = m->cap - 1;
	for (i = hash_key(k) & mask;; i = (i + 1) & mask) {
		s = &m->slots[i];
		if (!s->val || s->val == HMAP_TOMB)
			break;
	}
	if (!s->val)
		m->used++;
	s->key = k;
	s->val = val;
	m->live++;
	return 0;
}

void *hmap_del(struct hmap *m, struct hkey k)
{
	struct hmap_slot *s = find(m, k);
	void *v;

	if (!s)
		return NULL;
	v = s->val;
	s->val = HMAP_TOMB;
	m->live--;
	return v;
}

int hmap_next(const struct hmap *m, size_t *iter, struct hkey *k, void **v)
{
	while (*iter < m->cap) {
		struct hmap_slot *s = &m->slots[(*iter)++];

		if (s->val && s->val != HMAP_TOMB) {
			if (k)
				*k = s->key;
			if (v)
				*v = s->val;
			return 1;
		}
	}
	return 0;
}
