// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The hash map under growth, deletes and re-inserts. */
#include <stdlib.h>
#include "check.h"
#include "hmap.h"

int main(void)
{
	static int vals[5000];
	struct hmap m;
	struct hkey k;
	size_t i, it, seen = 0;
	void *v;

	hmap_init(&m);
	for (i = 0; i < 5000; i++)
		CHECK_INT(hmap_put(&m, hkey3(i, i * 7, 1), &vals[i]), 0);
	CHECK_INT(m.live, 5000);
	for (i = 0; i < 5000; i += 2)
		CHECK(hmap_del(&m, hkey3(i, i * 7, 1)) == &vals[i]);
	CHECK(hmap_del(&m, hkey3(0, 0, 1)) == NULL);
	CHECK_INT(m.live, 2500);
	for (i = 0; i < 5000; i++)
		CHECK(hmap_get(&m, hkey3(i, i * 7, 1)) == (i % 2 ? &vals[i] : NULL));
	/* churn: tombstones must not fill the table */
	for (i = 0; i < 100000; i++) {
		CHECK_INT(hmap_put(&m, hkey3(i, 0, 2), &vals[0]), 0);
		hmap_del(&m, hkey3(i, 0, 2));
	}
	CHECK(m.cap < 65536);
	for (it = 0; hmap_next(&m, &it, &k, &v);) {
		CHECK(k.a % 2 == 1);
		seen++;
	}
	CHECK_INT(seen, 2500);
	CHECK(hmap_get(&m, hkey3(1, 7, 1)) == &vals[1]);
	CHECK_INT(hmap_put(&m, hkey3(1, 7, 1), &vals[2]), 0);
	CHECK(hmap_get(&m, hkey3(1, 7, 1)) == &vals[2]);
	CHECK_INT(m.live, 2500);
	hmap_free(&m);
	return check_finish("test_hmap");
}
